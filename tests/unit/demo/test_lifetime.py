"""How a demo world's processes end: stop signals, the parent-death signal, abandoned worlds found in /proc.

Real processes and real signals: ``sleep`` stands in for an etcd member, a short Python script for
an owner killed outright.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from demo.lifetime import (
    OWNER_ENV,
    STOP_SIGNALS,
    WORLD_ENV,
    Stopped,
    StopSignals,
    end_abandoned_worlds,
    world_environment,
    world_processes,
)
from providers.localmachine.etcd_process import ProcessIdentity
from tests.support.poll import eventually, wait_until

DEADLINE = 10.0

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def wait_until_gone(process: ProcessIdentity) -> bool:
    try:
        wait_until(lambda: not process.alive(), timeout=DEADLINE, message=f"pid {process.pid} gone")
    except AssertionError:
        return False
    return True


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


def start_sleeper(
    sleepers: list[subprocess.Popen[bytes]], environment: dict[str, str]
) -> tuple[subprocess.Popen[bytes], ProcessIdentity]:
    process = subprocess.Popen(["sleep", "60"], env={**os.environ, **environment})
    sleepers.append(process)
    identity = ProcessIdentity.of(process.pid)
    assert identity is not None
    return process, identity


def a_process_that_ended() -> ProcessIdentity:
    """Reaped: its pid may be recycled, but never with its start time."""
    process = subprocess.Popen(["sleep", "0"])
    identity = ProcessIdentity.of(process.pid) or ProcessIdentity(process.pid, 0)
    process.wait()
    return identity


# ---------------------------------------------------------------------------------------------- signals


@pytest.fixture
def stop_signals_by_default() -> Iterator[None]:
    """The stop signals at their default dispositions, as in a process started from a terminal.

    A shell without job control starts a background command with SIGINT ignored, and StopSignals
    rightly keeps an inherited ignore (the test after these pins that): the scenarios here are about
    a process that does get the signal, whoever launched the test run."""
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
    yield
    for signum, handler in previous.items():
        signal.signal(signum, handler)  # type: ignore[arg-type]


@pytest.mark.usefixtures("stop_signals_by_default")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
async def test_each_stop_signal_cancels_the_work_under_way_and_gives_the_shell_exit_code(
    signum: signal.Signals,
) -> None:
    with StopSignals() as signals:
        work = asyncio.Event()

        async def wait_and_signal() -> None:
            os.kill(os.getpid(), signum)
            await work.wait()

        with pytest.raises(Stopped) as stopped:
            # A deadline, so that a signal that never arrives fails the test instead of hanging it.
            await asyncio.wait_for(signals.interruptible(wait_and_signal()), DEADLINE)
    assert stopped.value.signum == signum
    assert signals.exit_code == 128 + signum
    assert str(stopped.value) == f"stopped by {signum.name}"


@pytest.mark.usefixtures("stop_signals_by_default")
async def test_a_signal_outside_interruptible_work_is_kept_for_the_next_and_later_ones_are_ignored() -> None:
    with StopSignals() as signals:
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        # The loop runs signal handlers from its self-pipe; eventually's waits are not
        # interruptible work, so the signal is only recorded there.
        await eventually(lambda: signals.received is not None, timeout=DEADLINE, message="SIGTERM recorded")
        with pytest.raises(Stopped):
            await signals.interruptible(asyncio.sleep(30))  # allow-sleep: the work the signal interrupts
    assert signals.received == signal.SIGTERM
    assert signals.exit_code == 143


async def test_an_inherited_ignored_signal_stays_ignored() -> None:
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with StopSignals() as signals:
            os.kill(os.getpid(), signal.SIGHUP)
            # The work the ignored signal must not stop.
            work = asyncio.sleep(0.05, result="done")  # allow-sleep: the work under way
            assert await signals.interruptible(work) == "done"
        assert signals.received is None
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)


# ---------------------------------------------------------------------------------------------- children


def test_a_child_started_with_die_with_parent_dies_when_its_parent_is_killed_outright(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    owner_script = textwrap.dedent(
        f"""
        import subprocess, sys, time
        from pathlib import Path
        from demo.lifetime import die_with_parent
        child = subprocess.Popen(["sleep", "60"], preexec_fn=die_with_parent(), start_new_session=True)
        Path({str(pid_file)!r}).write_text(str(child.pid))
        time.sleep(60)  # allow-sleep: the owner lives until the test SIGKILLs it
        """
    )
    owner = subprocess.Popen([sys.executable, "-c", owner_script])
    try:

        def child_started() -> bool:
            assert owner.poll() is None, "the owner exited before starting its child"
            return pid_file.is_file() and bool(pid_file.read_text())

        wait_until(child_started, timeout=DEADLINE, message="the owner started its child")
        child = ProcessIdentity.of(int(pid_file.read_text()))
        assert child is not None and child.alive()
    finally:
        owner.kill()
        owner.wait()
    assert wait_until_gone(child), "the child outlived its SIGKILLed parent"


# ---------------------------------------------------------------------------------------------- /proc


def test_the_processes_of_a_world_are_found_by_the_marks_in_their_environment(
    tmp_path: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    world = tmp_path / "world"
    _, member = start_sleeper(sleepers, world_environment(world))
    start_sleeper(sleepers, world_environment(tmp_path / "another"))
    assert world_processes(world) == [member]


async def test_the_next_owner_ends_a_world_whose_owner_is_gone_and_says_what_it_ended(
    tmp_path: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    abandoned, alive = tmp_path / "abandoned", tmp_path / "alive"
    (abandoned / "machines" / "cluster").mkdir(parents=True)
    (abandoned / "logs").mkdir()
    gone_owner = a_process_that_ended()
    _, left_behind = start_sleeper(
        sleepers, {WORLD_ENV: str(abandoned), OWNER_ENV: f"{gone_owner.pid}:{gone_owner.start_time}"}
    )
    _, kept = start_sleeper(sleepers, world_environment(alive))

    said = await end_abandoned_worlds(under=tmp_path)

    assert said == [
        f"ended 1 sleep left running by the world in {abandoned}, whose owner (pid {gone_owner.pid}) is gone"
    ]
    assert not left_behind.alive()
    assert kept.alive(), "a world whose owner lives is not touched"
    assert not (abandoned / "machines").exists() and (abandoned / "logs").is_dir()
    assert await end_abandoned_worlds(under=tmp_path) == []
