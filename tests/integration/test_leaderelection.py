"""Leader election between managers sharing one Lease on the API server.

Timings are short (lease 2 s, renew deadline 1.2 s, retry 0.25 s) so hand-overs take seconds;
every wait polls a condition with a deadline. Activity is recorded with ``time.monotonic()``,
which on Linux is one clock for every process, so intervals from a child process compare.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import signal
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from runtime import metrics
from runtime.client import Client
from runtime.envtest import Environment
from runtime.leaderelection import (
    JITTER_FACTOR,
    LEASE_API_VERSION,
    LeaderElectionLost,
    LeaderElectionOptions,
    LeaderElector,
)
from runtime.manager import Manager, ManagerOptions
from runtime.runnable import runnable_func
from tests.support import manager_process
from tests.support.manager_process import next_event
from tests.support.poll import eventually
from tests.support.tcpproxy import TCPProxy, proxied_kubeconfig, server_address

LEASE = 2.0
RENEW = 1.2
RETRY = 0.25
REPO = Path(__file__).resolve().parents[2]


class Activity:
    """A controller-like runnable that records the intervals during which it was working."""

    def __init__(self) -> None:
        self.intervals: list[list[float]] = []
        self.ticks = 0

    async def start(self, stop: asyncio.Event) -> None:
        interval = [time.monotonic(), math.inf]
        self.intervals.append(interval)
        try:
            while not stop.is_set():
                self.ticks += 1
                with contextlib.suppress(TimeoutError):
                    # Work loop cadence, not a wait for a condition.
                    await asyncio.wait_for(stop.wait(), 0.01)
        finally:
            interval[1] = time.monotonic()


class Running:
    """A manager started in a task, with its stop event and activity recorder."""

    def __init__(self, manager: Manager, activity: Activity) -> None:
        self.manager = manager
        self.activity = activity
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.manager.start(self.stop))

    @property
    def identity(self) -> str:
        assert self.manager.options.leader_election_options is not None
        identity = self.manager.options.leader_election_options.identity
        assert identity is not None
        return identity


@pytest_asyncio.fixture(loop_scope="session")
async def managers(env: Environment, namespace: str) -> AsyncIterator[Callable[..., Any]]:
    clients: list[Client] = []
    runs: list[Running] = []

    async def make(
        identity: str, lease: str = "test-lease", client: Client | None = None, watch: bool = True
    ) -> Running:
        if client is None:
            client = await Client.from_kubeconfig(env.kubeconfig)
        clients.append(client)
        manager = Manager(
            ManagerOptions(
                client=client,
                metrics_bind_address="0",
                health_probe_bind_address="0",
                leader_election=True,
                leader_election_id=lease,
                leader_election_namespace=namespace,
                leader_election_identity=identity,
                lease_duration=LEASE,
                renew_deadline=RENEW,
                retry_period=RETRY,
                graceful_shutdown_timeout=5,
                leader_election_watch_lease=watch,
            )
        )
        activity = Activity()
        manager.add(activity)
        run = Running(manager, activity)
        runs.append(run)
        return run

    yield make
    for run in runs:
        run.stop.set()
    for run in runs:
        if run.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(run.task, 10)
    for client in clients:
        await client.close()


async def get_lease(env: Environment, namespace: str, name: str = "test-lease") -> dict[str, Any]:
    async with await Client.from_kubeconfig(env.kubeconfig) as client:
        return await client.get(LEASE_API_VERSION, "Lease", name, namespace)


@pytest.mark.parametrize("watch", [True, False], ids=["watching", "polling"])
async def test_only_the_leader_runs_and_a_clean_shutdown_hands_over_in_under_2s(
    env: Environment, namespace: str, managers: Callable[..., Any], watch: bool
) -> None:
    a: Running = await managers("manager-a", watch=watch)
    b: Running = await managers("manager-b", watch=watch)
    a.start()
    await asyncio.wait_for(a.manager.elected.wait(), 10)
    b.start()
    await eventually(
        lambda: (
            b.manager.leader_elector is not None and b.manager.leader_elector.observed_leader == a.identity
        ),
        timeout=10,
        message="B to see A holding the lease",
    )
    # Let A renew several times while B campaigns: B's runnable must never start.
    first = (await get_lease(env, namespace))["spec"]["renewTime"]
    renewals: set[str] = {first}

    async def renewed_thrice() -> bool:
        renewals.add((await get_lease(env, namespace))["spec"]["renewTime"])
        return len(renewals) >= 4

    await eventually(renewed_thrice, timeout=10, message="A renewing its lease three times")
    assert a.activity.ticks > 0
    assert b.activity.intervals == []
    assert not b.manager.elected.is_set()

    stopped_at = time.monotonic()
    a.stop.set()
    await asyncio.wait_for(b.manager.elected.wait(), 10)
    handover = time.monotonic() - stopped_at
    print(f"clean hand-over took {handover:.3f}s")
    assert handover < 2.0
    assert a.task is not None
    await asyncio.wait_for(a.task, 5)  # a clean stop: no error
    lease = await get_lease(env, namespace)
    assert lease["spec"]["holderIdentity"] == b.identity
    assert lease["spec"]["leaseTransitions"] == 1
    assert a.activity.intervals[0][1] <= b.activity.intervals[0][0], "A and B ran at the same time"


@pytest.mark.parametrize("watch", [True, False], ids=["watching", "polling"])
async def test_a_killed_leader_hands_over_within_lease_duration_plus_retry_period(
    env: Environment, namespace: str, managers: Callable[..., Any], watch: bool
) -> None:
    # Watching sees each renew as it happens. Polling (client-go) sees it up to one jittered
    # retry period (×2.2) late, and its lease clock starts that much later.
    bound = LEASE + RETRY if watch else LEASE + RETRY * (1 + JITTER_FACTOR)
    process = await manager_process.spawn(
        env.kubeconfig_path,
        "test-lease",
        namespace,
        "killed-leader",
        lease_duration=LEASE,
        renew_deadline=RENEW,
        retry_period=RETRY,
        step=0.05,
        grace=5,
    )
    try:
        assert (await next_event(process))["event"] == "leading"
        b: Running = await managers("successor", watch=watch)
        b.start()
        await eventually(
            lambda: (
                b.manager.leader_elector is not None
                and b.manager.leader_elector.observed_leader == "killed-leader"
            ),
            timeout=10,
            message="the successor to see the child holding the lease",
        )
        assert b.activity.intervals == []
        killed_at = time.monotonic()
        process.send_signal(signal.SIGKILL)
        await asyncio.wait_for(b.manager.elected.wait(), bound + 5)
        handover = time.monotonic() - killed_at
        print(f"hand-over after SIGKILL took {handover:.3f}s (bound {bound:g}s)")
        assert handover <= bound
        # Not early either: the dead leader's last renew was at most a retry period before the kill.
        assert handover >= LEASE - RETRY - 0.1
        lease = await get_lease(env, namespace)
        assert lease["spec"]["holderIdentity"] == b.identity
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def test_a_partitioned_leader_stops_before_its_renew_deadline_and_never_overlaps(
    env: Environment, namespace: str, managers: Callable[..., Any]
) -> None:
    host, port, _ = server_address(env.kubeconfig)
    proxy = TCPProxy(host, port)
    kubeconfig = proxied_kubeconfig(env.kubeconfig, await proxy.start())
    try:
        a: Running = await managers("partitioned", client=await Client.from_kubeconfig(kubeconfig))
        b: Running = await managers("healthy")
        a.start()
        await asyncio.wait_for(a.manager.elected.wait(), 10)
        b.start()
        await eventually(
            lambda: (
                b.manager.leader_elector is not None
                and b.manager.leader_elector.observed_leader == a.identity
            ),
            timeout=10,
            message="B to see A holding the lease",
        )
        cut_at = time.monotonic()
        # Open connections hang, new ones are refused: A can neither renew nor learn why.
        proxy.refuse = True
        proxy.stall()
        await asyncio.wait_for(b.manager.elected.wait(), 15)
        assert a.task is not None
        with pytest.raises(LeaderElectionLost, match="leader election lost"):
            await asyncio.wait_for(a.task, 5)
        a_end = a.activity.intervals[0][1]
        b_start = b.activity.intervals[0][0]
        print(f"A stopped {a_end - cut_at:.3f}s after the cut, B started {b_start - cut_at:.3f}s after it")
        # A's last successful renew was sent before the cut, so its deadline is before cut + RENEW.
        assert a_end - cut_at <= RENEW + 0.15  # 0.15 s of event-loop scheduling slack on a loaded machine
        assert a_end < b_start, "two leaders were active at once"
        assert a.activity.intervals[0][1] != math.inf
        assert len(a.activity.intervals) == 1
    finally:
        await proxy.stop()


async def test_a_leader_whose_lease_is_taken_stops_at_once(
    env: Environment, namespace: str, managers: Callable[..., Any]
) -> None:
    a: Running = await managers("victim")
    cancelled_at: list[float] = []

    async def ignores_stop(stop: asyncio.Event) -> None:
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            cancelled_at.append(time.monotonic())

    # Would hold a graceful stop for the whole grace period (5 s); a lost lease must not wait.
    a.manager.add(runnable_func(ignores_stop))
    a.start()
    await asyncio.wait_for(a.manager.elected.wait(), 10)
    async with await Client.from_kubeconfig(env.kubeconfig) as client:
        lease = await client.get(LEASE_API_VERSION, "Lease", "test-lease", namespace)
        lease["spec"]["holderIdentity"] = "thief"
        lease["spec"]["leaseDurationSeconds"] = 60
        # The leader may renew between our read and write; retry on the conflict.
        for _ in range(20):
            try:
                await client.update(lease)
                break
            except Exception:
                lease = await client.get(LEASE_API_VERSION, "Lease", "test-lease", namespace)
                lease["spec"]["holderIdentity"] = "thief"
                lease["spec"]["leaseDurationSeconds"] = 60
        stolen_at = time.monotonic()
    assert a.task is not None
    with pytest.raises(LeaderElectionLost):
        await asyncio.wait_for(a.task, 10)
    assert cancelled_at and cancelled_at[0] - stolen_at < RETRY + 0.5, "the grace period was not skipped"
    stopped_after = a.activity.intervals[0][1] - stolen_at
    print(f"leader stopped {stopped_after:.3f}s after its lease was taken")
    # At its next renew (one retry period), not at its renew deadline.
    assert stopped_after < RETRY + 0.5
    assert metrics.leader_election_master_status.labels("test-lease")._value.get() == 0


async def test_a_fractional_lease_duration_is_rounded_up_in_the_lease(
    env: Environment, namespace: str
) -> None:
    """Other candidates time the holder by the Lease's whole seconds; rounding down could let
    them take over before the holder's renew deadline (1.4 s lease, 1.2 s deadline → 1 s)."""
    async with await Client.from_kubeconfig(env.kubeconfig) as client:
        elector = LeaderElector(
            client,
            "fractional",
            namespace,
            LeaderElectionOptions(lease_duration=1.4, renew_deadline=1.2, retry_period=0.2),
        )
        stop = asyncio.Event()
        task = asyncio.get_running_loop().create_task(elector.run(stop))
        await eventually(lambda: elector.is_leader, timeout=10, message="the elector to lead")
        lease = await client.get(LEASE_API_VERSION, "Lease", "fractional", namespace)
        assert lease["spec"]["leaseDurationSeconds"] == 2
        assert lease["spec"]["holderIdentity"] == elector.identity
        stop.set()
        await asyncio.wait_for(task, 10)
        assert not elector.is_leader
        assert (await client.get(LEASE_API_VERSION, "Lease", "fractional", namespace))["spec"][
            "holderIdentity"
        ] == ""
