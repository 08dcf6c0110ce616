"""Pruning and defaulting of custom resources by their structural schema.

:func:`prune` drops and reports fields the schema does not know (``unknown field "spec.bogus"``);
:func:`apply_defaults` drops non-nullable nulls and fills in ``default`` values.
"""

from __future__ import annotations

import copy
from typing import Any

from runtime.goformat import go_quote
from runtime.jsoncodec import JSON

from .common import META_FIELDS, additional_schema, has_additional, items_schema, properties_of, truthy


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
    prune_value(obj, root, "", pruned)
    return sorted(pruned)


def child_path(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def prune_value(value: Any, schema: JSON | None, path: str, pruned: list[str]) -> None:
    if schema is not None and schema.get("x-kubernetes-preserve-unknown-fields") is True:
        _prune_known_only(value, schema, path, pruned)
        return
    if isinstance(value, dict):
        if schema is None:
            # A map where the schema says nothing about the contents: every key is unknown.
            for key in list(value):
                pruned.append(child_path(path, key))
                del value[key]
            return
        props = properties_of(schema)
        embedded = truthy(schema, "x-kubernetes-embedded-resource")
        for key in list(value):
            if embedded and key in META_FIELDS:
                continue
            if key in props:
                prune_value(value[key], props[key], child_path(path, key), pruned)
            elif has_additional(schema):
                prune_value(value[key], additional_schema(schema), child_path(path, key), pruned)
            else:
                pruned.append(child_path(path, key))
                del value[key]
    elif isinstance(value, list):
        items = items_schema(schema)
        for index, item in enumerate(value):
            prune_value(item, items, f"{path}[{index}]", pruned)


def _prune_known_only(value: Any, schema: JSON | None, path: str, pruned: list[str]) -> None:
    if schema is None:
        return
    if isinstance(value, dict):
        props = properties_of(schema)
        embedded = truthy(schema, "x-kubernetes-embedded-resource")
        for key in list(value):
            if embedded and key in META_FIELDS:
                continue
            if key in props:
                prune_value(value[key], props[key], child_path(path, key), pruned)
            elif has_additional(schema):
                prune_value(value[key], additional_schema(schema), child_path(path, key), pruned)
    elif isinstance(value, list):
        items = items_schema(schema)
        for index, item in enumerate(value):
            _prune_known_only(item, items, f"{path}[{index}]", pruned)


def unknown_field_message(path: str) -> str:
    """The text of one unknown-field warning / strict-decoding cause: ``unknown field "spec.bogus"``."""
    return f"unknown field {go_quote(path)}"


# ------------------------------------------------------------------------------------------------
# Defaulting


def _field_schema(schema: JSON | None, key: str) -> JSON | None:
    props = properties_of(schema)
    if key in props:
        sub = props[key]
        return sub if isinstance(sub, dict) else None
    return additional_schema(schema)


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
        items = items_schema(schema)
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
        props = properties_of(schema)
        for key, prop in props.items():
            if not isinstance(prop, dict) or prop.get("default") is None:
                continue
            if key not in value or (value[key] is None and not prop.get("nullable")):
                value[key] = copy.deepcopy(prop["default"])
        addl = additional_schema(schema)
        for key in list(value):
            if key in props:
                _default(value[key], props[key])
            elif addl is not None:
                if value[key] is None and not addl.get("nullable"):
                    value[key] = copy.deepcopy(addl.get("default"))
                _default(value[key], addl)
    elif isinstance(value, list):
        items = items_schema(schema)
        for index in range(len(value)):
            if value[index] is None and items is not None and not items.get("nullable"):
                value[index] = copy.deepcopy(items.get("default"))
            _default(value[index], items)
