"""The OpenAPI validation of custom resources, phrased exactly like kube-openapi and apiextensions.

:func:`validate` (``spec.replicas in body should be greater than or equal to 1``, with update
ratcheting), :func:`list_type_errors` (``x-kubernetes-list-type`` set and map duplicates) and
:func:`scale_accessor_errors` (what the ``scale`` subresource's paths contribute).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from runtime.goformat import go_float, go_quote, go_sprint
from runtime.jsoncodec import JSON

from ..errors import FieldError, invalid, not_supported, required, type_invalid
from ..registry import ScaleSpec
from .common import (
    INT32_MAX,
    MAX_JSON_INT,
    additional_schema,
    as_dict,
    as_go_number,
    as_list,
    effective_format,
    go_deep_equal,
    go_json,
    go_type_name,
    is_number,
    items_schema,
    properties_of,
    schema_types,
)
from .formats import FORMAT_CHECKS, KNOWN_FORMATS
from .pruning import child_path


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


UNCORRELATED: Any = object()


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
    if math.isnan(value) or math.isinf(value) or value < -MAX_JSON_INT or value > MAX_JSON_INT:
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
def go_regexp(pattern: str) -> re.Pattern[str] | str:
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


def _enum_matches(value: Any, allowed: Any) -> bool:
    """go-openapi's enum test: convert the value to the enum entry's Go type, then DeepEqual."""
    value, allowed = as_go_number(value), as_go_number(allowed)
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
        return is_number(value) and float(value) == allowed
    if isinstance(allowed, str):
        if isinstance(value, int):
            # Go converts an integer to the string of that code point.
            point = value if 0 <= value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF else 0xFFFD
            return chr(point) == allowed
        return isinstance(value, str) and value == allowed
    return go_deep_equal(value, allowed)


class Validator:
    """kube-openapi's SchemaValidator as apiextensions configures it, with update ratcheting.

    ``old`` is the correlated old value for ratcheting, or ``UNCORRELATED``. When a node has errors
    but equals its old value, its errors are dropped (apiextensions' CRDValidationRatcheting).
    """

    def node(self, schema: JSON, value: Any, name: str, old: Any) -> list[_Problem]:
        problems = self._node(schema, value, name, old)
        if problems and old is not UNCORRELATED and go_deep_equal(old, value):
            return []
        return problems

    def _node(self, schema: JSON, value: Any, name: str, old: Any) -> list[_Problem]:
        value = as_go_number(value)
        types = schema_types(schema)
        fmt = effective_format(schema, types)
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
            if normalized in KNOWN_FORMATS:
                check = FORMAT_CHECKS.get(normalized)
                if check is not None and not check(value):
                    problems.append(
                        _Problem(
                            "type", name, value, _in_body(name, f"must be of type {fmt}: {go_quote(value)}")
                        )
                    )
        elif is_number(value):
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
            compiled = go_regexp(pattern)
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
        if isinstance(factor, int | float) and is_number(factor):
            problems += _multiple_of(name, value, float(factor))
        minimum = schema.get("minimum")
        if isinstance(minimum, int | float) and is_number(minimum):
            problems += _bound(name, value, float(minimum), bool(schema.get("exclusiveMinimum")), lower=True)
        maximum = schema.get("maximum")
        if isinstance(maximum, int | float) and is_number(maximum):
            problems += _bound(name, value, float(maximum), bool(schema.get("exclusiveMaximum")), lower=False)
        return problems

    def _slice(self, schema: JSON, value: list[Any], name: str, old: Any) -> list[_Problem]:
        problems: list[_Problem] = []
        items = items_schema(schema)
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
        props = properties_of(schema)
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
    return UNCORRELATED


def _correlate_item(schema: JSON, value: list[Any], index: int, old: Any) -> Any:
    """The old list item ratcheting compares item ``index`` with (by key for map lists, else by index)."""
    if not isinstance(old, list):
        return UNCORRELATED
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "map":
        keys = [k for k in schema.get("x-kubernetes-list-map-keys") or [] if isinstance(k, str)]
        current = value[index]
        if not isinstance(current, dict):
            return UNCORRELATED
        for candidate in old:
            if isinstance(candidate, dict) and all(
                go_deep_equal(candidate.get(k), current.get(k)) for k in keys
            ):
                return candidate
        return UNCORRELATED
    if list_type in ("set", "atomic"):
        return UNCORRELATED
    return old[index] if index < len(old) else UNCORRELATED


def _has_duplicates(values: list[Any]) -> bool:
    return any(go_deep_equal(a, b) for i, a in enumerate(values) for b in values[i + 1 :])


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


def problems_to_errors(problems: list[_Problem], prefix: str) -> list[FieldError]:
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
    validator = Validator()
    if root_is_status:
        status_schema = properties_of(schema).get("status")
        if not isinstance(obj, dict) or "status" not in obj or not isinstance(status_schema, dict):
            return []
        old_status = old["status"] if isinstance(old, dict) and "status" in old else UNCORRELATED
        return problems_to_errors(validator.node(status_schema, obj["status"], "", old_status), "status")
    return problems_to_errors(validator.node(schema, obj, "", UNCORRELATED if old is None else old), "")


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
    props = properties_of(schema)
    addl = additional_schema(schema)
    for key in sorted(value):
        sub = props.get(key) if props else addl
        if isinstance(sub, dict):
            errors += _list_type_value(sub, value[key], child_path(path, key))
    return errors


def _second_occurrences(values: list[Any]) -> list[int]:
    """Index of the second occurrence of every value that occurs more than once."""
    indices: list[int] = []
    for index, value in enumerate(values):
        earlier = [v for v in values[:index] if go_deep_equal(v, value)]
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
    items = items_schema(schema)
    if items is not None:
        for index, item in enumerate(value):
            errors += _list_type_value(items, item, f"{path}[{index}]")
    return errors


def _list_map_errors(schema: JSON, value: list[Any], path: str) -> list[FieldError]:
    for index, item in enumerate(value):
        if item is not None and not isinstance(item, dict):
            return [invalid(f"{path}[{index}]", item, "must be an object for an array of list-type map")]
    key_names = [k for k in as_list(schema.get("x-kubernetes-list-map-keys")) if isinstance(k, str)]
    key_schemas = properties_of(items_schema(schema))
    keys: list[JSON] = []
    for item in value:
        key: JSON = {}
        for name in key_names:
            if isinstance(item, dict) and name in item:
                key[name] = item[name]
            elif as_dict(key_schemas.get(name)).get("default") is not None:
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
                f"{where} accessor error: {go_sprint(current)} is of the type {go_type_name(current)}, "
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
        value = as_go_number(value)
        if not isinstance(value, int) or isinstance(value, bool):
            error = (
                f"{'.' + '.'.join(fields)} accessor error: {go_sprint(value)} is of the type "
                f"{go_type_name(value)}, expected int64"
            )
    if error is not None:
        return [invalid(path, 0, error)]
    if not found:
        return []
    if value < 0:
        return [invalid(path, value, "should be a non-negative integer")]
    if value > INT32_MAX:
        return [invalid(path, value, f"should be less than or equal to {INT32_MAX}")]
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
                f"{go_type_name(value)}, expected string"
            )
        if error is not None:
            errors.append(invalid(scale.label_selector_path, "", error))
    return errors
