"""ObjectMeta rules every resource shares: names, labels, finalizers, generated names, managedFields.

Validation functions return :class:`~.errors.FieldError` lists phrased exactly as kube-apiserver
phrases them. The managedFields part reproduces the server's field-ownership bookkeeping for
``Update`` operations (POST/PUT/PATCH) and a simplified server-side apply: which manager owns
which field, in the ``fieldsV1`` encoding (``{"f:spec": {".": {}, "f:replicas": {}}}``).

Field sets are handled as Python sets of paths; a path is a tuple of fieldsV1 path elements
(``"f:spec"``, ``'k:{"name":"a"}'``, ``'v:"x"'``, ``"i:0"``). That keeps union/difference trivial
and leaves the nested encoding to :func:`encode_fields` / :func:`decode_fields`.
"""

from __future__ import annotations

import functools
import json
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from runtime import jsoncodec
from runtime.goformat import go_quote, go_strings, go_value
from runtime.jsoncodec import JSON

from .errors import FieldError, StatusError, forbidden, invalid, required

Path = tuple[str, ...]
FieldSet = set[Path]

# ------------------------------------------------------------------------------------ names

DNS1123_SUBDOMAIN_MAX = 253
DNS1123_LABEL_MAX = 63
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
ANNOTATIONS_MAX_BYTES = 256 * 1024

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)


def _full_match(fmt: str, value: str) -> bool:
    return re.fullmatch(fmt, value) is not None


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """The apimachinery wording for a regex failure, examples joined the way Go joins them."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    text = message + " (e.g. "
    for i, example in enumerate(examples):
        if i:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def dns1123_label_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _full_match(_DNS1123_LABEL_FMT, value):
        errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _full_match(_DNS1123_SUBDOMAIN_FMT, value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def dns1035_label_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _full_match(_DNS1035_LABEL_FMT, value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def path_segment_errors(value: str) -> list[str]:
    """What every object name must satisfy to be addressable in a URL."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    errs: list[str] = []
    for bad in ("/", "%"):
        if bad in value:
            errs.append(f"may not contain '{bad}'")
    return errs


def qualified_name_errors(value: str) -> list[str]:
    """Label keys, annotation keys and finalizers: ``[prefix/]name``."""
    return list(_qualified_name_errors(value))


# Every write re-validates every label and annotation key; the same few keys recur on every object.
@functools.lru_cache(maxsize=8192)
def _qualified_name_errors(value: str) -> tuple[str, ...]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in dns1123_subdomain_errors(prefix))
    else:
        return (
            "a qualified name "
            + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        )
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX))
    if not _full_match(_QUALIFIED_NAME_FMT, name):
        errs.append(
            "name part "
            + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return tuple(errs)


def label_value_errors(value: str) -> list[str]:
    return list(_label_value_errors(value))


@functools.lru_cache(maxsize=8192)
def _label_value_errors(value: str) -> tuple[str, ...]:
    errs: list[str] = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(max_len_error(LABEL_VALUE_MAX))
    if not _full_match(_LABEL_VALUE_FMT, value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return tuple(errs)


# How each resource's names are checked: RFC 1123 subdomain for almost everything, RFC 1123 label
# for namespaces, RFC 1035 label for services, path-segment-only where the server is that lax.
NAME_RULES = {
    "subdomain": dns1123_subdomain_errors,
    "label": dns1123_label_errors,
    "dns1035": dns1035_label_errors,
    "path_segment": path_segment_errors,
}


def _mask_trailing_dash(name: str) -> str:
    # A generateName prefix may end in '-' because random characters will follow it.
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_errors(name: str, rule: str = "subdomain", *, prefix: bool = False) -> list[str]:
    """The messages one name (or generateName prefix) earns under a naming rule."""
    check = NAME_RULES[rule]
    if prefix and rule != "path_segment":
        name = _mask_trailing_dash(name)
    return check(name)


def validate_name(name: str, kind: str) -> list[str]:
    """Messages for an object name: RFC 1123 label for Namespaces, RFC 1035 for Services, else subdomain."""
    rule = {"Namespace": "label", "Service": "dns1035"}.get(kind, "subdomain")
    return name_errors(name, rule)


# ----------------------------------------------------------------------------- validation


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def validate_labels(labels: Mapping[str, str], path: str = "metadata.labels") -> list[FieldError]:
    errs: list[FieldError] = []
    for key, value in labels.items():
        for m in _qualified_name_errors(key):
            errs.append(invalid(path, key, m))
        for m in _label_value_errors(value):
            errs.append(invalid(path, value, m))
    return errs


def validate_annotations(
    annotations: Mapping[str, str], path: str = "metadata.annotations"
) -> list[FieldError]:
    errs: list[FieldError] = []
    total = 0
    for key, value in annotations.items():
        for m in _qualified_name_errors(key.lower()):
            errs.append(invalid(path, key, m))
        total += len(key) + len(value)
    if total > ANNOTATIONS_MAX_BYTES:
        errs.append(FieldError("TooLong", path, None, f"may not be more than {ANNOTATIONS_MAX_BYTES} bytes"))
    return errs


def validate_finalizers(finalizers: Sequence[str], path: str = "metadata.finalizers") -> list[FieldError]:
    errs: list[FieldError] = []
    for finalizer in finalizers:
        errs.extend(invalid(path, finalizer, m) for m in qualified_name_errors(finalizer))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(
            invalid(
                path,
                go_strings(list(finalizers)),
                "finalizer orphan and foregroundDeletion cannot be both set",
            )
        )
    return errs


def validate_owner_references(
    refs: Sequence[JSON], path: str = "metadata.ownerReferences"
) -> list[FieldError]:
    errs: list[FieldError] = []
    first_controller = ""
    for ref in refs:
        api_version = str(ref.get("apiVersion") or "")
        version = api_version.rsplit("/", 1)[-1] if api_version else ""
        if not version:
            errs.append(invalid(f"{path}.apiVersion", api_version, "version must not be empty"))
        if not ref.get("kind"):
            errs.append(invalid(f"{path}.kind", ref.get("kind") or "", "kind must not be empty"))
        if not ref.get("name"):
            errs.append(invalid(f"{path}.name", ref.get("name") or "", "name must not be empty"))
        if not ref.get("uid"):
            errs.append(invalid(f"{path}.uid", ref.get("uid") or "", "uid must not be empty"))
        if ref.get("controller") is True:
            current = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if first_controller:
                errs.append(
                    invalid(
                        path,
                        refs,
                        'Only one reference can have Controller set to true. Found "true" in references for '
                        f"{first_controller} and {current}",
                    )
                )
            else:
                first_controller = current
    return errs


def validate_managed_fields_entries(
    entries: Sequence[Any], path: str = "metadata.managedFields"
) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        op = entry.get("operation", "")
        if op not in ("Apply", "Update"):
            errs.append(invalid(f"{path}[{i}].operation", op, "must be `Apply` or `Update`"))
        fields_type = entry.get("fieldsType", "")
        if fields_type and fields_type != "FieldsV1":
            errs.append(invalid(f"{path}[{i}].fieldsType", fields_type, "must be `FieldsV1`"))
    return errs


def validate_object_meta_create(
    meta: JSON, *, namespaced: bool, name_rule: str = "subdomain"
) -> list[FieldError]:
    """Everything the server checks on a new object's metadata (Go's ValidateObjectMetaAccessor).

    Runs after name generation, so ``name`` is already filled in for generateName creates.
    """
    errs: list[FieldError] = []
    generate_name_value = str(meta.get("generateName") or "")
    if generate_name_value:
        errs.extend(
            invalid("metadata.generateName", generate_name_value, m)
            for m in name_errors(generate_name_value, name_rule, prefix=True)
        )
    name = str(meta.get("name") or "")
    if not name:
        errs.append(required("metadata.name", "name or generateName is required"))
    else:
        errs.extend(invalid("metadata.name", name, m) for m in name_errors(name, name_rule))
    namespace = str(meta.get("namespace") or "")
    if namespaced:
        if not namespace:
            errs.append(required("metadata.namespace"))
        else:
            errs.extend(invalid("metadata.namespace", namespace, m) for m in dns1123_label_errors(namespace))
    elif namespace:
        errs.append(forbidden("metadata.namespace", "not allowed on this type"))
    generation = meta.get("generation")
    if isinstance(generation, int) and not isinstance(generation, bool) and generation < 0:
        errs.append(invalid("metadata.generation", generation, "must be greater than or equal to 0"))
    errs.extend(validate_labels(_str_map(meta.get("labels"))))
    errs.extend(validate_annotations(_str_map(meta.get("annotations"))))
    refs = meta.get("ownerReferences")
    if isinstance(refs, list):
        errs.extend(validate_owner_references([r for r in refs if isinstance(r, dict)]))
    finalizers = meta.get("finalizers")
    if isinstance(finalizers, list):
        errs.extend(validate_finalizers([str(f) for f in finalizers]))
    entries = meta.get("managedFields")
    if isinstance(entries, list):
        errs.extend(validate_managed_fields_entries(entries))
    return errs


def _metadata_of(value: JSON) -> JSON:
    meta = value.get("metadata")
    return meta if isinstance(meta, dict) else value


def validate_object_meta_update(new: JSON, old: JSON, *, namespaced: bool | None = None) -> list[FieldError]:
    """Every metadata problem an update earns, in the order and multiplicity kube reports them.

    Takes whole objects or metadata dicts. The real server checks metadata twice on update: once
    as "common fields" (the create rules with the URL-safe name rule, then the update rules) and
    once more inside the type's own update validation (the update rules again). That is why a
    finalizer added while terminating shows up as two identical causes. ``namespaced=None``
    skips the namespace presence check of the create rules.
    """
    new_meta, old_meta = _metadata_of(new), _metadata_of(old)
    update_rules = metadata_update_rules(new_meta, old_meta)
    errs: list[FieldError] = []
    if namespaced is not None:
        errs += validate_object_meta_create(new_meta, namespaced=namespaced, name_rule="path_segment")
    else:
        errs += [
            e
            for e in validate_object_meta_create(new_meta, namespaced=False, name_rule="path_segment")
            if e.field != "metadata.namespace"
        ]
    return errs + update_rules + update_rules


def metadata_update_rules(new: JSON, old: JSON) -> list[FieldError]:
    """The update-only metadata rules (Go's ValidateObjectMetaAccessorUpdate), once, on metadata dicts."""
    errs: list[FieldError] = []
    if old.get("deletionTimestamp"):
        old_finalizers = set(old.get("finalizers") or [])
        added = [f for f in (new.get("finalizers") or []) if f not in old_finalizers]
        if added:
            errs.append(
                forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new finalizers "
                    + go_value(go_strings(added)),
                )
            )
    if not new.get("resourceVersion"):
        # Types that allow unconditional updates have the stored resourceVersion filled in by
        # the handler before this runs; the others are refused earlier by the store with the
        # resource-named 422 whose value prints as 0x0.
        errs.append(invalid("metadata.resourceVersion", "", "must be specified for an update"))
    new_generation = new.get("generation") or 0
    old_generation = old.get("generation") or 0
    if (
        isinstance(new_generation, int)
        and isinstance(old_generation, int)
        and new_generation < old_generation
    ):
        errs.append(invalid("metadata.generation", new_generation, "must not be decremented"))
    for key in (
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ):
        if new.get(key) != old.get(key):
            errs.append(invalid(f"metadata.{key}", new.get(key), "field is immutable"))
    errs.extend(validate_labels(_str_map(new.get("labels"))))
    errs.extend(validate_annotations(_str_map(new.get("annotations"))))
    refs = new.get("ownerReferences")
    if isinstance(refs, list):
        errs.extend(validate_owner_references([r for r in refs if isinstance(r, dict)]))
    entries = new.get("managedFields")
    if isinstance(entries, list):
        errs.extend(validate_managed_fields_entries(entries))
    return errs


# ------------------------------------------------------------------------- generated names

NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATED_SUFFIX_LENGTH = 5
MAX_GENERATE_NAME_PREFIX = 63 - GENERATED_SUFFIX_LENGTH


def generate_name(prefix: str) -> str:
    """``prefix`` (cut to 58 characters) plus 5 characters from kube's vowel-free alphabet."""
    base = prefix[:MAX_GENERATE_NAME_PREFIX]
    return base + "".join(secrets.choice(NAME_ALPHABET) for _ in range(GENERATED_SUFFIX_LENGTH))


def manager_from_user_agent(ua: str | None) -> str:
    """The default field manager: the User-Agent up to its first '/', or "unknown"."""
    if not ua:
        return "unknown"
    head = ua.split("/", 1)[0]
    # kube caps the derived name at 128 characters
    return head[:128] if head else "unknown"


# --------------------------------------------------------------------- field-set encoding


def encode_fields(paths: Iterable[Path]) -> JSON:
    """Turn a set of paths into the nested fieldsV1 document (a member with children gets ".")."""
    members = set(paths)
    tree: JSON = {}
    for path in members:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
    for path in members:
        node = tree
        for element in path:
            node = node[element]
        if node:
            node["."] = {}
    return _sort_tree(tree)


def _sort_tree(tree: JSON) -> JSON:
    # fieldsV1 is serialised with sorted keys, "." first because it sorts before letters
    return {k: _sort_tree(tree[k]) for k in sorted(tree)}


class _FieldSetCodec:
    """:func:`encode_fields` / :func:`decode_fields` for managedFields, remembering results.

    Every write re-encodes every manager's field set and decodes the stored ones, although from
    one write to the next they almost never change (an object's field *paths* stay the same when
    only values move, and objects of one type mostly share them). Both directions are keyed by
    content: a set by itself, a tree by its JSON text. Encoded trees are shared by the objects
    that carry them, which the server never changes in place (the store keeps copies).
    """

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._trees: dict[frozenset[Path], JSON] = {}
        self._sets: dict[bytes, frozenset[Path]] = {}

    def encode(self, paths: FieldSet) -> JSON:
        key = frozenset(paths)
        tree = self._trees.get(key)
        if tree is None:
            tree = encode_fields(key)
            if len(self._trees) >= self.size:
                del self._trees[next(iter(self._trees))]
            self._trees[key] = tree
        return tree

    def decode(self, tree: Any) -> FieldSet:
        text = jsoncodec.dumps(tree)
        paths = self._sets.get(text)
        if paths is None:
            paths = frozenset(decode_fields(tree))
            if len(self._sets) >= self.size:
                del self._sets[next(iter(self._sets))]
            self._sets[text] = paths
        return set(paths)


_FIELD_SETS = _FieldSetCodec()


def decode_fields(tree: Any, prefix: Path = ()) -> FieldSet:
    """The inverse of :func:`encode_fields`."""
    out: FieldSet = set()
    if not isinstance(tree, dict):
        return out
    for key, child in tree.items():
        if key == ".":
            if prefix:
                out.add(prefix)
            continue
        path = (*prefix, key)
        if not child:
            out.add(path)
        else:
            out |= decode_fields(child, path)
    return out


def path_string(path: Path) -> str:
    """A path the way conflict messages print it: ``.spec.replicas``, ``.spec.ports[port=80]``."""
    text = ""
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            text += "." + rest
        elif kind == "k":
            keys = json.loads(rest)
            text += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]"
        elif kind == "v":
            text += f"[={rest}]"
        else:
            text += f"[{rest}]"
    return text


# ------------------------------------------------------------------------ field ownership


@dataclass(frozen=True)
class FieldRules:
    """How one type's lists and maps take part in field ownership.

    Paths are dotted with ``[]`` marking list items (``webhooks[].clientConfig``). Lists are
    atomic unless listed as sets or keyed maps; maps are granular unless listed as atomic.
    ``zero`` is what a brand-new object of the type looks like before the client's fields are
    applied (Go's zero value: struct fields are present, pointers are not); creates are compared
    against it, which is why built-in ``spec`` structs get no "." marker while a CR's ``spec`` does.
    """

    list_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    set_lists: frozenset[str] = frozenset()
    atomic: frozenset[str] = frozenset()
    zero: Mapping[str, Any] = field(default_factory=dict)

    def merged_with(self, other: FieldRules) -> FieldRules:
        return FieldRules(
            {**self.list_keys, **other.list_keys},
            self.set_lists | other.set_lists,
            self.atomic | other.atomic,
            {**self.zero, **other.zero},
        )


METADATA_RULES = FieldRules(
    list_keys={"metadata.ownerReferences": ("uid",)},
    set_lists=frozenset({"metadata.finalizers"}),
    atomic=frozenset({"metadata.ownerReferences[]", "metadata.managedFields"}),
)
CUSTOM_RESOURCE_RULES = METADATA_RULES


def rules_from_schema(schema: JSON | None) -> FieldRules:
    """Ownership rules of a custom resource, read from its structural openAPIV3Schema."""
    list_keys: dict[str, tuple[str, ...]] = {}
    set_lists: set[str] = set()
    atomic: set[str] = set()

    def walk(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            return
        list_type = node.get("x-kubernetes-list-type")
        if list_type == "set":
            set_lists.add(path)
        elif list_type == "map":
            list_keys[path] = tuple(node.get("x-kubernetes-list-map-keys") or ())
        if node.get("x-kubernetes-map-type") == "atomic":
            atomic.add(path)
        for name, child in (node.get("properties") or {}).items():
            walk(child, f"{path}.{name}" if path else name)
        if isinstance(node.get("items"), dict):
            walk(node["items"], path + "[]")

    if schema:
        walk(schema, "")
    own = FieldRules(list_keys, frozenset(set_lists), frozenset(atomic))
    return METADATA_RULES.merged_with(own)


_MISSING: Any = object()


def json_equal(a: Any, b: Any) -> bool:
    """JSON value equality that, unlike ``==``, keeps ``true`` and ``1`` apart."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


@dataclass
class Comparison:
    """What changed between two versions of an object, as sets of field paths."""

    added: FieldSet = field(default_factory=set)
    modified: FieldSet = field(default_factory=set)
    removed: FieldSet = field(default_factory=set)

    def changed(self) -> FieldSet:
        return self.added | self.modified

    def without(self, prefixes: Iterable[Path]) -> Comparison:
        prefixes = list(prefixes)
        return Comparison(
            _drop_prefixes(self.added, prefixes),
            _drop_prefixes(self.modified, prefixes),
            _drop_prefixes(self.removed, prefixes),
        )


def _drop_prefixes(paths: FieldSet, prefixes: Sequence[Path]) -> FieldSet:
    return {p for p in paths if not any(p[: len(pre)] == pre for pre in prefixes)}


def _list_element(rules: FieldRules, list_path: str, item: Any, index: int) -> str:
    keys = rules.list_keys.get(list_path)
    if list_path in rules.set_lists:
        return "v:" + json.dumps(item, separators=(",", ":"))
    if keys and isinstance(item, dict):
        key_values = {k: item[k] for k in sorted(keys) if k in item}
        return "k:" + json.dumps(key_values, separators=(",", ":"))
    return f"i:{index}"


class _Comparer:
    def __init__(self, rules: FieldRules) -> None:
        self.rules = rules
        self.result = Comparison()

    def leaf(self, path: Path, lhs: Any, rhs: Any) -> None:
        if lhs is _MISSING:
            self.result.added.add(path)
        elif rhs is _MISSING:
            self.result.removed.add(path)
        elif not json_equal(lhs, rhs):
            self.result.modified.add(path)

    def container_hook(self, path: Path, lhs: Any, rhs: Any) -> None:
        if not path:
            return
        if lhs is _MISSING:
            self.result.added.add(path)
        elif rhs is _MISSING:
            self.result.removed.add(path)

    def walk(self, path: Path, schema_path: str, lhs: Any, rhs: Any) -> None:
        if lhs is rhs or (
            type(lhs) is type(rhs)
            and isinstance(lhs, dict | list)
            and lhs == rhs
            and jsoncodec.dumps(lhs) == jsoncodec.dumps(rhs)
        ):
            # An unchanged subtree has no differences: skip the walk. ``==`` alone would take
            # true for 1; the same JSON text cannot.
            return
        present = rhs if rhs is not _MISSING else lhs
        other = lhs if rhs is not _MISSING else _MISSING
        if isinstance(present, dict) or isinstance(other, dict):
            self.walk_map(path, schema_path, lhs, rhs)
        elif isinstance(present, list) or isinstance(other, list):
            self.walk_list(path, schema_path, lhs, rhs)
        else:
            self.leaf(path, lhs, rhs)

    def walk_map(self, path: Path, schema_path: str, lhs: Any, rhs: Any) -> None:
        lmap = lhs if isinstance(lhs, dict) else None
        rmap = rhs if isinstance(rhs, dict) else None
        if schema_path in self.rules.atomic or (not lmap and not rmap):
            self.leaf(path, lhs, rhs)
            return
        if lhs is not _MISSING and rhs is not _MISSING and (lmap is None or rmap is None):
            # the value changed type (map <-> scalar): the node itself changed
            self.result.modified.add(path)
        keys = list(rmap or {}) + [k for k in (lmap or {}) if k not in (rmap or {})]
        for key in keys:
            child_schema = f"{schema_path}.{key}" if schema_path else key
            self.walk(
                (*path, f"f:{key}"),
                child_schema,
                (lmap or {}).get(key, _MISSING),
                (rmap or {}).get(key, _MISSING),
            )
        self.container_hook(path, lhs, rhs)

    def walk_list(self, path: Path, schema_path: str, lhs: Any, rhs: Any) -> None:
        llist = lhs if isinstance(lhs, list) else None
        rlist = rhs if isinstance(rhs, list) else None
        granular = schema_path in self.rules.set_lists or schema_path in self.rules.list_keys
        if not granular or (not llist and not rlist):
            self.leaf(path, lhs, rhs)
            return
        # A scalar became a list or back; null counts as an absent list, whose items alone are claimed.
        both_set = lhs not in (_MISSING, None) and rhs not in (_MISSING, None)
        if both_set and (llist is None or rlist is None):
            self.result.modified.add(path)
        item_schema = schema_path + "[]"
        left = {_list_element(self.rules, schema_path, v, i): v for i, v in enumerate(llist or [])}
        right = {_list_element(self.rules, schema_path, v, i): v for i, v in enumerate(rlist or [])}
        for element in list(right) + [e for e in left if e not in right]:
            self.walk(
                (*path, element), item_schema, left.get(element, _MISSING), right.get(element, _MISSING)
            )
        self.container_hook(path, lhs, rhs)


def compare(old: Any, new: Any, rules: FieldRules = CUSTOM_RESOURCE_RULES) -> Comparison:
    """Field-level differences between two versions of an object (old may be the type's zero value)."""
    comparer = _Comparer(rules)
    comparer.walk((), "", old, new)
    return comparer.result


def applied_field_set(config: JSON, rules: FieldRules = CUSTOM_RESOURCE_RULES) -> FieldSet:
    """The fields an apply configuration sets (what server-side apply gives its manager).

    Unlike an update's diff, a named struct field that holds children gets no "." of its own;
    only empty/null values and entries of free-form maps and keyed lists are members.
    """
    out: FieldSet = set()

    def visit(path: Path, schema_path: str, value: Any, declared: bool) -> None:
        if isinstance(value, dict) and value and schema_path not in rules.atomic:
            for key, child in value.items():
                visit((*path, f"f:{key}"), f"{schema_path}.{key}" if schema_path else key, child, True)
            if not declared and path:
                out.add(path)
            return
        granular = schema_path in rules.set_lists or schema_path in rules.list_keys
        if isinstance(value, list) and value and granular:
            for i, item in enumerate(value):
                element = _list_element(rules, schema_path, item, i)
                visit((*path, element), schema_path + "[]", item, False)
                out.add((*path, element))
            return
        if path:
            out.add(path)

    visit((), "", config, True)
    return out


# Fields the server never attributes to a manager.
STRIPPED_PATHS: frozenset[Path] = frozenset(
    {
        ("f:apiVersion",),
        ("f:kind",),
        ("f:metadata",),
        ("f:metadata", "f:name"),
        ("f:metadata", "f:namespace"),
        ("f:metadata", "f:creationTimestamp"),
        ("f:metadata", "f:selfLink"),
        ("f:metadata", "f:uid"),
        ("f:metadata", "f:clusterName"),
        ("f:metadata", "f:generation"),
        ("f:metadata", "f:managedFields"),
        ("f:metadata", "f:resourceVersion"),
    }
)


def managed_fields_set(obj: JSON, *, rules: FieldRules = CUSTOM_RESOURCE_RULES) -> JSON:
    """The fieldsV1 document an Update that created ``obj`` would give its manager."""
    diff = compare(dict(rules.zero), obj, rules)
    return encode_fields(diff.changed() - STRIPPED_PATHS)


def reset_fields_for(subresource: str, *, has_status: bool = True) -> tuple[str, ...]:
    """Top-level fields an endpoint may not change: status on the main resource, spec on /status."""
    if subresource == "status":
        return ("spec",)
    if subresource == "" and has_status:
        return ("status",)
    return ()


@dataclass
class _Manager:
    manager: str
    operation: str
    api_version: str
    subresource: str
    time: str | None
    fields: FieldSet

    @property
    def identity(self) -> tuple[str, str, str, str]:
        # appliers keep one entry whatever version they apply with; updaters get one per version
        version = "" if self.operation == "Apply" else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    def entry(self) -> JSON:
        out: JSON = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version}
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = _FIELD_SETS.encode(self.fields)
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def _decode_entries(entries: Sequence[Any] | None) -> dict[tuple[str, str, str, str], _Manager]:
    managers: dict[tuple[str, str, str, str], _Manager] = {}
    for raw in entries or []:
        if not isinstance(raw, dict):
            continue
        m = _Manager(
            str(raw.get("manager", "")),
            str(raw.get("operation", "")),
            str(raw.get("apiVersion", "")),
            str(raw.get("subresource", "")),
            raw.get("time"),
            _FIELD_SETS.decode(raw.get("fieldsV1") or {}),
        )
        managers[m.identity] = m
    return managers


@functools.lru_cache(maxsize=4096)
def _epoch(timestamp: str | None) -> float:
    if not timestamp:
        return 0.0
    try:
        return datetime.strptime(timestamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return 0.0


def _encode_entries(managers: Mapping[Any, _Manager]) -> list[JSON] | None:
    live = [m for m in managers.values() if m.fields]
    live.sort(key=lambda m: (m.operation, _epoch(m.time), m.manager, m.api_version, m.subresource))
    return [m.entry() for m in live] or None


def _starting_managers(
    old_entries: Sequence[Any] | None, new_obj: JSON, subresource: str
) -> dict[tuple[str, str, str, str], _Manager]:
    # A client may rewrite managedFields through the main resource: [{}] clears them, any other
    # non-empty list replaces them. Subresources always keep the stored ones.
    sent = (new_obj.get("metadata") or {}).get("managedFields")
    if subresource == "" and isinstance(sent, list) and sent:
        if sent == [{}]:
            return {}
        # Sending back what is stored (every patch does, and most updates) changes nothing;
        # decoding the stored entries instead lets their decoded sets be reused.
        if sent != old_entries:
            decoded = _decode_entries(sent)
            if decoded:
                return decoded
    return _decode_entries(old_entries)


def update_managed_fields(
    old_entries: list[JSON] | None,
    old_obj: JSON | None,
    new_obj: JSON,
    *,
    manager: str,
    operation: str = "Update",
    api_version: str,
    subresource: str = "",
    time: str | None,
    rules: FieldRules = CUSTOM_RESOURCE_RULES,
    reset_fields: Sequence[str] | None = None,
) -> list[JSON] | None:
    """managedFields after a create/update/patch by ``manager`` (None means: no key at all).

    ``old_obj`` is None for a create (the object is then compared with the type's zero value).
    ``new_obj`` is the object as the client submitted it after decoding and defaulting, before
    the strategy resets status/spec and before mutating admission (so webhook changes are not
    attributed, and a /status write that also changed a label still claims it, as kube does).
    The manager gains what it added or changed; every other entry loses those fields and
    anything removed; entries left empty vanish. The manager's ``time`` only moves when it
    gained something. ``time=None`` writes no time (the /scale subresource does that).
    ``reset_fields`` defaults to :func:`reset_fields_for` ``(subresource)``.
    """
    managers = _starting_managers(old_entries, new_obj, subresource)
    ignored = [
        ("f:" + f,) for f in (reset_fields if reset_fields is not None else reset_fields_for(subresource))
    ]
    base = old_obj if old_obj is not None else dict(rules.zero)
    diff = compare(_without_meta_noise(base), _without_meta_noise(new_obj), rules).without(ignored)
    changed = diff.changed() - STRIPPED_PATHS
    for m in managers.values():
        m.fields -= changed | diff.removed
        m.fields -= STRIPPED_PATHS
    if changed:
        me = _Manager(manager, operation, api_version, subresource, time, set())
        existing = managers.get(me.identity)
        if existing is not None:
            me.fields = set(existing.fields)
        me.fields |= changed
        managers[me.identity] = me
    return _encode_entries(managers)


def _without_meta_noise(obj: JSON) -> JSON:
    # managedFields themselves never count as a change
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    meta = {k: v for k, v in meta.items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def apply_conflict(conflicts: Sequence[tuple[_Manager, Path]]) -> StatusError:
    """409 for server-side apply taking fields another manager owns, worded as kube words it."""

    def who(m: _Manager) -> str:
        text = go_quote(m.manager)
        if m.subresource:
            text += f" with subresource {go_quote(m.subresource)}"
        if m.operation == "Update":
            text += f" using {m.api_version}"
        return text

    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {who(m)}", "field": path_string(p)}
        for m, p in conflicts
    ]
    if len(conflicts) == 1:
        m, p = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {who(m)}: {path_string(p)}"
    else:
        by_manager: dict[str, list[str]] = {}
        for m, p in conflicts:
            by_manager.setdefault(who(m), []).append(path_string(p))
        lines: list[str] = []
        for name in sorted(by_manager):
            lines.append(f"conflicts with {name}:")
            lines.extend(f"- {p}" for p in by_manager[name])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, {"causes": causes})


def apply_managed_fields(
    old_entries: list[JSON] | None,
    live_obj: JSON | None,
    merged_obj: JSON,
    config: JSON,
    *,
    manager: str,
    api_version: str,
    subresource: str = "",
    time: str | None,
    force: bool = False,
    rules: FieldRules = CUSTOM_RESOURCE_RULES,
    reset_fields: Sequence[str] | None = None,
) -> tuple[list[JSON] | None, JSON]:
    """Server-side apply bookkeeping: returns (managedFields or None, object after pruning).

    ``merged_obj`` is the live object with ``config`` merged in (the caller does the merge).
    The applier's entry becomes exactly the fields of ``config``; fields it applied before and
    no longer applies are removed from the object unless another manager owns them. Changing a
    field another manager owns raises the 409 conflict unless ``force``, which moves ownership.
    Simplified against kube: no version conversion of older entries, and pruning removes only
    leaf fields.
    """
    managers = _decode_entries(old_entries)
    ignored = [
        ("f:" + f,) for f in (reset_fields if reset_fields is not None else reset_fields_for(subresource))
    ]
    me = _Manager(manager, "Apply", api_version, subresource, time, set())
    previous = managers.get(me.identity)
    applied = _drop_prefixes(applied_field_set(config, rules) - STRIPPED_PATHS, ignored)
    result = merged_obj
    if previous is not None:
        owned_by_others: FieldSet = set()
        for key, m in managers.items():
            if key != me.identity:
                owned_by_others |= m.fields
        for path in sorted(previous.fields - applied - owned_by_others, key=len, reverse=True):
            result = _remove_path(result, path, rules)
    base = live_obj if live_obj is not None else dict(rules.zero)
    diff = compare(_without_meta_noise(base), _without_meta_noise(result), rules).without(ignored)
    changed = diff.changed() - STRIPPED_PATHS
    conflicts: list[tuple[_Manager, Path]] = []
    for key, m in managers.items():
        if key == me.identity:
            continue
        for path in sorted(m.fields & changed & applied):
            conflicts.append((m, path))
    if conflicts and not force:
        raise apply_conflict(conflicts)
    for key, m in managers.items():
        if key != me.identity:
            m.fields -= (changed & applied) | diff.removed
    object_changed = bool(changed or diff.removed)
    me.fields = applied
    if not object_changed and previous is not None:
        me.time = previous.time
    managers[me.identity] = me
    return _encode_entries(managers), result


def _remove_path(obj: JSON, path: Path, rules: FieldRules) -> JSON:
    """A copy of ``obj`` without the field at ``path`` (only plain field paths are followed)."""
    if not path or not all(p.startswith("f:") for p in path):
        return obj
    names = [p[2:] for p in path]

    def strip(node: Any, depth: int) -> Any:
        if not isinstance(node, dict) or names[depth] not in node:
            return node
        copy = dict(node)
        if depth == len(names) - 1:
            del copy[names[depth]]
        else:
            copy[names[depth]] = strip(copy[names[depth]], depth + 1)
        return copy

    result = strip(obj, 0)
    return result if isinstance(result, dict) else obj
