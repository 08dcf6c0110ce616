"""The Go struct layouts of the built-in types, in :mod:`apiserver.gostruct`'s description language.

Only the fields the embedded server's users touch are described in full; a struct marked ``open``
keeps fields it does not describe untouched. :data:`JSON_SCHEMA_KEY_ORDER` is the key order a
CRD's schemas are written back in.
"""

from __future__ import annotations

from typing import Any

from runtime.jsoncodec import JSON

from ..gostruct import (
    ALWAYS,
    ANY,
    BOOL,
    I32,
    I64,
    MICRO,
    POINTER,
    STR,
    STR_LIST,
    STR_MAP,
    TIME,
    F,
    IntOrString,
    ListOf,
    MapOf,
    Quantity,
    Struct,
    struct,
)

META_TOP = (F("kind", STR), F("apiVersion", STR))

OWNER_REFERENCE = struct(
    "OwnerReference",
    F("apiVersion", STR, ALWAYS),
    F("kind", STR, ALWAYS),
    F("name", STR, ALWAYS),
    F("uid", STR, ALWAYS),
    F("controller", BOOL, POINTER),
    F("blockOwnerDeletion", BOOL, POINTER),
    atomic=True,
)
MANAGED_FIELDS_ENTRY = struct(
    "ManagedFieldsEntry",
    F("manager", STR),
    F("operation", STR),
    F("apiVersion", STR),
    F("time", TIME, POINTER),
    F("fieldsType", STR),
    F("fieldsV1", ANY, POINTER),
    F("subresource", STR),
)
OBJECT_META = struct(
    "ObjectMeta",
    F("name", STR),
    F("generateName", STR),
    F("namespace", STR),
    F("selfLink", STR),
    F("uid", STR),
    F("resourceVersion", STR),
    F("generation", I64),
    F("creationTimestamp", TIME, ALWAYS),
    F("deletionTimestamp", TIME, POINTER),
    F("deletionGracePeriodSeconds", I64, POINTER),
    F("labels", STR_MAP),
    F("annotations", STR_MAP),
    F("ownerReferences", ListOf(OWNER_REFERENCE, "map", ("uid",), merge_key="uid")),
    F("finalizers", ListOf(STR, "set")),
    F("managedFields", ListOf(MANAGED_FIELDS_ENTRY)),
)
METADATA = F("metadata", OBJECT_META, ALWAYS)

LABEL_SELECTOR = struct(
    "LabelSelector",
    F("matchLabels", STR_MAP),
    F(
        "matchExpressions",
        ListOf(
            struct(
                "LabelSelectorRequirement",
                F("key", STR, ALWAYS),
                F("operator", STR, ALWAYS),
                F("values", STR_LIST),
            )
        ),
    ),
    atomic=True,
)
OBJECT_REFERENCE = struct(
    "ObjectReference",
    F("kind", STR),
    F("namespace", STR),
    F("name", STR),
    F("uid", STR),
    F("apiVersion", STR),
    F("resourceVersion", STR),
    F("fieldPath", STR),
    atomic=True,
)
LOCAL_OBJECT_REFERENCE = struct("LocalObjectReference", F("name", STR), atomic=True)
CONDITION = struct(
    "Condition",
    F("type", STR, ALWAYS),
    F("status", STR, ALWAYS),
    F("observedGeneration", I64),
    F("lastTransitionTime", TIME, ALWAYS),
    F("reason", STR, ALWAYS),
    F("message", STR, ALWAYS),
)


def _conditions(go_name: str, *, heartbeat: bool = False) -> ListOf:
    fields = [F("type", STR, ALWAYS), F("status", STR, ALWAYS)]
    if heartbeat:
        fields.append(F("lastHeartbeatTime", TIME, ALWAYS))
    fields += [F("lastTransitionTime", TIME, ALWAYS), F("reason", STR), F("message", STR)]
    return ListOf(struct(go_name, *fields), "map", ("type",), merge_key="type")


NAMESPACE = struct(
    "Namespace",
    *META_TOP,
    METADATA,
    F("spec", struct("NamespaceSpec", F("finalizers", STR_LIST)), ALWAYS),
    F(
        "status",
        struct("NamespaceStatus", F("phase", STR), F("conditions", _conditions("NamespaceCondition"))),
        ALWAYS,
    ),
)
CONFIG_MAP = struct(
    "ConfigMap",
    *META_TOP,
    METADATA,
    F("immutable", BOOL, POINTER),
    F("data", STR_MAP),
    F("binaryData", STR_MAP),
)
SECRET = struct(
    "Secret",
    *META_TOP,
    METADATA,
    F("immutable", BOOL, POINTER),
    F("data", STR_MAP),
    F("stringData", STR_MAP),
    F("type", STR),
)
SERVICE_ACCOUNT = struct(
    "ServiceAccount",
    *META_TOP,
    METADATA,
    F("secrets", ListOf(OBJECT_REFERENCE, merge_key="name")),
    F("imagePullSecrets", ListOf(LOCAL_OBJECT_REFERENCE)),
    F("automountServiceAccountToken", BOOL, POINTER),
)
EVENT_SOURCE = struct("EventSource", F("component", STR), F("host", STR))
CORE_EVENT = struct(
    "Event",
    *META_TOP,
    METADATA,
    F("involvedObject", OBJECT_REFERENCE, ALWAYS),
    F("reason", STR),
    F("message", STR),
    F("source", EVENT_SOURCE, ALWAYS),
    F("firstTimestamp", TIME, ALWAYS),
    F("lastTimestamp", TIME, ALWAYS),
    F("count", I32),
    F("type", STR),
    F("eventTime", MICRO, ALWAYS),
    F("series", struct("EventSeries", F("count", I32), F("lastObservedTime", MICRO, ALWAYS)), POINTER),
    F("action", STR),
    F("related", OBJECT_REFERENCE, POINTER),
    F("reportingComponent", STR, ALWAYS),
    F("reportingInstance", STR, ALWAYS),
)
EVENTS_V1_EVENT = struct(
    "Event",
    *META_TOP,
    METADATA,
    F("eventTime", MICRO, ALWAYS),
    F(
        "series",
        struct("EventSeries", F("count", I32, ALWAYS), F("lastObservedTime", MICRO, ALWAYS)),
        POINTER,
    ),
    F("reportingController", STR),
    F("reportingInstance", STR),
    F("action", STR),
    F("reason", STR),
    F("regarding", OBJECT_REFERENCE, ALWAYS),
    F("related", OBJECT_REFERENCE, POINTER),
    F("note", STR),
    F("type", STR),
    F("deprecatedSource", EVENT_SOURCE, ALWAYS),
    F("deprecatedFirstTimestamp", TIME, ALWAYS),
    F("deprecatedLastTimestamp", TIME, ALWAYS),
    F("deprecatedCount", I32),
)
LEASE = struct(
    "Lease",
    *META_TOP,
    METADATA,
    F(
        "spec",
        struct(
            "LeaseSpec",
            F("holderIdentity", STR, POINTER),
            F("leaseDurationSeconds", I32, POINTER),
            F("acquireTime", MICRO, POINTER),
            F("renewTime", MICRO, POINTER),
            F("leaseTransitions", I32, POINTER),
            F("strategy", STR, POINTER),
            F("preferredHolder", STR, POINTER),
        ),
        ALWAYS,
    ),
)
TAINT = struct(
    "Taint", F("key", STR, ALWAYS), F("value", STR), F("effect", STR, ALWAYS), F("timeAdded", TIME, POINTER)
)
NODE = struct(
    "Node",
    *META_TOP,
    METADATA,
    F(
        "spec",
        struct(
            "NodeSpec",
            F("podCIDR", STR),
            F("podCIDRs", ListOf(STR, "set")),
            F("providerID", STR),
            F("unschedulable", BOOL),
            F("taints", ListOf(TAINT)),
            F("configSource", ANY, POINTER),
            F("externalID", STR),
        ),
        ALWAYS,
    ),
    F(
        "status",
        struct(
            "NodeStatus",
            F("capacity", MapOf(Quantity())),
            F("allocatable", MapOf(Quantity())),
            F("phase", STR),
            F("conditions", _conditions("NodeCondition", heartbeat=True)),
            F(
                "addresses",
                ListOf(
                    struct("NodeAddress", F("type", STR, ALWAYS), F("address", STR, ALWAYS)), merge_key="type"
                ),
            ),
            F(
                "daemonEndpoints",
                struct(
                    "NodeDaemonEndpoints",
                    F("kubeletEndpoint", struct("DaemonEndpoint", F("Port", I32, ALWAYS)), ALWAYS),
                ),
                ALWAYS,
            ),
            F(
                "nodeInfo",
                struct(
                    "NodeSystemInfo",
                    *(
                        F(name, STR, ALWAYS)
                        for name in (
                            "machineID",
                            "systemUUID",
                            "bootID",
                            "kernelVersion",
                            "osImage",
                            "containerRuntimeVersion",
                            "kubeletVersion",
                            "kubeProxyVersion",
                            "operatingSystem",
                            "architecture",
                        )
                    ),
                    F("swap", ANY, POINTER),
                ),
                ALWAYS,
            ),
            F("images", ListOf(struct("ContainerImage", F("names", STR_LIST), F("sizeBytes", I64)))),
            F("volumesInUse", STR_LIST),
            F("volumesAttached", ListOf(ANY)),
            F("config", ANY, POINTER),
            F("runtimeHandlers", ListOf(ANY)),
            F("features", ANY, POINTER),
        ),
        ALWAYS,
    ),
)
CONTAINER = struct(
    "Container",
    F("name", STR, ALWAYS),
    F("image", STR),
    F("command", STR_LIST),
    F("args", STR_LIST),
    F("workingDir", STR),
    F(
        "ports",
        ListOf(
            struct(
                "ContainerPort",
                F("name", STR),
                F("hostPort", I32),
                F("containerPort", I32, ALWAYS),
                F("protocol", STR),
                F("hostIP", STR),
            ),
            "map",
            ("containerPort", "protocol"),
            merge_key="containerPort",
        ),
    ),
    F("envFrom", ListOf(ANY)),
    F(
        "env",
        ListOf(
            struct("EnvVar", F("name", STR, ALWAYS), F("value", STR), F("valueFrom", ANY, POINTER)),
            "map",
            ("name",),
            merge_key="name",
        ),
    ),
    F(
        "resources",
        struct(
            "ResourceRequirements",
            F("limits", MapOf(Quantity())),
            F("requests", MapOf(Quantity())),
            F("claims", ListOf(ANY)),
        ),
        ALWAYS,
    ),
    F("resizePolicy", ListOf(ANY)),
    F("restartPolicy", STR, POINTER),
    F("volumeMounts", ListOf(ANY, merge_key="mountPath")),
    F("volumeDevices", ListOf(ANY, merge_key="devicePath")),
    F("livenessProbe", ANY, POINTER),
    F("readinessProbe", ANY, POINTER),
    F("startupProbe", ANY, POINTER),
    F("lifecycle", ANY, POINTER),
    F("terminationMessagePath", STR),
    F("terminationMessagePolicy", STR),
    F("imagePullPolicy", STR),
    F("securityContext", ANY, POINTER),
    F("stdin", BOOL),
    F("stdinOnce", BOOL),
    F("tty", BOOL),
    open=True,
)
TOLERATION = struct(
    "Toleration",
    F("key", STR),
    F("operator", STR),
    F("value", STR),
    F("effect", STR),
    F("tolerationSeconds", I64, POINTER),
)
_CONTAINERS = ListOf(CONTAINER, "map", ("name",), merge_key="name")
POD = struct(
    "Pod",
    *META_TOP,
    METADATA,
    F(
        "spec",
        struct(
            "PodSpec",
            F("volumes", ListOf(ANY, "map", ("name",), merge_key="name")),
            F("initContainers", _CONTAINERS),
            F("containers", _CONTAINERS),
            F("ephemeralContainers", ListOf(ANY, "map", ("name",), merge_key="name")),
            F("restartPolicy", STR),
            F("terminationGracePeriodSeconds", I64, POINTER),
            F("activeDeadlineSeconds", I64, POINTER),
            F("dnsPolicy", STR),
            F("nodeSelector", STR_MAP),
            F("serviceAccountName", STR),
            F("serviceAccount", STR),
            F("automountServiceAccountToken", BOOL, POINTER),
            F("nodeName", STR),
            F("hostNetwork", BOOL),
            F("hostPID", BOOL),
            F("hostIPC", BOOL),
            F("shareProcessNamespace", BOOL, POINTER),
            F("securityContext", ANY, POINTER),
            F("imagePullSecrets", ListOf(LOCAL_OBJECT_REFERENCE, merge_key="name")),
            F("hostname", STR),
            F("subdomain", STR),
            F("affinity", ANY, POINTER),
            F("schedulerName", STR),
            F("tolerations", ListOf(TOLERATION)),
            F("hostAliases", ListOf(ANY, merge_key="ip")),
            F("priorityClassName", STR),
            F("priority", I32, POINTER),
            F("dnsConfig", ANY, POINTER),
            F("readinessGates", ListOf(ANY)),
            F("runtimeClassName", STR, POINTER),
            F("enableServiceLinks", BOOL, POINTER),
            F("preemptionPolicy", STR, POINTER),
            F("overhead", MapOf(Quantity())),
            F("topologySpreadConstraints", ListOf(ANY)),
            F("setHostnameAsFQDN", BOOL, POINTER),
            F("os", ANY, POINTER),
            F("hostUsers", BOOL, POINTER),
            F("schedulingGates", ListOf(ANY)),
            F("resourceClaims", ListOf(ANY)),
            F("resources", ANY, POINTER),
            open=True,
        ),
        ALWAYS,
    ),
    F(
        "status",
        struct(
            "PodStatus",
            F("phase", STR),
            F("conditions", ListOf(ANY, "map", ("type",), merge_key="type")),
            F("message", STR),
            F("reason", STR),
            F("nominatedNodeName", STR),
            F("hostIP", STR),
            F("hostIPs", ListOf(ANY)),
            F("podIP", STR),
            F("podIPs", ListOf(ANY, merge_key="ip")),
            F("startTime", TIME, POINTER),
            F("initContainerStatuses", ListOf(ANY)),
            F("containerStatuses", ListOf(ANY)),
            F("qosClass", STR),
            F("ephemeralContainerStatuses", ListOf(ANY)),
            F("resize", STR),
            F("resourceClaimStatuses", ListOf(ANY)),
            open=True,
        ),
        ALWAYS,
    ),
)
SERVICE_PORT = struct(
    "ServicePort",
    F("name", STR),
    F("protocol", STR),
    F("appProtocol", STR, POINTER),
    F("port", I32, ALWAYS),
    F("targetPort", IntOrString()),
    F("nodePort", I32),
)
SERVICE = struct(
    "Service",
    *META_TOP,
    METADATA,
    F(
        "spec",
        struct(
            "ServiceSpec",
            F("ports", ListOf(SERVICE_PORT, "map", ("port", "protocol"), merge_key="port")),
            F("selector", STR_MAP),
            F("clusterIP", STR),
            F("clusterIPs", STR_LIST),
            F("type", STR),
            F("externalIPs", STR_LIST),
            F("sessionAffinity", STR),
            F("loadBalancerIP", STR),
            F("loadBalancerSourceRanges", STR_LIST),
            F("externalName", STR),
            F("externalTrafficPolicy", STR),
            F("healthCheckNodePort", I32),
            F("publishNotReadyAddresses", BOOL),
            F("sessionAffinityConfig", ANY, POINTER),
            F("ipFamilies", STR_LIST),
            F("ipFamilyPolicy", STR, POINTER),
            F("allocateLoadBalancerNodePorts", BOOL, POINTER),
            F("loadBalancerClass", STR, POINTER),
            F("internalTrafficPolicy", STR, POINTER),
            F("trafficDistribution", STR, POINTER),
        ),
        ALWAYS,
    ),
    F(
        "status",
        struct(
            "ServiceStatus",
            F("loadBalancer", struct("LoadBalancerStatus", F("ingress", ListOf(ANY))), ALWAYS),
            F("conditions", ListOf(CONDITION, "map", ("type",), merge_key="type")),
        ),
        ALWAYS,
    ),
)
POD_DISRUPTION_BUDGET = struct(
    "PodDisruptionBudget",
    *META_TOP,
    METADATA,
    F(
        "spec",
        struct(
            "PodDisruptionBudgetSpec",
            F("minAvailable", IntOrString(), POINTER),
            F("selector", LABEL_SELECTOR, POINTER),
            F("maxUnavailable", IntOrString(), POINTER),
            F("unhealthyPodEvictionPolicy", STR, POINTER),
        ),
        ALWAYS,
    ),
    F(
        "status",
        struct(
            "PodDisruptionBudgetStatus",
            F("observedGeneration", I64),
            F("disruptedPods", MapOf(TIME)),
            F("disruptionsAllowed", I32, ALWAYS),
            F("currentHealthy", I32, ALWAYS),
            F("desiredHealthy", I32, ALWAYS),
            F("expectedPods", I32, ALWAYS),
            F("conditions", ListOf(CONDITION, "map", ("type",), merge_key="type")),
        ),
        ALWAYS,
    ),
)
CLIENT_CONFIG = struct(
    "WebhookClientConfig",
    F("url", STR, POINTER),
    F(
        "service",
        struct(
            "ServiceReference",
            F("namespace", STR, ALWAYS),
            F("name", STR, ALWAYS),
            F("path", STR, POINTER),
            F("port", I32, POINTER),
        ),
        POINTER,
    ),
    F("caBundle", STR),
)
RULE_WITH_OPERATIONS = struct(
    "RuleWithOperations",
    F("operations", STR_LIST),
    F("apiGroups", STR_LIST),
    F("apiVersions", STR_LIST),
    F("resources", STR_LIST),
    F("scope", STR, POINTER),
)
MATCH_CONDITIONS = ListOf(
    struct("MatchCondition", F("name", STR, ALWAYS), F("expression", STR, ALWAYS)),
    "map",
    ("name",),
    merge_key="name",
)


def _webhook(go_name: str, *, mutating: bool) -> Struct:
    fields = [
        F("name", STR, ALWAYS),
        F("clientConfig", CLIENT_CONFIG, ALWAYS),
        F("rules", ListOf(RULE_WITH_OPERATIONS)),
        F("failurePolicy", STR, POINTER),
        F("matchPolicy", STR, POINTER),
        F("namespaceSelector", LABEL_SELECTOR, POINTER),
        F("objectSelector", LABEL_SELECTOR, POINTER),
        F("sideEffects", STR, POINTER),
        F("timeoutSeconds", I32, POINTER),
        F("admissionReviewVersions", STR_LIST),
    ]
    if mutating:
        fields.append(F("reinvocationPolicy", STR, POINTER))
    fields.append(F("matchConditions", MATCH_CONDITIONS))
    return struct(go_name, *fields)


VALIDATING_WEBHOOK_CONFIGURATION = struct(
    "ValidatingWebhookConfiguration",
    *META_TOP,
    METADATA,
    F("webhooks", ListOf(_webhook("ValidatingWebhook", mutating=False), "map", ("name",), merge_key="name")),
)
MUTATING_WEBHOOK_CONFIGURATION = struct(
    "MutatingWebhookConfiguration",
    *META_TOP,
    METADATA,
    F("webhooks", ListOf(_webhook("MutatingWebhook", mutating=True), "map", ("name",), merge_key="name")),
)
CRD_NAMES = struct(
    "CustomResourceDefinitionNames",
    F("plural", STR, ALWAYS),
    F("singular", STR),
    F("shortNames", STR_LIST),
    F("kind", STR, ALWAYS),
    F("listKind", STR),
    F("categories", STR_LIST),
)
CUSTOM_RESOURCE_DEFINITION = struct(
    "CustomResourceDefinition",
    *META_TOP,
    METADATA,
    F(
        "spec",
        struct(
            "CustomResourceDefinitionSpec",
            F("group", STR, ALWAYS),
            F("names", CRD_NAMES, ALWAYS),
            F("scope", STR, ALWAYS),
            F(
                "versions",
                ListOf(
                    struct(
                        "CustomResourceDefinitionVersion",
                        F("name", STR, ALWAYS),
                        F("served", BOOL, ALWAYS),
                        F("storage", BOOL, ALWAYS),
                        F("deprecated", BOOL),
                        F("deprecationWarning", STR, POINTER),
                        F(
                            "schema",
                            struct("CustomResourceValidation", F("openAPIV3Schema", ANY, POINTER)),
                            POINTER,
                        ),
                        F(
                            "subresources",
                            struct(
                                "CustomResourceSubresources",
                                F("status", ANY, POINTER),
                                F(
                                    "scale",
                                    struct(
                                        "CustomResourceSubresourceScale",
                                        F("specReplicasPath", STR, ALWAYS),
                                        F("statusReplicasPath", STR, ALWAYS),
                                        F("labelSelectorPath", STR, POINTER),
                                    ),
                                    POINTER,
                                ),
                            ),
                            POINTER,
                        ),
                        F(
                            "additionalPrinterColumns",
                            ListOf(
                                struct(
                                    "CustomResourceColumnDefinition",
                                    F("name", STR, ALWAYS),
                                    F("type", STR, ALWAYS),
                                    F("format", STR),
                                    F("description", STR),
                                    F("priority", I32),
                                    F("jsonPath", STR, ALWAYS),
                                )
                            ),
                        ),
                        F("selectableFields", ListOf(struct("SelectableField", F("jsonPath", STR, ALWAYS)))),
                    )
                ),
            ),
            F(
                "conversion",
                struct("CustomResourceConversion", F("strategy", STR, ALWAYS), F("webhook", ANY, POINTER)),
                POINTER,
            ),
            F("preserveUnknownFields", BOOL),
        ),
        ALWAYS,
    ),
    F(
        "status",
        struct(
            "CustomResourceDefinitionStatus",
            F("conditions", _conditions("CustomResourceDefinitionCondition"), ALWAYS),
            F("acceptedNames", CRD_NAMES, ALWAYS),
            F("storedVersions", STR_LIST, ALWAYS),
        ),
        ALWAYS,
    ),
)
SELF_SUBJECT_REVIEW = struct(
    "SelfSubjectReview",
    *META_TOP,
    METADATA,
    F(
        "status",
        struct(
            "SelfSubjectReviewStatus",
            F(
                "userInfo",
                struct(
                    "UserInfo",
                    F("username", STR),
                    F("uid", STR),
                    F("groups", STR_LIST),
                    F("extra", MapOf(STR_LIST)),
                ),
                ALWAYS,
            ),
        ),
        ALWAYS,
    ),
)
SCALE = struct(
    "Scale",
    *META_TOP,
    METADATA,
    F("spec", struct("ScaleSpec", F("replicas", I32)), ALWAYS),
    F("status", struct("ScaleStatus", F("replicas", I32, ALWAYS), F("selector", STR)), ALWAYS),
)

# The key order of a JSONSchemaProps (CRD schemas are written back in this order).
JSON_SCHEMA_KEY_ORDER = (
    "id",
    "$schema",
    "$ref",
    "description",
    "type",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "externalDocs",
    "example",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
)


def order_json_schema(schema: Any) -> Any:
    """A CRD schema with its keys in JSONSchemaProps order and property maps sorted by name."""
    if not isinstance(schema, dict):
        return schema
    out: JSON = {}
    for key in [k for k in JSON_SCHEMA_KEY_ORDER if k in schema] + [
        k for k in schema if k not in JSON_SCHEMA_KEY_ORDER
    ]:
        value = schema[key]
        if key in ("properties", "patternProperties", "definitions", "dependencies") and isinstance(
            value, dict
        ):
            value = {k: order_json_schema(value[k]) for k in sorted(value)}
        elif key in ("items", "not", "additionalProperties", "additionalItems"):
            value = (
                [order_json_schema(v) for v in value] if isinstance(value, list) else order_json_schema(value)
            )
        elif key in ("allOf", "oneOf", "anyOf") and isinstance(value, list):
            value = [order_json_schema(v) for v in value]
        out[key] = value
    return out
