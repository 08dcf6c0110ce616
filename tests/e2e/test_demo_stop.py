"""``cpo demo`` leaves nothing running, however it is stopped: SIGTERM, SIGHUP, ``--keep`` ended by
SIGTERM, and SIGKILL (after which the next ``cpo demo`` ends the etcd members left behind).

Each demo runs as a user runs it, a subprocess, with its temporary folder (where its world lives)
under the test's own, so every process of its world is found by walking ``/proc``: a process whose
command line or environment names that folder (the ``cpo`` children, their etcd members, a
kubectl), whatever the demo printed. Only the ``bootstrap`` step runs, and each stop is sent while
that step is under way, once an etcd member runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.poll import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]

REPO = Path(__file__).resolve().parents[2]
GONE_WITHIN = 45.0
"""Seconds for every process of a stopped demo's world to be gone."""
START_WITHIN = 120.0
"""Seconds for a demo to start its world and its first etcd member on a busy machine."""


@dataclass(frozen=True)
class Found:
    pid: int
    argv: str

    @property
    def is_etcd(self) -> bool:
        return Path(self.argv.split(" ", 1)[0]).name == "etcd"


def processes_under(folder: Path) -> list[Found]:
    """Live processes (not zombies) whose command line or environment names ``folder``."""
    needle = str(folder).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (needle in argv or needle in environ):
            found.append(Found(int(entry.name), argv.replace(b"\0", b" ").decode(errors="replace").strip()))
    return found


def wait_for(what: str, condition: Callable[[], object], within: float, log: Path) -> None:
    try:
        wait_until(condition, timeout=within, message=what)
    except AssertionError as error:
        raise AssertionError(f"{error}; the demo printed:\n{log.read_text()[-3000:]}") from None


@dataclass
class Demo:
    """One ``cpo demo --fast --steps bootstrap`` whose temporary folder is ``tmp``."""

    tmp: Path
    out: Path
    log: Path
    process: subprocess.Popen[bytes]

    def printed(self) -> str:
        return self.log.read_text(errors="replace")

    def left(self) -> list[Found]:
        return processes_under(self.tmp)

    def members(self) -> list[Found]:
        """Its etcd members (not a passing ``etcd --version``)."""
        return [p for p in self.left() if p.is_etcd and f"--data-dir={self.tmp}" in p.argv]

    def wait_for_a_member(self) -> None:
        wait_for("an etcd member", self.members, START_WITHIN, self.log)

    def wait_for_nothing_left(self) -> None:
        """Everything of its world gone, and the demo itself gone too, within GONE_WITHIN."""
        wait_for("the demo's end", lambda: self.process.poll() is not None, GONE_WITHIN, self.log)
        wait_for("the end of every process of its world", lambda: not self.left(), GONE_WITHIN, self.log)


StartDemo = Callable[..., Demo]
"""``start_demo(name, *extra_flags)``: a demo whose folders are under the test's, by ``name``."""


@pytest.fixture
def start_demo(tmp_path: Path) -> Iterator[StartDemo]:
    demos: list[Demo] = []

    def start(name: str, *extra: str) -> Demo:
        tmp, out, log = tmp_path / name / "tmp", tmp_path / name / "out", tmp_path / name / "printed.log"
        tmp.mkdir(parents=True)
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [sys.executable, "-m", "cli", "demo", "--fast", "--plain", "--steps", "bootstrap",
                 "--out", str(out), *extra],
                cwd=REPO, env={**os.environ, "TMPDIR": str(tmp)},
                stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        demo = Demo(tmp, out, log, process)
        demos.append(demo)
        return demo

    yield start
    for demo in demos:  # a failed test leaves nothing running either
        if demo.process.poll() is None:
            demo.process.kill()
            demo.process.wait()
        for left in demo.left():
            os.kill(left.pid, signal.SIGKILL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=lambda signum: signum.name)
def test_a_stop_signal_ends_every_process_of_the_world_and_writes_the_report(
    start_demo: StartDemo, signum: signal.Signals
) -> None:
    demo: Demo = start_demo(signum.name)
    demo.wait_for_a_member()
    demo.process.send_signal(signum)
    demo.wait_for_nothing_left()

    assert demo.process.returncode == 128 + signum, demo.printed()
    report = json.loads((demo.out / "demo-report.json").read_text())
    assert report["failure"].startswith(f"stopped by {signum.name}"), report["failure"]
    assert [(step["name"], step["ok"]) for step in report["steps"]] == [("bootstrap", False)]
    assert f"stopped by {signum.name}; every process it started has ended" in demo.printed()


def test_after_sigkill_the_children_die_and_the_next_demo_ends_the_members_then_keep_stops_on_sigterm(
    start_demo: StartDemo,
) -> None:
    killed: Demo = start_demo("killed")
    killed.wait_for_a_member()
    killed.process.kill()
    killed.process.wait()
    wait_for(
        "the end of the killed demo's cpo children",
        lambda: not [p for p in killed.left() if not p.is_etcd],
        GONE_WITHIN,
        killed.log,
    )
    assert killed.members(), "the etcd members outlive their provider on purpose"

    kept: Demo = start_demo("kept", "--keep")
    wait_for("the next demo's cleaning", lambda: not killed.left(), GONE_WITHIN, kept.log)
    wait_for("the next demo's word on it", lambda: str(killed.tmp) in kept.printed(), GONE_WITHIN, kept.log)
    cleaned = next(line for line in kept.printed().splitlines() if str(killed.tmp) in line)
    assert "etcd left running by the world in" in cleaned and "is gone" in cleaned, cleaned

    wait_for(
        "the --keep demo's report",
        lambda: "Everything keeps running" in kept.printed(),
        START_WITHIN,
        kept.log,
    )
    assert kept.process.poll() is None, "--keep waits for a signal"
    assert f"`kill {kept.process.pid}` (SIGTERM)" in kept.printed()
    assert kept.members()
    kept.process.send_signal(signal.SIGTERM)
    kept.wait_for_nothing_left()
    assert kept.process.returncode == 143, kept.printed()
