"""Members of no Machine: which one the hook controller removes, and why the others stay.

A Machine can go while its etcd member stays: its hook taken off by hand (the escape hatch), its
finalizer stripped, or the Machine deleted while the operator was down. The dead member then
stays in the member list for good: it raises the quorum, and every promotion and removal waits
for it (``MembersUnhealthy``), until someone runs ``etcdctl member remove``. This module decides
when the controller removes such a member itself.

The anchor is OpenShift's etcd operator (cluster-etcd-operator's member-removal controller,
``removeUnhealthyMemberWithoutNode``): only when the Machine API is functional, it removes a member
whose host has no control-plane Node (no Node's internal address is the member's) and whose
Machine is absent, after a live health read of that member says it is unhealthy; removing an
unhealthy member never lowers the count of healthy voters, only the quorum they must reach. KCP
recovers from a manual Machine deletion the same way (``reconcileEtcdMembers`` removes members
whose Node is gone). This controller keeps those guards and adds its own, so that a member it
merely cannot map is never taken for a dead one:

* **no Machine**: no Machine of the ControlPlane's namespace maps to the member (all of them, not
  only the selector's: a member of another ControlPlane's Machine, or of an unlabelled one, is
  not an orphan), by the one mapping rule (:func:`controllers.etcd.membership.member_owner`);
  before the removal, a list of the namespace's Machines read from the API server, not the cache,
  must say so again (the reconciler's part);
* **no Node**: no Node speaks for it (:func:`controllers.etcd.membership.member_node`): a member
  whose Node lives may be an etcd the kubelet is restarting;
* **unhealthy**, by this pass's health read, for at least the grace period
  (``EtcdQuorumOptions.member_without_machine_grace``), and again by a read made right before the
  removal (the reconciler's part);
* the **Machine API works**: a control-plane Machine is ``Running``, or one being deleted has a
  Node (cluster-etcd-operator asks for a ``Running`` one; a deleting Machine was provisioned too,
  and when every Machine is being deleted or provisioning, a dead voter is exactly what must go:
  etcd refuses every member add, learners included, while a voter is disconnected, so no
  replacement could join and nothing would run again). The ControlPlane is
  **Active**, and it **owns a Machine that maps to a member**: its view of the cluster is the one
  its Machines form, not a guess made before any of them joined;
* the cluster has **not lost quorum** (the controller never repairs a cluster that has: that is a
  human's restore), and the quorum holds without the member;
* **one member at a time**, by label, within the controller's one-change-per-interval pacing.

A **healthy** member of no Machine is never removed on its own: it may be a member the cluster
runs outside the Machine API (an etcd on a host the operator does not manage). It is reported,
as every member kept here is: the ``EtcdClusterHealthy`` condition (reason
``MembersWithoutMachine``) names it with why it stays, ``cpo explain`` shows that message, and the
gauge ``cpo_etcd_members_without_machine{reason}`` feeds the alert ``CPOEtcdMemberWithoutMachine``.

An unstarted learner of no Machine is :func:`~controllers.etcdquorum.rules.is_abandoned_learner`'s
case, not this module's (it has no name and no health to read).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from api.quorum import quorum_kept_without
from controllers.etcd.membership import MemberState
from controllers.etcdquorum.rules import quorum_lost, voters_of

KEPT_HEALTHY: Final = "Healthy"
"""It answers its health read: it may run outside the Machine API; a human decides."""
KEPT_NODE_PRESENT: Final = "NodePresent"
"""A Node still speaks for it."""
KEPT_GRACE_PERIOD: Final = "GracePeriod"
"""Unhealthy for less than the grace period."""
KEPT_CLUSTER_NOT_READY: Final = "ClusterNotReady"
"""A cluster-wide guard holds: Machine API, ControlPlane state, no mapped Machine, quorum."""
KEPT_ONE_AT_A_TIME: Final = "OneMemberChangeAtATime"
"""Another member of no Machine goes first."""
KEPT_REASONS: Final = (
    KEPT_HEALTHY,
    KEPT_NODE_PRESENT,
    KEPT_GRACE_PERIOD,
    KEPT_CLUSTER_NOT_READY,
    KEPT_ONE_AT_A_TIME,
)
"""Every value of the gauge's ``reason`` label."""


@dataclass(frozen=True, slots=True)
class MemberWithoutMachine:
    """A started member that no Machine of the namespace maps to, with what the rule reads."""

    state: MemberState
    node: str | None = None
    """The Node that speaks for it, when one does."""
    unhealthy_for: float = 0.0
    """Seconds it has been seen unhealthy without a Machine (0 when healthy)."""


@dataclass(frozen=True, slots=True)
class ClusterGuards:
    """The cluster-wide facts the removal needs."""

    machine_api_functional: bool
    """A control-plane Machine is ``Running``, or one being deleted has a Node
    (:func:`machine_api_worked`)."""
    active: bool
    """The ControlPlane's ``spec.state`` is ``Active``."""
    owns_member_machine: bool
    """The ControlPlane owns a Machine that maps to a member."""


@dataclass(frozen=True, slots=True)
class Kept:
    """A member of no Machine that stays this pass, and why."""

    state: MemberState
    reason: str
    """One of :data:`KEPT_REASONS`."""
    message: str


@dataclass(frozen=True, slots=True)
class OrphanDecision:
    """At most one member of no Machine to remove now, and every other one with why it stays."""

    remove: MemberState | None = None
    why: str = ""
    """For the event: why the removal is safe."""
    kept: tuple[Kept, ...] = ()


def machine_api_worked(running: bool, deleting_with_node: bool) -> bool:
    """Whether the Machine API has worked for this control plane: a Machine is ``Running``
    (:func:`~controllers.etcdquorum.rules.machine_api_functional`), or one being deleted has a Node
    (it was provisioned). See the module docstring for why a deleting one counts here."""
    return running or deleting_with_node


def _kept_for_itself(orphan: MemberWithoutMachine, grace: float) -> Kept | None:
    """Why ``orphan`` stays whatever the cluster: healthy, a Node speaks for it, or within its grace
    period; None when it is dead for good."""
    label = orphan.state.label
    if orphan.state.healthy:
        return Kept(
            orphan.state,
            KEPT_HEALTHY,
            f"member {label} has no Machine but is healthy: it may run outside the Machine API; "
            "remove it with etcdctl member remove if it should not be there",
        )
    if orphan.node is not None:
        return Kept(
            orphan.state,
            KEPT_NODE_PRESENT,
            f"member {label} has no Machine and is unhealthy, but Node {orphan.node} still "
            "speaks for it: delete the Node if its host is gone",
        )
    if orphan.unhealthy_for < grace:
        return Kept(
            orphan.state,
            KEPT_GRACE_PERIOD,
            f"member {label} has no Machine and no Node and has been unhealthy for "
            f"{orphan.unhealthy_for:.0f}s; it is removed after {grace:.0f}s",
        )
    return None


def _cluster_guard(guards: ClusterGuards, members: Sequence[MemberState]) -> str | None:
    """Why no member of no Machine may go this pass, or None."""
    if not guards.machine_api_functional:
        return "the Machine API is not working yet (no control-plane Machine is Running or had a Node)"
    if not guards.active:
        return "the ControlPlane is Inactive"
    if not guards.owns_member_machine:
        return "the ControlPlane owns no Machine with an etcd member yet"
    if quorum_lost(members):
        return "etcd has lost quorum: restore members or recover from a backup; nothing is removed"
    return None


def orphan_decision(
    members: Sequence[MemberState],
    orphans: Sequence[MemberWithoutMachine],
    guards: ClusterGuards,
    grace: float,
) -> OrphanDecision:
    """Which member of no Machine to remove now (the module docstring's rule), or why each stays.

    ``members`` is the whole member list of this pass (the quorum arithmetic reads it), ``orphans``
    its started members that no Machine of the namespace maps to. Whether a member stays is told
    in this order: healthy, a Node speaks for it, within the grace period, a cluster-wide guard,
    the quorum without it, another one first.
    """
    kept: list[Kept] = []
    eligible: list[MemberWithoutMachine] = []
    for orphan in sorted(orphans, key=lambda o: o.state.label):
        stays = _kept_for_itself(orphan, grace)
        if stays is None:
            eligible.append(orphan)
        else:
            kept.append(stays)
    if not eligible:
        return OrphanDecision(kept=tuple(kept))
    blocked = _cluster_guard(guards, members)
    voter_health = {m.member.id: m.healthy for m in voters_of(members)}
    chosen: MemberState | None = None
    for orphan in eligible:
        label = orphan.state.label
        if blocked is not None:
            kept.append(Kept(orphan.state, KEPT_CLUSTER_NOT_READY, f"dead member {label} stays: {blocked}"))
        elif orphan.state.voter and not quorum_kept_without(voter_health, orphan.state.member.id):
            kept.append(
                Kept(
                    orphan.state,
                    KEPT_CLUSTER_NOT_READY,
                    f"dead member {label} stays: the healthy voters left would not hold a quorum",
                )
            )
        elif chosen is not None:
            kept.append(
                Kept(
                    orphan.state, KEPT_ONE_AT_A_TIME, f"dead member {label} waits: {chosen.label} goes first"
                )
            )
        else:
            chosen = orphan.state
    if chosen is None:
        return OrphanDecision(kept=tuple(kept))
    role = "voter" if chosen.voter else "learner"
    healthy = sum(voter_health.values())
    voters_left = len(voter_health) - (1 if chosen.voter else 0)
    return OrphanDecision(
        remove=chosen,
        why=(
            f"{role} {chosen.label} belongs to no Machine and no Node and has been unhealthy for "
            f"{grace:.0f}s or more; {healthy} healthy of {voters_left} voters remain"
        ),
        kept=tuple(kept),
    )


def kept_counts(kept: Sequence[Kept]) -> Mapping[str, int]:
    """How many members stay per reason, every reason present (the gauge's values)."""
    counts = dict.fromkeys(KEPT_REASONS, 0)
    for item in kept:
        counts[item.reason] += 1
    return counts
