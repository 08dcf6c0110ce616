"""The resources kube-apiserver serves natively: what the rest of the server asks of a built-in type.

The per-type tables live in :mod:`apiserver.builtin_types` (Go struct layouts, validation,
defaulting, the list of types and what a fresh server holds), described in the language of
:mod:`apiserver.gostruct`. This module is the machinery the handlers use on top of them:

* looking a type up (:func:`struct_of`, :func:`name_rule`, :func:`builtin_subresources`,
  :func:`field_rules`);
* decoding a body into the Go struct's shape (:func:`decode_builtin`, with kube's error texts in
  :func:`decode_error_message`, :func:`patch_decode_error`, :func:`strategic_patch_decode_error`);
* writing an object back in struct order (:func:`order_builtin`, :func:`order_scale`);
* the fields a fieldSelector may use (:func:`field_selector_fields`).

The functions of the tables that the server calls (:func:`builtin_types`,
:func:`initial_objects`, :func:`prepare_for_create`, :func:`convert_event`, ...) are re-exported
here, so ``from apiserver import builtins`` is the one import the server needs.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from runtime.goformat import go_sprint
from runtime.jsoncodec import JSON

from .builtin_types.defaulting import (
    admission_refusal,
    admit_create,
    graceful_delete_period,
    prepare_for_create,
    prepare_for_update,
    shortened_grace_period,
)
from .builtin_types.events import (
    CohabitingResourceType,
    convert_event,
    core_event_shape,
    served_form,
    storage_form,
)
from .builtin_types.initial import apiserver_identity_lease, initial_objects, self_subject_review
from .builtin_types.structs import SCALE, order_json_schema
from .builtin_types.table import (
    ALL_VERBS,
    SUBRESOURCE_VERBS,
    Subresource,
    builtin_entry,
    builtin_types,
    storage_version_hash,
)
from .errors import StatusError, aggregate, invalid
from .gostruct import (
    DecodeError,
    Struct,
    decode_struct,
    format_time,
    meta_of,
    parse_go_time,
    reorder,
    rules_for,
    section,
)
from .objectmeta import FieldRules
from .registry import ResourceType

__all__ = [
    "ALL_VERBS",
    "SUBRESOURCE_VERBS",
    "CohabitingResourceType",
    "DecodeError",
    "Subresource",
    "admission_refusal",
    "admit_create",
    "apiserver_identity_lease",
    "builtin_subresources",
    "builtin_types",
    "convert_event",
    "decode_builtin",
    "decode_error_message",
    "field_rules",
    "field_selector_fields",
    "format_time",
    "graceful_delete_period",
    "initial_objects",
    "name_rule",
    "order_builtin",
    "order_scale",
    "parse_go_time",
    "patch_decode_error",
    "prepare_for_create",
    "prepare_for_update",
    "self_subject_review",
    "served_form",
    "shortened_grace_period",
    "storage_form",
    "storage_version_hash",
    "strategic_patch_decode_error",
    "struct_of",
    "supported_field_selectors",
]


def struct_of(rt: ResourceType) -> Struct | None:
    """The struct description behind a built-in type (None for custom resources)."""
    entry = builtin_entry(rt)
    return entry.spec if entry else None


def name_rule(rt: ResourceType) -> str:
    """Which naming rule the type's names follow (see :data:`~.objectmeta.NAME_RULES`)."""
    entry = builtin_entry(rt)
    return entry.name_rule if entry else "subdomain"


def builtin_subresources(rt: ResourceType) -> list[Subresource]:
    """The subresources discovery lists for a built-in type (kind "" means the parent's kind)."""
    entry = builtin_entry(rt)
    return list(entry.subresources) if entry else []


def field_rules(rt: ResourceType) -> FieldRules:
    """Field-ownership rules for managedFields bookkeeping, for built-ins and custom resources.

    Worked out once per resource type (every write asks; a CRD's rules come from walking its
    whole schema): remembered by identity of the type and of its schema.
    """
    from .objectmeta import rules_from_schema

    hit = _FIELD_RULES.get(id(rt))
    if hit is not None and hit[0] is rt and hit[1] is rt.schema:
        return hit[2]
    spec = struct_of(rt)
    rules = rules_for(spec) if spec is not None else rules_from_schema(rt.schema)
    if len(_FIELD_RULES) >= 1024:
        _FIELD_RULES.clear()
    _FIELD_RULES[id(rt)] = (rt, rt.schema, rules)
    return rules


# id(type) -> (the type, its schema, its rules); entries hold the type, so ids stay unique.
_FIELD_RULES: dict[int, tuple[ResourceType, JSON | None, FieldRules]] = {}


def decode_builtin(rt: ResourceType, body: JSON, *, strict: bool = False) -> tuple[JSON, list[str]]:
    """A request body as the Go struct would hold it: (object in struct order, warnings).

    Unknown fields are dropped and reported as ``unknown field "spec.bogus"`` warnings, or
    raise :class:`DecodeError` with ``strict``; time fields are parsed and normalised. The
    handler turns a DecodeError into 400 ``<Kind> in version "<v>" cannot be handled as a
    <Kind>: <message>`` (see :func:`decode_error_message`).
    """
    spec = struct_of(rt)
    if spec is None:
        return body, []
    obj, unknown = decode_struct(spec, body, strict=strict)
    if (rt.group, rt.resource) == ("", "secrets"):
        for key, value in (obj.get("data") or {}).items():
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise DecodeError(f"illegal base64 data at input byte {_bad_base64_offset(value)}") from exc
            del key
    if (rt.group, rt.resource) == ("apiextensions.k8s.io", "customresourcedefinitions"):
        for version in section(obj).get("versions") or []:
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            if isinstance(schema, dict):
                version["schema"]["openAPIV3Schema"] = order_json_schema(schema)
    return obj, [f'unknown field "{path}"' for path in unknown]


def _bad_base64_offset(value: str) -> int:
    allowed = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
    for i, ch in enumerate(value):
        if ch not in allowed:
            return i
    return len(value)


def decode_error_message(rt: ResourceType, message: str) -> str:
    """The 400 message for a body that cannot be decoded into the type."""
    return f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {message}'


def _sorted_deep(value: Any) -> Any:
    # a value json-patch parsed into a Go map comes back out with sorted keys, all the way down
    if isinstance(value, dict):
        return {k: _sorted_deep(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_deep(v) for v in value]
    return value


def _go_merge_patched(doc: JSON, patch_doc: JSON) -> JSON:
    """What evanphx/json-patch's MergePatch writes: every object the patch reached is re-encoded
    from a Go map (sorted keys), everything it did not reach keeps its original bytes (order)."""
    result = dict(doc)
    for key, value in patch_doc.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _go_merge_patched(result[key], value)
        else:
            result[key] = _sorted_deep(_without_nulls(value))
    return {k: result[k] for k in sorted(result)}


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _go_json_patched(patched: JSON, ops: Any) -> JSON:
    """The JSON-patch counterpart: containers on an operation's path were parsed (sorted keys)."""
    touched: set[tuple[str, ...]] = {()}
    for op in ops if isinstance(ops, list) else []:
        for pointer in (op.get("path"), op.get("from")) if isinstance(op, dict) else ():
            if not isinstance(pointer, str):
                continue
            tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
            for depth in range(len(tokens)):
                touched.add(tuple(tokens[:depth]))

    def walk(node: Any, at: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            keys = sorted(node) if at in touched else list(node)
            return {k: walk(node[k], (*at, k)) for k in keys}
        if isinstance(node, list):
            return [walk(v, (*at, str(i))) for i, v in enumerate(node)]
        return node

    out: JSON = walk(patched, ())
    return out


def _go_marshal(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    # Go's encoder escapes HTML-significant characters; they only ever occur inside strings
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def patch_decode_error(
    rt: ResourceType, current: JSON, patch_kind: str, patch_doc: Any, patched: JSON, message: str
) -> StatusError:
    """422 for a merge or JSON patch whose result cannot be decoded into a built-in's struct.

    kube-apiserver reports it with an empty kind and name and the whole patched document (as
    the patch library encoded it) as the invalid value of a field called ``patch``:
    `` "" is invalid: patch: Invalid value: "{...}": parsing time ...``. ``message`` is the
    decode error without the "cannot be handled as" prefix (:class:`DecodeError`'s message).
    """
    if patch_kind == "merge" and isinstance(patch_doc, dict):
        document = _go_merge_patched(order_builtin(rt, current), patch_doc)
    else:
        document = _go_json_patched(patched, patch_doc)
    problem = invalid("patch", _go_marshal(document), message)
    return StatusError(
        422, "Invalid", f' "" is invalid: {aggregate([problem])}', {"causes": [problem.cause()]}
    )


def strategic_patch_decode_error(patch_doc: Any, message: str) -> StatusError:
    """422 for a strategic merge patch whose result cannot be decoded into a built-in's struct.

    Like :func:`patch_decode_error`, but kube-apiserver quotes the *patch* here, as Go's ``%+v``
    prints the decoded map: `` "" is invalid: patch: Invalid value: "map[spec:map[renewTime:x]]": ...``.
    No recording shows this case; the wording follows kube-apiserver's strategic patcher.
    """
    problem = invalid("patch", go_sprint(patch_doc), message)
    return StatusError(
        422, "Invalid", f' "" is invalid: {aggregate([problem])}', {"causes": [problem.cause()]}
    )


def order_builtin(rt: ResourceType, obj: JSON, *, with_type: bool = True) -> JSON:
    """``obj`` with keys in Go struct order (top level, metadata and nested structs) for output.

    ``with_type=False`` drops kind/apiVersion, as items of a built-in list are written.
    """
    spec = struct_of(rt)
    obj = served_form(rt, obj)
    out = reorder(spec, obj) if spec is not None else dict(obj)
    if not with_type:
        out.pop("kind", None)
        out.pop("apiVersion", None)
    return out


def supported_field_selectors(rt: ResourceType) -> list[str]:
    """The field names a fieldSelector may use on this type."""
    return list(field_selector_fields(rt, {}))


def order_scale(obj: JSON) -> JSON:
    """An autoscaling/v1 Scale in struct order."""
    out: JSON = reorder(SCALE, obj)
    return out


# ------------------------------------------------------------------------- field selectors


def _bool_text(value: Any) -> str:
    return "true" if value is True else "false"


def field_selector_fields(rt: ResourceType, obj: JSON) -> dict[str, str]:
    """The fields a fieldSelector may name for this type, with this object's values."""
    meta = meta_of(obj)
    fields = {"metadata.name": str(meta.get("name") or "")}
    if rt.namespaced:
        fields["metadata.namespace"] = str(meta.get("namespace") or "")
    key = (rt.group, rt.resource)
    spec, status = section(obj), section(obj, "status")
    if key == ("", "namespaces"):
        fields["status.phase"] = str(status.get("phase") or "")
    elif key == ("", "nodes"):
        fields["spec.unschedulable"] = _bool_text(spec.get("unschedulable"))
    elif key == ("", "pods"):
        fields.update(
            {
                "spec.nodeName": str(spec.get("nodeName") or ""),
                "spec.restartPolicy": str(spec.get("restartPolicy") or ""),
                "spec.schedulerName": str(spec.get("schedulerName") or ""),
                "spec.serviceAccountName": str(spec.get("serviceAccountName") or ""),
                "spec.hostNetwork": _bool_text(spec.get("hostNetwork")),
                "status.phase": str(status.get("phase") or ""),
                "status.podIP": str(status.get("podIP") or ""),
                "status.nominatedNodeName": str(status.get("nominatedNodeName") or ""),
            }
        )
    elif key == ("", "secrets"):
        fields["type"] = str(obj.get("type") or "")
    elif key == ("", "services"):
        fields["spec.clusterIP"] = str(spec.get("clusterIP") or "")
        fields["spec.type"] = str(spec.get("type") or "")
    elif rt.resource == "events" and rt.group in ("", "events.k8s.io"):
        core = core_event_shape(obj)
        involved = section(core, "involvedObject")
        prefix = "involvedObject" if not rt.group else "regarding"
        for name in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
            fields[f"{prefix}.{name}"] = str(involved.get(name) or "")
        fields["reason"] = str(core.get("reason") or "")
        fields["reportingComponent" if not rt.group else "reportingController"] = str(
            core.get("reportingComponent") or ""
        )
        fields["source" if not rt.group else "deprecatedSource"] = str(
            section(core, "source").get("component") or ""
        )
        fields["type"] = str(core.get("type") or "")
    return fields
