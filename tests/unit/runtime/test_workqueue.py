"""The workqueue keeps client-go's rules: dedupe, one worker per key, delays, rate limits, shutdown,
metrics; and its clock and rate limiters behave as client-go's do."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Hashable

import pytest

from runtime import metrics
from runtime.workqueue import (
    BucketRateLimiter,
    FakeClock,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    QueueShutDown,
    WorkQueue,
    WorkQueueOptions,
    default_controller_rate_limiter,
)

# Generous bound on a wait that should finish at once; only hit when a test fails.
DEADLINE = 5.0


async def let_other_tasks_run(turns: int = 5) -> None:
    """Give the event loop a few turns so that ready tasks run; this waits for no time to pass."""
    for _ in range(turns):
        await asyncio.sleep(0)


def fake_queue(clock: FakeClock, name: str | None = None) -> WorkQueue[str]:
    return WorkQueue(WorkQueueOptions(name=name, clock=clock))


def unique_name() -> str:
    return f"wq-{uuid.uuid4().hex[:12]}"


class TestFakeClock:
    def test_timers_fire_in_order_at_their_own_time_unless_cancelled(self) -> None:
        clock = FakeClock(start=10.0)
        fired: list[tuple[str, float]] = []
        clock.call_at(12.0, lambda: fired.append(("second", clock.now())))
        clock.call_at(11.0, lambda: fired.append(("first", clock.now())))
        clock.call_at(11.5, lambda: fired.append(("cancelled", clock.now()))).cancel()
        clock.call_at(20.0, lambda: fired.append(("later", clock.now())))
        assert clock.pending_timers == 3
        clock.advance(5.0)
        assert fired == [("first", 11.0), ("second", 12.0)]
        assert clock.now() == 15.0
        assert clock.pending_timers == 1

    def test_time_never_goes_back(self) -> None:
        clock = FakeClock(start=1.0)
        with pytest.raises(ValueError):
            clock.advance(-0.1)
        with pytest.raises(ValueError):
            clock.advance_to(0.5)


class TestPlainQueue:
    async def test_an_item_waiting_is_queued_once(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        for item in ("a", "b", "a", "a", "b", "c"):
            queue.add(item)
        assert len(queue) == 3
        assert [await queue.get() for _ in range(3)] == ["a", "b", "c"]
        assert len(queue) == 0

    async def test_get_waits_for_an_add(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        getter = asyncio.create_task(queue.get())
        await let_other_tasks_run()
        assert not getter.done()
        queue.add("a")
        assert await asyncio.wait_for(getter, DEADLINE) == "a"

    async def test_an_item_held_by_a_worker_is_not_handed_to_another(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        assert await queue.get() == "a"
        queue.add("a")  # a new event while the first worker reconciles
        assert len(queue) == 0
        second_worker = asyncio.create_task(queue.get())
        await let_other_tasks_run()
        assert not second_worker.done()

        queue.done("a")
        assert await asyncio.wait_for(second_worker, DEADLINE) == "a"

    async def test_an_item_re_added_while_held_is_processed_once_more(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        await queue.get()
        queue.add("a")
        queue.add("a")
        queue.done("a")
        assert len(queue) == 1
        assert await queue.get() == "a"
        queue.done("a")
        assert len(queue) == 0

    async def test_done_without_a_re_add_does_not_queue_again(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        await queue.get()
        queue.done("a")
        queue.done("a")  # a second done (or one for a key never taken) is ignored
        queue.done("never-taken")
        assert len(queue) == 0

    async def test_a_wakeup_is_passed_on_when_the_woken_getter_is_cancelled(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        first = asyncio.create_task(queue.get())
        second = asyncio.create_task(queue.get())
        await let_other_tasks_run()
        queue.add("a")  # wakes `first`...
        first.cancel()  # ...which is cancelled before it can take "a"
        assert await asyncio.wait_for(second, DEADLINE) == "a"
        with pytest.raises(asyncio.CancelledError):
            await first

    async def test_many_workers_never_hold_the_same_key_at_once(self) -> None:
        queue: WorkQueue[int] = WorkQueue()
        rng = random.Random(7)
        held: set[int] = set()
        overlaps: list[int] = []
        processed = 0

        async def worker() -> None:
            nonlocal processed
            while True:
                try:
                    key = await queue.get()
                except QueueShutDown:
                    return
                if key in held:
                    overlaps.append(key)
                held.add(key)
                for _ in range(rng.randrange(3)):
                    await asyncio.sleep(0)
                    queue.add(rng.randrange(5))  # events for keys, held ones included
                held.discard(key)
                processed += 1
                queue.done(key)

        workers = [asyncio.create_task(worker()) for _ in range(8)]
        for _ in range(300):
            queue.add(rng.randrange(5))
            await asyncio.sleep(0)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE
        while len(queue) or held:
            assert loop.time() < deadline, "the workers never went idle"
            await asyncio.sleep(0)
        await queue.shutdown_with_drain()
        await asyncio.wait_for(asyncio.gather(*workers), DEADLINE)
        assert overlaps == []
        assert processed > 5


class TestDelays:
    async def test_items_become_ready_in_ready_time_order(self) -> None:
        clock = FakeClock()
        queue = fake_queue(clock)
        queue.add_after("late", 2.0)
        queue.add_after("early", 1.0)
        assert len(queue) == 0
        clock.advance_to(0.999)
        assert len(queue) == 0
        clock.advance_to(1.0)
        assert len(queue) == 1
        assert await queue.get() == "early"
        clock.advance(1.0)
        assert len(queue) == 1
        assert await queue.get() == "late"

    async def test_a_sooner_ready_time_replaces_a_later_one(self) -> None:
        clock = FakeClock()
        queue = fake_queue(clock)
        queue.add_after("a", 5.0)
        queue.add_after("a", 1.0)
        clock.advance(1.0)
        assert len(queue) == 1
        assert await queue.get() == "a"
        queue.done("a")
        clock.advance(10.0)
        assert len(queue) == 0, "the superseded 5 s entry must not fire"

    async def test_a_later_ready_time_does_not_postpone_an_earlier_one(self) -> None:
        clock = FakeClock()
        queue = fake_queue(clock)
        queue.add_after("a", 1.0)
        queue.add_after("a", 5.0)
        clock.advance(1.0)
        assert len(queue) == 1
        assert await queue.get() == "a"
        queue.done("a")
        clock.advance(10.0)
        assert len(queue) == 0

    async def test_a_superseded_ready_time_never_fires(self) -> None:
        clock = FakeClock()
        queue = fake_queue(clock)
        queue.add_after("a", 5.0)
        queue.add_after("b", 3.0)
        queue.add_after("a", 1.0)  # the 5 s entry for "a" stays in the heap behind "b"'s
        clock.advance(1.0)
        assert len(queue) == 1
        assert await queue.get() == "a"
        queue.done("a")
        queue.add_after("a", 10.0)  # ready at t=11
        clock.advance(4.0)  # t=5: "b" is ready, and the superseded t=5 entry for "a" must not fire
        assert len(queue) == 1
        assert await queue.get() == "b"
        clock.advance_to(10.999)
        assert len(queue) == 0
        clock.advance_to(11.0)
        assert len(queue) == 1

    async def test_a_delay_of_zero_or_less_adds_at_once(self) -> None:
        clock = FakeClock()
        queue = fake_queue(clock)
        queue.add_after("zero", 0.0)
        queue.add_after("negative", -3.0)
        assert len(queue) == 2
        assert clock.pending_timers == 0

    async def test_a_delayed_item_already_queued_is_not_queued_twice(self) -> None:
        clock = FakeClock()
        queue = fake_queue(clock)
        queue.add("a")
        queue.add_after("a", 1.0)
        clock.advance(1.0)
        assert len(queue) == 1

    async def test_a_blocked_worker_wakes_when_a_delay_expires(self) -> None:
        clock = FakeClock()
        queue = fake_queue(clock)
        getter = asyncio.create_task(queue.get())
        queue.add_after("a", 30.0)
        await let_other_tasks_run()
        assert not getter.done()
        clock.advance(30.0)
        assert await asyncio.wait_for(getter, DEADLINE) == "a"

    async def test_the_monotonic_clock_fires_real_timers(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add_after("a", 0.01)
        assert len(queue) == 0
        assert await asyncio.wait_for(queue.get(), DEADLINE) == "a"


class TestRateLimiters:
    def test_exponential_backoff_doubles_from_5ms_and_caps_at_1000s(self) -> None:
        limiter = ItemExponentialFailureRateLimiter()
        delays = [limiter.when("a") for _ in range(22)]
        expected = [0.005 * 2**n for n in range(18)] + [1000.0] * 4
        assert delays == expected
        assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
        assert delays[17] == pytest.approx(655.36)
        assert limiter.num_requeues("a") == 22
        assert limiter.num_requeues("b") == 0

    def test_exponential_backoff_survives_huge_failure_counts(self) -> None:
        limiter = ItemExponentialFailureRateLimiter(base_delay=1.0, max_delay=60.0)
        for _ in range(1100):  # 2.0**1024 overflows a float
            delay = limiter.when("a")
        assert delay == 60.0

    def test_forget_resets_the_backoff_of_one_item(self) -> None:
        limiter = ItemExponentialFailureRateLimiter()
        for _ in range(3):
            limiter.when("a")
            limiter.when("b")
        limiter.forget("a")
        assert limiter.num_requeues("a") == 0
        assert limiter.when("a") == 0.005
        assert limiter.when("b") == 0.04

    def test_bucket_allows_the_burst_then_qps(self) -> None:
        clock = FakeClock()
        limiter = BucketRateLimiter(qps=10, burst=100, clock=clock)
        assert [limiter.when(n) for n in range(100)] == [0.0] * 100
        assert limiter.when("x") == pytest.approx(0.1)
        assert limiter.when("x") == pytest.approx(0.2)
        assert limiter.when("x") == pytest.approx(0.3)
        clock.advance(0.3)  # three tokens accrue and pay the debt
        assert limiter.when("x") == pytest.approx(0.1)

    def test_bucket_refills_up_to_the_burst_only(self) -> None:
        clock = FakeClock()
        limiter = BucketRateLimiter(qps=10, burst=100, clock=clock)
        for n in range(100):
            limiter.when(n)
        clock.advance(3600.0)
        assert [limiter.when(n) for n in range(100)] == [0.0] * 100
        assert limiter.when("x") == pytest.approx(0.1)
        assert limiter.num_requeues("x") == 0

    def test_bucket_rejects_nonsense_settings(self) -> None:
        with pytest.raises(ValueError):
            BucketRateLimiter(qps=0)
        with pytest.raises(ValueError):
            BucketRateLimiter(burst=0)

    def test_max_of_takes_the_longest_delay_and_consults_every_limiter(self) -> None:
        clock = FakeClock()
        exponential = ItemExponentialFailureRateLimiter(base_delay=0.005, max_delay=1000.0)
        bucket = BucketRateLimiter(qps=10, burst=2, clock=clock)
        limiter = MaxOfRateLimiter(exponential, bucket)
        assert limiter.when("a") == 0.005  # bucket says 0
        assert limiter.when("a") == 0.01
        assert limiter.when("b") == pytest.approx(0.1)  # bucket empty, b's own backoff is 5 ms
        assert limiter.num_requeues("a") == 2
        limiter.forget("a")
        assert exponential.num_requeues("a") == 0

    def test_default_controller_rate_limiter(self) -> None:
        clock = FakeClock()
        limiter = default_controller_rate_limiter(clock)
        # One failing key backs off exponentially while the bucket has tokens...
        assert [limiter.when("a") for _ in range(5)] == [0.005, 0.01, 0.02, 0.04, 0.08]
        # ...and a storm of distinct keys is held to 10/s once 100 tokens are spent.
        storm = [limiter.when(("key", n)) for n in range(96)]
        assert storm[:95] == [0.005] * 95
        assert storm[95] == pytest.approx(0.1)

    def test_max_of_needs_a_limiter(self) -> None:
        with pytest.raises(ValueError):
            MaxOfRateLimiter()


class RecordingRateLimiter:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls: list[Hashable] = []
        self.forgotten: list[Hashable] = []

    def when(self, item: Hashable) -> float:
        self.calls.append(item)
        return self.delay

    def forget(self, item: Hashable) -> None:
        self.forgotten.append(item)

    def num_requeues(self, item: Hashable) -> int:
        return self.calls.count(item)


class TestRateLimitedQueue:
    async def test_add_rate_limited_waits_the_limiters_delay(self) -> None:
        clock = FakeClock()
        limiter = RecordingRateLimiter(delay=2.5)
        queue: WorkQueue[str] = WorkQueue(WorkQueueOptions(clock=clock, rate_limiter=limiter))
        queue.add_rate_limited("a")
        queue.add_rate_limited("a")
        assert queue.num_requeues("a") == 2
        clock.advance_to(2.4)
        assert len(queue) == 0
        clock.advance_to(2.5)
        assert len(queue) == 1
        assert await queue.get() == "a"
        queue.forget("a")
        assert limiter.forgotten == ["a"]

    async def test_default_limiter_backs_off_exponentially(self) -> None:
        clock = FakeClock()
        queue = fake_queue(clock)
        for expected_delay in (0.005, 0.01, 0.02):
            ready_at = clock.now() + expected_delay
            queue.add_rate_limited("a")
            clock.advance_to(ready_at - 0.0001)
            assert len(queue) == 0
            clock.advance_to(ready_at)
            assert len(queue) == 1
            assert await queue.get() == "a"
            queue.done("a")
        assert queue.num_requeues("a") == 3
        queue.forget("a")
        assert queue.num_requeues("a") == 0


class TestShutdown:
    async def test_blocked_and_later_getters_get_queue_shut_down(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        blocked = asyncio.create_task(queue.get())
        await let_other_tasks_run()
        queue.shutdown()
        with pytest.raises(QueueShutDown):
            await asyncio.wait_for(blocked, DEADLINE)
        with pytest.raises(QueueShutDown):
            await queue.get()
        assert queue.shutting_down

    async def test_waiting_and_delayed_items_are_dropped_and_adds_ignored(self) -> None:
        clock = FakeClock()
        queue = fake_queue(clock, unique_name())
        queue.add("a")
        queue.add_after("b", 1.0)
        queue.shutdown()
        assert len(queue) == 0
        assert clock.pending_timers == 0, "delay and metrics timers must stop"
        queue.add("c")
        queue.add_after("d", 0)
        queue.add_rate_limited("e")
        clock.advance(10.0)
        assert len(queue) == 0
        with pytest.raises(QueueShutDown):
            await queue.get()

    async def test_held_items_can_still_be_done_and_are_not_requeued(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        await queue.get()
        queue.add("a")
        queue.shutdown()
        queue.done("a")
        assert len(queue) == 0

    async def test_shutdown_with_drain_waits_for_held_items(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        queue.add("b")
        queue.add("queued-only")
        held = [await queue.get(), await queue.get()]
        drain = asyncio.create_task(queue.shutdown_with_drain())
        await let_other_tasks_run()
        assert not drain.done()
        queue.done(held[0])
        await let_other_tasks_run()
        assert not drain.done()
        queue.done(held[1])
        await asyncio.wait_for(drain, DEADLINE)

    async def test_shutdown_with_drain_returns_at_once_when_nothing_is_held(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        await asyncio.wait_for(queue.shutdown_with_drain(), DEADLINE)
        queue.shutdown()  # idempotent


def sample(name: str, queue_name: str, **extra: str) -> float | None:
    labels = {"name": queue_name, "controller": queue_name, **extra}
    return metrics.registry.get_sample_value(name, labels)


class TestMetrics:
    async def test_scripted_sequence(self) -> None:
        name = unique_name()
        clock = FakeClock(start=100.0)
        queue = fake_queue(clock, name)
        depth = {"priority": ""}
        assert sample("workqueue_depth", name, **depth) == 0.0
        assert sample("workqueue_adds_total", name) == 0.0

        queue.add("a")  # t=100
        queue.add("a")  # duplicate: not counted
        queue.add("b")
        assert sample("workqueue_adds_total", name) == 2.0
        assert sample("workqueue_depth", name, **depth) == 2.0

        clock.advance(2.0)  # t=102
        assert await queue.get() == "a"  # waited 2 s
        assert sample("workqueue_depth", name, **depth) == 1.0
        clock.advance(3.0)  # t=105
        queue.done("a")  # worked 3 s

        assert sample("workqueue_queue_duration_seconds_count", name) == 1.0
        assert sample("workqueue_queue_duration_seconds_sum", name) == 2.0
        assert sample("workqueue_queue_duration_seconds_bucket", name, le="1.0") == 0.0
        assert sample("workqueue_queue_duration_seconds_bucket", name, le="10.0") == 1.0
        assert sample("workqueue_work_duration_seconds_sum", name) == 3.0
        assert sample("workqueue_work_duration_seconds_count", name) == 1.0

        assert await queue.get() == "b"  # t=105, waited 5 s since its first add
        assert sample("workqueue_queue_duration_seconds_sum", name) == 7.0
        queue.add("b")  # re-added while held: counted, and depth reflects the pending re-run
        assert sample("workqueue_depth", name, **depth) == 1.0
        assert sample("workqueue_adds_total", name) == 3.0

        queue.add_after("c", 1.0)
        queue.add_after("d", 0.0)
        queue.add_rate_limited("e")
        assert sample("workqueue_retries_total", name) == 3.0
        assert sample("workqueue_depth", name, **depth) == 2.0  # b again, d

        clock.advance(1.0)  # t=106: c ready, e long since; b held for 1 s
        assert sample("workqueue_depth", name, **depth) == 4.0
        assert sample("workqueue_adds_total", name) == 6.0
        assert sample("workqueue_unfinished_work_seconds", name) == 1.0
        assert sample("workqueue_longest_running_processor_seconds", name) == 1.0

        assert await queue.get() == "d"  # t=106, held along with b
        clock.advance(2.0)  # t=108: b held 3 s, d held 2 s
        assert sample("workqueue_unfinished_work_seconds", name) == 5.0
        assert sample("workqueue_longest_running_processor_seconds", name) == 3.0

        queue.done("b")
        queue.done("d")
        clock.advance(0.5)
        assert sample("workqueue_unfinished_work_seconds", name) == 0.0
        assert sample("workqueue_longest_running_processor_seconds", name) == 0.0

        queue.shutdown()  # drops b (requeued), c and e
        assert sample("workqueue_depth", name, **depth) == 0.0

    async def test_the_controller_label_can_differ_from_the_name(self) -> None:
        name = unique_name()
        WorkQueue[str](WorkQueueOptions(name=name, clock=FakeClock(), controller="owner")).add("a")
        labels = {"name": name, "controller": "owner"}
        assert metrics.registry.get_sample_value("workqueue_adds_total", labels) == 1.0
        assert sample("workqueue_adds_total", name) is None

    async def test_unnamed_queues_export_nothing(self) -> None:
        queue: WorkQueue[str] = WorkQueue(WorkQueueOptions(clock=FakeClock()))
        assert queue.options.metrics is False
        with pytest.raises(ValueError, match="name"):
            WorkQueue(WorkQueueOptions(metrics=True))

    async def test_metrics_can_be_turned_off_for_a_named_queue(self) -> None:
        name = unique_name()
        clock = FakeClock()
        queue: WorkQueue[str] = WorkQueue(WorkQueueOptions(name=name, clock=clock, metrics=False))
        queue.add("a")
        assert sample("workqueue_adds_total", name) is None
        assert clock.pending_timers == 0
