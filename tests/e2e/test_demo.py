"""``cpo demo --fast`` run as a user runs it: a subprocess, judged by its report and what it leaves.

The assertions read the records in the JSON report, not the demo's verdicts: the quorum monitor's
timeline (quorum never lost: no stretch without a healthy quorum longer than a leader election),
the writer's read-back (no acknowledged write lost), and the observer's timeline (voters and Machines
stayed within desired + 1 (desired being the larger of the ControlPlane's replicas at that moment
and at the start of the step, since a scale-in removes members one at a time), and no etcd or
``cpo`` process of the demo is left afterwards.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from demo.monitor import QuorumSample, quorum_losses

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]

REPO = Path(__file__).resolve().parents[2]


def processes_mentioning(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().replace(b"\x00", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in argv:
            found.append(argv)
    return found


def test_the_demo_keeps_quorum_and_every_write_through_the_whole_tour(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "cli", "demo", "--fast", "--plain", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    report_path = out / "demo-report.json"
    assert report_path.is_file(), (
        f"no report; exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    report = json.loads(report_path.read_text())
    assert done.returncode == 0, f"{report.get('failure')}\n{done.stdout[-3000:]}"
    assert [step["name"] for step in report["steps"]] == [
        "bootstrap", "even", "scale-out", "kill", "rollout", "scale-in",
    ]  # fmt: skip
    assert all(step["ok"] for step in report["steps"])
    assert "must be an odd number" in report["steps"][1]["detail"]

    quorum = [
        QuorumSample(**{**point, "machines": tuple(point["machines"])}) for point in report["quorum_timeline"]
    ]
    assert len(quorum) > 100
    assert quorum_losses(quorum) == []
    assert max(point.learners for point in quorum) <= 1
    timeline = report["timeline"]
    assert report["writes"]["acknowledged"] > 100 and report["writes"]["lost"] == 0
    step_starts = [(step["started"], step["name"]) for step in report["steps"]]
    desired_at_step_start: dict[str, int] = {}
    previous_desired: int | None = None
    for point in timeline:
        if point["desired"] is None:
            continue
        current = [name for started, name in step_starts if started <= point["at"]]
        step = current[-1] if current else "bootstrap"
        # The count before the step's own change: its first sample may already show the new one.
        desired_at_step_start.setdefault(
            step, point["desired"] if previous_desired is None else previous_desired
        )
        previous_desired = point["desired"]
        allowed = max(point["desired"], desired_at_step_start[step]) + 1
        assert point["voters"] <= allowed, point
        assert point["machines"] <= allowed, point

    assert (out / "demo-timeline.png").read_bytes().startswith(b"\x89PNG")
    assert processes_mentioning(report["files"]["world"]) == []
