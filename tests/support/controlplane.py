"""Helpers for the ControlPlane controller tests: its controllers and the local provider in one manager.

:func:`running_controlplane` starts, in this process, a manager scoped to the test's namespace
(with the operator's control-plane label selectors on Machines and Nodes) that runs the
``localmachine`` provider, the ControlPlane controller and, when ``hooks`` is true, the
etcd-quorum-hook controller, with short periods so that a scaling step takes about a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Collection, Sequence
from typing import Any

from api.controlplane import API_VERSION as CP_API_VERSION
from api.machine import API_VERSION, CONDITION_UP_TO_DATE
from controllers.controlplane import ControlPlaneOptions
from controllers.controlplane import setup_with_manager as setup_controlplane
from controllers.etcd.client import EtcdClientOptions
from controllers.etcdquorum import setup_with_manager as setup_hooks
from controllers.etcdquorum.rules import DEFAULT_HOOK, Hook
from controllers.machinehealthcheck import MachineHealthCheckOptions
from controllers.machinehealthcheck import setup_with_manager as setup_health_checks
from providers.localmachine import PROVIDER_SPEC_KIND, LocalMachineOptions
from providers.localmachine import setup_with_manager as setup_provider
from runtime.client import JSON, Client
from runtime.controller import ControllerOptions
from runtime.errors import NotFound
from runtime.manager import Manager
from tests.support.etcdquorum import quick_options
from tests.support.localmachine import machine_condition
from tests.support.manager import Setup, running_manager
from tests.support.poll import eventually

CONTROLPLANE_COLUMNS = [
    "NAME",
    "DESIRED",
    "CURRENT",
    "READY",
    "UPDATED",
    "AVAILABLE",
    "UNAVAILABLE",
    "STATE",
    "PHASE",
    "AGE",
]
"""The header of ``kubectl get cp``: the CRD's printer columns (CPMS's)."""

MASTER_LABELS = {"machine.openshift.io/cluster-api-machine-role": "master"}


def controlplane_options(**overrides: Any) -> ControlPlaneOptions:
    """Test timings: quick preflight backoff, waits and resyncs."""
    options = ControlPlaneOptions(
        preflight_backoff_initial=0.2,
        preflight_backoff_max=1.0,
        wait_period=0.2,
        resync_period=1.0,
        etcd=EtcdClientOptions(timeout=1.0),
        controller=ControllerOptions(skip_name_validation=True),
    )
    for name, value in overrides.items():
        setattr(options, name, value)
    return options


def with_hook_controller(options: ControlPlaneOptions | None, hooks: bool) -> ControlPlaneOptions:
    """``options`` (or the test timings) told whether the etcd-quorum-hook controller runs beside,
    unless they say so themselves: a release removes the default hook only while it does."""
    chosen = options or controlplane_options()
    if chosen.etcd_quorum_hook_runs is None:
        chosen = dataclasses.replace(chosen, etcd_quorum_hook_runs=hooks)
    return chosen


def controlplane(
    name: str,
    namespace: str,
    *,
    replicas: int = 1,
    domains: list[str] | None = None,
    **spec: Any,
) -> JSON:
    """A ControlPlane of local machines; each domain sets ``providerSpec.value.failureDomain``."""
    body: JSON = {
        "replicas": replicas,
        "template": {
            "metadata": {"labels": dict(MASTER_LABELS)},
            "spec": {"providerSpec": {"value": {"kind": PROVIDER_SPEC_KIND}}},
        },
    }
    if domains:
        body["failureDomains"] = [
            {"name": domain, "providerSpec": {"value": {"failureDomain": domain}}} for domain in domains
        ]
    body.update(spec)
    return {
        "apiVersion": CP_API_VERSION,
        "kind": "ControlPlane",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


@contextlib.asynccontextmanager
async def running_controlplane(
    client: Client,
    namespace: str,
    provider: LocalMachineOptions,
    *,
    options: ControlPlaneOptions | None = None,
    hooks: bool = False,
    health_checks: bool = False,
) -> AsyncIterator[Manager]:
    """The provider and the ControlPlane controller (and the hook controller, and the
    MachineHealthCheck controller) until the block ends."""
    setups: list[Setup] = [
        lambda manager: setup_provider(manager, provider),
        lambda manager: setup_controlplane(manager, with_hook_controller(options, hooks)),
    ]
    if hooks:
        setups.append(lambda manager: setup_hooks(manager, quick_options()))
    if health_checks:
        # Several tests of one process run it, each with its own manager.
        setups.append(
            lambda manager: setup_health_checks(
                manager, MachineHealthCheckOptions(controller=ControllerOptions(skip_name_validation=True))
            )
        )
    async with running_manager(client, namespace, *setups) as manager:
        yield manager


async def get_cp(client: Client, name: str, namespace: str) -> JSON | None:
    try:
        return await client.get(CP_API_VERSION, "ControlPlane", name, namespace)
    except NotFound:
        return None


async def machines_of(client: Client, namespace: str) -> list[JSON]:
    """Every Machine of the namespace, sorted by name."""
    listed = await client.list(API_VERSION, "Machine", namespace)
    return sorted(listed["items"], key=lambda m: m["metadata"]["name"])


def owned_by(machine: JSON, cp: JSON) -> bool:
    return any(
        ref.get("uid") == cp["metadata"]["uid"] and ref.get("controller")
        for ref in machine["metadata"].get("ownerReferences") or ()
    )


def our_hooks(machine: JSON, hook: Hook = DEFAULT_HOOK) -> list[JSON]:
    """The etcd-quorum-hook controller's preDrain hook ``hook`` (by default the default one) on
    ``machine``, if there."""
    hooks = ((machine.get("spec") or {}).get("lifecycleHooks") or {}).get("preDrain") or []
    return [h for h in hooks if (h.get("name"), h.get("owner")) == (hook.name, hook.owner)]


def cp_condition(cp: JSON | None, type_: str) -> JSON:
    for condition in ((cp or {}).get("status") or {}).get("conditions") or ():
        if condition.get("type") == type_:
            return dict(condition)
    return {}


async def events_for(client: Client, namespace: str, name: str) -> list[JSON]:
    listed = await client.list("v1", "Event", namespace)
    return [e for e in listed["items"] if (e.get("involvedObject") or {}).get("name") == name]


class MachineCount:
    """Polls the namespace's Machines every 0.1 s in the background and records the most seen at
    once; a watch records the order in which Machines were deleted."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.peak = 0
        self.deleting_peak = 0
        """The most Machines seen being deleted at once."""
        self.not_deleting_peak = 0
        """The most Machines seen at once that were not being deleted."""
        self.other_events: list[Any] = []
        self.deleted: list[str] = []
        """Machines in the order their deletion was first seen."""
        self.history: list[tuple[str, ...]] = []
        self._tasks: list[asyncio.Task[None]] = []

    async def _run(self) -> None:
        while True:
            await self._sample()
            await asyncio.sleep(0.1)  # allow-sleep: the poll period of a background recorder

    async def _sample(self) -> None:
        machines = await machines_of(self.client, self.namespace)
        names = tuple(m["metadata"]["name"] for m in machines)
        self.peak = max(self.peak, len(names))
        deleting = sum(1 for m in machines if m["metadata"].get("deletionTimestamp"))
        self.deleting_peak = max(self.deleting_peak, deleting)
        self.not_deleting_peak = max(self.not_deleting_peak, len(names) - deleting)
        if not self.history or self.history[-1] != names:
            self.history.append(names)

    async def _watch(self) -> None:
        # A watch, not the poll: a Machine can be deleted and gone between two polls.
        live: set[str] = set()
        deleting: set[str] = set()
        async for event in self.client.watch(API_VERSION, "Machine", self.namespace, timeout_seconds=600):
            metadata = (event.get("object") or {}).get("metadata") or {}
            name = metadata.get("name")
            if event.get("type") not in ("ADDED", "MODIFIED", "DELETED") or not name:
                self.other_events.append(event.get("type"))
                continue
            if event.get("type") == "DELETED":
                live.discard(name)
                deleting.discard(name)
            else:
                live.add(name)
                if metadata.get("deletionTimestamp"):
                    deleting.add(name)
            gone = event.get("type") == "DELETED" or metadata.get("deletionTimestamp")
            if gone and name not in self.deleted:
                self.deleted.append(name)
            self.peak = max(self.peak, len(live))
            self.deleting_peak = max(self.deleting_peak, len(deleting))

    async def __aenter__(self) -> MachineCount:
        self._tasks = [asyncio.create_task(self._run()), asyncio.create_task(self._watch())]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        # One last look: what the test has just seen (say, the second Machine) may not have
        # reached the poller yet, nor the watch on a loaded machine. Not after a failure, which
        # this must not hide.
        if not exc or exc[0] is None:
            await self._sample()


async def settled(client: Client, name: str, namespace: str, replicas: int, *, within: float = 60) -> JSON:
    """Wait until the ControlPlane has exactly ``replicas`` Machines, all updated and available, Running."""

    async def check() -> JSON | None:
        cp = await get_cp(client, name, namespace)
        status = (cp or {}).get("status") or {}
        if cp is None or status.get("observedGeneration") != cp["metadata"].get("generation"):
            return None
        counts = [
            status.get(k) for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")
        ]
        if counts != [replicas] * 4 or status.get("phase") != "Running":
            return None
        return cp if len(await machines_of(client, namespace)) == replicas else None

    try:
        result: JSON = await eventually(
            check, timeout=within, message=f"{replicas} up-to-date available replica(s)"
        )
    except AssertionError as err:
        cp = await get_cp(client, name, namespace)
        machines = [
            (
                m["metadata"]["name"],
                (m.get("status") or {}).get("phase"),
                m["metadata"].get("deletionTimestamp"),
            )
            for m in await machines_of(client, namespace)
        ]
        raise AssertionError(f"{err}; status {(cp or {}).get('status')}; machines {machines}") from None
    return result


async def first_client_url(client: Client, namespace: str) -> str:
    """The etcd client URL of some provisioned Machine of the namespace (for a QuorumMonitor)."""
    from providers.localmachine import ETCD_CLIENT_URL_ANNOTATION

    async def url() -> str | None:
        for machine in await machines_of(client, namespace):
            found = (machine["metadata"].get("annotations") or {}).get(ETCD_CLIENT_URL_ANNOTATION)
            if found:
                return str(found)
        return None

    result: str = await eventually(url, timeout=30, message="a provisioned Machine")
    return result


def replaced_or_outdated(machines: Sequence[JSON], names: Collection[str]) -> list[str]:
    """What keeps ``machines`` from being exactly ``names``, none being deleted, each with its
    ``UpToDate`` condition True (empty: nothing). Not ``updatedReplicas``: it also counts readiness,
    which a Node NotReady for a moment on a loaded machine lowers while nothing is replaced."""
    found = sorted(m["metadata"]["name"] for m in machines)
    problems = [f"Machines {found}, not {sorted(names)}"] if set(found) != set(names) else []
    for machine in machines:
        name = machine["metadata"]["name"]
        if machine["metadata"].get("deletionTimestamp"):
            problems.append(f"{name} being deleted")
        up_to_date = machine_condition(machine, CONDITION_UP_TO_DATE)
        if up_to_date.get("status") != "True":
            problems.append(f"{name} outdated: {up_to_date}")
    return problems
