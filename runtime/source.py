"""Sources: where a controller's events come from.

A source is started by its controller with the controller's queue; from then on it turns every
event into requests through its event handler, after asking its predicates. Two kinds:

* :class:`Kind`: the objects of one ``(apiVersion, kind)`` in the cache. It registers an event
  handler on the cache's informer (which replays the objects already cached as creates), and
  :meth:`Kind.wait_for_sync` waits until the informer has listed everything.
* :class:`Channel`: events from outside the API server, e.g. an etcd member-list watcher, as
  :class:`~runtime.event.GenericEvent` s read from an ``asyncio.Queue`` or an async iterator.
  ``GenericEvent.for_request(Request(...))`` names an object by namespace and name only.

Sources are started by :meth:`runtime.controller.Controller.start` (or by ``watch`` once the
controller runs); a source that holds resources also implements :class:`StoppableSource`, and the
controller stops it when it stops.

Example: one controller fed by the cache's Namespaces and by a queue of outside events:

>>> import asyncio
>>> from runtime.cache import Cache
>>> from runtime.client import Client
>>> from runtime.controller import Controller
>>> from runtime.event import GenericEvent
>>> from runtime.handler import EnqueueRequestForObject
>>> from runtime.reconcile import Request, Result, reconciler_func
>>> from runtime.source import Channel, Kind
>>> async def main() -> list[str]:
...     reconciled: set[str] = set()
...     both = asyncio.Event()
...
...     async def reconcile(request: Request) -> Result:
...         reconciled.add(request.name)
...         if {"default", "cp"} <= reconciled:
...             both.set()
...         return Result()
...
...     async with await Client.from_kubeconfig(kubeconfig) as client:
...         cache = Cache(client)
...         controller = Controller("sources-example", reconciler_func(reconcile))
...         member_changes: asyncio.Queue[GenericEvent] = asyncio.Queue()
...         controller.watch(Kind(cache, "v1", "Namespace", EnqueueRequestForObject()))
...         controller.watch(Channel(member_changes, EnqueueRequestForObject()))
...         stop = asyncio.Event()
...         running = [asyncio.create_task(r.start(stop)) for r in (cache, controller)]
...         member_changes.put_nowait(GenericEvent.for_request(Request("cp", "openshift-machine-api")))
...         await asyncio.wait_for(both.wait(), timeout=30)
...         stop.set()
...         await asyncio.gather(*running)
...     return sorted({"default", "cp"} & reconciled)
>>> asyncio.run(main())
['cp', 'default']
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any, Protocol, runtime_checkable

from runtime.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from runtime.handler import EventHandler, RequestQueue
from runtime.jsoncodec import JSON
from runtime.log import get_logger
from runtime.predicate import Predicate, check_predicates
from runtime.reconcile import Request

_log = get_logger("runtime.source")


@runtime_checkable
class Source(Protocol):
    """Feeds a controller's queue. ``start`` registers and returns; it must not block."""

    async def start(self, queue: RequestQueue) -> None: ...

    async def wait_for_sync(self) -> None:
        """Return once the source has delivered its initial state (at once if it has none)."""
        ...


@runtime_checkable
class StoppableSource(Protocol):
    """A source that holds something (a task, an informer registration) to let go on stop."""

    async def stop(self) -> None: ...


# --- the cache's side: what runtime.cache.Cache and its informers provide ------------------------


class Informer(Protocol):
    """What :class:`Kind` needs of an informer."""

    def add_event_handler(self, handler: Any) -> Any: ...
    def remove_event_handler(self, registration: Any) -> None: ...
    def has_synced(self) -> bool: ...
    async def wait_for_sync(self) -> None: ...


class InformerCache(Protocol):
    """What :class:`Kind` needs of a cache: :meth:`runtime.cache.Cache.informer_for`."""

    def informer_for(self, api_version: str, kind: str) -> Informer: ...


def _check_handler(handler: object, where: str) -> EventHandler:
    if not isinstance(handler, EventHandler):
        raise TypeError(
            f"{where}: {handler!r} is not an event handler (it needs create, update, delete and "
            "generic methods; see runtime.handler)"
        )
    return handler


class _Dispatch:
    """Informer callbacks → events → predicates → handler → queue, never raising into the informer."""

    __slots__ = ("_handler", "_predicates", "_queue", "_source")

    def __init__(
        self, source: object, handler: EventHandler, predicates: tuple[Predicate, ...], queue: RequestQueue
    ) -> None:
        self._source = source
        self._handler = handler
        self._predicates = predicates
        self._queue = queue

    def on_add(self, obj: JSON, is_in_initial_list: bool) -> None:
        self._deliver("create", CreateEvent(obj, is_in_initial_list), obj)

    def on_update(self, old: JSON, new: JSON) -> None:
        self._deliver("update", UpdateEvent(old, new), new)

    def on_update_deferred(self, load_old: Callable[[], JSON], new: JSON) -> None:
        """The informer's cheaper form: the old state is decoded only if something reads it."""
        self._deliver("update", UpdateEvent.deferred(load_old, new), new)

    def on_delete(self, obj: JSON) -> None:
        self._deliver("delete", DeleteEvent(obj), obj)

    def on_generic(self, obj: JSON) -> None:
        self._deliver("generic", GenericEvent(obj), obj)

    def _deliver(
        self, kind: str, event: CreateEvent | UpdateEvent | DeleteEvent | GenericEvent, obj: JSON
    ) -> None:
        """Ask each predicate's ``kind`` method, then the handler's; a failure is logged, not raised."""
        try:
            for predicate in self._predicates:
                if not getattr(predicate, kind)(event):
                    return
            getattr(self._handler, kind)(event, self._queue)
        except Exception as err:
            self._failed(kind, obj, err)

    def _failed(self, kind: str, obj: JSON | None, err: Exception) -> None:
        # A bug in a predicate or map function must cost one event, not the informer.
        metadata = obj.get("metadata") if isinstance(obj, dict) else None
        name = metadata.get("name") if isinstance(metadata, dict) else None
        namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
        _log.error(
            "Event handler or predicate failed; event dropped",
            exc_info=err,
            source=repr(self._source),
            event=kind,
            eventObject=f"{namespace}/{name}" if namespace else name,
        )


# --- Kind ---------------------------------------------------------------------------------------


class Kind:
    """The objects of one ``(api_version, kind)`` in ``cache``, handled by ``handler``.

    Every predicate must pass an event for it to reach the handler. Start it once.
    """

    def __init__(
        self,
        cache: InformerCache,
        api_version: str,
        kind: str,
        handler: EventHandler,
        *predicates: Predicate,
    ) -> None:
        if not api_version or not kind:
            raise ValueError(
                "Kind needs an apiVersion and a kind, e.g. ('v1', 'ConfigMap'); "
                f"got ({api_version!r}, {kind!r})"
            )
        self.cache = cache
        self.api_version = api_version
        self.kind = kind
        self.handler = _check_handler(handler, f"Kind({api_version}, {kind})")
        self.predicates = check_predicates(predicates, f"Kind({api_version}, {kind})")
        self._informer: Informer | None = None
        self._registration: Any = None

    async def start(self, queue: RequestQueue) -> None:
        """Register with the cache's informer (created if needed); cached objects replay as creates."""
        if self._informer is not None:
            raise RuntimeError(f"{self!r} was started twice; give each controller its own source")
        informer = self.cache.informer_for(self.api_version, self.kind)
        self._informer = informer
        self._registration = informer.add_event_handler(_Dispatch(self, self.handler, self.predicates, queue))

    async def wait_for_sync(self) -> None:
        """Wait until the informer has listed every object once."""
        if self._informer is None:
            raise RuntimeError(f"{self!r}: wait_for_sync before start")
        await self._informer.wait_for_sync()

    def has_synced(self) -> bool:
        return self._informer is not None and self._informer.has_synced()

    async def stop(self) -> None:
        """Unregister from the informer; later events are no longer handled."""
        if self._informer is not None and self._registration is not None:
            self._informer.remove_event_handler(self._registration)
            self._registration = None

    def __repr__(self) -> str:
        return f"Kind({self.api_version}, {self.kind})"


# --- Channel ------------------------------------------------------------------------------------


class Channel:
    """Generic events from ``events``, an ``asyncio.Queue`` or an async iterator, handled by ``handler``.

    Items are :class:`~runtime.event.GenericEvent` s; a bare :class:`~runtime.reconcile.Request`
    is accepted as ``GenericEvent.for_request(request)``. Anything else is logged and skipped.
    A channel feeds one controller; it reads until the iterator ends or the controller stops.
    """

    def __init__(
        self,
        events: asyncio.Queue[Any] | AsyncIterable[Any],
        handler: EventHandler,
        *predicates: Predicate,
    ) -> None:
        if not isinstance(events, asyncio.Queue | AsyncIterable):
            raise TypeError(
                f"Channel needs an asyncio.Queue or an async iterator of GenericEvents, got {events!r}"
            )
        self.events = events
        self.handler = _check_handler(handler, "Channel")
        self.predicates = check_predicates(predicates, "Channel")
        self._task: asyncio.Task[None] | None = None

    async def start(self, queue: RequestQueue) -> None:
        """Start reading events in a task of its own; returns at once."""
        if self._task is not None:
            raise RuntimeError(f"{self!r} was started twice; a channel feeds one controller")
        dispatch = _Dispatch(self, self.handler, self.predicates, queue)
        self._task = asyncio.get_running_loop().create_task(self._run(dispatch), name=repr(self))

    async def wait_for_sync(self) -> None:
        """A channel has no initial state: returns at once."""

    async def stop(self) -> None:
        """Stop reading; events not read yet stay in the queue or iterator."""
        task = self._task
        if task is None or task.done():
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _items(self) -> AsyncIterator[Any]:
        events = self.events
        if isinstance(events, asyncio.Queue):
            while True:
                yield await events.get()
        else:
            async for item in events:
                yield item

    async def _run(self, dispatch: _Dispatch) -> None:
        try:
            async for item in self._items():
                if isinstance(item, Request):
                    item = GenericEvent.for_request(item)
                if not isinstance(item, GenericEvent) or not isinstance(item.object, dict):
                    _log.error(
                        "Channel item is not a GenericEvent with an object dict; skipped",
                        source=repr(self),
                        item=repr(item),
                    )
                    continue
                dispatch.on_generic(item.object)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            _log.error("Channel event stream failed; no more events from it", exc_info=err, source=repr(self))

    def __repr__(self) -> str:
        return f"Channel({type(self.events).__name__})"
