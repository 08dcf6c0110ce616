"""One operator, many control planes: what each ControlPlane costs as their number grows.

Not part of the test run. For each N of ``--controlplanes`` it starts a world of its own (the
embedded API server, ``cpo localmachine`` serving every namespace in its default mode, one
``cpo run`` with its webhooks; :class:`demo.world.DemoWorld`), creates N ControlPlanes of
``--replicas`` local machines at once, each in a namespace of its own with its own etcd cluster of
real members, and measures:

* **bootstrap**: from creating all N to all N settled (every member a voter, every Machine
  Running, ``Available=True``), against N = 1;
* **settled cost** over ``--settle-seconds`` once everything is settled: the operator's CPU
  seconds per minute (``/proc/<pid>/stat``), per ControlPlane; its RSS (``VmRSS``); API writes per
  minute, the operator's own (its ``rest_client_requests_total``) and everyone's as the server
  counted them (``apiserver_request_total``: the provider's Node heartbeats are in there); etcd
  requests per minute per ControlPlane (``cpo_etcd_client_requests_total``) and TCP connections
  opened per minute; the TCP connections the operator holds to the members' client ports
  (``/proc/<pid>/fd`` against ``/proc/<pid>/net/tcp``), sampled every second;
* **reconciles**: latency p50/p99 per controller from ``controller_runtime_reconcile_time_seconds``
  over the whole run, reconciles per minute per controller while settled, the largest
  ``workqueue_depth`` seen at any scrape;
* **rollout**: a template change of the first ControlPlane while the other N − 1 sit still; its
  wall time until every Machine is a new one and settled, against N = 1.

Run::

    .venv/bin/python -m bench.fleet --controlplanes 1,2,4 [--replicas 3] [--settle-seconds 60] \\
        [--json fleet.json]

It prints one table (one row per N) and writes the figures as JSON. The provider's heartbeat is
its default (10 s, the kubelet's node status period) unless ``--heartbeat`` says otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import math
import os
import ssl
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from prometheus_client.parser import text_string_to_metric_families

from api.controlplane import API_VERSION as CP_API_VERSION
from api.machine import API_VERSION as MACHINE_API_VERSION
from bench._common import process_cpu_seconds, uptime
from controllers.etcd.client import EtcdClient, EtcdClientOptions, EtcdError
from demo.world import DemoWorld
from providers.localmachine import ETCD_CLIENT_URL_ANNOTATION
from runtime.client import Client

NAME = "cluster"
REVISION = "bench.cpo.dev/revision"
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
POLL = 0.5
QUIET = 5.0
"""Seconds between "all settled" and the start of the settled window, by default: the last status
writes and the etcd-quorum-hook's post-promotion passes land outside it."""

Samples = dict[str, list[tuple[dict[str, str], float]]]


# ------------------------------------------------------------------------------------- the world


@dataclass
class FleetWorld(DemoWorld):
    """The demo's world with the provider serving every namespace (one per ControlPlane)."""

    provider_all_namespaces: bool = True

    def operator_pid(self) -> int:
        process = self.child("operator").process
        assert process is not None
        return process.pid


def controlplane(namespace: str, replicas: int, revision: str) -> dict[str, Any]:
    """A ControlPlane of ``replicas`` local machines over three failure domains, OpenShift's health check."""
    return {
        "apiVersion": CP_API_VERSION,
        "kind": "ControlPlane",
        "metadata": {"name": NAME, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {
                    "labels": {"machine.openshift.io/cluster-api-machine-role": "master"},
                    "annotations": {REVISION: revision},
                },
                "spec": {
                    "providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "revision": revision}}
                },
            },
            "failureDomains": [
                {"name": zone, "providerSpec": {"value": {"failureDomain": zone}}}
                for zone in ("zone-a", "zone-b", "zone-c")
            ],
            "healthCheck": {
                "unhealthyConditions": [
                    {"type": "Ready", "status": "False", "timeout": "30s"},
                    {"type": "Ready", "status": "Unknown", "timeout": "30s"},
                ],
                "nodeStartupTimeout": "5m",
            },
        },
    }


def condition(obj: Mapping[str, Any], kind: str) -> str | None:
    for item in (obj.get("status") or {}).get("conditions") or ():
        if item.get("type") == kind:
            return str(item.get("status"))
    return None


async def settled(client: Client, namespace: str, replicas: int, revision: str) -> str | None:
    """None when the ControlPlane of ``namespace`` is settled at ``revision``; else what is missing."""
    cp = await client.get(CP_API_VERSION, "ControlPlane", NAME, namespace)
    machines = (await client.list(MACHINE_API_VERSION, "Machine", namespace))["items"]
    if len(machines) != replicas:
        return f"{len(machines)} Machines"
    for machine in machines:
        meta = machine["metadata"]
        if meta.get("deletionTimestamp"):
            return f"{meta['name']} deleting"
        if machine["spec"]["providerSpec"]["value"].get("revision") != revision:
            return f"{meta['name']} not at revision {revision}"
        if (machine.get("status") or {}).get("phase") != "Running":
            return f"{meta['name']} not Running"
    if condition(cp, "Available") != "True":
        return "Available is not True"
    status = cp.get("status") or {}
    if status.get("observedGeneration") != cp["metadata"].get("generation"):
        return "status not observed"
    urls = [
        u for m in machines if (u := (m["metadata"].get("annotations") or {}).get(ETCD_CLIENT_URL_ANNOTATION))
    ]
    if len(urls) != replicas:
        return "members without a client URL"
    try:
        async with EtcdClient(urls, EtcdClientOptions(timeout=2.0)) as etcd:
            members = await etcd.member_list()
    except EtcdError as err:
        return f"etcd: {err}"
    voters = sum(1 for m in members if not m.is_learner and m.started)
    if voters != replicas or len(members) != replicas:
        return f"{voters} voters of {len(members)} members"
    return None


async def wait_all_settled(
    client: Client, namespaces: list[str], replicas: int, revision: str, budget: float, on_poll: Any
) -> None:
    deadline = time.monotonic() + budget
    pending = list(namespaces)
    while pending:
        missing = {ns: await settled(client, ns, replicas, revision) for ns in pending}
        pending = [ns for ns, why in missing.items() if why is not None]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"not settled within {budget:g}s: {missing}")
        await on_poll()
        await asyncio.sleep(POLL)  # allow-sleep: the poll period of a deadline loop


# ------------------------------------------------------------------------------------- metrics


async def scrape(http: aiohttp.ClientSession, url: str, headers: Mapping[str, str] | None = None) -> Samples:
    async with http.get(url, headers=headers) as response:
        response.raise_for_status()
        text = await response.text()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return samples


def total(samples: Samples, name: str, **match: Any) -> float:
    """Sum of ``name``'s samples whose labels match (a value, or a tuple of allowed values)."""
    found = 0.0
    for labels, value in samples.get(name, ()):
        if all(labels.get(k) in (v if isinstance(v, tuple) else (v,)) for k, v in match.items()):
            found += value
    return found


def by_label(samples: Samples, name: str, label: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for labels, value in samples.get(name, ()):
        found[labels.get(label, "")] = found.get(labels.get(label, ""), 0.0) + value
    return found


def histogram_quantile(samples: Samples, name: str, controller: str, q: float) -> float:
    """The ``q`` quantile (0..1) of histogram ``name`` for ``controller``, as PromQL's does."""
    buckets = sorted(
        (math.inf if labels["le"] in ("+Inf", "inf") else float(labels["le"]), value)
        for labels, value in samples.get(f"{name}_bucket", ())
        if labels.get("controller") == controller
    )
    if not buckets or buckets[-1][1] == 0:
        return float("nan")
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower
            return lower + (bound - lower) * ((rank - below) / (count - below) if count > below else 0.0)
        lower, below = bound, count
    return lower


def rss_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def held_connections(pid: int, ports: set[int]) -> int:
    """TCP connections ``pid`` holds open (any state but TIME_WAIT/CLOSE) to one of ``ports``."""
    inodes: set[str] = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    held = 0
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/net/{table}") as f:
            next(f)
            for line in f:
                fields = line.split()
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                if fields[9] in inodes and remote_port in ports and fields[3] not in ("06", "07"):
                    held += 1
    return held


async def member_ports(client: Client, namespaces: list[str]) -> set[int]:
    ports: set[int] = set()
    for namespace in namespaces:
        for machine in (await client.list(MACHINE_API_VERSION, "Machine", namespace))["items"]:
            url = (machine["metadata"].get("annotations") or {}).get(ETCD_CLIENT_URL_ANNOTATION)
            if url:
                ports.add(int(url.rsplit(":", 1)[1]))
    return ports


def api_access(kubeconfig: Path) -> tuple[str, dict[str, str], ssl.SSLContext]:
    """The API server's URL, the admin's Authorization header and a TLS context trusting its CA."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    context = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
    )
    return cluster["server"], {"Authorization": f"Bearer {config['users'][0]['user']['token']}"}, context


# ------------------------------------------------------------------------------------- one N


@dataclass
class Figures:
    """Everything measured for one N (one row of the table, one object of the JSON)."""

    controlplanes: int
    replicas: int
    bootstrap_s: float = 0.0
    settle_window_s: float = 0.0
    cpu_s_per_min: float = 0.0
    cpu_s_per_min_per_cp: float = 0.0
    rss_mib: float = 0.0
    operator_writes_per_min: float = 0.0
    operator_writes_by_method: dict[str, float] = field(default_factory=dict)
    api_writes_per_min: float = 0.0
    api_writes_by_resource: dict[str, float] = field(default_factory=dict)
    etcd_requests_per_min_per_cp: float = 0.0
    etcd_requests_by_controller_method: dict[str, float] = field(default_factory=dict)
    etcd_connections_opened_per_min: float = 0.0
    etcd_connections_held_max: int = 0
    etcd_connections_held_mean: float = 0.0
    reconciles_per_min: dict[str, float] = field(default_factory=dict)
    reconcile_p50_ms: dict[str, float] = field(default_factory=dict)
    reconcile_p99_ms: dict[str, float] = field(default_factory=dict)
    workqueue_depth_max: dict[str, float] = field(default_factory=dict)
    rollout_s: float | None = None
    load: str = ""


async def measure(
    n: int, replicas: int, settle_seconds: float, heartbeat: float, rollout: bool, keep: bool, quiet: float
) -> Figures:
    figures = Figures(n, replicas)
    directory = Path(tempfile.mkdtemp(prefix=f"cpo-fleet-{n}-"))
    world = FleetWorld(directory, namespace="fleet-000", heartbeat_period=heartbeat)
    namespaces = [f"fleet-{index:03d}" for index in range(n)]
    depth_max: dict[str, float] = {}
    try:
        await world.start(lambda what: print(f"  N={n}: {what}", file=sys.stderr))
        pid = world.operator_pid()
        operator_metrics = f"http://127.0.0.1:{world.metrics_port}/metrics"
        server, auth, tls = api_access(world.kubeconfig_path)
        async with (
            await Client.from_kubeconfig(str(world.kubeconfig_path)) as client,
            aiohttp.ClientSession() as http,
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=tls)) as api_http,
        ):

            async def note_depth() -> Samples:
                samples = await scrape(http, operator_metrics)
                for labels, value in samples.get("workqueue_depth", ()):
                    name = labels.get("name", "")
                    depth_max[name] = max(depth_max.get(name, 0.0), value)
                return samples

            last_depth = 0.0

            async def every_two_seconds() -> None:
                nonlocal last_depth
                if time.monotonic() - last_depth >= 2.0:
                    last_depth = time.monotonic()
                    await note_depth()

            for namespace in namespaces[1:]:
                await client.create(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
                )
            started = time.monotonic()
            await asyncio.gather(*(client.create(controlplane(ns, replicas, "1")) for ns in namespaces))
            await wait_all_settled(client, namespaces, replicas, "1", 120 + 90 * n, every_two_seconds)
            figures.bootstrap_s = time.monotonic() - started
            print(f"  N={n}: all settled after {figures.bootstrap_s:.1f} s", file=sys.stderr)
            await asyncio.sleep(quiet)  # allow-sleep: the last passes after settling land outside the window
            ports = await member_ports(client, namespaces)

            before_operator = await note_depth()
            before_api = await scrape(api_http, f"{server}/metrics", auth)
            cpu_before = process_cpu_seconds(pid)
            window_started = time.monotonic()
            held: list[int] = []
            while time.monotonic() - window_started < settle_seconds:
                held.append(held_connections(pid, ports))
                await asyncio.sleep(1.0)  # allow-sleep: the sampling period of the held connections
            cpu_after = process_cpu_seconds(pid)
            window = time.monotonic() - window_started
            after_operator = await note_depth()
            after_api = await scrape(api_http, f"{server}/metrics", auth)
            figures.load = uptime()
            figures.rss_mib = rss_of(pid) / 2**20
            per_min = 60.0 / window
            figures.settle_window_s = window
            figures.cpu_s_per_min = (cpu_after - cpu_before) * per_min
            figures.cpu_s_per_min_per_cp = figures.cpu_s_per_min / n

            def delta_by(
                name: str, label: str, before: Samples, after: Samples, **match: Any
            ) -> dict[str, float]:
                found: dict[str, float] = {}
                for labels, value in after.get(name, ()):
                    if not all(
                        labels.get(k) in (v if isinstance(v, tuple) else (v,)) for k, v in match.items()
                    ):
                        continue
                    key = "/".join(labels.get(part, "") for part in label.split(","))
                    prior = sum(v for lb, v in before.get(name, ()) if lb == labels)
                    if value - prior:
                        found[key] = found.get(key, 0.0) + (value - prior) * per_min
                return found

            figures.operator_writes_by_method = delta_by(
                "rest_client_requests_total", "method", before_operator, after_operator, method=WRITE_METHODS
            )
            figures.operator_writes_per_min = sum(figures.operator_writes_by_method.values())
            writes = ("POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION")
            figures.api_writes_by_resource = delta_by(
                "apiserver_request_total", "verb,resource,subresource", before_api, after_api, verb=writes
            )
            figures.api_writes_per_min = sum(figures.api_writes_by_resource.values())
            figures.etcd_requests_by_controller_method = delta_by(
                "cpo_etcd_client_requests_total", "controller,method,result", before_operator, after_operator
            )
            figures.etcd_requests_per_min_per_cp = (
                sum(figures.etcd_requests_by_controller_method.values()) / n
            )
            figures.etcd_connections_opened_per_min = sum(
                delta_by(
                    "cpo_etcd_client_connections_opened_total", "controller", before_operator, after_operator
                ).values()
            )
            figures.etcd_connections_held_max = max(held, default=0)
            figures.etcd_connections_held_mean = sum(held) / len(held) if held else 0.0
            figures.reconciles_per_min = delta_by(
                "controller_runtime_reconcile_total", "controller", before_operator, after_operator
            )

            if rollout:
                started = time.monotonic()
                await client.patch(
                    CP_API_VERSION,
                    "ControlPlane",
                    NAME,
                    {"spec": controlplane(namespaces[0], replicas, "2")["spec"]},
                    namespaces[0],
                )
                await wait_all_settled(client, namespaces[:1], replicas, "2", 600, every_two_seconds)
                figures.rollout_s = time.monotonic() - started
                print(f"  N={n}: rollout of {namespaces[0]} took {figures.rollout_s:.1f} s", file=sys.stderr)

            final = await note_depth()
            for controller in sorted(
                by_label(final, "controller_runtime_reconcile_time_seconds_count", "controller")
            ):
                figures.reconcile_p50_ms[controller] = (
                    histogram_quantile(final, "controller_runtime_reconcile_time_seconds", controller, 0.5)
                    * 1000
                )
                figures.reconcile_p99_ms[controller] = (
                    histogram_quantile(final, "controller_runtime_reconcile_time_seconds", controller, 0.99)
                    * 1000
                )
            figures.workqueue_depth_max = dict(sorted(depth_max.items()))
    finally:
        await world.stop()
        if keep:
            print(f"  N={n}: work directory kept: {directory}", file=sys.stderr)
        else:
            await asyncio.to_thread(_remove, directory)
    return figures


def _remove(directory: Path) -> None:
    import shutil

    shutil.rmtree(directory, ignore_errors=True)


# ------------------------------------------------------------------------------------- report


def table(rows: list[Figures]) -> str:
    base = rows[0]

    def ratio(value: float | None, reference: float | None) -> str:
        if value is None or not reference:
            return "-"
        return f"{value / reference:.2f}×"

    header = (
        "| N | bootstrap s (×N=1) | CPU s/min | CPU s/min per CP (×N=1) | RSS MiB | operator writes/min "
        "| API writes/min | etcd req/min per CP | etcd conns opened/min | conns held max | rollout s (×N=1) |"
    )
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for row in rows:
        cpu = row.cpu_s_per_min_per_cp
        rollout = f"{row.rollout_s:.1f} ({ratio(row.rollout_s, base.rollout_s)})" if row.rollout_s else "-"
        cells = [
            str(row.controlplanes),
            f"{row.bootstrap_s:.1f} ({ratio(row.bootstrap_s, base.bootstrap_s)})",
            f"{row.cpu_s_per_min:.2f}",
            f"{cpu:.2f} ({ratio(cpu, base.cpu_s_per_min_per_cp)})",
            f"{row.rss_mib:.1f}",
            f"{row.operator_writes_per_min:.1f}",
            f"{row.api_writes_per_min:.1f}",
            f"{row.etcd_requests_per_min_per_cp:.1f}",
            f"{row.etcd_connections_opened_per_min:.1f}",
            str(row.etcd_connections_held_max),
            rollout,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "reconcile latency p50 / p99 ms, reconciles/min while settled, max workqueue depth, by controller:"
    )
    for row in rows:
        parts = [
            f"{c} {row.reconcile_p50_ms[c]:.0f}/{row.reconcile_p99_ms[c]:.0f} ms, "
            f"{row.reconciles_per_min.get(c, 0.0):.1f}/min, depth ≤ {row.workqueue_depth_max.get(c, 0):.0f}"
            for c in row.reconcile_p50_ms
        ]
        lines.append(f"  N={row.controlplanes}: " + "; ".join(parts))
    lines.append("etcd requests/min while settled, by controller/method/result:")
    for row in rows:
        parts = [f"{k} {v:.1f}" for k, v in sorted(row.etcd_requests_by_controller_method.items())]
        lines.append(f"  N={row.controlplanes}: " + ", ".join(parts))
    lines.append(
        "API writes/min while settled (everyone, as the server counted), by verb/resource/subresource:"
    )
    for row in rows:
        parts = [f"{k} {v:.1f}" for k, v in sorted(row.api_writes_by_resource.items())]
        lines.append(f"  N={row.controlplanes}: " + (", ".join(parts) or "none"))
    return "\n".join(lines)


def plot(rows: list[Figures], path: Path, earlier: list[Figures] | None = None) -> None:
    """Cost per ControlPlane against N: CPU, etcd requests, etcd connections opened, RSS; the rows of
    an ``earlier`` run (another version of the operator) dashed beside them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def panels(of: list[Figures]) -> list[tuple[str, list[float]]]:
        return [
            ("operator CPU s/min per ControlPlane", [row.cpu_s_per_min_per_cp for row in of]),
            ("etcd requests/min per ControlPlane", [row.etcd_requests_per_min_per_cp for row in of]),
            (
                "etcd connections opened/min per ControlPlane",
                [row.etcd_connections_opened_per_min / row.controlplanes for row in of],
            ),
            ("operator RSS (MiB)", [row.rss_mib for row in of]),
        ]

    ns = [row.controlplanes for row in rows]
    figure, axes = plt.subplots(1, 4, figsize=(14, 3.4))
    for axis, (title, values) in zip(axes, panels(rows), strict=True):
        axis.plot(ns, values, marker="o", label="this run")
        axis.set_title(title, fontsize=9)
        axis.set_xlabel("ControlPlanes (N)")
        axis.set_xticks(ns)
        axis.grid(alpha=0.3)
    if earlier:
        before = [row.controlplanes for row in earlier]
        for axis, (_, values) in zip(axes, panels(earlier), strict=True):
            axis.plot(before, values, marker="x", linestyle="--", color="grey", label="earlier run")
        axes[2].legend(fontsize=8)
    for axis in axes:
        axis.set_ylim(bottom=0)
    figure.suptitle(f"One operator, N ControlPlanes of {rows[0].replicas} etcd members each (settled)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


async def main_async(args: argparse.Namespace) -> list[Figures]:
    rows: list[Figures] = []
    for n in args.controlplanes:
        rows.append(
            await measure(
                n,
                args.replicas,
                args.settle_seconds,
                args.heartbeat,
                not args.no_rollout,
                args.keep,
                args.quiet_seconds,
            )
        )
        if args.json:
            text = json.dumps([asdict(row) for row in rows], indent=2)
            await asyncio.to_thread(Path(args.json).write_text, text)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--controlplanes",
        type=lambda text: [int(part) for part in text.split(",") if part],
        default=[1, 2, 4, 8],
        help="the numbers of ControlPlanes to measure, comma-separated (default: 1,2,4,8)",
    )
    parser.add_argument("--replicas", type=int, default=3, help="Machines of each ControlPlane (default: 3)")
    parser.add_argument(
        "--settle-seconds", type=float, default=60.0, help="length of the settled window (default: 60)"
    )
    parser.add_argument(
        "--heartbeat", type=float, default=10.0, help="the provider's Node heartbeat period (default: 10)"
    )
    parser.add_argument(
        "--quiet-seconds",
        type=float,
        default=QUIET,
        help="seconds between all settled and the settled window (default: %(default)s)",
    )
    parser.add_argument("--no-rollout", action="store_true", help="skip the rolling update")
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep each world's directory (logs)")
    parser.add_argument(
        "--plot", metavar="PATH", help="draw the cost per ControlPlane against N as a PNG here"
    )
    parser.add_argument(
        "--compare", metavar="JSON", help="with --plot: draw the rows of an earlier --json file beside these"
    )
    parser.add_argument(
        "--render", metavar="JSON", help="measure nothing: print the table (and --plot) of a --json file"
    )
    args = parser.parse_args(argv)
    if args.render:
        rows = [Figures(**row) for row in json.loads(Path(args.render).read_text())]
    else:
        rows = asyncio.run(main_async(args))
        print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {uptime()}")
    print(table(rows))
    if args.plot:
        earlier = (
            [Figures(**row) for row in json.loads(Path(args.compare).read_text())] if args.compare else None
        )
        plot(rows, Path(args.plot), earlier)
    return 0


if __name__ == "__main__":
    sys.exit(main())
