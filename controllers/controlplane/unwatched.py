"""Machines a ControlPlane controls that the operator cannot see: their control-plane role label is
gone.

The operator caches only control-plane Machines (label ``machine.openshift.io/cluster-api-machine-role:
master``, :data:`api.controlplane.MASTER_ROLE_LABEL`): on a cluster with hundreds of worker
Machines it never holds those. A Machine whose role label is removed or changed therefore leaves
the cache as if it were deleted, while it still runs, still votes in etcd and still carries the
ControlPlane's ownerReference. What then happens, and why it is safe:

* the ControlPlane counts one Machine fewer (``status.replicas``) and wants a replacement; the
  replacement is held, because the invisible Machine's etcd member is a member without a Machine
  (preflight ``EtcdMembersMatchMachines``) and its Node a control-plane Node without a Machine;
  so etcd never gets a fourth voter for a Machine that is still there;
* its etcd-quorum hook is no longer kept (put back if removed): deleting the Machine meanwhile
  would drain it without waiting for etcd;
* the ControlPlane reports it: ``Degraded`` True with reason ``MachineNotWatched`` naming the
  Machine(s) and the label to put back, and a Warning Event of that reason.

Putting the label back brings the Machine into the cache again, and everything goes on as before.

Finding such a Machine takes an uncached LIST of the namespace's Machines, so the controller does
it only when something it sees hints at one (:func:`may_have_unwatched`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from api.controlplane import CONDITION_DEGRADED, DEFAULT_SELECTOR_LABELS, MASTER_ROLE_LABEL
from api.ownership import controller_owner
from controllers.conditions import conditions_of, find_condition


def may_have_unwatched(
    *,
    unmanaged_nodes: bool,
    members_without_machine: bool,
    reported_replicas: Any,
    owned: int,
) -> bool:
    """Whether a Machine of this ControlPlane may have lost its role label, so that looking for one
    is worth an uncached LIST.

    Any one hints at it: a control-plane Node without a Machine (the invisible Machine's Node), an
    etcd member without a Machine (its member), or fewer owned Machines than the status counted
    last time (it just left the cache). The first two last as long as the Machine runs, so the
    report stays until the label is back.
    """
    dropped = isinstance(reported_replicas, int) and reported_replicas > owned
    return unmanaged_nodes or members_without_machine or dropped


def unwatched_machines(cp_uid: str, machines: Iterable[Mapping[str, Any]]) -> list[str]:
    """The names of ``machines`` (an uncached list) that the ControlPlane with uid ``cp_uid``
    controls but whose role label is not ``master``: the ones the operator's cache leaves out."""
    role = DEFAULT_SELECTOR_LABELS[MASTER_ROLE_LABEL]
    return sorted(
        str(machine["metadata"]["name"])
        for machine in machines
        if (controller_owner(machine) or {}).get("uid") == cp_uid
        and (machine["metadata"].get("labels") or {}).get(MASTER_ROLE_LABEL) != role
    )


def unwatched_message(names: Iterable[str]) -> str:
    """What ``Degraded`` and the Event say of unwatched Machines, and what to do."""
    role = DEFAULT_SELECTOR_LABELS[MASTER_ROLE_LABEL]
    return (
        f"Machine(s) {', '.join(names)} belong to this ControlPlane but lack label "
        f"{MASTER_ROLE_LABEL}={role}, "
        "so the operator cannot see them: they are not counted, their etcd-quorum hook is not kept, and no "
        "replacement is made while their etcd member is there; put the label back"
    )


def unwatched_news(cp: Mapping[str, Any], names: Sequence[str]) -> bool:
    """Whether ``names`` (unwatched now) are news to the ControlPlane's stored ``Degraded``: the
    Warning Event goes out once per change, not on every pass."""
    if not names:
        return False
    stored = find_condition(conditions_of(cp), CONDITION_DEGRADED) or {}
    return unwatched_message(names) not in str(stored.get("message") or "")
