"""The session-end leak check of ``tests/conftest.py`` fails a session that leaves an etcd running."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from providers.localmachine.etcd_process import ProcessIdentity

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

LEAKY_TEST = """
import os
from pathlib import Path

from providers.localmachine.etcd_process import EtcdProcessOptions, EtcdSupervisor


async def test_forgets_to_stop_its_member(tmp_path):
    # die_with_parent off: only the session-end check can stop this one.
    supervisor = EtcdSupervisor(tmp_path / "etcd", EtcdProcessOptions(die_with_parent=False))
    member = await supervisor.bootstrap("leaky")
    Path(os.environ["LEAK_RECORD"]).write_text(f"{member.process.pid} {member.process.start_time}")
"""


LEAKY_PROVIDER_TEST = """
import os
import subprocess
import sys
from pathlib import Path

from tests.support.localmachine import recorded_processes, track_state_dir

# A provider in another process starts a member (die_with_parent off) and goes away: only the
# state files say that this etcd belongs to the tests.
PROVIDER = '''
import asyncio, sys
from providers.localmachine.etcd_process import EtcdProcessOptions, EtcdSupervisor

async def main():
    await EtcdSupervisor(sys.argv[1], EtcdProcessOptions(die_with_parent=False)).bootstrap("leaky")

asyncio.run(main())
'''


def test_a_provider_process_leaves_its_member_behind(tmp_path):
    state_dir = track_state_dir(tmp_path / "machines")
    subprocess.run([sys.executable, "-c", PROVIDER, str(state_dir / "cluster")], check=True, timeout=60)
    (process,) = recorded_processes(state_dir)
    Path(os.environ["LEAK_RECORD"]).write_text(f"{process.pid} {process.start_time}")
"""


@pytest.mark.parametrize(
    "leaky_test",
    [LEAKY_TEST, LEAKY_PROVIDER_TEST],
    ids=["started-by-the-test-process", "started-by-a-provider-subprocess"],
)
async def test_a_session_that_leaves_an_etcd_running_fails_and_the_etcd_is_killed(
    tmp_path: Path, leaky_test: str
) -> None:
    session_dir = tmp_path / "session"
    session_dir.mkdir()
    (session_dir / "conftest.py").write_text(
        "from tests.conftest import pytest_sessionfinish  # noqa: F401\n"
    )
    (session_dir / "test_leaky.py").write_text(leaky_test)
    record = tmp_path / "leak-record"
    environment = {**os.environ, "PYTHONPATH": str(REPO), "LEAK_RECORD": str(record)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "asyncio_mode=auto", "."]
    done = await asyncio.to_thread(
        subprocess.run, command, cwd=session_dir, env=environment, capture_output=True, text=True, timeout=120
    )
    leaked: ProcessIdentity | None = None
    try:
        pid, start_time = record.read_text().split()
        leaked = ProcessIdentity(int(pid), int(start_time))
        assert "1 passed" in done.stdout, done.stdout + done.stderr
        assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
        assert f"outlived them (killed now): {pid}" in done.stdout
        assert not leaked.alive()
    finally:
        if leaked is not None and leaked.alive():
            leaked.signal(signal.SIGKILL)
