"""Which marked Machine the ControlPlane remediates first: the one whose loss costs the least
(:func:`removal_cost`), a recorded one before any other (:func:`pick_target`)."""

from __future__ import annotations

from collections.abc import Sequence

from controllers.controlplane.machines import MachineInfo
from controllers.controlplane.remediation_record import RemediationRecord


def removal_cost(machine: MachineInfo) -> int:
    """What losing ``machine`` costs the control plane, lowest first: 0 without a Node (it never
    came up, it serves nothing), 1 without a voting member (no member, or a learner: removing it
    changes no quorum), 2 with an unhealthy voter (its vote is already lost), 3 with a healthy
    voter."""
    if not machine.has_node:
        return 0
    if not machine.etcd_voter:
        return 1
    return 2 if not machine.etcd_healthy else 3


def pick_target(marked: Sequence[MachineInfo], pending: Sequence[RemediationRecord] = ()) -> MachineInfo:
    """The marked Machine to remediate first: one whose remediation was recorded (``pending``, the
    ControlPlane's in-progress list) but not carried out, so a crash never starts a second one;
    else the lowest :func:`removal_cost`, then the oldest, then by name.

    KubeadmControlPlane picks "the most broken" Machine the same way: a Machine its user asked to
    remediate, then one without a Node, then one whose etcd member (then etcd Pod) is not
    healthy, then one whose API server, controller manager or scheduler is not; then the oldest
    and by name. We have no remediate-this-Machine annotation (deleting the Machine does that);
    we rank a Machine without a voting member before an unhealthy voter, since the member it
    lacks costs no quorum, and among equal costs one with broken control-plane components first.
    Removing the cheapest first also maximises the chance that the replacement joins: etcd takes
    no new member while a voter is dead, so the preflight of every other step waits for the dead
    voters to go.
    """
    recorded = {r.machine for r in pending}
    return min(
        marked,
        key=lambda m: (
            m.name not in recorded,
            removal_cost(m),
            not m.components_unhealthy,
            m.created,
            m.name,
        ),
    )
