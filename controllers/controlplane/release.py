"""Deleting a ControlPlane: its Machines are released, never deleted.

The finalizer ``controlplane.cpo.dev/machines`` is held until every owned Machine has lost the
ControlPlane's ownerReference (so the garbage collector cannot take the control plane with it)
and the owned MachineHealthCheck is gone (so nothing remediates Machines nobody manages).

Releasing a Machine also removes the operator's own preDrain hook from it, decided by the hook's
identity alone (:func:`hook_at_release`): a hook of this operator's configured name and owner
(:attr:`~controllers.controlplane.options.ControlPlaneOptions.etcd_guard_hook`) goes, with a
Machine event ``EtcdGuardReleased``, when that identity is the operator's own: a name of its own
(``--etcd-hook-name``), or the default ``EtcdQuorumOperator`` while the operator's
etcd-quorum-hook controller runs. The guard works per ControlPlane: it needs the ControlPlane's
etcd endpoints and TLS Secret to remove a member, so once the ControlPlane is gone nothing would
ever take the hook off and deleting the Machine would hang for ever. Without it, deleting a
released Machine drains it at once, without waiting for etcd.

Every other preDrain hook stays, with a Machine event ``LifecycleHookKept`` naming it and why:
another name, our name with another owner, or the default identity while the etcd-quorum-hook
controller is off. That default is also the hook OpenShift's etcd operator (cluster-etcd-operator)
keeps on every control-plane Machine; hooks are keyed by name, so a hook of that name is its
hook whenever we do not write it ourselves, and its writer removes it when its own rules say so.

A replacement under way when the ControlPlane is deleted is finished first: the release waits
until no owned Machine being deleted carries our hook (its member removed, then the hook), and
meanwhile the etcd-quorum-hook controller still hooks the replacement's Machine so that its
learner can be promoted and the old member removed
(:func:`controllers.etcdquorum.rules.hooks_placed_while_deleting`); once none does it places no
hook, so none comes back after the release. While it waits, the ControlPlane gets a
``ReleaseWaitsForEtcd`` event naming those Machines. If no replacement exists (the old Machine
was deleted first, under maxSurge 0, and the ControlPlane deleted before its replacement was
created), the old member goes as a maxSurge-0 deletion's does: the Machine carries the
ControlPlane's mark, so its healthy voter is removed early when every other voter is healthy
(:func:`controllers.etcdquorum.early_removal.early_removal_decision`), its hook comes off and the
Machines are released. When that cannot happen (a member unhealthy elsewhere; ``cpo run``
without the etcd-quorum-hook controller), the hook has to be taken off by hand (the escape
hatch of :mod:`controllers.etcdquorum`, after which the dead member is removed once its Machine
and Node are gone), and the Machines are released.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane import KIND as CP_KIND
from api.controlplane_reasons import (
    REASON_ETCD_GUARD_RELEASED,
    REASON_HOOK_KEPT_AT_RELEASE,
    REASON_MACHINE_RELEASED,
    REASON_RELEASE_WAITS_FOR_ETCD,
)
from api.machine import API_VERSION as MACHINE_API_VERSION
from api.ownership import ControlPlaneMachines, MachineT, references
from controllers.controlplane.healthcheck import MHC_SUFFIX, EventFunc, delete_quietly
from controllers.controlplane.metrics import OPERATIONS, forget_replicas, label
from controllers.etcdquorum.rules import DEFAULT_HOOK, HOOK_NAME, Hook, machine_info
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


@dataclass(frozen=True, slots=True)
class HookIdentity:
    """This operator's hook identity as a release sees it: the hook its etcd-quorum-hook controller
    writes (name and owner) and whether that controller runs beside the ControlPlane controller."""

    hook: Hook = DEFAULT_HOOK
    hook_controller_runs: bool = False

    @property
    def own(self) -> bool:
        """Whether the identity is the operator's alone: a name other than the default one (which
        cluster-etcd-operator writes too, and hooks are keyed by name), or the default one while
        the operator's own hook controller writes it."""
        return self.hook.name != HOOK_NAME or self.hook_controller_runs


@dataclass(frozen=True, slots=True)
class HookVerdict:
    """What a release does with one preDrain hook: remove it or keep it, and why (event text)."""

    remove: bool
    why: str


def hook_at_release(hook: Mapping[str, Any], identity: HookIdentity) -> HookVerdict:
    """THE rule for a preDrain hook on a Machine a ControlPlane releases.

    It is removed only when it is exactly this operator's hook (the configured name and owner)
    and that identity is the operator's own (:attr:`HookIdentity.own`). Every other hook is kept:
    another writer placed it and removes it by its own rules; taking it away would let the
    Machine drain without the guard that writer keeps (cluster-etcd-operator's
    ``EtcdQuorumOperator``/``clusteroperator/etcd`` above all). The decision reads the hook's
    identity and the configuration, never the Machine's state, so it cannot take a foreign hook
    by mistake while that hook's writer is briefly away.
    """
    name, owner = hook.get("name"), hook.get("owner")
    ours = identity.hook
    if (name, owner) != (ours.name, ours.owner):
        return HookVerdict(
            False, f"preDrain hook {name} (owner {owner}) kept: not this operator's {ours.name}/{ours.owner}"
        )
    if not identity.own:
        return HookVerdict(
            False,
            f"preDrain hook {name} (owner {owner}) kept: the default hook identity is also OpenShift's "
            "etcd operator's, and this operator's etcd-quorum-hook controller does not run to own it",
        )
    return HookVerdict(True, f"preDrain hook {name} (owner {owner}) removed: it is this operator's")


def hooks_after_release(hooks: Sequence[Mapping[str, Any]], identity: HookIdentity) -> list[dict[str, Any]]:
    """A released Machine's preDrain hooks: ``hooks`` without those :func:`hook_at_release`
    removes; every other hook kept as is."""
    return [dict(hook) for hook in hooks if not hook_at_release(hook, identity).remove]


def _pre_drain(machine: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(((machine.get("spec") or {}).get("lifecycleHooks") or {}).get("preDrain") or [])


def guarded_deletions(machines: Sequence[Mapping[str, Any]], identity: HookIdentity) -> list[str]:
    """The Machines being deleted that still carry the operator's own hook: their etcd member
    removal is under way, and the release waits for the etcd-quorum-hook controller to finish it.
    Read the way that controller reads a Machine
    (:attr:`~controllers.etcdquorum.rules.GuardedMachine.held_by_our_hook`), so that it places
    hooks for exactly as long as the release waits. A hook that is not the operator's own
    (:func:`hook_at_release` keeps it) is never waited for: no controller of this operator would
    ever take it off."""
    if not identity.own:
        return []
    return [m["metadata"]["name"] for m in machines if machine_info(m, identity.hook).held_by_our_hook]


def released_machines(cp: Mapping[str, Any], machines: Iterable[MachineT]) -> list[MachineT]:
    """The Machines a release of ``cp`` touches: every one with an ownerReference to it,
    controller or not, whatever its labels (:attr:`api.ownership.ControlPlaneMachines.referenced`),
    so that no reference to a ControlPlane outlives it."""
    return ControlPlaneMachines.of(cp["metadata"]["uid"], {}, machines).referenced


async def release(client: Client, cache: Cache, cp: JSON, event: EventFunc, identity: HookIdentity) -> bool:
    """Release every owned Machine (drop our ownerReference and the operator's own hook), delete
    the MHC, drop the finalizer. False (nothing done: look again later) while an owned Machine
    being deleted still carries the operator's own hook."""
    if not has_finalizer(cp):
        return True
    namespace = cp["metadata"]["namespace"]
    owned = released_machines(cp, await cache.list(MACHINE_API_VERSION, "Machine", namespace=namespace))
    waiting = guarded_deletions(owned, identity)
    guard = identity.hook
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
    await release_machines(client, owned, cp, event, identity)
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
    client: Client, machines: Sequence[JSON], cp: JSON, event: EventFunc, identity: HookIdentity
) -> None:
    """Drop the ControlPlane's ownerReference and the hooks :func:`hook_at_release` removes from
    each of ``machines`` (the owned ones): events ``MachineReleased`` on the ControlPlane,
    ``EtcdGuardReleased`` on a Machine that had our hook, ``LifecycleHookKept`` on one whose
    preDrain hooks of another writer stay. One patch per Machine, guarded by its
    resourceVersion, so a hook someone added meanwhile is never lost."""
    uid, namespace = cp["metadata"]["uid"], cp["metadata"]["namespace"]
    for machine in machines:
        kept = [ref for ref in machine["metadata"].get("ownerReferences") or [] if ref.get("uid") != uid]
        hooks = _pre_drain(machine)
        kept_hooks = hooks_after_release(hooks, identity)
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
                f"preDrain hook {identity.hook.name} removed: ControlPlane {cp['metadata']['name']} released "
                "this Machine and the operator no longer guards its etcd member; deleting the Machine now "
                "drains it without waiting for this operator",
            )
        if kept_hooks:
            reasons = "; ".join(hook_at_release(hook, identity).why for hook in kept_hooks)
            event(
                patched,
                "Normal",
                REASON_HOOK_KEPT_AT_RELEASE,
                f"ControlPlane {cp['metadata']['name']} released this Machine and left the hooks of other "
                f"writers in place ({reasons}); each writer removes its own",
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
