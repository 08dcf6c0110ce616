"""Alternate representations of API objects: Table, PartialObjectMetadata(List) and YAML.

kube-apiserver does not only answer with the stored object. The ``Accept`` header can ask for

* ``application/json;as=Table;v=v1;g=meta.k8s.io`` -- what ``kubectl get`` (and ``get -w``) renders:
  column definitions plus one row of cells per object;
* ``application/json;as=PartialObjectMetadata(List);v=v1;g=meta.k8s.io`` -- metadata informers and
  the metadata client only want ``metadata``;
* ``application/yaml`` -- the same object, YAML-encoded the way Go's ``sigs.k8s.io/yaml`` writes it.

This module decides which of those an ``Accept`` header asks for (:func:`negotiate`, honouring q-values
and clause order like kube's negotiation code) and renders each of them. The HTTP layer calls
:func:`render_object`, :func:`render_list` and :class:`WatchEventRenderer`; the older entry points
:func:`wants_table`, :func:`table_for_object`, :func:`table_for_list` and :func:`table_for_watch_event`
stay for it as well.

Columns come from a CRD version's ``additionalPrinterColumns`` (evaluated with the small JSONPath
dialect kube uses for them), or Name + Age when there are none; built-in types get the columns
``kubectl get`` shows for them.

What ``kubectl get namespaces`` asks for and gets:

>>> import json
>>> from apiserver.builtins import builtin_types
>>> namespaces = next(rt for rt in builtin_types() if rt.resource == "namespaces")
>>> rep = negotiate("application/json;as=Table;v=v1;g=meta.k8s.io, application/json")
>>> rep.kind, rep.group_version
('table', 'meta.k8s.io/v1')
>>> listed = {"kind": "NamespaceList", "apiVersion": "v1", "metadata": {"resourceVersion": "5"},
...           "items": [{"metadata": {"name": "default", "creationTimestamp": "2026-01-01T00:00:00Z"},
...                      "status": {"phase": "Active"}}]}
>>> table = json.loads(render_list(rep, namespaces, listed, {}).body)
>>> [column["name"] for column in table["columnDefinitions"]], table["rows"][0]["cells"][:2]
(['Name', 'Status', 'Age'], ['default', 'Active'])
>>> print(render_list(negotiate("application/json"), namespaces, listed, {}))  # the resource's own JSON
None
"""

from __future__ import annotations

import base64
import json
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cmp_to_key
from typing import Any

import yaml

from runtime.goformat import go_float, go_scalar
from runtime.jsoncodec import JSON

from . import protobuf
from .errors import StatusError, bad_request, not_supported
from .registry import ResourceType

META_GROUP = "meta.k8s.io"
META_V1 = "meta.k8s.io/v1"
_META_VERSIONS = ("v1", "v1beta1")

# Representation kinds returned by :func:`negotiate`.
JSON_REPRESENTATION = "json"
YAML_REPRESENTATION = "yaml"
TABLE = "table"
PARTIAL_OBJECT_METADATA = "partial-object-metadata"
PARTIAL_OBJECT_METADATA_LIST = "partial-object-metadata-list"
NOT_ACCEPTABLE = "not-acceptable"
# The object itself, in Kubernetes' protobuf encoding (negotiated only where the kind can be encoded).
PROTOBUF_REPRESENTATION = "protobuf"

INCLUDE_OBJECT_POLICIES = ("Metadata", "None", "Object")

# The wire carries these two API-documentation strings in every Table (recorded in 13-get-as-table), so
# they have to be the ones kube-apiserver sends.
NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources "
    "may allow a client to request the generation of an appropriate name automatically. Name is primarily "
    "intended for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
CREATION_TIMESTAMP_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. "
    "It is not guaranteed to be set in happens-before order across separate operations. "
    "Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\n"
    "Populated by the system. Read-only. Null for lists. "
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)

INITIAL_EVENTS_BLUEPRINT_ANNOTATION = "kubernetes.io/initial-events-list-blueprint"

# ================================================================================ time and durations

_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def parse_timestamp(text: str) -> datetime | None:
    """An RFC 3339 time (fractional seconds allowed) as an aware datetime; None if it is not one."""
    match = _RFC3339.match(text)
    if not match:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = match.group(7) or ""
    micro = int((fraction[1:] + "000000")[:6]) if fraction else 0
    zone = match.group(8)
    try:
        moment = datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)
    except ValueError:
        return None
    if zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        moment -= sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    return moment


def human_duration(elapsed: timedelta) -> str:
    """How kubectl words an age: ``5s``, ``3m20s``, ``45m``, ``2h5m``, ``10h``, ``2d3h``, ``30d``, ``3y20d``.

    Up to a second in the future still reads as now (clocks drift); further is ``<invalid>``.
    """
    seconds = int(elapsed.total_seconds())  # truncates toward zero, as Go's int(d.Seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if rest == 0 else f"{hours // 24 // 365}y{rest}d"
    return f"{hours // 24 // 365}y"


def age(timestamp: Any, now: datetime) -> str:
    """A creationTimestamp-like value as an age; ``<unknown>`` when unset (Go's zero time)."""
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    moment = parse_timestamp(timestamp)
    if moment is None:
        return "<unknown>"
    return human_duration(now - moment)


def _date_cell(value: Any, now: datetime) -> Any:
    """A CRD column of type ``date``: strings become ages, anything else has no cell."""
    if not isinstance(value, str):
        return None
    if value in ("", "null"):
        return "<unknown>"
    moment = parse_timestamp(value)
    if moment is None:
        return "<invalid>"
    return human_duration(now - moment)


# ================================================================================ Go value formatting


def _json_number(value: float) -> int | float:
    """A float as Go's JSON encoder would let a client read it: integral values lose the ``.0``."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e21:
        return int(value)
    return value


def _integral_floats_as_ints(value: Any) -> Any:
    if isinstance(value, float):
        return _json_number(value)
    if isinstance(value, dict):
        return {k: _integral_floats_as_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral_floats_as_ints(v) for v in value]
    return value


def go_json(value: Any) -> str:
    """``json.Marshal`` of decoded JSON: sorted keys, compact, HTML characters escaped."""
    text = json.dumps(
        _integral_floats_as_ints(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def go_print(value: Any) -> str:
    """A JSONPath result as kube prints it into a ``string`` column (maps and lists as JSON)."""
    if value is None:
        return "<no value>"
    if isinstance(value, str):
        return value
    scalar = go_scalar(value)
    return go_json(value) if scalar is None else scalar


# ================================================================================ JSONPath


class JSONPathError(ValueError):
    """The expression cannot be parsed, or evaluating it hit a type error (kube then shows no cell)."""


@dataclass(frozen=True)
class _Field:
    names: tuple[str, ...]


@dataclass(frozen=True)
class _Wildcard:
    pass


@dataclass(frozen=True)
class _Descend:
    """``..``: the current values and everything nested in them."""


@dataclass(frozen=True)
class _Index:
    indices: tuple[int, ...]


@dataclass(frozen=True)
class _Slice:
    start: int | None
    stop: int | None
    step: int | None


@dataclass(frozen=True)
class _Operand:
    path: tuple[_Step, ...] | None = None  # relative to the filtered item (``@.type``)
    literal: Any = None


@dataclass(frozen=True)
class _Filter:
    left: _Operand
    operator: str  # ==, !=, <, >, <=, >=, or "exists"
    right: _Operand | None


_Step = _Field | _Wildcard | _Descend | _Index | _Slice | _Filter

_FILTER_COMPARISON = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$", re.DOTALL)
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")


@dataclass(frozen=True)
class JSONPath:
    """The JSONPath dialect of kubectl and CRD printer columns (client-go ``util/jsonpath``).

    Supports ``.field`` (``\\.`` escapes a dot inside a name), ``['quoted']`` and ``['a','b']`` unions,
    ``[n]`` (negative counts from the end), ``[a:b:c]``, ``[*]``/``.*``, ``..`` recursive descent and
    filters ``[?(@.type=="Ready")]`` with ``== != < > <= >=`` or a bare ``[?(@.path)]`` existence test.
    Missing keys and out-of-range indices simply produce no result.
    """

    expression: str
    steps: tuple[_Step, ...]

    @classmethod
    def parse(cls, expression: str) -> JSONPath:
        text = expression.strip()
        if text.startswith("{") and text.endswith("}"):
            text = text[1:-1].strip()
        if text.startswith(("$", "@")):
            text = text[1:]
        return cls(expression, _parse_steps(text))

    def find(self, data: Any) -> list[Any]:
        """Every value the expression selects, in document order; :class:`JSONPathError` on type errors."""
        return _evaluate(self.steps, [data])

    def first(self, data: Any) -> tuple[bool, Any]:
        """(found, value) of the first selected value; a type error counts as not found."""
        try:
            found = self.find(data)
        except JSONPathError:
            return False, None
        return (True, found[0]) if found else (False, None)


def _read_name(text: str, pos: int) -> tuple[str, int]:
    name: list[str] = []
    while pos < len(text) and text[pos] not in ".[":
        if text[pos] == "\\" and pos + 1 < len(text):
            pos += 1
        name.append(text[pos])
        pos += 1
    return "".join(name), pos


def _closing_bracket(text: str, start: int) -> int:
    """Index of the ``]`` matching the ``[`` at ``start``, skipping quoted text and parentheses."""
    quote = ""
    depth = 0
    pos = start + 1
    while pos < len(text):
        ch = text[pos]
        if quote:
            if ch == "\\":
                pos += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "]" and depth <= 0:
            return pos
        pos += 1
    raise JSONPathError(f"unterminated array in {text!r}")


def _parse_steps(text: str) -> tuple[_Step, ...]:
    steps: list[_Step] = []
    pos = 0
    while pos < len(text):
        ch = text[pos]
        if ch == ".":
            if text.startswith("..", pos):
                steps.append(_Descend())
                pos += 2
            else:
                pos += 1
            if pos >= len(text) or text[pos] in ".[":
                continue
            name, pos = _read_name(text, pos)
            steps.append(_Wildcard() if name == "*" else _Field((name,)))
        elif ch == "[":
            end = _closing_bracket(text, pos)
            steps.append(_parse_bracket(text[pos + 1 : end].strip()))
            pos = end + 1
        elif ch.isspace():
            pos += 1
        else:
            raise JSONPathError(f"unrecognized character in action: {ch!r}")
    return tuple(steps)


def _split_outside_quotes(text: str, separator: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    quote = ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == separator:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return parts


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", r"\1", body)


def _parse_bracket(inner: str) -> _Step:
    if inner == "*":
        return _Wildcard()
    if inner.startswith("?(") and inner.endswith(")"):
        return _parse_filter(inner[2:-1].strip())
    if inner[:1] in ("'", '"'):
        names = [p.strip() for p in _split_outside_quotes(inner, ",")]
        if not all(len(n) >= 2 and n[0] == n[-1] and n[0] in "'\"" for n in names):
            raise JSONPathError(f"invalid array field list: [{inner}]")
        return _Field(tuple(_unquote(n) for n in names))
    if ":" in inner:
        parts = [p.strip() for p in inner.split(":")]
        if len(parts) > 3 or not all(p == "" or _INT.match(p) for p in parts):
            raise JSONPathError(f"invalid array slice: [{inner}]")
        values = [int(p) if p else None for p in parts] + [None] * (3 - len(parts))
        if values[2] == 0:
            raise JSONPathError("step cannot be zero")
        return _Slice(values[0], values[1], values[2])
    indices = [p.strip() for p in inner.split(",")]
    if not all(_INT.match(p) for p in indices):
        raise JSONPathError(f"invalid array index: [{inner}]")
    return _Index(tuple(int(p) for p in indices))


def _parse_operand(text: str) -> _Operand:
    text = text.strip()
    if text.startswith(("@", "$")):
        return _Operand(path=_parse_steps(text[1:]))
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return _Operand(literal=_unquote(text))
    if text in ("true", "false"):
        return _Operand(literal=text == "true")
    if _INT.match(text):
        return _Operand(literal=int(text))
    if _FLOAT.match(text):
        return _Operand(literal=float(text))
    raise JSONPathError(f"unrecognized filter operand {text!r}")


def _parse_filter(body: str) -> _Filter:
    match = _FILTER_COMPARISON.match(body)
    if match is None:
        return _Filter(_parse_operand(body), "exists", None)
    return _Filter(_parse_operand(match.group(1)), match.group(2), _parse_operand(match.group(3)))


def _descendants(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _descendants(value[key])
    elif isinstance(value, list):
        for item in value:
            yield from _descendants(item)


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value[k] for k in sorted(value)]
    if isinstance(value, list):
        return list(value)
    return []


def _evaluate(steps: Iterable[_Step], values: list[Any]) -> list[Any]:
    for step in steps:
        out: list[Any] = []
        if isinstance(step, _Field):
            for value in values:
                if isinstance(value, dict):
                    out.extend(value[name] for name in step.names if name in value)
        elif isinstance(step, _Wildcard):
            for value in values:
                out.extend(_children(value))
        elif isinstance(step, _Descend):
            for value in values:
                out.extend(_descendants(value))
        elif isinstance(step, _Index):
            for value in values:
                if isinstance(value, list):
                    for index in step.indices:
                        position = index + len(value) if index < 0 else index
                        if 0 <= position < len(value):
                            out.append(value[position])
        elif isinstance(step, _Slice):
            for value in values:
                if isinstance(value, list):
                    out.extend(value[step.start : step.stop : step.step])
        else:
            for value in values:
                out.extend(item for item in _children(value) if _filter_passes(step, item))
        values = out
    return values


def _operand_value(operand: _Operand, item: Any) -> tuple[bool, Any]:
    if operand.path is None:
        return True, operand.literal
    found = _evaluate(operand.path, [item])
    if not found:
        return False, None
    if len(found) > 1:
        raise JSONPathError("can only compare one element at a time")
    return True, found[0]


def _comparable_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return None


def _filter_passes(step: _Filter, item: Any) -> bool:
    present, left = _operand_value(step.left, item)
    if not present:
        return False
    if step.operator == "exists" or step.right is None:
        return True
    present, right = _operand_value(step.right, item)
    if not present:
        return False
    left_kind, right_kind = _comparable_kind(left), _comparable_kind(right)
    if left_kind is None or right_kind is None:
        raise JSONPathError("invalid type for comparison")
    if left_kind != right_kind:
        raise JSONPathError("incompatible types for comparison")
    if step.operator == "==":
        return bool(left == right)
    if step.operator == "!=":
        return bool(left != right)
    if step.operator not in ("<", ">", "<=", ">="):
        return False
    if left_kind == "bool":
        raise JSONPathError("invalid type for comparison")
    result: bool = {
        "<": left < right,
        ">": left > right,
        "<=": left <= right,
        ">=": left >= right,
    }[step.operator]
    return result


# ================================================================================ columns and printers


@dataclass(frozen=True)
class Column:
    """One ``metav1.TableColumnDefinition``."""

    name: str
    type: str
    description: str
    format: str = ""
    priority: int = 0

    def definition(self) -> JSON:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


NAME_COLUMN = Column("Name", "string", NAME_DESCRIPTION, "name")
AGE_COLUMN = Column("Age", "string", CREATION_TIMESTAMP_DESCRIPTION)

Cells = Callable[[JSON, datetime], list[Any]]


@dataclass(frozen=True)
class Printer:
    """How one resource type becomes table rows."""

    columns: tuple[Column, ...]
    cells: Cells
    # kube's generic convertor (types without a printer) leaves an empty list's rows null.
    null_rows_when_empty: bool = False


def _meta(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _name(obj: JSON) -> str:
    return _str(_meta(obj).get("name"))


def _obj_age(obj: JSON, now: datetime) -> str:
    return age(_meta(obj).get("creationTimestamp"), now)


def _none_if_empty(text: str) -> str:
    return text or "<none>"


def _format_labels(labels: Any) -> str:
    pairs = sorted(f"{k}={v}" for k, v in _dict(labels).items())
    return ",".join(pairs) or "<none>"


def _int_or_string_text(value: Any) -> str:
    if value is None:
        return "N/A"
    return go_print(value)


# --- custom resources


def _custom_resource_printer(rt: ResourceType) -> Printer:
    declared = rt.printer_columns or [
        {
            "name": "Age",
            "type": "date",
            "description": CREATION_TIMESTAMP_DESCRIPTION,
            "jsonPath": ".metadata.creationTimestamp",
        }
    ]
    columns: list[Column] = [NAME_COLUMN]
    paths: list[JSONPath] = []
    for declared_column in declared:
        json_path = _str(declared_column.get("jsonPath"))
        try:
            path = JSONPath.parse(json_path)
        except JSONPathError:
            # kube keeps the columns before an unparsable one and drops the rest.
            break
        description = _str(declared_column.get("description")) or (
            f"Custom resource definition column (in JSONPath format): {json_path}"
        )
        priority = declared_column.get("priority")
        columns.append(
            Column(
                _str(declared_column.get("name")),
                _str(declared_column.get("type")),
                description,
                _str(declared_column.get("format")),
                priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
            )
        )
        paths.append(path)
    types = [c.type for c in columns[1:]]

    def cells(obj: JSON, now: datetime) -> list[Any]:
        row: list[Any] = [_name(obj)]
        for path, column_type in zip(paths, types, strict=True):
            found, value = path.first(obj)
            row.append(_cell_for_json_value(column_type, value, now) if found else None)
        return row

    return Printer(tuple(columns), cells)


def _cell_for_json_value(column_type: str, value: Any, now: datetime) -> Any:
    """A CRD column cell: typed values pass when they fit the column type, else the cell is null."""
    if column_type == "string":
        return go_print(value)
    if value is None:
        return None
    if column_type == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float) and math.isfinite(value):
            return int(value)  # Go's int64(f) truncates toward zero
        return None
    if column_type == "number":
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return _json_number(value)
        return None
    if column_type == "boolean":
        return value if isinstance(value, bool) else None
    if column_type == "date":
        return _date_cell(value, now)
    return None


# --- built-in types


def _generic_printer() -> Printer:
    """kube's default convertor for types without a printer: Name and the creation time in RFC 3339."""

    def cells(obj: JSON, now: datetime) -> list[Any]:
        created = _meta(obj).get("creationTimestamp")
        moment = parse_timestamp(created) if isinstance(created, str) else None
        text = moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else "0001-01-01T00:00:00Z"
        return [_name(obj), text]

    return Printer(
        (NAME_COLUMN, Column("Created At", "date", CREATION_TIMESTAMP_DESCRIPTION)),
        cells,
        null_rows_when_empty=True,
    )


def _namespace_cells(obj: JSON, now: datetime) -> list[Any]:
    return [_name(obj), _str(_dict(obj.get("status")).get("phase")), _obj_age(obj, now)]


def _node_roles(labels: JSON) -> list[str]:
    roles: set[str] = set()
    for key, value in labels.items():
        if key.startswith("node-role.kubernetes.io/"):
            role = key[len("node-role.kubernetes.io/") :]
            if role:
                roles.add(role)
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    return sorted(roles)


def _node_address(status: JSON, kind: str) -> str:
    for address in _list(status.get("addresses")):
        if _dict(address).get("type") == kind:
            return _str(address.get("address"))
    return "<none>"


def _node_cells(obj: JSON, now: datetime) -> list[Any]:
    status = _dict(obj.get("status"))
    states: list[str] = []
    for condition in _list(status.get("conditions")):
        condition = _dict(condition)
        if condition.get("type") == "Ready":
            states = ["Ready" if condition.get("status") == "True" else "NotReady"]
    if not states:
        states = ["Unknown"]
    if _dict(obj.get("spec")).get("unschedulable") is True:
        states.append("SchedulingDisabled")
    info = _dict(status.get("nodeInfo"))
    return [
        _name(obj),
        ",".join(states),
        _none_if_empty(",".join(_node_roles(_dict(_meta(obj).get("labels"))))),
        _obj_age(obj, now),
        _str(info.get("kubeletVersion")),
        _node_address(status, "InternalIP"),
        _node_address(status, "ExternalIP"),
        _str(info.get("osImage")) or "<unknown>",
        _str(info.get("kernelVersion")) or "<unknown>",
        _str(info.get("containerRuntimeVersion")) or "<unknown>",
    ]


def _lease_cells(obj: JSON, now: datetime) -> list[Any]:
    return [_name(obj), _str(_dict(obj.get("spec")).get("holderIdentity")), _obj_age(obj, now)]


def _config_map_cells(obj: JSON, now: datetime) -> list[Any]:
    return [_name(obj), len(_dict(obj.get("data"))) + len(_dict(obj.get("binaryData"))), _obj_age(obj, now)]


def _secret_cells(obj: JSON, now: datetime) -> list[Any]:
    return [_name(obj), _str(obj.get("type")), len(_dict(obj.get("data"))), _obj_age(obj, now)]


def _service_account_cells(obj: JSON, now: datetime) -> list[Any]:
    return [_name(obj), len(_list(obj.get("secrets"))), _obj_age(obj, now)]


def _service_external_ip(spec: JSON, status: JSON) -> str:
    service_type = _str(spec.get("type")) or "ClusterIP"
    external = [str(ip) for ip in _list(spec.get("externalIPs"))]
    if service_type in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if service_type == "LoadBalancer":
        ingress = [
            _str(_dict(i).get("ip")) or _str(_dict(i).get("hostname"))
            for i in _list(_dict(status.get("loadBalancer")).get("ingress"))
        ]
        return ",".join([i for i in ingress if i] + external) or "<pending>"
    if service_type == "ExternalName":
        return _str(spec.get("externalName"))
    return "<unknown>"


def _service_cells(obj: JSON, now: datetime) -> list[Any]:
    spec = _dict(obj.get("spec"))
    cluster_ips = _list(spec.get("clusterIPs"))
    cluster_ip = _str(cluster_ips[0]) if cluster_ips else _str(spec.get("clusterIP"))
    ports: list[str] = []
    for port in _list(spec.get("ports")):
        port = _dict(port)
        protocol = _str(port.get("protocol")) or "TCP"
        if port.get("nodePort"):
            ports.append(f"{port.get('port')}:{port.get('nodePort')}/{protocol}")
        else:
            ports.append(f"{port.get('port')}/{protocol}")
    return [
        _name(obj),
        _str(spec.get("type")),
        _none_if_empty(cluster_ip),
        _service_external_ip(spec, _dict(obj.get("status"))),
        ",".join(ports) or "<none>",
        _obj_age(obj, now),
        _format_labels(spec.get("selector")),
    ]


def _pod_cells(obj: JSON, now: datetime) -> list[Any]:
    spec = _dict(obj.get("spec"))
    status = _dict(obj.get("status"))
    containers = _list(spec.get("containers"))
    reason = _str(status.get("reason")) or _str(status.get("phase"))
    ready = 0
    restarts = 0
    last_restart: datetime | None = None
    running = False
    for container_status in reversed(_list(status.get("containerStatuses"))):
        container_status = _dict(container_status)
        restarts += container_status.get("restartCount") or 0
        finished = _str(_dict(_dict(container_status.get("lastState")).get("terminated")).get("finishedAt"))
        moment = parse_timestamp(finished) if finished else None
        if moment and (last_restart is None or moment > last_restart):
            last_restart = moment
        state = _dict(container_status.get("state"))
        waiting, terminated = _dict(state.get("waiting")), state.get("terminated")
        if waiting.get("reason"):
            reason = _str(waiting.get("reason"))
        elif isinstance(terminated, dict) and terminated.get("reason"):
            reason = _str(terminated.get("reason"))
        elif isinstance(terminated, dict):
            signal = terminated.get("signal")
            reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode', 0)}"
        elif "running" in state and container_status.get("ready"):
            running = True
            ready += 1
    if reason == "Completed" and running:
        reason = "Running"
    if _meta(obj).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    restart_text = str(restarts)
    if last_restart is not None and restarts:
        restart_text = f"{restarts} ({human_duration(now - last_restart)} ago)"
    gates = _list(spec.get("readinessGates"))
    gate_text = "<none>"
    if gates:
        wanted = {_dict(g).get("conditionType") for g in gates}
        met = sum(
            1
            for c in _list(status.get("conditions"))
            if _dict(c).get("type") in wanted and _dict(c).get("status") == "True"
        )
        gate_text = f"{met}/{len(gates)}"
    return [
        _name(obj),
        f"{ready}/{len(containers)}",
        reason,
        restart_text,
        _obj_age(obj, now),
        _none_if_empty(_str(status.get("podIP"))),
        _none_if_empty(_str(spec.get("nodeName"))),
        _none_if_empty(_str(status.get("nominatedNodeName"))),
        gate_text,
    ]


def _pdb_cells(obj: JSON, now: datetime) -> list[Any]:
    spec = _dict(obj.get("spec"))
    return [
        _name(obj),
        _int_or_string_text(spec.get("minAvailable")),
        _int_or_string_text(spec.get("maxUnavailable")),
        _dict(obj.get("status")).get("disruptionsAllowed") or 0,
        _obj_age(obj, now),
    ]


def _webhook_configuration_cells(obj: JSON, now: datetime) -> list[Any]:
    return [_name(obj), len(_list(obj.get("webhooks"))), _obj_age(obj, now)]


def _event_source(component: str, host: str) -> str:
    return f"{component}, {host}" if host else component


def _event_cells(obj: JSON, now: datetime) -> list[Any]:
    """Core and events.k8s.io Events share one printer (kube converts both to the internal core type)."""
    if "regarding" in obj or "note" in obj or "deprecatedSource" in obj:
        involved = _dict(obj.get("regarding"))
        message = _str(obj.get("note"))
        source = _dict(obj.get("deprecatedSource"))
        first, last = obj.get("deprecatedFirstTimestamp"), obj.get("deprecatedLastTimestamp")
        count = obj.get("deprecatedCount") or 0
        controller, instance = _str(obj.get("reportingController")), _str(obj.get("reportingInstance"))
    else:
        involved = _dict(obj.get("involvedObject"))
        message = _str(obj.get("message"))
        source = _dict(obj.get("source"))
        first, last = obj.get("firstTimestamp"), obj.get("lastTimestamp")
        count = obj.get("count") or 0
        controller, instance = _str(obj.get("reportingComponent")), _str(obj.get("reportingInstance"))
    first_seen = age(first, now) if first else age(obj.get("eventTime"), now)
    last_seen = age(last, now) if last else first_seen
    series = obj.get("series")
    if isinstance(series, dict):
        last_seen = age(series.get("lastObservedTime"), now)
        count = series.get("count") or 0
    elif not count:
        count = 1  # events.k8s.io singletons carry no count
    kind = _str(involved.get("kind")).lower()
    target = f"{kind}/{involved.get('name')}" if involved.get("name") else kind
    return [
        last_seen,
        _str(obj.get("type")),
        _str(obj.get("reason")),
        target,
        _str(involved.get("fieldPath")),
        _event_source(
            _str(source.get("component")) or controller,
            _str(source.get("host")) or instance,
        ),
        message,
        first_seen,
        count,
        _name(obj),
    ]


_EVENT_COLUMNS = (
    Column("Last Seen", "string", "Time of the most recent occurrence."),
    Column("Type", "string", "Type of the event (Normal or Warning)."),
    Column("Reason", "string", "Short, machine-readable reason for the event."),
    Column("Object", "string", "The object the event is about, as kind/name."),
    Column("Subobject", "string", "Field path inside the object, if any.", priority=1),
    Column("Source", "string", "Component (and host) that reported the event.", priority=1),
    Column("Message", "string", "Human-readable description of the event."),
    Column("First Seen", "string", "Time of the first occurrence.", priority=1),
    Column("Count", "string", "How many times the event occurred.", priority=1),
    Column("Name", "string", NAME_DESCRIPTION, "name", 1),
)

_BUILTIN_PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "namespaces"): Printer(
        (NAME_COLUMN, Column("Status", "string", "The phase of the namespace."), AGE_COLUMN), _namespace_cells
    ),
    ("", "nodes"): Printer(
        (
            NAME_COLUMN,
            Column("Status", "string", "Readiness of the node, and whether it accepts new pods."),
            Column("Roles", "string", "Roles taken from the node-role.kubernetes.io/ labels."),
            AGE_COLUMN,
            Column("Version", "string", "Kubelet version the node reports."),
            Column("Internal-IP", "string", "First InternalIP address of the node.", priority=1),
            Column("External-IP", "string", "First ExternalIP address of the node.", priority=1),
            Column("OS-Image", "string", "Operating system image the node reports.", priority=1),
            Column("Kernel-Version", "string", "Kernel version the node reports.", priority=1),
            Column("Container-Runtime", "string", "Container runtime version the node reports.", priority=1),
        ),
        _node_cells,
    ),
    ("coordination.k8s.io", "leases"): Printer(
        (NAME_COLUMN, Column("Holder", "string", "Identity of the current holder of the lease."), AGE_COLUMN),
        _lease_cells,
    ),
    ("", "configmaps"): Printer(
        (NAME_COLUMN, Column("Data", "string", "Number of data and binaryData entries."), AGE_COLUMN),
        _config_map_cells,
    ),
    ("", "secrets"): Printer(
        (
            NAME_COLUMN,
            Column("Type", "string", "Type of the secret."),
            Column("Data", "string", "Number of data entries."),
            AGE_COLUMN,
        ),
        _secret_cells,
    ),
    ("", "serviceaccounts"): Printer(
        (NAME_COLUMN, Column("Secrets", "string", "Number of listed secrets."), AGE_COLUMN),
        _service_account_cells,
    ),
    ("", "services"): Printer(
        (
            NAME_COLUMN,
            Column("Type", "string", "How the service is exposed."),
            Column("Cluster-IP", "string", "Cluster-internal IP address of the service."),
            Column("External-IP", "string", "External addresses of the service."),
            Column("Port(s)", "string", "Ports the service exposes."),
            AGE_COLUMN,
            Column("Selector", "string", "Labels selecting the backing pods.", priority=1),
        ),
        _service_cells,
    ),
    ("", "pods"): Printer(
        (
            NAME_COLUMN,
            Column("Ready", "string", "Ready containers out of all containers."),
            Column("Status", "string", "Summary of the pod's state."),
            Column("Restarts", "string", "Container restarts, and how long ago the last one was."),
            AGE_COLUMN,
            Column("IP", "string", "IP address of the pod.", priority=1),
            Column("Node", "string", "Node the pod is bound to.", priority=1),
            Column("Nominated Node", "string", "Node nominated for preemption.", priority=1),
            Column("Readiness Gates", "string", "Met readiness gates out of all of them.", priority=1),
        ),
        _pod_cells,
    ),
    ("policy", "poddisruptionbudgets"): Printer(
        (
            NAME_COLUMN,
            Column("Min Available", "string", "Pods that must stay available."),
            Column("Max Unavailable", "string", "Pods that may be unavailable."),
            Column("Allowed Disruptions", "integer", "Pods that may be disrupted right now."),
            AGE_COLUMN,
        ),
        _pdb_cells,
    ),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): Printer(
        (NAME_COLUMN, Column("Webhooks", "integer", "Number of webhooks."), AGE_COLUMN),
        _webhook_configuration_cells,
    ),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): Printer(
        (NAME_COLUMN, Column("Webhooks", "integer", "Number of webhooks."), AGE_COLUMN),
        _webhook_configuration_cells,
    ),
    ("", "events"): Printer(_EVENT_COLUMNS, _event_cells),
    ("events.k8s.io", "events"): Printer(_EVENT_COLUMNS, _event_cells),
}


def printer_for(rt: ResourceType) -> Printer:
    """The columns and cell function kube uses for ``rt``'s tables."""
    if not rt.builtin:
        return _custom_resource_printer(rt)
    return _BUILTIN_PRINTERS.get((rt.group, rt.resource)) or _generic_printer()


# ================================================================================ PartialObjectMetadata

_OBJECT_META_ORDER = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)
_OWNER_REFERENCE_ORDER = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
_MANAGED_FIELDS_ORDER = (
    "manager",
    "operation",
    "apiVersion",
    "time",
    "fieldsType",
    "fieldsV1",
    "subresource",
)
# Pointer fields: written whenever set, even to zero; the rest are omitempty.
_POINTER_FIELDS = {
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "controller",
    "blockOwnerDeletion",
    "time",
    "fieldsV1",
}


def _sorted_deep(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_deep(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_deep(v) for v in value]
    return value


def _is_go_zero(value: Any) -> bool:
    if value is None or value is False:
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == 0
    return value in ("", [], {})


def _struct(source: JSON, order: tuple[str, ...], always: tuple[str, ...] = ()) -> JSON:
    out: JSON = {}
    for key in order:
        value = source.get(key)
        if key in always:
            out[key] = value
        elif key in _POINTER_FIELDS:
            if value is not None:
                out[key] = value
        elif not _is_go_zero(value):
            out[key] = value
    return out


def object_meta(meta: JSON) -> JSON:
    """``metadata`` as the Go ObjectMeta struct writes it: struct order, maps sorted, zero values dropped.

    ``creationTimestamp`` is always written (``null`` when unset), as Go writes a zero ``metav1.Time``.
    """
    out = _struct(meta, _OBJECT_META_ORDER, always=("creationTimestamp",))
    for key in ("labels", "annotations"):
        if key in out:
            out[key] = {k: out[key][k] for k in sorted(_dict(out[key]))}
    if "ownerReferences" in out:
        out["ownerReferences"] = [
            _struct(_dict(r), _OWNER_REFERENCE_ORDER, always=_OWNER_REFERENCE_ORDER[:4])
            for r in _list(out["ownerReferences"])
        ]
    if "managedFields" in out:
        entries = []
        for entry in _list(out["managedFields"]):
            ordered = _struct(_dict(entry), _MANAGED_FIELDS_ORDER)
            if "fieldsV1" in ordered:
                ordered["fieldsV1"] = _sorted_deep(ordered["fieldsV1"])
            entries.append(ordered)
        out["managedFields"] = entries
    return out


def partial_object_metadata(obj: JSON, *, group_version: str = META_V1) -> JSON:
    """An object as ``PartialObjectMetadata``: kind, apiVersion and metadata only."""
    return {"kind": "PartialObjectMetadata", "apiVersion": group_version, "metadata": object_meta(_meta(obj))}


def _list_meta(listed: JSON) -> JSON:
    meta = _dict(listed.get("metadata"))
    out: JSON = {}
    if meta.get("resourceVersion"):
        out["resourceVersion"] = meta["resourceVersion"]
    if meta.get("continue"):
        out["continue"] = meta["continue"]
    if meta.get("remainingItemCount") is not None:
        out["remainingItemCount"] = meta["remainingItemCount"]
    return out


def partial_object_metadata_list(listed: JSON, *, group_version: str = META_V1) -> JSON:
    """A list as ``PartialObjectMetadataList``; an empty one has ``"items": null`` (Go's nil slice)."""
    items = [partial_object_metadata(o, group_version=group_version) for o in _list(listed.get("items"))]
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": group_version,
        "metadata": _list_meta(listed),
        "items": items or None,
    }


def partial_object_metadata_list_blueprint(*, group_version: str = META_V1) -> str:
    """The base64 ``initial-events-list-blueprint`` annotation value for metadata-only watch lists."""
    doc = partial_object_metadata_list({"items": []}, group_version=group_version)
    return base64.b64encode((json.dumps(doc, separators=(",", ":")) + "\n").encode()).decode()


# ================================================================================ tables


def include_object_policy(query: dict[str, str]) -> str:
    """The ``includeObject`` table option (default Metadata); 400 for an unknown value, as kube answers."""
    policy = query.get("includeObject", "")
    if policy and policy not in INCLUDE_OBJECT_POLICIES:
        problem = not_supported("includeObject", policy, list(INCLUDE_OBJECT_POLICIES))
        raise bad_request(f"Unable to convert to Table as requested: {problem}")
    return policy or "Metadata"


def validate_table_options(query: dict[str, str]) -> None:
    """Raise the 400 kube gives for bad table options; call before a Table watch starts streaming."""
    include_object_policy(query)


def _row_object(rt: ResourceType, obj: JSON, policy: str, group_version: str) -> JSON | None:
    if policy == "None":
        return None
    if policy == "Object":
        if rt.builtin:
            from .builtins import order_builtin

            return order_builtin(rt, obj)
        result: JSON = _sorted_deep(obj)
        return result
    return partial_object_metadata(obj, group_version=group_version)


def _table(
    rt: ResourceType,
    objects: list[JSON],
    list_meta: JSON,
    query: dict[str, str],
    *,
    include_columns: bool,
    group_version: str,
    now: datetime | None,
    single: bool,
) -> JSON:
    policy = include_object_policy(query)
    printer = printer_for(rt)
    moment = now or datetime.now(UTC)
    rows: list[JSON] | None = [
        {"cells": printer.cells(obj, moment), "object": _row_object(rt, obj, policy, group_version)}
        for obj in objects
    ]
    if not rows and printer.null_rows_when_empty and not single:
        rows = None
    return {
        "kind": "Table",
        "apiVersion": group_version,
        "metadata": list_meta,
        "columnDefinitions": [c.definition() for c in printer.columns] if include_columns else None,
        "rows": rows,
    }


def _object_list_meta(obj: JSON) -> JSON:
    rv = _meta(obj).get("resourceVersion")
    return {"resourceVersion": rv} if rv else {}


def table_for_object(
    rt: ResourceType,
    obj: JSON,
    query: dict[str, str],
    *,
    group_version: str = META_V1,
    now: datetime | None = None,
) -> JSON:
    """A single object as a one-row Table (``GET .../name`` with the Table Accept header)."""
    return _table(
        rt,
        [obj],
        _object_list_meta(obj),
        query,
        include_columns=True,
        group_version=group_version,
        now=now,
        single=True,
    )


def table_for_list(
    rt: ResourceType,
    listed: JSON,
    query: dict[str, str],
    *,
    group_version: str = META_V1,
    now: datetime | None = None,
) -> JSON:
    """A list (``{"kind","apiVersion","metadata","items"}``) as a Table; list metadata carries over."""
    return _table(
        rt,
        _list(listed.get("items")),
        _list_meta(listed),
        query,
        include_columns=True,
        group_version=group_version,
        now=now,
        single=False,
    )


def table_for_watch_event(
    rt: ResourceType,
    obj: JSON,
    query: dict[str, str],
    *,
    include_columns: bool,
    group_version: str = META_V1,
    now: datetime | None = None,
) -> JSON:
    """One watch event's object as a one-row Table; ``columnDefinitions`` is null unless ``include_columns``.

    kube sends the column definitions only with the first event of a stream (22-watch-as-table).
    """
    return _table(
        rt,
        [obj],
        _object_list_meta(obj),
        query,
        include_columns=include_columns,
        group_version=group_version,
        now=now,
        single=True,
    )


# ================================================================================ negotiation


@dataclass(frozen=True)
class Representation:
    """What an ``Accept`` header asked for.

    ``kind`` is one of json, yaml, protobuf, table, partial-object-metadata,
    partial-object-metadata-list or not-acceptable; ``media_type`` is the Content-Type to answer with
    (``application/json``, ``application/yaml`` or ``application/vnd.kubernetes.protobuf``);
    ``group_version`` is ``meta.k8s.io/v1`` or ``meta.k8s.io/v1beta1`` for the meta.k8s.io kinds
    (the ``apiVersion`` they are written with) and "" otherwise.
    """

    kind: str
    media_type: str = "application/json"  # application/yaml, or the protobuf media type
    group_version: str = ""
    pretty: bool = False
    watch: bool = False

    @property
    def acceptable(self) -> bool:
        return self.kind != NOT_ACCEPTABLE


@dataclass
class _Clause:
    type: str
    subtype: str
    q: float
    params: dict[str, str] = field(default_factory=dict)


_GO_FLOAT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(inf|infinity|nan)$", re.IGNORECASE)
# What the server can write, in kube's serializer order; protobuf only for kinds with a table.
_PRODUCIBLE = (("application", "json"), ("application", "yaml"))
_PROTOBUF_SUBTYPE = "vnd.kubernetes.protobuf"
_PRODUCIBLE_WITH_PROTOBUF = (*_PRODUCIBLE, ("application", _PROTOBUF_SUBTYPE))
_ADVERTISED = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
_ADVERTISED_STREAMS = ("application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch")
_PRODUCIBLE_TYPES = ("application/json", "application/yaml")
_PRODUCIBLE_STREAMS = ("application/json;stream=watch",)


def _parse_accept(header: str) -> list[_Clause]:
    """The Accept header's clauses, best first: by q, then concrete types before wildcards."""
    clauses: list[_Clause] = []
    for part in header.split(","):
        pieces = part.strip(" ").split(";")
        media_range = pieces[0].split("/")
        main = media_range[0].strip(" ")
        if len(media_range) == 1 and main == "*":
            sub = "*"
        elif len(media_range) == 2:
            sub = media_range[1].strip(" ")
        else:
            continue
        clause = _Clause(main, sub, 1.0)
        for param in pieces[1:]:
            key, sep, value = param.partition("=")
            if not sep:
                continue
            key = key.strip(" ")
            if key == "q":
                clause.q = float(value) if _GO_FLOAT.match(value) else 0.0
            else:
                clause.params[key] = value.strip(" ")
        clauses.append(clause)

    def better(a: _Clause, b: _Clause) -> bool:
        if a.q > b.q:
            return True
        if a.type != "*" and b.type == "*":
            return True
        return a.subtype != "*" and b.subtype == "*"

    # An insertion sort with kube's comparison (it is not a total order, so the algorithm matters).
    for i in range(1, len(clauses)):
        j = i
        while j > 0 and better(clauses[j], clauses[j - 1]):
            clauses[j], clauses[j - 1] = clauses[j - 1], clauses[j]
            j -= 1
    return clauses


def _specificity(clause: _Clause, main: str, sub: str) -> int:
    if clause.type == main and clause.subtype == sub:
        return 2
    if clause.type == main and clause.subtype == "*":
        return 1
    if clause.type == "*" and clause.subtype == "*":
        return 0
    return -1


def _representation_for(clause: _Clause, sub: str, *, watch: bool) -> Representation | None:
    """The representation one clause asks of one serializer, or None when the clause cannot be served."""
    convert: dict[str, str] = {}
    pretty = False
    for key, value in clause.params.items():
        if key in ("as", "g", "v"):
            convert[key] = value
        elif key == "stream":
            if value and (sub == "yaml" or value != "watch"):
                return None
        elif key == "sv":
            if value and value != "v1":
                return None
        elif key == "pretty":
            pretty = value == "1"
    media_type = f"application/{sub}"
    if sub == _PROTOBUF_SUBTYPE:
        # Tables and PartialObjectMetadata are written as JSON or YAML only: such a clause is
        # passed over, and the client's JSON clause (kubectl and controller-runtime send one) wins.
        return None if convert else Representation(PROTOBUF_REPRESENTATION, media_type, "", pretty, watch)
    if not convert:
        kind = YAML_REPRESENTATION if sub == "yaml" else JSON_REPRESENTATION
        return Representation(kind, media_type, "", pretty, watch)
    if convert.get("g") != META_GROUP or convert.get("v") not in _META_VERSIONS:
        return None
    group_version = f"{META_GROUP}/{convert['v']}"
    target = {
        "Table": TABLE,
        "PartialObjectMetadata": PARTIAL_OBJECT_METADATA,
        "PartialObjectMetadataList": PARTIAL_OBJECT_METADATA_LIST,
    }.get(convert.get("as", ""))
    if target is None:
        return None
    return Representation(target, media_type, group_version, pretty, watch)


def negotiate(accept: str, *, watch: bool = False, protobuf: bool = False) -> Representation:
    """Which representation ``accept`` asks for, as kube-apiserver negotiates it.

    Clauses are tried best first (q-value, then concrete before wildcard, then header order); within a
    clause JSON is preferred to YAML, and YAML to protobuf. The first clause the server can serve
    wins: client-go's ``application/vnd.kubernetes.protobuf,application/json`` gets protobuf
    wherever protobuf is served. ``protobuf`` says whether it is (built-in kinds with a table, see
    :func:`apiserver.protobuf.can_encode`); where it is not (custom resources), protobuf clauses are
    passed over, as kube passes them over for custom resources.
    ``as=Table|PartialObjectMetadata|PartialObjectMetadataList`` needs ``g=meta.k8s.io`` and ``v=v1``
    or ``v1beta1`` (and JSON or YAML); ``stream=`` only ``watch``. A clause with q=0 rejects the media
    types it names. When nothing is acceptable the answer is not-acceptable (see
    :func:`not_acceptable_error`). For a watch the chosen encoding must be streamable: YAML there is
    not acceptable, as in kube.
    """
    if not accept.strip(" "):
        return Representation(JSON_REPRESENTATION, watch=watch)
    clauses = _parse_accept(accept)
    producible = _PRODUCIBLE_WITH_PROTOBUF if protobuf else _PRODUCIBLE
    rejected = set()
    for main, sub in producible:
        best = -1
        for clause in clauses:
            specificity = _specificity(clause, main, sub)
            if specificity > best:
                best = specificity
                if clause.q <= 0:
                    rejected.add(sub)
                else:
                    rejected.discard(sub)
    for clause in clauses:
        if clause.q <= 0:
            continue
        for main, sub in producible:
            if sub in rejected or _specificity(clause, main, sub) < 0:
                continue
            chosen = _representation_for(clause, sub, watch=watch)
            if chosen is None:
                continue
            if watch and sub == "yaml":
                return Representation(NOT_ACCEPTABLE, "", watch=True)
            return chosen
    return Representation(NOT_ACCEPTABLE, "", watch=watch)


def serves_protobuf(rt: ResourceType) -> bool:
    """True when ``rt``'s objects are answered in protobuf to clients that prefer it: built-ins
    whose kind has a protobuf table. Custom resources answer JSON, as kube-apiserver's do; so do the
    few built-ins without a table (CustomResourceDefinition among them), where this server differs."""
    return rt.builtin and protobuf.can_encode(rt.group, rt.version, rt.kind)


def error_media_type(accept: str) -> str:
    """The Content-Type of a Status error: protobuf when the request's ``Accept`` prefers it.

    kube writes errors with its default endpoint restrictions: no ``as=`` conversions, and protobuf
    whatever the resource (a custom resource's 406 in 13-get-protobuf-only is protobuf). The first
    clause that names JSON, YAML or protobuf without a conversion decides; this server writes errors
    as JSON unless that clause is protobuf.
    """
    if not accept.strip(" "):
        return "application/json"
    for clause in _parse_accept(accept):
        if clause.q <= 0 or {"as", "g", "v"} & set(clause.params):
            continue
        if clause.params.get("stream", "watch") != "watch":
            continue
        if clause.type == "application" and clause.subtype == _PROTOBUF_SUBTYPE:
            return "application/vnd.kubernetes.protobuf"
        if any(_specificity(clause, main, sub) >= 0 for main, sub in _PRODUCIBLE):
            return "application/json"
    return "application/json"


def wants_table(accept: str) -> bool:
    """True when the negotiated representation is a Table (what ``kubectl get`` asks for)."""
    return negotiate(accept).kind == TABLE


def not_acceptable_error(
    *, watch: bool = False, builtin: bool = False, protobuf: bool = False
) -> StatusError:
    """The 406 kube-apiserver gives when no Accept clause can be served.

    The Status itself is written in the media type errors negotiate (protobuf for
    13-get-protobuf-only; see :func:`error_media_type`). For custom resources the message is the
    recorded one, which lists protobuf although kube cannot encode custom resources in it either.
    Built-ins with a protobuf table (``protobuf``) list the same; the few built-ins without one name
    only what this server can produce for them.
    """
    if builtin and not protobuf:
        supported: tuple[str, ...] = _PRODUCIBLE_STREAMS if watch else _PRODUCIBLE_TYPES
    else:
        supported = _ADVERTISED_STREAMS if watch else _ADVERTISED
    return StatusError(
        406, "NotAcceptable", "only the following media types are accepted: " + ", ".join(supported)
    )


def _go_type_name(rt: ResourceType, *, is_list: bool) -> str:
    """The Go type kube names in transformation errors (internal types for built-ins)."""
    suffix = "List" if is_list else ""
    if not rt.builtin:
        return f"*unstructured.Unstructured{suffix}"
    package = "core" if rt.group in ("", "events.k8s.io") else rt.group.split(".")[0]
    return f"*{package}.{rt.kind}{suffix}"


def check_shape(representation: Representation, rt: ResourceType, *, is_list: bool) -> None:
    """406 when PartialObjectMetadata is asked of a list or PartialObjectMetadataList of one object."""
    if representation.kind == PARTIAL_OBJECT_METADATA and is_list:
        raise StatusError(
            406,
            "NotAcceptable",
            "you requested PartialObjectMetadata, but the requested object is a list "
            f"({_go_type_name(rt, is_list=True)})",
        )
    if representation.kind == PARTIAL_OBJECT_METADATA_LIST and not is_list:
        raise StatusError(
            406,
            "NotAcceptable",
            "you requested PartialObjectMetadataList, but the requested object is not a list "
            f"({_go_type_name(rt, is_list=False)})",
        )


# ================================================================================ YAML

_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NULL_TAG = "tag:yaml.org,2002:null"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_MERGE_TAG = "tag:yaml.org,2002:merge"

# Plain scalars go-yaml (YAML 1.1) reads as something other than a string.
_GO_YAML_WORDS = {
    **dict.fromkeys(["y", "Y", "yes", "Yes", "YES", "on", "On", "ON"], _BOOL_TAG),
    **dict.fromkeys(["true", "True", "TRUE", "false", "False", "FALSE"], _BOOL_TAG),
    **dict.fromkeys(["n", "N", "no", "No", "NO", "off", "Off", "OFF"], _BOOL_TAG),
    **dict.fromkeys(["", "~", "null", "Null", "NULL"], _NULL_TAG),
    **dict.fromkeys([".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"], _FLOAT_TAG),
    **dict.fromkeys(["-.inf", "-.Inf", "-.INF"], _FLOAT_TAG),
    "<<": _MERGE_TAG,
}
_YAML_STYLE_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_BASE60_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_GO_INT_LITERAL = re.compile(r"^[+-]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
_TIMESTAMP_FORMS = (
    re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$"),
    re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$"),
    re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2}) (\d{1,2}):(\d{1,2}):(\d{1,2})(\.\d+)?$"),
)
_DIGIT_HINTS = set("0123456789+-")
_PYTHON_FLOAT_ONLY = re.compile(r"^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$|^[-+]?(inf|infinity|nan)$", re.IGNORECASE)


def _is_go_timestamp(text: str) -> bool:
    for form in _TIMESTAMP_FORMS:
        match = form.match(text)
        if not match:
            continue
        parts = [int(g) for g in match.groups()[:6] if g is not None and g[:1].isdigit()]
        try:
            datetime(parts[0], parts[1], parts[2])
        except ValueError:
            return False
        return len(parts) == 3 or (parts[3] <= 23 and parts[4] <= 59 and parts[5] <= 59)
    return False


def go_yaml_tag(text: str) -> str:
    """The tag go-yaml v2 resolves a plain (unquoted) scalar to."""
    if text in _GO_YAML_WORDS:
        return _GO_YAML_WORDS[text]
    if not text:
        return _NULL_TAG
    first = text[0]
    if first == ".":
        # strconv.ParseFloat on a leading dot: ".5" is a float, ".foo" a string.
        if _PYTHON_FLOAT_ONLY.match(text) and _YAML_STYLE_FLOAT.match(text):
            return _FLOAT_TAG
        return _STR_TAG
    if first not in _DIGIT_HINTS:
        return _STR_TAG
    if _is_go_timestamp(text):
        return _TIMESTAMP_TAG
    plain = text.replace("_", "")
    if _GO_INT_LITERAL.match(plain):
        return _INT_TAG
    if _YAML_STYLE_FLOAT.match(plain):
        return _FLOAT_TAG
    if re.match(r"^-?0b[01]+$", plain):
        return _INT_TAG
    return _STR_TAG


def _go_yaml_key_less(a: str, b: str) -> bool:
    """go-yaml's map key order: letters after other characters, digit runs compared as numbers."""
    for i in range(min(len(a), len(b))):
        if a[i] == b[i]:
            continue
        a_letter, b_letter = a[i].isalpha(), b[i].isalpha()
        if a_letter and b_letter:
            return a[i] < b[i]
        if a_letter or b_letter:
            return b_letter
        a_num = b_num = 0
        if a[i] == "0" or b[i] == "0":
            j = i - 1
            while j >= 0 and unicodedata.category(a[j]) == "Nd":
                if a[j] != "0":
                    a_num = b_num = 1
                    break
                j -= 1
        a_end = i
        while a_end < len(a) and unicodedata.category(a[a_end]) == "Nd":
            a_num = a_num * 10 + ord(a[a_end]) - ord("0")
            a_end += 1
        b_end = i
        while b_end < len(b) and unicodedata.category(b[b_end]) == "Nd":
            b_num = b_num * 10 + ord(b[b_end]) - ord("0")
            b_end += 1
        if a_num != b_num:
            return a_num < b_num
        if a_end != b_end:
            return a_end < b_end
        return a[i] < b[i]
    return len(a) < len(b)


def _key_compare(a: tuple[str, Any], b: tuple[str, Any]) -> int:
    if _go_yaml_key_less(a[0], b[0]):
        return -1
    if _go_yaml_key_less(b[0], a[0]):
        return 1
    return 0


class _GoYAMLDumper(yaml.SafeDumper):
    """PyYAML emitting what go-yaml v2 emits for decoded JSON (the emitters share libyaml's logic)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return go_yaml_tag(str(value))
        resolved: str = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
        return resolved


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style: str | None = None
    if "\n" in value:
        style = "|"
    elif go_yaml_tag(value) != _STR_TAG or _BASE60_FLOAT.match(value):
        style = '"'
    return dumper.represent_scalar(_STR_TAG, value, style=style)


def _represent_float(dumper: yaml.SafeDumper, value: float) -> yaml.Node:
    number = _json_number(value)
    if isinstance(number, int):
        return dumper.represent_scalar(_INT_TAG, str(number))
    text = go_float(value)
    text = {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}.get(text, text)
    return dumper.represent_scalar(_FLOAT_TAG, text)


def _represent_dict(dumper: yaml.SafeDumper, value: JSON) -> yaml.Node:
    items = sorted(((str(k), v) for k, v in value.items()), key=cmp_to_key(_key_compare))
    return dumper.represent_mapping("tag:yaml.org,2002:map", items)


_GoYAMLDumper.add_representer(str, _represent_str)
_GoYAMLDumper.add_representer(float, _represent_float)
_GoYAMLDumper.add_representer(dict, _represent_dict)


def to_yaml(doc: Any) -> str:
    """Decoded JSON as kube-apiserver writes it in YAML (``sigs.k8s.io/yaml`` JSONToYAML).

    Keys sorted in go-yaml's order, strings double-quoted when they would read back as another
    type, multi-line strings as literal blocks, no anchors.
    """
    text: str = yaml.dump(
        doc, Dumper=_GoYAMLDumper, default_flow_style=False, sort_keys=False, allow_unicode=True
    )
    return text


def _wire_list(rt: ResourceType, listed: JSON) -> JSON:
    """A list shaped as its JSON answer: CR lists always carry ``continue``, built-in items no type."""
    meta = dict(_dict(listed.get("metadata")))
    items = _list(listed.get("items"))
    if rt.builtin:
        if not meta.get("continue"):
            meta.pop("continue", None)
        items = [{k: v for k, v in _dict(i).items() if k not in ("kind", "apiVersion")} for i in items]
    else:
        meta.setdefault("continue", "")
    return {
        "kind": listed.get("kind"),
        "apiVersion": listed.get("apiVersion"),
        "metadata": meta,
        "items": items,
    }


# ================================================================================ rendering


@dataclass(frozen=True)
class Rendered:
    """A response body in an alternate representation."""

    body: bytes
    content_type: str


def _encode(doc: Any, media_type: str) -> Rendered:
    if media_type == "application/yaml":
        return Rendered(to_yaml(doc).encode(), media_type)
    return Rendered(json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode(), "application/json")


def render_object(
    representation: Representation,
    rt: ResourceType,
    obj: JSON,
    query: dict[str, str],
    *,
    now: datetime | None = None,
) -> Rendered | None:
    """One object (GET/POST/PUT/PATCH/DELETE answer) in the negotiated representation.

    None means the object itself: answer with the resource's own encoding (JSON, or protobuf when
    that was negotiated). Raises the 406 for
    not-acceptable and for PartialObjectMetadataList of a single object, the 400 for a bad
    ``includeObject``.
    """
    kind = representation.kind
    if kind in (JSON_REPRESENTATION, PROTOBUF_REPRESENTATION):
        return None
    if kind == NOT_ACCEPTABLE:
        raise not_acceptable_error(
            watch=representation.watch, builtin=rt.builtin, protobuf=serves_protobuf(rt)
        )
    check_shape(representation, rt, is_list=False)
    if kind == YAML_REPRESENTATION:
        return _encode(obj, representation.media_type)
    if kind == TABLE:
        doc = table_for_object(rt, obj, query, group_version=representation.group_version, now=now)
    else:
        doc = partial_object_metadata(obj, group_version=representation.group_version)
    return _encode(doc, representation.media_type)


def render_list(
    representation: Representation,
    rt: ResourceType,
    listed: JSON,
    query: dict[str, str],
    *,
    now: datetime | None = None,
) -> Rendered | None:
    """A list (LIST or deletecollection answer) in the negotiated representation; None means the list
    itself, in JSON or (when negotiated) protobuf."""
    kind = representation.kind
    if kind in (JSON_REPRESENTATION, PROTOBUF_REPRESENTATION):
        return None
    if kind == NOT_ACCEPTABLE:
        raise not_acceptable_error(
            watch=representation.watch, builtin=rt.builtin, protobuf=serves_protobuf(rt)
        )
    check_shape(representation, rt, is_list=True)
    if kind == YAML_REPRESENTATION:
        return _encode(_wire_list(rt, listed), representation.media_type)
    if kind == TABLE:
        doc = table_for_list(rt, listed, query, group_version=representation.group_version, now=now)
    else:
        doc = partial_object_metadata_list(listed, group_version=representation.group_version)
    return _encode(doc, representation.media_type)


class WatchEventRenderer:
    """Turns each watch event's object into the negotiated representation, keeping per-stream state.

    Tables carry ``columnDefinitions`` only in the first event (bookmarks count: kube transforms them
    too). ERROR events and Status objects pass through. PartialObjectMetadataList is not an event shape,
    so kube falls back to the plain object there; so does this. Alternate objects are already in Go
    field order and must be written without re-sorting keys (see :attr:`alternate`).
    """

    def __init__(
        self,
        representation: Representation,
        rt: ResourceType,
        query: dict[str, str],
        *,
        now: datetime | None = None,
    ) -> None:
        self.representation = representation
        self.rt = rt
        self.query = query
        self._now = now
        self._columns_sent = False
        if representation.kind == TABLE:
            validate_table_options(query)

    @property
    def alternate(self) -> bool:
        """True when events carry Table or PartialObjectMetadata objects instead of the resource's own."""
        return self.representation.kind in (TABLE, PARTIAL_OBJECT_METADATA)

    def render(self, event_type: str, obj: JSON) -> JSON:
        if event_type == "ERROR" or obj.get("kind") == "Status":
            return obj
        kind = self.representation.kind
        group_version = self.representation.group_version
        if kind == TABLE:
            table = table_for_watch_event(
                self.rt,
                obj,
                self.query,
                include_columns=not self._columns_sent,
                group_version=group_version,
                now=self._now,
            )
            self._columns_sent = True
            return table
        if kind == PARTIAL_OBJECT_METADATA:
            partial = partial_object_metadata(obj, group_version=group_version)
            annotations = partial["metadata"].get("annotations")
            if isinstance(annotations, dict) and INITIAL_EVENTS_BLUEPRINT_ANNOTATION in annotations:
                annotations[INITIAL_EVENTS_BLUEPRINT_ANNOTATION] = partial_object_metadata_list_blueprint(
                    group_version=group_version
                )
            return partial
        return obj
