"""Go struct descriptions, and the decoding and encoding kube-apiserver's structs imply.

kube-apiserver decodes a built-in object into a Go struct and encodes it back, which has visible
effects this module reproduces from a description of each struct (the descriptions themselves
are in :mod:`apiserver.builtin_types.structs`):

* keys come out in struct order (``kind, apiVersion, metadata, spec, ...``);
* unknown fields are dropped (``Warning: unknown field "spec.bogus"``, or 400 when strict);
* zero values of non-omitempty fields appear (``eventTime: null``, ``reportingComponent: ""``),
  zero values of omitempty ones vanish, pointers keep whatever was set;
* ``metav1.Time`` is RFC 3339 in UTC with whole seconds, ``metav1.MicroTime`` needs exactly six
  fractional digits, with Go's own parse errors;
* list semantics (atomic, set, keyed map) drive field ownership and strategic merge patch.

A description is written with :func:`struct` and :class:`F` (a field: name, type, how it is
written), over :class:`Scalar`, :class:`Time`, :class:`ListOf`, :class:`MapOf` and friends; a
struct marked ``open`` keeps fields it does not describe untouched:

>>> spec = struct("LeaseSpec", F("holderIdentity", STR, POINTER), F("leaseDurationSeconds", I32, POINTER))
>>> decode_struct(spec, {"leaseDurationSeconds": 15, "bogus": 1, "holderIdentity": "a"}, strict=False)
({'holderIdentity': 'a', 'leaseDurationSeconds': 15}, ['bogus'])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from runtime.jsoncodec import JSON

from .objectmeta import METADATA_RULES, FieldRules

OMITEMPTY = "omitempty"  # dropped when zero (Go's omitempty on a scalar, slice or map)
ALWAYS = "always"  # always written, zero value included (no omitempty, or a struct/Time)
POINTER = "pointer"  # written whenever set, even to a zero value; null means unset


class DecodeError(Exception):
    """The body cannot become the Go struct (HTTP 400 ``... cannot be handled as a Kind: <message>``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Scalar:
    go_type: str  # string | int32 | int64 | bool | float64

    @property
    def zero(self) -> Any:
        return {"string": "", "bool": False, "float64": 0.0}.get(self.go_type, 0)


@dataclass(frozen=True)
class Time:
    micro: bool = False


@dataclass(frozen=True)
class Anything:
    """Free-form JSON (RawExtension, apiextensions JSON, schemas)."""


@dataclass(frozen=True)
class IntOrString:
    pass


@dataclass(frozen=True)
class Quantity:
    pass


@dataclass(frozen=True)
class ListOf:
    item: TypeSpec
    list_type: str = "atomic"  # atomic | set | map
    keys: tuple[str, ...] = ()
    # strategic merge patch key when the list merges by key (patchStrategy=merge)
    merge_key: str | None = None


@dataclass(frozen=True)
class MapOf:
    value: TypeSpec


@dataclass(frozen=True)
class F:
    """One struct field: JSON name, type, presence rule."""

    name: str
    type: TypeSpec
    presence: str = OMITEMPTY


@dataclass(frozen=True)
class Struct:
    go_name: str
    fields: tuple[F, ...]
    open: bool = False
    atomic: bool = False

    def get(self, name: str) -> F | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None


TypeSpec = Scalar | Time | Anything | IntOrString | Quantity | ListOf | MapOf | Struct


def struct(go_name: str, *fields: F, open: bool = False, atomic: bool = False) -> Struct:
    return Struct(go_name, tuple(fields), open, atomic)


STR = Scalar("string")
I32 = Scalar("int32")
I64 = Scalar("int64")
BOOL = Scalar("bool")
TIME = Time()
MICRO = Time(micro=True)
ANY = Anything()
STR_MAP = MapOf(STR)
STR_LIST = ListOf(STR)

# ------------------------------------------------------------------------- Go time parsing

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"


class _TimeParseError(Exception):
    pass


def _time_quote(text: str) -> str:
    # Go's time package quotes with its own minimal quote() (only backslash and double quote
    # escaped for ASCII input), not strconv.Quote, in its parse errors.
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _parse_error(value: str, layout: str, value_elem: str, layout_elem: str) -> _TimeParseError:
    return _TimeParseError(
        f"parsing time {_time_quote(value)} as {_time_quote(layout)}: "
        f"cannot parse {_time_quote(value_elem)} as {_time_quote(layout_elem)}"
    )


def _range_error(value: str, what: str) -> _TimeParseError:
    return _TimeParseError(f"parsing time {_time_quote(value)}: {what} out of range")


def parse_go_time(value: str, *, micro: bool) -> datetime:
    """Parse as Go's ``time.Parse`` does with RFC3339 / RFC3339Micro, raising its error text."""
    layout = RFC3339_MICRO if micro else RFC3339
    rest = value

    def digits(n: int, elem: str, *, flexible: bool = False) -> int:
        nonlocal rest
        hold = rest
        if flexible and len(rest) >= 1 and rest[0].isdigit() and (len(rest) < 2 or not rest[1].isdigit()):
            rest = rest[1:]
            return int(hold[0])
        if len(rest) < n or not rest[:n].isdigit():
            raise _parse_error(value, layout, hold, elem)
        rest = rest[n:]
        return int(hold[:n])

    def literal(text: str) -> None:
        nonlocal rest
        if not rest.startswith(text):
            raise _parse_error(value, layout, rest, text)
        rest = rest[len(text) :]

    year = digits(4, "2006")
    literal("-")
    month = digits(2, "01")
    if not 1 <= month <= 12:
        raise _range_error(value, "month")
    literal("-")
    day = digits(2, "02")
    literal("T")
    hour = digits(2, "15", flexible=True)
    if hour > 23:
        raise _range_error(value, "hour")
    literal(":")
    minute = digits(2, "04")
    if minute > 59:
        raise _range_error(value, "minute")
    literal(":")
    second = digits(2, "05")
    if second > 59:
        raise _range_error(value, "second")
    micros = 0
    if micro:
        hold = rest
        if len(rest) < 7 or rest[0] not in ".," or not rest[1:7].isdigit():
            raise _parse_error(value, layout, hold, ".000000")
        micros = int(rest[1:7])
        rest = rest[7:]
    elif len(rest) >= 2 and rest[0] in ".," and rest[1].isdigit():
        n = 1
        while n < len(rest) and rest[n].isdigit():
            n += 1
        micros = int((rest[1:n] + "000000")[:6])
        rest = rest[n:]
    offset = timedelta(0)
    hold = rest
    if rest.startswith("Z"):
        rest = rest[1:]
    else:
        if len(rest) < 6 or rest[3] != ":" or rest[0] not in "+-" or not (rest[1:3] + rest[4:6]).isdigit():
            raise _parse_error(value, layout, hold, "Z07:00")
        sign = 1 if rest[0] == "+" else -1
        offset = sign * timedelta(hours=int(rest[1:3]), minutes=int(rest[4:6]))
        rest = rest[6:]
    if rest:
        raise _TimeParseError(f"parsing time {_time_quote(value)}: extra text: {_time_quote(rest)}")
    try:
        local = datetime(year, month, day, hour, minute, second, micros, tzinfo=UTC)
    except ValueError as exc:
        raise _range_error(value, "day") from exc
    return local - offset


def format_time(moment: datetime, *, micro: bool = False) -> str:
    """metav1.Time / MicroTime as the server writes them: UTC, Z, seconds or microseconds."""
    moment = moment.astimezone(UTC)
    if micro:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------------------- decoding

_JSON_KIND = {str: "string", bool: "bool", int: "number", float: "number", list: "array", dict: "object"}


@dataclass
class _Decoder:
    strict: bool
    unknown: list[str] = field(default_factory=list)

    def type_error(self, value: Any, owner: str, path: str, go_type: str) -> DecodeError:
        got = _JSON_KIND.get(type(value), "value")
        return DecodeError(
            f"json: cannot unmarshal {got} into Go struct field {owner}.{path} of type {go_type}"
        )

    def decode(self, spec: TypeSpec, value: Any, path: str, owner: str) -> Any:
        if value is None:
            return None
        if isinstance(spec, Struct):
            if not isinstance(value, dict):
                raise self.type_error(value, owner, path, spec.go_name)
            return self.decode_struct(spec, value, path)
        if isinstance(spec, Scalar):
            return self.decode_scalar(spec, value, path, owner)
        if isinstance(spec, Time):
            if not isinstance(value, str):
                raise self.type_error(value, owner, path, "MicroTime" if spec.micro else "Time")
            try:
                moment = parse_go_time(value, micro=spec.micro)
            except _TimeParseError as exc:
                raise DecodeError(str(exc)) from exc
            return format_time(moment, micro=spec.micro)
        if isinstance(spec, ListOf):
            if not isinstance(value, list):
                raise self.type_error(value, owner, path, "[]" + _go_type_name(spec.item))
            return [self.decode(spec.item, item, f"{path}[{i}]", owner) for i, item in enumerate(value)]
        if isinstance(spec, MapOf):
            if not isinstance(value, dict):
                raise self.type_error(value, owner, path, "map[string]" + _go_type_name(spec.value))
            return {k: self.decode(spec.value, v, f"{path}.{k}", owner) for k, v in value.items()}
        if isinstance(spec, IntOrString):
            if isinstance(value, bool) or not isinstance(value, int | str):
                if isinstance(value, float) and value == int(value):
                    return int(value)
                raise self.type_error(value, owner, path, "intstr.IntOrString")
            return value
        if isinstance(spec, Quantity):
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise DecodeError(
                    "quantities must match the regular expression "
                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                )
            return str(value) if not isinstance(value, str) else value
        return value

    def decode_scalar(self, spec: Scalar, value: Any, path: str, owner: str) -> Any:
        go = spec.go_type
        if go == "string":
            if not isinstance(value, str):
                raise self.type_error(value, owner, path, go)
            return value
        if go == "bool":
            if not isinstance(value, bool):
                raise self.type_error(value, owner, path, go)
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.type_error(value, owner, path, go)
        if go == "float64":
            return value
        if isinstance(value, float):
            if value != int(value):
                raise DecodeError(
                    f"json: cannot unmarshal number {value!r} into Go struct field "
                    f"{owner}.{path} of type {go}"
                )
            return int(value)
        return value

    def decode_struct(self, spec: Struct, value: JSON, path: str) -> JSON:
        out: JSON = {}
        known = {f.name for f in spec.fields}
        for key in value:
            if key not in known and not spec.open:
                self.unknown.append(f"{path}.{key}" if path else key)
        for f in spec.fields:
            child_path = f"{path}.{f.name}" if path else f.name
            if f.name in value:
                decoded = self.decode(f.type, value[f.name], child_path, spec.go_name)
                if decoded is None or (f.presence == OMITEMPTY and _is_empty(decoded)):
                    if f.presence == ALWAYS:
                        out[f.name] = zero_value(f.type)
                    continue
                out[f.name] = decoded
            elif f.presence == ALWAYS:
                out[f.name] = zero_value(f.type)
        if spec.open:
            for key, item in value.items():
                if key not in known:
                    out[key] = item
        return out


def _is_empty(value: Any) -> bool:
    if isinstance(value, bool):
        return value is False
    if isinstance(value, int | float):
        return value == 0
    return value in ("", [], {}) or value is None


def _go_type_name(spec: TypeSpec) -> str:
    if isinstance(spec, Scalar):
        return spec.go_type
    if isinstance(spec, Struct):
        return spec.go_name
    if isinstance(spec, Time):
        return "v1.MicroTime" if spec.micro else "v1.Time"
    return "interface {}"


def zero_value(spec: TypeSpec) -> Any:
    """What Go writes for a field left at its zero value when it is not omitempty."""
    if isinstance(spec, Struct):
        return _Decoder(strict=False).decode_struct(spec, {}, "")
    if isinstance(spec, Scalar):
        return spec.zero
    return None


def decode_struct(spec: Struct, body: JSON, *, strict: bool) -> tuple[JSON, list[str]]:
    """Decode a body into ``spec``'s shape; returns (object, unknown field paths).

    Raises :class:`DecodeError` for type errors, bad times, or unknown fields when strict.
    """
    decoder = _Decoder(strict)
    out = decoder.decode_struct(spec, body, "")
    if strict and decoder.unknown:
        raise DecodeError(
            "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in decoder.unknown)
        )
    return out, decoder.unknown


def reorder(spec: TypeSpec, value: Any) -> Any:
    """Put keys into struct order without dropping or adding anything."""
    if isinstance(spec, Struct) and isinstance(value, dict):
        out: JSON = {}
        for f in spec.fields:
            if f.name in value:
                out[f.name] = reorder(f.type, value[f.name])
        for key, item in value.items():
            if key not in out:
                out[key] = item
        return out
    if isinstance(spec, ListOf) and isinstance(value, list):
        return [reorder(spec.item, v) for v in value]
    if isinstance(spec, MapOf) and isinstance(value, dict):
        return {k: reorder(spec.value, v) for k, v in value.items()}
    return value


def rules_for(spec: Struct) -> FieldRules:
    """Field-ownership rules (list kinds, atomic structs, zero object) read off a struct description."""
    list_keys: dict[str, tuple[str, ...]] = {}
    set_lists: set[str] = set()
    atomic: set[str] = set()

    def walk(t: TypeSpec, path: str, depth: int) -> None:
        if depth > 12:
            return
        if isinstance(t, Struct):
            if t.atomic:
                atomic.add(path)
                return
            for f in t.fields:
                if f.name == "metadata" and not path:
                    continue
                walk(f.type, f"{path}.{f.name}" if path else f.name, depth + 1)
        elif isinstance(t, ListOf):
            if t.list_type == "set":
                set_lists.add(path)
            elif t.list_type == "map":
                list_keys[path] = t.keys
            walk(t.item, path + "[]", depth + 1)

    walk(spec, "", 0)
    own = FieldRules(list_keys, frozenset(set_lists), frozenset(atomic), zero_value(spec))
    return METADATA_RULES.merged_with(own)


def merge_keys_for(spec: Struct) -> dict[str, str]:
    """Strategic-merge-patch list keys (``{"spec.containers": "name"}``) read off a description."""
    out: dict[str, str] = {}

    def walk(t: TypeSpec, path: str, depth: int) -> None:
        if depth > 12:
            return
        if isinstance(t, Struct):
            for f in t.fields:
                walk(f.type, f"{path}.{f.name}" if path else f.name, depth + 1)
        elif isinstance(t, ListOf):
            if t.merge_key:
                out[path] = t.merge_key
            walk(t.item, path + "[]", depth + 1)

    walk(spec, "", 0)
    return out


def meta_of(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def section(obj: JSON, key: str = "spec") -> JSON:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}
