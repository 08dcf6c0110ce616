"""The chaos campaign's short version, run as a user runs it: ``python -m bench.chaos`` as a subprocess.

Two seeded runs at once, as the full campaign in ``docs/reliability.md`` runs them (``--jobs 2``):
seeds 18 and 37, whose schedules found deadlocks in the campaign (a user's replacement unable to
join while a member was dead; a Machine remediated for a NotReady Node, held by the hook on its
healthy voter, while two members died). Their 60 s schedules also scale, roll out, kill, pause
and cut off members, kill the leading ``cpo run``, switch ``maxSurge`` to 0 (and roll out under
it, where the operator removes a marked Machine's healthy voter before its replacement votes),
delete a Machine and take its etcd-quorum hook off by hand (its member left for the operator to
remove), and delete the ControlPlane to adopt its running Machines again through an Inactive one
made Active. Each run is a fresh world with two ``cpo run`` replicas and real etcd members.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]

REPO = Path(__file__).resolve().parents[2]
SEEDS = (18, 37)
DURATION = 60
TIMEOUT = 420.0
"""Seconds for the whole bench: two runs at once, each about 20 s of start-up, the schedule, up
to 120 s of convergence and the read-back."""


async def test_short_chaos_campaign_keeps_quorum_and_every_write(tmp_path: Path) -> None:
    results_path = tmp_path / "runs.json"
    evidence = tmp_path / "evidence"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.chaos", "--seeds", ",".join(map(str, SEEDS)),
        "--duration", str(DURATION), "--jobs", str(len(SEEDS)), "--out", str(evidence),
        "--json", str(results_path),
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        printed_bytes, _ = await asyncio.wait_for(process.communicate(), TIMEOUT)
    except TimeoutError:
        os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
        raise
    printed = printed_bytes.decode()
    assert results_path.exists(), printed
    results = json.loads(results_path.read_text())
    assert [r["seed"] for r in results] == list(SEEDS), printed
    for run in results:
        where = f"seed {run['seed']} (evidence under {evidence}/seed-{run['seed']}):\n{printed}"
        assert run["error"] is None, where
        assert run["violations"] == [], where
        assert run["quorum_losses"] == 0, where
        assert run["lost_writes"] == 0, where
        assert run["converged"], where
        assert run["acknowledged_writes"] > 100, where
        assert run["peak_voters"] >= 3, where
        acted = [a for a in run["applied"] if not a["detail"].startswith(("skipped", "not applied"))]
        assert len(acted) >= 3, where
    assert sum(sum(run["faults"].values()) for run in results) >= len(SEEDS), printed
    assert "| quorum losses" in printed and "| lost acknowledged writes" in printed
    assert process.returncode == 0, printed
    assert not evidence.exists(), "a passing campaign keeps no evidence"
