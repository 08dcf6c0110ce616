"""Remediation of the ControlPlane's unhealthy Machines: whether one may be replaced now, and the
MachineHealthCheck budget that decides which Machines get marked at all.

KubeadmControlPlane's safety rules, adapted to an etcd-quorum hook that holds a deleting
Machine's healthy voter until its replacement votes. Each rule is a function that returns the
decision that blocks the remediation, or None to let the next rule judge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from api.meta import parse_duration
from controllers.controlplane.machines import MachineInfo
from controllers.etcd import membership


@dataclass(frozen=True)
class RemediationDecision:
    """Whether the unhealthy Machine may be remediated now, and the retry count to record."""

    allowed: bool
    reason: str
    message: str
    retry_count: int = 0
    requeue_after: float | None = None
    """Seconds until it may be allowed (retryPeriod), when that is what blocks it."""
    needs_human: bool = False
    """maxRetry is exhausted: only a human can go on."""
    resumed: bool = False
    """``target`` is already recorded as the last remediation but was never deleted (the process
    died between the record and the delete): carry that remediation out, do not record a new one."""


# ---------------------------------------------------------------------------------------------- quorum


def quorum_kept_without(machines: Sequence[MachineInfo], target: str) -> bool:
    """Whether removing ``target``'s member keeps a quorum among the healthy voters left
    (:func:`controllers.etcd.membership.quorum_kept_without` over the Machines' voters)."""
    return membership.quorum_kept_without({m.name: m.etcd_healthy for m in machines if m.etcd_voter}, target)


def health_check_budget(replicas: int, machines: Sequence[MachineInfo]) -> int:
    """The owned MachineHealthCheck's ``maxUnhealthy``: the failed Machines etcd can lose, plus
    the Machines in transition.

    etcd can lose (n − 1) / 2 of n members, n being the larger of the replica count and the
    owned Machines: what etcd can lose depends on the members that are there, and during a
    scale-in they are still there. With the replica count alone, a member dying after a scale-in
    to 1 was requested would get a budget of 0, never be replaced, and hold the scale-in (which
    waits for every voter to be healthy) for ever.

    A MachineHealthCheck counts a Machine being deleted or created
    (:attr:`MachineInfo.in_transition`) as not healthy, as machine-api's does, but it is no
    failure: during a replacement the old Machine, whose voter the etcd-quorum hook holds until
    the new one votes, and the new one would otherwise use up a 3-replica control plane's whole
    budget; a Machine failing then would never be remediated, while the held deletion waits for
    a replacement that only that remediation lets join. The budget only decides which Machines
    are marked: every remediation still passes :func:`remediation_decision`.
    """
    members = max(replicas, len(machines))
    return membership.fault_tolerance(members) + sum(m.in_transition for m in machines)


def held_by_hook(machine: MachineInfo) -> bool:
    """Being deleted while its member is a healthy voter: the etcd-quorum hook holds the Machine
    until a replacement votes, so its deletion cannot finish before a replacement joins."""
    return machine.deleting and machine.etcd_voter and machine.etcd_healthy


# ---------------------------------------------------------------------------------------------- decision


def remediation_decision(
    *,
    target: MachineInfo,
    machines: Sequence[MachineInfo],
    initialized: bool,
    stacked_etcd: bool,
    last_machine: str | None,
    last_time: datetime | None,
    last_retry_count: int,
    max_retry: int | None,
    retry_period: str | None,
    min_healthy_period: str | None,
    now: datetime,
) -> RemediationDecision:
    """KubeadmControlPlane's safety rules for remediating ``target`` (marked unhealthy).

    Allowed only when every rule lets it, in this order: :func:`last_machine_rule`,
    :func:`previous_remediation_rule`, :func:`deletion_rule`, :func:`provisioning_rule`,
    :func:`quorum_rule`; then a remediation recorded but never carried out is resumed
    (:func:`resumed_decision`), and a new one obeys :func:`retry_rule`.
    """
    resuming = is_resuming(target, machines, last_machine)
    blocked = (
        last_machine_rule(target, machines, initialized=initialized)
        or previous_remediation_rule(target, machines, last_machine)
        or deletion_rule(target, machines)
        or provisioning_rule(target, machines)
        or quorum_rule(target, machines, initialized=initialized, stacked_etcd=stacked_etcd)
    )
    if blocked is not None:
        return blocked
    if resuming:
        return resumed_decision(target, last_retry_count)
    return retry_rule(
        target,
        last_time=last_time,
        last_retry_count=last_retry_count,
        max_retry=max_retry,
        retry_period=retry_period,
        min_healthy_period=min_healthy_period,
        now=now,
    )


def is_resuming(target: MachineInfo, machines: Sequence[MachineInfo], last_machine: str | None) -> bool:
    """Whether ``target`` is the previous remediation's Machine, still there.

    The record is written before the delete; a crash between the two leaves ``target`` itself
    named (``target`` is never deleting): waiting for it to go would wait for ever.
    """
    return last_machine == target.name and any(m.name == target.name for m in machines)


def last_machine_rule(
    target: MachineInfo, machines: Sequence[MachineInfo], *, initialized: bool
) -> RemediationDecision | None:
    """Never remediate the only Machine of an initialised control plane: its member is the
    whole etcd cluster, and deleting it would lose every byte of it."""
    if initialized and len(machines) < 2:
        return RemediationDecision(
            False,
            "CannotRemediateLastMachine",
            f"Machine {target.name} is the only control-plane Machine; remediating it would lose etcd: "
            "scale to 3 replicas or repair it by hand",
        )
    return None


def previous_remediation_rule(
    target: MachineInfo, machines: Sequence[MachineInfo], last_machine: str | None
) -> RemediationDecision | None:
    """One remediation at a time: wait while the previous remediation's Machine is still there.

    Two exceptions, both because waiting would wait for ever: it is ``target`` itself (see
    :func:`is_resuming`), or it is :func:`held_by_hook` (its Node failed but its member is a
    healthy voter: it goes only once a replacement votes, which no Machine failing the
    preflight lets join). Every member removal stays gated by the etcd-quorum hook, and
    :func:`quorum_rule` still holds for ``target``.
    """
    previous = next((m for m in machines if m.name == last_machine), None) if last_machine else None
    resuming = previous is not None and previous.name == target.name
    if previous is not None and not resuming and not held_by_hook(previous):
        return RemediationDecision(
            False,
            "WaitingForPreviousRemediation",
            f"The previous remediation (Machine {last_machine}) has not finished",
        )
    return None


def deletion_rule(target: MachineInfo, machines: Sequence[MachineInfo]) -> RemediationDecision | None:
    """Wait while another Machine is being deleted (a membership change in flight).

    Except one :func:`held_by_hook`: the etcd-quorum hook holds it until its replacement votes,
    and no replacement joins while ``target`` fails the preflight (etcd takes no new member
    while a voter is dead), so waiting for it would wait for ever. Every member removal stays
    gated by the hook controller.
    """
    deleting = sorted(
        m.name for m in machines if m.name != target.name and m.deleting and not held_by_hook(m)
    )
    if deleting:
        return RemediationDecision(
            False, "WaitingForDeletion", f"Machine(s) {', '.join(deleting)} being deleted; remediation waits"
        )
    return None


def provisioning_rule(target: MachineInfo, machines: Sequence[MachineInfo]) -> RemediationDecision | None:
    """Wait while another Machine is still provisioning (a member may be joining).

    Except, when ``target``'s member is an unhealthy voter, a Machine with no etcd member yet:
    etcd refuses the member add while a voter is unhealthy, so it joins only after ``target``'s
    removal, and waiting for it would wait for ever. A Machine whose member has joined (as a
    learner) is always waited for.
    """
    blocks_joins = target.etcd_voter and not target.etcd_healthy
    provisioning = sorted(
        m.name
        for m in machines
        if m.name != target.name
        and not m.deleting
        and not m.ready
        and not m.unhealthy
        and (m.has_etcd_member or not blocks_joins)
    )
    if provisioning:
        return RemediationDecision(
            False,
            "WaitingForProvisioning",
            f"Machine(s) {', '.join(provisioning)} still provisioning; remediation waits",
        )
    return None


def quorum_rule(
    target: MachineInfo, machines: Sequence[MachineInfo], *, initialized: bool, stacked_etcd: bool
) -> RemediationDecision | None:
    """With stacked etcd, remediate a voter only when :func:`quorum_kept_without` it: removing
    its member must leave a quorum of healthy voters, or the cluster stops taking writes."""
    if stacked_etcd and initialized and target.etcd_voter and not quorum_kept_without(machines, target.name):
        return RemediationDecision(
            False,
            "EtcdQuorumAtRisk",
            f"Removing the etcd member of {target.name} would leave too few healthy voters for quorum; "
            "repair the other unhealthy member(s) first",
        )
    return None


def resumed_decision(target: MachineInfo, last_retry_count: int) -> RemediationDecision:
    """Carry out a remediation recorded but never deleted; the retry rules were applied when it
    was recorded, so it keeps that record's count."""
    return RemediationDecision(
        True,
        "Remediating",
        f"Replacing unhealthy Machine {target.name} (its remediation was recorded but the Machine "
        "not yet deleted)",
        retry_count=last_retry_count,
        resumed=True,
    )


def retry_rule(
    target: MachineInfo,
    *,
    last_time: datetime | None,
    last_retry_count: int,
    max_retry: int | None,
    retry_period: str | None,
    min_healthy_period: str | None,
    now: datetime,
) -> RemediationDecision:
    """A remediation within ``minHealthyPeriod`` (default 1h) of the previous one is a retry: it
    waits ``retryPeriod`` after it, and stops after ``maxRetry`` retries (then a human must act:
    replacing a Machine that keeps failing only hides the cause); a later one starts a new count.
    """
    retry_count = 0
    if last_time is not None and now - last_time < parse_duration(min_healthy_period or "1h"):
        retry_count = last_retry_count + 1
        if max_retry is not None and retry_count > max_retry:
            return RemediationDecision(
                False,
                "MaxRetryReached",
                f"Machine {target.name} failed again within minHealthyPeriod after {last_retry_count} "
                f"remediation retry(ies) (maxRetry {max_retry}); find the cause, then delete the Machine "
                "by hand",
                retry_count=retry_count,
                needs_human=True,
            )
        wait = last_time + parse_duration(retry_period or "0") - now
        if wait > timedelta(0):
            return RemediationDecision(
                False,
                "WaitingForRetryPeriod",
                f"Remediation of {target.name} waits for retryPeriod ({retry_period}) after the previous one",
                retry_count=retry_count,
                requeue_after=wait.total_seconds(),
            )
    return RemediationDecision(
        True, "Remediating", f"Replacing unhealthy Machine {target.name}", retry_count=retry_count
    )
