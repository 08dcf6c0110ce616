"""PATCH bodies: decoding them and applying JSON patch, merge patch and strategic merge patch.

kube-apiserver accepts four patch media types. Custom resources take JSON patch (RFC 6902),
JSON merge patch (RFC 7386) and server-side apply; built-ins also take strategic merge patch,
a merge patch whose lists merge by a key (containers by ``name``, conditions by ``type``) or as
sets (finalizers) instead of being replaced, steered by ``$patch``/``$retainKeys``/
``$setElementOrder``/``$deleteFromPrimitiveList`` directives.

The error answers copy the real server's, which differ per patch type:

* undecodable JSON patch or merge patch: 400 ``error decoding patch: <Go json error>``
  (09-gadget-patch-json-patch-invalid-json, 09-gadget-patch-merge-invalid-json);
* a JSON patch that cannot be applied (failed ``test``, missing path): 422 with the generic
  ``the server rejected our request due to an error in our request`` and ``details: {}`` --
  the real reason is dropped (09-gadget-patch-json-patch-*);
* undecodable strategic merge patch: 400 with Go's bare json error (no prefix); malformed
  directives: 400, 422 or a reason-less 500 depending on the error, as upstream maps them.

Application never mutates its inputs.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import jsonpointer

from runtime import jsoncodec
from runtime.goformat import go_quote, go_sprint
from runtime.jsoncodec import JSON

from .decode import (
    JSONSyntaxError,
    decode_json,
    go_type_name,
    json_kind,
    unsupported_media_type,
    yaml_to_json_value,
)
from .errors import StatusError, bad_request

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH_YAML = "application/apply-patch+yaml"

# Short names used by the handlers, keyed by media type.
PATCH_KINDS = {
    JSON_PATCH: "json",
    MERGE_PATCH: "merge",
    STRATEGIC_MERGE_PATCH: "strategic",
    APPLY_PATCH_YAML: "apply",
}

MAX_JSON_PATCH_OPERATIONS = 10000

_REJECTED = "the server rejected our request due to an error in our request"


def patch_media_types(*, strategic: bool) -> list[str]:
    """The PATCH media types a resource accepts, in the order the 415 message lists them."""
    if strategic:
        return [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH_YAML]
    return [JSON_PATCH, MERGE_PATCH, APPLY_PATCH_YAML]


def patch_kind(content_type: str | None, *, strategic: bool) -> str:
    """``json``, ``merge``, ``strategic`` or ``apply`` for a PATCH Content-Type, else 415.

    Like kube-apiserver, only parameters (``; charset=utf-8``) are dropped: the media type must
    match exactly, so a missing Content-Type, ``application/json`` and strategic merge patch on a
    custom resource are all 415 (09-gadget-patch-no-content-type, -content-type-json, -strategic-415).
    """
    media_type = content_type or ""
    cut = media_type.find(";")
    if cut > 0:
        media_type = media_type[:cut]
    accepted = patch_media_types(strategic=strategic)
    if media_type not in accepted:
        raise unsupported_media_type(accepted)
    return PATCH_KINDS[media_type]


def rejected_patch() -> StatusError:
    """The generic 422 a JSON patch that does not apply gets (the real cause is not reported)."""
    return StatusError(422, "Invalid", _REJECTED, {})


# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecodedPatch:
    """A decoded PATCH body and the strict-decoding problems found on the way.

    ``problems`` are what ``fieldValidation=Warn`` turns into warnings and ``Strict`` into a 400:
    repeated keys (``duplicate field "spec.replicas"``) and, for JSON patch, unknown operation
    members (``json patch unknown field "[0].foo"``).
    """

    value: Any
    problems: list[str] = field(default_factory=list)


def decode_patch(kind: str, raw: bytes) -> Any:
    """The patch document for ``kind`` (``json``/``merge``/``strategic``/``apply``), or a 400.

    A ``null`` merge or strategic patch decodes to ``{}``: Go reads it into a nil map and the
    patch changes nothing. A ``null`` JSON patch decodes to ``[]``.
    """
    return decode_patch_document(kind, raw).value


def decode_patch_document(kind: str, raw: bytes, *, field_validation: str = "Warn") -> DecodedPatch:
    """Like :func:`decode_patch` but also returns the strict-decoding problems.

    With ``field_validation="Ignore"`` kube-apiserver skips its strict pre-decode, which changes
    the wording of a few errors; that is reproduced too.
    """
    if kind == "apply":
        return DecodedPatch(_decode_apply(raw))
    strict = field_validation != "Ignore"
    try:
        value, duplicates = decode_json(raw)
    except JSONSyntaxError as exc:
        if kind == "strategic":
            raise bad_request(exc.go_message) from None
        if kind == "merge" and not strict:
            raise bad_request("Invalid JSON Patch") from None
        prefix = "error decoding patch: " if strict else ""
        raise bad_request(prefix + exc.go_message) from None
    if kind == "json":
        return _check_json_patch(value, duplicates, strict)
    if value is None:
        return DecodedPatch({}, [])
    if not isinstance(value, dict):
        message = f"json: cannot unmarshal {json_kind(value)} into Go value of type map[string]interface {{}}"
        if kind == "strategic":
            raise bad_request(message)
        raise bad_request("error decoding patch: " + message if strict else "Invalid JSON Patch")
    problems = [f"duplicate field {go_quote(path)}" for path in duplicates] if strict else []
    return DecodedPatch(value, problems)


_JSON_PATCH_OP_MEMBERS = ("op", "path", "from", "value")


def _not_an_op_list(value: Any) -> str:
    # Go's wording when a JSON patch body is not an array (its target type is handlers' own).
    return f"json: cannot unmarshal {json_kind(value)} into Go value of type []handlers.jsonPatchOp"


def _check_json_patch(value: Any, duplicates: list[str], strict: bool) -> DecodedPatch:
    """Type-check a JSON patch the way Go unmarshals it into ``[]handlers.jsonPatchOp``."""
    if value is None:
        return DecodedPatch([], [])
    if not isinstance(value, list):
        if not strict:
            raise bad_request(
                f"json: cannot unmarshal {json_kind(value)} into Go value of type jsonpatch.Patch"
            )
        raise bad_request(f"error decoding patch: {_not_an_op_list(value)}")
    if not strict:
        return DecodedPatch(value, [])
    problems = [f"json patch duplicate field {go_quote(path)}" for path in duplicates]
    for index, operation in enumerate(value):
        if operation is None:
            continue
        if not isinstance(operation, dict):
            raise bad_request(
                f"error decoding patch: json: cannot unmarshal {json_kind(operation)} "
                "into Go value of type handlers.jsonPatchOp"
            )
        for member, item in operation.items():
            if member not in _JSON_PATCH_OP_MEMBERS:
                problems.append(f"json patch unknown field {go_quote(f'[{index}].{member}')}")
            elif member != "value" and item is not None and not isinstance(item, str):
                raise bad_request(
                    f"error decoding patch: json: cannot unmarshal {json_kind(item)} "
                    f"into Go struct field jsonPatchOp.{member} of type string"
                )
    return DecodedPatch(value, problems)


def _decode_apply(raw: bytes) -> JSON:
    """A server-side apply body (YAML or JSON) as an object."""
    value = yaml_to_json_value(raw, lambda detail: bad_request(f"error decoding YAML: {detail}"))
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad_request(
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
            f"{json_kind(value)} into Go value of type map[string]interface {{}}"
        )
    return value


# --------------------------------------------------------------------------------------------
# JSON merge patch (RFC 7386)
# --------------------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 merge patch; returns a new document.

    ``null`` deletes a key. Matches the Go library kube-apiserver uses, including where it
    drops nulls nested in newly added values (they are pruned, except inside arrays and where a
    non-object replaces an object).
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: JSON = jsoncodec.clone(target) if isinstance(target, dict) else {}
    _merge_object(result, patch)
    return result


def _merge_object(doc: JSON, patch: JSON) -> None:
    for key, value in patch.items():
        if value is None:
            doc.pop(key, None)
            continue
        current = doc.get(key)
        if current is None:
            doc[key] = _without_nulls(value)
        elif isinstance(current, dict):
            if isinstance(value, dict):
                _merge_object(current, value)
            else:
                # The Go library returns the patch value untouched in this one case.
                doc[key] = copy.deepcopy(value)
        else:
            doc[key] = _without_nulls(value)


def _without_nulls(value: Any) -> Any:
    """A copy with null object members removed at every depth (array elements stay)."""
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


# --------------------------------------------------------------------------------------------
# JSON patch (RFC 6902)
# --------------------------------------------------------------------------------------------


def json_patch(target: Any, ops: Any) -> Any:
    """Apply an RFC 6902 JSON patch; returns a new document.

    Any operation that cannot be applied is the generic 422 (see :func:`rejected_patch`); a body
    that is not an array is the 400 Go's decoder gives; more than 10000 operations is a 413.
    """
    if ops is None:
        ops = []
    if not isinstance(ops, list):
        raise bad_request(f"error decoding patch: {_not_an_op_list(ops)}")
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise StatusError(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}",
        )
    try:
        return jsonpatch.JsonPatch(ops).apply(target)
    except (
        jsonpatch.JsonPatchException,
        jsonpointer.JsonPointerException,
        KeyError,
        IndexError,
        TypeError,
        ValueError,
        AttributeError,
    ):
        raise rejected_patch() from None


# --------------------------------------------------------------------------------------------
# Strategic merge patch
# --------------------------------------------------------------------------------------------

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
_SET_ELEMENT_ORDER = "$setElementOrder"

# apimachinery's mergepatch sentinel errors; the handler maps them to 400 / 422.
_ERR_PRIMITIVE_LIST = "invalid patch format of primitive list"
_ERR_RETAIN_KEYS = "invalid patch format of retainKeys"
_ERR_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"
_ERR_LIST_OF_LISTS = "lists of lists are not supported"


class _PatchFailure(Exception):
    """A strategic merge patch error; ``answer`` is how kube-apiserver reports it."""

    def __init__(self, message: str, answer: str = "internal") -> None:
        super().__init__(message)
        self.message = message
        self.answer = answer  # "bad_request", "rejected" or "internal"

    def status(self) -> StatusError:
        if self.answer == "bad_request":
            return bad_request(self.message)
        if self.answer == "rejected":
            return rejected_patch()
        # Errors the handler does not translate reach the client as a 500 with no reason.
        return StatusError(500, None, self.message)


def strategic_merge_patch(target: JSON, patch: JSON, merge_keys: Mapping[str, str]) -> JSON:
    """Apply a strategic merge patch to a built-in object; returns a new object.

    ``merge_keys`` maps the dotted JSON path of each list that merges instead of being replaced
    (list items are written ``[]``: ``spec.containers[].ports``) to its merge key; ``""`` marks
    a list of scalars merged as a set (``metadata.finalizers``). Other lists are replaced.
    Maps merge recursively and ``null`` deletes. Directives ``$patch: replace|delete``,
    ``$retainKeys``, ``$setElementOrder/<list>`` and ``$deleteFromPrimitiveList/<list>`` behave
    as upstream; they never appear in the result, nor do nulls inside newly added values.

    Raises the StatusError kube-apiserver answers for a malformed patch.
    """
    if patch is None:
        patch = {}
    if not isinstance(patch, dict):
        raise bad_request(
            f"json: cannot unmarshal {json_kind(patch)} into Go value of type map[string]interface {{}}"
        )
    merger = _StrategicMerger(merge_keys)
    original = jsoncodec.clone(target) if isinstance(target, dict) else {}
    try:
        return merger.merge_map(original, copy.deepcopy(patch), "")
    except _PatchFailure as failure:
        raise failure.status() from None


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _go_type(value: Any) -> str:
    """The Go dynamic type a decoded JSON value has, which decides equality and merging."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map"
    return "slice"


def _same(left: Any, right: Any) -> bool:
    """Go ``==`` on interface values: same dynamic type and equal value (1 is not 1.0 or true)."""
    return _go_type(left) == _go_type(right) and left == right


def _is_directive_key(key: str) -> bool:
    return (
        key in (_DIRECTIVE, _RETAIN_KEYS)
        or key.startswith(_SET_ELEMENT_ORDER + "/")
        or key.startswith(_DELETE_FROM_PRIMITIVE_LIST + "/")
    )


def _plain(value: Any) -> Any:
    """A patch value taken as-is: without nulls in objects and without directive keys.

    Upstream copies such values verbatim and lets decoding into the typed object drop both;
    objects here stay JSON, so they are dropped now.
    """
    if isinstance(value, dict):
        return {
            key: _plain(item)
            for key, item in value.items()
            if item is not None and not _is_directive_key(key)
        }
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _no_merge_key(item: Any, merge_key: str) -> _PatchFailure:
    return _PatchFailure(f"map: {go_sprint(item)} does not contain declared merge key: {merge_key}")


def _bad_arg_type(expected: str, actual: Any) -> _PatchFailure:
    return _PatchFailure(f"expected a {expected}, but received a {go_type_name(actual)}")


def _extract_key(key: str, prefix: str, error: str) -> str:
    head, slash, rest = key.partition("/")
    if not slash or head != prefix:
        raise _PatchFailure(error, "bad_request")
    return rest


def _element_kind(*lists: list[Any]) -> str:
    """The common Go type of the elements (``map`` or a scalar type); mixed lists are an error."""
    kind = ""
    for items in lists:
        for item in items:
            item_kind = _go_type(item)
            if not kind:
                if item_kind == "slice":
                    raise _PatchFailure(_ERR_LIST_OF_LISTS, "rejected")
                kind = item_kind
            elif item_kind != kind:
                raise _PatchFailure(f"list element types are not identical: {go_sprint(list(lists))}")
    if not kind:
        raise _PatchFailure("no elements in any of the given slices")
    return kind


class _StrategicMerger:
    def __init__(self, merge_keys: Mapping[str, str]) -> None:
        self.merge_keys = merge_keys

    # -- maps ------------------------------------------------------------------------------

    def merge_map(self, original: JSON, patch: JSON, path: str) -> JSON:
        if _DIRECTIVE in patch:
            directive = patch[_DIRECTIVE]
            if directive == "replace":
                replacement: JSON = _plain({key: item for key, item in patch.items() if key != _DIRECTIVE})
                return replacement
            if directive == "delete":
                return {}
            raise _PatchFailure(f"unknown patch type: {go_sprint(directive)} in map: {go_sprint(patch)}")

        self._apply_retain_keys(original, patch)
        self._apply_element_orders(original, patch, path)

        for raw_key, patch_value in list(patch.items()):
            key, is_delete_list = raw_key, False
            if raw_key.startswith(_DELETE_FROM_PRIMITIVE_LIST):
                key = _extract_key(raw_key, _DELETE_FROM_PRIMITIVE_LIST, _ERR_PRIMITIVE_LIST)
                is_delete_list = True
            if patch_value is None:
                original.pop(key, None)
                continue
            if key not in original or _go_type(original[key]) != _go_type(patch_value):
                # A deletion list for a field that is absent (or not a list) deletes nothing.
                if not is_delete_list:
                    original[key] = _plain(patch_value)
                continue
            current = original[key]
            if isinstance(current, dict):
                original[key] = self.merge_map(current, patch_value, _child(path, key))
            elif isinstance(current, list):
                original[key] = self.merge_list(current, patch_value, _child(path, key), is_delete_list)
            else:
                original[key] = patch_value
        return original

    @staticmethod
    def _apply_retain_keys(original: JSON, patch: JSON) -> None:
        if _RETAIN_KEYS not in patch:
            return
        retained = patch.pop(_RETAIN_KEYS)
        if not isinstance(retained, list):
            raise _PatchFailure(_ERR_RETAIN_KEYS, "bad_request")
        allowed = {name for name in retained if isinstance(name, str)}
        for key, value in patch.items():
            if value is None or key.startswith((_DELETE_FROM_PRIMITIVE_LIST, _SET_ELEMENT_ORDER)):
                continue
            if key not in allowed:
                raise _PatchFailure(_ERR_RETAIN_KEYS, "bad_request")
        for key in [key for key in original if key not in allowed]:
            del original[key]

    def _apply_element_orders(self, original: JSON, patch: JSON, path: str) -> None:
        """Merge each list that has a ``$setElementOrder/<list>`` and put it in that order."""
        for directive_key in [key for key in patch if key.startswith(_SET_ELEMENT_ORDER)]:
            order = patch.pop(directive_key)
            if not isinstance(order, list):
                raise _bad_arg_type("[]interface {}", order)
            key = _extract_key(directive_key, _SET_ELEMENT_ORDER, _ERR_SET_ELEMENT_ORDER)
            in_original, in_patch = key in original, key in patch
            original_list = original.get(key) if in_original else []
            patch_list = patch.get(key) if in_patch else []
            if not isinstance(original_list, list):
                raise _bad_arg_type("[]interface {}", original_list)
            if not isinstance(patch_list, list):
                raise _bad_arg_type("[]interface {}", patch_list)
            list_path = _child(path, key)
            merge_key = self.merge_keys.get(list_path, "")
            _check_order_matches_patch(patch_list, order, merge_key)
            if in_original and in_patch:
                merged = self.merge_list(original_list, patch_list, list_path, False)
            elif in_patch:
                merged = _plain(patch_list)
            elif in_original:
                merged = original_list
            else:
                continue
            if merge_key:
                ordered, server_only = _partition_maps(merged, order, merge_key)
            else:
                ordered, server_only = _partition_scalars(merged, order)
            kind = _element_kind(original_list, patch_list)
            original[key] = _normalize_order(ordered, server_only, order, original_list, merge_key, kind)
            patch.pop(key, None)

    # -- lists -----------------------------------------------------------------------------

    def merge_list(self, original: list[Any], patch: list[Any], path: str, is_delete_list: bool) -> list[Any]:
        if path not in self.merge_keys and not is_delete_list:
            return list(_plain(patch))
        merge_key = self.merge_keys.get(path, "")
        if not original and not patch:
            return original
        kind = _element_kind(original, patch)
        if kind != "map":
            if is_delete_list:
                doomed = [item for item in patch]
                return [item for item in original if not any(_same(item, gone) for gone in doomed)]
            merged: list[Any] = []
            for item in original + patch:
                if not any(_same(item, kept) for kept in merged):
                    merged.append(item)
        else:
            if not merge_key:
                raise _PatchFailure(f"cannot merge lists without merge key for {path}")
            original, patch = _apply_list_directives(original, patch, merge_key)
            merged = self._merge_by_key(original, patch, merge_key, path)
        if merge_key:
            from_patch, server_only = _partition_maps(merged, patch, merge_key)
        else:
            from_patch, server_only = _partition_scalars(merged, patch)
        return _normalize_order(from_patch, server_only, patch, original, merge_key, kind)

    def _merge_by_key(self, original: list[Any], patch: list[Any], merge_key: str, path: str) -> list[Any]:
        merged = list(original)
        for item in patch:
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            # Earlier patch items are searched too, so a repeated key merges into the first.
            index = _find_by_key(merged, merge_key, item[merge_key])
            if index is None:
                merged.append(_plain(item))
            else:
                merged[index] = self.merge_map(merged[index], item, path + "[]")
        return merged


def _apply_list_directives(
    original: list[Any], patch: list[Any], merge_key: str
) -> tuple[list[Any], list[Any]]:
    """Handle ``{"$patch": ...}`` list items; returns the new original and the remaining patch."""
    remaining = []
    replace = False
    for item in patch:
        if _DIRECTIVE not in item:
            remaining.append(item)
            continue
        directive = item[_DIRECTIVE]
        if directive == "delete":
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            doomed = item[merge_key]
            original = [
                kept for kept in original if not (merge_key in kept and _same(kept[merge_key], doomed))
            ]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise _PatchFailure("merging lists cannot yet be specified in the patch")
        else:
            raise _PatchFailure(f"unknown patch type: {go_sprint(directive)} in map: {go_sprint(item)}")
    if replace:
        # The list becomes exactly the patch's other items.
        return [_plain(item) for item in remaining], []
    return original, remaining


def _find_by_key(items: list[Any], merge_key: str, value: Any) -> int | None:
    for index, item in enumerate(items):
        if isinstance(item, dict) and merge_key in item and _same(item[merge_key], value):
            return index
    return None


def _partition_scalars(items: list[Any], by: list[Any]) -> tuple[list[Any], list[Any]]:
    inside = [item for item in items if any(_same(item, other) for other in by)]
    outside = [item for item in items if not any(_same(item, other) for other in by)]
    return inside, outside


def _partition_maps(items: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    inside, outside = [], []
    for item in items:
        if not isinstance(item, dict):
            raise _bad_arg_type("map[string]interface {}", item)
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        if _find_by_key(by, merge_key, item[merge_key]) is None:
            outside.append(item)
        else:
            inside.append(item)
    return inside, outside


def _position(items: list[Any], wanted: Any, merge_key: str, kind: str) -> int:
    """Index of ``wanted`` in ``items`` (by merge key for maps), or -1."""
    for index, item in enumerate(items):
        if kind == "map" and merge_key:
            if isinstance(item, dict) and _same(item.get(merge_key), wanted.get(merge_key)):
                return index
        elif _same(item, wanted):
            return index
    return -1


def _sorted_by(items: list[Any], order: list[Any], merge_key: str, kind: str) -> list[Any]:
    if kind == "map":
        for item in [*items, *order]:
            if not isinstance(item, dict):
                raise _bad_arg_type("map[string]interface {}", item)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
    positions = [_position(order, item, merge_key, kind) for item in items]
    ranked = sorted(range(len(items)), key=lambda i: positions[i] if positions[i] >= 0 else len(order))
    return [items[i] for i in ranked]


def _normalize_order(
    from_patch: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    kind: str,
) -> list[Any]:
    """Patch items in patch order, server-only items in server order, interleaved as upstream.

    Each server-only item goes before the first patch item that the live list has after it;
    patch items the live list does not know keep their place.
    """
    right = _sorted_by(from_patch, patch_order, merge_key, kind)
    left = _sorted_by(server_only, server_order, merge_key, kind)
    result: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            result.append(right[j])
            j += 1
        elif j >= len(right):
            result.append(left[i])
            i += 1
        else:
            left_at = _position(server_order, left[i], merge_key, kind)
            right_at = _position(server_order, right[j], merge_key, kind)
            if left_at >= 0 and right_at >= 0 and left_at < right_at:
                result.append(left[i])
                i += 1
            else:
                result.append(right[j])
                j += 1
    return result


def _check_order_matches_patch(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """The patch list must follow ``$setElementOrder`` (items it lacks may be skipped)."""
    if not order or not patch_list:
        return
    if merge_key:
        for item in patch_list:
            if not isinstance(item, dict):
                raise _bad_arg_type("map[string]interface {}", item)
        candidates = [item for item in patch_list if item.get(_DIRECTIVE) != "delete"]
    else:
        candidates = patch_list
    patch_at = order_at = 0
    while patch_at < len(candidates) and order_at < len(order):
        item = candidates[patch_at]
        if isinstance(item, dict) and _DIRECTIVE in item:
            patch_at += 1
            continue
        if _merge_key_equal(item, order[order_at], merge_key):
            patch_at += 1
        order_at += 1
    if patch_at < len(candidates):
        raise _PatchFailure(
            f"The order in patch list:\n{go_sprint(patch_list)}\n doesn't match "
            f"{_SET_ELEMENT_ORDER} list:\n{go_sprint(order)}\n"
        )


def _merge_key_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return _same(left, right)
    for item in (left, right):
        if not isinstance(item, dict):
            raise _bad_arg_type("map[string]interface {}", item)
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
    return _same(left[merge_key], right[merge_key])
