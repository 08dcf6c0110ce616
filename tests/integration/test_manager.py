"""The manager against the API server: start order, probes, /metrics, events, signals, failures."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from runtime import metrics
from runtime.client import Client
from runtime.envtest import Environment
from runtime.events import EventSink, EventSinkOptions
from runtime.leaderelection import LEASE_API_VERSION
from runtime.manager import GracefulShutdownTimeout, Manager, ManagerOptions
from runtime.runnable import runnable_func
from tests.support import manager_process
from tests.support.manager_process import next_event
from tests.support.poll import eventually

REPO = Path(__file__).resolve().parents[2]

DESIGN_METRICS = (
    "controller_runtime_reconcile_total",
    "controller_runtime_reconcile_errors_total",
    "controller_runtime_reconcile_time_seconds",
    "controller_runtime_active_workers",
    "controller_runtime_max_concurrent_reconciles",
    "workqueue_depth",
    "workqueue_adds_total",
    "workqueue_queue_duration_seconds",
    "workqueue_work_duration_seconds",
    "workqueue_retries_total",
    "workqueue_unfinished_work_seconds",
    "workqueue_longest_running_processor_seconds",
    "leader_election_master_status",
    "rest_client_requests_total",
    "controller_runtime_webhook_requests_total",
    "controller_runtime_webhook_latency_seconds",
)


class GatedCache:
    """A cache-like runnable whose sync the test releases, so the states before and after the
    sync can be observed without racing a real informer."""

    def __init__(self, log: list[str]) -> None:
        self.synced = asyncio.Event()
        self.log = log

    async def start(self, stop: asyncio.Event) -> None:
        self.log.append("cache started")
        await stop.wait()

    async def wait_for_cache_sync(self) -> None:
        await self.synced.wait()
        self.log.append("cache synced")


class WebhookLike:
    """Serves only once the test says so, to show readiness waits for it."""

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.serving = False

    async def start(self, stop: asyncio.Event) -> None:
        self.log.append("webhook started")
        await stop.wait()

    def started_checker(self) -> Any:
        async def check(request: Any) -> None:
            if not self.serving:
                raise RuntimeError("webhook server not serving yet")

        return check

    def need_leader_election(self) -> bool:
        return False


def recorder_runnable(log: list[str], label: str, *, leader: bool) -> Any:
    async def run(stop: asyncio.Event) -> None:
        log.append(f"{label} started")
        await stop.wait()

    return runnable_func(run, need_leader_election=leader)


async def http_get(port: int, path: str) -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}{path}") as response:
        return response.status, await response.text(), response.headers.get("Content-Type", "")


async def test_start_order_probes_and_metrics(client: Client, namespace: str) -> None:
    log: list[str] = []
    cache = GatedCache(log)
    manager = Manager(
        ManagerOptions(
            client=client,
            metrics_bind_address="127.0.0.1:0",
            health_probe_bind_address="127.0.0.1:0",
            leader_election=True,
            leader_election_id="probes-lease",
            leader_election_namespace=namespace,
            lease_duration=2,
            renew_deadline=1.2,
            retry_period=0.25,
        )
    )
    # Any runnable with wait_for_cache_sync joins the cache group, the manager's own Cache too.
    manager.add(cache)
    webhook_server = WebhookLike(log)
    manager.add(webhook_server)
    manager.add(recorder_runnable(log, "other", leader=False))
    manager.add(recorder_runnable(log, "controller", leader=True))

    async def failing(request: Any) -> None:
        raise RuntimeError("disk full")

    manager.add_healthz_check("disk", failing)
    stop = asyncio.Event()
    task = asyncio.get_running_loop().create_task(manager.start(stop))
    try:
        await eventually(
            lambda: "cache started" in log and "webhook started" in log, timeout=10, message="start-up"
        )
        probes = manager.health_probe_port
        assert probes is not None and manager.metrics_port is not None
        # Caches not synced: not ready, nothing that waits for them has started.
        status, body, _ = await http_get(probes, "/readyz")
        assert (status, body) == (
            500,
            "[-]caches-synced failed: reason withheld\n"
            "[-]webhook failed: reason withheld\n"
            "healthz check failed\n",
        )
        status, body, _ = await http_get(probes, "/readyz/caches-synced")
        assert (status, body) == (500, "internal server error: caches not synced yet\n")
        assert "other started" not in log and "controller started" not in log
        assert not manager.elected.is_set()
        # Liveness: the failing check fails /healthz, excluding it passes.
        status, body, _ = await http_get(probes, "/healthz")
        assert (status, body) == (500, "[-]disk failed: reason withheld\nhealthz check failed\n")
        assert (await http_get(probes, "/healthz?exclude=disk"))[:2] == (200, "ok")
        assert (await http_get(probes, "/healthz/nope"))[0] == 404

        cache.synced.set()
        await asyncio.wait_for(manager.elected.wait(), 10)
        assert log.index("webhook started") < log.index("cache synced") < log.index("other started")
        assert log.index("other started") < log.index("controller started")
        # Caches synced but the webhook does not serve yet: still not ready.
        assert (await http_get(probes, "/readyz"))[:2] == (
            500,
            "[+]caches-synced ok\n[-]webhook failed: reason withheld\nhealthz check failed\n",
        )
        webhook_server.serving = True
        assert (await http_get(probes, "/readyz"))[:2] == (200, "ok")
        assert (await http_get(probes, "/readyz?verbose"))[:2] == (
            200,
            "[+]caches-synced ok\n[+]webhook ok\nhealthz check passed\n",
        )
        assert (await http_get(probes, "/readyz/caches-synced"))[:2] == (200, "ok")

        # Families that exist once a controller, its queue and a webhook exist.
        controller = metrics.init_controller_metrics("probe-test", max_concurrent=1)
        controller.observe_reconcile_time(0.01)
        metrics.init_workqueue_metrics("probe-test")
        webhook = metrics.init_webhook_metrics("/validate-probe-test")
        webhook.latency.observe(0.001)
        status, text, content_type = await http_get(manager.metrics_port, "/metrics")
        assert status == 200
        assert content_type == metrics.CONTENT_TYPE_LATEST
        families = list(text_string_to_metric_families(text))
        names = {f.name for f in families} | {s.name for f in families for s in f.samples}
        missing = [name for name in DESIGN_METRICS if name not in names]
        assert not missing, f"/metrics lacks {missing}"
        leader = [
            s.value
            for f in families
            if f.name == "leader_election_master_status"
            for s in f.samples
            if s.labels == {"name": "probes-lease"}
        ]
        assert leader == [1.0]
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
    assert metrics.leader_election_master_status.labels("probes-lease")._value.get() == 0
    lease = await client.get(LEASE_API_VERSION, "Lease", "probes-lease", namespace)
    assert lease["spec"]["holderIdentity"] == ""
    assert lease["spec"]["leaseDurationSeconds"] == 1
    # Servers are gone after stop.
    with pytest.raises(aiohttp.ClientConnectionError):
        await http_get(probes, "/healthz")


async def test_a_failing_runnable_stops_the_manager_with_its_error(client: Client) -> None:
    log: list[str] = []
    manager = Manager(ManagerOptions(client=client, metrics_bind_address="0", health_probe_bind_address="0"))

    async def broken(stop: asyncio.Event) -> None:
        raise RuntimeError("boom")

    manager.add(recorder_runnable(log, "bystander", leader=True))
    manager.add(runnable_func(broken))
    with pytest.raises(RuntimeError, match="boom"):
        await asyncio.wait_for(manager.start(asyncio.Event()), 10)
    assert "bystander started" in log


async def test_runnables_that_overrun_the_grace_period_are_cancelled(client: Client) -> None:
    manager = Manager(
        ManagerOptions(
            client=client,
            metrics_bind_address="0",
            health_probe_bind_address="0",
            graceful_shutdown_timeout=0.2,
        )
    )
    cancelled = asyncio.Event()

    async def stubborn(stop: asyncio.Event) -> None:
        try:
            await asyncio.get_running_loop().create_future()  # ignores stop
        except asyncio.CancelledError:
            cancelled.set()
            raise

    manager.add(runnable_func(stubborn))
    stop = asyncio.Event()
    task = asyncio.get_running_loop().create_task(manager.start(stop))
    await asyncio.wait_for(manager.elected.wait(), 10)
    started = time.monotonic()
    stop.set()
    with pytest.raises(GracefulShutdownTimeout, match="graceful_shutdown_timeout"):
        await asyncio.wait_for(task, 10)
    assert cancelled.is_set()
    assert 0.2 <= time.monotonic() - started < 2


async def test_identical_events_are_aggregated_into_one_with_a_count(client: Client, namespace: str) -> None:
    manager = Manager(ManagerOptions(client=client, metrics_bind_address="0", health_probe_bind_address="0"))
    cm = await client.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "subject", "namespace": namespace}}
    )
    recorder = manager.get_event_recorder("test-controller")
    recorder.event(cm, "Normal", "Synced", "all good")
    recorder.eventf(cm, "Normal", "Synced", "all %s", "good")
    recorder.event(cm, "Warning", "Failed", "not good")
    sink = manager._event_sink
    assert sink is not None
    await asyncio.wait_for(sink.flush(), 10)
    listing = await client.list("v1", "Event", namespace)
    events = sorted(listing["items"], key=lambda e: e["reason"])
    assert [(e["reason"], e["count"], e["type"]) for e in events] == [
        ("Failed", 1, "Warning"),
        ("Synced", 2, "Normal"),
    ]
    synced = events[1]
    assert synced["involvedObject"]["name"] == "subject"
    assert synced["involvedObject"]["uid"] == cm["metadata"]["uid"]
    assert synced["source"]["component"] == "test-controller"
    assert synced["message"] == "all good"
    await sink.close()


async def test_the_event_queue_drops_instead_of_blocking_when_full(client: Client, namespace: str) -> None:
    sink = EventSink(client, EventSinkOptions(queue_size=2))
    recorder = sink.recorder("flood")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flooded", "namespace": namespace}}
    started = time.monotonic()
    for i in range(10):  # no await in between: the writer cannot drain
        recorder.event(cm, "Normal", "Flood", f"message {i}")
    assert time.monotonic() - started < 0.5
    assert sink.dropped == 8
    await asyncio.wait_for(sink.flush(), 10)
    listing = await client.list("v1", "Event", namespace)
    assert sorted(e["message"] for e in listing["items"]) == ["message 0", "message 1"]
    await sink.close()


async def spawn_manager(
    env: Environment, namespace: str, lease: str, step: float, grace: float
) -> asyncio.subprocess.Process:
    return await manager_process.spawn(
        env.kubeconfig_path,
        lease,
        namespace,
        "signalled",
        lease_duration=2,
        renew_deadline=1.2,
        retry_period=0.25,
        step=step,
        grace=grace,
    )


async def test_sigterm_finishes_the_step_in_flight_releases_the_lease_and_exits_0(
    env: Environment, client: Client, namespace: str
) -> None:
    process = await spawn_manager(env, namespace, "signal-lease", step=0.5, grace=5)
    try:
        assert (await next_event(process))["event"] == "leading"
        assert (await next_event(process))["event"] == "step-start"
        signalled_at = time.monotonic()
        process.send_signal(signal.SIGTERM)
        events = [await next_event(process) for _ in range(2)]
        assert [e["event"] for e in events] == ["step-done", "exit"]
        assert events[1]["code"] == 0
        assert await asyncio.wait_for(process.wait(), 10) == 0
        elapsed = time.monotonic() - signalled_at
        print(f"exited {elapsed:.3f}s after SIGTERM")
        assert elapsed < 5
        lease = await client.get(LEASE_API_VERSION, "Lease", "signal-lease", namespace)
        assert lease["spec"]["holderIdentity"] == ""
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_second_signal_exits_at_once_with_status_1(env: Environment, namespace: str) -> None:
    process = await spawn_manager(env, namespace, "impatient-lease", step=30, grace=60)
    try:
        assert (await next_event(process))["event"] == "leading"
        assert (await next_event(process))["event"] == "step-start"
        process.send_signal(signal.SIGTERM)
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 10) == 1
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_repeats_outside_the_aggregation_window_are_new_events(client: Client, namespace: str) -> None:
    sink = EventSink(client, EventSinkOptions(aggregation_window=0))
    recorder = sink.recorder("no-window")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "again", "namespace": namespace}}
    recorder.event(cm, "Normal", "Again", "same")
    await asyncio.wait_for(sink.flush(), 10)
    recorder.event(cm, "Normal", "Again", "same")
    await asyncio.wait_for(sink.flush(), 10)
    listing = await client.list("v1", "Event", namespace)
    assert [e["count"] for e in listing["items"]] == [1, 1]
    recorder.event(cm, "Normal", "Bogus", "a type that is neither Normal nor Warning is dropped")
    recorder.event(cm, "Sideways", "Bogus", "dropped")
    await asyncio.wait_for(sink.flush(), 10)
    listing = await client.list("v1", "Event", namespace)
    assert sorted(e["reason"] for e in listing["items"]) == ["Again", "Again", "Bogus"]
    await sink.close()


async def test_the_spam_filter_caps_events_about_one_object(client: Client, namespace: str) -> None:
    sink = EventSink(client, EventSinkOptions(spam_burst=3))
    noisy = sink.recorder("noisy")
    other = sink.recorder("other-component")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "spammed", "namespace": namespace}}
    for i in range(5):
        noisy.event(cm, "Warning", "Retry", f"attempt {i}")
    other.event(cm, "Normal", "Seen", "another source has its own budget")
    assert sink.filtered == 2
    await asyncio.wait_for(sink.flush(), 10)
    listing = await client.list("v1", "Event", namespace)
    assert sorted(e["message"] for e in listing["items"]) == [
        "another source has its own budget",
        "attempt 0",
        "attempt 1",
        "attempt 2",
    ]
    await sink.close()
