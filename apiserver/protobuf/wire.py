"""Protocol Buffers wire format: reading the fields of one encoded message, bounds-checked.

A message on the wire is a sequence of fields, each a key (field number and wire type, as a
varint) followed by a value whose shape the wire type gives:

* 0 -- varint (int32, int64, uint32, uint64, bool, enum);
* 1 -- 64-bit little-endian (fixed64, sfixed64, double);
* 2 -- length-delimited (string, bytes, nested message, map entry, packed repeated scalars);
* 5 -- 32-bit little-endian (fixed32, sfixed32, float).

The groups of proto2 (wire types 3 and 4) are obsolete and never written by Kubernetes; they are
rejected. Every read checks the buffer's end, so truncated or corrupt input raises
:class:`ProtobufError` with the byte offset, never an ``IndexError`` or a hang.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

VARINT = 0
FIXED64 = 1
LENGTH_DELIMITED = 2
FIXED32 = 5

WIRE_TYPE_NAMES = {
    VARINT: "varint",
    FIXED64: "64-bit",
    LENGTH_DELIMITED: "length-delimited",
    FIXED32: "32-bit",
}

# A varint holds at most 64 bits: ten bytes of seven bits each.
_MAX_VARINT_BYTES = 10
_MAX_FIELD_NUMBER = (1 << 29) - 1


class ProtobufError(ValueError):
    """The bytes are not a well-formed protobuf message (the text says what and where)."""


@dataclass(frozen=True)
class WireField:
    """One field as read from the wire: its number, wire type and raw value.

    ``value`` is an ``int`` for varint, 64-bit and 32-bit fields (the unsigned bit pattern) and
    ``bytes`` for length-delimited ones.
    """

    number: int
    wire_type: int
    value: int | bytes
    offset: int


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= len(data):
            raise ProtobufError(f"truncated varint at byte {start}")
        if pos - start >= _MAX_VARINT_BYTES:
            raise ProtobufError(f"varint longer than {_MAX_VARINT_BYTES} bytes at byte {start}")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & ((1 << 64) - 1), pos
        shift += 7


def iter_fields(data: bytes) -> Iterator[WireField]:
    """The fields of one message, in wire order (unknown numbers included: the caller skips them)."""
    pos = 0
    end = len(data)
    while pos < end:
        offset = pos
        key, pos = read_varint(data, pos)
        number, wire_type = key >> 3, key & 0x7
        if number == 0 or number > _MAX_FIELD_NUMBER:
            raise ProtobufError(f"invalid field number {number} at byte {offset}")
        value: int | bytes
        if wire_type == VARINT:
            value, pos = read_varint(data, pos)
        elif wire_type == FIXED64:
            if pos + 8 > end:
                raise ProtobufError(f"truncated 64-bit field {number} at byte {offset}")
            value = int.from_bytes(data[pos : pos + 8], "little")
            pos += 8
        elif wire_type == FIXED32:
            if pos + 4 > end:
                raise ProtobufError(f"truncated 32-bit field {number} at byte {offset}")
            value = int.from_bytes(data[pos : pos + 4], "little")
            pos += 4
        elif wire_type == LENGTH_DELIMITED:
            length, pos = read_varint(data, pos)
            if length > end - pos:
                raise ProtobufError(
                    f"field {number} at byte {offset} claims {length} bytes but only {end - pos} remain"
                )
            value = data[pos : pos + length]
            pos += length
        else:
            raise ProtobufError(f"unsupported wire type {wire_type} for field {number} at byte {offset}")
        yield WireField(number, wire_type, value, offset)


def signed64(value: int) -> int:
    """A varint's 64-bit pattern as a two's-complement int64 (how int32/int64 fields are written)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def packed_varints(data: bytes) -> list[int]:
    """The varints of a packed repeated scalar field, unsigned."""
    values: list[int] = []
    pos = 0
    while pos < len(data):
        value, pos = read_varint(data, pos)
        values.append(value)
    return values
