"""POST/PUT/DELETE bodies in protobuf: which kinds accept them, and the 400/415 answers otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apiserver.decode import accepted_media_types, decode_delete_options, decode_object
from apiserver.errors import StatusError
from apiserver.protobuf import PROTOBUF_MEDIA_TYPE, decode_envelope
from apiserver.protobuf.wire import ProtobufError, iter_fields, read_varint, signed64
from apiserver.registry import ResourceType
from tests.support.protobuf_messages import K8S, envelope
from tests.unit.apiserver.resource_types import CONFIGMAPS, CRDS, GADGETS, NAMESPACES, NODES, PODS

RECORDED = Path(__file__).resolve().parents[2] / "testdata" / "protobuf"


def status_of(raw: bytes, rt: ResourceType, content_type: str = PROTOBUF_MEDIA_TYPE) -> dict[str, Any]:
    with pytest.raises(StatusError) as caught:
        decode_object(raw, content_type, rt)
    return caught.value.status()


# ------------------------------------------------------------------------------------ accepted


def test_recorded_kubectl_create_namespace_is_decoded() -> None:
    decoded = decode_object((RECORDED / "namespace.pb").read_bytes(), PROTOBUF_MEDIA_TYPE, NAMESPACES)
    assert decoded.value == {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {"name": "foo", "creationTimestamp": None},
        "spec": {},
        "status": {},
    }
    assert decoded.duplicates == []


def test_content_type_parameters_are_ignored() -> None:
    raw = envelope("v1", "ConfigMap", K8S["Pod"](metadata=K8S["ObjectMeta"](name="cm")))
    decoded = decode_object(raw, PROTOBUF_MEDIA_TYPE + "; charset=utf-8", CONFIGMAPS)
    assert decoded.value["metadata"]["name"] == "cm"


def test_the_envelopes_kind_is_kept_for_validation_to_judge() -> None:
    # As with a JSON body, a ConfigMap posted to the pods URL decodes as a ConfigMap.
    raw = envelope("v1", "ConfigMap", K8S["Pod"](metadata=K8S["ObjectMeta"](name="x")))
    assert decode_object(raw, PROTOBUF_MEDIA_TYPE, PODS).value == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "x"},
    }


def test_fields_newer_than_the_served_types_are_dropped_silently() -> None:
    # NodeStatus.declaredFeatures (field 14) is in the protobuf tables but not in the served Node
    # type: like a Go server that does not know the field number, the body loses it, unwarned.
    node = K8S["Node"](
        metadata=K8S["ObjectMeta"](name="n"),
        status=K8S["NodeStatus"](
            declaredFeatures=["Something"], capacity={"cpu": K8S["Quantity"](string="2")}
        ),
    )
    raw = envelope("v1", "Node", node)
    assert decode_envelope(raw)["status"]["declaredFeatures"] == ["Something"]
    decoded = decode_object(raw, PROTOBUF_MEDIA_TYPE, NODES)
    assert "declaredFeatures" not in decoded.value["status"]
    assert decoded.value["status"]["capacity"] == {"cpu": "2"}
    assert decoded.warnings() == []


# ------------------------------------------------------------------------------------ rejected


def test_truncated_body_is_400_naming_the_problem() -> None:
    raw = (RECORDED / "namespace.pb").read_bytes()[:-3]
    status = status_of(raw, NAMESPACES)
    assert status["code"] == 400 and status["reason"] == "BadRequest"
    assert status["message"].startswith("the object provided is unrecognized (must be of type Namespace): ")
    assert "remain" in status["message"] or "truncated" in status["message"]


def test_garbage_after_the_magic_is_400_never_500() -> None:
    status = status_of(b"k8s\x00garbage", NAMESPACES)
    assert status["code"] == 400
    assert "(must be of type Namespace)" in status["message"]


def test_body_without_the_magic_is_400_with_kube_apiservers_words() -> None:
    status = status_of(b'{"kind":"Namespace"}', NAMESPACES)
    assert status["code"] == 400
    assert (
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
        in (status["message"])
    )


def test_unknown_kind_in_the_envelope_is_400() -> None:
    status = status_of(envelope("example.dev/v1", "Widget", K8S["Pod"]()), PODS)
    assert status["code"] == 400
    assert 'no kind "Widget"' in status["message"]


def test_built_in_without_a_table_is_415_listing_only_json_and_yaml() -> None:
    status = status_of(b"k8s\x00", CRDS)
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml",
        "reason": "UnsupportedMediaType",
        "code": 415,
    }


def test_custom_resources_keep_refusing_protobuf_with_the_recorded_message() -> None:
    status = status_of(envelope("ref.example.dev/v1", "Gadget", K8S["Pod"]()), GADGETS)
    assert status["code"] == 415
    assert status["message"].endswith(
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    )


def test_text_plain_to_a_decodable_built_in_lists_protobuf() -> None:
    assert accepted_media_types(PODS) == ["application/json", "application/yaml", PROTOBUF_MEDIA_TYPE]
    assert accepted_media_types(CRDS) == ["application/json", "application/yaml"]
    assert status_of(b"x", PODS, "text/plain")["message"].endswith(PROTOBUF_MEDIA_TYPE)


# ------------------------------------------------------------------------------ delete options


def test_protobuf_delete_options() -> None:
    options = K8S["DeleteOptions"](propagationPolicy="Background", dryRun=["All"])
    raw = envelope("meta.k8s.io/v1", "DeleteOptions", options)
    assert decode_delete_options(raw, PROTOBUF_MEDIA_TYPE, {}) == {
        "propagationPolicy": "Background",
        "dryRun": ["All"],
    }


def test_corrupt_protobuf_delete_options_are_400() -> None:
    with pytest.raises(StatusError) as caught:
        decode_delete_options(b"k8s\x00\x0a\x05ab", PROTOBUF_MEDIA_TYPE, {})
    assert caught.value.code == 400


# ----------------------------------------------------------------------------------- wire level


def test_varints() -> None:
    assert read_varint(b"\x96\x01", 0) == (150, 2)
    assert signed64(read_varint(b"\xff" * 9 + b"\x01", 0)[0]) == -1
    with pytest.raises(ProtobufError, match="truncated varint at byte 0"):
        read_varint(b"\x96", 0)
    with pytest.raises(ProtobufError, match="longer than 10 bytes"):
        read_varint(b"\xff" * 11, 0)


def test_every_wire_type_and_its_truncations() -> None:
    message = b"\x08\x01" + b"\x11" + b"\x00" * 8 + b"\x1a\x02hi" + b"\x25" + b"\x00" * 4
    assert [(f.number, f.wire_type) for f in iter_fields(message)] == [(1, 0), (2, 1), (3, 2), (4, 5)]
    for cut in range(1, len(message)):
        prefix = message[:cut]
        if cut in (2, 11, 15):  # whole fields: still a valid message
            list(iter_fields(prefix))
            continue
        with pytest.raises(ProtobufError):
            list(iter_fields(prefix))


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"\x0b", "unsupported wire type 3"),  # proto2 groups are never written by Kubernetes
        (b"\x00\x01", "invalid field number 0"),
        (b"\x0a\x7f", "claims 127 bytes but only 0 remain"),
    ],
)
def test_malformed_messages(data: bytes, problem: str) -> None:
    with pytest.raises(ProtobufError, match=problem):
        list(iter_fields(data))
