"""The ControlPlane's plan as its status says it: the ``Progressing`` reason of a step that cannot
start, ``status.etcd``, and the Event announcing a decision.

The reasons of ``Progressing`` (constants of :mod:`api.controlplane_reasons`; ``cpo explain``
shows them as the plan; ``docs/operations.md`` says what to do about each blocked one):

=========================  ==============================================================
step under way or next     ``ScalingUp``, ``ScalingDown``, ``ReplacingOutdated``,
                           ``ReplacingDeleted``, ``Remediating``, ``Rebalancing``
waiting, nothing wrong     ``WaitingForMachine`` (a new Machine provisions),
                           ``WaitingForLearner`` (a new member not promoted yet),
                           ``RemovingMember`` / ``WaitingForDeletion`` (a deletion the
                           etcd-quorum hook holds until the replacement votes)
blocked (a human may act)  :data:`BLOCKED_BY_CHECK` (one per failed preflight check),
                           ``HeldByConfiguration``, ``Paused``
nothing to do              ``UpToDate``, ``WaitingForManualDeletion`` (OnDelete), ``Inactive``
=========================  ==============================================================

A blocked or waiting message names the fact and the Machine first, then the step it holds:
"EtcdVotersHealthy: voter(s) unhealthy: demo-q: ...; then: Replacing outdated Machine demo-abc
in zone-b: creating its replacement".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from api.controlplane_reasons import (
    BLOCKED_BY_CHECK,
    CHECK_MACHINES_READY,
    REASON_BLOCKED,
    REASON_HELD_BY_CONFIGURATION,
    REASON_INACTIVE,
    REASON_PAUSED,
    REASON_WAITING_FOR_LEARNER,
    REASON_WAITING_FOR_MACHINE,
)
from api.quorum import fault_tolerance, quorum
from controllers.controlplane.etcdview import EtcdView
from controllers.controlplane.machines import MachineInfo
from controllers.controlplane.preflight import PreflightFailure
from controllers.controlplane.step import Step
from runtime.jsoncodec import JSON

BLOCKING_REASONS: Final = frozenset(
    {
        *(reason for reason in BLOCKED_BY_CHECK.values() if reason != REASON_WAITING_FOR_LEARNER),
        REASON_HELD_BY_CONFIGURATION,
        REASON_PAUSED,
    }
)
"""``Progressing`` reasons saying a step cannot start until something changes (a Warning Event)."""


def blocked_progress(
    failures: Sequence[PreflightFailure], machines: Sequence[MachineInfo], step: Step | None
) -> tuple[str, str]:
    """``(reason, message)`` of ``Progressing`` when the preflight holds ``step``.

    The reason is the first failure's in :data:`~api.controlplane_reasons.BLOCKED_BY_CHECK`
    order; ``MachineNodesReady`` failing only for Machines that are still provisioning (not
    Failed, never Ready) is :data:`~api.controlplane_reasons.REASON_WAITING_FOR_MACHINE`. The
    message lists every failure (check: fact) and the step held.
    """
    order = list(BLOCKED_BY_CHECK)
    first = min(failures, key=lambda f: order.index(f.check) if f.check in order else len(order))
    reason = BLOCKED_BY_CHECK.get(first.check, REASON_BLOCKED)
    by_name = {m.name: m for m in machines}
    if first.check == CHECK_MACHINES_READY and all(
        name in by_name and by_name[name].in_transition and not by_name[name].failed
        for name in first.machines
    ):
        reason = REASON_WAITING_FOR_MACHINE
    facts = "; ".join(f"{f.check}: {f.message}" for f in failures)
    then = f"; then: {step.message}" if step is not None and step.action != "none" else ""
    return reason, facts + then


def etcd_status(view: EtcdView | None) -> JSON | None:
    """``status.etcd`` from what etcd said this pass; None (the field absent) with external etcd,
    before any Machine, or when etcd could not be read.

    Counts only, and the leader's Machine: nothing that changes on a settled cluster, so the
    status is not rewritten every pass. ``healthyVoters`` counts the voters of this
    ControlPlane's Machines that answered a health read; ``faultTolerance`` is how many more
    voters may fail now while a quorum stays (the healthy voters beyond the quorum, at most
    :func:`api.quorum.fault_tolerance` of the voters).
    """
    if view is None or not view.facts.reachable:
        return None
    learners = len(view.facts.learners)
    voters = len(view.facts.member_names) - learners
    healthy = len(view.healthy)
    status: JSON = {
        "voters": voters,
        "learners": learners,
        "healthyVoters": healthy,
        "quorum": quorum(voters),
        "faultTolerance": min(fault_tolerance(voters), max(0, healthy - quorum(voters))),
    }
    if view.leader:
        status["leaderMachine"] = view.leader
    return status


def decision_event(
    previous: Mapping[str, Any] | None, current: Mapping[str, Any]
) -> tuple[str, str, str] | None:
    """``(type, reason, message)`` of the Event announcing the ``Progressing`` condition
    ``current``, or None when ``previous`` (the stored one) says the same already: one Event per
    decision, not one per pass. A blocked reason is a Warning; an Inactive ControlPlane decides
    nothing, so it gets none."""
    reason, message = str(current.get("reason") or ""), str(current.get("message") or "")
    if previous is not None and (previous.get("reason"), previous.get("message")) == (reason, message):
        return None
    if reason == REASON_INACTIVE or not reason:
        return None
    return ("Warning" if reason in BLOCKING_REASONS else "Normal", reason, message)
