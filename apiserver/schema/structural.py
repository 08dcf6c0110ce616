"""The structural-schema invariants a CRD schema must satisfy, sorted by message as kube sorts them.

:func:`validate_structural` (types everywhere, no forbidden keywords under ``anyOf``/``allOf``/``not``,
a root ``metadata`` that says only name and generateName) and the checks on ``default`` values.
"""

from __future__ import annotations

import copy
from typing import Any

from runtime.jsoncodec import JSON

from ..errors import FieldError, forbidden, invalid, required
from .common import META_FIELDS, as_dict, as_list, as_str, go_deep_equal, is_zero, items_schema, properties_of
from .pruning import prune_value
from .validation import UNCORRELATED, Validator, go_regexp, problems_to_errors

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
    return as_list(any_of) == [{"type": "integer"}, {"type": "string"}]


def _structural_invariants(schema: JSON, level: str, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    kind = as_str(schema.get("type"))
    items = schema.get("items")
    if kind == "array" and items is None:
        errors.append(required(f"{path}.items", "must be specified"))
    if isinstance(items, dict):
        errors += _structural_invariants(items, "item", f"{path}.items")
    props = properties_of(schema)
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
    all_of = as_list(schema.get("allOf"))
    skip_first_all_of_any_of = bool(all_of) and _is_int_or_string_any_of(as_dict(all_of[0]).get("anyOf"))
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
        if key in props and check_meta and as_dict(props[key]).get("type") != "string":
            errors.append(
                invalid(
                    f"{path}.properties[{key}].type",
                    as_str(as_dict(props[key]).get("type")),
                    "must be string",
                )
            )
    if "metadata" in props:
        errors += _metadata_invariants(
            as_dict(props["metadata"]), check_meta, level, f"{path}.properties[metadata]"
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
        errors.append(invalid(f"{path}.type", as_str(meta.get("type")), "must be object"))
    if level == "root":
        remaining = {k: v for k, v in meta.items() if k in _STRUCTURAL_KEYS and not is_zero(v)}
        props = properties_of(meta)
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
        for index, sub in enumerate(as_list(schema.get("anyOf"))):
            errors += _nested_value_errors(as_dict(sub), False, f"{path}.anyOf[{index}]")
    for index, sub in enumerate(as_list(schema.get("allOf"))):
        errors += _nested_value_errors(
            as_dict(sub), skip_first_all_of_any_of and index == 0, f"{path}.allOf[{index}]"
        )
    for index, sub in enumerate(as_list(schema.get("oneOf"))):
        errors += _nested_value_errors(as_dict(sub), False, f"{path}.oneOf[{index}]")
    if isinstance(schema.get("not"), dict):
        errors += _nested_value_errors(schema["not"], False, f"{path}.not")
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and pattern:
        compiled = go_regexp(pattern)
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
    for key, sub in properties_of(schema).items():
        errors += _nested_value_errors(as_dict(sub), False, f"{path}.properties[{key}]")
    if schema.get("type"):
        errors.append(forbidden(f"{path}.type", "must be empty to be structural"))
    if schema.get("additionalProperties") is not None:
        errors.append(forbidden(f"{path}.additionalProperties", "must be undefined to be structural"))
    for key, text in _NESTED_FORBIDDEN:
        if not is_zero(schema.get(key)):
            errors.append(forbidden(f"{path}.{key}", text))
    if "metadata" in properties_of(schema):
        errors.append(forbidden(f"{path}.properties[metadata]", "must not be specified in a nested context"))
    return errors


def _structural_completeness(schema: JSON, path: str) -> list[FieldError]:
    """Every field a value validation (allOf, ...) mentions must also be specified structurally."""
    errors: list[FieldError] = []
    for junctor in ("allOf", "anyOf", "oneOf"):
        for index, sub in enumerate(as_list(schema.get(junctor))):
            errors += _nested_completeness(as_dict(sub), schema, path, f"{path}.{junctor}[{index}]")
    if isinstance(schema.get("not"), dict):
        errors += _nested_completeness(schema["not"], schema, path, f"{path}.not")
    if isinstance(schema.get("items"), dict):
        errors += _structural_completeness(schema["items"], f"{path}.items")
    for key, sub in properties_of(schema).items():
        errors += _structural_completeness(as_dict(sub), f"{path}.properties[{key}]")
    return errors


def _nested_completeness(nested: JSON, structural: JSON | None, s_path: str, v_path: str) -> list[FieldError]:
    if structural is None:
        return [required(s_path, f"because it is defined in {v_path}")]
    errors: list[FieldError] = []
    for junctor in ("allOf", "anyOf", "oneOf"):
        for index, sub in enumerate(as_list(nested.get(junctor))):
            errors += _nested_completeness(as_dict(sub), structural, s_path, f"{v_path}.{junctor}[{index}]")
    if isinstance(nested.get("not"), dict):
        errors += _nested_completeness(nested["not"], structural, s_path, f"{v_path}.not")
    if isinstance(nested.get("items"), dict):
        errors += _nested_completeness(
            nested["items"], items_schema(structural), f"{s_path}.items", f"{v_path}.items"
        )
    structural_props = properties_of(structural)
    for key, sub in properties_of(nested).items():
        if key not in structural_props:
            errors.append(
                required(
                    f"{s_path}.properties[{key}]", f"because it is defined in {v_path}.properties[{key}]"
                )
            )
        else:
            errors += _nested_completeness(
                as_dict(sub),
                as_dict(structural_props[key]),
                f"{s_path}.properties[{key}]",
                f"{v_path}.properties[{key}]",
            )
    return errors


def defaults_errors(schema: JSON, path: str, *, is_root: bool) -> list[FieldError]:
    """Every default must validate against its own schema and must survive pruning unchanged."""
    errors: list[FieldError] = []
    default = schema.get("default")
    if default is not None:
        problems = problems_to_errors(Validator().node(schema, default, "", UNCORRELATED), f"{path}.default")
        if problems:
            errors += problems
        else:
            pruned = copy.deepcopy(default)
            prune_value(pruned, schema, "", [])
            if not go_deep_equal(pruned, default):
                errors.append(invalid(f"{path}.default", pruned, "must not have unknown fields"))
    if isinstance(schema.get("items"), dict):
        errors += defaults_errors(schema["items"], f"{path}.items", is_root=False)
    for key, sub in sorted(properties_of(schema).items()):
        if is_root and key in META_FIELDS:
            # Defaults are forbidden in resource meta; that is reported by the OpenAPI checks.
            continue
        if isinstance(sub, dict):
            errors += defaults_errors(sub, f"{path}.properties[{key}]", is_root=False)
    return errors
