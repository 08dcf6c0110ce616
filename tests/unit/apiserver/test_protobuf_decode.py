"""Protobuf bodies decode into the JSON objects a JSON client would have sent.

Two encoders independent of :mod:`apiserver.protobuf`: the bodies real kubectl (v1.37) sent for
``kubectl create ...`` (``tests/testdata/protobuf/*.pb``, next to the JSON that kubectl prints for
the same command with ``--dry-run=client -o json``), and the ``protobuf`` package with descriptors
written by hand in :mod:`tests.support.protobuf_messages`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apiserver.protobuf import SCHEMA, ProtobufError, UnknownKind, decode_envelope
from apiserver.protobuf.schema import go_duration, parse_table
from tests.support.protobuf_messages import K8S, envelope

RECORDED = Path(__file__).resolve().parents[2] / "testdata" / "protobuf"


def test_every_table_reference_resolves() -> None:
    assert SCHEMA.unresolved() == []


# ------------------------------------------------------------------------------ recorded kubectl


def recorded_cases() -> list[str]:
    return sorted(path.stem for path in RECORDED.glob("*.pb") if path.with_suffix(".kubectl.json").exists())


@pytest.mark.parametrize("name", recorded_cases())
def test_recorded_kubectl_body_decodes_to_what_kubectl_prints(name: str) -> None:
    decoded = decode_envelope((RECORDED / f"{name}.pb").read_bytes())
    printed = json.loads((RECORDED / f"{name}.kubectl.json").read_text())
    # The JSON body carries "creationTimestamp": null too; kubectl's printer leaves it out.
    assert decoded["metadata"].pop("creationTimestamp") is None
    assert decoded == printed


def test_recorded_cases_cover_the_kubectl_create_commands() -> None:
    assert set(recorded_cases()) >= {
        "namespace",
        "configmap",
        "configmap-binary",
        "secret",
        "serviceaccount",
        "service",
        "service-nodeport",
        "pdb",
    }


def test_recorded_configmap_binary_data_is_base64() -> None:
    decoded = decode_envelope((RECORDED / "configmap-binary.pb").read_bytes())
    assert decoded["binaryData"] == {"blob": "AAH+/2Jpbg=="}
    assert decoded["data"] == {"text": "hello"}


def test_recorded_self_subject_review_of_kubectl_auth_whoami() -> None:
    decoded = decode_envelope((RECORDED / "selfsubjectreview.pb").read_bytes())
    assert decoded == {
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "status": {"userInfo": {}},
    }


# ------------------------------------------------------------------------ the protobuf package


def meta(**fields: Any) -> Any:
    return K8S["ObjectMeta"](**fields)


def quantity(text: str) -> Any:
    return K8S["Quantity"](string=text)


def int_or_string(value: int | str) -> Any:
    if isinstance(value, int):
        return K8S["IntOrString"](type=0, intVal=value)
    return K8S["IntOrString"](type=1, strVal=value)


def test_pod_with_nested_messages_maps_repeated_fields_and_special_types() -> None:
    container = K8S["Container"](
        name="web",
        image="nginx:1.27",
        command=["nginx", "-g", "daemon off;"],
        ports=[K8S["ContainerPort"](name="http", containerPort=80, protocol="TCP")],
        env=[K8S["EnvVar"](name="A", value="1"), K8S["EnvVar"](name="EMPTY", value="")],
        resources=K8S["ResourceRequirements"](
            limits={"cpu": quantity("500m"), "memory": quantity("128Mi")}, requests={"cpu": quantity("100m")}
        ),
        livenessProbe=K8S["Probe"](
            handler=K8S["ProbeHandler"](
                httpGet=K8S["HTTPGetAction"](path="/healthz", port=int_or_string("http"))
            ),
            initialDelaySeconds=3,
            periodSeconds=0,
        ),
        securityContext=K8S["SecurityContext"](
            capabilities=K8S["Capabilities"](drop=["ALL"]), privileged=False, runAsNonRoot=True
        ),
        tty=False,
        restartPolicy="Always",
    )
    spec = K8S["PodSpec"](
        containers=[container],
        initContainers=[
            K8S["Container"](
                name="init",
                image="busybox",
                livenessProbe=K8S["Probe"](
                    handler=K8S["ProbeHandler"](tcpSocket=K8S["TCPSocketAction"](port=int_or_string(8080)))
                ),
            )
        ],
        volumes=[
            K8S["Volume"](
                name="scratch",
                volumeSource=K8S["VolumeSource"](
                    emptyDir=K8S["EmptyDirVolumeSource"](sizeLimit=quantity("1Gi"))
                ),
            ),
            K8S["Volume"](
                name="config",
                volumeSource=K8S["VolumeSource"](
                    configMap=K8S["ConfigMapVolumeSource"](
                        localObjectReference=K8S["LocalObjectReference"](name="settings"), defaultMode=420
                    )
                ),
            ),
        ],
        restartPolicy="Always",
        terminationGracePeriodSeconds=0,
        dnsPolicy="ClusterFirst",
        nodeSelector={"disk": "ssd"},
        hostNetwork=False,
        automountServiceAccountToken=False,
        tolerations=[
            K8S["Toleration"](key="k", operator="Exists", effect="NoExecute", tolerationSeconds=300)
        ],
        hostUsers=False,
        schedulingGates=[K8S["PodSchedulingGate"](name="wait")],
    )
    pod = K8S["Pod"](
        metadata=meta(
            name="p",
            namespace="default",
            generation=0,
            labels={"app": "web"},
            annotations={"note": "x"},
            creationTimestamp=K8S["Time"](),
            ownerReferences=[
                K8S["OwnerReference"](
                    apiVersion="apps/v1", kind="ReplicaSet", name="rs", uid="u-1", controller=True
                )
            ],
            finalizers=["a/b"],
        ),
        spec=spec,
    )

    assert decode_envelope(envelope("v1", "Pod", pod)) == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "p",
            "namespace": "default",
            "creationTimestamp": None,
            "labels": {"app": "web"},
            "annotations": {"note": "x"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "rs",
                    "uid": "u-1",
                    "controller": True,
                }
            ],
            "finalizers": ["a/b"],
        },
        "spec": {
            "volumes": [
                {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
                {"name": "config", "configMap": {"name": "settings", "defaultMode": 420}},
            ],
            "containers": [
                {
                    "name": "web",
                    "image": "nginx:1.27",
                    "command": ["nginx", "-g", "daemon off;"],
                    "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                    "env": [{"name": "A", "value": "1"}, {"name": "EMPTY"}],
                    "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m"}},
                    "livenessProbe": {
                        "httpGet": {"path": "/healthz", "port": "http"},
                        "initialDelaySeconds": 3,
                    },
                    "securityContext": {
                        "capabilities": {"drop": ["ALL"]},
                        "privileged": False,
                        "runAsNonRoot": True,
                    },
                    "restartPolicy": "Always",
                }
            ],
            "initContainers": [
                {"name": "init", "image": "busybox", "livenessProbe": {"tcpSocket": {"port": 8080}}}
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 0,
            "dnsPolicy": "ClusterFirst",
            "nodeSelector": {"disk": "ssd"},
            "automountServiceAccountToken": False,
            "tolerations": [
                {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ],
            "hostUsers": False,
            "schedulingGates": [{"name": "wait"}],
        },
    }


def test_unknown_field_numbers_are_skipped() -> None:
    pod = K8S["Pod"](
        metadata=meta(name="p"),
        spec=K8S["PodSpec"](
            containers=[K8S["Container"](name="c", fromTheFuture="ignored")], mystery=quantity("1")
        ),
    )
    decoded = decode_envelope(envelope("v1", "Pod", pod))
    assert decoded["spec"] == {"containers": [{"name": "c"}]}


def test_packed_repeated_integers_decode_like_unpacked_ones() -> None:
    pod = K8S["Pod"](
        spec=K8S["PodSpec"](
            securityContext=K8S["PodSecurityContext"](runAsUser=0, supplementalGroups=[1, 2, -3])
        )
    )
    assert decode_envelope(envelope("v1", "Pod", pod))["spec"]["securityContext"] == {
        "runAsUser": 0,
        "supplementalGroups": [1, 2, -3],
    }


def test_node_with_quantity_maps_and_condition_times() -> None:
    node = K8S["Node"](
        metadata=meta(name="n1", creationTimestamp=K8S["Time"](seconds=1_700_000_000)),
        spec=K8S["NodeSpec"](
            podCIDR="10.0.0.0/24",
            unschedulable=True,
            taints=[
                K8S["Taint"](
                    key="k", value="", effect="NoSchedule", timeAdded=K8S["Time"](seconds=0, nanos=0)
                )
            ],
        ),
        status=K8S["NodeStatus"](
            capacity={"cpu": quantity("4"), "memory": quantity("16Gi"), "pods": quantity("110")},
            allocatable={"cpu": quantity("3800m")},
            conditions=[
                K8S["NodeCondition"](
                    type="Ready",
                    status="True",
                    lastHeartbeatTime=K8S["Time"](seconds=1_700_000_100, nanos=999_999_999),
                    lastTransitionTime=K8S["Time"](),
                    reason="KubeletReady",
                    message="",
                )
            ],
            addresses=[K8S["NodeAddress"](type="InternalIP", address="10.0.0.5")],
        ),
    )
    assert decode_envelope(envelope("v1", "Node", node)) == {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": "n1", "creationTimestamp": "2023-11-14T22:13:20Z"},
        "spec": {
            "podCIDR": "10.0.0.0/24",
            "unschedulable": True,
            "taints": [{"key": "k", "effect": "NoSchedule", "timeAdded": "1970-01-01T00:00:00Z"}],
        },
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "3800m"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "lastHeartbeatTime": "2023-11-14T22:15:00Z",
                    "lastTransitionTime": None,
                    "reason": "KubeletReady",
                }
            ],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
        },
    }


def test_lease_micro_times_keep_six_fractional_digits_and_pointer_zeros() -> None:
    lease = K8S["Lease"](
        metadata=meta(name="leader", namespace="kube-system"),
        spec=K8S["LeaseSpec"](
            holderIdentity="",
            leaseDurationSeconds=15,
            acquireTime=K8S["Time"](seconds=1_700_000_000, nanos=123_456_789),
            renewTime=K8S["Time"](seconds=1_700_000_001, nanos=0),
            leaseTransitions=0,
        ),
    )
    assert decode_envelope(envelope("coordination.k8s.io/v1", "Lease", lease))["spec"] == {
        "holderIdentity": "",
        "leaseDurationSeconds": 15,
        "acquireTime": "2023-11-14T22:13:20.123456Z",
        "renewTime": "2023-11-14T22:13:21.000000Z",
        "leaseTransitions": 0,
    }


def test_core_event_with_time_micro_time_and_references() -> None:
    event = K8S["Event"](
        metadata=meta(name="p.1", namespace="default"),
        involvedObject=K8S["ObjectReference"](kind="Pod", namespace="default", name="p", apiVersion="v1"),
        reason="Started",
        message="Started container",
        source=K8S["EventSource"](component="kubelet", host=""),
        firstTimestamp=K8S["Time"](seconds=1_700_000_000),
        lastTimestamp=K8S["Time"](),
        count=1,
        type="Normal",
        eventTime=K8S["Time"](),
    )
    decoded = decode_envelope(envelope("v1", "Event", event))
    assert decoded["involvedObject"] == {
        "kind": "Pod",
        "namespace": "default",
        "name": "p",
        "apiVersion": "v1",
    }
    assert decoded["source"] == {"component": "kubelet"}
    assert decoded["firstTimestamp"] == "2023-11-14T22:13:20Z"
    assert decoded["lastTimestamp"] is None and decoded["eventTime"] is None
    assert (decoded["reason"], decoded["count"], decoded["type"]) == ("Started", 1, "Normal")


def test_events_v1_event_as_client_go_event_recorders_send_it() -> None:
    event = K8S["EventsV1Event"](
        metadata=meta(name="p.2", namespace="default"),
        eventTime=K8S["Time"](seconds=1_700_000_000, nanos=5_000),
        series=K8S["EventSeries"](count=2, lastObservedTime=K8S["Time"](seconds=1_700_000_060)),
        reportingController="cpo.dev/controller",
        reportingInstance="cpo-0",
        action="Reconcile",
        reason="Scaled",
        regarding=K8S["ObjectReference"](kind="ControlPlane", namespace="default", name="cp"),
        note="scaled to 3",
        type="Normal",
        deprecatedCount=0,
    )
    decoded = decode_envelope(envelope("events.k8s.io/v1", "Event", event))
    assert decoded == {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": {"name": "p.2", "namespace": "default"},
        "eventTime": "2023-11-14T22:13:20.000005Z",
        "series": {"count": 2, "lastObservedTime": "2023-11-14T22:14:20.000000Z"},
        "reportingController": "cpo.dev/controller",
        "reportingInstance": "cpo-0",
        "action": "Reconcile",
        "reason": "Scaled",
        "regarding": {"kind": "ControlPlane", "namespace": "default", "name": "cp"},
        "note": "scaled to 3",
        "type": "Normal",
    }


def test_secret_bytes_map_is_base64_and_immutable_pointer_is_kept() -> None:
    secret = K8S["Secret"](
        metadata=meta(name="s"),
        data={"token": b"\x00\xffsecret", "empty": b""},
        stringData={"plain": "text"},
        type="Opaque",
        immutable=False,
    )
    assert decode_envelope(envelope("v1", "Secret", secret)) == {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {"name": "s"},
        "data": {"token": "AP9zZWNyZXQ=", "empty": ""},
        "stringData": {"plain": "text"},
        "type": "Opaque",
        "immutable": False,
    }


def test_pod_disruption_budget_int_or_string_and_label_selector() -> None:
    pdb = K8S["PodDisruptionBudget"](
        metadata=meta(name="pdb"),
        spec=K8S["PodDisruptionBudgetSpec"](
            minAvailable=int_or_string(0),
            maxUnavailable=int_or_string("25%"),
            selector=K8S["LabelSelector"](
                matchLabels={"app": "web"},
                matchExpressions=[
                    K8S["LabelSelectorRequirement"](key="tier", operator="In", values=["a", "b"])
                ],
            ),
        ),
    )
    assert decode_envelope(envelope("policy/v1", "PodDisruptionBudget", pdb))["spec"] == {
        "minAvailable": 0,
        "maxUnavailable": "25%",
        "selector": {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
        },
    }


def test_managed_fields_carry_fields_v1_as_json() -> None:
    cm_meta = meta(
        name="x",
        managedFields=[
            K8S["ManagedFieldsEntry"](
                manager="kubectl",
                operation="Update",
                apiVersion="v1",
                time=K8S["Time"](seconds=1_700_000_000),
                fieldsType="FieldsV1",
                fieldsV1=K8S["FieldsV1"](Raw=b'{"f:data":{"f:a":{}}}'),
            )
        ],
    )
    decoded = SCHEMA.decode("ObjectMeta", cm_meta.SerializeToString())
    assert decoded["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2023-11-14T22:13:20Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}}},
        }
    ]


def test_validating_webhook_configuration_with_embedded_rule_and_ca_bundle() -> None:
    config = K8S["ValidatingWebhookConfiguration"](
        metadata=meta(name="hooks"),
        webhooks=[
            K8S["ValidatingWebhook"](
                name="v.example.dev",
                clientConfig=K8S["WebhookClientConfig"](
                    service=K8S["ServiceReference"](
                        namespace="ops", name="hook", path="/validate", port=9443
                    ),
                    caBundle=b"-----BEGIN CERTIFICATE-----",
                ),
                rules=[
                    K8S["RuleWithOperations"](
                        operations=["CREATE", "UPDATE"],
                        rule=K8S["Rule"](apiGroups=[""], apiVersions=["v1"], resources=["configmaps"]),
                    )
                ],
                failurePolicy="Fail",
                sideEffects="None",
                timeoutSeconds=5,
                admissionReviewVersions=["v1"],
                objectSelector=K8S["LabelSelector"](),
            )
        ],
    )
    raw = envelope("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", config)
    assert decode_envelope(raw)["webhooks"] == [
        {
            "name": "v.example.dev",
            "clientConfig": {
                "service": {"namespace": "ops", "name": "hook", "path": "/validate", "port": 9443},
                "caBundle": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
            },
            "rules": [
                {
                    "operations": ["CREATE", "UPDATE"],
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "resources": ["configmaps"],
                }
            ],
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "timeoutSeconds": 5,
            "admissionReviewVersions": ["v1"],
            "objectSelector": {},
        }
    ]


def test_delete_options_under_any_group_version() -> None:
    options = K8S["DeleteOptions"](gracePeriodSeconds=0, propagationPolicy="Foreground", dryRun=["All"])
    decoded = decode_envelope(envelope("meta.k8s.io/v1", "DeleteOptions", options), table="DeleteOptions")
    assert decoded == {
        "kind": "DeleteOptions",
        "apiVersion": "meta.k8s.io/v1",
        "gracePeriodSeconds": 0,
        "propagationPolicy": "Foreground",
        "dryRun": ["All"],
    }


# ------------------------------------------------------------------------------------ failures


def test_kind_without_a_table_is_an_unknown_kind() -> None:
    with pytest.raises(UnknownKind, match=r'no kind "Widget" is registered for version "example\.dev/v1"'):
        decode_envelope(envelope("example.dev/v1", "Widget", K8S["Pod"]()))


def test_body_without_the_magic_is_rejected() -> None:
    with pytest.raises(ProtobufError, match=r"expected prefix \[107 56 115 0\]"):
        decode_envelope(b'{"kind":"Pod"}')


@pytest.mark.parametrize("cut", [5, 12, 30, -1])
def test_truncated_bodies_raise_protobuf_errors(cut: int) -> None:
    pod = K8S["Pod"](
        metadata=meta(name="truncated", labels={"a": "b"}), spec=K8S["PodSpec"](restartPolicy="Always")
    )
    raw = envelope("v1", "Pod", pod)
    with pytest.raises(ProtobufError):
        decode_envelope(raw[:cut])


def test_a_string_field_sent_as_varint_is_a_wire_type_error() -> None:
    # Pod.metadata (field 1) with wire type 0 instead of length-delimited.
    raw = envelope("v1", "Pod", K8S["Pod"]())
    bad_pod = bytes([0x08, 0x01])
    unknown = K8S["Unknown"](typeMeta=K8S["TypeMeta"](apiVersion="v1", kind="Pod"), raw=bad_pod)
    assert raw.startswith(b"k8s\x00")
    with pytest.raises(ProtobufError, match=r"Pod\.metadata has wire type varint, expected length-delimited"):
        decode_envelope(b"k8s\x00" + unknown.SerializeToString())


def test_out_of_range_timestamp_is_an_error_not_a_crash() -> None:
    pod = K8S["Pod"](metadata=meta(creationTimestamp=K8S["Time"](seconds=10**15)))
    with pytest.raises(ProtobufError, match="out of range"):
        decode_envelope(envelope("v1", "Pod", pod))


# ------------------------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    ("nanoseconds", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1_500, "1.5µs"),
        (1_500_000, "1.5ms"),
        (1_000_000_000, "1s"),
        (90 * 1_000_000_000, "1m30s"),
        (3_723_500_000_000, "1h2m3.5s"),
        (-2_000_000_000, "-2s"),
    ],
)
def test_go_duration_strings(nanoseconds: int, text: str) -> None:
    assert go_duration(nanoseconds) == text


def test_table_notation_rejects_malformed_entries() -> None:
    with pytest.raises(ValueError, match="bad field entry"):
        parse_table("Broken", "1 name")
    with pytest.raises(ValueError, match="appears twice"):
        parse_table("Broken", "1 name s; 1 other s")
