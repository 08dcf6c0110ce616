"""Wall time of a 3-replica rolling update on the local provider, split into its phases.

Not part of the test run. Starts the embedded API server, the local provider (real etcd
members), the ControlPlane controller and the etcd-quorum-hook controller in one process, scales a
ControlPlane to 3, changes its template and times the rolling update (maxSurge 1) until the three
replacements are the only Machines, up to date and available. Run::

    .venv/bin/python -m bench.rollout [--heartbeat 0.4] [--member-change-interval 0.5] [--runs 1]

For each replacement it records, from a watch on the Machines and a 20 ms poll of etcd:

==================  ========================================================  ================
phase               from → to                                                  who
==================  ========================================================  ================
decide create       previous Machine gone (or template change) → new Machine  controller
provision           new Machine created → its member started as a learner      provider
learner catch-up    learner started → its applied index reaches the leader's  etcd
promotion           caught up → voter                                          hook controller
ready               → the new Machine Running with a Ready Node (if later)     provider
decide delete       new Machine voter and Running → old Machine deleted        controller
member removal      old Machine deleted → its member gone                      hook controller
hook removal        member gone → preDrain hook removed                        hook controller
delete              hook removed → old Machine gone                            provider
==================  ========================================================  ================

The controller's own overhead is the sum of the two "decide" phases: time in which no step was
waiting on etcd or the provider. API writes are every POST/PUT/PATCH/DELETE any component of
the process sent (Events included), per replaced Machine. The target: the rollout takes at most
1.5 × the sum of the three (provision + learner catch-up) times.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from api.controlplane import API_VERSION as CP_API_VERSION
from api.machine import API_VERSION
from apiserver import EmbeddedServerOptions
from controllers.cache_scope import operator_cache_options
from controllers.controlplane import ControlPlaneOptions
from controllers.controlplane import setup_with_manager as setup_controlplane
from controllers.etcd.client import EtcdClient, EtcdClientOptions, EtcdError
from controllers.etcdquorum import EtcdQuorumOptions
from controllers.etcdquorum import setup_with_manager as setup_hooks
from providers.localmachine import ETCD_CLIENT_URL_ANNOTATION, PROVIDER_SPEC_KIND, LocalMachineOptions
from providers.localmachine import setup_with_manager as setup_provider
from runtime.cache import CacheOptions
from runtime.client import JSON, Client
from runtime.controller import ControllerOptions
from runtime.envtest import Environment, EnvironmentOptions
from runtime.manager import Manager, ManagerOptions
from runtime.metrics import registry

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "bench-rollout"
NAME = "cluster"
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
HOOK = "EtcdQuorumOperator"
QUIET_PERIOD = 6.0


@dataclass
class Times:
    """Monotonic timestamps of one Machine's life, as the recorders saw them."""

    created: float | None = None
    learner: float | None = None
    caught_up: float | None = None
    voter: float | None = None
    running: float | None = None
    deleting: float | None = None
    member_gone: float | None = None
    hook_gone: float | None = None
    gone: float | None = None


@dataclass
class Recorder:
    machines: dict[str, Times] = field(default_factory=dict)

    def at(self, name: str) -> Times:
        return self.machines.setdefault(name, Times())


def _set(times: Times, attr: str, now: float) -> None:
    if getattr(times, attr) is None:
        setattr(times, attr, now)


async def watch_machines(client: Client, recorder: Recorder) -> None:
    async for event in client.watch(API_VERSION, "Machine", NAMESPACE, timeout_seconds=3600):
        now = time.monotonic()
        obj = event.get("object") or {}
        metadata = obj.get("metadata") or {}
        times = recorder.at(metadata.get("name", "?"))
        if event.get("type") == "DELETED":
            _set(times, "gone", now)
            continue
        _set(times, "created", now)
        if (obj.get("status") or {}).get("phase") == "Running":
            _set(times, "running", now)
        if metadata.get("deletionTimestamp"):
            _set(times, "deleting", now)
            hooks = ((obj.get("spec") or {}).get("lifecycleHooks") or {}).get("preDrain") or []
            if not any(hook.get("name") == HOOK for hook in hooks):
                _set(times, "hook_gone", now)


async def poll_etcd(client: Client, recorder: Recorder) -> None:
    options = EtcdClientOptions(timeout=1.0)
    seen: set[str] = set()
    while True:
        machines = (await client.list(API_VERSION, "Machine", NAMESPACE))["items"]
        urls = [
            u
            for m in machines
            if (u := (m["metadata"].get("annotations") or {}).get(ETCD_CLIENT_URL_ANNOTATION))
        ]
        if urls:
            async with EtcdClient(urls, options) as etcd:
                with contextlib.suppress(EtcdError):
                    members = await etcd.member_list()
                    now = time.monotonic()
                    names = {m.name for m in members if m.name}
                    for gone in seen - names:
                        _set(recorder.at(gone), "member_gone", now)
                    seen |= names
                    leader_index = 0
                    for member in members:
                        if not member.is_learner and member.client_urls:
                            with contextlib.suppress(EtcdError):
                                status = await etcd.endpoint_status(member.client_urls[0])
                                if status.is_leader:
                                    leader_index = status.raft_index
                    for member in members:
                        if not member.name:
                            continue
                        times = recorder.at(member.name)
                        if member.is_learner:
                            _set(times, "learner", now)
                            if member.client_urls and leader_index:
                                with contextlib.suppress(EtcdError):
                                    status = await etcd.endpoint_status(member.client_urls[0])
                                    if status.raft_applied_index >= leader_index:
                                        _set(times, "caught_up", time.monotonic())
                        else:
                            _set(times, "learner", now)
                            _set(times, "caught_up", now)
                            _set(times, "voter", now)
        await asyncio.sleep(0.02)  # allow-sleep: the poll period of the recorder


def api_writes() -> float:
    total = 0.0
    for metric in registry.collect():
        if metric.name != "rest_client_requests":
            continue
        for sample in metric.samples:
            if sample.name.endswith("_total") and sample.labels.get("method") in WRITE_METHODS:
                total += sample.value
    return total


def controlplane(replicas: int, revision: str) -> JSON:
    return {
        "replicas": replicas,
        "template": {
            "metadata": {
                "labels": {"machine.openshift.io/cluster-api-machine-role": "master"},
                "annotations": {"bench.cpo.dev/revision": revision},
            },
            "spec": {"providerSpec": {"value": {"kind": PROVIDER_SPEC_KIND, "revision": revision}}},
        },
        "failureDomains": [
            {"name": z, "providerSpec": {"value": {"failureDomain": z}}}
            for z in ("zone-a", "zone-b", "zone-c")
        ],
    }


async def settled(client: Client, replicas: int, revision: str) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        cp = await client.get(CP_API_VERSION, "ControlPlane", NAME, NAMESPACE)
        status = cp.get("status") or {}
        machines = (await client.list(API_VERSION, "Machine", NAMESPACE))["items"]
        if (
            status.get("availableReplicas") == replicas
            and status.get("updatedReplicas") == replicas
            and status.get("observedGeneration") == cp["metadata"]["generation"]
            and len(machines) == replicas
            and all(m["spec"]["providerSpec"]["value"].get("revision") == revision for m in machines)
        ):
            return
        await asyncio.sleep(0.02)  # allow-sleep: the poll period of a deadline loop
    raise SystemExit("the rollout did not finish within 300 s")


async def one_run(heartbeat: float, member_change_interval: float) -> dict[str, Any]:
    async with Environment(EnvironmentOptions(embedded=EmbeddedServerOptions())) as env:
        await env.install_crds([ROOT / "config" / "crd", ROOT / "config" / "machine-api"])
        await env.create_namespace(NAMESPACE)
        async with (
            await Client.from_kubeconfig(env.kubeconfig) as client,
            contextlib.AsyncExitStack() as stack,
        ):
            state_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cpo-rollout-")))
            manager = Manager(
                ManagerOptions(
                    client=client,
                    metrics_bind_address="0",
                    health_probe_bind_address="0",
                    cache_options=CacheOptions(
                        namespace=NAMESPACE, by_object=operator_cache_options().by_object
                    ),
                )
            )
            quick = ControllerOptions(skip_name_validation=True)
            setup_provider(
                manager,
                LocalMachineOptions(
                    state_dir=state_dir,
                    heartbeat_period=heartbeat,
                    health_timeout=1.0,
                    stop_grace_period=3.0,
                    join_backoff_initial=0.1,
                    join_backoff_max=0.5,
                    controller=quick,
                ),
            )
            setup_controlplane(
                manager,
                ControlPlaneOptions(
                    preflight_backoff_initial=0.2,
                    preflight_backoff_max=1.0,
                    wait_period=0.2,
                    resync_period=1.0,
                    etcd=EtcdClientOptions(timeout=1.0),
                    controller=quick,
                    etcd_quorum_hook_runs=True,
                ),
            )
            setup_hooks(
                manager,
                EtcdQuorumOptions(
                    resync_period=1.0,
                    busy_period=0.2,
                    wait_event_after=1.0,
                    member_change_interval=member_change_interval,
                    controller=quick,
                ),
            )
            stop = asyncio.Event()
            task = asyncio.create_task(manager.start(stop))
            try:
                await client.create(
                    {
                        "apiVersion": CP_API_VERSION,
                        "kind": "ControlPlane",
                        "metadata": {"name": NAME, "namespace": NAMESPACE},
                        "spec": controlplane(3, "1"),
                    }
                )
                await settled(client, 3, "1")
                recorder = Recorder()
                recorders = [
                    asyncio.create_task(watch_machines(client, recorder)),
                    asyncio.create_task(poll_etcd(client, recorder)),
                ]
                # A quiet cluster, as before a real rollout: etcd refuses membership changes for
                # 5 s after a member starts or is promoted, and the scale-out just did both.
                await asyncio.sleep(QUIET_PERIOD)  # allow-sleep: a quiet cluster to start from
                old = sorted(recorder.machines)
                writes_before = api_writes()
                started = time.monotonic()
                await client.patch(
                    CP_API_VERSION, "ControlPlane", NAME, {"spec": controlplane(3, "2")}, NAMESPACE
                )
                await settled(client, 3, "2")
                wall = time.monotonic() - started
                writes = api_writes() - writes_before
                await asyncio.sleep(0.2)  # allow-sleep: the last events reach the recorders
                for recording in recorders:
                    recording.cancel()
                events = (await client.list("v1", "Event", NAMESPACE))["items"]
                waits = sorted(
                    {
                        f"{e['reason']}: {e['message']}"
                        for e in events
                        if e.get("type") == "Warning" or "failed" in e.get("message", "")
                    }
                )
            finally:
                stop.set()
                await task
    result = analyse(recorder, old, started, wall, writes)
    result["waits"] = waits
    return result


def analyse(recorder: Recorder, old: list[str], started: float, wall: float, writes: float) -> dict[str, Any]:
    new = sorted(
        (name for name, t in recorder.machines.items() if name not in old and t.created is not None),
        key=lambda name: recorder.machines[name].created or 0.0,
    )
    olds = sorted(old, key=lambda name: recorder.machines[name].deleting or float("inf"))
    phases: dict[str, list[float]] = {}

    def add(phase: str, start: float | None, end: float | None) -> None:
        if start is not None and end is not None:
            phases.setdefault(phase, []).append(max(0.0, end - start))

    previous_gone = started
    for new_name, old_name in zip(new, olds, strict=False):
        n, o = recorder.machines[new_name], recorder.machines[old_name]
        add("decide create", previous_gone, n.created)
        add("provision", n.created, n.learner)
        add("learner catch-up", n.learner, n.caught_up)
        add("promotion", n.caught_up, n.voter)
        ready_at = max(n.voter or 0.0, n.running or 0.0)
        add("ready", n.voter, ready_at)
        add("decide delete", ready_at, o.deleting)
        add("member removal", o.deleting, o.member_gone)
        add("hook removal", o.member_gone, o.hook_gone)
        add("delete", o.hook_gone, o.gone)
        previous_gone = o.gone or previous_gone
    base = sum(phases.get("provision", [])) + sum(phases.get("learner catch-up", []))
    overhead = sum(phases.get("decide create", [])) + sum(phases.get("decide delete", []))
    return {
        "wall": wall,
        "phases": phases,
        "overhead": overhead,
        "writes_per_machine": writes / max(len(new), 1),
        "target": 1.5 * base,
        "replaced": len(new),
    }


def report(runs: list[dict[str, Any]]) -> None:
    names = [
        "decide create",
        "provision",
        "learner catch-up",
        "promotion",
        "ready",
        "decide delete",
        "member removal",
        "hook removal",
        "delete",
    ]
    print(f"{'phase':18} {'per replacement (s)':>30}  {'sum, median run (s)':>20}")
    for phase in names:
        values = [run["phases"].get(phase, []) for run in runs]
        per = " ".join(f"{v:.2f}" for v in values[len(values) // 2])
        total = statistics.median(sum(v) for v in values)
        print(f"{phase:18} {per:>30}  {total:20.2f}")
    wall = statistics.median(run["wall"] for run in runs)
    target = statistics.median(run["target"] for run in runs)
    print(
        f"rollout wall time {wall:.2f} s (target ≤ {target:.2f} s: {'met' if wall <= target else 'MISSED'})"
    )
    print(f"controller overhead {statistics.median(run['overhead'] for run in runs):.2f} s")
    print(
        f"API writes per replaced Machine {statistics.median(run['writes_per_machine'] for run in runs):.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--heartbeat", type=float, default=0.4, help="provider heartbeat period (s)")
    parser.add_argument(
        "--member-change-interval",
        type=float,
        default=0.5,
        help="the hook controller's pause between two membership changes (s); the test suite's "
        "0.5 by default, `cpo run` uses 2",
    )
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    runs = [asyncio.run(one_run(args.heartbeat, args.member_change_interval)) for _ in range(args.runs)]
    report(runs)


if __name__ == "__main__":
    sys.exit(main())
