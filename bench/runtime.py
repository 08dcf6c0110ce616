"""The runtime's informer + controller under load: sync time, throughput, latency, CPU and memory.

Not part of the test run. For each N (default 1,000 and 10,000) it starts a fresh embedded API
server in its own process (``cpo dev-apiserver``), creates N Machine-like objects (~2 KB of JSON
each, see :mod:`bench._common`), then starts the reconciling side in a *separate* process: a
``runtime.cache.Cache`` and a ``runtime.controller.Controller`` with a no-op reconciler that reads
each object from the informer. Run::

    .venv/bin/python -m bench.runtime                 # N = 1,000 and 10,000
    .venv/bin/python -m bench.runtime --n 1000 --impl standin   # the bare loop, for comparison

What each printed figure is:

``initial sync``       cache start -> informer synced holding all N objects (list + decode + store),
                       and -> every object reconciled once.
``offered (flood)``    the driver patches as fast as the server answers (round-robin over the
                       objects); events/s = patches / (first patch sent -> reconciler has seen the
                       last one). Bounded by the single-process Python API server, not by us.
``latency @ R/s``      patches sent open-loop at R/s (default 1,000); per reconcile, time.time()
                       at the reconcile minus time.time() written into the object by the patcher
                       (same host clock): p50/p99. Includes the server's patch + watch fan-out
                       time; the patch round trip seen by the driver is printed beside it.
``capacity (drain)``   the controller process is SIGSTOPped while the driver writes a backlog of K
                       patches (the server queues them on the open watch); then SIGCONT and the
                       time until the reconciler has seen the last one. events/s = K / drain time:
                       what the controller can consume when the server is not the limit.
                       Three rounds (``--drain-rounds``); the round with the median CPU/event
                       is reported, and every round's figures are printed beside it.
``CPU/event``          the controller process's own CPU seconds (getrusage) over the drain phase
                       / K watch events. Also given for the offered-rate phase.
``wake-ups``           voluntary context switches of the controller process per event in a phase:
                       how often it slept waiting for data (1 per event when each arrives alone).
``--loop``             the controller's event loop (``runtime.eventloop``): uvloop when installed
                       (auto, the default) or ``asyncio``; printed in each section's heading.
``memory/object``      tracemalloc: bytes held by a second, fresh Cache synced over the same N
                       objects, after gc, / N. Also the RSS delta of the controller process from
                       before cache start to after the first sync + reconciles, / N.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import signal
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench._common import (
    API_VERSION,
    KIND,
    ApiServer,
    Child,
    PatchRun,
    Tracker,
    cpu_seconds,
    create_objects,
    emit,
    median_round,
    object_name,
    patch_at_rate,
    patch_flood,
    peak_rss_bytes,
    percentile,
    process_cpu_seconds,
    rounds_note,
    rss_bytes,
    serve_commands,
    stored_size,
    uptime,
    workdir,
)
from runtime.eventloop import LOOP_KINDS, loop_name, run
from runtime.jsoncodec import JSON

# ------------------------------------------------------------------------------- the controller

IMPLS = ["runtime", "standin", "reader", "informer", "bare"]
"""What ``--impl`` runs as the controller child."""


class RuntimeImpl:
    """runtime.cache.Cache + runtime.controller.Controller with a no-op reconciler."""

    def __init__(self, client: Any, tracker: Tracker, delivery: bool = False) -> None:
        from runtime.cache import Cache
        from runtime.controller import Controller, ControllerOptions
        from runtime.handler import EnqueueRequestForObject
        from runtime.reconcile import Request, Result
        from runtime.source import Kind

        self.client = client
        self.cache = Cache(client)
        informer = self.informer = self.cache.informer_for(API_VERSION, KIND)
        observe = tracker.observe
        done = Result()

        class NoopReconciler:
            """Reads its object from the informer (a private copy, as every cache read) and records
            what it saw: the least a real reconciler does."""

            async def reconcile(self, request: Request) -> Result:
                obj = informer.get_by_key(f"{request.namespace}/{request.name}")
                if obj is not None:
                    observe(request.name, obj["metadata"].get("annotations") or {})
                return done

        if delivery:
            # A second handler on the informer timestamps each event as it is stored, splitting
            # patch -> reconcile into server + transport + decode, and the controller's queue.
            class Delivered:
                def on_add(self, obj: JSON, is_in_initial_list: bool) -> None:
                    pass

                def on_update(self, old: JSON, new: JSON) -> None:
                    tracker.delivered(new)

                def on_delete(self, obj: JSON) -> None:
                    pass

            informer.add_event_handler(Delivered())
        self.controller = Controller("bench", NoopReconciler(), ControllerOptions())
        self.controller.watch(Kind(self.cache, API_VERSION, KIND, EnqueueRequestForObject()))
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self, stop: asyncio.Event) -> None:
        self.tasks = [
            asyncio.create_task(self.cache.start(stop)),
            asyncio.create_task(self.controller.start(stop)),
        ]

    async def wait_synced(self) -> int:
        await self.informer.wait_for_sync()
        return len(self.informer)  # a count: list() would decode every object at once

    @staticmethod
    async def cache_bytes(client: Any, n: int) -> int:
        """tracemalloc bytes held by a second, fresh Cache synced over the same objects."""
        from runtime.cache import Cache

        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        stop = asyncio.Event()
        cache = Cache(client)
        informer = cache.informer_for(API_VERSION, KIND)
        task = asyncio.create_task(cache.start(stop))
        await informer.wait_for_sync()
        assert len(informer.list()) == n
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        stop.set()
        await task
        return held


async def controller_child(args: argparse.Namespace) -> None:
    import logging

    from runtime.client import Client

    logging.basicConfig(level=logging.WARNING)
    client = await Client.from_kubeconfig(args.kubeconfig)
    tracker = Tracker(args.n)
    tracker.profile_path = args.profile
    if args.impl == "runtime":
        impl: Any = RuntimeImpl(client, tracker, args.delivery)
    elif args.impl == "standin":
        from bench._standin import StandIn

        impl = StandIn(client, tracker, args.delivery)
    else:
        from bench._stages import BareImpl, InformerImpl, ReaderImpl

        stage = {"reader": ReaderImpl, "informer": InformerImpl, "bare": BareImpl}[args.impl]
        impl = stage(client, tracker, args.delivery)
    stop = asyncio.Event()
    emit({"event": "ready", "pid": os.getpid(), "rss": rss_bytes(), "loop": loop_name()})

    async def start(cmd: JSON) -> None:
        gc.collect()
        rss_before = rss_bytes()
        t0 = time.perf_counter()
        w0 = time.time()
        await impl.start(stop)
        count = await impl.wait_synced()
        sync_s = time.perf_counter() - t0
        emit({"event": "synced", "sync_s": sync_s, "objects": count, "rss_before": rss_before})
        try:
            await asyncio.wait_for(tracker.initial_done.wait(), cmd.get("timeout", 300))
        except TimeoutError:
            seen = args.n - tracker.initial_left
            emit({"event": "error", "message": f"only {seen} of {args.n} reconciled"})
            return
        gc.collect()
        emit(
            {
                "event": "initial",
                "reconciled_s": tracker.t_initial_done - w0,
                "rss_after": rss_bytes(),
                "rss_before": rss_before,
                "cpu_s": cpu_seconds(),
            }
        )

    async def memory(cmd: JSON) -> None:
        held = await impl.cache_bytes(client, args.n)
        emit({"event": "memory", "tracemalloc_bytes": held, "peak_rss": peak_rss_bytes()})

    try:
        await serve_commands(tracker, {"start": start, "memory": memory})
    finally:
        stop.set()
        if args.impl in ("standin", "reader"):
            for task in impl.tasks:
                task.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*impl.tasks, return_exceptions=True), 30)
        await client.close()


# ------------------------------------------------------------------------------------ the driver


def controller_argv(
    kubeconfig: Path, n: int, impl: str, delivery: bool, profile: str | None = None, loop: str = "auto"
) -> list[str]:
    return [sys.executable, "-m", "bench.runtime", "--role", "controller", "--kubeconfig", str(kubeconfig),
            "--n", str(n), "--impl", impl, "--loop", loop] + (["--delivery"] if delivery else []) + (
            ["--profile", profile] if profile else [])  # fmt: skip


class Phases:
    """The measurement phases against one child, shared with bench.vs_kopf."""

    def __init__(self, client: Any, namespace: str, n: int, server_pid: int) -> None:
        self.client = client
        self.namespace = namespace
        self.n = n
        self.server_pid = server_pid
        self.next_phase = 1

    async def _arm(self, child: Child, count: int) -> int:
        phase = self.next_phase
        self.next_phase += 1
        await child.call({"cmd": "arm", "phase": phase, "count": count}, "armed", 30)
        return phase

    async def flood(self, child: Child, count: int, concurrency: int) -> JSON:
        phase = await self._arm(child, count)
        server0 = process_cpu_seconds(self.server_pid)
        run = await patch_flood(self.client, self.namespace, self.n, phase, count, concurrency)
        report = await child.call({"cmd": "wait", "timeout": 300}, "phase", 330)
        return self._summary(report, run, count, server0, start=run.t_first)

    async def at_rate(self, child: Child, rate: float, seconds: float) -> JSON:
        count = int(rate * seconds)
        phase = await self._arm(child, count)
        server0 = process_cpu_seconds(self.server_pid)
        run = await patch_at_rate(self.client, self.namespace, self.n, phase, count, rate)
        report = await child.call({"cmd": "wait", "timeout": 300}, "phase", 330)
        return self._summary(report, run, count, server0, start=run.t_first)

    async def at_rate_together(self, children: list[Child], rate: float, seconds: float) -> list[JSON]:
        """:meth:`at_rate` with every child armed for the same patches: one load, seen by all."""
        count = int(rate * seconds)
        phase = self.next_phase
        self.next_phase += 1
        for child in children:
            await child.call({"cmd": "arm", "phase": phase, "count": count}, "armed", 30)
        server0 = process_cpu_seconds(self.server_pid)
        run = await patch_at_rate(self.client, self.namespace, self.n, phase, count, rate)
        reports = [await child.call({"cmd": "wait", "timeout": 300}, "phase", 330) for child in children]
        return [self._summary(report, run, count, server0, start=run.t_first) for report in reports]

    async def drain_together(self, children: list[Child], count: int, concurrency: int) -> list[JSON]:
        """:meth:`drain` with every child stopped while the same backlog is written."""
        phase = self.next_phase
        self.next_phase += 1
        for child in children:
            await child.call({"cmd": "arm", "phase": phase, "count": count}, "armed", 30)
        for child in children:
            os.kill(child.pid, signal.SIGSTOP)
        try:
            run = await patch_flood(self.client, self.namespace, self.n, phase, count, concurrency)
            server0 = process_cpu_seconds(self.server_pid)
            t_cont = time.time()
        finally:
            for child in children:
                os.kill(child.pid, signal.SIGCONT)
        reports = [await child.call({"cmd": "wait", "timeout": 300}, "phase", 330) for child in children]
        return [self._summary(report, run, count, server0, start=t_cont) for report in reports]

    async def drain(self, child: Child, count: int, concurrency: int) -> JSON:
        phase = await self._arm(child, count)
        os.kill(child.pid, signal.SIGSTOP)
        try:
            run = await patch_flood(self.client, self.namespace, self.n, phase, count, concurrency)
            server0 = process_cpu_seconds(self.server_pid)
            t_cont = time.time()
        finally:
            os.kill(child.pid, signal.SIGCONT)
        report = await child.call({"cmd": "wait", "timeout": 300}, "phase", 330)
        return self._summary(report, run, count, server0, start=t_cont)

    def _summary(self, report: JSON, run: PatchRun, count: int, server0: float, start: float) -> JSON:
        seconds = report["t_done"] - start if report["caught_up"] else float("nan")
        return {
            **report,
            "count": count,
            "seconds": seconds,
            "events_per_s": count / seconds if seconds > 0 else float("nan"),
            "cpu_per_event_ms": report["cpu_s"] / count * 1000,
            "patch_rate": run.achieved_rate,
            "patch_rtt_p50_ms": percentile(run.rtts, 50) * 1000,
            "patch_rtt_p99_ms": percentile(run.rtts, 99) * 1000,
            "sender_late_ms": run.late * 1000,
            "server_cpu_s": process_cpu_seconds(self.server_pid) - server0,
        }


async def seed(client: Any, namespace: str, n: int) -> tuple[float, int, int]:
    """Create the namespace and N objects; returns (seconds, stored size, size without managedFields)."""
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    seconds = await create_objects(client, namespace, n)
    sample = await client.get(API_VERSION, KIND, object_name(0), namespace=namespace)
    full, lean = stored_size(sample)
    return seconds, full, lean


async def run_one(args: argparse.Namespace, n: int) -> JSON:
    from runtime.client import Client

    results: JSON = {"n": n, "impl": args.impl, "rate_seconds": args.rate_seconds}
    async with (
        workdir(args.keep) as tmp,
        ApiServer(tmp) as server,
        await Client.from_kubeconfig(server.kubeconfig) as client,
    ):
        namespace = "bench"
        create_s, full, lean = await seed(client, namespace, n)
        results.update(create_s=create_s, size_full=full, size_lean=lean)
        print(f"[N={n}] created {n} objects in {create_s:.1f}s ({n / create_s:.0f}/s); "
              f"one object: {lean} B JSON ({full} B with managedFields)", flush=True)  # fmt: skip
        argv = controller_argv(server.kubeconfig, n, args.impl, not args.no_delivery, args.profile, args.loop)
        if args.spy:
            # py-spy launches the child (attaching to a running process needs privileges it may lack).
            argv = [str(Path(sys.executable).with_name("py-spy")), "record", "--native", "--rate",
                    str(args.spy_rate), "--format", "raw", "--output", args.spy, "--", *argv]  # fmt: skip
        child = Child("controller", argv, tmp / "controller.log")
        await child.start()
        try:
            ready = await child.recv("ready", 120)
            results["loop"] = ready["loop"]
            synced = await child.call({"cmd": "start", "timeout": 300}, "synced", 330)
            initial = await child.recv("initial", 330)
            results.update(
                sync_s=synced["sync_s"],
                synced_objects=synced["objects"],
                initial_reconciled_s=initial["reconciled_s"],
                rss_delta_per_obj=(initial["rss_after"] - initial["rss_before"]) / n,
            )
            # The idle cost (timers, periodic metric updates) that every phase's CPU/event includes.
            idle0 = await child.call({"cmd": "usage"}, "usage", 30)
            await asyncio.sleep(3)  # allow-sleep: a fixed idle window to measure idle CPU over
            idle1 = await child.call({"cmd": "usage"}, "usage", 30)
            results["idle_cpu_ms_per_s"] = (idle1["cpu_s"] - idle0["cpu_s"]) / 3 * 1000
            phases = Phases(client, namespace, n, server.pid)
            burst = max(n, 5000)
            results["flood"] = await phases.flood(child, args.flood_count or burst, args.concurrency)
            results["rates"] = [await phases.at_rate(child, r, args.rate_seconds) for r in args.rate]
            count = args.drain_count or burst
            drains = [await phases.drain(child, count, args.concurrency) for _ in range(args.drain_rounds)]
            results["drains"] = drains
            results["drain"] = median_round(drains)
            # Peak RSS before the tracemalloc phase, whose own bookkeeping would inflate it.
            usage = await child.call({"cmd": "usage"}, "usage", 30)
            results["peak_rss"] = usage["peak_rss"]
            memory = await child.call({"cmd": "memory"}, "memory", 330)
            results["tracemalloc_per_obj"] = memory["tracemalloc_bytes"] / n
        finally:
            await child.stop()
    return results


def _row(label: str, value: str, note: str = "") -> None:
    print(f"  {label:<24} {value:>12}   {note}".rstrip())


def _mark(ok: bool, target: str) -> str:
    return f"[target {target}: {'ok' if ok else 'MISSED'}]"


def print_results(r: JSON) -> None:
    n = r["n"]
    fl, dr = r["flood"], r["drain"]
    what = f"{r['impl']} on {r['loop']}; one object is {r['size_lean']} B of JSON without managedFields"
    print(f"\n== N = {n:,} ({what}) ==")
    _row(
        "initial sync",
        f"{r['sync_s']:.3f} s",
        f"cache start -> synced holding {r['synced_objects']:,} objects",
    )
    if n >= 10_000:
        _row("", "", _mark(r["sync_s"] <= 3, "10,000 synced <= 3 s"))
    _row(
        "initial reconciles",
        f"{r['initial_reconciled_s']:.3f} s",
        f"cache start -> all {n:,} reconciled once",
    )
    _row(
        "offered (flood)",
        f"{fl['events_per_s']:.0f} ev/s",
        f"{fl['count']} patches answered at {fl['patch_rate']:.0f}/s; limited by the API server "
        f"(server CPU {fl['server_cpu_s']:.1f} s)",
    )
    for rt in r["rates"]:
        offered = rt["count"] / r["rate_seconds"]
        _row(
            f"latency @ {offered:.0f}/s offered",
            f"p99 {rt['p99_ms']:.1f} ms",
            f"p50 {rt['p50_ms']:.1f} ms, max {rt['max_ms']:.1f} ms; patch sent -> reconcile"
            + (f" {_mark(rt['p99_ms'] <= 25, 'p99 <= 25 ms')}" if offered >= 1000 else ""),
        )
        _row(
            "",
            "",
            f"patches answered at {rt['patch_rate']:.0f}/s (sender behind schedule by <= "
            f"{rt['sender_late_ms']:.0f} ms), round trip p50 {rt['patch_rtt_p50_ms']:.1f} / "
            f"p99 {rt['patch_rtt_p99_ms']:.1f} ms",
        )
        if rt["delivery_p50_ms"] == rt["delivery_p50_ms"]:  # not NaN: the split was measured
            _row(
                "",
                "",
                f"patch sent -> stored in the informer p50 {rt['delivery_p50_ms']:.1f} / p99 "
                f"{rt['delivery_p99_ms']:.1f} ms; stored -> reconciled p50 {rt['queueing_p50_ms']:.2f} / "
                f"p99 {rt['queueing_p99_ms']:.2f} ms",
            )
        _row(
            "",
            "",
            f"CPU/event {rt['cpu_per_event_ms']:.3f} ms ({rt['reconciles']} reconciles of "
            f"{rt['count']} events, {rt['sleeps'] / rt['count']:.2f} wake-ups per event; server CPU "
            f"{rt['server_cpu_s']:.1f} s)",
        )
    _row(
        "capacity (drain)",
        f"{dr['events_per_s']:.0f} ev/s",
        f"{dr['count']} queued events in {dr['seconds']:.3f} s, {dr['reconciles']} reconciles "
        + _mark(dr["events_per_s"] >= 5000, ">= 5,000"),
    )
    if len(r["drains"]) > 1:
        _row("", "", rounds_note(r["drains"]))
    _row(
        "CPU/event (drain)",
        f"{dr['cpu_per_event_ms']:.3f} ms",
        "controller process getrusage / events " + _mark(dr["cpu_per_event_ms"] <= 0.25, "<= 0.25 ms"),
    )
    _row(
        "capacity per CPU",
        f"{1000 / dr['cpu_per_event_ms']:.0f} ev/s",
        "1 / CPU per event: the drain rate with a whole core to itself (the machine is shared)",
    )
    _row(
        "memory/object",
        f"{r['tracemalloc_per_obj']:.0f} B",
        f"tracemalloc of a fresh Cache over {n:,} objects "
        + _mark(r["tracemalloc_per_obj"] <= 4096, "<= 4 KB"),
    )
    _row("", f"{r['rss_delta_per_obj']:.0f} B", "RSS growth from cache start to synced + reconciled, / N")
    _row("peak RSS", f"{r['peak_rss'] / 2**20:.1f} MiB", "ru_maxrss of the controller process")
    _row("idle CPU", f"{r['idle_cpu_ms_per_s']:.1f} ms/s", "controller process, synced, no events")
    sys.stdout.flush()


async def driver(args: argparse.Namespace) -> None:
    print(f"bench.runtime: impl={args.impl}, {os.cpu_count()} CPUs, {uptime()}", flush=True)
    all_results = []
    for n in args.n:
        r = await run_one(args, n)
        all_results.append(r)
        print_results(r)
    print(f"\nfinished: {uptime()}")
    if args.json:
        await asyncio.to_thread(Path(args.json).write_text, json.dumps(all_results, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=["driver", "controller"], default="driver")
    parser.add_argument("--impl", choices=IMPLS, default="runtime",
                        help="runtime: Cache + Controller; standin: a bare loop; reader, informer, bare: "
                        "parts of the runtime's path (bench/_stages.py)")  # fmt: skip
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--rate", type=float, nargs="+", default=[1000.0, 500.0, 200.0],
                        help="offered patches/s for the latency phases")  # fmt: skip
    parser.add_argument("--no-delivery", action="store_true",
                        help="no second informer handler timestamping event delivery")  # fmt: skip
    parser.add_argument("--delivery", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rate-seconds", type=float, default=5.0)
    parser.add_argument("--flood-count", type=int, default=0, help="default: max(N, 5000)")
    parser.add_argument("--drain-count", type=int, default=0, help="default: max(N, 5000)")
    parser.add_argument("--drain-rounds", type=int, default=3, help="drain phases; the median is reported")
    parser.add_argument("--concurrency", type=int, default=32, help="patches in flight in flood/drain")
    parser.add_argument("--loop", choices=LOOP_KINDS, default="auto",
                        help="the controller's event loop: uvloop if installed (auto)")  # fmt: skip
    parser.add_argument("--json", help="also write the raw figures here")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    parser.add_argument("--profile", metavar="PREFIX",
                        help="cProfile each phase of the controller into PREFIX.phaseN.txt")  # fmt: skip
    parser.add_argument("--spy", metavar="FILE",
                        help="sample the controller with py-spy (a dev tool: pip install py-spy), "
                        "native frames included, into FILE (raw collapsed stacks); see "
                        "bench.spy_breakdown")  # fmt: skip
    parser.add_argument("--spy-rate", type=int, default=1000, help="py-spy samples per second")
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "controller":
        args.n = args.n[0]
        run(controller_child(args), loop=args.loop)
    else:
        asyncio.run(driver(args))


if __name__ == "__main__":
    main()
