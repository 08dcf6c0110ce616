"""Events: one object, two APIs (core/v1 and events.k8s.io/v1), one store.

:func:`convert_event` reshapes an Event between the two versions' field names;
:class:`CohabitingResourceType` is how events.k8s.io/v1 shares core/v1's store, and
:func:`served_form` / :func:`storage_form` give each reader and the store the shape they expect.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.jsoncodec import JSON

from ..errors import Qualified
from ..gostruct import decode_struct, meta_of
from ..registry import ResourceType
from .structs import CORE_EVENT, EVENTS_V1_EVENT


def convert_event(obj: JSON, api_version: str) -> JSON:
    """One Event in the shape of ``v1`` (core) or ``events.k8s.io/v1``; both are the same object."""
    source_is_core = "involvedObject" in obj or obj.get("apiVersion") == "v1"
    if "regarding" in obj or obj.get("apiVersion") == "events.k8s.io/v1":
        source_is_core = False
    pairs = (
        ("involvedObject", "regarding"),
        ("message", "note"),
        ("source", "deprecatedSource"),
        ("firstTimestamp", "deprecatedFirstTimestamp"),
        ("lastTimestamp", "deprecatedLastTimestamp"),
        ("count", "deprecatedCount"),
        ("reportingComponent", "reportingController"),
    )
    renames = dict(pairs) if source_is_core else {new: old for old, new in pairs}
    out: JSON = {}
    for key, value in obj.items():
        out[renames.get(key, key)] = value
    target = "v1" if api_version == "v1" else "events.k8s.io/v1"
    out["kind"] = "Event"
    out["apiVersion"] = target
    spec = CORE_EVENT if target == "v1" else EVENTS_V1_EVENT
    if target == "v1" and isinstance(out.get("series"), dict):
        out["series"] = {k: v for k, v in out["series"].items() if v not in (0, None)}
        out["series"].setdefault("lastObservedTime", None)
    decoded, _ = decode_struct(spec, out, strict=False)
    if "managedFields" in meta_of(obj):
        decoded["metadata"]["managedFields"] = meta_of(obj)["managedFields"]
    return decoded


# ------------------------------------------------------------------------- resource types


@dataclass
class CohabitingResourceType(ResourceType):
    """A built-in served from a second group whose objects live in another type's store.

    events.k8s.io/v1 Events are core/v1 Events: one store (so both APIs list, watch and
    admission-match the same objects), and errors name the core type (``Event "x" is invalid``,
    ``events "x" not found``) because the core registry does the work. Objects in the shared
    store may have been written through either API; :func:`served_form` and
    :func:`order_builtin` give a reader the shape of the version it asked for.
    """

    storage_group_resource: tuple[str, str] = ("", "")
    storage_kind: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return self.storage_group_resource

    @property
    def qualified(self) -> Qualified:
        group, resource = self.storage_group_resource
        return Qualified(group, resource, self.storage_kind or self.kind)


def _is_event_type(rt: ResourceType) -> bool:
    return rt.builtin and rt.resource == "events" and rt.group in ("", "events.k8s.io")


def _is_core_event_shape(obj: JSON) -> bool:
    if "involvedObject" in obj or "regarding" in obj:
        return "regarding" not in obj
    return bool(obj.get("apiVersion", "v1") == "v1")


def core_event_shape(obj: JSON) -> JSON:
    return obj if _is_core_event_shape(obj) else convert_event(obj, "v1")


def served_form(rt: ResourceType, obj: JSON) -> JSON:
    """A stored object in the shape of the API version ``rt`` serves (the object itself when the
    shapes already agree, which is every type except Events written through the other API)."""
    if not _is_event_type(rt):
        return obj
    if _is_core_event_shape(obj) == (rt.group == ""):
        return obj
    return convert_event(obj, rt.group_version)


def storage_form(rt: ResourceType, obj: JSON) -> JSON:
    """An object in the shape its store keeps (core/v1 for Events of either API)."""
    if not _is_event_type(rt) or rt.group == "":
        return obj
    return core_event_shape(obj)
