"""The resource types the embedded API server serves: built-ins and installed CRDs.

A :class:`ResourceType` says everything the generic handlers need to know about one
group/version/resource: its Kind, scope, verbs, subresources, how to validate and default it,
how to serialise it (custom resources sort keys alphabetically, built-ins keep Go struct order),
and its patch strategy. The :class:`Registry` maps request paths to types and is what discovery
documents are rendered from.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from runtime.jsoncodec import JSON

from .errors import FieldError, Qualified

# (new object, old object or None) -> problems. Runs after defaulting, before admission.
Validator = Callable[[JSON, JSON | None], list[FieldError]]
# Mutates a new object in place before validation (Go's PrepareForCreate + defaulting).
Defaulter = Callable[[JSON], None]

CRD_VERBS = ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]


@dataclass(frozen=True)
class ScaleSpec:
    """The CRD ``subresources.scale`` paths (JSON paths such as ``.spec.replicas``)."""

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str | None = None


@dataclass
class ResourceType:
    """One served group/version/resource."""

    group: str
    version: str
    resource: str  # plural, e.g. "gadgets"
    kind: str
    singular: str
    namespaced: bool
    list_kind: str = ""
    short_names: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    verbs: list[str] = field(default_factory=lambda: list(CRD_VERBS))
    has_status: bool = False
    scale: ScaleSpec | None = None
    builtin: bool = False
    # For custom resources: the version's openAPIV3Schema (structural); None for built-ins.
    schema: JSON | None = None
    printer_columns: list[JSON] = field(default_factory=list)
    # Built-ins only: the Go struct order of top-level keys, used when serialising.
    key_order: list[str] = field(default_factory=list)
    validate: Validator | None = None
    default: Defaulter | None = None
    # Built-ins only: list merge keys for strategic merge patch, keyed by JSON path of the list
    # with "[]" for list items, e.g. {"metadata.ownerReferences": "uid", "status.conditions": "type"}.
    merge_keys: dict[str, str] = field(default_factory=dict)
    # Built-ins may be served from a second group/version as the same objects (core Event and
    # events.k8s.io Event share storage in the real server; here each keeps its own store).
    storage_version_hash: str = ""
    # True when the main endpoint's spec changes bump metadata.generation (CRDs and most built-ins).
    tracks_generation: bool = True

    def __post_init__(self) -> None:
        if not self.list_kind:
            self.list_kind = f"{self.kind}List"

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> Qualified:
        return Qualified(self.group, self.resource, self.kind)

    @property
    def key(self) -> tuple[str, str]:
        """The storage key: objects of one group/resource share a store across versions."""
        return (self.group, self.resource)


class Registry:
    """Thread-safe map of served types; CRD installation adds to it at run time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._preferred: dict[str, str] = {}
        # The served (group, version) pairs, worked out again after a change (every request asks).
        self._group_versions: frozenset[tuple[str, str]] | None = None

    def add(self, rt: ResourceType, *, preferred: bool = True) -> None:
        with self._lock:
            self._group_versions = None
            self._types[(rt.group, rt.version, rt.resource)] = rt
            if preferred or rt.group not in self._preferred:
                self._preferred[rt.group] = rt.version

    def remove_group_resource(self, group: str, resource: str) -> None:
        with self._lock:
            self._group_versions = None
            for key in [k for k in self._types if k[0] == group and k[2] == resource]:
                del self._types[key]
            if not any(k[0] == group for k in self._types):
                self._preferred.pop(group, None)

    def get(self, group: str, version: str, resource: str) -> ResourceType | None:
        return self._types.get((group, version, resource))

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._types.values())

    def groups(self) -> dict[str, list[str]]:
        """group -> served versions (preferred first)."""
        out: dict[str, list[str]] = {}
        with self._lock:
            for g, v, _ in self._types:
                versions = out.setdefault(g, [])
                if v not in versions:
                    versions.append(v)
            for g, versions in out.items():
                pref = self._preferred.get(g)
                if pref in versions:
                    versions.remove(pref)
                    versions.insert(0, pref)
        return out

    def preferred_version(self, group: str) -> str | None:
        return self._preferred.get(group)

    def serves_group_version(self, group: str, version: str) -> bool:
        """Whether any resource is served under ``group``/``version``."""
        served = self._group_versions
        if served is None:
            with self._lock:
                served = self._group_versions = frozenset((g, v) for g, v, _ in self._types)
        return (group, version) in served

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        with self._lock:
            return [rt for (g, v, _), rt in self._types.items() if g == group and v == version]

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        for rt in self.in_group_version(group, version):
            if rt.kind == kind:
                return rt
        return None
