"""The CRD structural-schema engine of the embedded API server.

Everything kube-apiserver does to a custom resource because of its CRD's ``openAPIV3Schema`` lives
here, as pure functions over decoded JSON:

* :func:`prune` drops fields the schema does not know and reports them the way the
  ``Warning: 299 - "unknown field \\"spec.bogus\\""`` headers and ``fieldValidation=Strict`` errors do;
* :func:`apply_defaults` drops non-nullable nulls and fills in ``default`` values;
* :func:`validate` is the OpenAPI validation, phrased exactly like kube-openapi + apiextensions
  (``spec.replicas in body should be greater than or equal to 1``), including update ratcheting;
* :func:`scale_accessor_errors` adds the causes the ``scale`` subresource contributes, and
  :func:`list_type_errors` the ``x-kubernetes-list-type`` set/map duplicates checked after them;
* :func:`validate_crd`, :func:`default_crd`, :func:`crd_to_resource_types`, :func:`crd_initial_status`
  and :func:`crd_established_status` cover the CustomResourceDefinition object itself.

Value typing follows Go's view of decoded JSON: an integral literal (``2``) is an int64, anything
with a fraction or exponent (``2.0``) is a float64. Python's ``json`` module makes the same split,
which is why ``replicas: 2.0`` passes the schema's integer check yet fails the scale accessor.
"""

from __future__ import annotations

import base64
import binascii
import copy
import datetime
import hashlib
import ipaddress
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from runtime.goformat import go_float, go_json_float, go_quote, go_sprint, go_strings
from runtime.jsoncodec import JSON

from .errors import (
    FieldError,
    GoRepr,
    forbidden,
    invalid,
    not_supported,
    required,
    type_invalid,
)
from .registry import ResourceType, ScaleSpec

# TypeMeta/ObjectMeta keys: never pruned at a resource root (the real root or an embedded resource).
_META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_INT32_MAX = 2**31 - 1
# Largest integer a float64 holds exactly; beyond it go-openapi stops calling a float "integral".
_MAX_JSON_INT = 2**53 - 1


# ------------------------------------------------------------------------------------------------
# Go formatting. Messages must match byte for byte, so values are printed the way fmt prints them.


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_go_number(value: Any) -> Any:
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


def _go_type_name(value: Any) -> str:
    """``%T`` of a decoded JSON value."""
    value = _as_go_number(value)
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


def _go_deep_equal(a: Any, b: Any) -> bool:
    """``reflect.DeepEqual`` on decoded JSON: an int64 never equals a float64, nor a bool an int."""
    a, b = _as_go_number(a), _as_go_number(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_go_deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_go_deep_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


# ------------------------------------------------------------------------------------------------
# Schema accessors. Schemas are the CRD's JSONSchemaProps as decoded JSON.


def _props(schema: JSON | None) -> JSON:
    if not schema:
        return {}
    props = schema.get("properties")
    return props if isinstance(props, dict) else {}


def _has_additional(schema: JSON | None) -> bool:
    return schema is not None and schema.get("additionalProperties") is not None


def _additional_schema(schema: JSON | None) -> JSON | None:
    """The additionalProperties schema; ``additionalProperties: true`` has none (like Go's nil Structural)."""
    if not schema:
        return None
    addl = schema.get("additionalProperties")
    return addl if isinstance(addl, dict) else None


def _items_schema(schema: JSON | None) -> JSON | None:
    if not schema:
        return None
    items = schema.get("items")
    return items if isinstance(items, dict) else None


def _truthy(schema: JSON | None, key: str) -> bool:
    return bool(schema) and schema is not None and schema.get(key) is True


def _schema_types(schema: JSON) -> list[str]:
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


def _effective_format(schema: JSON, types: list[str]) -> str:
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


# ------------------------------------------------------------------------------------------------
# Pruning


def prune(schema: JSON, obj: JSON) -> list[str]:
    """Remove, in place, fields the structural schema does not know.

    ``x-kubernetes-preserve-unknown-fields`` keeps unknown keys (known ones are still pruned below
    it), ``x-kubernetes-embedded-resource`` and the root keep apiVersion/kind/metadata, and
    ``additionalProperties`` admits every key. Returns the dotted paths of the pruned fields, sorted
    the way kube-apiserver sorts them for its warnings and strict-decoding errors.
    """
    root = dict(schema)
    root["x-kubernetes-embedded-resource"] = True
    pruned: list[str] = []
    _prune(obj, root, "", pruned)
    return sorted(pruned)


def _child_path(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def _prune(value: Any, schema: JSON | None, path: str, pruned: list[str]) -> None:
    if schema is not None and schema.get("x-kubernetes-preserve-unknown-fields") is True:
        _prune_known_only(value, schema, path, pruned)
        return
    if isinstance(value, dict):
        if schema is None:
            # A map where the schema says nothing about the contents: every key is unknown.
            for key in list(value):
                pruned.append(_child_path(path, key))
                del value[key]
            return
        props = _props(schema)
        embedded = _truthy(schema, "x-kubernetes-embedded-resource")
        for key in list(value):
            if embedded and key in _META_FIELDS:
                continue
            if key in props:
                _prune(value[key], props[key], _child_path(path, key), pruned)
            elif _has_additional(schema):
                _prune(value[key], _additional_schema(schema), _child_path(path, key), pruned)
            else:
                pruned.append(_child_path(path, key))
                del value[key]
    elif isinstance(value, list):
        items = _items_schema(schema)
        for index, item in enumerate(value):
            _prune(item, items, f"{path}[{index}]", pruned)


def _prune_known_only(value: Any, schema: JSON | None, path: str, pruned: list[str]) -> None:
    if schema is None:
        return
    if isinstance(value, dict):
        props = _props(schema)
        embedded = _truthy(schema, "x-kubernetes-embedded-resource")
        for key in list(value):
            if embedded and key in _META_FIELDS:
                continue
            if key in props:
                _prune(value[key], props[key], _child_path(path, key), pruned)
            elif _has_additional(schema):
                _prune(value[key], _additional_schema(schema), _child_path(path, key), pruned)
    elif isinstance(value, list):
        items = _items_schema(schema)
        for index, item in enumerate(value):
            _prune_known_only(item, items, f"{path}[{index}]", pruned)


def unknown_field_message(path: str) -> str:
    """The text of one unknown-field warning / strict-decoding cause: ``unknown field "spec.bogus"``."""
    return f"unknown field {go_quote(path)}"


# ------------------------------------------------------------------------------------------------
# Defaulting


def _field_schema(schema: JSON | None, key: str) -> JSON | None:
    props = _props(schema)
    if key in props:
        sub = props[key]
        return sub if isinstance(sub, dict) else None
    return _additional_schema(schema)


def drop_non_nullable_nulls(schema: JSON | None, value: Any) -> None:
    """Remove the ``null`` values of fields that are neither nullable nor defaulted."""
    if not schema:
        # Below a schemaless node (x-kubernetes-preserve-unknown-fields) nothing has a schema.
        return
    if isinstance(value, dict):
        for key in list(value):
            sub = _field_schema(schema, key)
            item = value[key]
            if item is None and sub is not None and not sub.get("nullable") and sub.get("default") is None:
                del value[key]
            else:
                drop_non_nullable_nulls(sub, item)
    elif isinstance(value, list):
        items = _items_schema(schema)
        for item in value:
            drop_non_nullable_nulls(items, item)


def apply_defaults(schema: JSON, obj: JSON) -> None:
    """CRD structural defaulting, in place.

    A default applies when the key is absent, or when it holds ``null`` and the field is not
    nullable (03-gadget-create-size-null). Non-nullable nulls without a default are dropped first,
    as the real decoder does, so they never reach validation.
    """
    drop_non_nullable_nulls(schema, obj)
    _default(obj, schema)


def _default(value: Any, schema: JSON | None) -> None:
    if schema is None:
        return
    if isinstance(value, dict):
        props = _props(schema)
        for key, prop in props.items():
            if not isinstance(prop, dict) or prop.get("default") is None:
                continue
            if key not in value or (value[key] is None and not prop.get("nullable")):
                value[key] = copy.deepcopy(prop["default"])
        addl = _additional_schema(schema)
        for key in list(value):
            if key in props:
                _default(value[key], props[key])
            elif addl is not None:
                if value[key] is None and not addl.get("nullable"):
                    value[key] = copy.deepcopy(addl.get("default"))
                _default(value[key], addl)
    elif isinstance(value, list):
        items = _items_schema(schema)
        for index in range(len(value)):
            if value[index] is None and items is not None and not items.get("nullable"):
                value[index] = copy.deepcopy(items.get("default"))
            _default(value[index], items)


# ------------------------------------------------------------------------------------------------
# Validation


@dataclass(frozen=True)
class _Problem:
    """One kube-openapi validation error before it becomes a FieldError.

    ``name`` is the openapi path used inside the message (``spec.replicas``, or ``replicas`` when the
    status schema is validated on its own); ``code`` selects the FieldError type the apiextensions
    translation picks for it.
    """

    code: str
    name: str
    value: Any
    message: str
    limit: int = -1
    supported: tuple[str, ...] = ()


_UNCORRELATED: Any = object()


def _in_body(name: str, text: str) -> str:
    return f"{name} in body {text}"


def _type_problem(name: str, expected: str, actual: str) -> _Problem:
    return _Problem("type", name, actual, _in_body(name, f"must be of type {expected}: {go_quote(actual)}"))


def _json_type(value: Any) -> tuple[str, str]:
    """OpenAPI type and format go-openapi infers for a decoded value."""
    if isinstance(value, bool):
        return "boolean", ""
    if isinstance(value, int):
        return "integer", "int64"
    if isinstance(value, float):
        return "number", "float64"
    if isinstance(value, str):
        return "string", ""
    if isinstance(value, list):
        return "array", ""
    return "object", ""


def _is_json_integer(value: float) -> bool:
    """go-openapi's IsFloat64AJSONInteger: integral, or within a 1e-9 relative error of one."""
    if math.isnan(value) or math.isinf(value) or value < -_MAX_JSON_INT or value > _MAX_JSON_INT:
        return False
    if value == math.trunc(value):
        return True
    if value < 0:
        # Go truncates negative floats to uint64 in a platform-specific way that never comes close.
        return False
    truncated = float(math.trunc(value))
    diff = abs(value - truncated)
    if truncated == 0:
        return False
    return diff / min(abs(value) + truncated, 1.7976931348623157e308) < 1e-9


@lru_cache(maxsize=512)
def _go_regexp(pattern: str) -> re.Pattern[str] | str:
    """Compile an RE2 pattern with Python's engine; returns the error text when it does not compile."""
    translated: list[str] = []
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            pair = pattern[index : index + 2]
            # RE2's \z is Python's \Z (end of text).
            translated.append("\\Z" if pair == "\\z" else pair)
            index += 2
            continue
        if in_class:
            if char == "]":
                in_class = False
        elif char == "[":
            in_class = True
        elif char == "$":
            # In RE2 (without the m flag) $ only matches at the very end; Python's also before a final \n.
            translated.append("\\Z")
            index += 1
            continue
        translated.append(char)
        index += 1
    try:
        return re.compile("".join(translated))
    except re.error as err:
        return str(err)


# -- string formats (the strfmt registry the CRD validator uses) ---------------------------------

_UUID = {
    "uuid": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
    "uuid3": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
    "uuid4": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
    "uuid5": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
}
_DATE_TIME_CLOCK = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\Z")
_MAC = re.compile(
    r"^(?:[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){5}|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){7}"
    r"|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){19}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){2,9})\Z"
)
_HOSTNAME_LABEL = re.compile(r"^[^\W_](?:[\w-]{0,61}[^\W_])?\Z")
_DURATION = re.compile(
    r"^(?:[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+|0"
    r"|[0-9]+\s*(?:ns|us|ms|s|m|h|d|w|sec|secs|second|seconds|min|mins|minute|minutes|hr|hrs|hour|hours"
    r"|day|days|wk|wks|week|weeks))\Z"
)
_RGB = re.compile(r"^rgb\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)\Z")


def _is_date(text: str) -> bool:
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _is_date_time(text: str) -> bool:
    parts = text.lower().split("t")
    if len(text) < 4 or len(parts) < 2 or not _is_date(parts[0]):
        return False
    match = _DATE_TIME_CLOCK.match(parts[1])
    if match is None:
        return False
    return match.group(1) <= "23" and match.group(2) <= "59" and match.group(3) <= "59"


def _is_ip(text: str, marker: str) -> bool:
    if marker not in text or "%" in text:
        return False
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _is_cidr(text: str) -> bool:
    if "/" not in text or "%" in text:
        return False
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True


def _is_hostname(text: str) -> bool:
    if not text or len(text) > 255:
        return False
    labels = text.rstrip(".").split(".") if text != "." else []
    return bool(labels) and all(_HOSTNAME_LABEL.match(label) for label in labels)


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _is_rgb(text: str) -> bool:
    match = _RGB.match(text)
    return match is not None and all(int(part) <= 255 for part in match.groups())


def _regex_check(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern)
    return lambda text: compiled.match(text) is not None


_FORMAT_CHECKS: dict[str, Callable[[str], bool]] = {
    "date": _is_date,
    "datetime": _is_date_time,
    "ipv4": lambda text: _is_ip(text, "."),
    "ipv6": lambda text: _is_ip(text, ":"),
    "cidr": _is_cidr,
    "mac": lambda text: bool(_MAC.match(text)),
    "hostname": _is_hostname,
    "email": lambda text: bool(re.fullmatch(r"[^@\s<>]+@[^@\s<>]+", text)),
    "uri": lambda text: bool(re.match(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|/)", text)),
    "byte": _is_base64,
    "duration": lambda text: bool(_DURATION.match(text)),
    "bsonobjectid": lambda text: bool(re.fullmatch(r"[0-9a-fA-F]{24}", text)),
    "hexcolor": lambda text: bool(re.fullmatch(r"#?(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})", text)),
    "rgbcolor": _is_rgb,
    "ssn": lambda text: bool(re.fullmatch(r"[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}", text)),
    **{name: _regex_check(rx) for name, rx in _UUID.items()},
}
# Names the strfmt registry knows; the ones without a check above (isbn, creditcard, password) always pass.
_KNOWN_FORMATS = frozenset(_FORMAT_CHECKS) | {"isbn", "isbn10", "isbn13", "creditcard", "password"}


def _enum_matches(value: Any, allowed: Any) -> bool:
    """go-openapi's enum test: convert the value to the enum entry's Go type, then DeepEqual."""
    value, allowed = _as_go_number(value), _as_go_number(allowed)
    if allowed is None or value is None:
        return False
    if isinstance(allowed, bool) or isinstance(value, bool):
        return isinstance(allowed, bool) and isinstance(value, bool) and allowed == value
    if isinstance(allowed, int):
        if isinstance(value, int):
            return value == allowed
        # float64 -> int64 conversion truncates, so 2.5 "equals" an enum entry 2.
        return isinstance(value, float) and math.isfinite(value) and math.trunc(value) == allowed
    if isinstance(allowed, float):
        return _is_number(value) and float(value) == allowed
    if isinstance(allowed, str):
        if isinstance(value, int):
            # Go converts an integer to the string of that code point.
            point = value if 0 <= value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF else 0xFFFD
            return chr(point) == allowed
        return isinstance(value, str) and value == allowed
    return _go_deep_equal(value, allowed)


class _Validator:
    """kube-openapi's SchemaValidator as apiextensions configures it, with update ratcheting.

    ``old`` is the correlated old value for ratcheting, or ``_UNCORRELATED``. When a node has errors
    but equals its old value, its errors are dropped (apiextensions' CRDValidationRatcheting).
    """

    def node(self, schema: JSON, value: Any, name: str, old: Any) -> list[_Problem]:
        problems = self._node(schema, value, name, old)
        if problems and old is not _UNCORRELATED and _go_deep_equal(old, value):
            return []
        return problems

    def _node(self, schema: JSON, value: Any, name: str, old: Any) -> list[_Problem]:
        value = _as_go_number(value)
        types = _schema_types(schema)
        fmt = _effective_format(schema, types)
        problems: list[_Problem] = []
        if value is None:
            if types and "null" not in types and not schema.get("nullable"):
                problems.append(_type_problem(name, ",".join(types), "null"))
            problems += self._enum(schema, value, name)
            return problems
        if types or fmt:
            problems += self._type(types, fmt, value, name)
        problems += self._junctors(schema, value, name, old)
        if isinstance(value, str):
            problems += self._string(schema, value, name)
            normalized = fmt.replace("-", "")
            if normalized in _KNOWN_FORMATS:
                check = _FORMAT_CHECKS.get(normalized)
                if check is not None and not check(value):
                    problems.append(
                        _Problem(
                            "type", name, value, _in_body(name, f"must be of type {fmt}: {go_quote(value)}")
                        )
                    )
        elif _is_number(value):
            problems += self._number(schema, value, name)
        elif isinstance(value, list):
            problems += self._slice(schema, value, name, old)
        problems += self._enum(schema, value, name)
        if isinstance(value, dict):
            problems += self._object(schema, value, name, old)
        return problems

    @staticmethod
    def _type(types: list[str], fmt: str, value: Any, name: str) -> list[_Problem]:
        actual, actual_format = _json_type(value)
        float_int = actual == "number" and "integer" in types and _is_json_integer(value)
        int_float = actual == "integer" and "number" in types
        string_or_slice = isinstance(value, str | list)
        if (
            not string_or_slice
            and fmt
            and not (actual in types or actual_format == fmt or float_int or int_float)
        ):
            return [_type_problem(name, fmt, actual_format)]
        if fmt and string_or_slice and not ("number" in types or "integer" in types):
            return []
        if not (actual in types or float_int or int_float):
            return [_type_problem(name, ",".join(types), actual)]
        return []

    def _junctors(self, schema: JSON, value: Any, name: str, old: Any) -> list[_Problem]:
        problems: list[_Problem] = []
        all_of = [s for s in schema.get("allOf") or [] if isinstance(s, dict)]
        if all_of:
            results = [self._node(sub, value, name, old) for sub in all_of]
            for result in results:
                problems += result
            passed = sum(1 for result in results if not result)
            if passed != len(results):
                suffix = ". None validated" if passed == 0 else ""
                problems.append(
                    _Problem("junctor", name, "", f"{name} must validate all the schemas (allOf){suffix}")
                )
        any_of = [s for s in schema.get("anyOf") or [] if isinstance(s, dict)]
        if any_of:
            results = [self._node(sub, value, name, old) for sub in any_of]
            if all(results):
                problems.append(
                    _Problem("junctor", name, "", f"{name} must validate at least one schema (anyOf)")
                )
                problems += _fewest(results)
        one_of = [s for s in schema.get("oneOf") or [] if isinstance(s, dict)]
        if one_of:
            results = [self._node(sub, value, name, old) for sub in one_of]
            passed = sum(1 for result in results if not result)
            if passed != 1:
                detail = "Found none valid" if passed == 0 else f"Found {passed} valid alternatives"
                problems.append(
                    _Problem(
                        "junctor", name, "", f"{name} must validate one and only one schema (oneOf). {detail}"
                    )
                )
                if passed == 0:
                    problems += _fewest(results)
        negated = schema.get("not")
        if isinstance(negated, dict) and not self._node(negated, value, name, old):
            problems.append(_Problem("junctor", name, "", f"{name} must not validate the schema (not)"))
        return problems

    @staticmethod
    def _string(schema: JSON, value: str, name: str) -> list[_Problem]:
        # The string validator stops at its first failure.
        max_length = schema.get("maxLength")
        if isinstance(max_length, int) and len(value) > max_length:
            return [
                _Problem(
                    "too_long",
                    name,
                    value,
                    _in_body(name, f"should be at most {max_length} chars long"),
                    max_length,
                )
            ]
        min_length = schema.get("minLength")
        if isinstance(min_length, int) and len(value) < min_length:
            return [
                _Problem(
                    "invalid", name, value, _in_body(name, f"should be at least {min_length} chars long")
                )
            ]
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and pattern:
            compiled = _go_regexp(pattern)
            if isinstance(compiled, str):
                return [
                    _Problem(
                        "invalid",
                        name,
                        value,
                        _in_body(name, f"should match '{pattern}, but pattern is invalid: {compiled}'"),
                    )
                ]
            if not compiled.search(value):
                return [_Problem("invalid", name, value, _in_body(name, f"should match '{pattern}'"))]
        return []

    @staticmethod
    def _number(schema: JSON, value: int | float, name: str) -> list[_Problem]:
        problems: list[_Problem] = []
        factor = schema.get("multipleOf")
        if isinstance(factor, int | float) and _is_number(factor):
            problems += _multiple_of(name, value, float(factor))
        minimum = schema.get("minimum")
        if isinstance(minimum, int | float) and _is_number(minimum):
            problems += _bound(name, value, float(minimum), bool(schema.get("exclusiveMinimum")), lower=True)
        maximum = schema.get("maximum")
        if isinstance(maximum, int | float) and _is_number(maximum):
            problems += _bound(name, value, float(maximum), bool(schema.get("exclusiveMaximum")), lower=False)
        return problems

    def _slice(self, schema: JSON, value: list[Any], name: str, old: Any) -> list[_Problem]:
        problems: list[_Problem] = []
        items = _items_schema(schema)
        if items is not None:
            for index, item in enumerate(value):
                old_item = _correlate_item(schema, value, index, old)
                problems += self.node(items, item, f"{name}[{index}]", old_item)
        min_items = schema.get("minItems")
        if isinstance(min_items, int) and len(value) < min_items:
            problems.append(
                _Problem(
                    "invalid", name, len(value), _in_body(name, f"should have at least {min_items} items")
                )
            )
        max_items = schema.get("maxItems")
        if isinstance(max_items, int) and len(value) > max_items:
            problems.append(
                _Problem(
                    "too_many",
                    name,
                    len(value),
                    _in_body(name, f"should have at most {max_items} items"),
                    max_items,
                )
            )
        if schema.get("uniqueItems") is True and _has_duplicates(value):
            problems.append(_Problem("invalid", name, "", _in_body(name, "shouldn't contain duplicates")))
        return problems

    @staticmethod
    def _enum(schema: JSON, value: Any, name: str) -> list[_Problem]:
        allowed = schema.get("enum")
        if not isinstance(allowed, list) or not allowed:
            return []
        if any(_enum_matches(value, entry) for entry in allowed):
            return []
        supported = tuple(entry if isinstance(entry, str) else go_json(entry) for entry in allowed)
        message = _in_body(name, f"should be one of {go_sprint(allowed)}")
        return [_Problem("enum", name, value, message, supported=supported)]

    def _object(self, schema: JSON, value: JSON, name: str, old: Any) -> list[_Problem]:
        count = len(value)
        min_props = schema.get("minProperties")
        if isinstance(min_props, int) and count < min_props:
            # The object validator returns at once on a property-count failure.
            return [
                _Problem(
                    "invalid", name, count, _in_body(name, f"should have at least {min_props} properties")
                )
            ]
        max_props = schema.get("maxProperties")
        if isinstance(max_props, int) and count > max_props:
            return [
                _Problem(
                    "too_many",
                    name,
                    count,
                    _in_body(name, f"should have at most {max_props} properties"),
                    max_props,
                )
            ]
        problems: list[_Problem] = []
        props = _props(schema)
        addl = schema.get("additionalProperties")
        if addl is False:
            for key in sorted(value):
                if key not in props:
                    problems.append(
                        _Problem("invalid", name, key, f"{name}.{key} in body is a forbidden property")
                    )
        elif isinstance(addl, dict):
            for key in sorted(value):
                if key not in props:
                    problems += self.node(addl, value[key], f"{name}.{key}", _old_child(old, key))
        for key in _property_order(props):
            if key in value and isinstance(props[key], dict):
                child = f"{name}.{key}" if name else key
                problems += self.node(props[key], value[key], child, _old_child(old, key))
        for key in schema.get("required") or []:
            if isinstance(key, str) and key not in value:
                problems.append(
                    _Problem("required", f"{name}.{key}", None, _in_body(f"{name}.{key}", "is required"))
                )
        return problems


def _fewest(results: list[list[_Problem]]) -> list[_Problem]:
    # go-openapi reports the failing branch that got furthest; the one with fewest problems is close.
    return min(results, key=len)


def _property_order(props: JSON) -> list[str]:
    """The order sibling properties are validated (and so reported) in.

    kube-openapi walks a Go map here: for the handful of properties a CRD level usually has, the
    order is a random rotation of the names in sorted order, so the real server's order is not
    stable across requests. We pick one deterministic order that reproduces the recorded
    transcripts (08-gadget-create-wrong-types lists spec.config after the scalar fields): scalar
    properties first, then object and array properties, each group sorted by name.
    """

    def nested(key: str) -> bool:
        sub = props[key]
        return isinstance(sub, dict) and sub.get("type") in ("object", "array")

    return sorted(props, key=lambda key: (nested(key), key))


def _old_child(old: Any, key: str) -> Any:
    if isinstance(old, dict) and key in old:
        return old[key]
    return _UNCORRELATED


def _correlate_item(schema: JSON, value: list[Any], index: int, old: Any) -> Any:
    """The old list item ratcheting compares item ``index`` with (by key for map lists, else by index)."""
    if not isinstance(old, list):
        return _UNCORRELATED
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "map":
        keys = [k for k in schema.get("x-kubernetes-list-map-keys") or [] if isinstance(k, str)]
        current = value[index]
        if not isinstance(current, dict):
            return _UNCORRELATED
        for candidate in old:
            if isinstance(candidate, dict) and all(
                _go_deep_equal(candidate.get(k), current.get(k)) for k in keys
            ):
                return candidate
        return _UNCORRELATED
    if list_type in ("set", "atomic"):
        return _UNCORRELATED
    return old[index] if index < len(old) else _UNCORRELATED


def _has_duplicates(values: list[Any]) -> bool:
    return any(_go_deep_equal(a, b) for i, a in enumerate(values) for b in values[i + 1 :])


def _number_text(value: int | float) -> str:
    return str(value) if isinstance(value, int) else go_float(value)


def _multiple_of(name: str, value: int | float, factor: float) -> list[_Problem]:
    if isinstance(value, int):
        int_factor = math.trunc(factor)
        if int_factor == 0:
            return [
                _Problem("invalid", name, 0, f"factor MultipleOf declared for {name} must be positive: 0")
            ]
        if value % int_factor != 0:
            return [_Problem("invalid", name, value, _in_body(name, f"should be a multiple of {int_factor}"))]
        return []
    if factor <= 0:
        return [
            _Problem(
                "invalid",
                name,
                factor,
                f"factor MultipleOf declared for {name} must be positive: {go_float(factor)}",
            )
        ]
    quotient = 1 / factor * value if factor < 1 else value / factor
    if not _is_json_integer(quotient):
        return [
            _Problem(
                "invalid",
                name,
                value,
                _in_body(name, f"should be a multiple of {go_float(factor)}"),
            )
        ]
    return []


def _bound(name: str, value: int | float, limit: float, exclusive: bool, *, lower: bool) -> list[_Problem]:
    # Integers are compared with the bound truncated to an integer, as go-openapi does.
    bound: int | float = math.trunc(limit) if isinstance(value, int) else limit
    if lower:
        failed = value <= bound if exclusive else value < bound
        relation = "greater than" if exclusive else "greater than or equal to"
    else:
        failed = value >= bound if exclusive else value > bound
        relation = "less than" if exclusive else "less than or equal to"
    if not failed:
        return []
    return [
        _Problem(
            "invalid",
            name,
            value,
            _in_body(name, f"should be {relation} {_number_text(bound)}"),
        )
    ]


def _problem_to_error(problem: _Problem, prefix: str) -> FieldError:
    if problem.code == "junctor":
        # These are plain errors in kube-openapi, so apiextensions reports them on the prefix path.
        return invalid(prefix, "", problem.message)
    path = prefix
    if problem.name and problem.name != ".":
        child = problem.name[1:] if problem.name.startswith(".") else problem.name
        path = f"{prefix}.{child}" if prefix else child
    if problem.code == "required":
        return required(path)
    if problem.code == "enum":
        return not_supported(path, problem.value, list(problem.supported))
    if problem.code == "too_long":
        return FieldError("TooLong", path, problem.value, f"may not be longer than {problem.limit}")
    if problem.code == "too_many":
        unit = "item" if problem.limit == 1 else "items"
        return FieldError("TooMany", path, problem.value, f"must have at most {problem.limit} {unit}")
    if problem.code == "type":
        return type_invalid(path, problem.value, problem.message)
    return invalid(path, problem.value, problem.message)


def _problems_to_errors(problems: list[_Problem], prefix: str) -> list[FieldError]:
    # kube-openapi keeps each distinct message once.
    seen: set[str] = set()
    errors: list[FieldError] = []
    for problem in problems:
        if problem.message in seen:
            continue
        seen.add(problem.message)
        errors.append(_problem_to_error(problem, prefix))
    return errors


def validate(
    schema: JSON, obj: JSON, *, root_is_status: bool = False, old: JSON | None = None
) -> list[FieldError]:
    """Validate a custom resource against its version's ``openAPIV3Schema``.

    Messages, field paths and order are kube-apiserver's: ``spec.replicas: Invalid value: 0:
    spec.replicas in body should be greater than or equal to 1``. Per field the checks run as
    kube-openapi chains them (type, allOf/anyOf/oneOf/not, string, format, number, array, enum,
    object), siblings in :func:`_property_order`, required fields after the properties.

    ``root_is_status=True`` is the ``/status`` flavour: only ``obj["status"]`` is validated, against
    ``properties.status``, and messages name fields relative to it (``replicas in body ...``) while
    the cause's field keeps the ``status.`` prefix. ``old`` (the stored object on updates) turns on
    ratcheting: errors inside a value that is unchanged from ``old`` are not reported.
    """
    validator = _Validator()
    if root_is_status:
        status_schema = _props(schema).get("status")
        if not isinstance(obj, dict) or "status" not in obj or not isinstance(status_schema, dict):
            return []
        old_status = old["status"] if isinstance(old, dict) and "status" in old else _UNCORRELATED
        return _problems_to_errors(validator.node(status_schema, obj["status"], "", old_status), "status")
    return _problems_to_errors(validator.node(schema, obj, "", _UNCORRELATED if old is None else old), "")


# ------------------------------------------------------------------------------------------------
# x-kubernetes-list-type invariants


def list_type_errors(schema: JSON, obj: JSON) -> list[FieldError]:
    """Duplicates in ``x-kubernetes-list-type: set`` lists and duplicate keys in ``map`` lists.

    The real strategy runs this after the schema and scale checks, so callers append these last:
    ``spec.ports[1]: Duplicate value: map[string]interface {}{"name":"http"}``.
    """
    return _list_type_object(schema, obj, "")


def _list_type_value(schema: JSON | None, value: Any, path: str) -> list[FieldError]:
    if schema is None:
        return []
    if isinstance(value, list):
        return _list_type_array(schema, value, path)
    if isinstance(value, dict):
        return _list_type_object(schema, value, path)
    return []


def _list_type_object(schema: JSON, value: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    props = _props(schema)
    addl = _additional_schema(schema)
    for key in sorted(value):
        sub = props.get(key) if props else addl
        if isinstance(sub, dict):
            errors += _list_type_value(sub, value[key], _child_path(path, key))
    return errors


def _second_occurrences(values: list[Any]) -> list[int]:
    """Index of the second occurrence of every value that occurs more than once."""
    indices: list[int] = []
    for index, value in enumerate(values):
        earlier = [v for v in values[:index] if _go_deep_equal(v, value)]
        if len(earlier) == 1:
            indices.append(index)
    return indices


def _list_type_array(schema: JSON, value: list[Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        errors += [FieldError("Duplicate", f"{path}[{i}]", value[i]) for i in _second_occurrences(value)]
    elif list_type == "map":
        errors += _list_map_errors(schema, value, path)
    items = _items_schema(schema)
    if items is not None:
        for index, item in enumerate(value):
            errors += _list_type_value(items, item, f"{path}[{index}]")
    return errors


def _list_map_errors(schema: JSON, value: list[Any], path: str) -> list[FieldError]:
    for index, item in enumerate(value):
        if item is not None and not isinstance(item, dict):
            return [invalid(f"{path}[{index}]", item, "must be an object for an array of list-type map")]
    key_names = [k for k in _list(schema.get("x-kubernetes-list-map-keys")) if isinstance(k, str)]
    key_schemas = _props(_items_schema(schema))
    keys: list[JSON] = []
    for item in value:
        key: JSON = {}
        for name in key_names:
            if isinstance(item, dict) and name in item:
                key[name] = item[name]
            elif _dict(key_schemas.get(name)).get("default") is not None:
                key[name] = key_schemas[name]["default"]
        keys.append(key)
    return [FieldError("Duplicate", f"{path}[{i}]", keys[i]) for i in _second_occurrences(keys)]


# ------------------------------------------------------------------------------------------------
# Scale subresource


def _json_path_fields(path: str) -> list[str]:
    return path[1:].split(".") if path.startswith(".") else path.split(".")


def _nested_field(obj: JSON, fields: list[str]) -> tuple[Any, bool, str | None]:
    """unstructured.NestedFieldNoCopy: (value, found, accessor error)."""
    current: Any = obj
    for index, name in enumerate(fields):
        if current is None:
            return None, False, None
        if not isinstance(current, dict):
            where = "." + ".".join(fields[: index + 1])
            return (
                None,
                False,
                f"{where} accessor error: {go_sprint(current)} is of the type {_go_type_name(current)}, "
                "expected map[string]interface{}",
            )
        if name not in current:
            return None, False, None
        current = current[name]
    return current, True, None


def _replicas_errors(path: str, obj: JSON) -> list[FieldError]:
    fields = _json_path_fields(path)
    value, found, error = _nested_field(obj, fields)
    if error is None and found:
        value = _as_go_number(value)
        if not isinstance(value, int) or isinstance(value, bool):
            error = (
                f"{'.' + '.'.join(fields)} accessor error: {go_sprint(value)} is of the type "
                f"{_go_type_name(value)}, expected int64"
            )
    if error is not None:
        return [invalid(path, 0, error)]
    if not found:
        return []
    if value < 0:
        return [invalid(path, value, "should be a non-negative integer")]
    if value > _INT32_MAX:
        return [invalid(path, value, f"should be less than or equal to {_INT32_MAX}")]
    return []


def scale_accessor_errors(
    scale: ScaleSpec | None, obj: JSON, *, include_spec: bool = True
) -> list[FieldError]:
    """The causes the scale subresource adds to a custom resource's validation.

    The replicas paths must hold int64 values (``.spec.replicas: Invalid value: 0: .spec.replicas
    accessor error: 2 is of the type float64, expected int64``), be non-negative and fit in int32;
    the label selector path must hold a string. The real server checks the spec path only for the
    main resource: pass ``include_spec=False`` when validating a ``/status`` write.
    """
    if scale is None:
        return []
    errors: list[FieldError] = []
    if include_spec:
        errors += _replicas_errors(scale.spec_replicas_path, obj)
    errors += _replicas_errors(scale.status_replicas_path, obj)
    if scale.label_selector_path:
        fields = _json_path_fields(scale.label_selector_path)
        value, found, error = _nested_field(obj, fields)
        if error is None and found and not isinstance(value, str):
            error = (
                f"{'.' + '.'.join(fields)} accessor error: {go_sprint(value)} is of the type "
                f"{_go_type_name(value)}, expected string"
            )
        if error is not None:
            errors.append(invalid(scale.label_selector_path, "", error))
    return errors


# ------------------------------------------------------------------------------------------------
# CustomResourceDefinition objects

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_PRINTER_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
_PRINTER_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
_OPENAPI_V3_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
_IMMUTABLE = "field is immutable"

# JSONSchemaProps in Go struct order: (Go field name, JSON key, kind). The kind says how the
# field serialises: "omitempty" drops zero values, "ptr" drops only null, "schema"/"schemas"/
# "schema_map" recurse, "json" is raw JSON (default, example, enum entries).
_SCHEMA_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("ID", "id", "omitempty"),
    ("Schema", "$schema", "omitempty"),
    ("Ref", "$ref", "ptr"),
    ("Description", "description", "omitempty"),
    ("Type", "type", "omitempty"),
    ("Format", "format", "omitempty"),
    ("Title", "title", "omitempty"),
    ("Default", "default", "json"),
    ("Maximum", "maximum", "float"),
    ("ExclusiveMaximum", "exclusiveMaximum", "omitempty"),
    ("Minimum", "minimum", "float"),
    ("ExclusiveMinimum", "exclusiveMinimum", "omitempty"),
    ("MaxLength", "maxLength", "ptr"),
    ("MinLength", "minLength", "ptr"),
    ("Pattern", "pattern", "omitempty"),
    ("MaxItems", "maxItems", "ptr"),
    ("MinItems", "minItems", "ptr"),
    ("UniqueItems", "uniqueItems", "omitempty"),
    ("MultipleOf", "multipleOf", "float"),
    ("Enum", "enum", "omitempty"),
    ("MaxProperties", "maxProperties", "ptr"),
    ("MinProperties", "minProperties", "ptr"),
    ("Required", "required", "omitempty"),
    ("Items", "items", "schema_or_array"),
    ("AllOf", "allOf", "schemas"),
    ("OneOf", "oneOf", "schemas"),
    ("AnyOf", "anyOf", "schemas"),
    ("Not", "not", "schema"),
    ("Properties", "properties", "schema_map"),
    ("AdditionalProperties", "additionalProperties", "schema_or_bool"),
    ("PatternProperties", "patternProperties", "schema_map"),
    ("Dependencies", "dependencies", "dependencies"),
    ("AdditionalItems", "additionalItems", "schema_or_bool"),
    ("Definitions", "definitions", "schema_map"),
    ("ExternalDocs", "externalDocs", "external_docs"),
    ("Example", "example", "json"),
    ("Nullable", "nullable", "omitempty"),
    ("XPreserveUnknownFields", "x-kubernetes-preserve-unknown-fields", "ptr"),
    ("XEmbeddedResource", "x-kubernetes-embedded-resource", "omitempty"),
    ("XIntOrString", "x-kubernetes-int-or-string", "omitempty"),
    ("XListMapKeys", "x-kubernetes-list-map-keys", "omitempty"),
    ("XListType", "x-kubernetes-list-type", "ptr"),
    ("XMapType", "x-kubernetes-map-type", "ptr"),
    ("XValidations", "x-kubernetes-validations", "rules"),
)
# Only these may be set at the root of a schema when the status subresource is enabled.
_ALLOWED_AT_STATUS_ROOT = [
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
]


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _is_zero(value: Any) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {}


def _ordered(source: JSON, fields: tuple[tuple[str, str], ...]) -> JSON:
    """Copy the known keys of ``source`` in Go struct order; ``omitempty`` ones only when non-zero."""
    out: JSON = {}
    for key, mode in fields:
        if key not in source:
            continue
        value = source[key]
        if mode == "omitempty" and _is_zero(value):
            continue
        if mode == "ptr" and value is None:
            continue
        out[key] = copy.deepcopy(value)
    return out


def _normalize_float(value: Any) -> Any:
    # Go keeps these as float64 and marshals integral ones without a fraction.
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def order_schema(schema: Any) -> Any:
    """A JSONSchemaProps as kube-apiserver writes it back: Go field order, empty optional fields gone."""
    if not isinstance(schema, dict):
        return copy.deepcopy(schema)
    out: JSON = {}
    for _, key, mode in _SCHEMA_FIELDS:
        if key not in schema:
            continue
        value = schema[key]
        if value is None or (
            mode in ("omitempty", "schemas", "schema_map", "dependencies", "rules") and _is_zero(value)
        ):
            continue
        if mode == "float":
            out[key] = _normalize_float(value)
        elif mode in ("schema", "schema_or_array", "schema_or_bool"):
            if isinstance(value, list):
                out[key] = [order_schema(v) for v in value]
            else:
                out[key] = value if isinstance(value, bool) else order_schema(value)
        elif mode == "schemas":
            out[key] = [order_schema(v) for v in _list(value)]
        elif mode == "schema_map":
            out[key] = {k: order_schema(v) for k, v in sorted(_dict(value).items())}
        elif mode == "dependencies":
            out[key] = {
                k: (copy.deepcopy(v) if isinstance(v, list) else order_schema(v))
                for k, v in sorted(_dict(value).items())
            }
        elif mode == "external_docs":
            out[key] = _ordered(_dict(value), (("description", "omitempty"), ("url", "omitempty")))
        elif mode == "rules":
            rule_fields = (
                ("rule", "plain"),
                ("message", "omitempty"),
                ("messageExpression", "omitempty"),
                ("reason", "ptr"),
                ("fieldPath", "omitempty"),
                ("optionalOldSelf", "ptr"),
            )
            out[key] = [_ordered(_dict(rule), rule_fields) for rule in _list(value)]
        else:
            out[key] = copy.deepcopy(value)
    return out


_NAMES_FIELDS = (
    ("plural", "plain"),
    ("singular", "omitempty"),
    ("shortNames", "omitempty"),
    ("kind", "plain"),
    ("listKind", "omitempty"),
    ("categories", "omitempty"),
)


def _ordered_names(names: JSON) -> JSON:
    # plural and kind have no omitempty: Go always writes them.
    return _ordered({"plural": "", "kind": "", **names}, _NAMES_FIELDS)


def _ordered_version(version: JSON) -> JSON:
    out: JSON = {"name": version.get("name", ""), "served": version.get("served", False)}
    out["storage"] = version.get("storage", False)
    if version.get("deprecated"):
        out["deprecated"] = True
    if version.get("deprecationWarning") is not None:
        out["deprecationWarning"] = version["deprecationWarning"]
    schema = version.get("schema")
    if isinstance(schema, dict):
        validation: JSON = {}
        if schema.get("openAPIV3Schema") is not None:
            validation["openAPIV3Schema"] = order_schema(schema["openAPIV3Schema"])
        out["schema"] = validation
    subresources = version.get("subresources")
    if isinstance(subresources, dict):
        ordered_sub: JSON = {}
        if subresources.get("status") is not None:
            ordered_sub["status"] = {}
        scale = subresources.get("scale")
        if isinstance(scale, dict):
            ordered_sub["scale"] = _ordered(
                scale,
                (
                    ("specReplicasPath", "plain"),
                    ("statusReplicasPath", "plain"),
                    ("labelSelectorPath", "ptr"),
                ),
            )
        out["subresources"] = ordered_sub
    columns = _list(version.get("additionalPrinterColumns"))
    if columns:
        column_fields = (
            ("name", "plain"),
            ("type", "plain"),
            ("format", "omitempty"),
            ("description", "omitempty"),
            ("priority", "omitempty"),
            ("jsonPath", "plain"),
        )
        out["additionalPrinterColumns"] = [_ordered(_dict(c), column_fields) for c in columns]
    selectable = _list(version.get("selectableFields"))
    if selectable:
        out["selectableFields"] = [_ordered(_dict(s), (("jsonPath", "plain"),)) for s in selectable]
    return out


def _ordered_conversion(conversion: JSON) -> JSON:
    out: JSON = {"strategy": conversion.get("strategy", "")}
    webhook = conversion.get("webhook")
    if isinstance(webhook, dict):
        ordered_webhook: JSON = {}
        client = webhook.get("clientConfig")
        if isinstance(client, dict):
            ordered_client = _ordered(client, (("url", "ptr"),))
            service = client.get("service")
            if isinstance(service, dict):
                ordered_service = _ordered(
                    service, (("namespace", "plain"), ("name", "plain"), ("path", "ptr"))
                )
                ordered_service["port"] = service["port"] if service.get("port") is not None else 443
                ordered_client["service"] = ordered_service
            if client.get("caBundle"):
                ordered_client["caBundle"] = client["caBundle"]
            ordered_webhook["clientConfig"] = ordered_client
        ordered_webhook["conversionReviewVersions"] = copy.deepcopy(webhook.get("conversionReviewVersions"))
        out["webhook"] = ordered_webhook
    return out


def default_crd(crd: JSON) -> JSON:
    """A copy of a CustomResourceDefinition with the v1 defaults applied and keys in Go struct order.

    Defaults: ``names.singular`` (lower-cased kind), ``names.listKind`` (kind + ``List``),
    ``conversion: {strategy: None}`` and port 443 for a conversion webhook service. Unknown keys
    inside ``spec`` are dropped, as decoding into the typed object does; metadata and status are
    copied as they are.
    """
    out: JSON = {}
    for key in ("kind", "apiVersion", "metadata"):
        if key in crd:
            out[key] = copy.deepcopy(crd[key])
    source = _dict(crd.get("spec"))
    names = dict(_dict(source.get("names")))
    kind = _str(names.get("kind"))
    if not names.get("singular"):
        names["singular"] = kind.lower()
    if not names.get("listKind") and kind:
        names["listKind"] = kind + "List"
    spec: JSON = {
        "group": source.get("group", ""),
        "names": _ordered_names(names),
        "scope": source.get("scope", ""),
    }
    spec["versions"] = [_ordered_version(_dict(v)) for v in _list(source.get("versions"))]
    conversion = source.get("conversion")
    spec["conversion"] = (
        _ordered_conversion(conversion) if isinstance(conversion, dict) else {"strategy": "None"}
    )
    if source.get("preserveUnknownFields"):
        spec["preserveUnknownFields"] = True
    out["spec"] = spec
    if "status" in crd:
        out["status"] = copy.deepcopy(crd["status"])
    return out


def _storage_version(crd: JSON) -> str:
    for version in _list(_dict(crd.get("spec")).get("versions")):
        if isinstance(version, dict) and version.get("storage") is True:
            return _str(version.get("name"))
    return ""


def crd_initial_status(crd: JSON) -> JSON:
    """``status`` of a CRD as the create response shows it: no conditions, empty accepted names."""
    storage = _storage_version(crd)
    return {
        "conditions": None,
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": [storage] if storage else None,
    }


def crd_established_status(crd: JSON, now: str) -> JSON:
    """``status`` once the naming controller accepted the names: NamesAccepted + Established, True.

    Conditions that are already True keep their ``lastTransitionTime``; ``now`` stamps new ones.
    """
    defaulted = default_crd(crd)
    status = _dict(crd.get("status"))
    previous = {
        _str(c.get("type")): c
        for c in _list(status.get("conditions"))
        if isinstance(c, dict) and c.get("status") == "True"
    }

    def condition(kind: str, reason: str, message: str) -> JSON:
        since = _str(previous.get(kind, {}).get("lastTransitionTime")) or now
        return {
            "type": kind,
            "status": "True",
            "lastTransitionTime": since,
            "reason": reason,
            "message": message,
        }

    stored = _list(status.get("storedVersions")) or [v for v in [_storage_version(crd)] if v] or None
    return {
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": copy.deepcopy(defaulted["spec"]["names"]),
        "storedVersions": copy.deepcopy(stored),
    }


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """Discovery's ``storageVersionHash``: base64 of the first 8 bytes of sha256("group/version/kind")."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


_KUBE_VERSION = re.compile(r"^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$")


def version_priority(name: str) -> tuple[int, int, int, str]:
    """Sort key for kube-aware version order: GA before beta before alpha, newer first, others last."""
    match = _KUBE_VERSION.match(name)
    if not match:
        return (3, 0, 0, name)
    major = int(match.group(1))
    if match.group(2) is None:
        return (0, -major, 0, "")
    stage = 1 if match.group(2) == "beta" else 2
    return (stage, -major, -int(match.group(3)), "")


def crd_to_resource_types(crd: JSON) -> list[ResourceType]:
    """One ResourceType per served version, highest-priority version first."""
    defaulted = default_crd(crd)
    spec = defaulted["spec"]
    names = spec["names"]
    group = _str(spec.get("group"))
    kind = _str(names.get("kind"))
    version_hash = storage_version_hash(group, _storage_version(defaulted), kind)
    served = [v for v in spec["versions"] if v.get("served") is True]
    types: list[ResourceType] = []
    for version in sorted(served, key=lambda v: version_priority(_str(v.get("name")))):
        subresources = _dict(version.get("subresources"))
        scale_source = subresources.get("scale")
        scale = None
        if isinstance(scale_source, dict):
            scale = ScaleSpec(
                spec_replicas_path=_str(scale_source.get("specReplicasPath")),
                status_replicas_path=_str(scale_source.get("statusReplicasPath")),
                label_selector_path=scale_source.get("labelSelectorPath") or None,
            )
        types.append(
            ResourceType(
                group=group,
                version=_str(version.get("name")),
                resource=_str(names.get("plural")),
                kind=kind,
                singular=_str(names.get("singular")),
                namespaced=spec.get("scope") == "Namespaced",
                list_kind=_str(names.get("listKind")),
                short_names=list(_list(names.get("shortNames"))),
                categories=list(_list(names.get("categories"))),
                has_status="status" in subresources,
                scale=scale,
                schema=_dict(version.get("schema")).get("openAPIV3Schema"),
                printer_columns=list(_list(version.get("additionalPrinterColumns"))),
                storage_version_hash=version_hash,
            )
        )
    return types


# -- CRD validation --------------------------------------------------------------------------


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    if not examples:
        return f"{message} (regex used for validation is '{pattern}')"
    text = message + " (e.g. "
    for index, example in enumerate(examples):
        if index:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{pattern}')"


def dns1123_subdomain_errors(value: str) -> list[str]:
    errors: list[str] = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not re.fullmatch(_DNS1123_SUBDOMAIN_FMT, value):
        errors.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character",
                _DNS1123_SUBDOMAIN_FMT,
                "example.com",
            )
        )
    return errors


def dns1035_label_errors(value: str) -> list[str]:
    errors: list[str] = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not re.fullmatch(_DNS1035_LABEL_FMT, value):
        errors.append(
            _regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character",
                _DNS1035_LABEL_FMT,
                "my-name",
                "abc-123",
            )
        )
    return errors


def _go_strings(values: list[Any] | None) -> GoRepr:
    """``%#v`` of a []string, as field.Invalid prints one."""
    return go_strings(None if values is None else [_str(v) for v in values])


def _go_struct(type_name: str) -> GoRepr:
    # Go would dump the whole struct with %#v; the field names stay out of reach here, so say which.
    return GoRepr(f"{type_name}{{...}}")


@dataclass
class _InternalSpec:
    """The internal (hub) shape of a v1 CRD spec.

    Converting v1 to the internal version hoists per-version schema, subresources and printer
    columns to the top level when every version has the same value; validation then reports them
    under ``spec.validation``, ``spec.subresources`` and ``spec.additionalPrinterColumns``.
    """

    versions: list[JSON]
    validation: JSON | None = None
    subresources: JSON | None = None
    columns: list[Any] = field(default_factory=list)
    hoisted_schema: bool = False
    hoisted_subresources: bool = False
    hoisted_columns: bool = False


def _semantic(value: Any) -> Any:
    return None if _is_zero(value) else value


def _internal_spec(spec: JSON) -> _InternalSpec:
    versions = [_dict(v) for v in _list(spec.get("versions"))]
    internal = _InternalSpec(versions=versions)
    if not versions:
        return internal

    def identical(key: str) -> bool:
        first = _semantic(versions[0].get(key))
        return all(_semantic(v.get(key)) == first for v in versions)

    if identical("schema"):
        internal.hoisted_schema = True
        internal.validation = _semantic(versions[0].get("schema"))
    if identical("subresources"):
        internal.hoisted_subresources = True
        internal.subresources = _semantic(versions[0].get("subresources"))
    if identical("additionalPrinterColumns"):
        internal.hoisted_columns = True
        internal.columns = _list(versions[0].get("additionalPrinterColumns"))
    return internal


def _status_enabled(subresources: Any) -> bool:
    return isinstance(subresources, dict) and subresources.get("status") is not None


def _schema_has(schema: Any, predicate: Callable[[JSON], bool]) -> bool:
    return any(predicate(node) for node in _walk_schema(schema))


def _walk_schema(schema: Any) -> Iterator[JSON]:
    if not isinstance(schema, dict):
        return
    yield schema
    items = schema.get("items")
    for sub in items if isinstance(items, list) else [items]:
        yield from _walk_schema(sub)
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in _list(schema.get(key)):
            yield from _walk_schema(sub)
    yield from _walk_schema(schema.get("not"))
    for key in ("properties", "patternProperties", "definitions", "dependencies"):
        for sub in _dict(schema.get(key)).values():
            yield from _walk_schema(sub)
    for key in ("additionalProperties", "additionalItems"):
        yield from _walk_schema(schema.get(key))


def _simple_json_path_errors(value: str, path: str) -> list[FieldError]:
    if not value:
        return [invalid(path, value, "must not be empty")]
    if not value.startswith("."):
        return [invalid(path, value, "must be a simple json path starting with .")]
    return []


def _names_errors(names: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in ("plural", "singular"):
        value = _str(names.get(key))
        if value and (problems := dns1035_label_errors(value)):
            errors.append(invalid(f"{path}.{key}", value, ",".join(problems)))
    for key in ("kind", "listKind"):
        value = _str(names.get(key))
        if value and (problems := dns1035_label_errors(value.lower())):
            errors.append(
                invalid(
                    f"{path}.{key}",
                    value,
                    "may have mixed case, but should otherwise match: " + ",".join(problems),
                )
            )
    for index, short in enumerate(_list(names.get("shortNames"))):
        if problems := dns1035_label_errors(_str(short)):
            errors.append(invalid(f"{path}.shortNames[{index}]", short, ",".join(problems)))
    kind = _str(names.get("kind"))
    if kind and kind == names.get("listKind"):
        errors.append(invalid(f"{path}.listKind", kind, "kind and listKind may not be the same"))
    for index, category in enumerate(_list(names.get("categories"))):
        if problems := dns1035_label_errors(_str(category)):
            errors.append(invalid(f"{path}.categories[{index}]", category, ",".join(problems)))
    return errors


def _subresources_errors(subresources: Any, path: str) -> list[FieldError]:
    scale = _dict(subresources).get("scale")
    if not isinstance(scale, dict):
        return []
    errors: list[FieldError] = []
    for key, prefix, where in (
        ("specReplicasPath", (".spec.",), "should be a json path under .spec"),
        ("statusReplicasPath", (".status.",), "should be a json path under .status"),
    ):
        value = _str(scale.get(key))
        if not value:
            errors.append(required(f"{path}.scale.{key}"))
        elif problems := _simple_json_path_errors(value, f"{path}.scale.{key}"):
            errors += problems
        elif not value.startswith(prefix):
            errors.append(invalid(f"{path}.scale.{key}", value, where))
    selector = _str(scale.get("labelSelectorPath"))
    if selector:
        if problems := _simple_json_path_errors(selector, f"{path}.scale.labelSelectorPath"):
            errors += problems
        elif not selector.startswith((".spec.", ".status.")):
            errors.append(
                invalid(
                    f"{path}.scale.labelSelectorPath",
                    selector,
                    "should be a json path under either .spec or .status",
                )
            )
    return errors


def _column_errors(column: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not _str(column.get("name")):
        errors.append(required(f"{path}.name"))
    kinds = "must be one of " + ",".join(_PRINTER_COLUMN_TYPES)
    kind = _str(column.get("type"))
    if not kind:
        errors.append(required(f"{path}.type", kinds))
    elif kind not in _PRINTER_COLUMN_TYPES:
        errors.append(invalid(f"{path}.type", kind, kinds))
    fmt = _str(column.get("format"))
    if fmt and fmt not in _PRINTER_COLUMN_FORMATS:
        errors.append(invalid(f"{path}.format", fmt, "must be one of " + ",".join(_PRINTER_COLUMN_FORMATS)))
    json_path = _str(column.get("jsonPath"))
    if not json_path:
        errors.append(required(f"{path}.JSONPath"))
    else:
        errors += _simple_json_path_errors(json_path, f"{path}.JSONPath")
    return errors


@dataclass(frozen=True)
class _SchemaContext:
    """What ValidateCustomResourceDefinitionOpenAPISchema carries down the schema tree."""

    allow_defaults: bool = True
    defaults_reason: str = ""
    inside_meta: bool = False

    def without_defaults(self, reason: str) -> _SchemaContext:
        return _SchemaContext(False, reason, self.inside_meta)

    def in_meta(self) -> _SchemaContext:
        return _SchemaContext(self.allow_defaults, self.defaults_reason, True)


def _openapi_node_errors(schema: JSON, path: str, ctx: _SchemaContext) -> list[FieldError]:
    errors: list[FieldError] = []
    kind = schema.get("type")
    if isinstance(kind, str) and kind and kind not in _OPENAPI_V3_TYPES:
        errors.append(not_supported(f"{path}.type", kind, list(_OPENAPI_V3_TYPES)))
    if schema.get("default") is not None and not ctx.allow_defaults:
        detail = "must not be set" + (f" {ctx.defaults_reason}" if ctx.defaults_reason else "")
        errors.append(forbidden(f"{path}.default", detail))
    if schema.get("id"):
        errors.append(forbidden(f"{path}.id", "id is not supported"))
    if schema.get("additionalItems") is not None:
        errors.append(forbidden(f"{path}.additionalItems", "additionalItems is not supported"))
    if schema.get("patternProperties"):
        errors.append(forbidden(f"{path}.patternProperties", "patternProperties is not supported"))
    if schema.get("definitions"):
        errors.append(forbidden(f"{path}.definitions", "definitions is not supported"))
    if schema.get("dependencies") is not None:
        errors.append(forbidden(f"{path}.dependencies", "dependencies is not supported"))
    if schema.get("$ref") is not None:
        errors.append(forbidden(f"{path}.$ref", "$ref is not supported"))
    if kind == "null":
        errors.append(forbidden(f"{path}.type", "type cannot be set to null, use nullable as an alternative"))
    if isinstance(schema.get("items"), list) and schema["items"]:
        errors.append(forbidden(f"{path}.items", "items must be a schema object and not an array"))
    if ctx.inside_meta and schema.get("x-kubernetes-embedded-resource") is True:
        errors.append(
            forbidden(f"{path}.x-kubernetes-embedded-resource", "must not be used inside of resource meta")
        )
    return errors


def _openapi_schema_errors(schema: Any, path: str, ctx: _SchemaContext, *, is_root: bool) -> list[FieldError]:
    """apiextensions' ValidateCustomResourceDefinitionOpenAPISchema (without the CEL compilation)."""
    if not isinstance(schema, dict):
        return []
    errors = _openapi_node_errors(schema, path, ctx)
    if schema.get("uniqueItems") is True:
        errors.append(
            forbidden(
                f"{path}.uniqueItems",
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    props = _props(schema)
    addl = schema.get("additionalProperties")
    if addl is not None:
        if props and (addl is False or isinstance(addl, dict)):
            errors.append(
                forbidden(
                    f"{path}.additionalProperties", "additionalProperties and properties are mutual exclusive"
                )
            )
        sub_ctx = (
            ctx.without_defaults("inside additionalProperties applying to object metadata")
            if ctx.inside_meta
            else ctx
        )
        errors += _openapi_schema_errors(addl, f"{path}.additionalProperties", sub_ctx, is_root=False)
    embedded = schema.get("x-kubernetes-embedded-resource") is True
    for key in sorted(props):
        sub_ctx = ctx
        if (is_root or embedded) and key in _META_FIELDS:
            sub_ctx = sub_ctx.in_meta()
            if is_root:
                sub_ctx = sub_ctx.without_defaults(f"in top-level {key}")
        errors += _openapi_schema_errors(props[key], f"{path}.properties[{key}]", sub_ctx, is_root=False)
    errors += _openapi_schema_errors(schema.get("not"), f"{path}.not", ctx, is_root=False)
    for junctor in ("allOf", "oneOf", "anyOf"):
        for index, sub in enumerate(_list(schema.get(junctor))):
            errors += _openapi_schema_errors(sub, f"{path}.{junctor}[{index}]", ctx, is_root=False)
    for key, sub in sorted(_dict(schema.get("definitions")).items()):
        errors += _openapi_schema_errors(sub, f"{path}.definitions[{key}]", ctx, is_root=False)
    items = schema.get("items")
    if isinstance(items, dict):
        errors += _openapi_schema_errors(items, f"{path}.items", ctx, is_root=False)
    elif isinstance(items, list):
        for index, sub in enumerate(items):
            errors += _openapi_schema_errors(sub, f"{path}.items[{index}]", ctx, is_root=False)
    for key, sub in sorted(_dict(schema.get("dependencies")).items()):
        errors += _openapi_schema_errors(sub, f"{path}.dependencies[{key}]", ctx, is_root=False)
    errors += _extension_errors(schema, path)
    return errors


def _extension_errors(schema: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    kind = _str(schema.get("type"))
    if schema.get("x-kubernetes-preserve-unknown-fields") is False:
        errors.append(
            invalid(f"{path}.x-kubernetes-preserve-unknown-fields", False, "must be true or undefined")
        )
    map_type = schema.get("x-kubernetes-map-type")
    if map_type is not None:
        if kind != "object":
            text = "must be object if x-kubernetes-map-type is specified"
            errors.append(required(f"{path}.type", text) if not kind else invalid(f"{path}.type", kind, text))
        if map_type not in ("atomic", "granular"):
            errors.append(not_supported(f"{path}.x-kubernetes-map-type", map_type, ["atomic", "granular"]))
    list_type = schema.get("x-kubernetes-list-type")
    items = _items_schema(schema)
    if list_type is not None and kind != "array":
        text = "must be array if x-kubernetes-list-type is specified"
        errors.append(required(f"{path}.type", text) if not kind else invalid(f"{path}.type", kind, text))
    elif list_type == "set" and items is not None:
        item_kind = items.get("type")
        if item_kind == "array" and items.get("x-kubernetes-list-type") not in (None, "atomic"):
            errors.append(
                invalid(
                    f"{path}.items.x-kubernetes-list-type",
                    items.get("x-kubernetes-list-type"),
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                )
            )
        if item_kind == "object" and items.get("x-kubernetes-map-type") != "atomic":
            errors.append(
                invalid(
                    f"{path}.items.x-kubernetes-map-type",
                    items.get("x-kubernetes-list-type"),
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                )
            )
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        errors.append(not_supported(f"{path}.x-kubernetes-list-type", list_type, ["atomic", "set", "map"]))
    map_keys = _list(schema.get("x-kubernetes-list-map-keys"))
    if map_keys:
        text = "must be map if x-kubernetes-list-map-keys is non-empty"
        if list_type is None:
            errors.append(required(f"{path}.x-kubernetes-list-type", text))
        elif list_type != "map":
            errors.append(invalid(f"{path}.x-kubernetes-list-type", list_type, text))
    if list_type == "map":
        errors += _map_list_errors(schema, path, map_keys)
    if list_type in ("set", "map") and items is not None:
        errors += _map_set_item_errors(items, path, list_type, map_keys)
    for index, rule in enumerate(_list(schema.get("x-kubernetes-validations"))):
        errors += _rule_errors(_dict(rule), f"{path}.x-kubernetes-validations[{index}]")
    return errors


def _map_list_errors(schema: JSON, path: str, map_keys: list[Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    if not map_keys:
        errors.append(
            required(
                f"{path}.x-kubernetes-list-map-keys", "must not be empty if x-kubernetes-list-type is map"
            )
        )
    raw_items = schema.get("items")
    if raw_items is None:
        errors.append(required(f"{path}.items", "must have a schema if x-kubernetes-list-type is map"))
        return errors
    if not isinstance(raw_items, dict):
        errors.append(
            invalid(
                f"{path}.items",
                _go_struct("&apiextensions.JSONSchemaPropsOrArray"),
                "must only have a single schema if x-kubernetes-list-type is map",
            )
        )
        return errors
    item_kind = _str(raw_items.get("type"))
    if item_kind != "object":
        errors.append(
            invalid(
                f"{path}.items.type",
                item_kind,
                "must be object if parent array's x-kubernetes-list-type is map",
            )
        )
        return errors
    seen: set[str] = set()
    item_props = _props(raw_items)
    for key in map_keys:
        key_text = _str(key)
        if key_text in item_props:
            if _dict(item_props[key_text]).get("type") in ("array", "object"):
                errors.append(
                    invalid(
                        f"{path}.items.properties[{key_text}].type",
                        item_kind,
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    )
                )
        else:
            errors.append(
                invalid(
                    f"{path}.x-kubernetes-list-map-keys",
                    _go_strings(map_keys),
                    "entries must all be names of item properties",
                )
            )
        if key_text in seen:
            errors.append(
                invalid(
                    f"{path}.x-kubernetes-list-map-keys",
                    _go_strings(map_keys),
                    "must not contain duplicate entries",
                )
            )
        seen.add(key_text)
    return errors


def _map_set_item_errors(items: JSON, path: str, list_type: str, map_keys: list[Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    if items.get("nullable") is True:
        errors.append(
            forbidden(
                f"{path}.items.nullable", "cannot be nullable when x-kubernetes-list-type is " + list_type
            )
        )
    if list_type == "map":
        required_keys = set(_list(items.get("required")))
        item_props = _props(items)
        for key in map_keys:
            prop = item_props.get(_str(key))
            if not isinstance(prop, dict):
                continue
            if key not in required_keys and prop.get("default") is None:
                errors.append(
                    required(
                        f"{path}.items.properties[{key}].default",
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a "
                        "required property",
                    )
                )
            if prop.get("nullable") is True:
                errors.append(
                    forbidden(
                        f"{path}.items.properties[{key}].nullable",
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    )
                )
    return errors


def _rule_errors(rule: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    text = _str(rule.get("rule")).strip()
    message = _str(rule.get("message"))
    if not text:
        errors.append(required(f"{path}.rule", "rule is not specified"))
    elif message and not message.strip():
        errors.append(invalid(f"{path}.message", message, "message must be non-empty if specified"))
    elif re.search(r"[\n\r]", message.strip()):
        errors.append(invalid(f"{path}.message", message, "message must not contain line breaks"))
    elif re.search(r"[\n\r]", text) and not message.strip():
        errors.append(required(f"{path}.message", "message must be specified if rule contains line breaks"))
    expression = _str(rule.get("messageExpression"))
    if expression and not expression.strip():
        errors.append(
            required(f"{path}.messageExpression", "messageExpression must be non-empty if specified")
        )
    reason = rule.get("reason")
    supported_reasons = [
        "FieldValueDuplicate",
        "FieldValueForbidden",
        "FieldValueInvalid",
        "FieldValueRequired",
    ]
    if reason is not None and reason not in supported_reasons:
        errors.append(not_supported(f"{path}.reason", reason, supported_reasons))
    field_path = _str(rule.get("fieldPath"))
    if field_path and not field_path.strip():
        errors.append(invalid(f"{path}.fieldPath", field_path, "fieldPath must be non-empty if specified"))
    if re.search(r"[\n\r]", field_path):
        errors.append(invalid(f"{path}.fieldPath", field_path, "fieldPath must not contain line breaks"))
    return errors


# -- structural schema invariants (sorted by message, as kube-apiserver sorts them) --------------

_NESTED_FORBIDDEN: tuple[tuple[str, str], ...] = (
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)
# Keys that make a root ``metadata`` schema say more than "name and generateName".
_STRUCTURAL_KEYS = frozenset(
    [
        "items",
        "properties",
        "additionalProperties",
        "description",
        "title",
        "nullable",
        "format",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "multipleOf",
        "enum",
        "maxProperties",
        "minProperties",
        "required",
        "allOf",
        "oneOf",
        "anyOf",
        "not",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
        "x-kubernetes-validations",
    ]
)


def validate_structural(schema: JSON, path: str) -> list[FieldError]:
    """Whether a schema is structural; the problems sorted by their text like the real server does."""
    errors = _structural_invariants(schema, "root", path) + _structural_completeness(schema, path)
    return sorted(errors, key=str)


def _is_int_or_string_any_of(any_of: Any) -> bool:
    return _list(any_of) == [{"type": "integer"}, {"type": "string"}]


def _structural_invariants(schema: JSON, level: str, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    kind = _str(schema.get("type"))
    items = schema.get("items")
    if kind == "array" and items is None:
        errors.append(required(f"{path}.items", "must be specified"))
    if isinstance(items, dict):
        errors += _structural_invariants(items, "item", f"{path}.items")
    props = _props(schema)
    for key, sub in props.items():
        if isinstance(sub, dict):
            errors += _structural_invariants(sub, "field", f"{path}.properties[{key}]")
    addl = schema.get("additionalProperties")
    if addl is not None:
        if level == "root":
            errors.append(forbidden(f"{path}.additionalProperties", "must not be used at the root"))
        if isinstance(addl, dict):
            errors += _structural_invariants(addl, "field", f"{path}.additionalProperties")
    int_or_string = schema.get("x-kubernetes-int-or-string") is True
    preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = schema.get("x-kubernetes-embedded-resource") is True
    if int_or_string and preserve:
        errors.append(
            invalid(
                f"{path}.x-kubernetes-preserve-unknown-fields",
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    if int_or_string and embedded:
        errors.append(
            invalid(
                f"{path}.x-kubernetes-embedded-resource",
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    skip_any_of = _is_int_or_string_any_of(schema.get("anyOf"))
    all_of = _list(schema.get("allOf"))
    skip_first_all_of_any_of = bool(all_of) and _is_int_or_string_any_of(_dict(all_of[0]).get("anyOf"))
    errors += _value_validation_errors(schema, skip_any_of, skip_first_all_of_any_of, path)
    if embedded and kind != "object":
        text = "must be object if x-kubernetes-embedded-resource is true"
        errors.append(required(f"{path}.type", text) if not kind else invalid(f"{path}.type", kind, text))
    elif not kind and not int_or_string and not preserve:
        text = {
            "root": "must not be empty at the root",
            "item": "must not be empty for specified array items",
            "field": "must not be empty for specified object fields",
        }[level]
        errors.append(required(f"{path}.type", text))
    if embedded and addl is not None:
        errors.append(
            forbidden(
                f"{path}.additionalProperties", "must not be used if x-kubernetes-embedded-resource is set"
            )
        )
    if level == "root" and kind and kind != "object":
        errors.append(invalid(f"{path}.type", kind, "must be object at the root"))
    check_meta = level == "root" or embedded
    for key in ("kind", "apiVersion"):
        if key in props and check_meta and _dict(props[key]).get("type") != "string":
            errors.append(
                invalid(
                    f"{path}.properties[{key}].type", _str(_dict(props[key]).get("type")), "must be string"
                )
            )
    if "metadata" in props:
        errors += _metadata_invariants(
            _dict(props["metadata"]), check_meta, level, f"{path}.properties[metadata]"
        )
    if embedded and not preserve and not props:
        errors.append(
            required(
                f"{path}.properties",
                "must not be empty if x-kubernetes-embedded-resource is true without "
                "x-kubernetes-preserve-unknown-fields",
            )
        )
    return errors


def _metadata_invariants(meta: JSON, check_meta: bool, level: str, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if check_meta and meta.get("type") != "object":
        errors.append(invalid(f"{path}.type", _str(meta.get("type")), "must be object"))
    if level == "root":
        remaining = {k: v for k, v in meta.items() if k in _STRUCTURAL_KEYS and not _is_zero(v)}
        props = _props(meta)
        if props and set(props) <= {"name", "generateName"}:
            remaining.pop("properties", None)
        if remaining:
            errors.append(
                forbidden(
                    path,
                    "must not specify anything other than name and generateName, "
                    "but metadata is implicitly specified",
                )
            )
    return errors


def _value_validation_errors(
    schema: JSON, skip_any_of: bool, skip_first_all_of_any_of: bool, path: str
) -> list[FieldError]:
    errors: list[FieldError] = []
    if not skip_any_of:
        for index, sub in enumerate(_list(schema.get("anyOf"))):
            errors += _nested_value_errors(_dict(sub), False, f"{path}.anyOf[{index}]")
    for index, sub in enumerate(_list(schema.get("allOf"))):
        errors += _nested_value_errors(
            _dict(sub), skip_first_all_of_any_of and index == 0, f"{path}.allOf[{index}]"
        )
    for index, sub in enumerate(_list(schema.get("oneOf"))):
        errors += _nested_value_errors(_dict(sub), False, f"{path}.oneOf[{index}]")
    if isinstance(schema.get("not"), dict):
        errors += _nested_value_errors(schema["not"], False, f"{path}.not")
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and pattern:
        compiled = _go_regexp(pattern)
        if isinstance(compiled, str):
            errors.append(
                invalid(
                    f"{path}.pattern", pattern, f"must be a valid regular expression, but isn't: {compiled}"
                )
            )
    return errors


def _nested_value_errors(schema: JSON, skip_any_of: bool, path: str) -> list[FieldError]:
    errors = _value_validation_errors(schema, skip_any_of, False, path)
    if isinstance(schema.get("items"), dict):
        errors += _nested_value_errors(schema["items"], False, f"{path}.items")
    for key, sub in _props(schema).items():
        errors += _nested_value_errors(_dict(sub), False, f"{path}.properties[{key}]")
    if schema.get("type"):
        errors.append(forbidden(f"{path}.type", "must be empty to be structural"))
    if schema.get("additionalProperties") is not None:
        errors.append(forbidden(f"{path}.additionalProperties", "must be undefined to be structural"))
    for key, text in _NESTED_FORBIDDEN:
        if not _is_zero(schema.get(key)):
            errors.append(forbidden(f"{path}.{key}", text))
    if "metadata" in _props(schema):
        errors.append(forbidden(f"{path}.properties[metadata]", "must not be specified in a nested context"))
    return errors


def _structural_completeness(schema: JSON, path: str) -> list[FieldError]:
    """Every field a value validation (allOf, ...) mentions must also be specified structurally."""
    errors: list[FieldError] = []
    for junctor in ("allOf", "anyOf", "oneOf"):
        for index, sub in enumerate(_list(schema.get(junctor))):
            errors += _nested_completeness(_dict(sub), schema, path, f"{path}.{junctor}[{index}]")
    if isinstance(schema.get("not"), dict):
        errors += _nested_completeness(schema["not"], schema, path, f"{path}.not")
    if isinstance(schema.get("items"), dict):
        errors += _structural_completeness(schema["items"], f"{path}.items")
    for key, sub in _props(schema).items():
        errors += _structural_completeness(_dict(sub), f"{path}.properties[{key}]")
    return errors


def _nested_completeness(nested: JSON, structural: JSON | None, s_path: str, v_path: str) -> list[FieldError]:
    if structural is None:
        return [required(s_path, f"because it is defined in {v_path}")]
    errors: list[FieldError] = []
    for junctor in ("allOf", "anyOf", "oneOf"):
        for index, sub in enumerate(_list(nested.get(junctor))):
            errors += _nested_completeness(_dict(sub), structural, s_path, f"{v_path}.{junctor}[{index}]")
    if isinstance(nested.get("not"), dict):
        errors += _nested_completeness(nested["not"], structural, s_path, f"{v_path}.not")
    if isinstance(nested.get("items"), dict):
        errors += _nested_completeness(
            nested["items"], _items_schema(structural), f"{s_path}.items", f"{v_path}.items"
        )
    structural_props = _props(structural)
    for key, sub in _props(nested).items():
        if key not in structural_props:
            errors.append(
                required(
                    f"{s_path}.properties[{key}]", f"because it is defined in {v_path}.properties[{key}]"
                )
            )
        else:
            errors += _nested_completeness(
                _dict(sub),
                _dict(structural_props[key]),
                f"{s_path}.properties[{key}]",
                f"{v_path}.properties[{key}]",
            )
    return errors


def _defaults_errors(schema: JSON, path: str, *, is_root: bool) -> list[FieldError]:
    """Every default must validate against its own schema and must survive pruning unchanged."""
    errors: list[FieldError] = []
    default = schema.get("default")
    if default is not None:
        problems = _problems_to_errors(
            _Validator().node(schema, default, "", _UNCORRELATED), f"{path}.default"
        )
        if problems:
            errors += problems
        else:
            pruned = copy.deepcopy(default)
            _prune(pruned, schema, "", [])
            if not _go_deep_equal(pruned, default):
                errors.append(invalid(f"{path}.default", pruned, "must not have unknown fields"))
    if isinstance(schema.get("items"), dict):
        errors += _defaults_errors(schema["items"], f"{path}.items", is_root=False)
    for key, sub in sorted(_props(schema).items()):
        if is_root and key in _META_FIELDS:
            # Defaults are forbidden in resource meta; that is reported by the OpenAPI checks.
            continue
        if isinstance(sub, dict):
            errors += _defaults_errors(sub, f"{path}.properties[{key}]", is_root=False)
    return errors


def _validation_errors(validation: Any, status_enabled: bool, path: str) -> list[FieldError]:
    """validateCustomResourceDefinitionValidation for one (per-version or hoisted) schema."""
    schema = _dict(validation).get("openAPIV3Schema")
    if not isinstance(schema, dict):
        return []
    errors: list[FieldError] = []
    root = f"{path}.openAPIV3Schema"
    if status_enabled:
        for go_name, key, _mode in _SCHEMA_FIELDS:
            if _is_zero(schema.get(key)):
                continue
            if go_name == "Type":
                if schema.get("type") != "object":
                    errors.append(
                        invalid(
                            f"{root}.type",
                            schema.get("type"),
                            'only "object" is allowed as the type at the root of the schema '
                            "if the status subresource is enabled",
                        )
                    )
                    break
                continue
            if go_name not in _ALLOWED_AT_STATUS_ROOT:
                allowed = "[" + " ".join(_ALLOWED_AT_STATUS_ROOT) + "]"
                errors.append(
                    invalid(
                        root,
                        _go_struct("apiextensions.JSONSchemaProps"),
                        f"only {allowed} fields are allowed at the root of the schema "
                        "if the status subresource is enabled",
                    )
                )
                break
    if schema.get("nullable") is True:
        errors.append(forbidden(f"{root}.nullable", "nullable cannot be true at the root"))
    structural = validate_structural(schema, root)
    errors += structural if structural else _defaults_errors(schema, root, is_root=True)
    errors += _openapi_schema_errors(schema, root, _SchemaContext(), is_root=True)
    return errors


def _deprecation_warning_errors(version: JSON, path: str) -> list[FieldError]:
    warning = version.get("deprecationWarning")
    if warning is None:
        return []
    if not version.get("deprecated"):
        return [invalid(f"{path}.deprecationWarning", warning, "can only be set for deprecated versions")]
    text = _str(warning)
    problems: list[str] = []
    if len(text.encode()) > 256:
        problems.append("must be <= 256 characters long")
    if not text:
        problems.append("must not be an empty string")
    for index, char in enumerate(text):
        if not char.isprintable():
            problems.append(
                "must only contain printable UTF-8 characters; "
                f"non-printable character found at index {index}"
            )
            break
    return [invalid(f"{path}.deprecationWarning", warning, problem) for problem in problems]


def _webhook_url_errors(url: str, path: str) -> list[FieldError]:
    match = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*):(//([^/?#]*))?([^?#]*)(\?[^#]*)?(#.*)?$", url)
    if not match:
        return [invalid(path, url, "url must be a valid URL")]
    errors: list[FieldError] = []
    if match.group(1) != "https":
        errors.append(invalid(path, url, "'https' is the only allowed URL scheme"))
    authority = match.group(3) or ""
    if not authority.rsplit("@", 1)[-1]:
        errors.append(invalid(path, url, "host must be specified"))
    if "@" in authority:
        errors.append(invalid(path, url, "user information is not permitted in the URL"))
    if match.group(6):
        errors.append(invalid(path, url, "fragments are not permitted in the URL"))
    if match.group(5):
        errors.append(invalid(path, url, "query parameters are not permitted in the URL"))
    return errors


def _conversion_errors(conversion: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    strategy = _str(conversion.get("strategy"))
    if not strategy:
        errors.append(required(f"{path}.strategy"))
    elif strategy not in ("None", "Webhook"):
        errors.append(not_supported(f"{path}.strategy", strategy, ["None", "Webhook"]))
    webhook = _dict(conversion.get("webhook"))
    client = webhook.get("clientConfig")
    versions = _list(webhook.get("conversionReviewVersions"))
    if strategy == "Webhook":
        if not isinstance(client, dict):
            errors.append(required(f"{path}.webhookClientConfig", "required when strategy is set to Webhook"))
        else:
            url, service = client.get("url"), client.get("service")
            if (url is None) == (service is None):
                errors.append(
                    required(f"{path}.webhookClientConfig", "exactly one of url or service is required")
                )
            elif url is not None:
                errors += _webhook_url_errors(_str(url), f"{path}.webhookClientConfig.url")
            else:
                errors += _webhook_service_errors(_dict(service), f"{path}.webhookClientConfig.service")
        errors += _review_versions_errors(versions, f"{path}.conversionReviewVersions")
    else:
        if isinstance(client, dict):
            errors.append(
                forbidden(
                    f"{path}.webhookClientConfig", "should not be set when strategy is not set to Webhook"
                )
            )
        if versions:
            errors.append(
                forbidden(
                    f"{path}.conversionReviewVersions",
                    "should not be set when strategy is not set to Webhook",
                )
            )
    return errors


def _webhook_service_errors(service: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not _str(service.get("name")):
        errors.append(required(f"{path}.name", "service name is required"))
    if not _str(service.get("namespace")):
        errors.append(required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        errors.append(
            invalid(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive")
        )
    svc_path = service.get("path")
    if isinstance(svc_path, str) and svc_path and not svc_path.startswith("/"):
        errors.append(invalid(f"{path}.path", svc_path, "must start with a '/'"))
    return errors


def _review_versions_errors(versions: list[Any], path: str) -> list[FieldError]:
    if not versions:
        return [required(path)]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, version in enumerate(versions):
        text = _str(version)
        if text in seen:
            errors.append(invalid(f"{path}[{index}]", text, "duplicate version"))
            continue
        seen.add(text)
        errors += [invalid(f"{path}[{index}]", text, problem) for problem in dns1035_label_errors(text)]
    if not seen & {"v1", "v1beta1"}:
        errors.append(invalid(path, _go_strings(versions), "must include at least one of v1, v1beta1"))
    return errors


def _spec_errors(spec: JSON, raw_spec: JSON) -> list[FieldError]:
    """validateCustomResourceDefinitionSpec on the internal form of a defaulted v1 spec."""
    errors: list[FieldError] = []
    group = _str(spec.get("group"))
    if not group:
        errors.append(required("spec.group"))
    elif problems := dns1123_subdomain_errors(group):
        errors.append(invalid("spec.group", group, ",".join(problems)))
    elif len(group.split(".")) < 2:
        errors.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = _str(spec.get("scope"))
    if not scope:
        errors.append(required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errors.append(not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))

    internal = _internal_spec(spec)
    has_top_schema = isinstance(_dict(internal.validation).get("openAPIV3Schema"), dict)
    if not has_top_schema:
        for index, version in enumerate(internal.versions):
            if internal.hoisted_schema or not isinstance(
                _dict(version.get("schema")).get("openAPIV3Schema"), dict
            ):
                errors.append(
                    required(f"spec.versions[{index}].schema.openAPIV3Schema", "schemas are required")
                )
    schemas = [_dict(v.get("schema")).get("openAPIV3Schema") for v in internal.versions]
    if raw_spec.get("preserveUnknownFields") is True and any(
        _schema_has(s, lambda node: node.get("default") is not None) for s in schemas
    ):
        errors.append(
            invalid(
                "spec.preserveUnknownFields", True, "must be false in order to use defaults in the schema"
            )
        )

    storage_count = 0
    names_seen: set[str] = set()
    unique = True
    any_status = _status_enabled(internal.subresources) or any(
        _status_enabled(v.get("subresources")) for v in internal.versions
    )
    for index, version in enumerate(internal.versions):
        name = _str(version.get("name"))
        storage_count += 1 if version.get("storage") is True else 0
        unique = unique and name not in names_seen
        names_seen.add(name)
        path = f"spec.versions[{index}]"
        if problems := dns1035_label_errors(name):
            errors.append(invalid(f"{path}.name", name, ",".join(problems)))
        subresources = internal.subresources if internal.hoisted_subresources else version.get("subresources")
        errors += _deprecation_warning_errors(version, path)
        if not internal.hoisted_schema:
            errors += _validation_errors(
                version.get("schema"), _status_enabled(subresources), f"{path}.schema"
            )
        if not internal.hoisted_subresources:
            errors += _subresources_errors(version.get("subresources"), f"{path}.subresources")
        if not internal.hoisted_columns:
            for col_index, column in enumerate(_list(version.get("additionalPrinterColumns"))):
                errors += _column_errors(_dict(column), f"{path}.additionalPrinterColumns[{col_index}]")
    versions_value = _go_struct("[]apiextensions.CustomResourceDefinitionVersion")
    if not unique:
        errors.append(invalid("spec.versions", versions_value, "must contain unique version names"))
    if storage_count != 1:
        errors.append(
            invalid(
                "spec.versions", versions_value, "must have exactly one version marked as storage version"
            )
        )
    if internal.versions:
        # The internal form also carries the first version's name as spec.version.
        first = _str(internal.versions[0].get("name"))
        if first and (problems := dns1035_label_errors(first)):
            errors.append(invalid("spec.version", first, ",".join(problems)))

    names = _dict(spec.get("names"))
    for key in ("plural", "singular", "kind", "listKind"):
        if not _str(names.get(key)):
            errors.append(required(f"spec.names.{key}"))
    errors += _names_errors(names, "spec.names")
    if internal.hoisted_schema:
        errors += _validation_errors(internal.validation, any_status, "spec.validation")
    if internal.hoisted_subresources:
        errors += _subresources_errors(internal.subresources, "spec.subresources")
    if internal.hoisted_columns:
        for col_index, column in enumerate(internal.columns):
            errors += _column_errors(_dict(column), f"spec.additionalPrinterColumns[{col_index}]")
    conversion = _dict(spec.get("conversion"))
    if conversion.get("strategy") not in (None, "None") and raw_spec.get("preserveUnknownFields") is True:
        errors.append(
            invalid(
                "spec.conversion.strategy",
                conversion.get("strategy"),
                "must be None if spec.preserveUnknownFields is true",
            )
        )
    errors += _conversion_errors(conversion, "spec.conversion")
    return errors


def _prepared_status(crd: JSON, old: JSON | None) -> JSON:
    """The status the strategy hands to validation: reset on create, carried over on update."""
    status = copy.deepcopy(_dict(old.get("status"))) if old is not None else {}
    stored = list(_list(status.get("storedVersions")))
    storage = _storage_version(crd)
    if storage and storage not in stored:
        stored.append(storage)
    status["storedVersions"] = stored or None
    return status


def _stored_versions_errors(stored: list[Any] | None, versions: list[JSON], path: str) -> list[FieldError]:
    if not stored:
        return [invalid(path, _go_strings(stored), "must have at least one stored version")]
    errors: list[FieldError] = []
    remaining = {_str(v): index for index, v in enumerate(stored)}
    for version in versions:
        name = _str(version.get("name"))
        if version.get("storage") is True and name not in remaining:
            errors.append(invalid(path, _go_strings(stored), "must have the storage version " + name))
        remaining.pop(name, None)
    for name, index in sorted(remaining.items(), key=lambda item: item[1]):
        errors.append(
            invalid(
                f"{path}[{index}]",
                name,
                f"missing from spec.versions; {name} was previously a storage version, and must remain in "
                f"spec.versions until a storage migration ensures no data remains persisted in {name} and "
                f"removes {name} from status.storedVersions",
            )
        )
    return errors


def _approval_state(annotations: JSON) -> tuple[str, str]:
    base = f'protected groups must have approval annotation "{_APPROVAL_ANNOTATION}"'
    pr = "see https://github.com/kubernetes/enhancements/pull/1111"
    if _APPROVAL_ANNOTATION not in annotations:
        return "missing", f"{base}, {pr}"
    value = _str(annotations.get(_APPROVAL_ANNOTATION))
    if value.startswith("unapproved"):
        return "bypassed", ""
    if re.match(r"^https?://[^/\s?#]+", value):
        return "approved", ""
    return "invalid", f'{base} with either a URL or a reason starting with "unapproved", {pr}'


def _api_approval_errors(crd: JSON, old: JSON | None) -> list[FieldError]:
    group = _str(_dict(crd.get("spec")).get("group"))
    protected = group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))
    if not protected:
        return []
    state, reason = _approval_state(_dict(_dict(crd.get("metadata")).get("annotations")))
    if old is not None and _approval_state(_dict(_dict(old.get("metadata")).get("annotations")))[0] == state:
        return []
    path = f"metadata.annotations[{_APPROVAL_ANNOTATION}]"
    if state == "missing":
        return [required(path, reason)]
    if state == "invalid":
        value = _dict(_dict(crd.get("metadata")).get("annotations")).get(_APPROVAL_ANNOTATION)
        return [invalid(path, value, reason)]
    return []


def validate_crd(crd: JSON, *, old: JSON | None = None) -> list[FieldError]:
    """Validate an apiextensions.k8s.io/v1 CustomResourceDefinition on create (or update, given ``old``).

    Runs on the defaulted object (:func:`default_crd`) with the status the strategy would set, and
    reports paths the way the real server does, including the internal form's hoisting of a
    schema shared by all versions to ``spec.validation.openAPIV3Schema`` (22-crd-create-nonstructural).
    Covers the name rule ``<plural>.<group>`` (create only; the rest of metadata is validated
    elsewhere), group/scope/names, versions and the single storage version, schemas (structural
    invariants, defaults, OpenAPI restrictions, list/map extensions), subresources, printer
    columns, conversion, stored versions, API approval for protected groups and, on update, the
    immutable fields. CEL rules are checked for shape only, not compiled.
    """
    defaulted = default_crd(crd)
    spec = defaulted["spec"]
    raw_spec = _dict(crd.get("spec"))
    errors: list[FieldError] = []
    if old is None:
        name = _str(_dict(crd.get("metadata")).get("name"))
        if name:
            problems = dns1123_subdomain_errors(name)
            if name != f"{_str(spec['names'].get('plural'))}.{_str(spec.get('group'))}":
                problems.append('must be spec.names.plural+"."+spec.group')
            errors += [invalid("metadata.name", name, problem) for problem in problems]
    errors += _spec_errors(spec, raw_spec)
    if old is not None:
        old_spec = default_crd(old)["spec"]
        if _is_established(old):
            for path, new_value, old_value in (
                ("spec.scope", spec.get("scope"), old_spec.get("scope")),
                ("spec.names.kind", spec["names"].get("kind"), old_spec["names"].get("kind")),
            ):
                if new_value != old_value:
                    errors.append(invalid(path, new_value, _IMMUTABLE))
        for path, new_value, old_value in (
            ("spec.group", spec.get("group"), old_spec.get("group")),
            ("spec.names.plural", spec["names"].get("plural"), old_spec["names"].get("plural")),
        ):
            if new_value != old_value:
                errors.append(invalid(path, new_value, _IMMUTABLE))
    status = _prepared_status(crd, old)
    errors += _names_errors(_dict(status.get("acceptedNames")), "status.acceptedNames")
    errors += _stored_versions_errors(
        status.get("storedVersions"), [_dict(v) for v in spec["versions"]], "status.storedVersions"
    )
    errors += _api_approval_errors(crd, old)
    if raw_spec.get("preserveUnknownFields") is True and not (
        old is not None and _dict(old.get("spec")).get("preserveUnknownFields") is True
    ):
        errors.append(
            invalid(
                "spec.preserveUnknownFields",
                True,
                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                "spec.versions[*].schema instead",
            )
        )
    return errors


def _is_established(crd: JSON) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") == "Established" and c.get("status") == "True"
        for c in _list(_dict(crd.get("status")).get("conditions"))
    )
