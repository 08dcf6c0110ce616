"""Remediation of the ControlPlane's unhealthy Machines: whether the marked Machine
:mod:`~controllers.controlplane.remediation_order` picks may be replaced now, how its retries are
counted (the MachineHealthCheck budget that decides which Machines get marked at all is
:func:`~controllers.controlplane.healthcheck.health_check_budget`).

KubeadmControlPlane's safety rules, adapted to an etcd-quorum hook that holds a deleting
Machine's healthy voter until its replacement votes. Each rule is a function that returns the
decision that blocks the remediation, or None to let the next rule judge. Retries are counted
per lineage, from the record the replacement carries
(:mod:`~controllers.controlplane.remediation_record`).

Before the deletion, etcd leadership moves off the target as before a scale-in's deletion (the
reconciler's leadership hand-off: to the oldest other healthy voter). KubeadmControlPlane moves
it to the newest healthy Machine, and gives up the remediation when there is none or the move
fails. We go on: the etcd-quorum hook still removes the member only when quorum allows, and
losing the leader costs one election, while a remediation stuck on a refused move would leave a
dead Machine in place; the refusal is reported (event ``LeadershipNotMoved``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from api.controlplane import RESUME_REMEDIATION_ANNOTATION
from api.controlplane_reasons import (
    REASON_CANNOT_REMEDIATE_LAST_MACHINE,
    REASON_ETCD_QUORUM_AT_RISK,
    REASON_ETCD_UNREACHABLE,
    REASON_MAX_RETRY_REACHED,
    REASON_PAUSED,
    REASON_REMEDIATING,
    REASON_REPLACEMENTS_FAILING,
    REASON_WAITING_FOR_DELETION,
    REASON_WAITING_FOR_HEALTHY_COMPONENTS,
    REASON_WAITING_FOR_PREVIOUS_REMEDIATION,
    REASON_WAITING_FOR_PROVISIONING,
    REASON_WAITING_FOR_RETRY_PERIOD,
)
from api.meta import parse_duration
from api.quorum import quorum_kept_without
from controllers.common import format_time, parse_time
from controllers.controlplane.machines import MachineInfo, machine_voters
from controllers.controlplane.remediation_record import RemediationRecord


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
    whole_control_plane: bool = False
    """The rule holds every remediation of the ControlPlane, not only ``target``'s, until the
    ControlPlane itself changes (:func:`paused_rule`): every marked Machine reads this decision as
    it is (no retry was counted), and no timer looks again, since the update that lifts it wakes
    the reconciler."""
    retry_limit: int | None = None
    """The retries the lineage may have (``maxRetry``, or the operator's default), when
    :func:`retry_rule` judged; None when another rule decided."""
    resume_used: bool = False
    """The resume annotation started this remediation afresh: the reconciler clears it in the
    write that records the remediation (it is used once)."""


@dataclass(frozen=True)
class RetryBackoff:
    """How :func:`retry_rule` bounds a lineage where ``spec.remediation`` says nothing: the wait
    before retry n is ``initial × factor^(n − 1)`` seconds, at most ``cap``, and a lineage gets
    ``max_retry`` retries. The numbers are the operator's (``cpo run --remediation-backoff-*``,
    ``--remediation-max-retry``), resolved in one place,
    :meth:`~controllers.controlplane.options.ControlPlaneOptions.with_defaults`."""

    initial: float
    factor: float
    cap: float
    max_retry: int

    def period(self, retry: int) -> float:
        """Seconds retry ``retry`` (1 for the first) waits after the remediation before it."""
        return float(min(self.initial * self.factor ** max(retry - 1, 0), self.cap))


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
    etcd_error: str | None = None,
    last_machine: str | None,
    resuming: RemediationRecord | None,
    lineage: RemediationRecord | None,
    max_retry: int | None,
    retry_period: str | None,
    min_healthy_period: str | None,
    now: datetime,
    backoff: RetryBackoff,
    resume: str | None = None,
    paused: bool = False,
) -> RemediationDecision:
    """KubeadmControlPlane's safety rules for remediating ``target`` (marked unhealthy).

    ``paused`` is ``spec.paused``; ``last_machine`` the previous remediation's Machine
    (``status.lastRemediation``); ``etcd_error`` why etcd could not be read this pass (None when
    it was read, or not asked); ``resuming`` the ControlPlane's in-progress record for ``target``
    when one was written and ``target`` not deleted yet (a crash between the two); ``lineage`` the
    record ``target`` carries as a replacement of a remediated Machine; ``backoff`` what bounds
    its retries where ``spec.remediation`` says nothing; ``resume`` the ControlPlane's
    :data:`~api.controlplane.RESUME_REMEDIATION_ANNOTATION` (None when absent).

    Allowed only when every rule lets it, in this order: :func:`paused_rule` (first: it holds
    every Machine alike, a recorded remediation's too), :func:`last_machine_rule`,
    :func:`previous_remediation_rule`, :func:`deletion_rule`, :func:`provisioning_rule`,
    :func:`etcd_readable_rule`, :func:`quorum_rule`, :func:`components_rule`; then a remediation
    recorded but never carried out is resumed (:func:`resumed_decision`), and a new one obeys
    :func:`retry_rule` along ``target``'s lineage.
    """
    blocked = (
        paused_rule(paused=paused)
        or last_machine_rule(target, machines, initialized=initialized)
        or previous_remediation_rule(target, machines, last_machine)
        or deletion_rule(target, machines)
        or provisioning_rule(target, machines)
        or etcd_readable_rule(
            target, initialized=initialized, stacked_etcd=stacked_etcd, etcd_error=etcd_error
        )
        or quorum_rule(target, machines, initialized=initialized, stacked_etcd=stacked_etcd)
        or components_rule(target, machines)
    )
    if blocked is not None:
        return blocked
    if resuming is not None and resuming.machine == target.name:
        return resumed_decision(target, resuming.retry_count)
    return retry_rule(
        target,
        lineage=lineage,
        max_retry=max_retry,
        retry_period=retry_period,
        min_healthy_period=min_healthy_period,
        now=now,
        backoff=backoff,
        resume=resume,
    )


def paused_rule(*, paused: bool) -> RemediationDecision | None:
    """A paused ControlPlane (``spec.paused``) starts no remediation, as it creates and deletes
    no Machine, until it is resumed. The decision is about the whole ControlPlane
    (``whole_control_plane``): every marked Machine's ``OwnerRemediated`` says it, and only the
    update that resumes the ControlPlane lifts it, so no timer looks again. KubeadmControlPlane,
    paused, does not reconcile at all."""
    if paused:
        return RemediationDecision(
            False,
            REASON_PAUSED,
            "the ControlPlane is paused (spec.paused); no remediation starts",
            whole_control_plane=True,
        )
    return None


def last_machine_rule(
    target: MachineInfo, machines: Sequence[MachineInfo], *, initialized: bool
) -> RemediationDecision | None:
    """Never remediate the only Machine of an initialised control plane: its member is the
    whole etcd cluster, and deleting it would lose every byte of it. Only a human can go on
    (``needs_human``: the Machine is ``CannotBeRemediated`` and the ControlPlane ``Degraded``),
    as in KubeadmControlPlane, which refuses remediation below two Machines."""
    if initialized and len(machines) < 2:
        return RemediationDecision(
            False,
            REASON_CANNOT_REMEDIATE_LAST_MACHINE,
            f"Machine {target.name} is the only control-plane Machine; remediating it would lose etcd: "
            "scale to 3 replicas or repair it by hand",
            needs_human=True,
        )
    return None


def previous_remediation_rule(
    target: MachineInfo, machines: Sequence[MachineInfo], last_machine: str | None
) -> RemediationDecision | None:
    """One remediation at a time: wait while the previous remediation's Machine is still there.

    Two exceptions, both because waiting would wait for ever: it is ``target`` itself (recorded,
    then the process died before the delete: the delete is what is awaited), or it is
    :func:`held_by_hook` (its Node failed but its member is a healthy voter: it goes only once a
    replacement votes, which no Machine failing the preflight lets join). Every member removal
    stays gated by the etcd-quorum hook, and :func:`quorum_rule` still holds for ``target``.
    """
    previous = next((m for m in machines if m.name == last_machine), None) if last_machine else None
    resuming = previous is not None and previous.name == target.name
    if previous is not None and not resuming and not held_by_hook(previous):
        return RemediationDecision(
            False,
            REASON_WAITING_FOR_PREVIOUS_REMEDIATION,
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
            False,
            REASON_WAITING_FOR_DELETION,
            f"Machine(s) {', '.join(deleting)} being deleted; remediation waits",
        )
    return None


def provisioning_rule(target: MachineInfo, machines: Sequence[MachineInfo]) -> RemediationDecision | None:
    """Wait while another Machine is still provisioning (a member may be joining).

    Except, when ``target``'s member is an unhealthy voter, a Machine with no etcd member yet:
    etcd refuses the member add while a voter is unhealthy, so it joins only after ``target``'s
    removal, and waiting for it would wait for ever. A Machine whose member has joined (as a
    learner) is always waited for.
    """
    blocks_joins = target.unhealthy_voter
    provisioning = sorted(
        m.name
        for m in machines
        if m.name != target.name
        and not m.deleting
        and not m.node_up
        and not m.unhealthy
        and (m.has_etcd_member or not blocks_joins)
    )
    if provisioning:
        return RemediationDecision(
            False,
            REASON_WAITING_FOR_PROVISIONING,
            f"Machine(s) {', '.join(provisioning)} still provisioning; remediation waits",
        )
    return None


def components_rule(target: MachineInfo, machines: Sequence[MachineInfo]) -> RemediationDecision | None:
    """Wait while no Machine but ``target`` keeps a full healthy set of control-plane components,
    when ``target`` keeps one (Running, its Node Ready, every component healthy) and some other
    Machine's components are broken or unseen. A target that serves no full set (its Node down,
    its member dead, its own components broken) is never held: removing it loses nothing that
    runs, and holding it would keep a dead member that every other step waits for.

    KubeadmControlPlane remediates only when a healthy Machine is left to take etcd leadership
    and serve; here "healthy" includes its API server, controller manager, scheduler and etcd
    Pods (:mod:`~controllers.controlplane.components`): removing the one Machine whose components
    all run, while the others' crash-loop, would leave the cluster without a working API server.
    Without component failures elsewhere the rule says nothing (the other rules decide as before).
    """
    if not target.ready:
        return None  # it serves no full set now: removing it leaves every set that there is
    others = [m for m in machines if m.name != target.name and not m.deleting]
    if not any(m.components_unhealthy or m.components_pending for m in others):
        return None
    if any(m.ready for m in others):
        return None
    broken = "; ".join(f"{m.name}: {m.components_message}" for m in others if m.components_message)
    return RemediationDecision(
        False,
        REASON_WAITING_FOR_HEALTHY_COMPONENTS,
        f"no other Machine has every control-plane component healthy ({broken}); remediation waits",
    )


def etcd_readable_rule(
    target: MachineInfo, *, initialized: bool, stacked_etcd: bool, etcd_error: str | None
) -> RemediationDecision | None:
    """With stacked etcd on an initialised control plane, wait while etcd cannot be read
    (``etcd_error`` says why): whether removing ``target``'s member keeps a quorum cannot be told
    then, and a delete cannot be taken back.

    KubeadmControlPlane's ``reconcileUnhealthyMachines`` defers the same way when it has no etcd
    member list ("unable to check etcd cluster health before remediation"). Without this rule
    every Machine would count as no voter while etcd is unreadable, and :func:`quorum_rule`
    would let any marked Machine go.
    """
    if stacked_etcd and initialized and etcd_error is not None:
        return RemediationDecision(
            False,
            REASON_ETCD_UNREACHABLE,
            f"etcd could not be read ({etcd_error}): remediation of {target.name} waits, since "
            "whether its removal keeps etcd's quorum cannot be told",
        )
    return None


def quorum_rule(
    target: MachineInfo, machines: Sequence[MachineInfo], *, initialized: bool, stacked_etcd: bool
) -> RemediationDecision | None:
    """With stacked etcd, remediate a voter only when :func:`api.quorum.quorum_kept_without` it:
    removing its member must leave a quorum of healthy voters, or the cluster stops taking writes."""
    voters = machine_voters(machines)
    if stacked_etcd and initialized and target.etcd_voter and not quorum_kept_without(voters, target.name):
        return RemediationDecision(
            False,
            REASON_ETCD_QUORUM_AT_RISK,
            f"Removing the etcd member of {target.name} would leave too few healthy voters for quorum; "
            "repair the other unhealthy member(s) first",
        )
    return None


def resumed_decision(target: MachineInfo, last_retry_count: int) -> RemediationDecision:
    """Carry out a remediation recorded but never deleted; the retry rules were applied when it
    was recorded, so it keeps that record's count."""
    return RemediationDecision(
        True,
        REASON_REMEDIATING,
        f"Replacing unhealthy Machine {target.name} (its remediation was recorded but the Machine "
        "not yet deleted)",
        retry_count=last_retry_count,
        resumed=True,
    )


def retry_rule(
    target: MachineInfo,
    *,
    lineage: RemediationRecord | None,
    max_retry: int | None,
    retry_period: str | None,
    min_healthy_period: str | None,
    now: datetime,
    backoff: RetryBackoff,
    resume: str | None = None,
) -> RemediationDecision:
    """Retries are counted along ``target``'s lineage, and bounded by default.

    **Counting.** ``target`` was created to replace a remediated Machine (``lineage``, the
    record it carries) less than ``minHealthyPeriod`` (default 1h) ago, so remediating it is
    retry ``lineage.retryCount + 1``. A Machine without a record (a rollout's, a scale-out's),
    or one that stayed healthy for ``minHealthyPeriod``, starts at 0: two unrelated failures
    are never retries of each other. The next Machine created, by whichever step, carries the
    record: a template whose Machines fail is one lineage, however its first Machine came.

    **Bounding.** Retry n waits ``retryPeriod`` after the remediation it follows when the user
    set it, else the operator's backoff (:class:`RetryBackoff`: by default 30 s before retry 1,
    doubled per retry, at most 10 min); it stops after ``maxRetry`` retries when set, else after
    the operator's default count (5). Stopped, the decision needs a human
    (``MaxRetryReached`` when the user's ``maxRetry`` stopped it, ``ReplacementsFailing`` when
    the default did), and the message says the two ways on:

    * **fix the template**: an outdated ``target`` (template changed, its domain removed, or
      ``rolloutAfter`` passed since its creation) starts a new lineage (retry 0, at once): its
      failure says nothing about what is asked for now;
    * **the resume annotation** :data:`~api.controlplane.RESUME_REMEDIATION_ANNOTATION` on the
      ControlPlane, an RFC 3339 time later than ``target``'s failure (when the health check
      marked it; its creation when that is not known): the lineage starts again at retry 0, at
      once, and the reconciler removes the annotation in the write that records the remediation
      (used once: a manifest applied again later, with the same time, is older than any later
      failure, so it resumes nothing). A value that is not such a time is ignored and left in
      place, and the refusal says why; it never resumes a later failure either.

    Both also cut a wait short; neither bypasses the safety rules, judged before this one.

    KubeadmControlPlane's checkRetryLimits counts the same way (the same record and default
    minHealthyPeriod; it refuses once the carried count reached maxRetry: our count + 1 exceeding
    it), but there an unset maxRetry is no limit, an unset retryPeriod no wait, and only a human
    editing Machines goes on. OpenShift's ControlPlaneMachineSet never replaces a failed
    replacement: it stops at the first and reports it. We retry (a provider's failures are often
    short: quota, capacity), boundedly by default, and say how to go on.
    """
    if lineage is None or now - lineage.timestamp >= parse_duration(min_healthy_period or "1h"):
        return RemediationDecision(True, REASON_REMEDIATING, f"Replacing unhealthy Machine {target.name}")
    limit = max_retry if max_retry is not None else backoff.max_retry
    fresh, note = fresh_start(target, lineage, resume=resume, limit=limit)
    if fresh is not None:
        return fresh
    retry_count = lineage.retry_count + 1
    if retry_count > limit:
        return retries_exhausted(target, lineage, user_limit=max_retry is not None, limit=limit, note=note)
    if retry_period is not None:
        period, source = parse_duration(retry_period), f"retryPeriod ({retry_period})"
    else:
        period = timedelta(seconds=backoff.period(retry_count))
        source = f"the backoff before retry {retry_count} ({period.total_seconds():g}s)"
    wait = lineage.timestamp + period - now
    if wait > timedelta(0):
        return RemediationDecision(
            False,
            REASON_WAITING_FOR_RETRY_PERIOD,
            f"Remediation of {target.name} waits for {source} after that of "
            f"{lineage.machine}, which it replaced",
            retry_count=retry_count,
            requeue_after=wait.total_seconds(),
            retry_limit=limit,
        )
    return RemediationDecision(
        True,
        REASON_REMEDIATING,
        f"Replacing unhealthy Machine {target.name} (retry {retry_count} after {lineage.machine})",
        retry_count=retry_count,
        retry_limit=limit,
    )


def fresh_start(
    target: MachineInfo, lineage: RemediationRecord, *, resume: str | None, limit: int
) -> tuple[RemediationDecision | None, str]:
    """The decision that starts ``target``'s lineage again (retry 0, at once), or None and, when
    a resume annotation was there but does not apply, the note saying why (:func:`retry_rule`:
    an outdated ``target``, or a resume annotation later than its failure)."""
    if target.outdated:
        message = (
            f"Replacing unhealthy Machine {target.name} (outdated since it was created: the retries "
            f"of the lineage of {lineage.machine} start again)"
        )
        return RemediationDecision(True, REASON_REMEDIATING, message, retry_limit=limit), ""
    if resume is None:
        return None, ""
    failed_at = target.marked_since or target.created
    resume_at = parse_time(resume)
    if resume_at is not None and resume_at > failed_at:
        message = (
            f"Replacing unhealthy Machine {target.name} (resumed by {RESUME_REMEDIATION_ANNOTATION} "
            f"{resume}: the retries of the lineage of {lineage.machine} start again)"
        )
        decision = RemediationDecision(True, REASON_REMEDIATING, message, retry_limit=limit, resume_used=True)
        return decision, ""
    return None, (
        f"; {RESUME_REMEDIATION_ANNOTATION} {resume!r} is ignored: it must be an RFC 3339 time "
        f"later than this Machine's failure at {format_time(failed_at)}"
    )


def retries_exhausted(
    target: MachineInfo, lineage: RemediationRecord, *, user_limit: bool, limit: int, note: str
) -> RemediationDecision:
    """The refusal once a lineage used its ``limit`` retries: ``MaxRetryReached`` when the limit
    is the user's ``maxRetry``, ``ReplacementsFailing`` when it is the operator's default; the
    message says how to go on (and ``note``, why a resume annotation did not)."""
    which = f"maxRetry {limit}" if user_limit else f"the default limit of {limit} retries"
    return RemediationDecision(
        False,
        REASON_MAX_RETRY_REACHED if user_limit else REASON_REPLACEMENTS_FAILING,
        f"Machine {target.name}, which replaced remediated Machine {lineage.machine}, failed within "
        f"minHealthyPeriod after {lineage.retry_count} remediation retry(ies) of that Machine "
        f"({which}); no more replacements are made: find the cause, then fix the template (a "
        f"template change resumes), or, once the cause is fixed elsewhere, set the annotation "
        f"{RESUME_REMEDIATION_ANNOTATION}=<the current time, RFC 3339> on the ControlPlane{note}",
        retry_count=lineage.retry_count + 1,
        needs_human=True,
        retry_limit=limit,
    )
