"""The runtime against kopf: same server, same objects, same load, one process each, side by side.

Not part of the test run; needs the ``bench`` extra (``pip install -e '.[bench]'`` brings kopf).
One embedded API server (``cpo dev-apiserver``, its own process) holds N Machine-like objects
(default 1,000, ~2 KB each, see :mod:`bench._common`). Then, one after the other, each in its own
process started after the previous one has exited:

``runtime``       ``runtime.cache.Cache`` + ``runtime.controller.Controller``, no-op reconciler;
``kopf event``    kopf (PyPI), a no-op ``@kopf.on.event`` handler: kopf's lightest mode;
``kopf update``   kopf, a no-op ``@kopf.on.update`` handler as kopf users write them. kopf keeps
                  its own state on the object: on start it patches every object with its
                  ``last-handled-configuration`` annotation, and after each handled update it
                  patches again (and posts Kubernetes Events for the handler's log lines) --
                  part of what using kopf costs, so it is counted.

kopf runs through ``kopf.operator()`` in standalone mode (no peering), cluster-wide, with its
default settings and ``kopf run``'s default logging (INFO, to the child's log file), logging in
with its own kubeconfig loader (token + inline CA). Handlers are ``async def`` (kopf runs plain
``def`` handlers in a thread pool, which would cost it more). Every contender runs on the same
event loop, printed in the table: ``--loop auto`` (the default) is uvloop when installed, as
kopf's CLI chooses; ``--loop asyncio`` forces the standard loop for all. Run::

    .venv/bin/python -m bench.vs_kopf [--n 1000] [--burst 2000] [--rate 100] [--loop asyncio]
    .venv/bin/python -m bench.vs_kopf --kopf-modes event --baseline /tmp/base   # old runtime too

``--baseline DIR`` adds the runtime of another checkout of this repository (e.g. ``git worktree add
/tmp/base main``) as one more contender, ``runtime@base``, run right after ours, so a change to the
runtime is judged against the code before it in the same invocation and on the same server.

Figures (same definitions for every column):

``initial sync``     process start command -> every object handled once (runtime: reconciled;
                     kopf event: handler called; kopf update: the handler is not called for
                     existing objects, so: every object carries kopf's annotation, seen by a
                     watch in the driver).
``burst ev/s``       the process is SIGSTOPped while ``--burst`` patches are written, then
                     SIGCONT: patches / time until the handler has seen the last one.
``p99 latency``      patches sent open-loop at ``--rate``/s for ``--rate-seconds`` (10 s):
                     time.time() at the handler minus the time.time() the patcher wrote into
                     the object.
``CPU/event``        the process's own CPU seconds (getrusage) over the burst / burst patches.
                     ``--rounds`` bursts (3) per contender; the median round is reported.
``peak RSS``         ru_maxrss of the process at the end; also printed: RSS after imports and
                     ru_maxrss right after the initial sync (before the patch phases).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
from typing import Any

from bench._common import (
    API_VERSION,
    GROUP,
    KIND,
    PLURAL,
    VERSION,
    ApiServer,
    Child,
    Tracker,
    emit,
    median_round,
    rounds_note,
    rss_bytes,
    serve_commands,
    uptime,
    workdir,
)
from bench.runtime import IMPLS, Phases, controller_argv, seed
from runtime.eventloop import LOOP_KINDS, loop_name, run
from runtime.jsoncodec import JSON

KOPF_LAST_HANDLED = "kopf.zalando.org/last-handled-configuration"
STAGES = ["reader", "informer", "bare", "standin"]
"""``--stages``' extra contenders, in the order they run."""


# --------------------------------------------------------------------------------- the kopf child


async def kopf_child(args: argparse.Namespace) -> None:
    import logging

    import kopf

    tracker = Tracker(args.n)
    observe = tracker.observe

    if args.mode == "event":

        @kopf.on.event(GROUP, VERSION, PLURAL)
        async def on_event(body: Any, **_: Any) -> None:
            meta = body["metadata"]
            observe(meta["name"], meta.get("annotations") or {})

    else:

        @kopf.on.update(GROUP, VERSION, PLURAL)
        async def on_update(body: Any, **_: Any) -> None:
            meta = body["metadata"]
            observe(meta["name"], meta.get("annotations") or {})

    kopf.configure(verbose=False)  # what `kopf run` does without flags: INFO to stderr
    logging.getLogger("asyncio").setLevel(logging.WARNING)
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    emit({"event": "ready", "pid": os.getpid(), "rss": rss_bytes(), "loop": loop_name()})

    async def start(cmd: JSON) -> None:
        started = time.time()
        tasks.append(asyncio.create_task(kopf.operator(standalone=True, clusterwide=True, stop_flag=stop)))
        if args.mode == "event":
            # Bounded, and ended early if kopf itself gives up (e.g. it cannot log in).
            synced = asyncio.create_task(tracker.initial_done.wait())
            budget = cmd.get("timeout", 300)
            await asyncio.wait([synced, tasks[0]], timeout=budget, return_when=asyncio.FIRST_COMPLETED)
            if not tracker.initial_done.is_set():
                synced.cancel()
                emit({"event": "error", "message": "kopf did not handle every object (see its log)"})
                return
            took = tracker.t_initial_done - started
            emit({"event": "initial", "started": started, "reconciled_s": took})
        else:
            emit({"event": "initial", "started": started, "reconciled_s": float("nan")})

    try:
        await serve_commands(tracker, {"start": start})
    finally:
        stop.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)


# ------------------------------------------------------------------------------------ the driver


async def wait_all_annotated(client: Any, namespace: str, n: int, timeout: float) -> float:  # noqa: ASYNC109
    """time.time() when all N objects carry kopf's last-handled annotation (list, then watch)."""
    deadline = time.monotonic() + timeout
    listed = await client.list(API_VERSION, KIND, namespace=namespace)
    done = {
        o["metadata"]["name"]
        for o in listed["items"]
        if KOPF_LAST_HANDLED in (o["metadata"].get("annotations") or {})
    }
    if len(done) >= n:
        return time.time()
    rv = listed["metadata"]["resourceVersion"]
    while time.monotonic() < deadline:
        events = client.watch(API_VERSION, KIND, namespace, resource_version=rv, timeout_seconds=30)
        async for event in events:
            obj = event["object"]
            rv = obj["metadata"].get("resourceVersion", rv)
            if KOPF_LAST_HANDLED in (obj["metadata"].get("annotations") or {}):
                done.add(obj["metadata"]["name"])
                if len(done) >= n:
                    return time.time()
            if time.monotonic() > deadline:
                break
    raise TimeoutError(f"kopf annotated only {len(done)} of {n} objects within {timeout:.0f}s")


def kopf_argv(kubeconfig: Any, n: int, mode: str, loop: str) -> list[str]:
    return [sys.executable, "-m", "bench.vs_kopf", "--role", "kopf", "--mode", mode, "--n", str(n),
            "--kubeconfig", str(kubeconfig), "--loop", loop]  # fmt: skip


async def measure(
    name: str, child: Child, phases: Phases, client: Any, args: argparse.Namespace, namespace: str
) -> JSON:
    try:
        started = await start_child(name, child, client, args, namespace)
        rate = await phases.at_rate(child, args.rate, args.rate_seconds)
        bursts = [await phases.drain(child, args.burst, args.concurrency) for _ in range(args.rounds)]
        burst = median_round(bursts)
        usage = await child.call({"cmd": "usage"}, "usage", 30)
    finally:
        await child.stop()
    return {
        **started,
        "rate": rate,
        "burst": burst,
        "bursts": bursts,
        "peak_rss": usage["peak_rss"],
        "rss_end": usage["rss"],
    }


async def start_child(name: str, child: Child, client: Any, args: argparse.Namespace, namespace: str) -> JSON:
    """Start one contender and wait for its initial sync; what :func:`measure` does first."""
    await child.start()
    ready = await child.recv("ready", 120)
    if not name.startswith("kopf"):
        await child.call({"cmd": "start", "timeout": 300}, "synced", 330)
        initial = await child.recv("initial", 330)
        sync_s = initial["reconciled_s"]
    else:
        initial = await child.call({"cmd": "start", "timeout": 300}, "initial", 330)
        sync_s = initial["reconciled_s"]
        if name == "kopf update":
            sync_s = await wait_all_annotated(client, namespace, args.n, 300) - initial["started"]
            await asyncio.sleep(2)  # allow-sleep: kopf's post-start patches are not observable otherwise
    synced_usage = await child.call({"cmd": "usage"}, "usage", 30)
    return {"name": name, "sync_s": sync_s, "rss_ready": ready["rss"], "loop": ready["loop"],
            "peak_rss_synced": synced_usage["peak_rss"]}  # fmt: skip


async def measure_together(
    contenders: list[tuple[str, Child]], phases: Phases, client: Any, args: argparse.Namespace, namespace: str
) -> list[JSON]:
    """Every contender running at once, each seeing the same patches at the same moments: the
    machine's load, whatever it is, is the same for all (``--together``)."""
    children = [child for _, child in contenders]
    try:
        results = [await start_child(name, child, client, args, namespace) for name, child in contenders]
        rates = await phases.at_rate_together(children, args.rate, args.rate_seconds)
        rounds = [
            await phases.drain_together(children, args.burst, args.concurrency) for _ in range(args.rounds)
        ]
        for i, (result, child) in enumerate(zip(results, children, strict=True)):
            usage = await child.call({"cmd": "usage"}, "usage", 30)
            bursts = [r[i] for r in rounds]
            result.update(rate=rates[i], bursts=bursts, burst=median_round(bursts),
                          peak_rss=usage["peak_rss"], rss_end=usage["rss"])  # fmt: skip
    finally:
        for child in children:
            await child.stop()
    return results


async def driver(args: argparse.Namespace) -> None:
    from runtime.client import Client

    print(f"bench.vs_kopf: N={args.n}, burst={args.burst}, rate={args.rate:.0f}/s, "
          f"{os.cpu_count()} CPUs, {uptime()}", flush=True)  # fmt: skip
    results: list[JSON] = []
    async with (
        workdir(args.keep) as tmp,
        ApiServer(tmp) as server,
        await Client.from_kubeconfig(server.kubeconfig) as client,
    ):
        namespace = "bench"
        create_s, full, lean = await seed(client, namespace, args.n)
        print(f"created {args.n} objects in {create_s:.1f}s; one object: {lean} B JSON "
              f"({full} B with managedFields)", flush=True)  # fmt: skip
        phases = Phases(client, namespace, args.n, server.pid)
        ours = controller_argv(server.kubeconfig, args.n, args.impl, False, loop=args.loop)
        contenders = [(args.impl, Child(args.impl, ours, tmp / f"{args.impl}.log"))]
        if args.baseline:
            base = args.baseline  # made absolute in main()
            # Its own tree first on the path (and as the working directory, which `-m` puts first).
            child = Child(f"{args.impl}@base", ours, tmp / "base.log", env={"PYTHONPATH": base}, cwd=base)
            # --base-first: the baseline before ours, to tell a contender's effect from its position.
            contenders.insert(0 if args.base_first else 1, (f"{args.impl}@base", child))
        for stage in STAGES if args.stages else []:
            argv = controller_argv(server.kubeconfig, args.n, stage, False, loop=args.loop)
            contenders.append((stage, Child(stage, argv, tmp / f"{stage}.log")))
        for mode in args.kopf_modes:
            argv = kopf_argv(server.kubeconfig, args.n, mode, args.loop)
            env = {"KUBECONFIG": str(server.kubeconfig)}
            child = Child(f"kopf {mode}", argv, tmp / f"kopf-{mode}.log", env=env)
            contenders.append((f"kopf {mode}", child))
        if args.together:
            results = await measure_together(contenders, phases, client, args, namespace)
            print(f"  all together: done ({uptime()})", flush=True)
        for name, child in contenders if not args.together else []:
            result = await measure(name, child, phases, client, args, namespace)
            results.append(result)
            print(f"  {name}: done ({uptime()})", flush=True)
    print_table(results, args)


def print_table(results: list[JSON], args: argparse.Namespace) -> None:
    names = [r["name"] for r in results]
    width = 16
    print(f"\n{'':<34}" + "".join(f"{n:>{width}}" for n in names))

    def row(label: str, values: list[str]) -> None:
        print(f"{label:<34}" + "".join(f"{v:>{width}}" for v in values))

    row("event loop", [r["loop"] for r in results])
    row("initial sync (s)", [f"{r['sync_s']:.2f}" for r in results])
    row(f"burst of {args.burst}: events/s", [f"{r['burst']['events_per_s']:.0f}" for r in results])
    row(f"p99 patch->handler @{args.rate:.0f}/s (ms)", [f"{r['rate']['p99_ms']:.1f}" for r in results])
    row(f"p50 patch->handler @{args.rate:.0f}/s (ms)", [f"{r['rate']['p50_ms']:.1f}" for r in results])
    row("CPU per event, burst (ms)", [f"{r['burst']['cpu_per_event_ms']:.3f}" for r in results])
    row(f"CPU per event @{args.rate:.0f}/s (ms)", [f"{r['rate']['cpu_per_event_ms']:.3f}" for r in results])
    row(
        f"wake-ups per event @{args.rate:.0f}/s",
        [f"{r['rate']['sleeps'] / r['rate']['count']:.2f}" for r in results],
    )
    row(
        f"GC runs, ms @{args.rate:.0f}/s",
        [f"{r['rate'].get('gc_count', '-')}, {r['rate'].get('gc_total_ms', '-')}" for r in results],
    )
    row("handler calls in the burst", [f"{r['burst']['reconciles']}" for r in results])
    row("peak RSS (MiB)", [f"{r['peak_rss'] / 2**20:.1f}" for r in results])
    row("  of which RSS after imports (MiB)", [f"{r['rss_ready'] / 2**20:.1f}" for r in results])
    row("  peak RSS by the initial sync (MiB)", [f"{r['peak_rss_synced'] / 2**20:.1f}" for r in results])
    print()
    kopfs = [r for r in results if r["name"].startswith("kopf")]
    for ours in (r for r in results if not r["name"].startswith("kopf")):
        for other in kopfs:
            cpu_ratio = other["burst"]["cpu_per_event_ms"] / ours["burst"]["cpu_per_event_ms"]
            rate_ratio = other["rate"]["cpu_per_event_ms"] / ours["rate"]["cpu_per_event_ms"]
            rss_ratio = ours["peak_rss"] / other["peak_rss"]
            print(
                f"{other['name']} / {ours['name']}: CPU per event x{cpu_ratio:.1f} in the burst [target "
                f">= 10: {'ok' if cpu_ratio >= 10 else 'MISSED'}], x{rate_ratio:.1f} at {args.rate:.0f}/s "
                f"[target >= 8: {'ok' if rate_ratio >= 8 else 'MISSED'}]; peak RSS = {rss_ratio:.2f} "
                f"of kopf's "
                f"[target <= 0.5: {'ok' if rss_ratio <= 0.5 else 'MISSED'}]"
            )
    by_name = {r["name"]: r for r in results}
    base = by_name.get(f"{args.impl}@base")
    if base is not None:
        ours = by_name[args.impl]
        p99_ratio = ours["rate"]["p99_ms"] / base["rate"]["p99_ms"]
        print(
            f"{ours['name']} / {base['name']} at {args.rate:.0f}/s: CPU per event x"
            f"{ours['rate']['cpu_per_event_ms'] / base['rate']['cpu_per_event_ms']:.2f}, p99 latency x"
            f"{p99_ratio:.2f} [target <= 1.5: {'ok' if p99_ratio <= 1.5 else 'MISSED'}]"
        )
    for r in results:
        print(f"{r['name']}: bursts, {rounds_note(r['bursts'])}")
    for r in results:
        print(f"{r['name']}: slowest at {args.rate:.0f}/s (ms, s into the phase): {r['rate']['slowest']}")
        rate = r["rate"]
        print(
            f"{r['name']}: full collections and GC pauses > 2 ms at {args.rate:.0f}/s (generation, ms, "
            f"s into the phase): {rate.get('gc_pauses')}; phase armed at {rate.get('t_armed', 0):.3f}"
        )
    print(f"finished: {uptime()}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=["driver", "kopf"], default="driver")
    parser.add_argument("--mode", choices=["event", "update"], default="event", help=argparse.SUPPRESS)
    parser.add_argument("--kopf-modes", nargs="*", default=["event", "update"], choices=["event", "update"])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--impl", choices=IMPLS, default="runtime", help="our side")
    parser.add_argument("--stages", action="store_true",
                        help="also run parts of the runtime's path as contenders (bench/_stages.py: "
                        "reader, informer) and the bare loop (standin): the steady-rate cost by "
                        "subtraction; best with --together")  # fmt: skip
    parser.add_argument("--burst", type=int, default=2000, help="patches written while a process is stopped")
    parser.add_argument("--rate", type=float, default=100.0, help="offered patches/s for the latency phase")
    parser.add_argument("--rate-seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3, help="bursts per contender; the median is reported")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--loop", choices=LOOP_KINDS, default="auto",
                        help="event loop of every contender: uvloop when installed (auto, as kopf's CLI "
                        "does), or force one")  # fmt: skip
    parser.add_argument("--baseline", metavar="DIR",
                        help="another checkout of this repository: its runtime runs as one more "
                        "contender")  # fmt: skip
    parser.add_argument("--base-first", action="store_true", help="run the baseline before ours")
    parser.add_argument("--together", action="store_true",
                        help="run every contender at once on the same patches (the same machine load "
                        "for all) instead of one after the other")  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline:
        args.baseline = os.path.abspath(args.baseline)
    if args.role == "kopf":
        run(kopf_child(args), loop=args.loop)
    else:
        asyncio.run(driver(args))


if __name__ == "__main__":
    main()
