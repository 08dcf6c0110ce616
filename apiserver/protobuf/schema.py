"""Message tables and the table-driven decoder that turns protobuf messages into JSON objects.

Each Kubernetes message is described by a one-line field table, written as in the type's
``generated.proto`` (the field numbers are the schema's facts)::

    "ConfigMap": "1 metadata ObjectMeta; 4 immutable b?; 2 data {s}; 3 binaryData {B}"

Each ``;``-separated entry is ``NUMBER JSON_NAME TYPE``:

* ``TYPE`` is a scalar code -- ``s`` string, ``b`` bool, ``i`` int32/int64 (signed varint), ``u``
  uint32/uint64, ``d`` double, ``B`` bytes (base64 in JSON, as Go's encoding/json writes
  ``[]byte``) -- or a message name: another table, or one of the types with their own JSON form
  (:data:`SPECIAL_TYPES`: ``Time``, ``MicroTime``, ``Duration``, ``Quantity``, ``IntOrString``,
  ``RawExtension``, ``FieldsV1``, ``ExtraValue``).
* ``{TYPE}`` is a ``map<string, TYPE>`` (entries with key = 1, value = 2).
* A trailing ``*`` marks a repeated field (packed or not), ``?`` a pointer field (Go ``*T``), ``!``
  a non-pointer scalar whose JSON tag has no ``omitempty`` (Go's JSON writes it even when zero).
* A ``^`` before the name marks a Go embedded struct (``json:",inline"``): its fields are merged
  into the parent object instead of nesting under the name.

Kubernetes' Go marshaller writes every non-pointer scalar, zero or not, while Go's JSON encoder
drops most zero values (``omitempty``). To produce what the JSON path produces, the decoder drops
zero-valued non-pointer scalars (unless marked ``!``) and keeps pointer scalars whenever they were
written. Nested
messages that were written are kept, empty or not (Go's JSON never omits a struct). Field numbers
no table names are skipped, so a newer client's additions never break decoding.
"""

from __future__ import annotations

import base64
import datetime
import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .wire import (
    FIXED64,
    LENGTH_DELIMITED,
    VARINT,
    WIRE_TYPE_NAMES,
    ProtobufError,
    iter_fields,
    packed_varints,
    signed64,
)

SCALARS = frozenset({"s", "b", "i", "u", "d", "B"})
SPECIAL_TYPES = frozenset(
    {"Time", "MicroTime", "Duration", "Quantity", "IntOrString", "RawExtension", "FieldsV1", "ExtraValue"}
)
_ZERO: dict[str, Any] = {"s": "", "b": False, "i": 0, "u": 0, "d": 0.0, "B": ""}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@dataclass(frozen=True)
class Field:
    """One field of a message table."""

    number: int
    name: str
    type: str
    repeated: bool = False
    is_map: bool = False
    pointer: bool = False
    inline: bool = False
    keep_zero: bool = False


@dataclass(frozen=True)
class Message:
    """A message's fields by number."""

    name: str
    fields: Mapping[int, Field]


def parse_table(name: str, spec: str) -> Message:
    """The :class:`Message` a one-line table describes (see the module docstring for the notation)."""
    fields: dict[int, Field] = {}
    for entry in spec.split(";"):
        parts = entry.split()
        if len(parts) != 3:
            raise ValueError(f"{name}: bad field entry {entry!r}")
        number_text, json_name, type_text = parts
        number = int(number_text)
        inline = json_name.startswith("^")
        repeated = type_text.endswith("*")
        pointer = type_text.endswith("?")
        keep_zero = type_text.endswith("!")
        type_text = type_text.rstrip("*?!")
        is_map = type_text.startswith("{") and type_text.endswith("}")
        if is_map:
            type_text = type_text[1:-1]
        if number in fields:
            raise ValueError(f"{name}: field number {number} appears twice")
        fields[number] = Field(
            number, json_name.lstrip("^"), type_text, repeated, is_map, pointer, inline, keep_zero
        )
    return Message(name, fields)


class Schema:
    """A set of message tables that refer to each other by name, and the decoder over them."""

    def __init__(self, *tables: Mapping[str, str]) -> None:
        self.messages: dict[str, Message] = {}
        for table in tables:
            for name, spec in table.items():
                if name in self.messages:
                    raise ValueError(f"message {name} is defined twice")
                self.messages[name] = parse_table(name, spec)

    def unresolved(self) -> list[str]:
        """``Message.field -> Type`` for every field whose type is neither a scalar nor known."""
        missing = []
        for message in self.messages.values():
            for f in message.fields.values():
                if f.type not in SCALARS and f.type not in SPECIAL_TYPES and f.type not in self.messages:
                    missing.append(f"{message.name}.{f.name} -> {f.type}")
        return missing

    def decode(self, name: str, data: bytes) -> dict[str, Any]:
        """The JSON object for ``data``, an encoded message of the table ``name``."""
        return self._message(self.messages[name], data)

    def encode(self, name: str, obj: Mapping[str, Any]) -> bytes:
        """The message ``name`` for ``obj``, a JSON object: the inverse of :meth:`decode`."""
        return _encode_schema_message(self, name, obj)

    # ----------------------------------------------------------------------------- decoding

    def _message(self, message: Message, data: bytes) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for wf in iter_fields(data):
            f = message.fields.get(wf.number)
            if f is None:
                continue  # a field this table does not know (newer client): skipped, as Go does
            where = f"{message.name}.{f.name}"
            if f.is_map:
                key, value = self._map_entry(f, _bytes_of(wf.wire_type, wf.value, where), where)
                target = out.setdefault(f.name, {})
                target[key] = value
            elif f.repeated:
                out.setdefault(f.name, []).extend(self._repeated(f, wf.wire_type, wf.value, where))
            elif f.inline:
                out.update(self._message(self._table(f.type), _bytes_of(wf.wire_type, wf.value, where)))
            else:
                out[f.name] = self._value(f.type, wf.wire_type, wf.value, where)
        for f in message.fields.values():
            droppable = f.type in _ZERO and not (f.pointer or f.keep_zero or f.repeated or f.is_map)
            value = out.get(f.name)
            if droppable and value == _ZERO[f.type] and type(value) is type(_ZERO[f.type]):
                del out[f.name]
        return out

    def _table(self, name: str) -> Message:
        try:
            return self.messages[name]
        except KeyError:
            raise ProtobufError(f"no table for message {name}") from None

    def _repeated(self, f: Field, wire_type: int, value: int | bytes, where: str) -> list[Any]:
        if f.type in ("i", "u", "b") and wire_type == LENGTH_DELIMITED:
            assert isinstance(value, bytes)
            return [_varint_value(f.type, v) for v in packed_varints(value)]
        if f.type == "d" and wire_type == LENGTH_DELIMITED:
            assert isinstance(value, bytes)
            if len(value) % 8:
                raise ProtobufError(f"{where}: packed doubles of {len(value)} bytes")
            return list(struct.unpack(f"<{len(value) // 8}d", value))
        return [self._value(f.type, wire_type, value, where)]

    def _map_entry(self, f: Field, data: bytes, where: str) -> tuple[str, Any]:
        key = ""
        value: Any = None
        for wf in iter_fields(data):
            if wf.number == 1:
                key = _bytes_of(wf.wire_type, wf.value, where + " key").decode("utf-8", "replace")
            elif wf.number == 2:
                value = self._value(f.type, wf.wire_type, wf.value, where)
        if value is None:
            # An entry without a value holds the value type's zero (proto map semantics).
            value = (
                self._value(f.type, LENGTH_DELIMITED, b"", where) if f.type not in _ZERO else _ZERO[f.type]
            )
        return key, value

    def _value(self, type_name: str, wire_type: int, value: int | bytes, where: str) -> Any:
        if type_name in ("i", "u", "b"):
            if wire_type != VARINT:
                raise _wrong_wire_type(where, wire_type, VARINT)
            assert isinstance(value, int)
            return _varint_value(type_name, value)
        if type_name == "d":
            if wire_type != FIXED64:
                raise _wrong_wire_type(where, wire_type, FIXED64)
            assert isinstance(value, int)
            number: float = struct.unpack("<d", value.to_bytes(8, "little"))[0]
            return number
        data = _bytes_of(wire_type, value, where)
        if type_name == "s":
            return data.decode("utf-8", "replace")
        if type_name == "B":
            return base64.b64encode(data).decode("ascii")
        special = _SPECIAL_DECODERS.get(type_name)
        if special is not None:
            return special(data, where)
        return self._message(self._table(type_name), data)


def _varint_value(type_name: str, value: int) -> int | bool:
    if type_name == "b":
        return value != 0
    if type_name == "i":
        return signed64(value)
    return value


def _bytes_of(wire_type: int, value: int | bytes, where: str) -> bytes:
    if wire_type != LENGTH_DELIMITED or not isinstance(value, bytes):
        raise _wrong_wire_type(where, wire_type, LENGTH_DELIMITED)
    return value


def _wrong_wire_type(where: str, got: int, expected: int) -> ProtobufError:
    return ProtobufError(
        f"{where} has wire type {WIRE_TYPE_NAMES.get(got, got)}, expected {WIRE_TYPE_NAMES[expected]}"
    )


# ----------------------------------------------------------------------------- special types


def _scalar_fields(data: bytes, where: str) -> dict[int, int | bytes]:
    """The last value of each field number (enough for the small fixed-shape special messages)."""
    values: dict[int, int | bytes] = {}
    for wf in iter_fields(data):
        values[wf.number] = wf.value
    return values


def _int_field(values: Mapping[int, int | bytes], number: int, where: str) -> int:
    value = values.get(number, 0)
    if not isinstance(value, int):
        raise ProtobufError(f"{where}: field {number} is length-delimited, expected a varint")
    return signed64(value)


def _timestamp(data: bytes, where: str) -> datetime.datetime | None:
    """A ``metav1.Time``/``MicroTime`` (seconds, nanos since the epoch); None for the zero time."""
    if not data:
        return None  # Go writes the zero time as an empty message; its JSON is null
    values = _scalar_fields(data, where)
    seconds = _int_field(values, 1, where)
    nanos = _int_field(values, 2, where)
    if not 0 <= nanos < 1_000_000_000:
        raise ProtobufError(f"{where}: nanos {nanos} out of range")
    try:
        return _EPOCH + datetime.timedelta(seconds=seconds, microseconds=nanos // 1000)
    except OverflowError:
        raise ProtobufError(f"{where}: timestamp {seconds}s out of range") from None


def _time(data: bytes, where: str) -> str | None:
    moment = _timestamp(data, where)
    return None if moment is None else moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_time(data: bytes, where: str) -> str | None:
    moment = _timestamp(data, where)
    return None if moment is None else moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _quantity(data: bytes, where: str) -> str:
    value = _scalar_fields(data, where).get(1)
    if value is None:
        return "0"
    if not isinstance(value, bytes):
        raise ProtobufError(f"{where}: quantity string is a varint")
    return value.decode("utf-8", "replace")


def _int_or_string(data: bytes, where: str) -> int | str:
    values = _scalar_fields(data, where)
    if _int_field(values, 1, where) == 1:
        text = values.get(3, b"")
        if not isinstance(text, bytes):
            raise ProtobufError(f"{where}: strVal is a varint")
        return text.decode("utf-8", "replace")
    return _int_field(values, 2, where)


def _duration(data: bytes, where: str) -> str:
    return go_duration(_int_field(_scalar_fields(data, where), 1, where))


def _raw_json(data: bytes, where: str) -> Any:
    raw = _scalar_fields(data, where).get(1, b"")
    if not isinstance(raw, bytes):
        raise ProtobufError(f"{where}: raw bytes are a varint")
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise ProtobufError(f"{where}: embedded raw object is not JSON") from None


def _extra_value(data: bytes, where: str) -> list[str]:
    items = []
    for wf in iter_fields(data):
        if wf.number == 1:
            items.append(_bytes_of(wf.wire_type, wf.value, where).decode("utf-8", "replace"))
    return items


_SPECIAL_DECODERS = {
    "Time": _time,
    "MicroTime": _micro_time,
    "Duration": _duration,
    "Quantity": _quantity,
    "IntOrString": _int_or_string,
    "RawExtension": _raw_json,
    "FieldsV1": _raw_json,
    "ExtraValue": _extra_value,
}


def go_duration(nanoseconds: int) -> str:
    """Go's ``time.Duration.String``: ``1h2m3.5s``, ``1.5ms``, ``0s``."""
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    n = abs(nanoseconds)
    if n < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if n >= size:
                return sign + _fraction(n, size) + unit
    hours, rest = divmod(n, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _fraction(rest, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def _fraction(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")


# ================================================================================ encoding
#
# The inverse of the decoder, writing what Kubernetes' generated Go marshallers write: fields in
# number order; every non-pointer scalar of a written message, zero or not (Go has no "absent" for
# them); pointer scalars, nested messages, repeated fields and maps only when the JSON object has
# them; map entries sorted by key; repeated scalars unpacked (the proto2 default Kubernetes uses).
# JSON keys the table does not name are not written, so a kind is only as complete as its table.


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32/int64 values are written as 64-bit two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _delimited(number: int, data: bytes) -> bytes:
    return _key(number, LENGTH_DELIMITED) + _varint(len(data)) + data


def encode_varint(value: int) -> bytes:
    """A protobuf varint (negative values as 64-bit two's complement, as Go writes int32/int64)."""
    return _varint(value)


def encode_field(number: int, data: bytes) -> bytes:
    """One length-delimited field (a string, bytes or an encoded message)."""
    return _delimited(number, data)


def _parse_time(text: str, where: str) -> tuple[int, int]:
    """Seconds and nanoseconds since the epoch of an RFC 3339 time (the JSON form of Time)."""
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ProtobufError(f"{where}: {text!r} is not an RFC 3339 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    delta = moment - _EPOCH
    seconds = delta.days * 86_400 + delta.seconds
    nanos = delta.microseconds * 1000
    fraction = text.partition(".")[2].rstrip("Zz").split("+")[0].split("-")[0]
    if len(fraction) > 6 and fraction.isdigit():
        nanos = int(fraction[:9].ljust(9, "0"))  # fromisoformat keeps microseconds only
    return seconds, nanos


_DURATION_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10**9}
_DURATION_UNITS.update({"m": 60 * 10**9, "h": 3600 * 10**9})


def parse_go_duration(text: str) -> int:
    """Nanoseconds of a Go duration string (``1h2m3.5s``, ``1.5ms``, ``-2s``, ``0``)."""
    rest = text.strip()
    sign = -1 if rest.startswith("-") else 1
    rest = rest.lstrip("+-")
    if rest == "0":
        return 0
    total = 0.0
    if not rest:
        raise ProtobufError(f"invalid duration {text!r}")
    while rest:
        number = ""
        while rest and (rest[0].isdigit() or rest[0] == "."):
            number, rest = number + rest[0], rest[1:]
        unit = ""
        while rest and not (rest[0].isdigit() or rest[0] == "."):
            unit, rest = unit + rest[0], rest[1:]
        if not number or unit not in _DURATION_UNITS:
            raise ProtobufError(f"invalid duration {text!r}")
        total += float(number) * _DURATION_UNITS[unit]
    return sign * round(total)


def _encode_time(value: Any, where: str) -> bytes:
    if value is None:
        return b""  # the zero time: an empty message, as Go writes it
    seconds, nanos = _parse_time(str(value), where)
    return _key(1, VARINT) + _varint(seconds) + _key(2, VARINT) + _varint(nanos)


def _encode_quantity(value: Any, where: str) -> bytes:
    return _delimited(1, str(value).encode())


def _encode_int_or_string(value: Any, where: str) -> bytes:
    if isinstance(value, str):
        return _key(1, VARINT) + _varint(1) + _key(2, VARINT) + _varint(0) + _delimited(3, value.encode())
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtobufError(f"{where}: {value!r} is neither an integer nor a string")
    return _key(1, VARINT) + _varint(0) + _key(2, VARINT) + _varint(value) + _delimited(3, b"")


def _encode_duration(value: Any, where: str) -> bytes:
    return _key(1, VARINT) + _varint(parse_go_duration(str(value)))


def _encode_raw_json(value: Any, where: str) -> bytes:
    return _delimited(1, json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _encode_extra_value(value: Any, where: str) -> bytes:
    return b"".join(_delimited(1, str(item).encode()) for item in value or [])


_SPECIAL_ENCODERS = {
    "Time": _encode_time,
    "MicroTime": _encode_time,
    "Duration": _encode_duration,
    "Quantity": _encode_quantity,
    "IntOrString": _encode_int_or_string,
    "RawExtension": _encode_raw_json,
    "FieldsV1": _encode_raw_json,
    "ExtraValue": _encode_extra_value,
}


def _encode_scalar(type_name: str, number: int, value: Any, where: str) -> bytes:
    if type_name == "s":
        return _delimited(number, str(value).encode())
    if type_name == "B":
        try:
            data = base64.b64decode(value or "", validate=True)
        except (ValueError, TypeError):
            raise ProtobufError(f"{where}: {value!r} is not base64") from None
        return _delimited(number, data)
    if type_name == "b":
        return _key(number, VARINT) + _varint(1 if value else 0)
    if type_name in ("i", "u"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
            raise ProtobufError(f"{where}: {value!r} is not an integer")
        return _key(number, VARINT) + _varint(int(value))
    if type_name == "d":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ProtobufError(f"{where}: {value!r} is not a number")
        return _key(number, FIXED64) + struct.pack("<d", float(value))
    raise ProtobufError(f"{where}: unknown scalar type {type_name}")


def _encode_schema_message(schema: Schema, name: str, obj: Mapping[str, Any]) -> bytes:
    message = schema._table(name)
    if not isinstance(obj, Mapping):
        raise ProtobufError(f"{name}: expected an object, got {type(obj).__name__}")
    out = bytearray()
    for number in sorted(message.fields):
        f = message.fields[number]
        where = f"{name}.{f.name}"
        if f.inline:
            out += _delimited(number, _encode_schema_message(schema, f.type, obj))
            continue
        present = f.name in obj and obj[f.name] is not None
        value = obj.get(f.name)
        if f.is_map:
            if not present:
                continue
            if not isinstance(value, Mapping):
                raise ProtobufError(f"{where}: expected an object")
            for key in sorted(value):
                entry = _delimited(1, str(key).encode()) + _encode_value(schema, f.type, 2, value[key], where)
                out += _delimited(number, entry)
        elif f.repeated:
            if not present:
                continue
            if not isinstance(value, list):
                raise ProtobufError(f"{where}: expected a list")
            for item in value:
                out += _encode_value(schema, f.type, number, item, where)
        elif f.type in SCALARS:
            if present:
                out += _encode_scalar(f.type, number, value, where)
            elif not f.pointer:
                out += _encode_scalar(f.type, number, _ZERO[f.type], where)
        elif f.name in obj and (value is not None or f.type in ("Time", "MicroTime")):
            out += _encode_value(schema, f.type, number, value, where)
    return bytes(out)


def _encode_value(schema: Schema, type_name: str, number: int, value: Any, where: str) -> bytes:
    if type_name in SCALARS:
        return _encode_scalar(type_name, number, value, where)
    special = _SPECIAL_ENCODERS.get(type_name)
    if special is not None:
        return _delimited(number, special(value, where))
    return _delimited(number, _encode_schema_message(schema, type_name, value or {}))
