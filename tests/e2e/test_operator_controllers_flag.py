"""`cpo run --controllers`: the operator runs only the controllers it is told to, as a user runs it.

Each run is a real ``python -m cli run`` process against the test API server. What a disabled
controller would have written is checked for a few seconds after the process has shown, through
what an enabled controller wrote, that its manager runs and its caches are synced; the other run
is the positive control (each run enables what the other disables).
"""

from __future__ import annotations

from pathlib import Path

from api.machine import API_VERSION as MACHINE_API_VERSION
from controllers.etcdquorum import HOOK_NAME
from runtime.client import JSON, Client
from tests.support.poll import eventually, holds_for
from tests.support.processes import (
    START_WITHIN,
    cpo_run_controllers_only,
    running_process,
    start_process,
)

CP = "controlplane.cpo.dev/v1alpha1"
ROLE_LABEL = "machine.openshift.io/cluster-api-machine-role"
QUIET_FOR = 5.0
"""Seconds a disabled controller's write must stay absent once the enabled ones have acted."""


async def _machine(client: Client, name: str, namespace: str) -> JSON:
    return await client.get(MACHINE_API_VERSION, "Machine", name, namespace)


def _has_hook(machine: JSON) -> bool:
    hooks = ((machine.get("spec") or {}).get("lifecycleHooks") or {}).get("preDrain") or []
    return any(hook.get("name") == HOOK_NAME for hook in hooks)


async def _health_check(client: Client, namespace: str) -> JSON | None:
    found = (await client.list(MACHINE_API_VERSION, "MachineHealthCheck", namespace))["items"]
    return found[0] if found else None


async def test_an_unknown_controller_is_refused_at_start_with_the_valid_names(
    kubeconfig_path: Path, tmp_path: Path
) -> None:
    child = await start_process(
        cpo_run_controllers_only(kubeconfig_path, "--controllers=*,-mhc"), log_path=tmp_path / "run.log"
    )
    assert await child.exited(within=START_WITHIN) == 1, child.log_tail()
    text = child.log()
    assert "unknown controller 'mhc'" in text, text
    for name in ("controlplane", "etcd-quorum-hook", "machinehealthcheck"):
        assert name in text, text


async def test_disabled_controllers_write_nothing_while_the_others_run(
    kube: Client, kubeconfig_path: Path, namespace: str, tmp_path: Path
) -> None:
    client = kube
    machine: JSON = {
        "apiVersion": MACHINE_API_VERSION,
        "kind": "Machine",
        "metadata": {"name": "m0", "namespace": namespace, "labels": {ROLE_LABEL: "master"}},
        "spec": {"providerSpec": {"value": {}}},
    }
    created = await client.create(machine)
    # Running, so that the etcd-quorum-hook controller places its hook (the Machine API works).
    await client.patch_status(
        MACHINE_API_VERSION, "Machine", "m0", {"status": {"phase": "Running"}}, namespace
    )
    assert created["metadata"]["name"] == "m0"
    cp: JSON = {
        "apiVersion": CP,
        "kind": "ControlPlane",
        "metadata": {"name": "cp", "namespace": namespace},
        "spec": {"replicas": 1, "template": {"spec": {"providerSpec": {"value": {}}}}},
    }
    await client.create(cp)

    # Without the health-check controller: the hook is placed (the manager runs) and the
    # ControlPlane creates its MachineHealthCheck, whose status nobody writes.
    async with running_process(
        cpo_run_controllers_only(kubeconfig_path, "--controllers=*,-machinehealthcheck"),
        log_path=tmp_path / "a.log",
        stop_grace=10,
    ) as run:
        await eventually(
            lambda: _hook_and_health_check(client, namespace),
            timeout=START_WITHIN,
            message="hook on m0 and the MachineHealthCheck created",
        )
        await holds_for(
            lambda: _no_health_check_status(client, namespace),
            duration=QUIET_FOR,
            message="no MachineHealthCheck status written with machinehealthcheck disabled",
        )
        assert run.returncode is None, run.log_tail()

    # Without the hook controller: the health check's status is written (the manager runs),
    # and the hook, taken off first, is never put back.
    fresh = await _machine(client, "m0", namespace)
    await client.patch(
        MACHINE_API_VERSION,
        "Machine",
        "m0",
        {
            "metadata": {"resourceVersion": fresh["metadata"]["resourceVersion"]},
            "spec": {"lifecycleHooks": {"preDrain": None}},
        },
        namespace,
    )
    async with running_process(
        cpo_run_controllers_only(kubeconfig_path, "--controllers=*,-etcd-quorum-hook"),
        log_path=tmp_path / "b.log",
        stop_grace=10,
    ) as run:
        await eventually(
            lambda: _health_check_status(client, namespace),
            timeout=START_WITHIN,
            message="MachineHealthCheck status written",
        )
        await holds_for(
            lambda: _no_hook(client, namespace),
            duration=QUIET_FOR,
            message="no hook placed on m0 with etcd-quorum-hook disabled",
        )
        assert run.returncode is None, run.log_tail()


async def _hook_and_health_check(client: Client, namespace: str) -> bool:
    return (
        _has_hook(await _machine(client, "m0", namespace))
        and (await _health_check(client, namespace)) is not None
    )


async def _no_health_check_status(client: Client, namespace: str) -> bool:
    mhc = await _health_check(client, namespace)
    return mhc is not None and not mhc.get("status")


async def _health_check_status(client: Client, namespace: str) -> bool:
    mhc = await _health_check(client, namespace)
    return mhc is not None and (mhc.get("status") or {}).get("expectedMachines") is not None


async def _no_hook(client: Client, namespace: str) -> bool:
    return not _has_hook(await _machine(client, "m0", namespace))
