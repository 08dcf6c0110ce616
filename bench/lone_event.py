"""Where a lone watch event's time goes, step by step, from the socket's read callback to the end of
its reconcile: ``python -m bench.lone_event``.

At a steady rate every event arrives alone after the process slept, and each step of its path
runs with cold caches; a sampling profiler then splits the cost poorly and a stage-by-stage
comparison (``bench.vs_kopf --stages``) only gives sums. This bench copies ``runtime/`` and
``bench/`` into a scratch directory, puts a timestamp (``time.perf_counter_ns``) at each step
boundary of the copy, runs ``bench.runtime`` there (the whole runtime path, a steady phase of
100 patches/s) and prints, per step, the median and 90th percentile of its wall time over the
events that arrived alone (the read callback idle for 3 ms before and every step seen once, in
order). The repository itself is not changed. Each probe is placed by a line of the code it
follows; when the code moves, the probe is not found and the bench stops with its name: update
``PROBES`` then.

The probes cost about a microsecond each, and the process is single-threaded and not preempted
on a quiet machine, so wall time is CPU time here; the sum is compared with the process's CPU per
event that ``bench.runtime`` prints (the rest is the wake-up, the socket read and TLS, before the
first probe).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._common import copy_runtime_and_bench

PROBE_MODULE = '''"""Timestamps of bench.lone_event (scratch copy only)."""
import atexit, os, time
ns = time.perf_counter_ns
P: list = []
def flush() -> None:
    if P:
        with open(os.environ["LONE_EVENT_PROBES"] + f".{os.getpid()}", "a") as out:
            out.write("".join(f"{step} {t}\\n" for step, t in P))
        P.clear()
atexit.register(flush)
'''

# (file, anchor: whole lines, found once in the file; the probe goes "after" its last line or
# "before" its first; the probe's indent; its number). Numbers are the order one event meets them.
_WATCH, _INFORMER, _QUEUE, _CONTROLLER = (
    "runtime/client/watchstream.py",
    "runtime/cache/informer.py",
    "runtime/workqueue/queue.py",
    "runtime/controller/controller.py",
)
_RECONCILE_CALL = (
    "                    # The common case without the extra coroutine of _call_reconciler.\n"
    "                    result = await self.reconciler.reconcile(request)\n"
)
PROBES: list[tuple[str, str, str, int, int]] = [
    (_WATCH, "    def data_received(self, data: bytes) -> None:\n", "after", 8, 0),
    (_WATCH, "                    on_event(loads(line))\n", "before", 20, 1),
    ("runtime/cache/reflector.py", "    def _handle(self, event: JSON) -> None:\n", "after", 8, 2),
    (_INFORMER, '        """LOW LEVEL (the reflector\'s): one watch event."""\n', "after", 8, 3),
    (_INFORMER, "        obj = self._prepare(obj)\n", "after", 8, 4),
    (_INFORMER, "        old_text = items.get(key)\n", "before", 8, 5),
    (_INFORMER, "        self._notify_update(old_text, obj)\n", "before", 8, 6),
    (
        "runtime/source.py",
        '        """The informer\'s cheaper form: the old state is decoded only if something reads it."""\n',
        "after",
        8,
        7,
    ),
    (
        _QUEUE,
        'or the queue is shut down."""\n',
        "after",
        8,
        8,
    ),
    (
        _QUEUE,
        "        self._queue.append(item)\n        if self._getters:\n            self._wake_one_getter()\n",
        "after",
        8,
        9,
    ),
    (_WATCH, "        if self._failure is not None:\n            self._close()\n", "after", 8, 10),
    (_QUEUE, "                await waiter\n", "after", 16, 11),
    (_CONTROLLER, "                request = await queue.get()\n", "after", 16, 12),
    (_CONTROLLER, _RECONCILE_CALL, "before", 20, 13),
    (
        "bench/runtime.py",
        '                obj = informer.get_by_key(f"{request.namespace}/{request.name}")\n',
        "after",
        16,
        14,
    ),
    (_CONTROLLER, _RECONCILE_CALL, "after", 20, 15),
    (_CONTROLLER, "                queue.done(request)\n", "after", 16, 16),
]

STEPS = {
    1: "read callback: HTTP parser, line split",
    2: "decode the line (orjson), reflector called",
    3: "reflector: event type, version",
    4: "informer: transform (managedFields dropped)",
    5: "informer: key, encode for the store",
    6: "informer: compare, versions, index, keep fresh",
    7: "informer: handler dispatch",
    8: "source: event, predicates, handler, request",
    9: "workqueue add (worker's future set)",
    10: "back out to the read callback's end",
    11: "loop: the worker task resumes",
    12: "workqueue get",
    13: "reconcile: log context, reconcile ID",
    14: "reconciler: cache read (fresh object)",
    15: "reconciler: the bench's bookkeeping",
    16: "result, metrics, workqueue done",
}


def instrument(tree: Path) -> None:
    """Put the probes of PROBES into the copy at ``tree``; stop naming any probe not found."""
    (tree / "runtime" / "_probe.py").write_text(PROBE_MODULE)
    for path, anchor, where, indent, number in PROBES:
        file = tree / path
        text = file.read_text()
        if text.count(anchor) != 1:
            sys.exit(f"bench.lone_event: probe {number} ({STEPS.get(number, 'start')}): {anchor!r} occurs "
                     f"{text.count(anchor)} times in {path}, not once: update PROBES")  # fmt: skip
        at = text.index(anchor)
        if where == "before":
            at = text.rfind("\n", 0, at) + 1
        else:
            at += len(anchor)
        text = text[:at] + " " * indent + f"_P.append(({number}, _ns()))\n" + text[at:]
        file.write_text(text)
    for path in {path for path, *_ in PROBES}:
        file = tree / path
        text, found = re.subn(r"^from __future__ import annotations\n",
                              "\\g<0>from runtime._probe import P as _P, ns as _ns\n", file.read_text(),
                              count=1, flags=re.M)  # fmt: skip
        if not found:
            sys.exit(f"bench.lone_event: {path} has no `from __future__ import annotations` line")
        file.write_text(text)


def analyse(path: Path) -> list[list[tuple[int, int]]]:
    """The lone events: runs of probes 0..16 in order, each after 3 ms without a read callback."""
    marks = [tuple(map(int, line.split())) for line in path.read_text().splitlines() if line.strip()]
    order = list(range(len(STEPS) + 1))
    events, current, last = [], [], None
    for step, t in marks:
        if step == 0 and last is not None and t - last > 3_000_000:
            events.append(current)
            current = []
        current.append((step, t))
        last = t
    events.append(current)
    return [e for e in events if [step for step, _ in e] == order]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate-seconds", type=float, default=20.0, help="the steady phase's length")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy and the raw probes")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="lone-event-"))
    try:
        tree = scratch / "tree"
        copy_runtime_and_bench(tree)
        instrument(tree)
        probes = scratch / "probes"
        env = {**os.environ, "LONE_EVENT_PROBES": str(probes), "PYTHONPATH": str(tree)}
        argv = [sys.executable, "-m", "bench.runtime", "--impl", "runtime", "--n", str(args.n),
                "--rate", "100", "--rate-seconds", str(args.rate_seconds), "--flood-count", "200",
                "--drain-rounds", "1", "--drain-count", "200", "--no-delivery"]  # fmt: skip
        run = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=900)
        if run.returncode != 0:
            sys.exit(
                f"bench.lone_event: bench.runtime failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
            )
        cpu = re.search(r"CPU/event ([0-9.]+) ms \(.*?([0-9.]+) wake-ups per event", run.stdout)
        files = sorted(scratch.glob("probes.*"))
        if len(files) != 1:
            sys.exit(f"bench.lone_event: expected the probes of one controller process, found {len(files)}")
        events = analyse(files[0])
        if not events:
            sys.exit("bench.lone_event: no lone event seen with every probe in order")
        print(f"bench.lone_event: {len(events)} lone events at 100 patches/s, {os.cpu_count()} CPUs, "
              f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
        print(f"\n{'step (from the previous probe)':<50} {'median µs':>10} {'p90 µs':>8}")
        total = 0.0
        for step, name in STEPS.items():
            spans = sorted((e[step][1] - e[step - 1][1]) / 1000 for e in events)
            median = statistics.median(spans)
            total += median
            print(f"{name:<50} {median:>10.1f} {spans[int(len(spans) * 0.9)]:>8.1f}")
        whole = statistics.median((e[-1][1] - e[0][1]) / 1000 for e in events)
        print(f"{'sum of the medians':<50} {total:>10.1f}")
        print(f"{'read callback entered -> reconcile done (median)':<50} {whole:>10.1f}")
        if cpu:
            print(f"\nthe process's CPU per event in that phase: {float(cpu.group(1)) * 1000:.0f} µs "
                  f"({cpu.group(2)} wake-ups per event); the rest: wake-up, socket read, TLS")  # fmt: skip
    finally:
        if args.keep:
            print(f"kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
