"""``cpo demo`` from start to end: the world, the writer, the observer, the tour, the report.

:func:`run_demo` is the whole command; :class:`DemoOptions` holds every knob, resolved in
:meth:`DemoOptions.with_defaults`. The exit code is 0 when every step finished, quorum was never
lost and no acknowledged write was lost; 1 otherwise (the report says which).

Ctrl-C (SIGINT), SIGTERM and SIGHUP stop it the same way at any moment (:class:`~demo.lifetime.StopSignals`):
the step under way is cancelled, the report is written with the steps so far (the interrupted one
failed, with the signal's name; the writes are not read back), every process is stopped in
reverse order and the etcd members are killed; the exit code is then 128 + the signal's number
(130, 143, 129). With ``--keep`` the demo waits for one of them after its report. Before it starts
its world it ends the processes of any world whose owner was killed outright
(:func:`~demo.lifetime.end_abandoned_worlds`) and says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from demo.lifetime import Stopped, StopSignals, end_abandoned_worlds
from demo.observer import Observer
from demo.progress import Progress
from demo.report import build_report, plot_timeline, write_json
from demo.tour import STEP_NAMES, StepFailed, Tour
from demo.world import DemoWorld, WorldError
from demo.writer import EtcdWriter, Verification

DEFAULT_REPLICAS = 3
DEFAULT_OUT = Path("demo-out")
NAMESPACE = "demo"


@dataclass(frozen=True)
class DemoOptions:
    """How to run the demo; ``None`` means the default named per field."""

    replicas: int | None = None
    """Odd replica count of the demo's ControlPlane. Defaults to 3."""
    steps: tuple[str, ...] | None = None
    """Steps to run, by name (see :mod:`demo.tour`). Defaults to all, in tour order."""
    out: Path | None = None
    """Folder for the report, the picture and the logs. Defaults to ``./demo-out``."""
    keep: bool | None = None
    """Leave everything running at the end and print how to reach it. Defaults to False."""
    fast: bool | None = None
    """Short health-check timeouts (seconds, not minutes), for CI. Defaults to False."""
    realistic: bool | None = None
    """Run the provider in its realistic mode (``cpo localmachine --realistic``): the ControlPlane
    names the etcd client Secret, and the demo's own etcd clients use it too. Defaults to False."""
    live: bool | None = None
    """A live terminal panel. Defaults to True when stdout is a terminal."""

    def with_defaults(self) -> ResolvedDemoOptions:
        replicas = DEFAULT_REPLICAS if self.replicas is None else self.replicas
        if replicas < 1 or replicas % 2 == 0:
            raise ValueError(f"--replicas {replicas}: etcd needs an odd number of voters (1, 3, 5, 7)")
        steps = STEP_NAMES if self.steps is None else self.steps
        unknown = [name for name in steps if name not in STEP_NAMES]
        if unknown:
            raise ValueError(f"unknown step(s) {', '.join(unknown)}: choose from {', '.join(STEP_NAMES)}")
        if "bootstrap" not in steps:
            raise ValueError("every run starts with the 'bootstrap' step (nothing exists before it)")
        return ResolvedDemoOptions(
            replicas=replicas,
            steps=tuple(steps),
            out=(self.out or DEFAULT_OUT).absolute(),
            keep=bool(self.keep),
            fast=bool(self.fast),
            realistic=bool(self.realistic),
            live=self.live,
        )


@dataclass(frozen=True)
class ResolvedDemoOptions:
    replicas: int
    steps: tuple[str, ...]
    out: Path
    keep: bool
    fast: bool
    realistic: bool
    live: bool | None


async def run_demo(options: DemoOptions) -> int:
    """Run the demo (see the package docstring); returns the exit code."""
    resolved = options.with_defaults()
    resolved.out.mkdir(parents=True, exist_ok=True)
    with StopSignals() as signals, Progress(live=resolved.live) as progress:
        for line in await end_abandoned_worlds():
            progress.say(line)
        world = DemoWorld(
            Path(tempfile.mkdtemp(prefix="cpo-demo-")), namespace=NAMESPACE, realistic=resolved.realistic
        )
        unpictured: dict[str, object] | None = None
        try:
            await signals.interruptible(world.start(progress.say))
            report = await _tour(world, resolved, progress, signals)
            code = 0 if report["ok"] else 1
            if signals.received is None:
                _picture(report, resolved.out)  # before --keep's wait, so it is there meanwhile
            else:
                unpictured = report  # a stop comes first: drawn once nothing runs any more
            if resolved.keep:
                await signals.interruptible(asyncio.Event().wait())
            return signals.exit_code or code
        except WorldError as err:
            progress.say(f"the demo could not start: {err}")
            return 1
        except Stopped:
            return signals.exit_code or 1
        finally:
            # Not interruptible: a stop signal now is only recorded; the steps have time limits.
            progress.say("stopping every process the demo started")
            await asyncio.shield(world.stop())
            _keep_logs(world, resolved.out)
            shutil.rmtree(world.directory, ignore_errors=True)
            if unpictured is not None:
                _picture(unpictured, resolved.out)
            if signals.received is not None:
                progress.say(f"stopped by {signals.received.name}; every process it started has ended")


async def _tour(
    world: DemoWorld, options: ResolvedDemoOptions, progress: Progress, signals: StopSignals
) -> dict[str, object]:
    """The tour, the writer's read-back and the report (written, and summed up on stdout)."""
    from runtime.client import Client

    async with await Client.from_kubeconfig(str(world.kubeconfig_path)) as client:
        observer = Observer(client, NAMESPACE, tls_secret=world.etcd_client_secret)
        writer = EtcdWriter(observer.endpoints, client_options=lambda: observer.client_options)
        observer.writes_acknowledged = lambda: len(writer.stats.acknowledged)
        tour = Tour(
            world.kubeconfig_path,
            NAMESPACE,
            observer,
            replicas=options.replicas,
            fast=options.fast,
            tls_secret=world.etcd_client_secret,
        )
        failure: str | None = None
        verification: Verification | None = None
        async with observer, writer:
            refresher = asyncio.create_task(_refresh(progress, tour, observer))
            try:
                await signals.interruptible(tour.run(options.steps))
            except StepFailed as err:
                failure = str(err)
            except Stopped as stop:
                failure = f"{stop}; the writes were not read back"
                for record in tour.records:
                    if not record.ok and not record.detail:
                        record.detail = str(stop)
            finally:
                refresher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await refresher
            await writer.stop()
            endpoints = observer.endpoints()
            if endpoints and signals.received is None:
                with contextlib.suppress(Exception):
                    verification = await writer.verify(endpoints)
        progress.update(tour.records, observer.latest)
    files = {
        "report": str(options.out / "demo-report.json"),
        "timeline": str(options.out / "demo-timeline.png"),
        "logs": str(options.out / "logs"),
        "world": str(world.directory),
    }
    report = build_report(
        samples=observer.samples,
        quorum_samples=observer.monitor.samples if observer.monitor is not None else [],
        steps=tour.records,
        stats=writer.stats,
        verification=verification,
        started=observer.started,
        desired={"replicas": options.replicas, "peak": options.replicas + 2},
        files=files,
    )
    if failure:
        report["failure"] = failure
    write_json(report, options.out / "demo-report.json")
    with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) must not stop the teardown
        print(summary(report, world, options, stopping=signals.received is not None), flush=True)
    return report


async def _refresh(progress: Progress, tour: Tour, observer: Observer) -> None:
    while True:
        progress.update(tour.records, observer.latest)
        await asyncio.sleep(0.25)


def summary(
    report: dict[str, object], world: DemoWorld, options: ResolvedDemoOptions, *, stopping: bool = False
) -> str:
    """The closing text: each step's duration, the peaks, the writes, where the files are; with
    ``--keep`` (unless ``stopping`` already), how to reach the world and how to stop it."""
    lines = ["", "cpo demo report", "==============="]
    for step in report["steps"]:  # type: ignore[attr-defined]
        took = f"{step['duration']:.1f}s" if step["duration"] is not None else "-"
        lines.append(f"  {'ok ' if step['ok'] else 'FAIL'} {step['title']:<45} {took:>8}")
    writes = report["writes"]
    lines += [
        f"  peak voters {report['peak_voters']}, peak learners {report['peak_learners']}, "
        f"peak Machines {report['peak_machines']}, lowest quorum margin {report['lowest_quorum_margin']}",
        f"  quorum lost: {len(report['quorum_losses'])} time(s)",  # type: ignore[arg-type]
        f"  writes acknowledged {writes['acknowledged']}, lost {writes['lost']}",  # type: ignore[index]
        f"  report   {options.out / 'demo-report.json'}",
        f"  timeline {options.out / 'demo-timeline.png'}",
        f"  logs     {options.out / 'logs'}",
    ]
    if report.get("failure"):
        lines.append(f"  FAILED: {report['failure']}")
    if options.keep and not stopping:
        lines += [
            "",
            "Everything keeps running while this command does. Try:",
            f"  export KUBECONFIG={world.kubeconfig_path}",
            f"  kubectl -n {NAMESPACE} get controlplane,machines,machinehealthchecks",
            f"  kubectl -n {NAMESPACE} describe controlplane demo",
            "  kubectl get nodes",
            f"Stop it with Ctrl-C here, `kill {os.getpid()}` (SIGTERM) or by closing this terminal:",
            "every process it started ends, etcd members included.",
        ]
    return "\n".join(lines)


def _picture(report: dict[str, object], out: Path) -> None:
    plot_timeline(report, out / "demo-timeline.png")


def _keep_logs(world: DemoWorld, out: Path) -> None:
    target = out / "logs"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(world.directory / "logs", target, dirs_exist_ok=True)
