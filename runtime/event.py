"""The four events a source hands to predicates and event handlers.

A :class:`~runtime.source.Kind` source turns an informer's callbacks into :class:`CreateEvent`,
:class:`UpdateEvent` and :class:`DeleteEvent`; a :class:`~runtime.source.Channel` source delivers
:class:`GenericEvent` for changes that happen outside the API server (an etcd member list, a
timer, a cloud API). Objects are JSON dicts **owned by the cache**: read them, never change them.

Example: a change seen outside the API server, naming the object to reconcile (put it on the
queue of a :class:`~runtime.source.Channel` source):

>>> from runtime.event import GenericEvent
>>> from runtime.reconcile import Request
>>> GenericEvent.for_request(Request("cp", namespace="openshift-machine-api"))
GenericEvent(object={'metadata': {'name': 'cp', 'namespace': 'openshift-machine-api'}})
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runtime.jsoncodec import JSON
from runtime.reconcile import Request


@dataclass(slots=True)
class CreateEvent:
    """An object appeared in the cache: created, or listed when the informer (re)started."""

    object: JSON
    is_in_initial_list: bool = False
    """True for objects replayed from the informer's initial list rather than watched."""


_NOT_LOADED: Any = object()


class UpdateEvent:
    """An object changed: ``object_old`` is the state the cache had before, ``object_new`` now.

    A :class:`~runtime.source.Kind` source builds it with :meth:`deferred`: the cache keeps the
    old state as text and decodes it only if a predicate or handler reads ``object_old``.
    """

    __slots__ = ("_load_old", "_old", "object_new")

    def __init__(self, object_old: JSON, object_new: JSON) -> None:
        self._old: Any = object_old
        self._load_old: Callable[[], JSON] | None = None
        self.object_new = object_new

    @classmethod
    def deferred(cls, load_old: Callable[[], JSON], object_new: JSON) -> UpdateEvent:
        """An event whose ``object_old`` is ``load_old()``, called on first access only."""
        event = cls.__new__(cls)
        event._old = _NOT_LOADED
        event._load_old = load_old
        event.object_new = object_new
        return event

    @property
    def object_old(self) -> JSON:
        old = self._old
        if old is _NOT_LOADED:
            assert self._load_old is not None
            old = self._old = self._load_old()
            self._load_old = None
        return old  # type: ignore[no-any-return]

    @object_old.setter
    def object_old(self, value: JSON) -> None:
        self._old = value
        self._load_old = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, UpdateEvent):
            return NotImplemented
        return (self.object_old, self.object_new) == (other.object_old, other.object_new)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the other events

    def __repr__(self) -> str:
        return f"UpdateEvent(object_old={self.object_old!r}, object_new={self.object_new!r})"


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
