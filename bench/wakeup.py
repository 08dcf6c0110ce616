"""What one wake-up costs this machine: the CPU a process spends per wake at a steady rate, doing
nothing else. The floor under every figure measured "per event at 100/s".

Not part of the test run. Each contender is its own process, all started at once (the same machine
load for all), waking ``--rate`` times a second for ``--seconds``:

``time.sleep``      a plain Python loop sleeping until the next tick;
``asyncio``         ``asyncio.sleep`` on asyncio's own event loop;
``uvloop``          ``asyncio.sleep`` on uvloop (what ``cpo run`` and ``bench.vs_kopf`` use);
``uvloop+decode``   the same, decoding one watch line of the bench's Machine (~3 KB) with orjson
                    per wake: the least a watch consumer does with an event.

CPU is the process's own (getrusage, user + system) over the ticks, divided by the ticks. Run::

    .venv/bin/python -m bench.wakeup [--rate 100] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time

from bench._common import cpu_seconds, machine, uptime
from runtime import jsoncodec

CONTENDERS = ["time.sleep", "asyncio", "uvloop", "uvloop+decode"]


def _line() -> bytes:
    obj = machine(0, "bench")
    obj["metadata"]["managedFields"] = [
        {"manager": "bench", "operation": "Update", "fieldsV1": {"f:spec": {}}}
    ]
    return jsoncodec.dumps({"type": "MODIFIED", "object": obj})


async def _ticks(rate: float, count: int, decode: bool) -> float:
    line = _line()
    loads = jsoncodec.loads
    start = time.monotonic()
    cpu0 = cpu_seconds()
    for i in range(count):
        await asyncio.sleep(max(0.0, start + i / rate - time.monotonic()))
        if decode:
            loads(line)
    return cpu_seconds() - cpu0


def contender(name: str, rate: float, seconds: float) -> None:
    count = int(rate * seconds)
    if name == "time.sleep":
        start = time.monotonic()
        cpu0 = cpu_seconds()
        for i in range(count):
            time.sleep(max(0.0, start + i / rate - time.monotonic()))
        cpu = cpu_seconds() - cpu0
    elif name == "asyncio":
        cpu = asyncio.run(_ticks(rate, count, False))
    else:
        import uvloop

        cpu = uvloop.run(_ticks(rate, count, name == "uvloop+decode"))
    print(json.dumps({"name": name, "cpu_per_wake_us": cpu / count * 1e6}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--contender", choices=CONTENDERS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.contender:
        contender(args.contender, args.rate, args.seconds)
        return
    what = f"{args.rate:.0f} wake-ups/s for {args.seconds:.0f} s"
    print(f"bench.wakeup: {what}, all contenders at once; {uptime()}")
    argv = [sys.executable, "-m", "bench.wakeup", "--rate", str(args.rate), "--seconds", str(args.seconds)]
    children = [
        subprocess.Popen([*argv, "--contender", name], stdout=subprocess.PIPE, text=True)
        for name in CONTENDERS
    ]
    for child in children:
        out, _ = child.communicate()
        result = json.loads(out)
        print(f"  {result['name']:<15} {result['cpu_per_wake_us']:7.1f} µs of CPU per wake-up")
    print(f"finished: {uptime()}")


if __name__ == "__main__":
    main()
