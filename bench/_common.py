"""Shared parts of the controller benchmarks: the API server process, the objects, the patchers.

Not part of the test run and not a library: :mod:`bench.runtime` and :mod:`bench.vs_kopf` use it.

Every process of a benchmark runs on loopback and ends by itself:

* the API server is ``cpo dev-apiserver`` in its own process (:class:`ApiServer`), stopped with
  SIGTERM (then SIGKILL after a deadline) when the ``async with`` block ends;
* each reconciling side is a child process speaking JSON lines (:class:`Child`): commands on its
  stdin, reports on its stdout, logs to a file. A child whose stdin closes exits, so a driver that
  dies takes its children with it.

The objects are a Machine-like custom resource (``bench.cpo.dev/v1`` ``Machine``, ~2 KB of JSON as
stored, without managedFields). Each patch sets three annotations: the phase, a sequence number and
``time.time()`` at the moment the patch is sent; the reconciler reads them back from the object it
sees, so "patch → reconcile" latency needs no other channel than the object itself (same host
clock). Patches in a phase go round-robin over the objects, so object ``j`` ends the phase with the
largest sequence ``i < count`` such that ``i % n == j``; a reconciler that has seen that final
value for every touched object has caught up (:class:`Tracker`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import resource
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.jsoncodec import JSON

GROUP = "bench.cpo.dev"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "Machine"
PLURAL = "machines"

PHASE = "bench.cpo.dev/phase"
SEQ = "bench.cpo.dev/seq"
STAMP = "bench.cpo.dev/stamp"

ROOT = Path(__file__).resolve().parent.parent


def copy_runtime_and_bench(tree: Path) -> None:
    """Copy ``runtime/`` and ``bench/`` (without bytecode) into ``tree``: the scratch copy that
    ``bench.lone_event`` instruments and ``bench.compiled`` compiles, run with ``PYTHONPATH=tree``."""
    for part in ("runtime", "bench"):
        shutil.copytree(ROOT / part, tree / part, ignore=shutil.ignore_patterns("__pycache__"))


def machine_crd() -> JSON:
    """A namespaced CRD without a status subresource, so ``status`` is stored on create."""
    loose = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"plural": PLURAL, "singular": "machine", "kind": KIND, "listKind": f"{KIND}List"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": loose, "status": loose},
                        }
                    },
                }
            ],
        },
    }


def object_name(index: int) -> str:
    return f"m-{index:05d}"


def object_index(name: str) -> int:
    return int(name[2:])


def machine(index: int, namespace: str) -> JSON:
    """One Machine-like object: labels, annotations, a providerSpec-like nested spec and a status."""
    zone = "abc"[index % 3]
    host = f"ip-10-0-{index // 250}-{index % 250}.ec2.internal"
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": object_name(index),
            "namespace": namespace,
            "labels": {
                "machine.openshift.io/cluster-api-cluster": "bench-7xk2q",
                "machine.openshift.io/cluster-api-machine-role": "worker",
                "machine.openshift.io/cluster-api-machine-type": "worker",
                "machine.openshift.io/cluster-api-machineset": f"bench-7xk2q-worker-us-east-1{zone}",
                "machine.openshift.io/instance-type": "m6i.xlarge",
                "machine.openshift.io/region": "us-east-1",
                "machine.openshift.io/zone": f"us-east-1{zone}",
            },
            "annotations": {
                "machine.openshift.io/instance-state": "running",
                PHASE: "0",
                SEQ: "0",
                STAMP: "0",
            },
        },
        "spec": {
            "providerID": f"aws:///us-east-1{zone}/i-0{index:016x}",
            "providerSpec": {
                "value": {
                    "apiVersion": "machine.openshift.io/v1beta1",
                    "kind": "AWSMachineProviderConfig",
                    "ami": {"id": "ami-0a1b2c3d4e5f60718"},
                    "instanceType": "m6i.xlarge",
                    "placement": {"region": "us-east-1", "availabilityZone": f"us-east-1{zone}"},
                    "subnet": {
                        "filters": [{"name": "tag:Name", "values": [f"bench-private-us-east-1{zone}"]}]
                    },
                    "securityGroups": [
                        {"filters": [{"name": "tag:Name", "values": ["bench-7xk2q-worker-sg"]}]},
                    ],
                    "blockDevices": [
                        {"ebs": {"volumeSize": 120, "volumeType": "gp3", "encrypted": True, "iops": 3000}}
                    ],
                    "iamInstanceProfile": {"id": "bench-7xk2q-worker-profile"},
                    "credentialsSecret": {"name": "aws-cloud-credentials"},
                    "userDataSecret": {"name": "worker-user-data"},
                    "tags": [{"name": "kubernetes.io/cluster/bench-7xk2q", "value": "owned"}],
                }
            },
        },
        "status": {
            "phase": "Running",
            "providerStatus": {"instanceId": f"i-0{index:016x}"},
            "nodeRef": {"kind": "Node", "name": host, "uid": f"5c9e{index:08x}-2f1d-4a57-9b8e-0c1d2e3f4a5b"},
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{index // 250}.{index % 250}"},
                {"type": "InternalDNS", "address": host},
                {"type": "Hostname", "address": host},
            ],
            "conditions": [
                {
                    "type": "InstanceExists",
                    "status": "True",
                    "reason": "InstanceProvisioned",
                    "message": "Instance is running",
                    "lastTransitionTime": "2026-11-24T06:00:00Z",
                }
            ],
        },
    }


def patch_body(phase: int, seq: int) -> JSON:
    return {"metadata": {"annotations": {PHASE: str(phase), SEQ: str(seq), STAMP: repr(time.time())}}}


def stored_size(obj: JSON) -> tuple[int, int]:
    """Compact JSON size of a stored object with and without ``metadata.managedFields``."""
    full = len(json.dumps(obj, separators=(",", ":")))
    lean = json.loads(json.dumps(obj))
    lean.get("metadata", {}).pop("managedFields", None)
    return full, len(json.dumps(lean, separators=(",", ":")))


# ------------------------------------------------------------------------------------ measurement


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def voluntary_switches() -> int:
    """Times this process went to sleep waiting (for the network, a timer): its wake-ups."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of another process, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def median_round(rounds: list[JSON], key: str = "cpu_per_event_ms") -> JSON:
    """The round whose ``key`` is the median (the middle one of an odd number of rounds)."""
    return sorted(rounds, key=lambda r: r[key])[len(rounds) // 2]


def rounds_note(rounds: list[JSON]) -> str:
    rates = " / ".join(f"{r['events_per_s']:.0f}" for r in rounds)
    cpus = " / ".join(f"{r['cpu_per_event_ms']:.3f}" for r in rounds)
    return f"{len(rounds)} rounds: {rates} ev/s; CPU/event {cpus} ms (the median round is shown)"


def uptime() -> str:
    with open("/proc/loadavg") as f:
        return "load average: " + ", ".join(f.read().split()[:3])


class Tracker:
    """What the reconciling side saw: initial sync, per-phase latencies, catch-up detection.

    ``observe(name, annotations)`` is the one call a reconciler (or a kopf handler) makes; it is
    cheap (a dict lookup, two int/float parses) so that it does not dominate a no-op reconcile.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.initial_left = n
        self.initial_seen = bytearray(n)
        self.initial_done = asyncio.Event()
        self.t_initial_done = 0.0
        self.calls = 0
        self.phase = ""
        self.flags = bytearray(0)
        self.count = 0
        self.remaining = 0
        self.reconciles = 0
        self.latencies: list[float] = []
        self.delivery: list[float] = []
        self.queueing: list[float] = []
        self.stored_at: dict[int, float] = {}
        self.done = asyncio.Event()
        self.t_done = 0.0
        self.cpu_armed = 0.0
        self.cpu_done = 0.0
        self.sleeps_armed = 0
        self.sleeps_done = 0
        self.t_armed = 0.0
        self.slow: list[tuple[float, float]] = []  # (latency, seconds since armed) above 10 ms
        self.profile_path: str | None = None
        self.profiler: Any = None
        # Garbage-collector pauses in this process: (generation, ms, seconds since armed).
        self.gc_pauses: list[tuple[int, float, float]] = []
        self.gc_count = 0  # collections of any generation since armed, and their summed pauses
        self.gc_total_s = 0.0
        self._gc_started = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        elif self.t_armed:
            pause = time.perf_counter() - self._gc_started
            self.gc_count += 1
            self.gc_total_s += pause
            if info["generation"] == 2 or pause > 0.002:
                self.gc_pauses.append((info["generation"], pause * 1000, time.time() - self.t_armed))

    def arm(self, phase: int, count: int) -> None:
        touched = min(count, self.n)
        self.phase = str(phase)
        self.count = count
        self.flags = bytearray(b"\x01") * touched + bytearray(self.n - touched)
        self.remaining = touched
        self.reconciles = 0
        self.latencies = []
        self.delivery = []
        self.queueing = []
        self.stored_at = {}
        self.done = asyncio.Event()
        if self.profile_path:
            import cProfile

            self.profiler = cProfile.Profile()
            self.profiler.enable()
        self.cpu_armed = cpu_seconds()
        self.sleeps_armed = voluntary_switches()
        self.t_armed = time.time()
        self.slow = []
        self.gc_pauses = []
        self.gc_count = 0
        self.gc_total_s = 0.0

    def final_seq(self, index: int) -> int:
        return index + self.n * ((self.count - 1 - index) // self.n)

    def observe(self, name: str, annotations: dict[str, str]) -> None:
        now = time.time()
        self.calls += 1
        index = object_index(name)
        if self.initial_left and not self.initial_seen[index]:
            self.initial_seen[index] = 1
            self.initial_left -= 1
            if not self.initial_left:
                self.t_initial_done = now
                self.initial_done.set()
        if annotations.get(PHASE) != self.phase:
            return
        self.reconciles += 1
        latency = now - float(annotations[STAMP])
        self.latencies.append(latency)
        if latency > 0.010:
            self.slow.append((latency, now - self.t_armed))
        stored = self.stored_at.pop(index, None)
        if stored is not None:
            self.queueing.append(now - stored)
        if self.flags[index] and int(annotations[SEQ]) >= self.final_seq(index):
            self.flags[index] = 0
            self.remaining -= 1
            if not self.remaining:
                self.t_done = now
                self.cpu_done = cpu_seconds()
                self.sleeps_done = voluntary_switches()
                self.done.set()
                if self.profiler is not None:
                    self._dump_profile()

    def _dump_profile(self) -> None:
        import io
        import pstats

        self.profiler.disable()
        out = io.StringIO()
        stats = pstats.Stats(self.profiler, stream=out)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)
        stats.sort_stats("ncalls").print_stats(60)
        with open(f"{self.profile_path}.phase{self.phase}.txt", "w") as f:
            f.write(out.getvalue())
        self.profiler = None

    def delivered(self, obj: JSON) -> None:
        """Optional: an event reached the informer (patch sent -> event decoded and stored)."""
        meta = obj["metadata"]
        annotations = meta.get("annotations") or {}
        if annotations.get(PHASE) == self.phase:
            now = time.time()
            self.delivery.append(now - float(annotations[STAMP]))
            # The first store since the last reconcile is what the reconcile will have waited for.
            self.stored_at.setdefault(object_index(meta["name"]), now)

    def phase_report(self) -> JSON:
        lat = self.latencies
        delivery = self.delivery
        return {
            "event": "phase",
            "phase": int(self.phase),
            "caught_up": self.done.is_set(),
            "t_done": self.t_done,
            "reconciles": self.reconciles,
            "cpu_s": (self.cpu_done if self.done.is_set() else cpu_seconds()) - self.cpu_armed,
            "sleeps": (self.sleeps_done if self.done.is_set() else voluntary_switches()) - self.sleeps_armed,
            "p50_ms": percentile(lat, 50) * 1000,
            "p99_ms": percentile(lat, 99) * 1000,
            "max_ms": max(lat) * 1000 if lat else float("nan"),
            "mean_ms": statistics.fmean(lat) * 1000 if lat else float("nan"),
            "slowest": [(round(lat * 1000, 1), round(at, 2)) for lat, at in sorted(self.slow)[-8:]],
            "gc_pauses": [(gen, round(ms, 1), round(at, 2)) for gen, ms, at in self.gc_pauses[-8:]],
            "gc_pause_ms": round(sum(ms for _, ms, _ in self.gc_pauses), 1),
            "gc_count": self.gc_count,
            "gc_total_ms": round(self.gc_total_s * 1000, 2),
            "t_armed": self.t_armed,
            "delivery_p50_ms": percentile(delivery, 50) * 1000,
            "delivery_p99_ms": percentile(delivery, 99) * 1000,
            "queueing_p50_ms": percentile(self.queueing, 50) * 1000,
            "queueing_p99_ms": percentile(self.queueing, 99) * 1000,
        }


# ------------------------------------------------------------------------------ child protocol


def emit(message: JSON) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def stdin_commands() -> AsyncIterator[JSON]:
    """Commands from the driver, one JSON object a line; ends when the driver closes our stdin."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        yield json.loads(line)


async def serve_commands(tracker: Tracker, extra: dict[str, Callable[[JSON], Awaitable[None]]]) -> None:
    """The command loop every child runs: ``arm``, ``report``, ``wait``, plus the child's own."""
    async for cmd in stdin_commands():
        op = cmd["cmd"]
        if op == "arm":
            tracker.arm(cmd["phase"], cmd["count"])
            emit({"event": "armed", "phase": cmd["phase"]})
        elif op == "wait":
            # Wait for the phase to be caught up (bounded), then report it.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(tracker.done.wait(), cmd["timeout"])
            emit(tracker.phase_report())
        elif op == "usage":
            emit({"event": "usage", "cpu_s": cpu_seconds(), "rss": rss_bytes(), "peak_rss": peak_rss_bytes()})
        elif op == "stop":
            return
        elif op in extra:
            await extra[op](cmd)
        else:
            emit({"event": "error", "message": f"unknown command {op!r}"})


class ChildError(RuntimeError):
    pass


@dataclass
class Child:
    """A reconciling child process driven over JSON lines."""

    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    proc: asyncio.subprocess.Process | None = None
    # The pid the child's "ready" message names: not proc.pid when a profiler launched it.
    reported_pid: int | None = None

    async def start(self) -> None:
        log = self.log_path.open("wb")
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
            env={**os.environ, "PYTHONPATH": str(ROOT), **self.env},
            cwd=self.cwd,
            limit=1 << 24,
        )
        log.close()

    @property
    def pid(self) -> int:
        """The measured process: the one that said "ready" (it may run under a profiler)."""
        assert self.proc is not None
        return self.reported_pid or self.proc.pid

    async def send(self, message: JSON) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        await self.proc.stdin.drain()

    async def recv(self, event: str, timeout: float) -> JSON:  # noqa: ASYNC109 -- a bounded wait
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChildError(f"{self.name}: no {event!r} within {timeout:.0f}s (log: {self.log_path})")
            try:
                line = await asyncio.wait_for(self.proc.stdout.readline(), left)
            except TimeoutError:
                continue
            if not line:
                raise ChildError(f"{self.name} exited before {event!r} (log: {self.log_path})")
            if not line.startswith(b"{"):
                continue  # a profiler's own lines (py-spy prints to the same stdout)
            message: JSON = json.loads(line)
            if message.get("event") == "error":
                raise ChildError(f"{self.name}: {message.get('message')} (log: {self.log_path})")
            if message.get("event") == "ready" and isinstance(message.get("pid"), int):
                self.reported_pid = message["pid"]
            if message.get("event") == event:
                return message

    async def call(self, message: JSON, event: str, timeout: float) -> JSON:  # noqa: ASYNC109
        await self.send(message)
        return await self.recv(event, timeout)

    async def stop(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGCONT)  # in case it was left stopped
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await self.send({"cmd": "stop"})
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 20)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


# ------------------------------------------------------------------------------------ API server


def _server_path() -> list[str]:
    extra = os.environ.get("BENCH_SERVER_PYTHONPATH")
    return [extra] if extra else []


class ApiServer:
    """``cpo dev-apiserver`` in its own process, with the Machine CRD installed before it is ready."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.kubeconfig = workdir / "kubeconfig"
        self.proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> ApiServer:
        crd_path = self.workdir / "machine-crd.json"
        crd_path.write_text(json.dumps(machine_crd()))
        log = (self.workdir / "apiserver.log").open("wb")
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "cli",
            "--log-level",
            "WARNING",
            "dev-apiserver",
            "--kubeconfig-out",
            str(self.kubeconfig),
            "--crd",
            str(crd_path),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            # BENCH_SERVER_PYTHONPATH puts more on the server's path, e.g. a sitecustomize.py that
            # logs its garbage-collector pauses (how the 100/s latency stalls were traced to it).
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *_server_path()])},
        )
        log.close()
        deadline = time.monotonic() + 90
        while not self.kubeconfig.exists():
            if self.proc.returncode is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the API server did not start: see {self.workdir / 'apiserver.log'}")
            await asyncio.sleep(0.05)  # allow-sleep: poll interval while the server starts
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def __aexit__(self, *exc: object) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        self.proc.terminate()
        try:
            await asyncio.wait_for(self.proc.wait(), 20)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


@contextlib.asynccontextmanager
async def workdir(keep: bool) -> AsyncIterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cpo-bench-"))
    try:
        yield path
    finally:
        if not keep:
            await asyncio.to_thread(shutil.rmtree, path, True)
        else:
            print(f"work directory (logs) kept: {path}")


# ------------------------------------------------------------------------------------- patching


@dataclass
class PatchRun:
    """What the driver saw while patching."""

    count: int
    t_first: float  # time.time() when the first patch was sent
    t_last_ack: float  # time.time() when the last answer arrived
    rtts: list[float]
    late: float = 0.0  # seconds the rate-limited sender fell behind its schedule at most

    @property
    def seconds(self) -> float:
        return self.t_last_ack - self.t_first

    @property
    def achieved_rate(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else float("nan")


async def send_patch(client: Any, namespace: str, n: int, phase: int, seq: int) -> None:
    await client.patch(API_VERSION, KIND, object_name(seq % n), patch_body(phase, seq), namespace=namespace)


async def create_objects(client: Any, namespace: str, n: int, concurrency: int = 32) -> float:
    """Create ``n`` Machines with ``concurrency`` requests in flight; returns the seconds it took."""
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        while next_index < n:
            index = next_index
            next_index += 1
            await client.create(machine(index, namespace))

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


async def patch_flood(
    client: Any, namespace: str, n: int, phase: int, count: int, concurrency: int
) -> PatchRun:
    """Patch as fast as the server answers, ``concurrency`` requests in flight, round-robin."""
    next_seq = 0
    rtts: list[float] = []

    async def worker() -> None:
        nonlocal next_seq
        while next_seq < count:
            seq = next_seq
            next_seq += 1
            sent = time.perf_counter()
            await client.patch(
                API_VERSION, KIND, object_name(seq % n), patch_body(phase, seq), namespace=namespace
            )
            rtts.append(time.perf_counter() - sent)

    t_first = time.time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return PatchRun(count, t_first, time.time(), rtts)


async def patch_at_rate(
    client: Any, namespace: str, n: int, phase: int, count: int, rate: float, max_in_flight: int = 256
) -> PatchRun:
    """Send patch ``i`` at ``start + i / rate`` (an open-loop load), at most ``max_in_flight`` at once."""
    rtts: list[float] = []
    slots = asyncio.Semaphore(max_in_flight)
    tasks: set[asyncio.Task[None]] = set()
    late = 0.0

    async def one(seq: int) -> None:
        try:
            sent = time.perf_counter()
            await client.patch(
                API_VERSION, KIND, object_name(seq % n), patch_body(phase, seq), namespace=namespace
            )
            rtts.append(time.perf_counter() - sent)
        finally:
            slots.release()

    t_first = time.time()
    start = time.perf_counter()
    for seq in range(count):
        delay = start + seq / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)  # allow-sleep: the open-loop schedule of the offered load
        else:
            late = max(late, -delay)
        await slots.acquire()
        task = asyncio.create_task(one(seq))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    while tasks:
        await asyncio.gather(*list(tasks))
    return PatchRun(count, t_first, time.time(), rtts, late)


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"
