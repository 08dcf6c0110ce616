"""The quorum monitor against real etcd clusters: growth, a lost member, lost quorum, and a voter
that answers its peers but not its clients."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.etcd.client import EtcdClient
from demo.monitor import DEFAULT_ELECTION_GRACE, QuorumMonitor, QuorumSample
from providers.localmachine.etcd_process import EtcdSupervisor
from tests.integration.conftest import etcd_options
from tests.support.etcd import join_when_healthy, promote_when_in_sync
from tests.support.poll import eventually
from tests.support.tcpproxy import TCPProxy

pytestmark = pytest.mark.slow


async def test_the_monitor_records_voters_learners_health_and_the_loss_of_quorum(
    etcd_supervisor: EtcdSupervisor,
) -> None:
    first = await etcd_supervisor.bootstrap("m0")
    async with EtcdClient([first.client_url]) as etcd, QuorumMonitor([first.client_url]) as monitor:
        sample = await monitor.next_sample()
        assert (sample.voters, sample.learners, sample.healthy_voters) == (1, 0, 1)
        assert sample.leader == "m0" and sample.has_quorum and sample.machines == ("m0",)

        for name in ("m1", "m2"):
            joined = await join_when_healthy(etcd_supervisor, name, etcd)
            # Named: a learner that has started but not yet published its name shows as its id.
            await eventually(
                lambda name=name: _named_learner(monitor, name),
                timeout=10,
                message=f"{name} seen as a learner",
            )
            await promote_when_in_sync(etcd, joined.member_id or 0)
        await eventually(lambda: _latest(monitor, healthy_voters=3), timeout=10, message="3 healthy voters")
        grown = monitor.mark()
        monitor.assert_never_lost_quorum()
        assert monitor.peak("learners") == 1 and monitor.low("voters") == 1 and monitor.peak("voters") == 3

        # The first member goes: the monitor keeps reading through the other members' client URLs.
        await etcd_supervisor.kill("m0")
        await eventually(lambda: _latest(monitor, healthy_voters=2), timeout=10, message="2 healthy voters")
        monitor.assert_never_lost_quorum()
        assert monitor.low("voters", since=grown) == 3
        assert monitor.samples[-1].leader in ("m1", "m2")
        assert monitor.samples[-1].unhealthy_voters == ("m0",)

        await etcd_supervisor.kill("m1")
        # The first sample without quorum may still show m1 healthy: its health read can answer
        # just before the kill while m2's, with the quorum gone, fails. The next ones show m1 down.
        lost: QuorumSample = await eventually(
            lambda: _lost_with_down(monitor, {"m0", "m1"}), timeout=15, message="quorum lost, m0 and m1 down"
        )
        assert lost.healthy_voters <= 1 and lost.voters == 3
        # Every sample counts with longer_than=0; by default only a loss that outlasts an election.
        with pytest.raises(AssertionError, match="lost quorum"):
            monitor.assert_never_lost_quorum(longer_than=0)
        await eventually(
            lambda: _latest_since(monitor, lost.at + DEFAULT_ELECTION_GRACE),
            timeout=15,
            message="a lasting loss",
        )
    with pytest.raises(AssertionError, match="lost quorum"):
        monitor.assert_never_lost_quorum()
    changes = monitor.changes()
    seen = [c["machines"] for c in changes]
    assert seen[0] == ("m0",) and seen.index(("m0", "m1~")) < seen.index(("m0", "m1")), seen
    assert monitor.timeline()[0]["at"] >= 0


async def test_a_voter_that_stops_answering_its_clients_costs_no_quorum_while_its_peers_still_vote(
    etcd_supervisor: EtcdSupervisor,
) -> None:
    """Two voters; the second one's client port stops answering (its advertised client URL goes
    through a proxy that holds every new connection) while it keeps voting with the first. The
    first member still serves linearizable reads, so the cluster has its quorum and the monitor
    says so, although one voter of two fails every health read at the timeout. Killing the second
    member then loses the quorum (one voter of two cannot confirm a read), and the monitor says
    that."""
    first = await etcd_supervisor.bootstrap("m0")
    proxy = TCPProxy("127.0.0.1", 0)
    port = await proxy.start()
    # A second supervisor on the same state directory: the same members, but m1 advertises the
    # proxy as its client URL, so the monitor's health reads of m1 go through it.
    advertising = EtcdSupervisor(
        etcd_supervisor.state_dir,
        etcd_options(extra_flags={"advertise-client-urls": f"http://127.0.0.1:{port}"}),
    )
    try:
        async with EtcdClient([first.client_url]) as etcd, QuorumMonitor([first.client_url]) as monitor:
            await monitor.next_sample()
            joined = await join_when_healthy(advertising, "m1", etcd)
            proxy.target = ("127.0.0.1", joined.client_port)
            await promote_when_in_sync(etcd, joined.member_id or 0)
            await eventually(
                lambda: _latest(monitor, healthy_voters=2), timeout=15, message="2 healthy voters"
            )

            held = monitor.mark()
            proxy.hold = True
            proxy.cut()
            slow: QuorumSample = await eventually(
                lambda: _latest(monitor, unhealthy_voters=("m1",)), timeout=15, message="m1's reads failing"
            )
            await eventually(
                lambda: _latest_held_since(monitor, slow.at + 2 * DEFAULT_ELECTION_GRACE),
                timeout=30,
                message="m1's reads failing for twice the election grace",
            )
            stalled = [s for s in monitor.samples if s.at >= slow.at]
            assert all(s.voters == 2 and s.healthy_voters == 1 and s.has_quorum for s in stalled), stalled
            monitor.assert_never_lost_quorum(since=held)

            proxy.hold = False
            proxy.cut()
            await etcd_supervisor.kill("m1")
            lost = await lasting_loss(monitor, "quorum lost with m1 dead")
            assert lost.voters == 2 and lost.healthy_voters == 0, lost
        with pytest.raises(AssertionError, match="lost quorum"):
            monitor.assert_never_lost_quorum(since=held)
    finally:
        await proxy.stop()


async def test_a_long_leader_election_among_live_voters_is_no_loss_but_two_of_three_down_is(
    tmp_path: Path,
) -> None:
    """Three voters that wait 20 s (etcd randomises it up to 40 s) before electing a new leader, so
    that the monitor surely samples the election: while no leader answers, one poll can take 10 s
    (its member list tries each of the three members for its 2 s timeout, then a health read and a
    status read of 2 s each), and a poll under way at the pause records its sample before it; with
    10 s (the first version of this test) the first sample after the pause came with the new leader
    in a stress run on four workers. The leader paused: no voter serves a
    linearizable read until the two others elect one, but both answer status reads, so the
    quorum is there and the monitor says so. Then a second member paused: a loss, and the monitor
    says that."""
    slow = EtcdSupervisor(
        tmp_path / "etcd",
        etcd_options(extra_flags={"election-timeout": "20000", "heartbeat-interval": "1000"}),
    )
    try:
        first = await slow.bootstrap("m0")
        async with EtcdClient([first.client_url]) as etcd, QuorumMonitor([first.client_url]) as monitor:
            for name in ("m1", "m2"):
                joined = await join_when_healthy(slow, name, etcd, within=40)
                await promote_when_in_sync(etcd, joined.member_id or 0, within=40)
            grown: QuorumSample = await eventually(
                lambda: _latest(monitor, healthy_voters=3), timeout=20, message="3 healthy voters"
            )
            leader = grown.leader
            assert leader is not None, grown
            mark = monitor.mark()
            await slow.pause(leader)
            elected: QuorumSample = await eventually(
                lambda: _new_leader(monitor, leader), timeout=60, message="a new leader among the two others"
            )
            during = [sample for sample in monitor.samples if mark <= sample.at < elected.at]
            assert all(sample.has_quorum for sample in during), during
            assert any(sample.healthy_voters == 0 and sample.electing for sample in during), during
            monitor.assert_never_lost_quorum(since=mark)

            await slow.pause(elected.leader or "")
            lost = await lasting_loss(monitor, "quorum lost, 2 of 3 paused")
            assert not lost.electing and lost.voters == 3, lost
        with pytest.raises(AssertionError, match="lost quorum"):
            monitor.assert_never_lost_quorum(since=mark)
    finally:
        for member in slow.members():
            await slow.resume(member.name)
        await slow.stop_all()


async def lasting_loss(monitor: QuorumMonitor, message: str) -> QuorumSample:
    """The first sample without a quorum, once the loss has lasted longer than an election."""
    lost: QuorumSample = await eventually(
        lambda: _latest(monitor, has_quorum=False), timeout=15, message=message
    )
    await eventually(
        lambda: _latest_since(monitor, lost.at + DEFAULT_ELECTION_GRACE), timeout=15, message="a lasting loss"
    )
    return lost


async def _new_leader(monitor: QuorumMonitor, old: str) -> QuorumSample | None:
    latest = monitor.samples[-1]
    return latest if latest.leader not in (None, old) and latest.healthy_voters == 2 else None


async def _latest_held_since(monitor: QuorumMonitor, at: float) -> bool:
    latest = monitor.samples[-1]
    return latest.at >= at and latest.unhealthy_voters == ("m1",)


async def _latest_since(monitor: QuorumMonitor, at: float) -> bool:
    return monitor.samples[-1].at >= at and not monitor.samples[-1].has_quorum


async def _lost_with_down(monitor: QuorumMonitor, down: set[str]) -> QuorumSample | None:
    sample = await _latest(monitor, has_quorum=False)
    return sample if sample is not None and down <= set(sample.unhealthy_voters) else None


async def _named_learner(monitor: QuorumMonitor, name: str) -> bool:
    return bool(monitor.samples) and f"{name}~" in monitor.samples[-1].machines


async def _latest(monitor: QuorumMonitor, **expected: object) -> QuorumSample | None:
    if not monitor.samples:
        return None
    sample = monitor.samples[-1]
    return sample if all(getattr(sample, key) == value for key, value in expected.items()) else None
