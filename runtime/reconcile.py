"""Requests, results and the one-method :class:`Reconciler` interface every controller implements.

Reconciliation is *level-based*: a reconciler is told only which object to look at
(:class:`Request`: namespace and name), never what changed. It reads the current state (from the
cache), compares it with the desired state, and acts to bring the two closer. Events for the same
object are collapsed while it waits in the queue, a missed event is harmless because the next
reconcile sees the whole state, and a crash at any point leaves work the next reconcile can finish.

What the return value means to the controller that called it:

=====================================  ==========================================================
``Result()``                           done; forget the object's backoff
``Result(requeue_after=30)``           done for now; look again in 30 s (backoff forgotten)
``Result(requeue=True)``               not done; requeue with the rate limiter's backoff
raise an exception                     not done; logged with its traceback, requeued with backoff
raise :class:`TerminalError`           failed in a way retrying cannot fix; logged, not requeued
=====================================  ==========================================================

Example (a controller calls the reconciler; ``Controller("configmaps", reconciler)`` would):

>>> import asyncio
>>> from runtime.reconcile import Request, Result, reconciler_func
>>> async def reconcile(request: Request) -> Result:
...     print("looking at", request)  # read the object from the cache, compare, act
...     return Result(requeue_after=30)
>>> reconciler = reconciler_func(reconcile)
>>> asyncio.run(reconciler.reconcile(Request("cfg", namespace="default")))
looking at default/cfg
Result(requeue=False, requeue_after=30)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Request:
    """Which object to reconcile. ``namespace`` is ``""`` for cluster-scoped objects."""

    name: str
    namespace: str = ""

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True, slots=True)
class Result:
    """What the controller does after a reconcile that raised nothing.

    ``requeue_after`` (seconds) wins over ``requeue`` when both are set, as in controller-runtime.
    """

    requeue: bool = False
    requeue_after: float = 0.0


@runtime_checkable
class Reconciler(Protocol):
    """Drives one object toward its desired state. See the module docstring for the contract."""

    async def reconcile(self, request: Request) -> Result: ...


class TerminalError(Exception):
    """A reconcile failure that retrying cannot fix: counted and logged, but not requeued.

    The object is reconciled again on its next event. Wrap the cause, as in
    ``raise TerminalError("spec.providerSpec.value is not a LocalMachineProviderSpec") from err``:
    the controller looks for a terminal error along the ``__cause__`` chain.
    """


class _FuncReconciler:
    """A :class:`Reconciler` made from a plain coroutine function."""

    __slots__ = ("_func",)

    def __init__(self, func: Callable[[Request], Awaitable[Result]]) -> None:
        self._func = func

    async def reconcile(self, request: Request) -> Result:
        return await self._func(request)

    def __repr__(self) -> str:
        return f"reconciler_func({getattr(self._func, '__qualname__', self._func)!r})"


def reconciler_func(func: Callable[[Request], Awaitable[Result]]) -> Reconciler:
    """Adapt ``async def f(request) -> Result`` to the :class:`Reconciler` interface."""
    return _FuncReconciler(func)
