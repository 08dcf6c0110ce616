"""Helpers for the etcd-quorum-hook tests: ControlPlanes, control-plane Machines, the controller in a
manager of this process (:func:`running_quorum_controller`) or ``cpo run`` as a child process
(:func:`start_operator`), a recorder of what happens to each Machine's hook and existence
(:class:`MachineTimeline`), and the ControlPlane's Events in the order they were recorded.

The ControlPlanes made here are ``paused`` with autorepair off, so that where a ControlPlane
controller runs too (``cpo run``) it creates and deletes nothing behind the test's back; the
etcd-quorum-hook controller protects etcd whether or not a ControlPlane is paused.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane import CONDITION_ETCD_CLUSTER_HEALTHY, MASTER_ROLE_LABEL
from api.machine import API_VERSION
from controllers.etcdquorum import HOOK_NAME, EtcdQuorumOptions, setup_with_manager
from providers.localmachine import ETCD_CLIENT_URL_ANNOTATION, PROVIDER_SPEC_KIND
from runtime.client import JSON, Client
from runtime.controller import ControllerOptions
from runtime.manager import Manager
from tests.support.localmachine import get_machine, machine
from tests.support.manager import running_manager
from tests.support.poll import eventually
from tests.support.processes import ChildProcess, cpo, start_process

ROLE_LABELS = {MASTER_ROLE_LABEL: "master"}


def controlplane(
    name: str, namespace: str, replicas: int, *, external: bool = False, domains: tuple[str, ...] = ()
) -> JSON:
    """A paused ControlPlane (see the module docstring) selecting the master-role Machines; each of
    ``domains`` a failure domain whose providerSpec sets ``failureDomain`` (as :func:`cp_machine`'s
    ``zone`` does)."""
    spec: JSON = {
        "replicas": replicas,
        "paused": True,
        "enableAutorepair": False,
        "selector": {"matchLabels": dict(ROLE_LABELS)},
        "template": {
            "metadata": {"labels": dict(ROLE_LABELS)},
            "spec": {"providerSpec": {"value": {"kind": PROVIDER_SPEC_KIND}}},
        },
    }
    if external:
        spec["etcd"] = {"external": True}
    if domains:
        spec["failureDomains"] = [
            {"name": domain, "providerSpec": {"value": {"failureDomain": domain}}} for domain in domains
        ]
    return {
        "apiVersion": CP_API_VERSION,
        "kind": "ControlPlane",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def cp_machine(name: str, namespace: str, *, zone: str = "zone-a") -> JSON:
    """A local-provider Machine with the master role label (the operator caches only those)."""
    obj = machine(name, namespace, zone=zone)
    obj["metadata"]["labels"] = dict(ROLE_LABELS)
    return obj


def quick_options(**overrides: Any) -> EtcdQuorumOptions:
    """Quick timings for tests: passes every 0.3 s, membership changes 0.5 s apart, waits reported
    after 1 s."""
    values: dict[str, Any] = {
        "resync_period": 1.0,
        "busy_period": 0.3,
        "abandoned_learner_grace": 1.0,
        "wait_event_after": 1.0,
        "etcd_timeout": 2.0,
        "member_change_interval": 0.5,
        "controller": ControllerOptions(skip_name_validation=True),
    }
    values.update(overrides)
    return EtcdQuorumOptions(**values)


@contextlib.asynccontextmanager
async def running_quorum_controller(
    client: Client, namespace: str, options: EtcdQuorumOptions
) -> AsyncIterator[Manager]:
    """The etcd-quorum-hook controller in a manager of this process, with the operator's cache
    scope (control-plane Machines only) narrowed to ``namespace``."""
    async with running_manager(
        client, namespace, lambda manager: setup_with_manager(manager, options)
    ) as manager:
        yield manager


def hook_owner(obj: JSON | None) -> str | None:
    """Owner of the Machine's preDrain hook named EtcdQuorumOperator; None without one."""
    hooks = (((obj or {}).get("spec") or {}).get("lifecycleHooks") or {}).get("preDrain") or []
    return next((str(h.get("owner")) for h in hooks if h.get("name") == HOOK_NAME), None)


async def client_url(client: Client, name: str, namespace: str) -> str:
    """The etcd client URL of a provisioned Machine."""

    async def read() -> str | None:
        obj = await get_machine(client, name, namespace)
        return ((obj or {}).get("metadata", {}).get("annotations") or {}).get(ETCD_CLIENT_URL_ANNOTATION)

    url: str = await eventually(read, timeout=60, message=f"{name} provisioned")
    return url


async def etcd_condition(client: Client, name: str, namespace: str) -> JSON:
    cp = await client.get(CP_API_VERSION, "ControlPlane", name, namespace)
    for condition in (cp.get("status") or {}).get("conditions") or ():
        if condition.get("type") == CONDITION_ETCD_CLUSTER_HEALTHY:
            return dict(condition)
    return {}


async def events_for(client: Client, namespace: str, kind: str, name: str) -> list[JSON]:
    listed = await client.list("v1", "Event", namespace)
    return [
        e
        for e in listed["items"]
        if e.get("involvedObject", {}).get("kind") == kind and e.get("involvedObject", {}).get("name") == name
    ]


async def has_event(client: Client, namespace: str, kind: str, name: str, reason: str) -> JSON | None:
    return next(
        (e for e in await events_for(client, namespace, kind, name) if e.get("reason") == reason), None
    )


async def event_recorded(
    client: Client, namespace: str, kind: str, name: str, reason: str, *, within: float = 10
) -> JSON:
    """The first Event with ``reason`` about the object, waited for: the recorder writes an Event
    after the change it reports, so a test that saw the change may not see the Event yet."""
    event: JSON = await eventually(
        lambda: has_event(client, namespace, kind, name, reason),
        timeout=within,
        message=f"a {reason} event about {kind} {name}",
    )
    return event


async def cp_events_in_order(client: Client, namespace: str, name: str) -> list[JSON]:
    """The Events about ControlPlane ``name`` in the order they were recorded: an Event is named
    ``<object>.<hex nanoseconds>`` (client-go's naming, kept by the runtime's recorder)."""
    events = await events_for(client, namespace, "ControlPlane", name)
    return sorted(events, key=lambda e: int(e["metadata"]["name"].rsplit(".", 1)[1], 16))


@dataclass
class MachineTimeline:
    """When (monotonic seconds) each Machine first got the hook, lost it, and disappeared."""

    hook_added: dict[str, float] = field(default_factory=dict)
    hook_removed: dict[str, float] = field(default_factory=dict)
    gone: dict[str, float] = field(default_factory=dict)

    async def record(self, client: Client, namespace: str) -> None:
        """Follow the Machines of ``namespace`` until cancelled."""
        async for event in client.watch(API_VERSION, "Machine", namespace, timeout_seconds=600):
            obj = event.get("object") or {}
            name = (obj.get("metadata") or {}).get("name")
            if not name:
                continue
            now = time.monotonic()
            if event.get("type") == "DELETED":
                self.gone.setdefault(name, now)
            elif hook_owner(obj) is not None:
                self.hook_added.setdefault(name, now)
            elif name in self.hook_added:
                self.hook_removed.setdefault(name, now)


@contextlib.asynccontextmanager
async def machine_timeline(client: Client, namespace: str) -> AsyncIterator[MachineTimeline]:
    timeline = MachineTimeline()
    task = asyncio.create_task(timeline.record(client, namespace))
    try:
        yield timeline
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def start_operator(kubeconfig: Path, log_path: Path) -> ChildProcess:
    """Start ``python -m cli run`` (controllers only, no webhooks, kernel-picked ports)."""
    argv = cpo(
        "run",
        "--kubeconfig",
        str(kubeconfig),
        "--no-webhooks",
        "--metrics-bind-address",
        "127.0.0.1:0",
        "--health-probe-bind-address",
        "0",
        "--log-format",
        "json",
    )
    return await start_process(argv, log_path=log_path)
