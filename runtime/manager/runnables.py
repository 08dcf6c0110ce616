"""The manager's runnable groups: which runnables start together, and in which order."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final, Protocol, runtime_checkable

from ..runnable import Runnable, needs_leader_election

GROUPS: Final = ("webhooks", "caches", "others", "leader-election")
"""The groups in start order; they stop in reverse."""


@runtime_checkable
class CacheLike(Protocol):
    """What puts a runnable in the manager's cache group: a runnable that can be waited on until
    synced (:class:`~runtime.cache.Cache`, or any other informer-like source of your own)."""

    async def start(self, stop: asyncio.Event) -> None: ...

    async def wait_for_cache_sync(self) -> None: ...


def group_for(runnable: object) -> str:
    """The group ``runnable`` starts with: caches (``wait_for_cache_sync``), webhook servers
    (``started_checker``), runnables that run without the lease, and leader runnables."""
    if callable(getattr(runnable, "wait_for_cache_sync", None)):
        return "caches"
    if callable(getattr(runnable, "started_checker", None)):
        return "webhooks"
    if not needs_leader_election(runnable):
        return "others"
    return "leader-election"


class _Group:
    """Runnables started and stopped together, each in its own task under one stop event."""

    def __init__(self, name: str, on_exit: Callable[[_Group, asyncio.Task[None]], None]) -> None:
        self.name = name
        self.runnables: list[Runnable] = []
        self.stop = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []
        self.started = False
        self._on_exit = on_exit

    def add(self, runnable: Runnable) -> None:
        self.runnables.append(runnable)
        if self.started and not self.stop.is_set():
            self._launch(runnable)

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        for runnable in self.runnables:
            self._launch(runnable)

    def _launch(self, runnable: Runnable) -> None:
        task = asyncio.get_running_loop().create_task(
            runnable.start(self.stop), name=f"{self.name}:{type(runnable).__name__}"
        )
        self.tasks.append(task)
        task.add_done_callback(lambda t: self._on_exit(self, t))

    def cancel(self) -> None:
        self.stop.set()
        for task in self.tasks:
            task.cancel()

    async def stop_within(self, deadline: float) -> bool:
        """Set stop, wait until ``deadline`` (monotonic), cancel stragglers; True if none straggled."""
        self.stop.set()
        pending = [task for task in self.tasks if not task.done()]
        clean = True
        if pending:
            _, still = await asyncio.wait(pending, timeout=max(0.0, deadline - time.monotonic()))
            if still:
                clean = False
                for task in still:
                    task.cancel()
                await asyncio.wait(still)
        return clean
