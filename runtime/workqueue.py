"""The controllers' work queue: client-go's rate-limited delaying workqueue, on asyncio.

A controller turns watch events into *keys* and feeds them here; workers take keys out, reconcile,
and hand them back. The queue's rules are what make that safe with many workers:

* **Dedupe.** A key added while it already waits is queued once (the *dirty* set). Controllers
  are level-based, so N events for one object need one reconcile, not N.
* **One worker per key.** A key a worker holds (between :meth:`WorkQueue.get` and
  :meth:`WorkQueue.done`) is never handed to a second worker. Adding it meanwhile marks it dirty,
  and :meth:`WorkQueue.done` puts it back, so the change that arrived mid-reconcile is seen by
  one more reconcile.
* **Delays.** :meth:`WorkQueue.add_after` adds a key once a delay has passed; a key already
  waiting keeps whichever ready time is earlier. A delay ≤ 0 adds at once.
* **Rate limits.** :meth:`WorkQueue.add_rate_limited` asks a :class:`RateLimiter` for the delay
  (per-key exponential backoff by default); :meth:`WorkQueue.forget` resets the key's backoff
  after a success.

Shutdown: drain in-flight only
------------------------------
client-go's classic queue keeps handing out queued keys after ``ShutDown`` until it is empty, to
workers whose contexts are already cancelled; controller-runtime's priority queue stops at once.
We do the latter: :meth:`WorkQueue.shutdown` drops every waiting and delayed key, wakes blocked
workers with :class:`QueueShutDown`, and ignores later adds. Keys workers already hold may still
be marked :meth:`~WorkQueue.done`, and :meth:`WorkQueue.shutdown_with_drain` waits for that. Nothing
is lost by dropping: a controller rebuilds its queue from a fresh list when it starts again.

:meth:`WorkQueue.get` signals shutdown by raising :class:`QueueShutDown` (like Python 3.13's
``asyncio.QueueShutDown``), so a worker loop needs no sentinel checks and ``get`` stays typed as
returning a key.

Time
----
All time comes from a :class:`Clock`: :class:`MonotonicClock` (asyncio timers, immune to wall
clock jumps) by default, :class:`FakeClock` in tests, where :meth:`FakeClock.advance` fires due
timers synchronously so delays and backoff are tested without sleeping.

Metrics
-------
A queue with a name exports controller-runtime's ``workqueue_*`` families (see
:mod:`runtime.metrics`) with the classic queue's semantics: depth +1 per accepted add and −1 per
get; adds counts accepted (non-duplicate) adds; queue duration runs from a key's first add to its
get; work duration from get to done; retries counts every ``add_after`` call (including the rate
limited ones and those with delay ≤ 0); unfinished work and longest running processor are
refreshed every 0.5 s by a clock timer that :meth:`WorkQueue.shutdown` stops (until then the
timer keeps the queue alive, so shut queues down when done with them). Label children are looked
up once, at construction, and are :mod:`runtime.metrics`' lock-free event-loop series: about
1 µs per item for the metrics (prometheus_client's locked children cost ~6 µs) on top of the
queue's own ~0.6 µs — see ``bench/workqueue.py``.

Concurrency
-----------
Not thread-safe: a queue belongs to one event loop, and its methods must be called from that
loop's thread. Delays need the loop running (:meth:`WorkQueue.add_after` schedules a timer).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

from runtime.metrics import WorkqueueMetrics, init_workqueue_metrics

T = TypeVar("T", bound=Hashable)

UNFINISHED_WORK_UPDATE_PERIOD: Final = 0.5
"""Seconds between refreshes of the unfinished-work and longest-running-processor gauges."""

DEFAULT_BASE_DELAY: Final = 0.005
DEFAULT_MAX_DELAY: Final = 1000.0
DEFAULT_QPS: Final = 10.0
DEFAULT_BURST: Final = 100


class QueueShutDown(Exception):
    """Raised by :meth:`WorkQueue.get` once the queue is shut down: the worker should exit."""


# --- clocks -------------------------------------------------------------------------------------


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

    def now(self) -> float:
        return time.monotonic()

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


# --- rate limiters ------------------------------------------------------------------------------


class RateLimiter(Protocol):
    """Decides how long a key waits before it is retried."""

    def when(self, item: Hashable) -> float:
        """Seconds ``item`` should wait now; counts as one more retry of it."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item``: its next :meth:`when` starts from scratch."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many retries of ``item`` are being tracked."""
        ...


class ItemExponentialFailureRateLimiter:
    """Per-key exponential backoff: ``base_delay * 2**failures``, capped at ``max_delay``.

    With the defaults a key waits 5 ms, 10 ms, 20 ms, … and from the 19th retry on 1000 s, until
    :meth:`forget` resets it.
    """

    def __init__(self, base_delay: float = DEFAULT_BASE_DELAY, max_delay: float = DEFAULT_MAX_DELAY) -> None:
        if base_delay < 0 or max_delay < 0:
            raise ValueError(f"delays must not be negative (base {base_delay}, max {max_delay})")
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        try:
            delay = self._base_delay * 2.0**failures
        except OverflowError:  # Python raises where Go's float arithmetic saturates
            return self._max_delay
        return min(delay, self._max_delay)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """One token bucket for all keys: ``burst`` retries at once, then ``qps`` per second.

    The bucket starts full. Each :meth:`when` takes a token; when none is left the caller is told
    to wait until one will have accrued, and the bucket goes into debt (tokens below zero), so
    successive callers are spaced ``1/qps`` apart, as golang.org/x/time/rate reservations are.
    Keys are not tracked: :meth:`forget` does nothing and :meth:`num_requeues` is 0.
    """

    def __init__(
        self, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST, clock: Clock | None = None
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"qps must be positive and burst at least 1 (qps {qps}, burst {burst})")
        self._qps = qps
        self._burst = float(burst)
        self._clock: Clock = MonotonicClock() if clock is None else clock
        self._tokens = float(burst)
        self._last = self._clock.now()

    def when(self, item: Hashable) -> float:
        now = self._clock.now()
        elapsed = now - self._last
        if elapsed > 0:
            self._tokens = min(self._burst, self._tokens + elapsed * self._qps)
            self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The strictest of several limiters: every one is consulted, the longest delay wins."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters = limiters

    def when(self, item: Hashable) -> float:
        # Every limiter must see the retry (it counts failures / takes a token), so no short cut.
        return max(limiter.when(item) for limiter in self._limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)


def default_controller_rate_limiter(clock: Clock | None = None) -> RateLimiter:
    """client-go's ``DefaultControllerRateLimiter``: per-key 5 ms → 1000 s, overall 10 qps / 100 burst.

    controller-runtime ≥ v0.23 dropped the bucket and uses the per-key backoff alone; we keep the
    classic pair (DESIGN §5) so that a storm of failing keys cannot retry faster than 10/s overall.
    """
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(DEFAULT_BASE_DELAY, DEFAULT_MAX_DELAY),
        BucketRateLimiter(DEFAULT_QPS, DEFAULT_BURST, clock),
    )


# --- options ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkQueueOptions:
    """How to build a :class:`WorkQueue`. ``None`` means "use the default" named per field."""

    name: str | None = None
    """Queue name, the ``name`` label of its metrics. Defaults to none: an unnamed queue has no metrics."""

    controller: str | None = None
    """The ``controller`` label of its metrics. Defaults to ``name``, as controller-runtime does."""

    rate_limiter: RateLimiter | None = None
    """Delays for :meth:`WorkQueue.add_rate_limited`. Defaults to
    :func:`default_controller_rate_limiter` on the queue's clock."""

    clock: Clock | None = None
    """Time source and timers. Defaults to :class:`MonotonicClock`."""

    metrics: bool | None = None
    """Export ``workqueue_*`` metrics. Defaults to true when ``name`` is set; needs a name."""

    def with_defaults(self) -> ResolvedWorkQueueOptions:
        """Fill in every unset field; the one place where the defaults above are applied."""
        clock: Clock = MonotonicClock() if self.clock is None else self.clock
        metrics = self.name is not None if self.metrics is None else self.metrics
        if metrics and self.name is None:
            raise ValueError("a workqueue needs a name to export metrics")
        rate_limiter = (
            default_controller_rate_limiter(clock) if self.rate_limiter is None else self.rate_limiter
        )
        return ResolvedWorkQueueOptions(
            name=self.name,
            controller=self.name if self.controller is None else self.controller,
            rate_limiter=rate_limiter,
            clock=clock,
            metrics=metrics,
        )


@dataclass(frozen=True, slots=True)
class ResolvedWorkQueueOptions:
    """:class:`WorkQueueOptions` with every default applied."""

    name: str | None
    controller: str | None
    rate_limiter: RateLimiter
    clock: Clock
    metrics: bool


# --- the queue ----------------------------------------------------------------------------------

# A delayed add: (ready time, tie-breaking sequence number, key). The sequence number keeps keys,
# which need not be orderable, out of heap comparisons.
_Delayed = tuple[float, int, T]


class WorkQueue(Generic[T]):
    """A rate-limited, delaying, deduplicating work queue (see the module docstring for the rules).

    Typical worker::

        while True:
            try:
                key = await queue.get()
            except QueueShutDown:
                return
            try:
                await reconcile(key)
            except Exception:
                queue.add_rate_limited(key)
            else:
                queue.forget(key)
            finally:
                queue.done(key)
    """

    def __init__(self, options: WorkQueueOptions | None = None) -> None:
        resolved = (WorkQueueOptions() if options is None else options).with_defaults()
        self.options: Final = resolved
        self._clock = resolved.clock
        self._now = resolved.clock.now  # bound once: it is called on every add, get and done
        self._rate_limiter = resolved.rate_limiter
        self._metrics: WorkqueueMetrics | None = None
        if resolved.metrics and resolved.name is not None:
            self._metrics = init_workqueue_metrics(resolved.name, resolved.controller)

        self._queue: deque[T] = deque()  # ready keys, in order; each one is also in _dirty
        self._dirty: set[T] = set()  # keys that need processing: queued, or re-added while held
        self._processing: dict[T, float] = {}  # keys workers hold -> when they got them
        self._first_added: dict[T, float] = {}  # keys counted in depth -> first add time
        self._getters: deque[asyncio.Future[None]] = deque()
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._shutting_down = False

        self._delayed: dict[T, _Delayed[T]] = {}  # the live heap entry of every delayed key
        self._delayed_heap: list[_Delayed[T]] = []  # may also hold superseded entries
        self._sequence = itertools.count()
        self._delay_timer: TimerHandle | None = None
        self._delay_timer_when = math.inf

        self._metrics_timer: TimerHandle | None = None
        if self._metrics is not None:
            self._start_metrics_timer()

    # --- plain queue ---

    def add(self, item: T) -> None:
        """Queue ``item`` for processing, unless it is already waiting or the queue is shut down."""
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        metrics = self._metrics
        if metrics is not None:
            self._first_added[item] = self._now()
            metrics.adds.inc()
            metrics.depth.inc()
            if self._metrics_timer is None:
                self._start_metrics_timer()
        if item in self._processing:
            return  # done() queues it again
        self._queue.append(item)
        if self._getters:
            self._wake_one_getter()

    async def get(self) -> T:
        """Wait for a key and take it; the caller must call :meth:`done` with it when finished.

        Raises :class:`QueueShutDown` once the queue is shut down (waiting keys are dropped then).
        """
        while not self._queue:
            if self._shutting_down:
                raise QueueShutDown
            waiter = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                try:
                    self._getters.remove(waiter)
                except ValueError:
                    pass
                # Woken and then cancelled: the key meant for us must wake someone else.
                if waiter.done() and not waiter.cancelled() and self._queue:
                    self._wake_one_getter()
                raise
        item = self._queue.popleft()
        self._dirty.discard(item)
        metrics = self._metrics
        if metrics is None:
            self._processing[item] = 0.0
            return item
        now = self._now()
        self._processing[item] = now
        metrics.depth.dec()
        first_added = self._first_added.pop(item, None)
        if first_added is not None:
            metrics.queue_duration.observe(now - first_added)
        if self._metrics_timer is None:
            self._start_metrics_timer()
        return item

    def done(self, item: T) -> None:
        """Release ``item`` taken by :meth:`get`; if it was added meanwhile, queue it again.

        A key that is not held (never got, or already done) is ignored.
        """
        started = self._processing.pop(item, None)
        if started is None:
            return
        metrics = self._metrics
        if metrics is not None:
            metrics.work_duration.observe(self._now() - started)
        if item in self._dirty:
            self._queue.append(item)
            if self._getters:
                self._wake_one_getter()
        elif not self._processing and self._drain_waiters:
            for waiter in self._drain_waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def __len__(self) -> int:
        """Keys ready to be handed out (not those held by workers nor those still delayed)."""
        return len(self._queue)

    def len(self) -> int:
        """Same as ``len(queue)``, under client-go's name."""
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        """Whether :meth:`shutdown` has been called."""
        return self._shutting_down

    def shutdown(self) -> None:
        """Stop the queue: drop waiting and delayed keys, wake every :meth:`get` with :class:`QueueShutDown`.

        Keys held by workers stay held until :meth:`done`; adds from now on are ignored.
        Idempotent.
        """
        if self._shutting_down:
            return
        self._shutting_down = True
        if self._metrics is not None and self._dirty:
            self._metrics.depth.dec(len(self._dirty))
        self._queue.clear()
        self._dirty.clear()
        self._first_added.clear()
        self._delayed.clear()
        self._delayed_heap.clear()
        for timer in (self._delay_timer, self._metrics_timer):
            if timer is not None:
                timer.cancel()
        self._delay_timer = None
        self._delay_timer_when = math.inf
        self._metrics_timer = None
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def shutdown_with_drain(self) -> None:
        """:meth:`shutdown`, then wait until every key held by a worker is :meth:`done`.

        Waits as long as it takes; bound it with ``asyncio.timeout`` if a worker may hang.
        """
        self.shutdown()
        if not self._processing:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._drain_waiters.append(waiter)
        try:
            await waiter
        finally:
            self._drain_waiters.remove(waiter)

    def _wake_one_getter(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    # --- delaying ---

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds have passed (at once if ``delay <= 0``).

        If ``item`` is already delayed, the earlier of the two ready times is kept.
        """
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retries.inc()
        if delay <= 0:
            self.add(item)
            return
        ready_at = self._now() + delay
        current = self._delayed.get(item)
        if current is not None and current[0] <= ready_at:
            return
        entry: _Delayed[T] = (ready_at, next(self._sequence), item)
        self._delayed[item] = entry
        heapq.heappush(self._delayed_heap, entry)
        if ready_at < self._delay_timer_when:
            self._arm_delay_timer(ready_at)

    def _arm_delay_timer(self, when: float) -> None:
        if self._delay_timer is not None:
            self._delay_timer.cancel()
        self._delay_timer = self._clock.call_at(when, self._add_ready_delayed)
        self._delay_timer_when = when

    def _add_ready_delayed(self) -> None:
        self._delay_timer = None
        self._delay_timer_when = math.inf
        if self._shutting_down:
            return
        now = self._now()
        heap = self._delayed_heap
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            item = entry[2]
            if self._delayed.get(item) is entry:
                del self._delayed[item]
                self.add(item)
            # else: superseded by an earlier ready time that has already fired
        while heap and self._delayed.get(heap[0][2]) is not heap[0]:
            heapq.heappop(heap)
        if heap:
            # Also covers a timer that fired a hair early (event-loop clock resolution).
            self._arm_delay_timer(heap[0][0])

    # --- rate limiting ---

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the delay the rate limiter gives it (one more retry of it)."""
        if self._shutting_down:
            return
        self.add_after(item, self._rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset ``item``'s backoff; call it when ``item`` was processed successfully."""
        self._rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """How many rate-limited retries of ``item`` the rate limiter is tracking."""
        return self._rate_limiter.num_requeues(item)

    # --- metrics ---

    def _start_metrics_timer(self) -> None:
        try:
            self._metrics_timer = self._clock.call_at(
                self._now() + UNFINISHED_WORK_UPDATE_PERIOD, self._update_unfinished_work
            )
        except RuntimeError:
            pass  # built outside a running loop: the first add or get starts it

    def _update_unfinished_work(self) -> None:
        self._metrics_timer = None
        metrics = self._metrics
        if self._shutting_down or metrics is None:
            return
        now = self._now()
        unfinished = 0.0
        longest = 0.0
        for started in self._processing.values():
            age = now - started
            unfinished += age
            longest = max(longest, age)
        metrics.unfinished_work_seconds.set(unfinished)
        metrics.longest_running_processor_seconds.set(longest)
        self._start_metrics_timer()
