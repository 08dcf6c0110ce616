"""The :class:`Runnable` interface: anything a manager starts, runs and stops.

Caches, controllers, the webhook server, the metrics and probe servers and leader election are all
runnables. A runnable's :meth:`Runnable.start` **blocks**: it runs until the ``stop`` event is set,
then winds down (a controller stops taking work and finishes the reconciles in flight) and
returns. Raising from ``start`` means the runnable failed, and the manager stops everything.

Optional capabilities are separate one-method protocols, checked with ``isinstance``:

- :class:`LeaderElectionRunnable`: ``need_leader_election()`` says whether the runnable may run
  only while this process holds the leader lease. Controllers do (the default for anything that
  does not say); caches, webhook and metrics servers do not.

Example (``manager.add(Ticker())`` would run it with the manager's stop event):

>>> import asyncio, contextlib
>>> from runtime.runnable import needs_leader_election
>>> class Ticker:
...     async def start(self, stop: asyncio.Event) -> None:
...         while not stop.is_set():
...             print("tick")
...             with contextlib.suppress(TimeoutError):
...                 await asyncio.wait_for(stop.wait(), timeout=1.0)
...
...     def need_leader_election(self) -> bool:
...         return False
>>> needs_leader_election(Ticker())
False
>>> async def run_until_stopped() -> None:
...     stop = asyncio.Event()
...     asyncio.get_running_loop().call_later(0.1, stop.set)
...     await Ticker().start(stop)
>>> asyncio.run(run_until_stopped())
tick
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable


@runtime_checkable
class Runnable(Protocol):
    """Something the manager runs: ``start`` blocks until ``stop`` is set and it has wound down."""

    async def start(self, stop: asyncio.Event) -> None: ...


@runtime_checkable
class LeaderElectionRunnable(Protocol):
    """A runnable that says whether it may run only while this process is the leader."""

    def need_leader_election(self) -> bool: ...


def needs_leader_election(runnable: object) -> bool:
    """Whether ``runnable`` must wait for the lease: true unless it says otherwise."""
    if isinstance(runnable, LeaderElectionRunnable):
        return runnable.need_leader_election()
    return True


class _FuncRunnable:
    __slots__ = ("_func", "_leader")

    def __init__(self, func: Callable[[asyncio.Event], Awaitable[None]], leader: bool) -> None:
        self._func = func
        self._leader = leader

    async def start(self, stop: asyncio.Event) -> None:
        await self._func(stop)

    def need_leader_election(self) -> bool:
        return self._leader


def runnable_func(
    func: Callable[[asyncio.Event], Awaitable[None]], *, need_leader_election: bool = True
) -> Runnable:
    """Adapt ``async def f(stop) -> None`` to the :class:`Runnable` interface."""
    return _FuncRunnable(func, need_leader_election)
