"""Protobuf answers: what :mod:`apiserver.protobuf` writes, read back by an independent decoder.

The ``protobuf`` package parses the bytes with the descriptors of
:mod:`tests.support.protobuf_messages` (written by hand from Kubernetes' ``generated.proto``), so a
wrong field number, wire type or envelope shows up here and not only in a round trip through our
own decoder. The recorded 406 of ``13-get-protobuf-only`` pins the bytes kube-apiserver writes.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from apiserver.protobuf import (
    SCHEMA,
    ProtobufError,
    UnknownKind,
    decode_envelope,
    encode_envelope,
    watch_frame,
)
from apiserver.protobuf.schema import go_duration, parse_go_duration
from tests.support.protobuf_messages import K8S, unwrap

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "testdata" / "kube-apiserver"

CONFIGMAP: dict[str, Any] = {
    "kind": "ConfigMap",
    "apiVersion": "v1",
    "metadata": {
        "name": "settings",
        "namespace": "ns",
        "uid": "6f1c1c1e-1a1b-4c4d-8e8f-000000000001",
        "resourceVersion": "4235",
        "creationTimestamp": "2026-01-02T03:04:05Z",
        "labels": {"b": "2", "a": "1"},
        "annotations": {"note": ""},
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": "u-1", "controller": True}
        ],
        "finalizers": ["example.dev/hold"],
        "managedFields": [
            {
                "manager": "kubectl",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2026-01-02T03:04:05Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:k": {}}},
            }
        ],
    },
    "data": {"k": "v", "empty": ""},
    "binaryData": {"blob": "AAH+/w=="},
    "immutable": True,
}

POD: dict[str, Any] = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {"name": "web", "namespace": "ns", "resourceVersion": "7"},
    "spec": {
        "containers": [
            {
                "name": "app",
                "image": "nginx:1.27",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "resources": {"limits": {"memory": "64Mi"}, "requests": {"cpu": "250m"}},
                "livenessProbe": {
                    "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                    "initialDelaySeconds": 3,
                },
                "readinessProbe": {"tcpSocket": {"port": 8080}},
                "securityContext": {"runAsUser": -1, "privileged": False},
            }
        ],
        "terminationGracePeriodSeconds": 30,
        "securityContext": {"supplementalGroups": [1000, 2000]},
    },
    "status": {
        "phase": "Running",
        "podIP": "10.1.2.3",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2023-11-14T22:13:20Z"}],
    },
}

LEASE: dict[str, Any] = {
    "kind": "Lease",
    "apiVersion": "coordination.k8s.io/v1",
    "metadata": {"name": "leader", "namespace": "ns"},
    "spec": {
        "holderIdentity": "me",
        "leaseDurationSeconds": 15,
        "renewTime": "2023-11-14T22:13:20.250000Z",
        "leaseTransitions": 0,
    },
}


def test_every_table_reference_resolves_with_the_answer_tables() -> None:
    assert SCHEMA.unresolved() == []


def test_configmap_envelope_and_fields() -> None:
    api_version, kind, raw = unwrap(encode_envelope(CONFIGMAP))
    assert (api_version, kind) == ("v1", "ConfigMap")
    cm = K8S["ConfigMap"].FromString(raw)
    meta = cm.metadata
    assert (meta.name, meta.namespace, meta.uid, meta.resourceVersion) == (
        "settings",
        "ns",
        "6f1c1c1e-1a1b-4c4d-8e8f-000000000001",
        "4235",
    )
    assert meta.creationTimestamp.seconds == 1767323045 and meta.creationTimestamp.nanos == 0
    assert dict(meta.labels) == {"a": "1", "b": "2"}
    assert dict(meta.annotations) == {"note": ""}
    (owner,) = meta.ownerReferences
    assert (owner.apiVersion, owner.kind, owner.name, owner.uid, owner.controller) == (
        "v1",
        "Pod",
        "owner",
        "u-1",
        True,
    )
    assert not owner.HasField("blockOwnerDeletion")  # a pointer left out stays out
    assert list(meta.finalizers) == ["example.dev/hold"]
    (entry,) = meta.managedFields
    assert (entry.manager, entry.operation, entry.fieldsType) == ("kubectl", "Update", "FieldsV1")
    assert json.loads(entry.fieldsV1.Raw) == {"f:data": {".": {}, "f:k": {}}}
    assert dict(cm.data) == {"k": "v", "empty": ""}
    assert dict(cm.binaryData) == {"blob": b"\x00\x01\xfe\xff"}
    assert cm.immutable is True


def test_non_pointer_scalars_are_written_even_when_zero_as_go_writes_them() -> None:
    cm = K8S["ConfigMap"].FromString(
        unwrap(encode_envelope({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}}))[2]
    )
    assert cm.metadata.HasField("generateName") and cm.metadata.generateName == ""
    assert cm.metadata.HasField("generation") and cm.metadata.generation == 0
    assert not cm.metadata.HasField("creationTimestamp")  # a message the object does not have
    assert cm.HasField("immutable") is False  # *bool: only when set


def test_pod_quantities_int_or_string_negative_ints_and_times() -> None:
    api_version, kind, raw = unwrap(encode_envelope(POD))
    assert (api_version, kind) == ("v1", "Pod")
    pod = K8S["Pod"].FromString(raw)
    (container,) = pod.spec.containers
    assert container.resources.limits["memory"].string == "64Mi"
    assert (container.ports[0].name, container.ports[0].containerPort) == ("http", 8080)
    port = container.livenessProbe.handler.httpGet.port
    assert (port.type, port.strVal) == (1, "http")
    assert container.livenessProbe.initialDelaySeconds == 3
    assert container.securityContext.runAsUser == -1
    assert container.securityContext.privileged is False
    assert pod.spec.terminationGracePeriodSeconds == 30
    assert list(pod.spec.securityContext.supplementalGroups) == [1000, 2000]
    assert pod.status.phase == "Running" and pod.status.podIP == "10.1.2.3"
    (condition,) = pod.status.conditions
    assert condition.lastTransitionTime.seconds == 1_700_000_000


def test_int_or_string_integer_form() -> None:
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"][0]["livenessProbe"] = {"tcpSocket": {"port": 8080}}
    raw = unwrap(encode_envelope(pod))[2]
    port = K8S["Pod"].FromString(raw).spec.containers[0].livenessProbe.handler.tcpSocket.port
    assert (port.type, port.intVal, port.strVal) == (0, 8080, "")
    assert decode_envelope(encode_envelope(pod)) == pod


def test_lease_micro_time_keeps_its_microseconds() -> None:
    api_version, kind, raw = unwrap(encode_envelope(LEASE))
    assert (api_version, kind) == ("coordination.k8s.io/v1", "Lease")
    lease = K8S["Lease"].FromString(raw)
    assert lease.spec.holderIdentity == "me" and lease.spec.leaseDurationSeconds == 15
    assert (lease.spec.renewTime.seconds, lease.spec.renewTime.nanos) == (1_700_000_000, 250_000_000)
    assert lease.spec.HasField("leaseTransitions") and lease.spec.leaseTransitions == 0


@pytest.mark.parametrize("obj", [CONFIGMAP, POD, LEASE], ids=["configmap", "pod", "lease"])
def test_our_decoder_reads_back_what_the_encoder_wrote(obj: dict[str, Any]) -> None:
    assert decode_envelope(encode_envelope(obj)) == obj


def test_list_carries_list_meta_and_items_without_type() -> None:
    listed = {
        "kind": "ConfigMapList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "99", "continue": "tok", "remainingItemCount": 3},
        "items": [{"metadata": {"name": "a"}, "data": {"k": "v"}}, {"metadata": {"name": "b"}}],
    }
    api_version, kind, raw = unwrap(encode_envelope(listed))
    assert (api_version, kind) == ("v1", "ConfigMapList")
    parsed = K8S["ConfigMapList"].FromString(raw)
    assert parsed.metadata.resourceVersion == "99"
    assert getattr(parsed.metadata, "continue") == "tok"
    assert parsed.metadata.remainingItemCount == 3
    assert [item.metadata.name for item in parsed.items] == ["a", "b"]
    assert dict(parsed.items[0].data) == {"k": "v"}
    assert decode_envelope(encode_envelope(listed)) == listed


def test_status_with_details_and_causes() -> None:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'ConfigMap "x" is invalid: data: Invalid value',
        "reason": "Invalid",
        "details": {
            "name": "x",
            "kind": "ConfigMap",
            "causes": [{"reason": "FieldValueInvalid", "message": "Invalid value", "field": "data"}],
        },
        "code": 422,
    }
    api_version, kind, raw = unwrap(encode_envelope(status))
    assert (api_version, kind) == ("v1", "Status")
    parsed = K8S["Status"].FromString(raw)
    assert (parsed.status, parsed.reason, parsed.code) == ("Failure", "Invalid", 422)
    assert (parsed.details.name, parsed.details.kind) == ("x", "ConfigMap")
    (cause,) = parsed.details.causes
    assert (cause.reason, cause.message, cause.field) == ("FieldValueInvalid", "Invalid value", "data")
    assert decode_envelope(encode_envelope(status)) == status


def test_status_bytes_are_the_ones_kube_apiserver_wrote() -> None:
    case = json.loads((TRANSCRIPTS / "13-get-protobuf-only.json").read_text())
    recorded = base64.b64decode(case["response"]["body"]["<binary-base64>"])
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "only the following media types are accepted: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf",
        "reason": "NotAcceptable",
        "code": 406,
    }
    assert encode_envelope(status) == recorded


def test_watch_frame_is_length_prefixed_watch_event_around_the_enveloped_object() -> None:
    bookmark = {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "4235", "creationTimestamp": None},
    }
    inner = encode_envelope(bookmark)
    frame = watch_frame("BOOKMARK", inner)
    length = int.from_bytes(frame[:4], "big")
    assert length == len(frame) - 4
    event = K8S["WatchEvent"].FromString(frame[4:])
    assert event.type == "BOOKMARK"
    assert event.object.raw == inner
    _, kind, raw = unwrap(event.object.raw)
    cm = K8S["ConfigMap"].FromString(raw)
    assert kind == "ConfigMap" and cm.metadata.resourceVersion == "4235"
    # The zero creation time is an empty message, which reads back as null.
    assert cm.metadata.HasField("creationTimestamp") and cm.metadata.creationTimestamp.seconds == 0
    assert decode_envelope(inner) == bookmark


def test_kinds_without_a_table_are_refused() -> None:
    with pytest.raises(UnknownKind):
        encode_envelope({"kind": "Gadget", "apiVersion": "ref.example.dev/v1", "metadata": {}})


def test_values_of_the_wrong_type_are_a_protobuf_error() -> None:
    with pytest.raises(ProtobufError):
        encode_envelope(
            {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "spec": {"renewTime": "soon"}}
        )
    with pytest.raises(ProtobufError):
        encode_envelope({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"generation": "one"}})


@pytest.mark.parametrize("nanoseconds", [0, 1, 1_500_000, 3_000_000_000, 3_723_500_000_000, -2_000_000_000])
def test_go_duration_parses_what_it_prints(nanoseconds: int) -> None:
    assert parse_go_duration(go_duration(nanoseconds)) == nanoseconds
