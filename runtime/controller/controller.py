"""The controller itself: it starts its sources, then its workers take requests from the queue and
call the reconciler; see :mod:`runtime.controller` for what happens to a request and on stop."""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Mapping
from logging import DEBUG
from typing import Any, Final

from runtime import metrics as _metrics
from runtime.log import (
    KEY_CONTROLLER,
    Logger,
    current_context,
    get_logger,
    reset_context,
    set_context,
)
from runtime.reconcile import Reconciler, Request, Result, TerminalError
from runtime.source import Source, StoppableSource
from runtime.waiting import wait_for_any
from runtime.workqueue import QueueShutDown, WorkQueue, WorkQueueOptions

from .logkeys import _ReconcileKeys
from .options import ControllerOptions

_log = get_logger("runtime.controller")
# Checked before each per-reconcile debug line, so a disabled level costs one call.
_debug_enabled = _log.stdlib.isEnabledFor

# Live controllers by name: two of them would report into the same metric series.
_names: weakref.WeakValueDictionary[str, Controller] = weakref.WeakValueDictionary()


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


class Controller:
    """Runs ``reconciler`` over the requests its sources produce; see :mod:`runtime.controller`."""

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
