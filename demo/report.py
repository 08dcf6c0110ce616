"""The demo's report: ``demo-report.json`` with every figure, and ``demo-timeline.png``.

Everything here is computed from the quorum monitor's record, the observer's samples and the
writer's records, so the report says what was measured, not what the steps believe happened.
Quorum losses are the monitor's (:func:`demo.monitor.quorum_losses`: a stretch without a
healthy quorum long enough not to be a leader election); ``quorum_timeline`` is its whole record.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from api.quorum import quorum
from demo.monitor import QuorumSample, quorum_losses
from demo.observer import Sample
from demo.tour import StepRecord
from demo.writer import Verification, WriterStats

PHASES = ("Provisioning", "Provisioned", "Running", "Deleting", "Failed")


def build_report(
    *,
    samples: Sequence[Sample],
    quorum_samples: Sequence[QuorumSample],
    steps: Sequence[StepRecord],
    stats: WriterStats,
    verification: Verification | None,
    started: float,
    desired: dict[str, int],
    files: dict[str, str],
) -> dict[str, Any]:
    """Every figure of the run as one JSON-ready dict (see the module docstring)."""
    live = [s for s in samples if s.voters > 0]
    losses = [
        (quorum_samples[start].at, quorum_samples[min(end, len(quorum_samples) - 1)].at)
        for start, end in quorum_losses(quorum_samples)
    ]
    passed = all(step.ok for step in steps) and verification is not None and not verification.lost
    return {
        "ok": passed and not losses,
        "steps": [
            {
                **asdict(step),
                "started": step.started - started,
                "finished": None if step.finished is None else step.finished - started,
                "duration": step.duration,
            }
            for step in steps
        ],
        "peak_voters": max((s.voters for s in samples), default=0),
        "peak_learners": max((s.learners for s in samples), default=0),
        "peak_machines": max((len(s.machines) for s in samples), default=0),
        "lowest_quorum_margin": min((s.quorum_margin for s in live), default=None),
        "quorum_losses": losses,
        "writes": {
            "acknowledged": len(stats.acknowledged),
            "unknown": stats.unknown,
            "refused": stats.refused,
            "lost": None if verification is None else len(verification.lost),
            "lost_keys": [] if verification is None else verification.lost[:20],
        },
        "desired": desired,
        "timeline": [
            {
                "at": round(s.at, 3),
                "voters": s.voters,
                "learners": s.learners,
                "healthy_voters": s.healthy_voters,
                "has_quorum": s.has_quorum,
                "machines": len(s.machines),
                "phases": dict(s.phases()),
                "writes_acknowledged": s.writes_acknowledged,
                "desired": s.desired,
            }
            for s in samples
        ],
        "quorum_timeline": [asdict(sample) for sample in quorum_samples],
        "files": files,
    }


def write_json(report: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(report, indent=1) + "\n")
    return path


def plot_timeline(report: dict[str, Any], path: Path) -> Path:
    """The picture a person looks at to believe "quorum was never lost" (see the README)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timeline = report["timeline"]
    at = [point["at"] for point in timeline]
    figure, (members, machines, writes) = plt.subplots(
        3, 1, figsize=(13, 8), sharex=True, gridspec_kw={"height_ratios": [3, 2, 1.4]}
    )
    members.step(at, [p["voters"] for p in timeline], where="post", label="voters", color="tab:blue", lw=2)
    members.step(at, [p["healthy_voters"] for p in timeline], where="post", label="healthy voters",
                 color="tab:green", lw=1.2, ls="--")  # fmt: skip
    members.step(
        at, [p["learners"] for p in timeline], where="post", label="learners", color="tab:orange", lw=2
    )
    needed = [quorum(p["voters"]) if p["voters"] else 0 for p in timeline]
    members.step(at, needed, where="post", label="quorum needed", color="tab:red", lw=1, ls=":")
    members.set_ylabel("etcd members")
    members.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8)
    members.set_title(
        f"quorum losses: {len(report['quorum_losses'])}   lowest quorum margin: "
        f"{report['lowest_quorum_margin']}   writes acknowledged: {report['writes']['acknowledged']}, "
        f"lost: {report['writes']['lost']}",
        pad=24,
    )
    for phase in PHASES:
        counts = [p["phases"].get(phase, 0) for p in timeline]
        if any(counts):
            machines.step(at, counts, where="post", label=phase, lw=1.6)
    machines.step(
        at, [p["machines"] for p in timeline], where="post", label="all Machines", color="black", lw=1
    )
    machines.set_ylabel("Machines")
    machines.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8)
    rate_at, rate = _rate(at, [p["writes_acknowledged"] for p in timeline], window=1.0)
    writes.plot(rate_at, rate, color="tab:purple", lw=1)
    writes.set_ylabel("writes/s")
    writes.set_xlabel("seconds since the demo started")
    for axis in (members, machines, writes):
        axis.grid(alpha=0.3)
        for index, step in enumerate(report["steps"]):
            end = step["finished"] if step["finished"] is not None else (at[-1] if at else 0)
            axis.axvspan(step["started"], end, color="grey", alpha=0.08 if index % 2 else 0.16, lw=0)
    for index, step in enumerate(report["steps"]):
        # Alternate heights, so a step of a fraction of a second does not hide its neighbour's name.
        members.annotate(step["name"], (step["started"], 1.0), xycoords=("data", "axes fraction"),
                         xytext=(2, 2 + 10 * (index % 2)), textcoords="offset points", fontsize=8,
                         va="bottom")  # fmt: skip
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _rate(at: list[float], counts: list[int], *, window: float) -> tuple[list[float], list[float]]:
    """Acknowledged writes per second over a sliding ``window`` at each sample time."""
    rates: list[float] = []
    start = 0
    for index, now in enumerate(at):
        while at[start] < now - window:
            start += 1
        span = now - at[start]
        rates.append((counts[index] - counts[start]) / span if span > 0 else 0.0)
    return at, rates
