"""Where a work queue's time comes from: the event loop's monotonic clock, or a fake one for tests."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    """A scheduled callback that can still be called off."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """Where the queue and the rate limiters read the time and schedule callbacks."""

    def now(self) -> float:
        """Seconds on a monotonic scale; only differences are meaningful."""
        ...

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` once :meth:`now` reaches ``when`` (at once if it already has)."""
        ...


class MonotonicClock:
    """``time.monotonic`` and the running event loop's timers: the production clock."""

    # The builtin itself, not a method around it: a queue reads the time on every add, get and done.
    now = staticmethod(time.monotonic)

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        # Relative scheduling, so an event loop whose time() has another origin (uvloop) still works.
        loop = asyncio.get_running_loop()
        return loop.call_later(max(0.0, when - time.monotonic()), callback)


class _FakeTimer:
    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that moves only when told to, for tests of delays, backoff and periodic metrics.

    :meth:`advance` runs every timer that falls due, in time order, synchronously, with :meth:`now`
    reading each timer's own due time while its callback runs, so a test can assert the outcome
    right after advancing. A timer scheduled for the past fires on the next advance (``advance(0)``
    included).
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, _FakeTimer]] = []
        self._sequence = itertools.count()

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _FakeTimer(when, callback)
        heapq.heappush(self._timers, (when, next(self._sequence), timer))
        return timer

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, firing the timers due on the way."""
        if seconds < 0:
            raise ValueError(f"a clock cannot go back (advance by {seconds})")
        self.advance_to(self._now + seconds)

    def advance_to(self, target: float) -> None:
        """Move time forward to exactly ``target``, firing the timers due on the way."""
        if target < self._now:
            raise ValueError(f"a clock cannot go back (from {self._now} to {target})")
        while self._timers and self._timers[0][0] <= target:
            when, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, when)
            timer.callback()
        self._now = target

    @property
    def pending_timers(self) -> int:
        """Timers scheduled and neither fired nor cancelled."""
        return sum(1 for _, _, timer in self._timers if not timer.cancelled)
