"""The work queue: deduplicating, delaying and rate limited, one worker per key."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from collections import deque
from collections.abc import Hashable
from typing import Final, Generic, TypeVar

from .clock import TimerHandle
from .metrics import WorkqueueMetrics, init_workqueue_metrics
from .options import WorkQueueOptions

T = TypeVar("T", bound=Hashable)

UNFINISHED_WORK_UPDATE_PERIOD: Final = 0.5
"""Seconds between refreshes of the unfinished-work and longest-running-processor gauges."""


class QueueShutDown(Exception):
    """Raised by :meth:`WorkQueue.get` once the queue is shut down: the worker should exit."""


# A delayed add: (ready time, tie-breaking sequence number, key). The sequence number keeps keys,
# which need not be orderable, out of heap comparisons.
_Delayed = tuple[float, int, T]


class WorkQueue(Generic[T]):
    """A rate-limited, delaying, deduplicating work queue; :mod:`runtime.workqueue` has the rules.

    Typical worker (a controller runs several, all on one queue):

    >>> import asyncio
    >>> from runtime.workqueue import QueueShutDown, WorkQueue
    >>> async def reconcile(key: str) -> None:
    ...     print("reconciling", key)
    >>> async def worker(queue: WorkQueue[str]) -> None:
    ...     while True:
    ...         try:
    ...             key = await queue.get()
    ...         except QueueShutDown:
    ...             return
    ...         try:
    ...             await reconcile(key)
    ...         except Exception:
    ...             queue.add_rate_limited(key)
    ...         else:
    ...             queue.forget(key)
    ...         finally:
    ...             queue.done(key)
    >>> async def main() -> None:
    ...     queue: WorkQueue[str] = WorkQueue()
    ...     for key in ("default/a", "default/b", "default/a"):  # the second "default/a" is deduped
    ...         queue.add(key)
    ...     running = asyncio.create_task(worker(queue))
    ...     while len(queue):
    ...         await asyncio.sleep(0)
    ...     await queue.shutdown_with_drain()
    ...     await running
    >>> asyncio.run(main())
    reconciling default/a
    reconciling default/b
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
