"""A CRD's validation, node by node: names, subresources, printer columns, and each schema node.

The checks apiextensions runs on every node of ``openAPIV3Schema`` (types, formats, extensions,
list and map types, validation rules), shared by :mod:`~.crd_validation`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from runtime.goformat import go_strings
from runtime.jsoncodec import JSON

from ..errors import FieldError, GoRepr, forbidden, invalid, not_supported, required
from ..objectmeta import dns1035_label_errors
from .common import META_FIELDS, as_dict, as_list, as_str, is_zero, items_schema, properties_of
from .crd import OPENAPI_V3_TYPES, PRINTER_COLUMN_FORMATS, PRINTER_COLUMN_TYPES


def go_string_slice(values: list[Any] | None) -> GoRepr:
    """``%#v`` of a []string, as field.Invalid prints one."""
    return go_strings(None if values is None else [as_str(v) for v in values])


def go_struct(type_name: str) -> GoRepr:
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
    return None if is_zero(value) else value


def internal_spec(spec: JSON) -> _InternalSpec:
    versions = [as_dict(v) for v in as_list(spec.get("versions"))]
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
        internal.columns = as_list(versions[0].get("additionalPrinterColumns"))
    return internal


def is_status_enabled(subresources: Any) -> bool:
    return isinstance(subresources, dict) and subresources.get("status") is not None


def schema_has(schema: Any, predicate: Callable[[JSON], bool]) -> bool:
    return any(predicate(node) for node in _walk_schema(schema))


def _walk_schema(schema: Any) -> Iterator[JSON]:
    if not isinstance(schema, dict):
        return
    yield schema
    items = schema.get("items")
    for sub in items if isinstance(items, list) else [items]:
        yield from _walk_schema(sub)
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in as_list(schema.get(key)):
            yield from _walk_schema(sub)
    yield from _walk_schema(schema.get("not"))
    for key in ("properties", "patternProperties", "definitions", "dependencies"):
        for sub in as_dict(schema.get(key)).values():
            yield from _walk_schema(sub)
    for key in ("additionalProperties", "additionalItems"):
        yield from _walk_schema(schema.get(key))


def _simple_json_path_errors(value: str, path: str) -> list[FieldError]:
    if not value:
        return [invalid(path, value, "must not be empty")]
    if not value.startswith("."):
        return [invalid(path, value, "must be a simple json path starting with .")]
    return []


def names_errors(names: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in ("plural", "singular"):
        value = as_str(names.get(key))
        if value and (problems := dns1035_label_errors(value)):
            errors.append(invalid(f"{path}.{key}", value, ",".join(problems)))
    for key in ("kind", "listKind"):
        value = as_str(names.get(key))
        if value and (problems := dns1035_label_errors(value.lower())):
            errors.append(
                invalid(
                    f"{path}.{key}",
                    value,
                    "may have mixed case, but should otherwise match: " + ",".join(problems),
                )
            )
    for index, short in enumerate(as_list(names.get("shortNames"))):
        if problems := dns1035_label_errors(as_str(short)):
            errors.append(invalid(f"{path}.shortNames[{index}]", short, ",".join(problems)))
    kind = as_str(names.get("kind"))
    if kind and kind == names.get("listKind"):
        errors.append(invalid(f"{path}.listKind", kind, "kind and listKind may not be the same"))
    for index, category in enumerate(as_list(names.get("categories"))):
        if problems := dns1035_label_errors(as_str(category)):
            errors.append(invalid(f"{path}.categories[{index}]", category, ",".join(problems)))
    return errors


def subresources_errors(subresources: Any, path: str) -> list[FieldError]:
    scale = as_dict(subresources).get("scale")
    if not isinstance(scale, dict):
        return []
    errors: list[FieldError] = []
    for key, prefix, where in (
        ("specReplicasPath", (".spec.",), "should be a json path under .spec"),
        ("statusReplicasPath", (".status.",), "should be a json path under .status"),
    ):
        value = as_str(scale.get(key))
        if not value:
            errors.append(required(f"{path}.scale.{key}"))
        elif problems := _simple_json_path_errors(value, f"{path}.scale.{key}"):
            errors += problems
        elif not value.startswith(prefix):
            errors.append(invalid(f"{path}.scale.{key}", value, where))
    selector = as_str(scale.get("labelSelectorPath"))
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


def column_errors(column: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not as_str(column.get("name")):
        errors.append(required(f"{path}.name"))
    kinds = "must be one of " + ",".join(PRINTER_COLUMN_TYPES)
    kind = as_str(column.get("type"))
    if not kind:
        errors.append(required(f"{path}.type", kinds))
    elif kind not in PRINTER_COLUMN_TYPES:
        errors.append(invalid(f"{path}.type", kind, kinds))
    fmt = as_str(column.get("format"))
    if fmt and fmt not in PRINTER_COLUMN_FORMATS:
        errors.append(invalid(f"{path}.format", fmt, "must be one of " + ",".join(PRINTER_COLUMN_FORMATS)))
    json_path = as_str(column.get("jsonPath"))
    if not json_path:
        errors.append(required(f"{path}.JSONPath"))
    else:
        errors += _simple_json_path_errors(json_path, f"{path}.JSONPath")
    return errors


@dataclass(frozen=True)
class SchemaContext:
    """What ValidateCustomResourceDefinitionOpenAPISchema carries down the schema tree."""

    allow_defaults: bool = True
    defaults_reason: str = ""
    inside_meta: bool = False

    def without_defaults(self, reason: str) -> SchemaContext:
        return SchemaContext(False, reason, self.inside_meta)

    def in_meta(self) -> SchemaContext:
        return SchemaContext(self.allow_defaults, self.defaults_reason, True)


def _openapi_node_errors(schema: JSON, path: str, ctx: SchemaContext) -> list[FieldError]:
    errors: list[FieldError] = []
    kind = schema.get("type")
    if isinstance(kind, str) and kind and kind not in OPENAPI_V3_TYPES:
        errors.append(not_supported(f"{path}.type", kind, list(OPENAPI_V3_TYPES)))
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


def openapi_schema_errors(schema: Any, path: str, ctx: SchemaContext, *, is_root: bool) -> list[FieldError]:
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
    props = properties_of(schema)
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
        errors += openapi_schema_errors(addl, f"{path}.additionalProperties", sub_ctx, is_root=False)
    embedded = schema.get("x-kubernetes-embedded-resource") is True
    for key in sorted(props):
        sub_ctx = ctx
        if (is_root or embedded) and key in META_FIELDS:
            sub_ctx = sub_ctx.in_meta()
            if is_root:
                sub_ctx = sub_ctx.without_defaults(f"in top-level {key}")
        errors += openapi_schema_errors(props[key], f"{path}.properties[{key}]", sub_ctx, is_root=False)
    errors += openapi_schema_errors(schema.get("not"), f"{path}.not", ctx, is_root=False)
    for junctor in ("allOf", "oneOf", "anyOf"):
        for index, sub in enumerate(as_list(schema.get(junctor))):
            errors += openapi_schema_errors(sub, f"{path}.{junctor}[{index}]", ctx, is_root=False)
    for key, sub in sorted(as_dict(schema.get("definitions")).items()):
        errors += openapi_schema_errors(sub, f"{path}.definitions[{key}]", ctx, is_root=False)
    items = schema.get("items")
    if isinstance(items, dict):
        errors += openapi_schema_errors(items, f"{path}.items", ctx, is_root=False)
    elif isinstance(items, list):
        for index, sub in enumerate(items):
            errors += openapi_schema_errors(sub, f"{path}.items[{index}]", ctx, is_root=False)
    for key, sub in sorted(as_dict(schema.get("dependencies")).items()):
        errors += openapi_schema_errors(sub, f"{path}.dependencies[{key}]", ctx, is_root=False)
    errors += _extension_errors(schema, path)
    return errors


def _extension_errors(schema: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    kind = as_str(schema.get("type"))
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
    items = items_schema(schema)
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
    map_keys = as_list(schema.get("x-kubernetes-list-map-keys"))
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
    for index, rule in enumerate(as_list(schema.get("x-kubernetes-validations"))):
        errors += _rule_errors(as_dict(rule), f"{path}.x-kubernetes-validations[{index}]")
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
                go_struct("&apiextensions.JSONSchemaPropsOrArray"),
                "must only have a single schema if x-kubernetes-list-type is map",
            )
        )
        return errors
    item_kind = as_str(raw_items.get("type"))
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
    item_props = properties_of(raw_items)
    for key in map_keys:
        key_text = as_str(key)
        if key_text in item_props:
            if as_dict(item_props[key_text]).get("type") in ("array", "object"):
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
                    go_string_slice(map_keys),
                    "entries must all be names of item properties",
                )
            )
        if key_text in seen:
            errors.append(
                invalid(
                    f"{path}.x-kubernetes-list-map-keys",
                    go_string_slice(map_keys),
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
        required_keys = set(as_list(items.get("required")))
        item_props = properties_of(items)
        for key in map_keys:
            prop = item_props.get(as_str(key))
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
    text = as_str(rule.get("rule")).strip()
    message = as_str(rule.get("message"))
    if not text:
        errors.append(required(f"{path}.rule", "rule is not specified"))
    elif message and not message.strip():
        errors.append(invalid(f"{path}.message", message, "message must be non-empty if specified"))
    elif re.search(r"[\n\r]", message.strip()):
        errors.append(invalid(f"{path}.message", message, "message must not contain line breaks"))
    elif re.search(r"[\n\r]", text) and not message.strip():
        errors.append(required(f"{path}.message", "message must be specified if rule contains line breaks"))
    expression = as_str(rule.get("messageExpression"))
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
    field_path = as_str(rule.get("fieldPath"))
    if field_path and not field_path.strip():
        errors.append(invalid(f"{path}.fieldPath", field_path, "fieldPath must be non-empty if specified"))
    if re.search(r"[\n\r]", field_path):
        errors.append(invalid(f"{path}.fieldPath", field_path, "fieldPath must not contain line breaks"))
    return errors
