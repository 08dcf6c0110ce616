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
up once, at construction, and are :mod:`runtime.metrics`' lock-free event-loop series, several
times cheaper than prometheus_client's locked children (``docs/performance.md``).

Concurrency
-----------
Not thread-safe: a queue belongs to one event loop, and its methods must be called from that
loop's thread. Delays need the loop running (:meth:`WorkQueue.add_after` schedules a timer).
"""

from .clock import Clock, FakeClock, MonotonicClock, TimerHandle
from .metrics import WorkqueueMetrics, init_workqueue_metrics
from .options import ResolvedWorkQueueOptions, WorkQueueOptions
from .queue import UNFINISHED_WORK_UPDATE_PERIOD, QueueShutDown, WorkQueue
from .ratelimiter import (
    DEFAULT_BASE_DELAY,
    DEFAULT_BURST,
    DEFAULT_MAX_DELAY,
    DEFAULT_QPS,
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)

__all__ = [
    "DEFAULT_BASE_DELAY",
    "DEFAULT_BURST",
    "DEFAULT_MAX_DELAY",
    "DEFAULT_QPS",
    "UNFINISHED_WORK_UPDATE_PERIOD",
    "BucketRateLimiter",
    "Clock",
    "FakeClock",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "MonotonicClock",
    "QueueShutDown",
    "RateLimiter",
    "ResolvedWorkQueueOptions",
    "TimerHandle",
    "WorkQueue",
    "WorkQueueOptions",
    "WorkqueueMetrics",
    "default_controller_rate_limiter",
    "init_workqueue_metrics",
]
