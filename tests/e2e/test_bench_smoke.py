"""bench.runtime and bench.fleet still run end to end (tiny sizes): their figures are only worth
something if they work."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


async def test_bench_runtime_measures_every_phase(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.runtime", "--n", "40", "--rate", "50", "--rate-seconds", "1",
        "--flood-count", "80", "--drain-count", "80", "--json", str(out),
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    printed, _ = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode == 0, printed.decode()
    [figures] = json.loads(out.read_text())
    assert figures["synced_objects"] == 40
    for phase in (figures["flood"], *figures["rates"], figures["drain"]):
        # Caught up means the reconciler saw the last patch of every object the phase touched.
        assert phase["caught_up"], phase
        assert phase["reconciles"] >= 40
        assert phase["events_per_s"] > 0
    # The drain's 80 patches (two per object) were written while the controller was stopped:
    # at most one reconcile each, fewer when two for one object merge in the queue.
    assert figures["drain"]["reconciles"] <= 80
    assert 0 < figures["tracemalloc_per_obj"] < 64 * 1024
    assert "capacity (drain)" in printed.decode()


async def test_bench_fleet_measures_one_controlplane_end_to_end(tmp_path: Path) -> None:
    """bench.fleet at its smallest: one ControlPlane of one Machine, a short settled window, a rollout."""
    out = tmp_path / "fleet.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.fleet", "--controlplanes", "1", "--replicas", "1",
        "--settle-seconds", "3", "--quiet-seconds", "1", "--json", str(out),
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    printed, _ = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, printed.decode()
    [figures] = json.loads(out.read_text())
    assert figures["controlplanes"] == 1 and figures["replicas"] == 1
    assert figures["bootstrap_s"] > 0 and figures["rollout_s"] > 0
    assert figures["settle_window_s"] >= 3
    assert figures["rss_mib"] > 0
    # Every controller of `cpo run` reconciled the ControlPlane, its Machine or its health check.
    assert {"controlplane", "etcd-quorum-hook", "machinehealthcheck"} <= set(figures["reconcile_p50_ms"])
    # The provider's Node heartbeats reached the server's counters (10 s apart: at most a few).
    assert all(
        key.split("/")[0] in ("POST", "PUT", "PATCH", "APPLY", "DELETE")
        for key in figures["api_writes_by_resource"]
    )
    assert "| 1 |" in printed.decode()
