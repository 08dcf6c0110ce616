"""The preflight: the checks a create or delete of the ControlPlane must pass first.

A membership change is safe only on a cluster that is whole. :func:`preflight` runs every check
of :data:`PREFLIGHT_CHECKS` (their names are the ``check`` label of
``cpo_controlplane_preflight_failures_total``; a failed one names in ``Progressing`` what holds the
step) and says which fail; the reconciler takes the step only when none does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from api.controlplane_reasons import (
    CHECK_COMPONENTS_HEALTHY,
    CHECK_ETCD_MEMBER_LISTS_AGREE,
    CHECK_ETCD_MEMBERS_MATCH,
    CHECK_ETCD_NO_ALARMS,
    CHECK_ETCD_NO_PENDING_LEARNER,
    CHECK_ETCD_REACHABLE,
    CHECK_ETCD_VOTERS_REACHABLE,
    CHECK_MACHINES_READY,
)
from api.quorum import quorum_kept_without
from controllers.controlplane.machines import EtcdFacts, MachineInfo, machine_voters
from controllers.controlplane.step import Step

PREFLIGHT_CHECKS: Final = (
    CHECK_MACHINES_READY,
    CHECK_ETCD_REACHABLE,
    CHECK_ETCD_MEMBERS_MATCH,
    CHECK_ETCD_MEMBER_LISTS_AGREE,
    CHECK_ETCD_NO_ALARMS,
    CHECK_ETCD_VOTERS_REACHABLE,
    CHECK_ETCD_NO_PENDING_LEARNER,
    CHECK_COMPONENTS_HEALTHY,
)
"""The checks :func:`preflight` runs (their names are in :mod:`api.controlplane_reasons`)."""


@dataclass(frozen=True)
class PreflightFailure:
    """One failed preflight check."""

    check: str
    """The check's name (one of :data:`PREFLIGHT_CHECKS`)."""
    message: str
    """The fact that fails it, naming the Machines or members concerned."""
    machines: tuple[str, ...] = ()
    """The Machines (or members without one) the fact is about, for the plan's reason."""


def preflight(
    machines: Sequence[MachineInfo],
    etcd: EtcdFacts | None,
    *,
    hosting_etcd: Sequence[str],
    desired: int | None = None,
    step: Step | None = None,
) -> list[PreflightFailure]:
    """Which checks forbid starting ``step`` (a create or delete) now (empty: go ahead).

    * ``MachineNodesReady``: every owned, non-deleting Machine is Running with a Ready Node.
    * ``ControlPlaneComponentsHealthy``: :func:`components_preflight`.
    * With stacked etcd (``etcd`` not None): :func:`etcd_preflight`.

    A membership change is safe only on a cluster that is whole: a create or delete started
    while a Machine or a member is already unwell could take the cluster below quorum. The
    Machine the step itself takes away is not held against it (:func:`excluded_from_preflight`),
    else a rollout or scale-in could never move away from a NotReady Machine, nor a rollback
    remove a replacement that never became Ready.
    """
    removing, replacing = excluded_from_preflight(step)
    if not any(m.name == replacing and m.running for m in machines):
        replacing = None
    failures = machines_ready_preflight(machines, excluding=removing or replacing)
    if step is None or not step.toward_replicas:
        failures.extend(components_preflight(machines, excluding=removing or replacing))
    if etcd is not None:
        failures.extend(
            etcd_preflight(
                etcd, hosting_etcd=hosting_etcd, desired=desired, removing=removing, machines=machines
            )
        )
    return failures


def excluded_from_preflight(step: Step | None) -> tuple[str | None, str | None]:
    """The Machine ``step`` removes, and the Machine a maxSurge-1 create replaces: the ones the
    preflight does not count against the step.

    As KCP's scale-down (cluster-api ``preflightChecks`` with the Machine to delete excluded),
    a delete's preflight ignores its own Machine: its Node readiness, its member's health, its
    pending learner and a missing member. The quorum rule still holds, as a check of its own:
    a voter is removed only when the voters left keep a quorum of healthy ones without it
    (:func:`api.quorum.quorum_kept_without`).

    A maxSurge-1 create ignores only the Node readiness of the Machine it replaces, and only once
    that Machine is Running (a Machine still provisioning may be joining etcd: a second member
    must not join beside it), not its member's health. Adding a learner never changes the
    quorum, but the etcd-quorum hook promotes it as soon as it has caught up: with the replaced
    voter dead, 3 voters with 2 healthy become 4 with 3 healthy, a quorum that now needs the
    new member, so a replacement that fails right after its promotion (a faulty template)
    takes etcd down. Deleting the dead voter first leaves 2 of 2, and its replacement then
    joins a quorum that does not need it. So the create waits (``EtcdVotersHealthy`` names the
    member), and remediation, or a rollout under maxSurge 0, removes the dead member first.
    KCP excludes nothing on a scale-up; a NotReady Node with a healthy member changes no etcd
    arithmetic, so it does not hold back the Machine that replaces it here.
    """
    if step is None or step.machine is None:
        return None, None
    if step.action == "delete":
        return step.machine, None
    if step.action == "create":
        return None, step.machine
    return None, None


def etcd_facts_for_preflight(etcd: EtcdFacts, *, owns_machines: bool) -> EtcdFacts | None:
    """The etcd facts :func:`preflight` judges, or None when etcd is not checked.

    With Machines owned, always ``etcd``: an etcd that cannot be asked fails ``EtcdReachable``.
    With none owned yet, etcd is known only through ``spec.etcd.endpoints``, and:

    * if it answers, it has members, and none of them is a Machine of this ControlPlane: it runs
      on Machines the ControlPlane does not see or select. ``EtcdMembersMatchMachines`` then
      refuses the first create, which would join a cluster whose voters the ControlPlane cannot
      count (the message names the members without a Machine);
    * if it does not answer, it is what a new cluster looks like before its first Machine
      bootstraps it: not checked, so a ControlPlane on a cluster without etcd bootstraps with no
      extra step, as it does when no endpoint is given at all.
    """
    if owns_machines or etcd.reachable:
        return etcd
    return None


def machines_ready_preflight(
    machines: Sequence[MachineInfo], *, excluding: str | None = None
) -> list[PreflightFailure]:
    """``MachineNodesReady``: every owned, non-deleting Machine but ``excluding`` (see
    :func:`excluded_from_preflight`) is Running with a Ready Node."""
    not_ready = sorted(m.name for m in machines if not m.deleting and not m.node_up and m.name != excluding)
    if not not_ready:
        return []
    return [
        PreflightFailure(
            CHECK_MACHINES_READY,
            f"Machine(s) {', '.join(not_ready)} not Running with a Ready Node",
            tuple(not_ready),
        )
    ]


def components_preflight(
    machines: Sequence[MachineInfo], *, excluding: str | None = None
) -> list[PreflightFailure]:
    """``ControlPlaneComponentsHealthy``: every owned, non-deleting Machine but ``excluding`` whose
    Node is Ready has its control-plane components healthy and seen
    (:mod:`~controllers.controlplane.components`).

    As KCP's preflight (``APIServerPodHealthy``, ``ControllerManagerPodHealthy``,
    ``SchedulerPodHealthy``, ``EtcdPodHealthy`` on every Machine before a create or delete): a
    replacement whose API server crash-loops must not let the rollout delete a Machine that
    serves. The Machine the step takes away or replaces is excluded, as for the Node check
    (:func:`excluded_from_preflight`): deleting the Machine whose scheduler crash-loops, or rolling
    back a broken replacement, must not wait on that very Machine. A Machine without a Ready Node
    is the Node check's (its components are not judged).

    :func:`preflight` runs it for deletes and for a rollout's or rebalance's creates (under
    maxSurge 1, their next step deletes a Machine), not for a create toward ``spec.replicas``
    (:attr:`~controllers.controlplane.step.Step.toward_replicas`: a scale-up, the replacement of
    a Machine deleted or being deleted): that create takes nothing away and restores etcd's fault
    tolerance. Holding it would leave the cluster short of a voter until the broken Machine's own
    remediation, and hold every deletion under way with it (the etcd-quorum hook keeps a deleted
    Machine's member until its replacement votes). A broken template yields a broken Machine
    either way, which the hold on deletes and the bounded remediation retries contain.
    KubeadmControlPlane's preflight holds those creates too; it has no such cycle (it removes a
    member before deleting its Machine) and no quorum hook to keep waiting.
    """
    held = [m for m in machines if not m.deleting and m.name != excluding and not m.components_healthy]
    if not held:
        return []
    parts = [
        f"{m.name} ({m.components_message or ', '.join((*m.components_unhealthy, *m.components_pending))})"
        for m in sorted(held, key=lambda m: m.name)
    ]
    return [
        PreflightFailure(
            CHECK_COMPONENTS_HEALTHY,
            f"Machine(s) with control-plane components not healthy: {'; '.join(parts)}",
            tuple(sorted(m.name for m in held)),
        )
    ]


def etcd_preflight(
    etcd: EtcdFacts,
    *,
    hosting_etcd: Sequence[str],
    desired: int | None,
    removing: str | None = None,
    machines: Sequence[MachineInfo] = (),
) -> list[PreflightFailure]:
    """The etcd checks of :func:`preflight`.

    ``EtcdReachable`` (the member list could be read; nothing else is checked without it),
    ``EtcdMembersMatchMachines`` (:func:`members_match_preflight`), ``EtcdMemberListsAgree``
    (every member reports the same list), ``EtcdNoAlarms``, ``EtcdVotersHealthy``
    (:func:`voters_healthy_preflight`), ``EtcdNoPendingLearner``
    (:func:`pending_learner_preflight`). ``removing`` is the Machine a delete step removes
    (:func:`excluded_from_preflight`).
    """
    if not etcd.reachable:
        return [PreflightFailure(CHECK_ETCD_REACHABLE, f"cannot read the etcd member list: {etcd.error}")]
    failures = members_match_preflight(etcd, hosting_etcd, removing)
    if etcd.disagreeing:
        differs = f"member list differs at {', '.join(etcd.disagreeing)}"
        failures.append(PreflightFailure(CHECK_ETCD_MEMBER_LISTS_AGREE, differs))
    if etcd.alarms:
        failures.append(PreflightFailure(CHECK_ETCD_NO_ALARMS, f"active alarm(s): {', '.join(etcd.alarms)}"))
    failures.extend(voters_healthy_preflight(etcd, machines, removing))
    failures.extend(pending_learner_preflight(etcd, desired, removing))
    return failures


def voters_healthy_preflight(
    etcd: EtcdFacts, machines: Sequence[MachineInfo], removing: str | None
) -> list[PreflightFailure]:
    """``EtcdVotersHealthy``: every voter answers a health read, but the member of the Machine a
    delete removes; and removing that member keeps a quorum of healthy voters among the voters
    left (:func:`api.quorum.quorum_kept_without`)."""
    unhealthy = [(label, error) for label, error in etcd.unhealthy_voters if label != removing]
    failures = []
    if unhealthy:
        listed = "; ".join(f"{label}: {error}" for label, error in unhealthy)
        failures.append(
            PreflightFailure(
                CHECK_ETCD_VOTERS_REACHABLE,
                f"voter(s) unhealthy: {listed}",
                tuple(label for label, _ in unhealthy),
            )
        )
    voters = machine_voters(machines)
    if removing in voters and not quorum_kept_without(voters, removing):
        healthy = sum(up for name, up in voters.items() if name != removing)
        failures.append(
            PreflightFailure(
                CHECK_ETCD_VOTERS_REACHABLE,
                f"removing Machine {removing}'s member would leave {healthy} healthy of "
                f"{len(voters) - 1} voter(s), less than their quorum",
                (str(removing),),
            )
        )
    return failures


def members_match_preflight(
    etcd: EtcdFacts, hosting_etcd: Sequence[str], removing: str | None = None
) -> list[PreflightFailure]:
    """``EtcdMembersMatchMachines``: every member belongs to a Machine in ``hosting_etcd`` and
    every such Machine has a member, but ``removing`` (the Machine a delete removes) may lack one.

    A member without a Machine, or a Machine whose member is missing, is a membership change
    someone else started or left half done: counting quorum over it would be counting wrong. A
    Machine being removed without a member (a replacement that never joined) changes no
    membership by going.
    """
    members = set(etcd.member_names)
    hosts = set(hosting_etcd)
    strangers = sorted(name or "(unstarted)" for name in members - hosts)
    missing = sorted(hosts - members - {removing})
    parts = []
    if strangers:
        parts.append(f"member(s) without a Machine: {', '.join(strangers)}")
    if missing:
        parts.append(f"Machine(s) without a member: {', '.join(missing)}")
    if not parts:
        return []
    return [PreflightFailure(CHECK_ETCD_MEMBERS_MATCH, "; ".join(parts), (*strangers, *missing))]


def pending_learner_preflight(
    etcd: EtcdFacts, desired: int | None, removing: str | None = None
) -> list[PreflightFailure]:
    """``EtcdNoPendingLearner``: no learner waits for promotion (the previous step is not finished).

    With ``desired`` (the replica count) a learner counts as pending only while it may still be
    promoted, that is while the voters are at most ``desired``: the etcd-quorum hook never
    promotes beyond desired + 1 voters, so after a scale-in below the voters a learner waits for
    a removal, which only a step of this controller brings. The learner of the Machine a delete
    removes (``removing``) is not waited for: it holds no vote, and it is the step's own.
    """
    voters = len(etcd.member_names) - len(etcd.learners)
    pending = [learner for learner in etcd.learners if learner != removing]
    if pending and (desired is None or voters <= desired):
        return [
            PreflightFailure(
                CHECK_ETCD_NO_PENDING_LEARNER,
                f"learner(s) {', '.join(pending)} not promoted yet",
                tuple(pending),
            )
        ]
    return []
