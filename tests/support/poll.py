"""Waiting for a condition in async tests without relying on timing luck.

:func:`eventually` is the one way the tests wait for something to become true: it polls a
predicate until it holds or a deadline passes, and on failure says what was awaited and what it
last saw. :func:`holds_for` is its mirror image (something must stay true for a while), and
:func:`let_other_tasks_run` gives ready tasks a few turns of the event loop without waiting for
time to pass. :func:`wait_until` is :func:`eventually` for synchronous tests (processes and
signals, where no event loop runs).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

DEADLINE = 5.0
"""Generous bound on a wait that should finish almost at once; reached only when a test fails."""

MEMORY_POLL_INTERVAL = 0.005
"""Pause between polls of a plain predicate: it reads memory, so polling often costs nothing."""

IO_POLL_INTERVAL = 0.05
"""Pause between polls of a coroutine predicate: each poll is a request to a server under test."""

_NOTHING_SEEN = object()


async def eventually(
    predicate: Callable[[], Any],
    *,
    timeout: float,  # noqa: ASYNC109 - the deadline of the whole poll, not of one awaited call
    message: str,
    interval: float | None = None,
) -> Any:
    """Poll ``predicate`` until it returns a truthy value and return that value.

    ``predicate`` is a plain function or one returning an awaitable (an ``async def``). After
    ``timeout`` seconds without a truthy value the test fails with ``message``, the last value seen
    and the last exception raised. An exception from ``predicate`` counts as "not yet" and is polled
    again, except :class:`AssertionError`: a predicate that asserts is giving the test's verdict, so
    that propagates at once. ``interval`` defaults to :data:`MEMORY_POLL_INTERVAL` for a predicate
    that returns its value directly and :data:`IO_POLL_INTERVAL` for one that returns an awaitable.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last_value: object = _NOTHING_SEEN
    last_error: Exception | None = None
    while True:
        awaited = False
        try:
            result = predicate()
            if inspect.isawaitable(result):
                awaited = True
                result = await result
        except AssertionError:
            raise
        except Exception as error:  # any failure of a poll means "not yet"; reported on timeout
            last_error = error
        else:
            if result:
                return result
            last_value = result
        if loop.time() >= deadline:
            seen = [] if last_value is _NOTHING_SEEN else [f"last value: {last_value!r}"]
            if last_error is not None:
                seen.append(f"last error: {last_error!r}")
            details = f" ({'; '.join(seen)})" if seen else ""
            raise AssertionError(f"not within {timeout:g} s: {message}{details}") from last_error
        pause = interval if interval is not None else IO_POLL_INTERVAL if awaited else MEMORY_POLL_INTERVAL
        await asyncio.sleep(pause)  # allow-sleep: poll interval inside a deadline loop


async def holds_for(predicate: Callable[[], Awaitable[object]], *, duration: float, message: str) -> None:
    """Poll ``predicate`` for ``duration`` seconds; fail with ``message`` the first time it is falsy."""
    loop = asyncio.get_running_loop()
    end = loop.time() + duration
    while loop.time() < end:
        if not await predicate():
            raise AssertionError(f"stopped holding: {message}")
        await asyncio.sleep(IO_POLL_INTERVAL)  # allow-sleep: poll interval of an observation window


async def let_other_tasks_run(turns: int = 20) -> None:
    """Give the event loop a few turns so that ready tasks run; this waits for no time to pass."""
    for _ in range(turns):
        await asyncio.sleep(0)


def wait_until(predicate: Callable[[], Any], *, timeout: float, message: str, interval: float = 0.02) -> Any:
    """Synchronous :func:`eventually`: poll ``predicate`` until it returns something truthy (that
    value is returned); fail with ``message`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout:g} s: {message} (last value: {result!r})")
        time.sleep(interval)  # allow-sleep: poll interval inside a deadline loop
