"""The controller's workers: one worker per key, Result handling, backoff on errors, terminal errors,
timeouts, metrics, starting and stopping; fed by real Channel sources."""

from __future__ import annotations

import asyncio
import gc
import itertools
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

import pytest

from runtime import metrics
from runtime.controller import Controller, ControllerOptions
from runtime.event import GenericEvent
from runtime.handler import EnqueueRequestForObject, RequestQueue
from runtime.reconcile import Request, Result, TerminalError, reconciler_func
from runtime.source import Channel
from runtime.workqueue import FakeClock, ItemExponentialFailureRateLimiter
from tests.support.poll import DEADLINE, eventually, let_other_tasks_run

NS = "ns"


def unique_name() -> str:
    return f"ctrl-{uuid.uuid4().hex[:10]}"


def sample(metric: str, controller: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(metric, {"controller": controller, **labels})
    return 0.0 if value is None else value


def results(controller: str) -> dict[str, float]:
    return {
        result: sample("controller_runtime_reconcile_total", controller, result=result)
        for result in metrics.RECONCILE_RESULTS
    }


class Harness:
    """A started controller fed by a Channel; ``send(name)`` enqueues ``ns/name``."""

    def __init__(self, reconcile: Callable[[Request], Awaitable[Result]], **options: Any) -> None:
        self.name = unique_name()
        self.events: asyncio.Queue[GenericEvent] = asyncio.Queue()
        self.controller = Controller(self.name, reconciler_func(reconcile), ControllerOptions(**options))
        self.controller.watch(Channel(self.events, EnqueueRequestForObject()))
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def send(self, name: str) -> None:
        self.events.put_nowait(GenericEvent.for_request(Request(name, NS)))

    async def __aenter__(self) -> Harness:
        self.task = asyncio.create_task(self.controller.start(self.stop))
        await eventually(
            lambda: self.controller.queue is not None, timeout=DEADLINE, message="controller started"
        )
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop.set()
        assert self.task is not None
        await asyncio.wait_for(self.task, 5)


# --- workers ------------------------------------------------------------------------------------


async def test_four_workers_never_reconcile_one_key_at_once_but_do_run_in_parallel() -> None:
    in_flight: Counter[str] = Counter()
    most_per_key: Counter[str] = Counter()
    most_overall = 0
    reconciles: Counter[str] = Counter()

    async def reconcile(request: Request) -> Result:
        nonlocal most_overall
        in_flight[request.name] += 1
        most_per_key[request.name] = max(most_per_key[request.name], in_flight[request.name])
        most_overall = max(most_overall, sum(in_flight.values()))
        await let_other_tasks_run(10)  # events for this key keep arriving meanwhile
        in_flight[request.name] -= 1
        reconciles[request.name] += 1
        return Result()

    keys = ["a", "b"]  # fewer keys than workers: idle workers are there to take a busy key
    async with Harness(reconcile, max_concurrent_reconciles=4) as h:
        for _ in range(60):
            for key in keys:
                h.send(key)
            await asyncio.sleep(0)  # one round of events per loop turn, interleaved with the reconciles
        await eventually(
            lambda: (
                not any(in_flight.values())
                and h.controller.queue is not None
                and len(h.controller.queue) == 0
                and sum(reconciles.values()) >= 8
            ),
            timeout=DEADLINE,
            message="every key reconciled, none in flight and the queue empty",
        )
    assert max(most_per_key.values()) == 1, most_per_key
    assert most_overall >= 2, "the workers never overlapped, so the test proves nothing"
    # Events that came in during a reconcile were not lost: each key was reconciled again.
    assert all(reconciles[key] >= 2 for key in keys), reconciles
    assert sample("controller_runtime_max_concurrent_reconciles", h.name) == 4


async def test_an_exception_is_retried_with_growing_backoff_and_the_worker_keeps_serving() -> None:
    clock = FakeClock()
    attempts: list[float] = []
    served: list[str] = []

    async def reconcile(request: Request) -> Result:
        if request.name == "bad":
            attempts.append(clock.now())
            if len(attempts) <= 3:
                raise RuntimeError(f"attempt {len(attempts)} failed")
            return Result()
        served.append(request.name)
        return Result()

    # One worker: if an exception killed it, nothing else would ever be served.
    async with Harness(reconcile, clock=clock) as h:
        queue = h.controller.queue
        assert queue is not None
        h.send("bad")
        await eventually(lambda: len(attempts) == 1, timeout=DEADLINE, message="len(attempts) == 1")
        await eventually(
            lambda: queue.num_requeues(Request("bad", NS)) == 1,
            timeout=DEADLINE,
            message="queue.num_requeues(Request('bad', NS)) == 1",
        )
        h.send("good")
        await eventually(
            lambda: served == ["good"], timeout=DEADLINE, message="the worker survived the exception"
        )

        # Default rate limiter: 5 ms, 10 ms, 20 ms. Nothing happens a hair before each is due.
        for expected_delay in (0.005, 0.010, 0.020):
            n = len(attempts)
            due = attempts[-1] + expected_delay
            clock.advance_to(due - 1e-6)
            await let_other_tasks_run()
            assert len(attempts) == n, f"retried before its {expected_delay} s backoff"
            clock.advance_to(due)
            await eventually(
                lambda n=n: len(attempts) == n + 1,  # type: ignore[misc]
                timeout=DEADLINE,
                message=f"attempt {n + 1}",
            )

        delays = [round(b - a, 6) for a, b in itertools.pairwise(attempts)]
        assert delays == [0.005, 0.01, 0.02]
        await eventually(
            lambda: results(h.name)[metrics.RESULT_SUCCESS] == 2,
            timeout=DEADLINE,
            message="results(h.name)[metrics.RESULT_SUCCESS] == 2",
        )
        # Success forgets the backoff.
        assert queue.num_requeues(Request("bad", NS)) == 0
        h.send("good")
        await eventually(
            lambda: served == ["good", "good"], timeout=DEADLINE, message="served == ['good', 'good']"
        )
    assert results(h.name) == {"success": 3.0, "error": 3.0, "requeue": 0.0, "requeue_after": 0.0}
    assert sample("controller_runtime_reconcile_errors_total", h.name) == 3
    assert sample("controller_runtime_terminal_reconcile_errors_total", h.name) == 0
    assert sample("controller_runtime_reconcile_panics_total", h.name) == 0
    assert sample("workqueue_retries_total", h.name, name=h.name) == 3


async def test_result_requeue_uses_the_rate_limiter_and_counts_as_requeue() -> None:
    clock = FakeClock()
    attempts: list[float] = []

    async def reconcile(request: Request) -> Result:
        attempts.append(clock.now())
        return Result(requeue=len(attempts) <= 2)

    limiter = ItemExponentialFailureRateLimiter(base_delay=1.0, max_delay=100.0)
    async with Harness(reconcile, clock=clock, rate_limiter=limiter) as h:
        h.send("x")
        await eventually(lambda: len(attempts) == 1, timeout=DEADLINE, message="len(attempts) == 1")
        clock.advance_to(0.999)
        await let_other_tasks_run()
        assert len(attempts) == 1
        clock.advance_to(1.0)
        await eventually(lambda: len(attempts) == 2, timeout=DEADLINE, message="len(attempts) == 2")
        clock.advance_to(2.999)  # second requeue: 2 s
        await let_other_tasks_run()
        assert len(attempts) == 2
        clock.advance_to(3.0)
        await eventually(lambda: len(attempts) == 3, timeout=DEADLINE, message="len(attempts) == 3")
        await eventually(
            lambda: results(h.name)[metrics.RESULT_SUCCESS] == 1,
            timeout=DEADLINE,
            message="results(h.name)[metrics.RESULT_SUCCESS] == 1",
        )
        assert limiter.num_requeues(Request("x", NS)) == 0
    assert results(h.name) == {"success": 1.0, "error": 0.0, "requeue": 2.0, "requeue_after": 0.0}


async def test_requeue_after_forgets_the_backoff_and_comes_back_after_the_delay() -> None:
    clock = FakeClock()
    attempts: list[float] = []

    async def reconcile(request: Request) -> Result:
        attempts.append(clock.now())
        if len(attempts) == 1:
            raise RuntimeError("first attempt fails, so there is a backoff to forget")
        if len(attempts) == 2:
            return Result(requeue_after=30.0, requeue=True)  # requeue_after wins
        return Result()

    limiter = ItemExponentialFailureRateLimiter(base_delay=1.0, max_delay=100.0)
    async with Harness(reconcile, clock=clock, rate_limiter=limiter) as h:
        h.send("x")
        await eventually(lambda: len(attempts) == 1, timeout=DEADLINE, message="len(attempts) == 1")
        clock.advance_to(1.0)
        await eventually(lambda: len(attempts) == 2, timeout=DEADLINE, message="len(attempts) == 2")
        await eventually(
            lambda: results(h.name)[metrics.RESULT_REQUEUE_AFTER] == 1,
            timeout=DEADLINE,
            message="results(h.name)[metrics.RESULT_REQUEUE_AFTER] == 1",
        )
        assert limiter.num_requeues(Request("x", NS)) == 0
        clock.advance_to(30.999)
        await let_other_tasks_run()
        assert len(attempts) == 2
        clock.advance_to(31.0)
        await eventually(lambda: len(attempts) == 3, timeout=DEADLINE, message="len(attempts) == 3")
        await eventually(
            lambda: results(h.name)[metrics.RESULT_SUCCESS] == 1,
            timeout=DEADLINE,
            message="results(h.name)[metrics.RESULT_SUCCESS] == 1",
        )
    assert results(h.name) == {"success": 1.0, "error": 1.0, "requeue": 0.0, "requeue_after": 1.0}


@pytest.mark.parametrize("wrapped", [False, True], ids=["raised", "raised-from"])
async def test_a_terminal_error_is_counted_and_not_requeued(wrapped: bool) -> None:
    clock = FakeClock()
    attempts: list[str] = []

    async def reconcile(request: Request) -> Result:
        attempts.append(request.name)
        if wrapped:
            try:
                raise TerminalError("spec is invalid")
            except TerminalError as err:
                raise ValueError("while reading the spec") from err
        raise TerminalError("spec is invalid")

    async with Harness(reconcile, clock=clock) as h:
        queue = h.controller.queue
        assert queue is not None
        h.send("x")
        await eventually(
            lambda: sample("controller_runtime_terminal_reconcile_errors_total", h.name) == 1,
            timeout=DEADLINE,
            message="sample('controller_runtime_terminal_reconcile_errors_total', h.name) == 1",
        )
        clock.advance(2000.0)  # longer than any backoff
        await let_other_tasks_run()
        assert attempts == ["x"]
        assert queue.num_requeues(Request("x", NS)) == 0
        # The next event for the object reconciles it again.
        h.send("x")
        await eventually(lambda: attempts == ["x", "x"], timeout=DEADLINE, message="attempts == ['x', 'x']")
    assert results(h.name)["error"] == 2
    assert sample("controller_runtime_reconcile_errors_total", h.name) == 2
    assert sample("controller_runtime_terminal_reconcile_errors_total", h.name) == 2


async def test_a_reconcile_that_returns_no_result_is_an_error_and_retried() -> None:
    clock = FakeClock()
    attempts = 0

    async def reconcile(request: Request) -> Result:
        nonlocal attempts
        attempts += 1
        return None  # type: ignore[return-value]

    async with Harness(reconcile, clock=clock) as h:
        h.send("x")
        await eventually(
            lambda: results(h.name)["error"] == 1, timeout=DEADLINE, message="results(h.name)['error'] == 1"
        )
        clock.advance(0.005)
        await eventually(lambda: attempts == 2, timeout=DEADLINE, message="attempts == 2")


async def test_a_reconcile_timeout_cancels_the_reconcile_and_counts_it() -> None:
    cancelled = asyncio.Event()
    attempts = 0

    async def reconcile(request: Request) -> Result:
        nonlocal attempts
        attempts += 1
        if attempts > 1:
            return Result()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return Result()

    async with Harness(reconcile, reconcile_timeout=0.05) as h:
        h.send("x")
        await asyncio.wait_for(cancelled.wait(), 5)
        await eventually(
            lambda: sample("controller_runtime_reconcile_timeouts_total", h.name) == 1,
            timeout=DEADLINE,
            message="sample('controller_runtime_reconcile_timeouts_total', h.name) == 1",
        )
        # A timeout is an error like any other: retried after the backoff.
        await eventually(
            lambda: results(h.name)["success"] == 1,
            timeout=DEADLINE,
            message="results(h.name)['success'] == 1",
        )
    assert results(h.name)["error"] == 1


async def test_active_workers_and_reconcile_time_are_recorded() -> None:
    release = asyncio.Event()
    started = asyncio.Event()

    async def reconcile(request: Request) -> Result:
        started.set()
        await release.wait()
        return Result()

    async with Harness(reconcile, max_concurrent_reconciles=3) as h:
        assert sample("controller_runtime_active_workers", h.name) == 0
        h.send("x")
        await asyncio.wait_for(started.wait(), 5)
        assert sample("controller_runtime_active_workers", h.name) == 1
        release.set()
        await eventually(
            lambda: sample("controller_runtime_active_workers", h.name) == 0,
            timeout=DEADLINE,
            message="sample('controller_runtime_active_workers', h.name) == 0",
        )
    assert sample("controller_runtime_reconcile_time_seconds_count", h.name) == 1
    assert sample("workqueue_adds_total", h.name, name=h.name) == 1


# --- start and stop -----------------------------------------------------------------------------


async def test_stop_lets_the_reconcile_in_flight_finish_and_takes_no_new_work() -> None:
    release = asyncio.Event()
    started = asyncio.Event()
    finished: list[str] = []

    async def reconcile(request: Request) -> Result:
        started.set()
        await release.wait()
        finished.append(request.name)
        return Result()

    h = Harness(reconcile)
    await h.__aenter__()
    h.send("a")
    await asyncio.wait_for(started.wait(), 5)
    h.send("b")
    h.stop.set()
    await let_other_tasks_run()
    assert h.task is not None
    assert not h.task.done(), "start returned while a reconcile was in flight"
    release.set()
    await asyncio.wait_for(h.task, 5)
    assert finished == ["a"]


async def test_cancelling_start_cancels_the_reconciles_in_flight() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def reconcile(request: Request) -> Result:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return Result()

    h = Harness(reconcile)
    await h.__aenter__()
    h.send("a")
    await asyncio.wait_for(started.wait(), 5)
    h.stop.set()
    assert h.task is not None
    h.task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await h.task
    assert cancelled.is_set()
    assert sample("controller_runtime_active_workers", h.name) == 0


async def test_a_source_watched_after_start_is_started_at_once() -> None:
    seen: list[str] = []

    async def reconcile(request: Request) -> Result:
        seen.append(request.name)
        return Result()

    async with Harness(reconcile) as h:
        late: asyncio.Queue[GenericEvent] = asyncio.Queue()
        h.controller.watch(Channel(late, EnqueueRequestForObject()))
        late.put_nowait(GenericEvent.for_request(Request("late", NS)))
        await eventually(lambda: seen == ["late"], timeout=DEADLINE, message="seen == ['late']")


class NeverSyncs:
    """A source whose initial state never arrives (an informer for a kind the server lacks)."""

    async def start(self, queue: RequestQueue) -> None:
        pass

    async def wait_for_sync(self) -> None:
        await asyncio.Event().wait()

    def __repr__(self) -> str:
        return "NeverSyncs()"


async def test_start_fails_when_a_source_does_not_sync_in_time() -> None:
    controller = Controller(unique_name(), reconciler_func(_noop), ControllerOptions(cache_sync_timeout=0.05))
    controller.watch(NeverSyncs())
    with pytest.raises(TimeoutError, match=r"NeverSyncs\(\) to sync"):
        await asyncio.wait_for(controller.start(asyncio.Event()), 5)


async def test_stop_while_waiting_for_sync_returns_quietly() -> None:
    controller = Controller(unique_name(), reconciler_func(_noop))
    controller.watch(NeverSyncs())
    stop = asyncio.Event()
    task = asyncio.create_task(controller.start(stop))
    await let_other_tasks_run()
    stop.set()
    await asyncio.wait_for(task, 5)


async def test_a_controller_starts_once() -> None:
    controller = Controller(unique_name(), reconciler_func(_noop))
    stop = asyncio.Event()
    stop.set()
    await controller.start(stop)
    with pytest.raises(RuntimeError, match="started more than once"):
        await controller.start(stop)


async def _noop(request: Request) -> Result:
    return Result()


def test_names_are_unique_among_live_controllers() -> None:
    name = unique_name()
    first = Controller(name, reconciler_func(_noop))
    with pytest.raises(ValueError, match="already exists"):
        Controller(name, reconciler_func(_noop))
    Controller(name, reconciler_func(_noop), ControllerOptions(skip_name_validation=True))
    del first
    gc.collect()
    Controller(name, reconciler_func(_noop))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (ControllerOptions(max_concurrent_reconciles=0), "max_concurrent_reconciles"),
        (ControllerOptions(reconcile_timeout=0), "reconcile_timeout"),
        (ControllerOptions(cache_sync_timeout=-1), "cache_sync_timeout"),
    ],
)
def test_bad_options_are_refused_with_the_field_named(options: ControllerOptions, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        options.with_defaults()


def test_defaults() -> None:
    resolved = ControllerOptions().with_defaults()
    assert resolved.max_concurrent_reconciles == 1
    assert resolved.reconcile_timeout is None
    assert resolved.cache_sync_timeout == 120.0
    assert resolved.need_leader_election is True
    assert resolved.rate_limiter is None  # the workqueue's default, on the queue's clock
    controller = Controller(unique_name(), reconciler_func(_noop))
    assert controller.need_leader_election() is True


def test_a_reconciler_and_sources_are_checked() -> None:
    with pytest.raises(TypeError, match="reconciler_func"):
        Controller(unique_name(), _noop)  # type: ignore[arg-type]
    controller = Controller(unique_name(), reconciler_func(_noop))
    with pytest.raises(TypeError, match="not a source"):
        controller.watch(object())  # type: ignore[arg-type]
