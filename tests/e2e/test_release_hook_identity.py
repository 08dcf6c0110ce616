"""Deleting a ControlPlane removes only the operator's own preDrain hook, decided by identity.

Each scenario runs ``cpo run`` as a user runs it (a real process, ``--no-webhooks``) over three
Running control-plane Machines that no provider serves (nothing drains or deletes them here), and
the test plays a second writer of lifecycle hooks: OpenShift's etcd operator, whose hook is
``EtcdQuorumOperator`` owned by ``clusteroperator/etcd``. A ControlPlane adopts the Machines and
is deleted; the release must drop its ownerReferences, remove only the hooks that are the
operator's own and leave the second writer's with a ``LifecycleHookKept`` event.

About 1 to 2 s each on an idle machine (most of it the process start).
"""

from __future__ import annotations

from pathlib import Path

from api.controlplane import API_VERSION as CP_API_VERSION
from api.machine import API_VERSION as MACHINE_API_VERSION
from runtime.client import JSON, Client
from runtime.errors import NotFound
from tests.support.controlplane import events_for
from tests.support.poll import eventually
from tests.support.processes import START_WITHIN, cpo_run_controllers_only, running_process

ROLE_LABEL = "machine.openshift.io/cluster-api-machine-role"
NAMES = ("m0", "m1", "m2")
SECOND_WRITER = {"name": "EtcdQuorumOperator", "owner": "clusteroperator/etcd"}
"""cluster-etcd-operator's hook, which the test writes as that operator would."""
OWN_HOOK = {"name": "cpo.dev/EtcdQuorum", "owner": "cpo/etcd"}
"""The operator's hook under a name of its own (``--etcd-hook-name``, ``--etcd-hook-owner``)."""
RELEASE_WITHIN = 60.0


def _pre_drain(machine: JSON) -> list[JSON]:
    return list(((machine.get("spec") or {}).get("lifecycleHooks") or {}).get("preDrain") or [])


async def _running_machines_with_second_writer_hook(client: Client, namespace: str) -> None:
    """Three Running master Machines, each carrying the second writer's preDrain hook."""
    for name in NAMES:
        await client.create(
            {
                "apiVersion": MACHINE_API_VERSION,
                "kind": "Machine",
                "metadata": {"name": name, "namespace": namespace, "labels": {ROLE_LABEL: "master"}},
                "spec": {
                    "providerSpec": {"value": {}},
                    "lifecycleHooks": {"preDrain": [dict(SECOND_WRITER)]},
                },
            }
        )
        await client.patch_status(
            MACHINE_API_VERSION, "Machine", name, {"status": {"phase": "Running"}}, namespace
        )


def _controlplane(namespace: str) -> JSON:
    return {
        "apiVersion": CP_API_VERSION,
        "kind": "ControlPlane",
        "metadata": {"name": "cp", "namespace": namespace},
        "spec": {"replicas": 3, "template": {"spec": {"providerSpec": {"value": {}}}}},
    }


async def _machines(client: Client, namespace: str) -> list[JSON]:
    listed = await client.list(MACHINE_API_VERSION, "Machine", namespace)
    return sorted(listed["items"], key=lambda m: m["metadata"]["name"])


async def _delete_controlplane_and_wait(client: Client, namespace: str) -> list[JSON]:
    """Delete the ControlPlane, wait until its finalizer let it go; the Machines afterwards."""
    await client.delete(CP_API_VERSION, "ControlPlane", "cp", namespace)

    async def gone() -> bool:
        try:
            await client.get(CP_API_VERSION, "ControlPlane", "cp", namespace)
        except NotFound:
            return True
        return False

    await eventually(gone, timeout=RELEASE_WITHIN, message="ControlPlane released its Machines and went")
    machines = await _machines(client, namespace)
    assert [m["metadata"]["name"] for m in machines] == list(NAMES)
    assert all(not m["metadata"].get("ownerReferences") for m in machines), machines
    return machines


async def _kept_events(client: Client, namespace: str, says: str) -> None:
    """Wait until every Machine has a ``LifecycleHookKept`` event whose message contains ``says``
    (events are recorded in the background, so they may follow the release by a moment)."""

    async def every_machine_told() -> bool:
        for name in NAMES:
            messages = [
                e.get("message", "")
                for e in await events_for(client, namespace, name)
                if e.get("reason") == "LifecycleHookKept"
            ]
            if not any(says in message for message in messages):
                return False
        return True

    await eventually(
        every_machine_told, timeout=RELEASE_WITHIN, message=f"a LifecycleHookKept event saying {says!r}"
    )


async def test_release_removes_our_own_named_hooks_and_leaves_the_second_writers(
    kube: Client, kubeconfig_path: Path, namespace: str, tmp_path: Path
) -> None:
    await _running_machines_with_second_writer_hook(kube, namespace)
    await kube.create(_controlplane(namespace))
    flags = (
        "--controllers=*",
        f"--etcd-hook-name={OWN_HOOK['name']}",
        f"--etcd-hook-owner={OWN_HOOK['owner']}",
    )
    async with running_process(
        cpo_run_controllers_only(kubeconfig_path, *flags), log_path=tmp_path / "run.log", stop_grace=10
    ):

        async def adopted_and_both_hooked() -> bool:
            machines = await _machines(kube, namespace)
            return all(
                m["metadata"].get("ownerReferences")
                and OWN_HOOK in _pre_drain(m)
                and SECOND_WRITER in _pre_drain(m)
                for m in machines
            )

        await eventually(
            adopted_and_both_hooked,
            timeout=START_WITHIN,
            message="every Machine adopted, with our hook beside the second writer's",
        )
        machines = await _delete_controlplane_and_wait(kube, namespace)
        assert all(_pre_drain(m) == [SECOND_WRITER] for m in machines), [_pre_drain(m) for m in machines]
        await _kept_events(kube, namespace, "EtcdQuorumOperator (owner clusteroperator/etcd) kept")


async def test_release_by_the_controlplane_controller_alone_leaves_the_default_hook(
    kube: Client, kubeconfig_path: Path, namespace: str, tmp_path: Path
) -> None:
    await _running_machines_with_second_writer_hook(kube, namespace)
    await kube.create(_controlplane(namespace))
    argv = cpo_run_controllers_only(kubeconfig_path, "--controllers=controlplane")
    async with running_process(argv, log_path=tmp_path / "run.log", stop_grace=10):

        async def adopted() -> bool:
            return all(m["metadata"].get("ownerReferences") for m in await _machines(kube, namespace))

        await eventually(adopted, timeout=START_WITHIN, message="every Machine adopted")
        machines = await _delete_controlplane_and_wait(kube, namespace)
        assert all(_pre_drain(m) == [SECOND_WRITER] for m in machines), [_pre_drain(m) for m in machines]
        await _kept_events(kube, namespace, "the default hook identity is also OpenShift's etcd operator's")
