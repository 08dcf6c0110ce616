"""The demo report's figures come from the records: the quorum monitor's, the observer's, the writer's."""

from __future__ import annotations

from pathlib import Path

from demo.monitor import QuorumSample
from demo.observer import MachineView, Sample
from demo.report import build_report, plot_timeline
from demo.tour import StepRecord
from demo.writer import Verification, WriterStats


def sample(at: float, voters: int, healthy: int, learners: int = 0, machines: int = 3) -> Sample:
    views = tuple(MachineView(f"m{i}", "Running", False, "zone-a", None) for i in range(machines))
    return Sample(at, views, voters, learners, healthy, healthy >= voters // 2 + 1, int(at * 10), desired=3)


def quorum(at: float, healthy: int, voters: int = 3) -> QuorumSample:
    return QuorumSample(at, voters, 0, healthy, "m0", healthy >= voters // 2 + 1, ("m0", "m1", "m2"))


STEP = StepRecord("bootstrap", "bootstrap to 3 voters", started=0.0, finished=2.0, ok=True, detail="3 voters")
SAMPLES = [
    sample(0.0, 1, 1, machines=1),
    sample(1.0, 1, 1, learners=1, machines=2),
    sample(2.0, 3, 2, machines=4),
]


def report_of(quorum_samples: list[QuorumSample], lost: list[str]) -> dict[str, object]:
    return build_report(
        samples=SAMPLES,
        quorum_samples=quorum_samples,
        steps=[STEP],
        stats=WriterStats(acknowledged={"/k/1": 5, "/k/2": 6}),
        verification=Verification(acknowledged=2, lost=lost),
        started=0.0,
        desired={"replicas": 3},
        files={},
    )


def test_the_report_takes_every_figure_from_the_records(tmp_path: Path) -> None:
    report = report_of([quorum(0.0, 3), quorum(0.1, 3)], lost=[])
    assert report["ok"] is True
    assert (report["peak_voters"], report["peak_learners"], report["peak_machines"]) == (3, 1, 4)
    assert report["lowest_quorum_margin"] == 0
    assert report["writes"] == {"acknowledged": 2, "unknown": 0, "refused": 0, "lost": 0, "lost_keys": []}
    assert report["steps"][0]["duration"] == 2.0  # type: ignore[index]
    assert len(report["quorum_timeline"]) == 2  # type: ignore[arg-type]
    picture = plot_timeline(report, tmp_path / "timeline.png")
    assert picture.read_bytes().startswith(b"\x89PNG") and picture.stat().st_size > 10_000


def test_a_lost_write_or_a_quorum_loss_fails_the_run() -> None:
    assert report_of([quorum(0.0, 3)], lost=["/k/2"])["ok"] is False
    outage = [quorum(0.0, 3), quorum(1.0, 1), quorum(4.0, 1), quorum(4.1, 3)]
    lossy = report_of(outage, lost=[])
    assert lossy["ok"] is False and lossy["quorum_losses"] == [(1.0, 4.1)]
    election = [quorum(0.0, 3), quorum(1.0, 1), quorum(2.0, 3)]
    assert report_of(election, lost=[])["quorum_losses"] == []
