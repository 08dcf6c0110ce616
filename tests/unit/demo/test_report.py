"""The demo report's figures come from the samples: quorum losses, peaks, margin, the picture."""

from __future__ import annotations

from pathlib import Path

from demo.observer import MachineView, Sample
from demo.report import build_report, plot_timeline, quorum_losses
from demo.tour import StepRecord
from demo.writer import Verification, WriterStats


def sample(at: float, voters: int, healthy: int, learners: int = 0, machines: int = 3) -> Sample:
    views = tuple(MachineView(f"m{i}", "Running", False, "zone-a", None) for i in range(machines))
    return Sample(at, views, voters, learners, healthy, True, int(at * 10), desired=3)


def test_a_stretch_without_quorum_counts_only_when_it_lasts_a_second() -> None:
    blip = [sample(0.0, 3, 3), sample(0.1, 3, 1), sample(0.2, 3, 3)]
    assert quorum_losses(blip) == []
    outage = [sample(0.0, 3, 3), sample(0.5, 3, 1), sample(1.0, 3, 1), sample(1.6, 3, 2), sample(2.0, 3, 3)]
    assert quorum_losses(outage) == [(0.5, 1.6)]
    never_recovered = [sample(0.0, 3, 3), sample(1.0, 3, 0), sample(2.5, 3, 0)]
    assert quorum_losses(never_recovered) == [(1.0, 2.5)]


def test_before_the_first_quorum_there_is_nothing_to_lose() -> None:
    assert quorum_losses([sample(0.0, 0, 0), sample(5.0, 0, 0), sample(6.0, 1, 1)]) == []


def test_the_report_takes_every_figure_from_the_samples(tmp_path: Path) -> None:
    samples = [
        sample(0.0, 1, 1, machines=1),
        sample(1.0, 1, 1, learners=1, machines=2),
        sample(2.0, 3, 2, machines=4),
    ]
    step = StepRecord(
        "bootstrap", "bootstrap to 3 voters", started=0.0, finished=2.0, ok=True, detail="3 voters"
    )
    stats = WriterStats(acknowledged={"/k/1": 5, "/k/2": 6})
    report = build_report(
        samples=samples,
        steps=[step],
        stats=stats,
        verification=Verification(acknowledged=2, lost=[]),
        started=0.0,
        desired={"replicas": 3},
        files={},
    )
    assert report["ok"] is True
    assert (report["peak_voters"], report["peak_learners"], report["peak_machines"]) == (3, 1, 4)
    assert report["lowest_quorum_margin"] == 0
    assert report["writes"]["acknowledged"] == 2 and report["writes"]["lost"] == 0
    assert report["steps"][0]["duration"] == 2.0
    lossy = build_report(
        samples=samples, steps=[step], stats=stats, verification=Verification(2, ["/k/2"]),
        started=0.0, desired={}, files={},
    )  # fmt: skip
    assert lossy["ok"] is False and lossy["writes"]["lost"] == 1
    picture = plot_timeline(report, tmp_path / "timeline.png")
    assert picture.read_bytes().startswith(b"\x89PNG") and picture.stat().st_size > 10_000
