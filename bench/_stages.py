"""Parts of the runtime's event path, each run alone as a ``bench.runtime --impl``: the steady-rate
breakdown by subtraction (``bench.vs_kopf --stages``).

A lone event at a steady rate costs far more than its share of a burst (docs/performance.md, "The
steady-rate cost"), and a sampling profiler splits that cost poorly: every stage runs with cold
caches after the process's wake-up. Running each prefix of the path as its own contender, on the
same patches at the same time, measures what each stage adds:

``reader``     the watch read with :meth:`Client.watch_events <runtime.client.Client.watch_events>`,
               each event handed straight to the tracker: the wake-up, TLS, HTTP and one decode,
               the least any watch consumer in this process pays;
``informer``   + the informer (:class:`runtime.cache.Informer`: transform, store encoding, indexes,
               handler dispatch), the tracker called from the handler's update, in the deferred form
               the controller's sources use (the old state not decoded);
``bare``       the reader feeding the standin's plain dict and queue, read by one worker task
               (``bench/_standin.py``): what any controller on this reader pays at least (one
               store write, one task switch, one read), none of the runtime's bookkeeping;
``runtime``    + the controller (``EnqueueRequestForObject``, the rate-limited workqueue, a worker
               task, metrics, and the reconciler's cache read): the whole path
               (:class:`bench.runtime.RuntimeImpl`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from bench._common import API_VERSION, KIND, Tracker
from bench._standin import StandIn
from runtime.jsoncodec import JSON


async def list_then_watch(
    client: Any, on_object: Callable[[JSON], None], on_synced: Callable[[int], None]
) -> None:
    """List the bench's objects and hand each to ``on_object``, call ``on_synced(count)``, then
    watch for ever from the list's version with ``Client.watch_events``, handing every event's
    object (bookmarks aside) to ``on_object`` inside the read callback."""
    listed = await client.list(API_VERSION, KIND)
    for obj in listed["items"]:
        on_object(obj)
    on_synced(len(listed["items"]))
    version = listed["metadata"]["resourceVersion"]

    def on_event(event: JSON) -> None:
        nonlocal version
        obj = event["object"]
        version = obj["metadata"].get("resourceVersion") or version
        if event["type"] != "BOOKMARK":
            on_object(obj)

    while True:
        await client.watch_events(
            API_VERSION, KIND, on_event=on_event, resource_version=version, timeout_seconds=600
        )


class ReaderImpl:
    """List once, then push every watch event's object to the tracker: no store, no queue."""

    def __init__(self, client: Any, tracker: Tracker, delivery: bool = False) -> None:
        self.client = client
        self.tracker = tracker
        self.synced = asyncio.Event()
        self.count = 0
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self, stop: asyncio.Event) -> None:
        self.tasks = [asyncio.create_task(self._read())]

    async def wait_synced(self) -> int:
        await self.synced.wait()
        return self.count

    async def _read(self) -> None:
        observe = self.tracker.observe

        def on_object(obj: JSON) -> None:
            meta = obj["metadata"]
            observe(meta["name"], meta.get("annotations") or {})

        def on_synced(count: int) -> None:
            self.count = count
            self.synced.set()

        await list_then_watch(self.client, on_object, on_synced)

    @staticmethod
    async def cache_bytes(client: Any, n: int) -> int:
        return 0  # it keeps nothing


class InformerImpl:
    """A runtime Informer whose one handler calls the tracker: the store without the controller."""

    def __init__(self, client: Any, tracker: Tracker, delivery: bool = False) -> None:
        from runtime.cache import Cache

        self.cache = Cache(client)
        self.informer = self.cache.informer_for(API_VERSION, KIND)
        observe = tracker.observe

        class Observer:
            def on_add(self, obj: JSON, is_in_initial_list: bool) -> None:
                observe(obj["metadata"]["name"], obj["metadata"].get("annotations") or {})

            def on_update(self, old: JSON, new: JSON) -> None:
                observe(new["metadata"]["name"], new["metadata"].get("annotations") or {})

            def on_update_deferred(self, load_old: Any, new: JSON) -> None:
                # The form the controller's Kind source takes: the old state is not decoded.
                observe(new["metadata"]["name"], new["metadata"].get("annotations") or {})

            def on_delete(self, obj: JSON) -> None:
                pass

        self.informer.add_event_handler(Observer())
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self, stop: asyncio.Event) -> None:
        self.tasks = [asyncio.create_task(self.cache.start(stop))]

    async def wait_synced(self) -> int:
        await self.informer.wait_for_sync()
        return len(self.informer)

    @staticmethod
    async def cache_bytes(client: Any, n: int) -> int:
        from bench.runtime import RuntimeImpl

        return await RuntimeImpl.cache_bytes(client, n)


class BareImpl(StandIn):
    """The standin's dict, queue and worker, fed by the watch reader of the runtime instead of
    aiohttp's stream: the least a controller on that reader pays."""

    async def _reflect(self) -> None:
        await list_then_watch(self.client, self._store, lambda count: self.synced.set())

    def _store(self, obj: JSON) -> None:
        meta = obj["metadata"]
        meta.pop("managedFields", None)
        key = f"{meta['namespace']}/{meta['name']}"
        self.store[key] = obj
        self._enqueue(key)
