"""Protobuf for the built-in kinds: request bodies decoded into the JSON objects they stand for,
and answers encoded from them.

Go clients -- kubectl's typed commands (``kubectl create namespace``, ``kubectl run``), every
client-go clientset since Kubernetes 1.31 and controller-runtime -- send built-in objects as
``application/vnd.kubernetes.protobuf``. The embedded API server turns such a body into exactly the
JSON object a JSON client would have sent, so that everything after decoding (defaulting,
validation, admission, storage, watch) is shared with the JSON path.

How it fits together:

* :mod:`.wire` reads the wire format (varints, fixed 32/64-bit values, length-delimited bytes),
  bounds-checked: truncated or corrupt input is a :class:`ProtobufError`, never a crash.
* :mod:`.schema` holds the table notation and the decoder and encoder driven by it, including the
  types with their own JSON forms (``Time``, ``MicroTime``, ``Quantity``, ``IntOrString``, ...).
* :mod:`.tables_meta`, :mod:`.tables_core_v1` and :mod:`.tables_groups` are the field tables,
  taken from Kubernetes' ``generated.proto`` files.
* :mod:`.envelope` unwraps the ``k8s\\x00`` + ``runtime.Unknown`` envelope and picks the table,
  wraps an encoded object in it, and frames watch events.

Use :func:`decode_envelope` on a body and :func:`has_table` to ask whether a kind is decodable;
kinds without a table (custom resources among them) keep answering 415. The server answers in
protobuf, as kube-apiserver does, when the request's ``Accept`` header prefers it and the kind has
a table (:func:`can_encode`, :func:`encode_envelope`, :func:`watch_frame`): objects, their lists,
Status errors and watch streams. Custom resources, and built-ins without a table, answer JSON.
"""

from __future__ import annotations

from .envelope import (
    MAGIC,
    ROOTS,
    SCHEMA,
    UnknownKind,
    can_encode,
    decode_envelope,
    encode_envelope,
    has_table,
    unwrap,
    watch_frame,
)
from .wire import ProtobufError

PROTOBUF_MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
# The Content-Type of a protobuf watch stream (a JSON one is plain application/json).
PROTOBUF_WATCH_MEDIA_TYPE = PROTOBUF_MEDIA_TYPE + ";stream=watch"

__all__ = [
    "MAGIC",
    "PROTOBUF_MEDIA_TYPE",
    "PROTOBUF_WATCH_MEDIA_TYPE",
    "ROOTS",
    "SCHEMA",
    "ProtobufError",
    "UnknownKind",
    "can_encode",
    "decode_envelope",
    "encode_envelope",
    "has_table",
    "unwrap",
    "watch_frame",
]
