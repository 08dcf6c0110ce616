"""The controller: sources feed a workqueue, workers take requests out and call your reconciler.

A :class:`Controller` is a :class:`~runtime.runnable.Runnable` that runs only while this process
is the leader (unless told otherwise). Usually the :class:`~runtime.builder.ControllerBuilder` makes
one; by hand it looks like this:

>>> import asyncio
>>> from runtime.controller import Controller, ControllerOptions
>>> from runtime.event import GenericEvent
>>> from runtime.handler import EnqueueRequestForObject
>>> from runtime.reconcile import Request, Result, reconciler_func
>>> from runtime.source import Channel
>>> async def main() -> None:
...     done = asyncio.Event()
...
...     async def reconcile(request: Request) -> Result:
...         print("reconciling", request)
...         done.set()
...         return Result()
...
...     events: asyncio.Queue[GenericEvent] = asyncio.Queue()
...     controller = Controller(
...         "demo", reconciler_func(reconcile), ControllerOptions(max_concurrent_reconciles=2)
...     )
...     controller.watch(Channel(events, EnqueueRequestForObject()))
...     stop = asyncio.Event()
...     running = asyncio.create_task(controller.start(stop))
...     events.put_nowait(GenericEvent.for_request(Request("a", "default")))
...     await done.wait()
...     stop.set()
...     await running
>>> asyncio.run(main())
reconciling default/a

What happens to a request
-------------------------
A worker takes a request from the queue (the queue never hands one key to two workers at once,
however many workers there are), calls ``reconcile`` with the log keys ``controller``,
``object``, ``namespace``, ``name`` and a fresh ``reconcileID`` set for every line written
meanwhile (see :mod:`runtime.log`), and then, as controller-runtime does:

===============================  ============================================  =================
outcome                          what the queue does                           ``result`` label
===============================  ============================================  =================
``Result()``                     ``forget`` (backoff reset)                    ``success``
``Result(requeue_after=s)``      ``forget``, then ``add_after(s)``             ``requeue_after``
``Result(requeue=True)``         ``add_rate_limited`` (the backoff grows)      ``requeue``
an exception                     ``add_rate_limited``; error log + traceback   ``error``
a ``TerminalError``              nothing (not requeued); error log             ``error``
===============================  ============================================  =================

The worker survives every exception (Go's panic recovery is always on). A reconcile that
returns something other than a :class:`~runtime.reconcile.Result` (a forgotten ``return``) is an
error that names the fix. An exception counts as terminal when it is a ``TerminalError`` or was
raised ``from`` one (the ``__cause__`` chain plays the part of Go's error wrapping).

Metrics (controller-runtime's names, see :mod:`runtime.metrics`): ``reconcile_total`` by result as
above; ``reconcile_errors_total`` for every error, terminal included;
``terminal_reconcile_errors_total``; ``reconcile_timeouts_total`` when ``reconcile_timeout``
cut a reconcile short (an error like any other); ``reconcile_time_seconds``; ``active_workers``;
``max_concurrent_reconciles``; and the ``workqueue_*`` families of the controller's queue, named
after the controller. ``reconcile_panics_total`` is exported and stays 0: Go separates returned
errors from panics, Python has only exceptions, and all of them count as errors.

Stopping
--------
When ``stop`` is set the controller stops taking requests (queued ones are dropped: the next
start lists everything again), lets the reconciles in flight finish, stops its sources and
returns. It waits as long as those reconciles take; the manager bounds that with its graceful
shutdown period by cancelling :meth:`Controller.start`, which cancels the reconciles.
"""

from __future__ import annotations

import asyncio
import random
import time
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from logging import DEBUG
from typing import Any, Final

from runtime import metrics as _metrics
from runtime.log import (
    KEY_CONTROLLER,
    KEY_NAME,
    KEY_NAMESPACE,
    KEY_OBJECT,
    KEY_RECONCILE_ID,
    Logger,
    current_context,
    get_logger,
    reset_context,
    set_context,
)
from runtime.reconcile import Reconciler, Request, Result, TerminalError
from runtime.source import Source, StoppableSource
from runtime.waiting import wait_for_any
from runtime.workqueue import Clock, QueueShutDown, RateLimiter, WorkQueue, WorkQueueOptions

DEFAULT_MAX_CONCURRENT_RECONCILES: Final = 1
DEFAULT_CACHE_SYNC_TIMEOUT: Final = 120.0
"""Seconds a controller waits for its sources to sync before failing (controller-runtime's 2 min)."""

_log = get_logger("runtime.controller")
# Checked before each per-reconcile debug line, so a disabled level costs one call.
_debug_enabled = _log.stdlib.isEnabledFor

# Live controllers by name: two of them would report into the same metric series.
_names: weakref.WeakValueDictionary[str, Controller] = weakref.WeakValueDictionary()


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    """How a :class:`Controller` runs. ``None`` means "use the default" named per field."""

    max_concurrent_reconciles: int | None = None
    """Workers reconciling at once (never two on one object). Defaults to 1."""

    rate_limiter: RateLimiter | None = None
    """Backoff for requeues and errors. Defaults to the workqueue's default,
    :func:`runtime.workqueue.default_controller_rate_limiter` (5 ms → 1000 s per object, 10 qps /
    100 burst overall)."""

    reconcile_timeout: float | None = None
    """Seconds after which a reconcile is cancelled and counted as an error (and a timeout).
    Defaults to None: no limit."""

    cache_sync_timeout: float | None = None
    """Seconds :meth:`Controller.start` waits for its sources to sync before it fails.
    Defaults to 120."""

    need_leader_election: bool | None = None
    """Run only while this process holds the leader lease. Defaults to True."""

    skip_name_validation: bool | None = None
    """Allow a name that another live controller already has (their metrics then mix).
    Defaults to False."""

    log_values: Mapping[str, Any] | None = None
    """Keys added to every line the controller writes (the builder adds ``controllerGroup`` and
    ``controllerKind``). Defaults to none."""

    clock: Clock | None = None
    """Time source of the controller's workqueue (delays and backoff). Defaults to
    :class:`runtime.workqueue.MonotonicClock`; tests pass a :class:`~runtime.workqueue.FakeClock`."""

    def with_defaults(self) -> ResolvedControllerOptions:
        """Fill in every unset field and check the values; the one place the defaults live."""
        workers = (
            DEFAULT_MAX_CONCURRENT_RECONCILES
            if self.max_concurrent_reconciles is None
            else self.max_concurrent_reconciles
        )
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"max_concurrent_reconciles must be an integer ≥ 1, got {workers!r}")
        if self.reconcile_timeout is not None and not self.reconcile_timeout > 0:
            raise ValueError(
                "reconcile_timeout must be a positive number of seconds or None, "
                f"got {self.reconcile_timeout!r}"
            )
        sync_timeout = (
            DEFAULT_CACHE_SYNC_TIMEOUT if self.cache_sync_timeout is None else self.cache_sync_timeout
        )
        if not sync_timeout > 0:
            raise ValueError(f"cache_sync_timeout must be a positive number of seconds, got {sync_timeout!r}")
        return ResolvedControllerOptions(
            max_concurrent_reconciles=workers,
            rate_limiter=self.rate_limiter,
            reconcile_timeout=self.reconcile_timeout,
            cache_sync_timeout=float(sync_timeout),
            need_leader_election=True if self.need_leader_election is None else self.need_leader_election,
            skip_name_validation=bool(self.skip_name_validation),
            log_values=dict(self.log_values or {}),
            clock=self.clock,
        )


@dataclass(frozen=True, slots=True)
class ResolvedControllerOptions:
    """:class:`ControllerOptions` with every default applied. ``rate_limiter`` and ``clock`` stay
    None when unset: the workqueue resolves them (its rate limiter must use its clock)."""

    max_concurrent_reconciles: int
    rate_limiter: RateLimiter | None
    reconcile_timeout: float | None
    cache_sync_timeout: float
    need_leader_election: bool
    skip_name_validation: bool
    log_values: Mapping[str, Any]
    clock: Clock | None


def _reconcile_id(bits: int) -> str:
    """A random (version 4) UUID string made of ``bits`` (128 random bits, from ``_getrandbits``), as
    ``str(uuid.uuid4())`` but a fifth of its cost: the bits come from ``random`` (seeded from the
    OS at start) instead of an ``os.urandom`` call per reconcile. It only tells reconciles apart in
    logs; nothing secret rests on it."""
    text = f"{(bits & _UUID4_CLEAR) | _UUID4_SET:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


_getrandbits = random.Random().getrandbits
# uuid.UUID(version=4)'s bit fixing: variant 10xx in bits 62-63, version 4 in bits 76-79.
_UUID4_CLEAR: Final = ~((0xC000 << 48) | (0xF000 << 64))
_UUID4_SET: Final = (0x8000 << 48) | (4 << 76)


def _not_a_result(reconciler: Reconciler, result: object) -> TypeError:
    return TypeError(
        f"{reconciler!r} returned {result!r}; a reconcile must return a "
        "runtime.reconcile.Result (Result() when done)"
    )


def _is_terminal(err: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        if isinstance(current, TerminalError):
            return True
        seen.add(id(current))
        current = current.__cause__
    return False


class _ReconcileKeys(Mapping[str, Any]):
    """The log keys of one reconcile: the worker's, then the object's and the reconcile ID.

    Every reconcile sets them and most write no line, so nothing is formatted until read: the
    object string and the ID's text are made from the request and the ID's random bits, drawn
    here. The same bits give the same text, so every reader of one reconcile (its lines, a nested
    ``log_context``, a task or thread it starts, ``current_reconcile_id``) sees one ID.
    """

    __slots__ = ("_base", "_id_bits", "_request")

    def __init__(self, base: Mapping[str, Any], request: Request) -> None:
        self._base = base
        self._request = request
        self._id_bits = _getrandbits(128)

    def __getitem__(self, key: str) -> Any:
        request = self._request
        if key == KEY_RECONCILE_ID:
            return _reconcile_id(self._id_bits)
        if key == KEY_OBJECT:
            return str(request)
        if key == KEY_NAMESPACE:
            return request.namespace
        if key == KEY_NAME:
            return request.name
        return self._base[key]

    def __iter__(self) -> Iterator[str]:
        yield from (k for k in self._base if k not in _RECONCILE_KEYS)
        yield from _RECONCILE_KEYS

    def __len__(self) -> int:
        return sum(1 for _ in self)


_RECONCILE_KEYS: Final = (KEY_OBJECT, KEY_NAMESPACE, KEY_NAME, KEY_RECONCILE_ID)


class Controller:
    """Runs ``reconciler`` over the requests its sources produce; see the module docstring."""

    def __init__(self, name: str, reconciler: Reconciler, options: ControllerOptions | None = None) -> None:
        if not isinstance(name, str) or not name or name != name.strip():
            raise ValueError(f"a controller needs a non-empty name without surrounding spaces, got {name!r}")
        if not isinstance(reconciler, Reconciler):
            raise TypeError(
                f"controller {name}: {reconciler!r} is not a Reconciler (it needs an async "
                "reconcile(request) method; wrap a function with runtime.reconcile.reconciler_func)"
            )
        resolved = (ControllerOptions() if options is None else options).with_defaults()
        if not resolved.skip_name_validation and name in _names:
            raise ValueError(
                f"a controller named {name!r} already exists; controller names must be unique "
                "because they label the metrics (set another name, or "
                "ControllerOptions(skip_name_validation=True) in tests)"
            )
        _names[name] = self
        self.name: Final = name
        self.reconciler: Final = reconciler
        self.options: Final = resolved
        self._log_values: dict[str, Any] = {KEY_CONTROLLER: name, **resolved.log_values}
        self.log: Final[Logger] = _log.with_values(**self._log_values)
        self._metrics = _metrics.init_controller_metrics(name)
        self._pending: list[Source] = []  # watched before start
        self._sources: list[Source] = []  # started
        self._late_starts: set[asyncio.Task[None]] = set()
        self._queue: WorkQueue[Request] | None = None
        self._started = False
        self._stopped = False
        self._failure: BaseException | None = None
        self._failed = asyncio.Event()

    # --- public API ---

    @property
    def queue(self) -> WorkQueue[Request] | None:
        """The controller's workqueue once started, else None."""
        return self._queue

    def need_leader_election(self) -> bool:
        return self.options.need_leader_election

    def watch(self, source: Source) -> None:
        """Add ``source``. Before :meth:`start` it starts with the others (and is waited for to
        sync); on a running controller it starts at once (and is not waited for)."""
        if not isinstance(source, Source):
            raise TypeError(
                f"controller {self.name}: {source!r} is not a source (it needs async start(queue) and "
                "wait_for_sync(); see runtime.source.Kind and Channel)"
            )
        if self._stopped:
            raise RuntimeError(f"controller {self.name} has stopped; it cannot watch {source!r}")
        queue = self._queue
        if queue is None:
            self._pending.append(source)
            return
        task = asyncio.get_running_loop().create_task(self._start_late(source, queue))
        self._late_starts.add(task)
        task.add_done_callback(self._late_starts.discard)

    async def start(self, stop: asyncio.Event) -> None:
        """Start the sources, wait for them to sync, run the workers until ``stop`` is set.

        Raises when a source fails to start or sync within ``cache_sync_timeout``, and when
        started twice.
        """
        if self._started:
            raise RuntimeError(
                f"controller {self.name} was started more than once; it was probably added to a manager twice"
            )
        self._started = True
        opts = self.options
        queue: WorkQueue[Request] = WorkQueue(
            WorkQueueOptions(name=self.name, rate_limiter=opts.rate_limiter, clock=opts.clock)
        )
        self._queue = queue
        self._metrics.max_concurrent_reconciles.set(opts.max_concurrent_reconciles)
        sources, self._pending = self._pending, []
        workers: list[asyncio.Task[None]] = []
        try:
            if not await self._start_sources(sources, queue, stop):
                return
            self.log.info("Starting workers", workerCount=opts.max_concurrent_reconciles)
            loop = asyncio.get_running_loop()
            workers = [
                loop.create_task(self._work(queue), name=f"controller-{self.name}-worker-{i}")
                for i in range(opts.max_concurrent_reconciles)
            ]
            await self._wait_for_stop(stop)
            self.log.info("Shutdown signal received, waiting for all workers to finish")
            queue.shutdown()
            await asyncio.gather(*workers)
            self.log.info("All workers finished")
            if self._failure is not None:
                raise self._failure
        finally:
            self._stopped = True
            queue.shutdown()
            leftovers = [*workers, *self._late_starts]
            for task in leftovers:
                task.cancel()
            # Cancelled workers still run their finally blocks (queue.done, metrics): let them.
            await asyncio.gather(*leftovers, return_exceptions=True)
            for source in self._sources:
                if isinstance(source, StoppableSource):
                    try:
                        await source.stop()
                    except Exception as err:
                        self.log.error("Stopping a source failed", exc_info=err, source=repr(source))

    # --- sources ---

    async def _start_sources(
        self, sources: list[Source], queue: WorkQueue[Request], stop: asyncio.Event
    ) -> bool:
        """Start and sync ``sources``; False if ``stop`` came first."""
        timeout = self.options.cache_sync_timeout
        for source in sources:
            self.log.info("Starting EventSource", source=repr(source))
            try:
                await asyncio.wait_for(source.start(queue), timeout)
            except TimeoutError:
                raise TimeoutError(
                    f"controller {self.name}: {source!r} did not start within {timeout} s; "
                    "a source's start() must register and return, not block"
                ) from None
            self._sources.append(source)
        if not sources:
            return not stop.is_set()
        loop = asyncio.get_running_loop()
        syncs = {loop.create_task(source.wait_for_sync()): source for source in sources}
        stopped = loop.create_task(stop.wait())
        try:
            deadline = loop.time() + timeout
            pending: set[asyncio.Task[Any]] = {*syncs, stopped}
            while syncs.keys() & pending and not stopped.done():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                done, pending = await asyncio.wait(
                    pending, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
                )
                for task in done:
                    if task in syncs and task.exception() is not None:
                        raise RuntimeError(
                            f"controller {self.name}: {syncs[task]!r} failed to sync"
                        ) from task.exception()
            if stopped.done():
                return False
            unsynced = [repr(source) for task, source in syncs.items() if not task.done()]
            if unsynced:
                raise TimeoutError(
                    f"controller {self.name}: timed out after {timeout} s waiting for "
                    f"{', '.join(unsynced)} to sync (ControllerOptions.cache_sync_timeout)"
                )
            return True
        finally:
            for task in (*syncs, stopped):
                task.cancel()

    async def _start_late(self, source: Source, queue: WorkQueue[Request]) -> None:
        try:
            self.log.info("Starting EventSource", source=repr(source))
            await asyncio.wait_for(source.start(queue), self.options.cache_sync_timeout)
            self._sources.append(source)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.log.error(
                "Starting a source on the running controller failed", exc_info=err, source=repr(source)
            )
            if self._failure is None:
                self._failure = err
            self._failed.set()

    async def _wait_for_stop(self, stop: asyncio.Event) -> None:
        await wait_for_any(stop, self._failed)

    # --- workers ---

    async def _work(self, queue: WorkQueue[Request]) -> None:
        active = self._metrics.active_workers
        # The log keys every reconcile of this worker starts from: the keys a caller of start() set
        # (the manager's, say) and the controller's. Read once: a worker's context only changes
        # inside a reconcile, and each reconcile restores it.
        base = {**current_context(), **self._log_values}
        while True:
            try:
                request = await queue.get()
            except QueueShutDown:
                return
            active.inc()
            try:
                await self._reconcile_handler(queue, request, base)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # a bug here must not cost the worker
                self.log.error("Internal error handling a request", exc_info=err, request=str(request))
            finally:
                active.dec()
                queue.done(request)

    async def _reconcile_handler(
        self, queue: WorkQueue[Request], request: Request, base: Mapping[str, Any]
    ) -> None:
        started = time.perf_counter()
        token = set_context(_ReconcileKeys(base, request))
        m = self._metrics
        try:
            try:
                if self.options.reconcile_timeout is None:
                    # The common case without the extra coroutine of _call_reconciler.
                    result = await self.reconciler.reconcile(request)
                    if not isinstance(result, Result):
                        raise _not_a_result(self.reconciler, result)
                else:
                    result = await self._call_reconciler(request)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                m.reconcile_errors.inc()
                m.reconcile_total[_metrics.RESULT_ERROR].inc()
                if _is_terminal(err):
                    m.terminal_reconcile_errors.inc()
                    _log.error("Reconciler error (terminal, not requeued)", exc_info=err)
                else:
                    queue.add_rate_limited(request)
                    _log.error("Reconciler error", exc_info=err)
                return
            if result.requeue_after > 0:
                queue.forget(request)
                queue.add_after(request, result.requeue_after)
                m.reconcile_total[_metrics.RESULT_REQUEUE_AFTER].inc()
                if _debug_enabled(DEBUG):
                    _log.debug("Reconcile done, requeueing after", requeueAfter=result.requeue_after)
            elif result.requeue:
                queue.add_rate_limited(request)
                m.reconcile_total[_metrics.RESULT_REQUEUE].inc()
                if _debug_enabled(DEBUG):
                    _log.debug("Reconcile done, requeueing")
            else:
                queue.forget(request)
                m.reconcile_total[_metrics.RESULT_SUCCESS].inc()
                if _debug_enabled(DEBUG):
                    _log.debug("Reconcile successful")
        finally:
            reset_context(token)
            m.observe_reconcile_time(time.perf_counter() - started)

    async def _call_reconciler(self, request: Request) -> Result:
        timeout = self.options.reconcile_timeout
        if timeout is None:
            result: object = await self.reconciler.reconcile(request)
        else:
            deadline = asyncio.timeout(timeout)
            try:
                async with deadline:
                    result = await self.reconciler.reconcile(request)
            except TimeoutError:
                if deadline.expired():
                    self._metrics.reconcile_timeouts.inc()
                    raise TimeoutError(
                        f"reconcile cancelled after the reconcile_timeout of {timeout} s"
                    ) from None
                raise
        if not isinstance(result, Result):
            raise _not_a_result(self.reconciler, result)
        return result

    def __repr__(self) -> str:
        return f"Controller({self.name!r})"
