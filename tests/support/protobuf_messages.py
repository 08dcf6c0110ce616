"""Kubernetes messages built with the ``protobuf`` package, as an encoder independent of ours.

The descriptors are written here by hand from Kubernetes' ``generated.proto`` files (a subset of
the fields, plus a few field numbers Kubernetes does not use, to stand for fields a newer client
sends). The ``protobuf`` runtime encodes them; :mod:`apiserver.protobuf` must decode the bytes.
It also parses what :mod:`apiserver.protobuf` encodes (:func:`unwrap`), as a decoder independent
of ours.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "string": _F.TYPE_STRING,
    "int32": _F.TYPE_INT32,
    "int64": _F.TYPE_INT64,
    "bool": _F.TYPE_BOOL,
    "bytes": _F.TYPE_BYTES,
    "double": _F.TYPE_DOUBLE,
}

# message -> [(field name, number, type)]; "repeated T", "packed T" and "map<K,V>" as in .proto.
MESSAGES: dict[str, list[tuple[str, int, str]]] = {
    "TypeMeta": [("apiVersion", 1, "string"), ("kind", 2, "string")],
    "Unknown": [
        ("typeMeta", 1, "TypeMeta"),
        ("raw", 2, "bytes"),
        ("contentEncoding", 3, "string"),
        ("contentType", 4, "string"),
    ],
    "Time": [("seconds", 1, "int64"), ("nanos", 2, "int32")],
    "Quantity": [("string", 1, "string")],
    "IntOrString": [("type", 1, "int64"), ("intVal", 2, "int32"), ("strVal", 3, "string")],
    "FieldsV1": [("Raw", 1, "bytes")],
    "OwnerReference": [
        ("kind", 1, "string"),
        ("name", 3, "string"),
        ("uid", 4, "string"),
        ("apiVersion", 5, "string"),
        ("controller", 6, "bool"),
        ("blockOwnerDeletion", 7, "bool"),
    ],
    "ManagedFieldsEntry": [
        ("manager", 1, "string"),
        ("operation", 2, "string"),
        ("apiVersion", 3, "string"),
        ("time", 4, "Time"),
        ("fieldsType", 6, "string"),
        ("fieldsV1", 7, "FieldsV1"),
    ],
    "ObjectMeta": [
        ("name", 1, "string"),
        ("generateName", 2, "string"),
        ("namespace", 3, "string"),
        ("uid", 5, "string"),
        ("resourceVersion", 6, "string"),
        ("generation", 7, "int64"),
        ("creationTimestamp", 8, "Time"),
        ("deletionTimestamp", 9, "Time"),
        ("labels", 11, "map<string,string>"),
        ("annotations", 12, "map<string,string>"),
        ("ownerReferences", 13, "repeated OwnerReference"),
        ("finalizers", 14, "repeated string"),
        ("managedFields", 17, "repeated ManagedFieldsEntry"),
    ],
    "LabelSelectorRequirement": [
        ("key", 1, "string"),
        ("operator", 2, "string"),
        ("values", 3, "repeated string"),
    ],
    "LabelSelector": [
        ("matchLabels", 1, "map<string,string>"),
        ("matchExpressions", 2, "repeated LabelSelectorRequirement"),
    ],
    "ResourceRequirements": [("limits", 1, "map<string,Quantity>"), ("requests", 2, "map<string,Quantity>")],
    "HTTPGetAction": [("path", 1, "string"), ("port", 2, "IntOrString"), ("scheme", 4, "string")],
    "TCPSocketAction": [("port", 1, "IntOrString")],
    "ProbeHandler": [("httpGet", 2, "HTTPGetAction"), ("tcpSocket", 3, "TCPSocketAction")],
    "Probe": [
        ("handler", 1, "ProbeHandler"),
        ("initialDelaySeconds", 2, "int32"),
        ("periodSeconds", 4, "int32"),
        ("terminationGracePeriodSeconds", 7, "int64"),
    ],
    "ContainerPort": [("name", 1, "string"), ("containerPort", 3, "int32"), ("protocol", 4, "string")],
    "EnvVar": [("name", 1, "string"), ("value", 2, "string")],
    "Capabilities": [("add", 1, "repeated string"), ("drop", 2, "repeated string")],
    "SecurityContext": [
        ("capabilities", 1, "Capabilities"),
        ("privileged", 2, "bool"),
        ("runAsUser", 4, "int64"),
        ("runAsNonRoot", 5, "bool"),
        ("allowPrivilegeEscalation", 7, "bool"),
    ],
    "Container": [
        ("name", 1, "string"),
        ("image", 2, "string"),
        ("command", 3, "repeated string"),
        ("args", 4, "repeated string"),
        ("ports", 6, "repeated ContainerPort"),
        ("env", 7, "repeated EnvVar"),
        ("resources", 8, "ResourceRequirements"),
        ("livenessProbe", 10, "Probe"),
        ("imagePullPolicy", 14, "string"),
        ("securityContext", 15, "SecurityContext"),
        ("tty", 18, "bool"),
        ("restartPolicy", 24, "string"),
        ("fromTheFuture", 99, "string"),
    ],
    "Toleration": [
        ("key", 1, "string"),
        ("operator", 2, "string"),
        ("effect", 4, "string"),
        ("tolerationSeconds", 5, "int64"),
    ],
    "LocalObjectReference": [("name", 1, "string")],
    "EmptyDirVolumeSource": [("medium", 1, "string"), ("sizeLimit", 2, "Quantity")],
    "ConfigMapVolumeSource": [
        ("localObjectReference", 1, "LocalObjectReference"),
        ("defaultMode", 3, "int32"),
    ],
    "VolumeSource": [("emptyDir", 2, "EmptyDirVolumeSource"), ("configMap", 19, "ConfigMapVolumeSource")],
    "Volume": [("name", 1, "string"), ("volumeSource", 2, "VolumeSource")],
    "PodSchedulingGate": [("name", 1, "string")],
    "PodSecurityContext": [("runAsUser", 2, "int64"), ("supplementalGroups", 4, "packed int64")],
    "PodSpec": [
        ("volumes", 1, "repeated Volume"),
        ("containers", 2, "repeated Container"),
        ("restartPolicy", 3, "string"),
        ("terminationGracePeriodSeconds", 4, "int64"),
        ("dnsPolicy", 6, "string"),
        ("nodeSelector", 7, "map<string,string>"),
        ("hostNetwork", 11, "bool"),
        ("securityContext", 14, "PodSecurityContext"),
        ("initContainers", 20, "repeated Container"),
        ("automountServiceAccountToken", 21, "bool"),
        ("tolerations", 22, "repeated Toleration"),
        ("hostUsers", 37, "bool"),
        ("schedulingGates", 38, "repeated PodSchedulingGate"),
        ("mystery", 500, "Quantity"),
    ],
    "PodCondition": [
        ("type", 1, "string"),
        ("status", 2, "string"),
        ("lastTransitionTime", 4, "Time"),
        ("reason", 5, "string"),
    ],
    "PodStatus": [("phase", 1, "string"), ("conditions", 2, "repeated PodCondition"), ("podIP", 6, "string")],
    "Pod": [("metadata", 1, "ObjectMeta"), ("spec", 2, "PodSpec"), ("status", 3, "PodStatus")],
    "Taint": [
        ("key", 1, "string"),
        ("value", 2, "string"),
        ("effect", 3, "string"),
        ("timeAdded", 4, "Time"),
    ],
    "NodeSpec": [("podCIDR", 1, "string"), ("unschedulable", 4, "bool"), ("taints", 5, "repeated Taint")],
    "NodeCondition": [
        ("type", 1, "string"),
        ("status", 2, "string"),
        ("lastHeartbeatTime", 3, "Time"),
        ("lastTransitionTime", 4, "Time"),
        ("reason", 5, "string"),
        ("message", 6, "string"),
    ],
    "NodeAddress": [("type", 1, "string"), ("address", 2, "string")],
    "NodeStatus": [
        ("capacity", 1, "map<string,Quantity>"),
        ("allocatable", 2, "map<string,Quantity>"),
        ("conditions", 4, "repeated NodeCondition"),
        ("addresses", 5, "repeated NodeAddress"),
        ("declaredFeatures", 14, "repeated string"),
    ],
    "Node": [("metadata", 1, "ObjectMeta"), ("spec", 2, "NodeSpec"), ("status", 3, "NodeStatus")],
    "LeaseSpec": [
        ("holderIdentity", 1, "string"),
        ("leaseDurationSeconds", 2, "int32"),
        ("acquireTime", 3, "Time"),
        ("renewTime", 4, "Time"),
        ("leaseTransitions", 5, "int32"),
    ],
    "Lease": [("metadata", 1, "ObjectMeta"), ("spec", 2, "LeaseSpec")],
    "ObjectReference": [
        ("kind", 1, "string"),
        ("namespace", 2, "string"),
        ("name", 3, "string"),
        ("apiVersion", 5, "string"),
    ],
    "EventSource": [("component", 1, "string"), ("host", 2, "string")],
    "Event": [
        ("metadata", 1, "ObjectMeta"),
        ("involvedObject", 2, "ObjectReference"),
        ("reason", 3, "string"),
        ("message", 4, "string"),
        ("source", 5, "EventSource"),
        ("firstTimestamp", 6, "Time"),
        ("lastTimestamp", 7, "Time"),
        ("count", 8, "int32"),
        ("type", 9, "string"),
        ("eventTime", 10, "Time"),
    ],
    "ConfigMap": [
        ("metadata", 1, "ObjectMeta"),
        ("data", 2, "map<string,string>"),
        ("binaryData", 3, "map<string,bytes>"),
        ("immutable", 4, "bool"),
    ],
    "EventSeries": [("count", 1, "int32"), ("lastObservedTime", 2, "Time")],
    "EventsV1Event": [
        ("metadata", 1, "ObjectMeta"),
        ("eventTime", 2, "Time"),
        ("series", 3, "EventSeries"),
        ("reportingController", 4, "string"),
        ("reportingInstance", 5, "string"),
        ("action", 6, "string"),
        ("reason", 7, "string"),
        ("regarding", 8, "ObjectReference"),
        ("note", 10, "string"),
        ("type", 11, "string"),
        ("deprecatedCount", 15, "int32"),
    ],
    "Secret": [
        ("metadata", 1, "ObjectMeta"),
        ("data", 2, "map<string,bytes>"),
        ("type", 3, "string"),
        ("stringData", 4, "map<string,string>"),
        ("immutable", 5, "bool"),
    ],
    "PodDisruptionBudgetSpec": [
        ("minAvailable", 1, "IntOrString"),
        ("selector", 2, "LabelSelector"),
        ("maxUnavailable", 3, "IntOrString"),
    ],
    "PodDisruptionBudget": [("metadata", 1, "ObjectMeta"), ("spec", 2, "PodDisruptionBudgetSpec")],
    "ServiceReference": [
        ("namespace", 1, "string"),
        ("name", 2, "string"),
        ("path", 3, "string"),
        ("port", 4, "int32"),
    ],
    "WebhookClientConfig": [
        ("service", 1, "ServiceReference"),
        ("caBundle", 2, "bytes"),
        ("url", 3, "string"),
    ],
    "Rule": [
        ("apiGroups", 1, "repeated string"),
        ("apiVersions", 2, "repeated string"),
        ("resources", 3, "repeated string"),
    ],
    "RuleWithOperations": [("operations", 1, "repeated string"), ("rule", 2, "Rule")],
    "ValidatingWebhook": [
        ("name", 1, "string"),
        ("clientConfig", 2, "WebhookClientConfig"),
        ("rules", 3, "repeated RuleWithOperations"),
        ("failurePolicy", 4, "string"),
        ("sideEffects", 6, "string"),
        ("timeoutSeconds", 7, "int32"),
        ("admissionReviewVersions", 8, "repeated string"),
        ("objectSelector", 10, "LabelSelector"),
    ],
    "ValidatingWebhookConfiguration": [
        ("metadata", 1, "ObjectMeta"),
        ("webhooks", 2, "repeated ValidatingWebhook"),
    ],
    "DeleteOptions": [
        ("gracePeriodSeconds", 1, "int64"),
        ("propagationPolicy", 4, "string"),
        ("dryRun", 5, "repeated string"),
    ],
    # What the server answers: lists, Status and the events of a protobuf watch stream.
    "ListMeta": [
        ("selfLink", 1, "string"),
        ("resourceVersion", 2, "string"),
        ("continue", 3, "string"),
        ("remainingItemCount", 4, "int64"),
    ],
    "ConfigMapList": [("metadata", 1, "ListMeta"), ("items", 2, "repeated ConfigMap")],
    "PodList": [("metadata", 1, "ListMeta"), ("items", 2, "repeated Pod")],
    "StatusCause": [("reason", 1, "string"), ("message", 2, "string"), ("field", 3, "string")],
    "StatusDetails": [
        ("name", 1, "string"),
        ("group", 2, "string"),
        ("kind", 3, "string"),
        ("causes", 4, "repeated StatusCause"),
        ("retryAfterSeconds", 5, "int32"),
        ("uid", 6, "string"),
    ],
    "Status": [
        ("metadata", 1, "ListMeta"),
        ("status", 2, "string"),
        ("message", 3, "string"),
        ("reason", 4, "string"),
        ("details", 5, "StatusDetails"),
        ("code", 6, "int32"),
    ],
    "RawExtension": [("raw", 1, "bytes")],
    "WatchEvent": [("type", 1, "string"), ("object", 2, "RawExtension")],
}


def _add_field(message: Any, name: str, number: int, type_text: str) -> None:
    label = _F.LABEL_OPTIONAL
    packed = False
    for prefix in ("repeated ", "packed "):
        if type_text.startswith(prefix):
            label, packed, type_text = _F.LABEL_REPEATED, prefix == "packed ", type_text[len(prefix) :]
    if type_text.startswith("map<"):
        key_type, value_type = type_text[4:-1].split(",")
        entry = message.nested_type.add(name=name[0].upper() + name[1:] + "Entry")
        entry.options.map_entry = True
        _add_field(entry, "key", 1, key_type)
        _add_field(entry, "value", 2, value_type)
        # The type name is resolved to the nested entry in _build().
        message.field.add(
            name=name, number=number, label=_F.LABEL_REPEATED, type=_F.TYPE_MESSAGE, type_name=entry.name
        )
        return
    if type_text in _SCALARS:
        field = message.field.add(name=name, number=number, label=label, type=_SCALARS[type_text])
        if packed:
            field.options.packed = True
    else:
        message.field.add(name=name, number=number, label=label, type=_F.TYPE_MESSAGE, type_name=type_text)


def _build() -> dict[str, Any]:
    file = descriptor_pb2.FileDescriptorProto(name="k8s_subset.proto", package="k8s", syntax="proto2")
    for name, fields in MESSAGES.items():
        message = file.message_type.add(name=name)
        for field_name, number, type_text in fields:
            _add_field(message, field_name, number, type_text)
    # Resolve type names fully (nested map entries live inside their message).
    for message in file.message_type:
        nested = {entry.name for entry in message.nested_type}
        for field in message.field:
            if field.type == _F.TYPE_MESSAGE:
                field.type_name = (
                    f".k8s.{message.name}.{field.type_name}"
                    if field.type_name in nested
                    else f".k8s.{field.type_name}"
                )
        for entry in message.nested_type:
            for field in entry.field:
                if field.type == _F.TYPE_MESSAGE:
                    field.type_name = f".k8s.{field.type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"k8s.{name}")) for name in MESSAGES
    }


K8S: dict[str, Any] = _build()


def envelope(api_version: str, kind: str, message: Any) -> bytes:
    """``message`` in Kubernetes' envelope: the magic, then a runtime.Unknown carrying it."""
    unknown = K8S["Unknown"](
        typeMeta=K8S["TypeMeta"](apiVersion=api_version, kind=kind), raw=message.SerializeToString()
    )
    return b"k8s\x00" + unknown.SerializeToString()


def unwrap(data: bytes) -> tuple[str, str, bytes]:
    """The apiVersion, kind and raw message bytes of an enveloped object (magic + runtime.Unknown)."""
    assert data[:4] == b"k8s\x00", data[:8]
    unknown = K8S["Unknown"].FromString(data[4:])
    return unknown.typeMeta.apiVersion, unknown.typeMeta.kind, unknown.raw
