"""Deleting a ControlPlane: its Machines are released, never deleted.

The finalizer ``controlplane.cpo.dev/machines`` is held until every owned Machine has lost the
ControlPlane's ownerReference (so the garbage collector cannot take the control plane with it)
and the owned MachineHealthCheck is gone (so nothing remediates Machines nobody manages).

Releasing a Machine also removes the etcd-quorum-hook controller's preDrain hook from it (the
hook of :attr:`~controllers.controlplane.options.ControlPlaneOptions.etcd_guard_hook`: same name
and same owner), with a Machine event ``EtcdGuardReleased``. The guard works per ControlPlane: it
needs the ControlPlane's etcd endpoints and TLS Secret to remove a member, so once the
ControlPlane is gone nothing would ever take that hook off and deleting the Machine would hang
for ever. Without it, deleting a released Machine drains it at once, without waiting for etcd.
Hooks of other names or other owners are never touched.

A replacement under way when the ControlPlane is deleted is finished first: the release waits
until no owned Machine being deleted carries our hook (its member removed, then the hook), and
meanwhile the etcd-quorum-hook controller still hooks the replacement's Machine so that its
learner can be promoted and the old member removed
(:func:`controllers.etcdquorum.rules.hooks_placed_while_deleting`); once none does it places no
hook, so none comes back after the release. While it waits, the ControlPlane gets a
``ReleaseWaitsForEtcd`` event naming those Machines. If no replacement exists (the old Machine
was deleted first, under maxSurge 0, and the ControlPlane deleted before its replacement was
created), the old member is never removed: a healthy voter goes only once a replacement is
promoted, deletion or not. Its hook then has to be taken off by hand (the escape hatch of
:mod:`controllers.etcdquorum`), and the Machines are released.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane import KIND as CP_KIND
from api.controlplane_reasons import (
    REASON_ETCD_GUARD_RELEASED,
    REASON_MACHINE_RELEASED,
    REASON_RELEASE_WAITS_FOR_ETCD,
)
from api.machine import API_VERSION as MACHINE_API_VERSION
from api.ownership import ControlPlaneMachines, MachineT, references
from controllers.controlplane.healthcheck import MHC_SUFFIX, EventFunc, delete_quietly
from controllers.controlplane.metrics import OPERATIONS, forget_replicas, label
from controllers.etcdquorum.rules import Hook, machine_info
from runtime.cache import Cache
from runtime.client import JSON, Client
from runtime.errors import NotFound

FINALIZER: Final = "controlplane.cpo.dev/machines"
"""Held until the ControlPlane's Machines are released and its MachineHealthCheck deleted."""


def has_finalizer(cp: Mapping[str, Any]) -> bool:
    """Whether the ControlPlane carries :data:`FINALIZER`."""
    return FINALIZER in (cp["metadata"].get("finalizers") or ())


async def add_finalizer(client: Client, cp: JSON) -> JSON:
    """Add :data:`FINALIZER` (guarded by the resourceVersion); returns the updated ControlPlane."""
    metadata = cp["metadata"]
    finalizers = [*(metadata.get("finalizers") or []), FINALIZER]
    return await client.patch(
        CP_API_VERSION,
        CP_KIND,
        metadata["name"],
        {"metadata": {"finalizers": finalizers, "resourceVersion": metadata["resourceVersion"]}},
        metadata["namespace"],
    )


def hooks_after_release(hooks: Sequence[Mapping[str, Any]], guard: Hook) -> list[dict[str, Any]]:
    """A released Machine's preDrain hooks: ``hooks`` without the one ``guard`` names (same name
    and same owner); every other hook, another name or another owner, kept as is."""
    return [
        dict(hook) for hook in hooks if (hook.get("name"), hook.get("owner")) != (guard.name, guard.owner)
    ]


def _pre_drain(machine: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(((machine.get("spec") or {}).get("lifecycleHooks") or {}).get("preDrain") or [])


def guarded_deletions(machines: Sequence[Mapping[str, Any]], guard: Hook) -> list[str]:
    """The Machines being deleted that still carry ``guard``'s hook: their etcd member removal is
    under way, and the release waits for the etcd-quorum-hook controller to finish it. Read the
    way that controller reads a Machine
    (:attr:`~controllers.etcdquorum.rules.GuardedMachine.held_by_our_hook`), so that it places
    hooks for exactly as long as the release waits."""
    return [m["metadata"]["name"] for m in machines if machine_info(m, guard).held_by_our_hook]


def released_machines(cp: Mapping[str, Any], machines: Iterable[MachineT]) -> list[MachineT]:
    """The Machines a release of ``cp`` touches: every one with an ownerReference to it,
    controller or not, whatever its labels (:attr:`api.ownership.ControlPlaneMachines.referenced`),
    so that no reference to a ControlPlane outlives it."""
    return ControlPlaneMachines.of(cp["metadata"]["uid"], {}, machines).referenced


async def release(client: Client, cache: Cache, cp: JSON, event: EventFunc, guard: Hook) -> bool:
    """Release every owned Machine (drop our ownerReference and ``guard``'s hook), delete the MHC,
    drop the finalizer. False (nothing done: look again later) while an owned Machine being
    deleted still carries the hook."""
    if not has_finalizer(cp):
        return True
    namespace = cp["metadata"]["namespace"]
    owned = released_machines(cp, await cache.list(MACHINE_API_VERSION, "Machine", namespace=namespace))
    waiting = guarded_deletions(owned, guard)
    if waiting:
        names = ", ".join(waiting)
        event(
            cp,
            "Normal",
            REASON_RELEASE_WAITS_FOR_ETCD,
            f"the Machines are released once the etcd member of {names} is removed and the "
            f"{guard.name} hook with it: a healthy voter goes once its replacement is promoted "
            "(EtcdClusterHealthy says what the removal waits for). If no replacement is coming, take "
            f"the {guard.name} hook off {names} by hand; the member then stays in etcd until removed "
            "with etcdctl",
        )
        return False
    await release_machines(client, owned, cp, event, guard)
    await delete_owned_mhc(client, cp)
    metadata = cp["metadata"]
    await client.patch(
        CP_API_VERSION,
        CP_KIND,
        metadata["name"],
        {
            "metadata": {
                "finalizers": [f for f in metadata.get("finalizers") or [] if f != FINALIZER] or None,
                "resourceVersion": metadata["resourceVersion"],
            }
        },
        metadata["namespace"],
    )
    forget_replicas(cp)
    return True


async def release_machines(
    client: Client, machines: Sequence[JSON], cp: JSON, event: EventFunc, guard: Hook
) -> None:
    """Drop the ControlPlane's ownerReference and ``guard``'s hook from each of ``machines`` (the
    owned ones): events ``MachineReleased`` on the ControlPlane, ``EtcdGuardReleased`` on a
    Machine that had the hook. One patch per Machine, guarded by its resourceVersion, so a hook
    someone added meanwhile is never lost."""
    uid, namespace = cp["metadata"]["uid"], cp["metadata"]["namespace"]
    for machine in machines:
        kept = [ref for ref in machine["metadata"].get("ownerReferences") or [] if ref.get("uid") != uid]
        hooks = _pre_drain(machine)
        kept_hooks = hooks_after_release(hooks, guard)
        patch: JSON = {
            "metadata": {
                "ownerReferences": kept or None,
                "resourceVersion": machine["metadata"]["resourceVersion"],
            }
        }
        if kept_hooks != hooks:
            patch["spec"] = {"lifecycleHooks": {"preDrain": kept_hooks or None}}
        patched = await client.patch(
            MACHINE_API_VERSION, "Machine", machine["metadata"]["name"], patch, namespace
        )
        OPERATIONS.labels(label(cp), "release").inc()
        event(cp, "Normal", REASON_MACHINE_RELEASED, f"Released Machine {machine['metadata']['name']}")
        if kept_hooks != hooks:
            event(
                patched,
                "Normal",
                REASON_ETCD_GUARD_RELEASED,
                f"preDrain hook {guard.name} removed: ControlPlane {cp['metadata']['name']} released this "
                "Machine and the operator no longer guards its etcd member; deleting the Machine now "
                "drains it without waiting for etcd",
            )


async def delete_owned_mhc(client: Client, cp: JSON) -> None:
    """Delete the ControlPlane's MachineHealthCheck, if it is there and the ControlPlane owns it."""
    namespace, name = cp["metadata"]["namespace"], cp["metadata"]["name"] + MHC_SUFFIX
    try:
        current = await client.get(MACHINE_API_VERSION, "MachineHealthCheck", name, namespace)
    except NotFound:
        return
    if references(current, cp["metadata"]["uid"]):
        await delete_quietly(client, MACHINE_API_VERSION, "MachineHealthCheck", name, namespace)
