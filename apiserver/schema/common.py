"""Helpers every part of the schema engine shares: Go's typing of decoded JSON values and schema accessors.

Schemas are a CRD's JSONSchemaProps as decoded JSON; :func:`go_json` prints a value as Go's
``json.Marshal`` would (compact, sorted keys, Go float formatting).
"""

from __future__ import annotations

import json
from typing import Any

from runtime.goformat import go_json_float
from runtime.jsoncodec import JSON

# TypeMeta/ObjectMeta keys: never pruned at a resource root (the real root or an embedded resource).
META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
# Largest integer a float64 holds exactly; beyond it go-openapi stops calling a float "integral".
MAX_JSON_INT = 2**53 - 1


# ------------------------------------------------------------------------------------------------
# Go formatting. Messages must match byte for byte, so values are printed the way fmt prints them.


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def as_go_number(value: Any) -> Any:
    """A JSON integer outside int64 decodes to float64 in Go; mirror that before typing a value."""
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64_MIN <= value <= _INT64_MAX:
        return float(value)
    return value


def go_json(value: Any) -> str:
    """``json.Marshal`` of a decoded JSON value: compact, sorted map keys, Go float formatting."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_json_float(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{go_json(v)}" for k, v in sorted(value.items()))
            + "}"
        )
    return json.dumps(value)


def go_type_name(value: Any) -> str:
    """``%T`` of a decoded JSON value."""
    value = as_go_number(value)
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def go_deep_equal(a: Any, b: Any) -> bool:
    """``reflect.DeepEqual`` on decoded JSON: an int64 never equals a float64, nor a bool an int."""
    a, b = as_go_number(a), as_go_number(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(go_deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(go_deep_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


# ------------------------------------------------------------------------------------------------
# Schema accessors. Schemas are the CRD's JSONSchemaProps as decoded JSON.


def properties_of(schema: JSON | None) -> JSON:
    if not schema:
        return {}
    props = schema.get("properties")
    return props if isinstance(props, dict) else {}


def has_additional(schema: JSON | None) -> bool:
    return schema is not None and schema.get("additionalProperties") is not None


def additional_schema(schema: JSON | None) -> JSON | None:
    """The additionalProperties schema; ``additionalProperties: true`` has none (like Go's nil Structural)."""
    if not schema:
        return None
    addl = schema.get("additionalProperties")
    return addl if isinstance(addl, dict) else None


def items_schema(schema: JSON | None) -> JSON | None:
    if not schema:
        return None
    items = schema.get("items")
    return items if isinstance(items, dict) else None


def truthy(schema: JSON | None, key: str) -> bool:
    return bool(schema) and schema is not None and schema.get(key) is True


def schema_types(schema: JSON) -> list[str]:
    """The OpenAPI types the validator checks against (int-or-string is ``integer,string``)."""
    if schema.get("x-kubernetes-int-or-string") is True:
        return ["integer", "string"]
    kind = schema.get("type")
    return [kind] if isinstance(kind, str) and kind else []


# Formats a CRD may use (apiextensions strips every other one before building the validator).
_CRD_STRING_FORMATS = frozenset(
    [
        "bsonobjectid",
        "uri",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "cidr",
        "mac",
        "uuid",
        "uuid3",
        "uuid4",
        "uuid5",
        "isbn",
        "isbn10",
        "isbn13",
        "creditcard",
        "ssn",
        "hexcolor",
        "rgbcolor",
        "byte",
        "password",
        "date",
        "duration",
        "datetime",
        "quantity",
    ]
)


def effective_format(schema: JSON, types: list[str]) -> str:
    fmt = schema.get("format")
    if not isinstance(fmt, str) or not fmt:
        return ""
    kind = types[0] if len(types) == 1 else ""
    if kind in ("", "string"):
        return fmt if fmt.replace("-", "") in _CRD_STRING_FORMATS else ""
    if kind == "integer":
        return fmt if fmt in ("int32", "int64") else ""
    if kind == "number":
        return fmt if fmt in ("float", "double") else ""
    return ""


def as_dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def is_zero(value: Any) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {}
