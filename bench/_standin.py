"""A bare list + watch + queue loop over :meth:`runtime.client.Client.watch`: the floor under the runtime.

Not the runtime: no reflector recovery, no indexers, no metrics, no rate limiter. ``bench.runtime
--impl standin`` runs it in place of Cache + Controller so that the framework's own cost can be read
as the difference between the two (and so the harness could be exercised before the runtime's
cache and controller existed).
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from typing import Any

from bench._common import API_VERSION, KIND, Tracker
from runtime.jsoncodec import JSON


class StandIn:
    def __init__(self, client: Any, tracker: Tracker, delivery: bool = False) -> None:
        self.client = client
        self.delivery = delivery
        self.tracker = tracker
        self.store: dict[str, JSON] = {}
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.queued: set[str] = set()
        self.synced = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self, stop: asyncio.Event) -> None:
        self.tasks = [asyncio.create_task(self._reflect()), asyncio.create_task(self._work())]

    async def wait_synced(self) -> int:
        await self.synced.wait()
        return len(self.store)

    def _enqueue(self, key: str) -> None:
        if key not in self.queued:
            self.queued.add(key)
            self.queue.put_nowait(key)

    async def _reflect(self) -> None:
        listed = await self.client.list(API_VERSION, KIND)
        for obj in listed["items"]:
            obj["metadata"].pop("managedFields", None)
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            self.store[key] = obj
            self._enqueue(key)
        self.synced.set()
        rv = listed["metadata"]["resourceVersion"]
        async for event in self.client.watch(API_VERSION, KIND, resource_version=rv, timeout_seconds=600):
            obj = event["object"]
            if event["type"] == "BOOKMARK":
                continue
            obj["metadata"].pop("managedFields", None)
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            if event["type"] == "DELETED":
                self.store.pop(key, None)
            else:
                self.store[key] = obj
                if self.delivery:
                    self.tracker.delivered(obj)
            self._enqueue(key)

    async def _work(self) -> None:
        observe = self.tracker.observe
        while True:
            key = await self.queue.get()
            self.queued.discard(key)
            obj = self.store.get(key)
            if obj is not None:
                meta = obj["metadata"]
                observe(meta["name"], meta.get("annotations") or {})

    @staticmethod
    async def cache_bytes(client: Any, n: int) -> int:
        """tracemalloc bytes held by a second, fresh store of the listed objects."""
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        listed = await client.list(API_VERSION, KIND)
        store = {}
        for obj in listed["items"]:
            obj["metadata"].pop("managedFields", None)
            store[f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"] = obj
        del listed
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        assert len(store) == n
        return held
