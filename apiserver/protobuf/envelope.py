"""Kubernetes' protobuf envelope: the ``k8s\\x00`` magic, then a ``runtime.Unknown`` message.

``runtime.Unknown`` carries the object's ``apiVersion`` and ``kind`` (a ``TypeMeta`` in field 1)
and the encoded object itself (field 2, ``raw``); fields 3 and 4 (content encoding and type) are
empty in everything Kubernetes writes. :func:`decode_envelope` unwraps it and decodes ``raw`` with
the table of the named kind, giving the JSON object the JSON path would have produced;
:func:`encode_envelope` is its inverse, and :func:`watch_frame` frames one event of a protobuf
watch stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import tables_core_v1, tables_groups, tables_meta
from .schema import Schema, encode_field
from .wire import LENGTH_DELIMITED, ProtobufError, iter_fields

MAGIC = b"k8s\x00"

# (group, version, kind) -> the table of the top-level message.
_CORE_KINDS = ("ConfigMap", "Event", "Namespace", "Node", "Pod", "Secret", "ServiceAccount", "Service")
ROOTS: dict[tuple[str, str, str], str] = {
    **{("", "v1", kind): kind for kind in _CORE_KINDS},
    ("events.k8s.io", "v1", "Event"): "EventsV1Event",
    ("coordination.k8s.io", "v1", "Lease"): "Lease",
    ("policy", "v1", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("authentication.k8s.io", "v1", "SelfSubjectReview"): "SelfSubjectReview",
    ("authentication.k8s.io", "v1", "TokenReview"): "TokenReview",
    ("authentication.k8s.io", "v1", "TokenRequest"): "TokenRequest",
    ("authorization.k8s.io", "v1", "SubjectAccessReview"): "SubjectAccessReview",
    **{
        ("rbac.authorization.k8s.io", "v1", kind): kind
        for kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
    },
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"): "MutatingWebhookConfiguration",
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
    ): "ValidatingWebhookConfiguration",
    ("autoscaling", "v1", "Scale"): "Scale",
}

# Every list kind is ``ListMeta`` and the items, each without apiVersion and kind.
_LIST_TABLES = {f"{table}List": f"1 metadata ListMeta; 2 items {table}*" for table in set(ROOTS.values())}
SCHEMA = Schema(tables_meta.TABLES, tables_core_v1.TABLES, tables_groups.TABLES, _LIST_TABLES)

# The tables of what the server writes besides the objects of ROOTS: their lists and Status.
ANSWER_ROOTS: dict[tuple[str, str, str], str] = {
    **{(group, version, kind + "List"): table + "List" for (group, version, kind), table in ROOTS.items()},
    ("", "v1", "Status"): "Status",
}


class UnknownKind(ProtobufError):
    """The envelope names a kind that has no table here."""


@dataclass(frozen=True)
class Envelope:
    """The parts of a ``runtime.Unknown``."""

    api_version: str
    kind: str
    raw: bytes
    content_encoding: str = ""
    content_type: str = ""


def has_table(group: str, version: str, kind: str) -> bool:
    """True when objects of this group/version/kind can be decoded from protobuf."""
    return (group, version, kind) in ROOTS


def unwrap(data: bytes) -> Envelope:
    """The ``runtime.Unknown`` inside ``data`` (which must start with the magic)."""
    if not data.startswith(MAGIC):
        raise ProtobufError(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
        )
    texts = {1: "", 3: "", 4: ""}
    api_version = kind = ""
    raw = b""
    for wf in iter_fields(data[len(MAGIC) :]):
        if wf.number in (1, 2, 3, 4) and wf.wire_type != LENGTH_DELIMITED:
            raise ProtobufError(f"runtime.Unknown field {wf.number} is not length-delimited")
        assert isinstance(wf.value, (bytes, int))
        if wf.number == 1:
            assert isinstance(wf.value, bytes)
            for tf in iter_fields(wf.value):
                if tf.wire_type != LENGTH_DELIMITED:
                    raise ProtobufError(f"runtime.TypeMeta field {tf.number} is not length-delimited")
                assert isinstance(tf.value, bytes)
                if tf.number == 1:
                    api_version = tf.value.decode("utf-8", "replace")
                elif tf.number == 2:
                    kind = tf.value.decode("utf-8", "replace")
        elif wf.number == 2:
            assert isinstance(wf.value, bytes)
            raw = wf.value
        elif wf.number in (3, 4):
            assert isinstance(wf.value, bytes)
            texts[wf.number] = wf.value.decode("utf-8", "replace")
    return Envelope(api_version, kind, raw, texts[3], texts[4])


def decode_envelope(data: bytes, *, table: str | None = None) -> dict[str, Any]:
    """The JSON object an enveloped protobuf body stands for, ``apiVersion`` and ``kind`` first.

    The table is the one of the envelope's group/version/kind unless ``table`` names one (used for
    DeleteOptions, which clients send under any group version). Lists and Status (what the server
    answers) decode too. Raises :class:`UnknownKind` for a
    kind without a table and :class:`~.wire.ProtobufError` for malformed bytes.
    """
    envelope = unwrap(data)
    if envelope.content_encoding:
        raise ProtobufError(f"unsupported content encoding {envelope.content_encoding!r}")
    group, _, version = envelope.api_version.rpartition("/")
    gvk = (group, version, envelope.kind)
    name = table or ROOTS.get(gvk) or ANSWER_ROOTS.get(gvk)
    if name is None:
        raise UnknownKind(
            f'no kind "{envelope.kind}" is registered for version "{envelope.api_version}" in protobuf'
        )
    obj: dict[str, Any] = {}
    if envelope.kind:
        obj["kind"] = envelope.kind
    if envelope.api_version:
        obj["apiVersion"] = envelope.api_version
    obj.update(SCHEMA.decode(name, envelope.raw))
    return obj


# ------------------------------------------------------------------------------------ encoding


def can_encode(group: str, version: str, kind: str) -> bool:
    """True when objects (and lists) of this group/version/kind can be written as protobuf."""
    return (group, version, kind) in ROOTS


def encode_envelope(obj: Mapping[str, Any]) -> bytes:
    """``obj`` (a JSON object with apiVersion and kind) as Kubernetes writes it: the magic, then a
    ``runtime.Unknown`` whose ``raw`` is the object's message. Lists (``<Kind>List``) and Status are
    encoded too. Raises :class:`UnknownKind` for a kind without a table."""
    api_version = str(obj.get("apiVersion", ""))
    kind = str(obj.get("kind", ""))
    group, _, version = api_version.rpartition("/")
    name = ROOTS.get((group, version, kind)) or ANSWER_ROOTS.get((group, version, kind))
    if name is None:
        raise UnknownKind(f'no kind "{kind}" is registered for version "{api_version}" in protobuf')
    type_meta = encode_field(1, api_version.encode()) + encode_field(2, kind.encode())
    unknown = (
        encode_field(1, type_meta)
        + encode_field(2, SCHEMA.encode(name, obj))
        + encode_field(3, b"")  # contentEncoding and contentType: empty, but written, as Go does
        + encode_field(4, b"")
    )
    return MAGIC + unknown


def watch_frame(event_type: str, encoded_object: bytes) -> bytes:
    """One event of a protobuf watch stream: a 4-byte big-endian length, then a ``WatchEvent``
    (type, and a RawExtension whose raw bytes are the enveloped object)."""
    event = encode_field(1, event_type.encode()) + encode_field(2, encode_field(1, encoded_object))
    return len(event).to_bytes(4, "big") + event
