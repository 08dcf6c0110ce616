"""The etcd member supervisor with real processes: re-attach, faults, stopping, dying with the parent."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from controllers.etcd.client import (
    EtcdClient,
    EtcdClientOptions,
    Member,
    MemberAddResult,
    TooManyLearners,
    Unavailable,
    UnhealthyCluster,
)
from providers.localmachine.etcd_process import (
    STATE_FILE,
    EtcdProcessError,
    EtcdSupervisor,
    MemberProcess,
    ProcessIdentity,
    spawned_processes,
)
from tests.integration.conftest import etcd_options
from tests.support.etcd import AddAnswerLost, etcd_processes_for, promote_when_in_sync
from tests.support.poll import eventually

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


async def test_a_restarted_supervisor_reattaches_and_never_duplicates(
    etcd_supervisor: EtcdSupervisor,
) -> None:
    first = await etcd_supervisor.bootstrap("m0")
    async with EtcdClient([first.client_url]) as etcd:
        second = await etcd_supervisor.join("m1", etcd)
    # The learner refuses a member add; the client moves on to the voter, which answers for etcd.
    async with EtcdClient([second.client_url, first.client_url]) as etcd:
        with pytest.raises(TooManyLearners) as refused:
            await etcd.add_learner(["http://127.0.0.1:1"])
        assert refused.value.endpoint == first.client_url
    pids = {"m0": first.pid, "m1": second.pid}
    # Each member leads its own process group, away from the test runner's.
    assert all(os.getpgid(pid) == pid != os.getpgid(0) for pid in pids.values() if pid is not None)
    # What the session-end leak check relies on: every process we spawn is tracked by identity.
    assert first.process in spawned_processes() and second.process in spawned_processes()

    # A "restarted provider": a new supervisor object on the same state directory.
    restarted = EtcdSupervisor(etcd_supervisor.state_dir, etcd_options())
    assert {member.name: member.pid for member in restarted.members()} == pids
    assert all(member.running for member in restarted.members())
    # Starting what runs returns it as it is, whichever entry point the caller uses.
    assert (await restarted.bootstrap("m0")).pid == pids["m0"]
    async with EtcdClient([first.client_url]) as etcd:
        assert (await restarted.join("m1", etcd)).pid == pids["m1"]
        assert len(await etcd.member_list()) == 2  # no second member add
    assert (await restarted.start("m1")).pid == pids["m1"]
    for member in restarted.members():
        assert etcd_processes_for(member.data_dir) == [member.pid]

    # A member that died while nobody watched is cleaned up on the next look, then started once.
    assert await restarted.kill("m1")  # returns once the process is gone
    assert second.process is not None and not second.process.alive()
    again = EtcdSupervisor(etcd_supervisor.state_dir, etcd_options())
    m1 = again.get("m1")
    assert m1 is not None and m1.process is None and not m1.running
    assert json.loads((m1.directory / STATE_FILE).read_text())["pid"] is None
    assert m1.data_dir.is_dir()  # its data stays for the restart
    restarted_m1 = await again.start("m1")
    assert restarted_m1.pid not in (None, pids["m1"])
    assert restarted_m1.member_id == second.member_id
    assert etcd_processes_for(restarted_m1.data_dir) == [restarted_m1.pid]
    async with EtcdClient([first.client_url]) as etcd:
        assert sorted(member.name for member in await etcd.member_list()) == ["m0", "m1"]
        [check] = await etcd.health([restarted_m1.client_url])
        assert check.healthy  # the learner serves again (a serializable read, see health())
        assert check.learner


@pytest.mark.parametrize("reaches", [True, False], ids=["add-made", "add-lost"])
async def test_a_join_cut_off_around_its_member_add_is_finished_by_the_next_join(
    etcd_supervisor: EtcdSupervisor, reaches: bool
) -> None:
    """A provider SIGKILLed while its member add is on the wire: etcd has made the learner, and
    the restarted provider, with no record of it, must not ask for another (etcd takes one learner
    at a time and would refuse until the etcd-quorum hook removed the "abandoned" learner five
    minutes later). The record written before the add lets the next join start the learner etcd
    has, or add it afresh when the add never arrived."""
    first = await etcd_supervisor.bootstrap("m0")
    async with EtcdClient([first.client_url]) as etcd:
        with pytest.raises(Unavailable):
            await etcd_supervisor.join("m1", AddAnswerLost(etcd, reaches=reaches))
        adding = etcd_supervisor.get("m1")
        assert adding is not None and adding.adding and not adding.running
        learners = [m for m in await etcd.member_list() if m.is_learner]
        assert [m.peer_urls for m in learners] == ([(adding.peer_url,)] if reaches else [])
        with pytest.raises(EtcdProcessError, match="was being added"):
            await etcd_supervisor.start("m1")  # no command line to start it with

        # The restarted provider: a new supervisor on the same state directory.
        restarted = EtcdSupervisor(etcd_supervisor.state_dir, etcd_options())
        m1 = await restarted.join("m1", etcd)
        assert m1.running and not m1.adding
        if reaches:
            assert (m1.member_id, m1.peer_url) == (learners[0].id, adding.peer_url)

        async def m1_started() -> list[Member] | None:
            members = await etcd.member_list()
            return members if any(m.name == "m1" for m in members) else None

        members = await eventually(m1_started, timeout=30, message="m1 started and published")
        assert sorted((m.name, m.is_learner) for m in members) == [("m0", False), ("m1", True)]
        assert etcd_processes_for(m1.data_dir) == [m1.pid]


async def test_a_join_announces_the_peer_url_before_etcd_has_the_member(
    etcd_supervisor: EtcdSupervisor,
) -> None:
    """The provider publishes the peer URL on its Machine in ``announce``: etcd must not have the
    member yet (a provider that dies after the add leaves a member its Machine already names),
    and the member started is the one announced, also when a cut-off join is finished."""
    first = await etcd_supervisor.bootstrap("m0")
    announced: list[tuple[str, str, bool]] = []
    async with EtcdClient([first.client_url]) as etcd:

        async def announce(member: MemberProcess) -> None:
            listed = any(member.peer_url in m.peer_urls for m in await etcd.member_list())
            announced.append((member.name, member.peer_url, listed))

        m1 = await etcd_supervisor.join("m1", etcd, announce=announce)
        assert announced == [("m1", m1.peer_url, False)]

        # A join cut off after its add: finishing it announces the same peer URL again.
        await promote_when_in_sync(etcd, m1.member_id or 0)

        async def cut_off() -> bool:
            try:
                await etcd_supervisor.join("m2", AddAnswerLost(etcd, reaches=True), announce=announce)
            except UnhealthyCluster:  # within 5 s of the promotion
                return False
            except Unavailable:
                return True
            raise AssertionError("the add answered")

        await eventually(cut_off, timeout=20, message="m2's add made, its answer lost")
        m2 = await etcd_supervisor.join("m2", etcd, announce=announce)
        assert announced[-2:] == [("m2", m2.peer_url, False), ("m2", m2.peer_url, True)]


async def test_a_member_add_etcd_refused_leaves_no_record(etcd_supervisor: EtcdSupervisor) -> None:
    first = await etcd_supervisor.bootstrap("m0")
    async with EtcdClient([first.client_url]) as etcd:
        await etcd.add_learner(["http://127.0.0.1:1"])  # a learner ahead, never started
        with pytest.raises(TooManyLearners):
            await etcd_supervisor.join("m1", etcd)
    assert etcd_supervisor.get("m1") is None
    assert [m.name for m in etcd_supervisor.members()] == ["m0"]


async def test_pause_freezes_a_member_and_resume_brings_it_back(etcd_supervisor: EtcdSupervisor) -> None:
    member = await etcd_supervisor.bootstrap("m0")
    assert await etcd_supervisor.pause("m0")
    frozen = etcd_supervisor.get("m0")
    assert frozen is not None and frozen.paused and frozen.running
    async with EtcdClient([member.client_url], EtcdClientOptions(timeout=0.5)) as etcd:
        [check] = await etcd.health()
        assert not check.healthy and check.error is not None and "0.5s" in check.error
    assert await etcd_supervisor.resume("m0")
    thawed = etcd_supervisor.get("m0")
    assert thawed is not None and not thawed.paused and thawed.pid == member.pid
    async with EtcdClient([member.client_url]) as etcd:

        async def healthy() -> bool:
            [check] = await etcd.health()
            return check.healthy

        await eventually(healthy, timeout=10, message="m0 healthy after SIGCONT")


async def signal_handler_installed(member: MemberProcess, *, count: int) -> None:
    """Wait for the ``count``-th start of ``member`` to finish its initialisation.

    etcd answers clients a moment before it installs its SIGTERM handler (the log line that follows
    is its systemd readiness notice); a SIGTERM in between kills it without the graceful shutdown
    this test looks for.
    """

    async def logged() -> bool:
        return member.log_path.read_text().count("notified init daemon") >= count

    await eventually(logged, timeout=10, message=f"start {count} of {member.name} initialised")


async def test_stop_terminates_gracefully_and_a_paused_member_still_stops(
    etcd_supervisor: EtcdSupervisor,
) -> None:
    member = await etcd_supervisor.bootstrap("m0")
    assert member.process is not None
    await signal_handler_installed(member, count=1)
    await etcd_supervisor.stop("m0")
    assert not member.process.alive()
    assert "received signal; shutting down" in member.log_path.read_text()  # SIGTERM, not SIGKILL
    stopped = etcd_supervisor.get("m0")
    assert stopped is not None and stopped.process is None

    # A SIGSTOPped member gets SIGCONT with its SIGTERM, so it still stops within the grace period.
    again = await etcd_supervisor.start("m0")
    assert again.process is not None and again.process != member.process
    await signal_handler_installed(member, count=2)
    assert await etcd_supervisor.pause("m0")
    await etcd_supervisor.stop("m0", grace_period=10)
    assert not again.process.alive()
    assert member.log_path.read_text().count("received signal; shutting down") == 2

    # Grace period 0: straight to SIGKILL.
    third = await etcd_supervisor.start("m0")
    assert third.process is not None
    await etcd_supervisor.stop("m0", grace_period=0)
    assert not third.process.alive()

    await etcd_supervisor.remove("m0")
    assert etcd_supervisor.get("m0") is None and not member.directory.exists()


async def test_members_die_with_their_parent_process(tmp_path: Path) -> None:
    """The PR_SET_PDEATHSIG safety net: SIGKILL the supervisor's process, its etcd goes too."""
    script = (
        "import asyncio, json, sys\n"
        "from providers.localmachine.etcd_process import EtcdSupervisor, EtcdProcessOptions\n"
        "async def main():\n"
        "    member = await EtcdSupervisor(sys.argv[1]).bootstrap('orphan')\n"
        "    print(json.dumps([member.process.pid, member.process.start_time]), flush=True)\n"
        "    await asyncio.Event().wait()\n"
        "asyncio.run(main())\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    etcd: ProcessIdentity | None = None
    parent = subprocess.Popen(  # noqa: ASYNC220 - a plain child we SIGKILL; asyncio adds nothing here
        [sys.executable, "-c", script, str(tmp_path / "etcd")],
        stdout=subprocess.PIPE,
        env=environment,
        start_new_session=True,
    )
    try:
        assert parent.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(parent.stdout.readline), 60)
        pid, start_time = json.loads(line)
        etcd = ProcessIdentity(pid, start_time)
        assert etcd.alive()
        parent.send_signal(signal.SIGKILL)  # a crash: no finally, no atexit
        await asyncio.to_thread(parent.wait)

        async def gone() -> bool:
            return not etcd.alive()

        await eventually(gone, timeout=10, message="etcd killed by the kernel after its parent died")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
        if etcd is not None and etcd.alive():
            etcd.signal(signal.SIGKILL)  # the safety net failed: do not leak the orphan


async def test_a_recycled_pid_is_not_taken_for_our_member(etcd_supervisor: EtcdSupervisor) -> None:
    """A state file whose pid now belongs to another process (here: the test runner) means "dead"."""
    member = await etcd_supervisor.bootstrap("m0")
    await etcd_supervisor.stop("m0")
    me = ProcessIdentity.of(os.getpid())
    assert me is not None
    record = json.loads(member.state_file.read_text())
    record.update(pid=me.pid, startTime=me.start_time + 1)  # same pid, a different process
    member.state_file.write_text(json.dumps(record))

    stale = etcd_supervisor.get("m0")
    assert stale is not None and stale.process is None and not stale.running
    assert not await etcd_supervisor.kill("m0")  # and above all: no SIGKILL for the test runner
    restarted = await etcd_supervisor.start("m0")
    assert restarted.running and restarted.pid != os.getpid()


class FrozenAfterAdd:
    """A real cluster whose member add lands, after which every running member is frozen
    (SIGSTOP): the new member cannot look the cluster up, and dies before it first serves."""

    def __init__(self, etcd: EtcdClient, supervisor: EtcdSupervisor) -> None:
        self.etcd, self.supervisor = etcd, supervisor

    async def add_learner(self, peer_urls: list[str]) -> MemberAddResult:
        added = await self.etcd.add_learner(peer_urls)
        for member in self.supervisor.members():
            if member.running:
                await self.supervisor.pause(member.name)
        return added

    async def member_list(self) -> list[Member]:
        return await self.etcd.member_list()

    async def remove(self, member_id: int) -> list[Member]:
        return await self.etcd.remove(member_id)


async def test_a_member_that_died_before_it_first_served_starts_with_the_membership_of_now(
    tmp_path: Path,
) -> None:
    """A learner whose first start failed, in a cluster that lost a member since its add, starts
    with ``--initial-cluster`` rebuilt from the member list of now: the one recorded at its add
    names a member etcd no longer has, which etcd refuses at a first start."""
    # A short start timeout: the first start of m2 waits on peers that are frozen.
    etcd_supervisor = EtcdSupervisor(tmp_path / "etcd", etcd_options(start_timeout=5.0))
    try:
        await _died_before_it_first_served(etcd_supervisor)
    finally:
        await etcd_supervisor.stop_all()


async def _died_before_it_first_served(etcd_supervisor: EtcdSupervisor) -> None:
    first = await etcd_supervisor.bootstrap("m0")
    async with EtcdClient([first.client_url]) as etcd:
        m1 = await etcd_supervisor.join("m1", etcd)
        await promote_when_in_sync(etcd, m1.member_id or 0)

        async def m2_failed() -> EtcdProcessError | None:
            try:
                await etcd_supervisor.join("m2", FrozenAfterAdd(etcd, etcd_supervisor))
            except UnhealthyCluster:  # within 5 s of the promotion: nothing added, nothing frozen
                return None
            except EtcdProcessError as err:
                return err
            raise AssertionError("m2 served while its peers were frozen")

        await eventually(m2_failed, timeout=20, message="m2 added, then its first start failed")
        for name in ("m0", "m1"):
            assert await etcd_supervisor.resume(name)

        async def m1_removed() -> bool:
            try:
                await etcd.remove(m1.member_id or 0)
            except UnhealthyCluster:
                return False
            return True

        await eventually(m1_removed, timeout=20, message="m1 removed")
        with pytest.raises(EtcdProcessError, match="member count is unequal"):
            await etcd_supervisor.start("m2")  # the command line recorded at the add
        m2 = await etcd_supervisor.start("m2", etcd)
        assert m2.running
        listed = {m.name: m.is_learner for m in await etcd.member_list()}
        assert listed == {"m0": False, "m2": True}, listed
