"""Helpers for the ``localmachine`` provider tests: Machines, an in-process provider, state-dir tracking.

Every state directory a test gives a provider is registered with :func:`track_state_dir`. Members
started by a provider in *another* process (``cpo localmachine`` as a subprocess) are not in
:func:`providers.localmachine.etcd_process.spawned_processes`, so the session-end leak check of
``tests/conftest.py`` also reads the state files of every tracked directory
(:func:`tracked_processes`).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from api.machine import API_VERSION
from providers.localmachine import (
    FAULT_ANNOTATION,
    PROVIDER_SPEC_KIND,
    LocalMachineOptions,
    setup_with_manager,
)
from providers.localmachine.etcd_process import EtcdProcessOptions, ProcessIdentity, recorded_processes
from runtime.client import Client
from runtime.controller import ControllerOptions
from runtime.errors import NotFound
from runtime.jsoncodec import JSON
from runtime.manager import Manager
from tests.support.manager import running_manager
from tests.support.poll import eventually

REPO = Path(__file__).resolve().parents[2]
CRD_DIRS = (REPO / "config" / "crd", REPO / "config" / "machine-api")
"""The project's CRDs: the ControlPlane's, and the Machine API component's (the tests' clusters have
no Machine API of their own)."""
HEARTBEAT = 0.4
"""Heartbeat period of the test providers (seconds)."""

_TRACKED: list[Path] = []


def track_state_dir(state_dir: Path) -> Path:
    """Register ``state_dir`` for the session-end leak check; returns it."""
    _TRACKED.append(state_dir)
    return state_dir


def tracked_processes() -> list[ProcessIdentity]:
    """Live etcd processes recorded under every tracked state directory."""
    return [process for state_dir in _TRACKED for process in recorded_processes(state_dir)]


async def kill_recorded(state_dir: Path) -> None:
    """SIGKILL every live process recorded under ``state_dir`` and wait until they are gone."""
    processes = recorded_processes(state_dir)
    for process in processes:
        process.signal(signal.SIGKILL)
    await eventually(
        lambda: not any(process.alive() for process in processes),
        timeout=10,
        message="recorded etcd processes gone",
    )


def machine(
    name: str,
    namespace: str,
    *,
    zone: str | None = "zone-a",
    annotations: dict[str, str] | None = None,
    pre_drain: list[str] | None = None,
    pre_terminate: list[str] | None = None,
    faults: list[str] | None = None,
) -> JSON:
    value: JSON = {"kind": PROVIDER_SPEC_KIND}
    if zone is not None:
        value["failureDomain"] = zone
    if faults is not None:
        value["faults"] = faults
    spec: JSON = {"providerSpec": {"value": value}}
    hooks: JSON = {}
    if pre_drain:
        hooks["preDrain"] = [{"name": hook, "owner": "tests/localmachine"} for hook in pre_drain]
    if pre_terminate:
        hooks["preTerminate"] = [{"name": hook, "owner": "tests/localmachine"} for hook in pre_terminate]
    if hooks:
        spec["lifecycleHooks"] = hooks
    metadata: JSON = {"name": name, "namespace": namespace}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": API_VERSION, "kind": "Machine", "metadata": metadata, "spec": spec}


async def get_machine(client: Client, name: str, namespace: str) -> JSON | None:
    try:
        return await client.get(API_VERSION, "Machine", name, namespace)
    except NotFound:
        return None


async def get_node(client: Client, name: str) -> JSON | None:
    try:
        return await client.get("v1", "Node", name)
    except NotFound:
        return None


def ready_condition(node: JSON | None) -> JSON:
    for condition in ((node or {}).get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return dict(condition)
    return {}


def machine_condition(obj: JSON | None, type_: str) -> JSON:
    for condition in ((obj or {}).get("status") or {}).get("conditions") or ():
        if condition.get("type") == type_:
            return dict(condition)
    return {}


def provider_options(state_dir: Path, **overrides: Any) -> LocalMachineOptions:
    options = LocalMachineOptions(
        state_dir=state_dir,
        heartbeat_period=HEARTBEAT,
        # Generous: a health read slowed down by a busy test machine must not flap the Node.
        health_timeout=1.0,
        stop_grace_period=3.0,
        join_backoff_initial=0.1,
        join_backoff_max=0.5,
        etcd=EtcdProcessOptions(),
        controller=ControllerOptions(skip_name_validation=True),
    )
    for field, value in overrides.items():
        setattr(options, field, value)
    return options


@contextlib.asynccontextmanager
async def running_provider(
    client: Client, namespace: str, options: LocalMachineOptions
) -> AsyncIterator[Manager]:
    """The provider in a manager of this process, watching ``namespace`` only, until the block ends."""
    async with running_manager(
        client, namespace, lambda manager: setup_with_manager(manager, options), operator_scope=False
    ) as manager:
        yield manager


async def set_fault(client: Client, name: str, namespace: str, fault: str | None) -> None:
    """Set the local provider's fault annotation on Machine ``name`` (``None`` clears it)."""
    await client.patch(
        API_VERSION, "Machine", name, {"metadata": {"annotations": {FAULT_ANNOTATION: fault}}}, namespace
    )


def internal_ip(obj: JSON) -> str:
    """A Machine's or Node's first InternalIP address."""
    return str(next(a["address"] for a in obj["status"]["addresses"] if a["type"] == "InternalIP"))


async def running(client: Client, name: str, namespace: str) -> JSON:
    """Wait until Machine ``name`` is ``Running`` with a Ready Node, and return it."""

    async def check() -> JSON | None:
        machine = await get_machine(client, name, namespace)
        if machine is None or (machine.get("status") or {}).get("phase") != "Running":
            return None
        node = await get_node(client, machine["status"]["nodeRef"]["name"])
        return machine if ready_condition(node).get("status") == "True" else None

    found: JSON = await eventually(check, timeout=60, message=f"{name} Running with a Ready Node")
    return found
