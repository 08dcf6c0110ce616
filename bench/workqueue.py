"""Workqueue throughput: add + get + done per second, with and without metrics.

Not part of the test run. Each round pushes ``--items`` distinct keys through one queue drained
by ``--workers`` workers doing no work, so the figure is the queue's own overhead (and that of its
``workqueue_*`` metrics). Run::

    .venv/bin/python -m bench.workqueue [--items 200000] [--workers 1 8 64] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

from runtime.workqueue import QueueShutDown, WorkQueue, WorkQueueOptions


async def one_round(items: int, workers: int, with_metrics: bool) -> float:
    """Seconds to push ``items`` keys through a fresh queue."""
    name = f"bench-{uuid.uuid4().hex[:8]}" if with_metrics else None
    queue: WorkQueue[int] = WorkQueue(WorkQueueOptions(name=name))
    finished = asyncio.Event()
    remaining = items

    async def worker() -> None:
        nonlocal remaining
        while True:
            try:
                key = await queue.get()
            except QueueShutDown:
                return
            queue.done(key)
            remaining -= 1
            if remaining == 0:
                finished.set()

    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    await asyncio.sleep(0)  # let the workers block in get(), the steady state of a controller
    started = time.perf_counter()
    # Add in batches so adds and gets interleave the way watch events and workers do.
    for first in range(0, items, 256):
        for key in range(first, min(first + 256, items)):
            queue.add(key)
        await asyncio.sleep(0)
    await finished.wait()
    elapsed = time.perf_counter() - started
    queue.shutdown()
    await asyncio.gather(*tasks)
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    print(f"{'workers':>8} {'metrics':>8} {'add+get+done/s':>16}")
    for workers in args.workers:
        for with_metrics in (False, True):
            best = min([await one_round(args.items, workers, with_metrics) for _ in range(args.rounds)])
            label = "on" if with_metrics else "off"
            print(f"{workers:>8} {label:>8} {args.items / best:>16,.0f}")


if __name__ == "__main__":
    asyncio.run(main())
