"""Live progress of the demo: a ``rich`` panel in a terminal, plain log lines otherwise (CI, a pipe).

Both show the same facts: the current step, the Machines with phase and etcd role, voters and
learners, acknowledged writes. The plain form prints a line at each step's start and end and a
status line every few seconds, so a log file reads as a story.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

from demo.observer import Sample
from demo.tour import StepRecord

PLAIN_STATUS_PERIOD = 5.0


class Progress:
    """Shows the run as it goes; :meth:`update` is cheap and may be called often."""

    def __init__(self, *, live: bool | None = None) -> None:
        self.live = sys.stdout.isatty() if live is None else live
        self._rich: Any = None
        self._last_plain = 0.0
        self._reported_steps: dict[str, bool] = {}
        self.message = "starting"

    def __enter__(self) -> Progress:
        if self.live:
            from rich.console import Console
            from rich.live import Live

            self._rich = Live(console=Console(), refresh_per_second=4, transient=False)
            self._rich.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._rich is not None:
            with contextlib.suppress(OSError):  # the terminal is gone (SIGHUP)
                self._rich.__exit__(None, None, None)
            self._rich = None

    def say(self, message: str) -> None:
        """A one-off message (start-up, shutdown); lost, not raised, when the terminal is gone (SIGHUP)."""
        self.message = message
        if self._rich is None:
            with contextlib.suppress(OSError):
                print(f"[demo] {message}", flush=True)

    def update(self, steps: list[StepRecord], sample: Sample | None) -> None:
        if self._rich is not None:
            self._rich.update(self._panel(steps, sample))
            return
        for step in steps:
            if step.name not in self._reported_steps:
                self._reported_steps[step.name] = False
                print(f"[demo] step {step.name}: {step.title} ...", flush=True)
            if step.finished is not None and not self._reported_steps[step.name]:
                self._reported_steps[step.name] = True
                verdict = "done" if step.ok else "FAILED"
                print(f"[demo] step {step.name} {verdict} in {step.duration:.1f}s: {step.detail}", flush=True)
        now = time.monotonic()
        if sample is not None and now - self._last_plain >= PLAIN_STATUS_PERIOD:
            self._last_plain = now
            print(f"[demo] {status_line(sample)}", flush=True)

    def _panel(self, steps: list[StepRecord], sample: Sample | None) -> Any:
        from rich.console import Group
        from rich.panel import Panel
        from rich.table import Table

        plan = Table.grid(padding=(0, 1))
        for step in steps:
            mark = "[green]✔[/]" if step.ok else ("[red]✘[/]" if step.finished else "[yellow]…[/]")
            took = f"{step.duration:.1f}s" if step.duration is not None else ""
            plan.add_row(mark, step.title, took)
        machines = Table("Machine", "domain", "phase", "etcd", box=None, header_style="bold")
        for machine in sample.machines if sample else ():
            phase = "Deleting" if machine.deleting else (machine.phase or "Pending")
            machines.add_row(machine.name, machine.failure_domain, phase, machine.etcd_role)
        status = status_line(sample) if sample else self.message
        return Panel(Group(plan, "", machines, "", status), title="cpo demo", border_style="blue")


def status_line(sample: Sample) -> str:
    phases = ", ".join(f"{count} {phase}" for phase, count in sorted(sample.phases().items()))
    return (
        f"t={sample.at:6.1f}s  voters {sample.voters} (healthy {sample.healthy_voters}), "
        f"learners {sample.learners}, quorum margin {sample.quorum_margin}; "
        f"Machines: {phases or 'none'}; writes acknowledged: {sample.writes_acknowledged}"
    )
