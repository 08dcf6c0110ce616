"""The four events a source hands to predicates and event handlers.

A :class:`~runtime.source.Kind` source turns an informer's callbacks into :class:`CreateEvent`,
:class:`UpdateEvent` and :class:`DeleteEvent`; a :class:`~runtime.source.Channel` source delivers
:class:`GenericEvent` for changes that happen outside the API server (an etcd member list, a
timer, a cloud API). Objects are JSON dicts **owned by the cache**: read them, never change them.

Example::

    from runtime.event import GenericEvent
    from runtime.reconcile import Request

    events.put_nowait(GenericEvent.for_request(Request("cp", namespace="openshift-machine-api")))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime.reconcile import Request

JSON = dict[str, Any]


@dataclass(slots=True)
class CreateEvent:
    """An object appeared in the cache: created, or listed when the informer (re)started."""

    object: JSON
    is_in_initial_list: bool = False
    """True for objects replayed from the informer's initial list rather than watched."""


@dataclass(slots=True)
class UpdateEvent:
    """An object changed: ``object_old`` is the state the cache had before, ``object_new`` now."""

    object_old: JSON
    object_new: JSON


@dataclass(slots=True)
class DeleteEvent:
    """An object went away; ``object`` is the last state the cache knew."""

    object: JSON
    delete_state_unknown: bool = False
    """True when the deletion was inferred (the object was missing from a relist), so ``object``
    may be stale."""


@dataclass(slots=True)
class GenericEvent:
    """Something outside the API server says an object needs a look."""

    object: JSON

    @classmethod
    def for_request(cls, request: Request) -> GenericEvent:
        """An event that names an object only by ``request`` (its object has just ``metadata``).

        Handlers that map objects (owner references, map functions) see a bare object; predicates
        that read labels or generations see none.
        """
        metadata: JSON = {"name": request.name}
        if request.namespace:
            metadata["namespace"] = request.namespace
        return cls({"metadata": metadata})


def request_for(obj: JSON) -> Request | None:
    """The :class:`Request` naming ``obj``, or None when it has no ``metadata.name``."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return None
    name = metadata.get("name")
    if not name or not isinstance(name, str):
        return None
    namespace = metadata.get("namespace") or ""
    return Request(name, namespace if isinstance(namespace, str) else "")
