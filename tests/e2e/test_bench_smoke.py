"""bench.runtime still runs end to end (tiny sizes): its figures are only worth something if it works."""

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
