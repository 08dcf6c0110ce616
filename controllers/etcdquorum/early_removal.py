"""The maxSurge-0 early removal: which marked Machine's healthy voter goes before its replacement
votes, so that its host can take the replacement (:func:`early_removal_decision`), a pure rule
beside :func:`~controllers.etcdquorum.rules.removal_decision`, table-tested.

The ControlPlane marks the Machines its ``maxSurge: 0`` rollout or rebalance deletes
(:data:`~api.controlplane.REMOVE_MEMBER_FIRST_ANNOTATION`); :func:`removes_member_first` says
whether the ControlPlane still deletes first. The reconciler decides again from reads made right
before the removal (:meth:`~controllers.etcdquorum.removals.MemberRemover.remove_early`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from api.controlplane import ControlPlaneSpec
from api.quorum import MIN_REPLICAS_FOR_NO_SURGE, quorum, quorum_kept_without
from controllers.etcd.membership import MemberState
from controllers.etcdquorum.rules import (
    WAIT_HEALTHY_VOTERS,
    WAIT_LEARNER_PENDING,
    WAIT_MEMBERS_UNHEALTHY,
    WAIT_ONE_CHANGE_PER_PASS,
    WAIT_OTHER_HOOKS,
    WAIT_QUORUM_AFTER_REMOVAL,
    Decision,
    GuardedMachine,
    Wait,
    member_labels,
    one_at_a_time,
    quorum_lost,
    quorum_lost_waits,
    removal_candidates,
    removal_preference,
    voters_of,
)


def removes_member_first(spec: ControlPlaneSpec) -> bool:
    """Whether the ControlPlane's rollouts delete first (``RollingUpdate`` with ``maxSurge: 0`` and
    at least :data:`~api.quorum.MIN_REPLICAS_FOR_NO_SURGE` replicas; smaller ones always surge):
    only then may a marked Machine's member go before its replacement votes."""
    rolling = spec.strategy.rolling_update
    return (
        spec.strategy.type == "RollingUpdate"
        and rolling is not None
        and rolling.max_surge == 0
        and spec.replicas >= MIN_REPLICAS_FOR_NO_SURGE
    )


def early_removal_decision(
    members: Sequence[MemberState],
    machines: Mapping[str, GuardedMachine],
    desired: int,
    *,
    surge_zero: bool,
) -> Decision:
    """Which healthy voter of a Machine the ControlPlane deleted in a ``maxSurge: 0`` rollout or
    rebalance may be removed *before* its replacement votes, or why it waits.

    ``maxSurge: 0`` exists for clusters with exactly as many hosts as replicas (bare metal). The
    ControlPlane deletes the old Machine first, but while this controller's hook keeps its member
    (until the replacement is a voter: :func:`removal_decision`) the old instance keeps its host,
    the replacement never provisions, and the rollout deadlocks. KCP lets the old member go first
    when the rest of etcd is healthy: its pre-terminate hook removes the member once
    ``targetEtcdClusterHealthy`` holds, forwarding leadership first. Here the same, for deletions
    the ControlPlane marked (:data:`~api.controlplane.REMOVE_MEMBER_FIRST_ANNOTATION`) only; a
    user's or a health check's deletion keeps the add-then-remove order of :func:`removal_decision`.
    The member goes when all of these hold:

    * the ControlPlane still deletes first (``surge_zero``: :func:`removes_member_first`);
    * its Machine is being deleted, carries the hook and the mark, and the member is a healthy
      voter (a learner or a dead voter is :func:`removal_decision`'s);
    * the voters are exactly ``desired`` and no learner is pending: the cluster is whole, and no
      other replacement is under way;
    * no other marked Machine's member is already gone early (its Machine still exists): one
      early removal at a time;
    * every other voter is healthy, and the quorum holds without the member (the reconciler
      decides this again from a health read made right before the removal, not this pass's);
    * our hook is the only lifecycle hook left on the Machine: another hook still holds the
      instance, so removing the member would free no host and only cost a voter.

    The arithmetic: with ``desired`` = n healthy voters, removing one leaves n - 1, all healthy,
    with quorum ⌊(n - 1)/2⌋ + 1 ≤ n - 1 for n ≥ 2; voters never go below ``desired`` - 1, and the
    cluster then survives ⌊(n - 2)/2⌋ failures instead of ⌊(n - 1)/2⌋: one voter of fault
    tolerance is the price of each replacement (for 3 replicas, none is left until the
    replacement votes). That is what the API field's documentation states.
    """
    candidates = [
        m
        for m in removal_candidates(members, machines)
        if m.voter and m.healthy and m.machine is not None and machines[m.machine].remove_member_first
    ]
    if not candidates or not surge_zero:
        return Decision()
    voters = voters_of(members)
    if quorum_lost(members):
        return Decision(waits=quorum_lost_waits(voters, candidates))
    with_member = {m.machine for m in members if m.machine is not None}
    cluster = _Cluster(
        voters=voters,
        desired=desired,
        learners=[m for m in members if m.member.is_learner],
        gone_early=sorted(
            name
            for name, machine in machines.items()
            if machine.deleting and machine.remove_member_first and name not in with_member
        ),
    )
    waits: list[Wait] = []
    allowed: list[MemberState] = []
    for candidate in candidates:
        wait = _early_check(candidate, machines[candidate.machine or ""], cluster)
        if wait is None:
            allowed.append(candidate)
        else:
            waits.append(wait)
    if not allowed:
        return Decision(waits=tuple(waits))
    chosen, *others = removal_preference(allowed, voters, machines)
    return Decision(
        member=chosen,
        why=(
            f"maxSurge 0: its Machine was deleted by the ControlPlane to free its host; "
            f"{len(voters) - 1} healthy of {len(voters) - 1} voters remain (desired {desired}, quorum "
            f"{quorum(len(voters) - 1)}) until the replacement votes"
        ),
        waits=(*waits, *one_at_a_time(chosen, others)),
    )


@dataclass(frozen=True, slots=True)
class _Cluster:
    """What every candidate's check reads of the cluster."""

    voters: list[MemberState]
    desired: int
    learners: list[MemberState]
    gone_early: list[str]
    """Marked Machines still there whose member is already gone."""


def _early_check(candidate: MemberState, machine: GuardedMachine, cluster: _Cluster) -> Wait | None:
    """Why ``candidate`` may not go early, in the order of the docstring's conditions; None when it may."""
    label, voters = candidate.label, cluster.voters
    unhealthy = [m for m in voters if not m.healthy]
    if len(voters) != cluster.desired:
        why = f"{len(voters)} voters, not the {cluster.desired} desired: an early removal needs them all"
        return Wait(machine.name, WAIT_HEALTHY_VOTERS, f"member {label} stays: {why}")
    if cluster.learners:
        why = f"learner {member_labels(cluster.learners)} is not a voter yet"
        return Wait(machine.name, WAIT_LEARNER_PENDING, f"member {label} stays: {why}")
    if cluster.gone_early:
        why = (
            f"the member of {', '.join(cluster.gone_early)} went early, and its replacement does not vote yet"
        )
        return Wait(machine.name, WAIT_ONE_CHANGE_PER_PASS, f"member {label} stays: {why}")
    if unhealthy:
        why = f"unhealthy voters {member_labels(unhealthy)}"
        return Wait(
            machine.name, WAIT_MEMBERS_UNHEALTHY, f"member {label} stays until its replacement votes: {why}"
        )
    if not quorum_kept_without({m.member.id: m.healthy for m in voters}, candidate.member.id):
        why = "would leave fewer healthy voters than their quorum"
        return Wait(machine.name, WAIT_QUORUM_AFTER_REMOVAL, f"removing member {label} early {why}")
    if machine.other_hooks:
        hooks = ", ".join(machine.other_hooks)
        why = f"lifecycle hooks {hooks} still hold the Machine, so removing it frees no host"
        return Wait(
            machine.name, WAIT_OTHER_HOOKS, f"member {label} stays until its replacement votes: {why}"
        )
    return None
