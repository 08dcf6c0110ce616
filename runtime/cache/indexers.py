"""Keys and indexes of cached objects: how an informer files what it holds."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from ..jsoncodec import JSON

IndexFunc = Callable[[JSON], Iterable[str]]
"""An index function: the values ``obj`` is filed under (none: not indexed)."""

INDEX_NAMESPACE: Final = "namespace"
INDEX_OWNER_UID: Final = "owner-uid"


def object_key(obj: Mapping[str, Any]) -> str:
    """The store key of ``obj``: ``"namespace/name"``, or ``"name"`` for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


def namespace_index(obj: JSON) -> list[str]:
    """Index function of :data:`INDEX_NAMESPACE`: the namespace, "" for cluster-scoped objects."""
    return [(obj.get("metadata") or {}).get("namespace") or ""]


def owner_uid_index(obj: JSON) -> list[str]:
    """Index function of :data:`INDEX_OWNER_UID`: the uid of every owner reference."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return [str(ref["uid"]) for ref in refs if isinstance(ref, dict) and ref.get("uid")]


def _resource_version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")
