"""A manager in its own process, for tests that kill it or send it signals.

    python -m tests.support.manager_process KUBECONFIG LEASE NAMESPACE IDENTITY \
        LEASE_DURATION RENEW_DEADLINE RETRY_PERIOD STEP_SECONDS GRACE_SECONDS

It runs :meth:`Manager.run` (signal handling included) with one leader runnable that works in
steps of STEP_SECONDS and finishes the step it is in before honouring stop. It prints one JSON
line per event to stdout: ``{"event": "leading"|"step-start"|"step-done"|"exit", "t": monotonic}``.
CLOCK_MONOTONIC is system-wide on Linux, so the parent compares these times with its own.

The parent's side: :func:`spawn` starts this module as a child (events on a pipe) and
:func:`next_event` reads the next one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from runtime.manager import Manager, ManagerOptions
from runtime.runnable import runnable_func


async def spawn(
    kubeconfig: Path,
    lease: str,
    namespace: str,
    identity: str,
    *,
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    step: float,
    grace: float,
) -> asyncio.subprocess.Process:
    """This module as a child process, its events on ``stdout`` (see :func:`next_event`)."""
    from tests.support.processes import REPO, child_environment

    arguments = (lease_duration, renew_deadline, retry_period, step, grace)
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.support.manager_process",
        str(kubeconfig),
        lease,
        namespace,
        identity,
        *(f"{value:g}" for value in arguments),
        cwd=REPO,
        env=child_environment(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )


async def next_event(process: asyncio.subprocess.Process, within: float = 30) -> dict[str, Any]:
    """The child's next event; fails if it exits first or says nothing for ``within`` seconds."""
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), within)
    assert line, "the manager process exited early"
    event: dict[str, Any] = json.loads(line)
    return event


def emit(event: str, **extra: object) -> None:
    print(json.dumps({"event": event, "t": time.monotonic(), **extra}), flush=True)


async def main(argv: list[str]) -> int:
    kubeconfig, lease, namespace, identity = argv[:4]
    lease_duration, renew, retry, step, grace = (float(a) for a in argv[4:9])
    manager = await Manager.create(
        ManagerOptions(
            kubeconfig=kubeconfig,
            metrics_bind_address="0",
            health_probe_bind_address="0",
            leader_election=True,
            leader_election_id=lease,
            leader_election_namespace=namespace,
            leader_election_identity=identity,
            lease_duration=lease_duration,
            renew_deadline=renew,
            retry_period=retry,
            graceful_shutdown_timeout=grace,
        )
    )

    async def stepper(stop: asyncio.Event) -> None:
        emit("leading")
        while not stop.is_set():
            emit("step-start")
            await asyncio.sleep(step)  # allow-sleep: a unit of work that must not be interrupted
            emit("step-done")

    manager.add(runnable_func(stepper))
    code = await manager.run()
    emit("exit", code=code)
    return code


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    sys.exit(asyncio.run(main(sys.argv[1:])))
