"""Event handlers: turn an event about one object into the :class:`Request` s to reconcile.

Pick the handler by the question "which object does this change matter to?":

==========================================  =====================================================
:class:`EnqueueRequestForObject`            the object itself (``for_`` watches). Updates
                                            enqueue the new object.
:class:`EnqueueRequestForOwner`             the owner named in the object's ``ownerReferences``
                                            (``owns`` watches: a Machine's change wakes its
                                            ControlPlane). Updates enqueue the owners of both the
                                            old and the new object, so an owner that lost a
                                            child hears about it too.
:class:`EnqueueRequestsFromMapFunc`         whatever your function returns (a Node wakes the
                                            Machine whose ``status.nodeRef`` names it). Updates
                                            map both the old and the new object.
:func:`handler_funcs`                       your own functions, one per event kind.
==========================================  =====================================================

Each event enqueues a request at most once (the handlers dedupe within the event; the workqueue
dedupes across events). Handlers run synchronously inside the informer's callbacks, so they must
be quick and must not block; they see the cache's own objects and must not change them.

Example: a Node wakes the Machine its annotation names (a controller would say
``builder.watches("v1", "Node", EnqueueRequestsFromMapFunc(machine_for_node))``; here a list
stands in for the controller's queue):

>>> from runtime.event import CreateEvent
>>> from runtime.handler import EnqueueRequestsFromMapFunc
>>> from runtime.reconcile import Request
>>> def machine_for_node(node: dict) -> list[Request]:
...     ref = node["metadata"].get("annotations", {}).get("machine.openshift.io/machine")
...     if not ref:
...         return []
...     namespace, _, name = ref.partition("/")
...     return [Request(name, namespace)]
>>> class Queue(list):
...     add = list.append
>>> queue = Queue()
>>> annotations = {"machine.openshift.io/machine": "openshift-machine-api/master-0"}
>>> node = {"metadata": {"name": "node-a", "annotations": annotations}}
>>> EnqueueRequestsFromMapFunc(machine_for_node).create(CreateEvent(node), queue)
>>> queue
[Request(name='master-0', namespace='openshift-machine-api')]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

from runtime.apiversion import group_of
from runtime.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent, request_for
from runtime.jsoncodec import JSON
from runtime.log import get_logger
from runtime.reconcile import Request

_log = get_logger("runtime.handler")


class RequestQueue(Protocol):
    """Where handlers put requests: the controller's :class:`~runtime.workqueue.WorkQueue`."""

    def add(self, item: Request) -> None: ...


@runtime_checkable
class EventHandler(Protocol):
    """Turns each kind of event into requests added to ``queue``."""

    def create(self, event: CreateEvent, queue: RequestQueue) -> None: ...
    def update(self, event: UpdateEvent, queue: RequestQueue) -> None: ...
    def delete(self, event: DeleteEvent, queue: RequestQueue) -> None: ...
    def generic(self, event: GenericEvent, queue: RequestQueue) -> None: ...


# --- the object itself --------------------------------------------------------------------------


class EnqueueRequestForObject:
    """Enqueues the event's own object (the new one for updates). Objects without a name are
    logged and skipped."""

    __slots__ = ()

    def create(self, event: CreateEvent, queue: RequestQueue) -> None:
        self._add(event.object, "create", queue)

    def update(self, event: UpdateEvent, queue: RequestQueue) -> None:
        self._add(event.object_new or event.object_old, "update", queue)

    def delete(self, event: DeleteEvent, queue: RequestQueue) -> None:
        self._add(event.object, "delete", queue)

    def generic(self, event: GenericEvent, queue: RequestQueue) -> None:
        self._add(event.object, "generic", queue)

    @staticmethod
    def _add(obj: JSON | None, kind: str, queue: RequestQueue) -> None:
        request = request_for(obj) if obj else None
        if request is None:
            _log.error("Event without an object name, nothing to enqueue", event=kind)
            return
        queue.add(request)

    def __repr__(self) -> str:
        return "EnqueueRequestForObject()"


# --- owners -------------------------------------------------------------------------------------


class EnqueueRequestForOwner:
    """Enqueues the owner of type ``owner_api_version``/``owner_kind`` named in ``ownerReferences``.

    Owner references match on API *group* and kind, never on version: a reference written with
    ``cpo.dev/v1alpha1`` matches an owner type given as ``cpo.dev/v1beta1``. With
    ``only_controller`` (the default, and what ``owns`` uses) only the reference marked
    ``controller: true`` counts; without it every matching reference is enqueued.

    The request's namespace is the object's own: an ``ownerReference`` cannot cross namespaces.
    For a cluster-scoped owner of namespaced objects pass ``owner_namespaced=False`` (there is no
    discovery here to find that out, unlike controller-runtime's RESTMapper lookup).
    """

    __slots__ = ("_group", "_kind", "_only_controller", "_owner_namespaced", "owner_api_version")

    def __init__(
        self,
        owner_api_version: str,
        owner_kind: str,
        only_controller: bool = True,
        *,
        owner_namespaced: bool = True,
    ) -> None:
        if not owner_api_version or not owner_kind:
            raise ValueError(
                "EnqueueRequestForOwner needs the owner's apiVersion and kind, e.g. "
                f"('apps/v1', 'ReplicaSet'); got ({owner_api_version!r}, {owner_kind!r})"
            )
        self.owner_api_version = owner_api_version
        self._group = group_of(owner_api_version)
        self._kind = owner_kind
        self._only_controller = only_controller
        self._owner_namespaced = owner_namespaced

    def create(self, event: CreateEvent, queue: RequestQueue) -> None:
        for request in self._owners(event.object, set()):
            queue.add(request)

    def update(self, event: UpdateEvent, queue: RequestQueue) -> None:
        seen: set[Request] = set()
        for obj in (event.object_old, event.object_new):
            for request in self._owners(obj, seen):
                queue.add(request)

    def delete(self, event: DeleteEvent, queue: RequestQueue) -> None:
        for request in self._owners(event.object, set()):
            queue.add(request)

    def generic(self, event: GenericEvent, queue: RequestQueue) -> None:
        for request in self._owners(event.object, set()):
            queue.add(request)

    def _owners(self, obj: JSON | None, seen: set[Request]) -> list[Request]:
        """The owner requests of ``obj`` not in ``seen`` (which it extends)."""
        if not obj:
            return []
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict):
            return []
        refs = metadata.get("ownerReferences")
        if not refs:
            return []
        namespace = (metadata.get("namespace") or "") if self._owner_namespaced else ""
        found: list[Request] = []
        for ref in refs:
            if not isinstance(ref, dict):
                continue
            if self._only_controller and ref.get("controller") is not True:
                continue
            if ref.get("kind") != self._kind or group_of(str(ref.get("apiVersion", ""))) != self._group:
                continue
            name = ref.get("name")
            if not name:
                continue
            request = Request(name, namespace)
            if request not in seen:
                seen.add(request)
                found.append(request)
            if self._only_controller:
                break  # the API server allows one controller reference per object
        return found

    def __repr__(self) -> str:
        return (
            f"EnqueueRequestForOwner({self.owner_api_version!r}, {self._kind!r}, "
            f"only_controller={self._only_controller})"
        )


# --- map functions ------------------------------------------------------------------------------


class EnqueueRequestsFromMapFunc:
    """Enqueues the requests ``fn(object)`` returns, each at most once per event.

    For an update, ``fn`` runs on the old and the new object and the union is enqueued: a Node
    that moved from one Machine to another wakes both. ``fn`` must be quick and must not block;
    an exception from it is logged by the source with its traceback and the event is dropped.
    """

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[JSON], Iterable[Request]]) -> None:
        if not callable(fn):
            raise TypeError(f"EnqueueRequestsFromMapFunc needs a function object -> requests, got {fn!r}")
        self._fn = fn

    def create(self, event: CreateEvent, queue: RequestQueue) -> None:
        self._add(event.object, set(), queue)

    def update(self, event: UpdateEvent, queue: RequestQueue) -> None:
        seen: set[Request] = set()
        self._add(event.object_old, seen, queue)
        self._add(event.object_new, seen, queue)

    def delete(self, event: DeleteEvent, queue: RequestQueue) -> None:
        self._add(event.object, set(), queue)

    def generic(self, event: GenericEvent, queue: RequestQueue) -> None:
        self._add(event.object, set(), queue)

    def _add(self, obj: JSON | None, seen: set[Request], queue: RequestQueue) -> None:
        if not obj:
            return
        for request in self._fn(obj):
            if not isinstance(request, Request):
                raise TypeError(
                    f"the map function {self._fn!r} returned {request!r}; it must return "
                    "runtime.reconcile.Request objects"
                )
            if request not in seen:
                seen.add(request)
                queue.add(request)

    def __repr__(self) -> str:
        return f"EnqueueRequestsFromMapFunc({getattr(self._fn, '__qualname__', self._fn)!r})"


# --- function adapter ---------------------------------------------------------------------------


class _HandlerFuncs:
    __slots__ = ("_create", "_delete", "_generic", "_update")

    def __init__(self, create: Any, update: Any, delete: Any, generic: Any) -> None:
        self._create = create
        self._update = update
        self._delete = delete
        self._generic = generic

    def create(self, event: CreateEvent, queue: RequestQueue) -> None:
        if self._create is not None:
            self._create(event, queue)

    def update(self, event: UpdateEvent, queue: RequestQueue) -> None:
        if self._update is not None:
            self._update(event, queue)

    def delete(self, event: DeleteEvent, queue: RequestQueue) -> None:
        if self._delete is not None:
            self._delete(event, queue)

    def generic(self, event: GenericEvent, queue: RequestQueue) -> None:
        if self._generic is not None:
            self._generic(event, queue)


def handler_funcs(
    *,
    create: Callable[[CreateEvent, RequestQueue], None] | None = None,
    update: Callable[[UpdateEvent, RequestQueue], None] | None = None,
    delete: Callable[[DeleteEvent, RequestQueue], None] | None = None,
    generic: Callable[[GenericEvent, RequestQueue], None] | None = None,
) -> EventHandler:
    """An event handler from one function per event kind; a kind without a function is ignored."""
    return _HandlerFuncs(create, update, delete, generic)
