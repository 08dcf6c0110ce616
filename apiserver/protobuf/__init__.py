"""Protobuf request bodies for the built-in kinds, decoded into the JSON objects they stand for.

Go clients -- kubectl's typed commands (``kubectl create namespace``, ``kubectl run``), every
client-go clientset since Kubernetes 1.31 and controller-runtime -- send built-in objects as
``application/vnd.kubernetes.protobuf``. The embedded API server turns such a body into exactly the
JSON object a JSON client would have sent, so that everything after decoding (defaulting,
validation, admission, storage, watch) is shared with the JSON path.

How it fits together:

* :mod:`.wire` reads the wire format (varints, fixed 32/64-bit values, length-delimited bytes),
  bounds-checked: truncated or corrupt input is a :class:`ProtobufError`, never a crash.
* :mod:`.schema` holds the table notation and the decoder driven by it, including the types with
  their own JSON forms (``Time``, ``MicroTime``, ``Quantity``, ``IntOrString``, ...).
* :mod:`.tables_meta`, :mod:`.tables_core_v1` and :mod:`.tables_groups` are the field tables,
  taken from Kubernetes' ``generated.proto`` files.
* :mod:`.envelope` unwraps the ``k8s\\x00`` + ``runtime.Unknown`` envelope and picks the table.

Use :func:`decode_envelope` on a body and :func:`has_table` to ask whether a kind is decodable;
kinds without a table (custom resources among them) keep answering 415. Responses are never
encoded as protobuf: clients that list JSON in their ``Accept`` header get JSON.
"""

from __future__ import annotations

from .envelope import MAGIC, ROOTS, SCHEMA, UnknownKind, decode_envelope, has_table, unwrap
from .wire import ProtobufError

PROTOBUF_MEDIA_TYPE = "application/vnd.kubernetes.protobuf"

__all__ = [
    "MAGIC",
    "PROTOBUF_MEDIA_TYPE",
    "ROOTS",
    "SCHEMA",
    "ProtobufError",
    "UnknownKind",
    "decode_envelope",
    "has_table",
    "unwrap",
]
