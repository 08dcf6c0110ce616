"""A manager in its own process, for tests that kill it or send it signals.

    python -m tests.support.manager_process KUBECONFIG LEASE NAMESPACE IDENTITY \
        LEASE_DURATION RENEW_DEADLINE RETRY_PERIOD STEP_SECONDS GRACE_SECONDS

It runs :meth:`Manager.run` (signal handling included) with one leader runnable that works in
steps of STEP_SECONDS and finishes the step it is in before honouring stop. It prints one JSON
line per event to stdout: ``{"event": "leading"|"step-start"|"step-done"|"exit", "t": monotonic}``.
CLOCK_MONOTONIC is system-wide on Linux, so the parent compares these times with its own.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time

from runtime.manager import Manager, ManagerOptions
from runtime.runnable import runnable_func


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
