"""The ControlPlane's status: replica counts, phase, and one function per condition.

Computed from scratch every reconcile from the gathered facts and the decisions taken (the
step, the preflight failures, the remediation decision), without lastTransitionTime: the
reconciler sets the result over the stored conditions with
:func:`controllers.conditions.set_conditions`, which keeps other writers' conditions.

What the conditions promise (each function says which anchor it follows and why):

* ``Available`` (:func:`available_condition`): the control plane serves: etcd has quorum and at
  least one Machine serves (KCP's rule);
* ``Degraded`` (:func:`degraded_condition`): something needs a human: a configuration problem
  (which also holds scale-in and rollout, as CPMS does: see
  :func:`controllers.controlplane.scale.next_step`), a Failed Machine, or fewer ready Machines
  than ``replicas`` for longer than :data:`NOT_READY_GRACE` (which holds nothing);
* ``Progressing``, ``MachinesReady``, ``Remediating``: what is under way and what it waits for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from api.controlplane import (
    CONDITION_AVAILABLE,
    CONDITION_DEGRADED,
    CONDITION_MACHINES_READY,
    CONDITION_PROGRESSING,
    CONDITION_REMEDIATING,
    Phase,
)
from api.controlplane_reasons import (
    REASON_AS_EXPECTED,
    REASON_ETCD_QUORUM_LOST,
    REASON_MACHINE_FAILED,
    REASON_MACHINE_NOT_WATCHED,
    REASON_MACHINES_ALREADY_OWNED,
    REASON_MACHINES_NOT_READY,
    REASON_MISSING_REPLICAS,
    REASON_NO_MACHINE_AVAILABLE,
    REASON_PAUSED,
    REASON_REMEDIATING,
    REASON_UNMANAGED_NODES,
)
from api.quorum import quorum as quorum_of
from controllers.common import format_time, now
from controllers.conditions import condition, set_conditions
from controllers.controlplane.etcdview import EtcdView
from controllers.controlplane.inactive import inactive_progress
from controllers.controlplane.machines import MachineInfo
from controllers.controlplane.plan import blocked_progress, etcd_status
from controllers.controlplane.preflight import PreflightFailure
from controllers.controlplane.remediation import RemediationDecision
from controllers.controlplane.step import UP_TO_DATE, Step
from controllers.controlplane.unwatched import unwatched_message
from runtime.jsoncodec import JSON

NOT_READY_GRACE: Final = timedelta(minutes=5)
"""How long fewer Machines than ``replicas`` may be ready before the ControlPlane is Degraded.

Long enough for a Machine's reboot (its Node NotReady for a minute or two) and for a new
Machine to boot and join, so neither flaps ``Degraded``; the same order as the usual
MachineHealthCheck ``unhealthyConditions`` timeout (5 minutes), so Degraded says a human should
look about when remediation would start. ``MachinesReady`` still turns False at once, as
KCP's does; the grace belongs only to the condition that pages someone."""


@dataclass(frozen=True)
class StatusInputs:
    """Everything :func:`compute_status` needs."""

    replicas: int
    selector: str
    generation: int
    machines: Sequence[MachineInfo]
    step: Step | None = None
    preflight_failures: Sequence[PreflightFailure] = ()
    paused: bool = False
    inactive: bool = False
    """``spec.state`` is Inactive: ``step`` is what it would do (see :mod:`.inactive`)."""
    deleting: bool = False
    owned_by_others: Sequence[str] = ()
    unmanaged_nodes: Sequence[str] = ()
    unwatched: Sequence[str] = ()
    """Machines it controls that lost the control-plane role label (:mod:`.unwatched`)."""
    remediation: RemediationDecision | None = None
    """The decision about the Machine marked unhealthy, when there is one."""
    autorepair: bool = False
    """``spec.enableAutorepair`` on a ControlPlane not paused: its own MachineHealthCheck marks a
    Failed Machine at once, so its remediation replaces it (see :func:`failure_of`)."""
    remediating: bool = False
    """A remediation is in progress (started now, or its Machine is still being replaced)."""
    failure: tuple[str, str] | None = None
    """``(reason, message)`` of a problem only a human can fix."""
    components: JSON | None = None
    """The ControlPlane's ``ControlPlaneComponentsHealthy``
    (:func:`~controllers.controlplane.components.controlplane_condition`); None: not read."""
    etcd: EtcdView | None = None
    """What etcd said this pass (stacked etcd); None with external etcd, or before any Machine."""
    at: datetime = field(default_factory=now)
    """The time the status is computed for (the grace of :func:`unready_beyond_grace`)."""

    @property
    def active(self) -> list[MachineInfo]:
        """The Machines not being deleted."""
        return [m for m in self.machines if not m.deleting]

    @property
    def outdated(self) -> list[MachineInfo]:
        """The Machines not being deleted that must be replaced."""
        return [m for m in self.active if m.outdated]

    @property
    def missing(self) -> int:
        """spec.replicas − available Machines, never negative."""
        return max(self.replicas - sum(m.available for m in self.machines), 0)


def compute_status(inputs: StatusInputs) -> JSON:
    """The ControlPlane's status, without lastTransitionTime (see :mod:`controllers.conditions`).

    Counts: ``replicas`` (owned Machines, deleting included), ``updatedReplicas`` (not deleting,
    not outdated and ready: :attr:`~controllers.controlplane.machines.MachineInfo.updated`, the
    ControlPlaneMachineSet's count, so ``updatedReplicas == spec.replicas`` says the rollout is
    done; the same readiness as ``readyReplicas``), ``readyReplicas`` (Running with a Ready
    Node and healthy control-plane components), ``availableReplicas`` (not deleting, ready and a
    healthy etcd voter), ``unavailableReplicas`` (spec.replicas − available, never negative).
    Phase: :func:`phase`. Conditions: one function each. ``etcd``:
    :func:`~controllers.controlplane.plan.etcd_status` (absent without a readable stacked etcd).
    """
    machines = inputs.machines
    failure = failure_of(inputs)
    remediating = is_remediating(inputs)
    return {
        "replicas": len(machines),
        "updatedReplicas": sum(m.updated for m in machines),
        "readyReplicas": sum(m.ready for m in machines),
        "availableReplicas": sum(m.available for m in machines),
        "unavailableReplicas": inputs.missing,
        "selector": inputs.selector,
        "observedGeneration": inputs.generation,
        "phase": phase(inputs, failure=failure, remediating=remediating),
        "conditions": [
            available_condition(inputs),
            progressing_condition(inputs),
            degraded_condition(inputs, failure),
            machines_ready_condition(inputs),
            remediating_condition(inputs, remediating),
            *([inputs.components] if inputs.components is not None else []),
        ],
        "failureReason": failure[0] if failure else None,
        "failureMessage": failure[1] if failure else None,
        "etcd": etcd_status(inputs.etcd),
    }


def status_to_write(current: Mapping[str, Any], computed: Mapping[str, Any], when: datetime) -> JSON:
    """The status to patch: ``computed`` with its conditions set over the stored ones
    (:func:`controllers.conditions.set_conditions`: other writers' conditions and the transition
    times of unchanged statuses kept) and the stored ``lastRemediation`` kept when this pass
    recorded none."""
    status = dict(computed)
    ours = {str(entry["type"]): entry for entry in computed.get("conditions") or ()}
    status["conditions"] = set_conditions(current.get("conditions") or [], ours, when)
    if "lastRemediation" not in status and current.get("lastRemediation"):
        status["lastRemediation"] = current["lastRemediation"]
    return status


def status_unchanged(current: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """Whether writing ``status`` would change nothing in ``current``: every field it sets has
    that value already, and every field it clears (None) is absent. An unchanged status is never
    written, so a reconcile that finds nothing new costs no API write."""
    return all(current.get(k) == v for k, v in status.items() if v is not None) and not any(
        current.get(k) is not None for k, v in status.items() if v is None
    )


def failure_of(inputs: StatusInputs) -> tuple[str, str] | None:
    """The problem only a human can fix: the one given, else Failed Machines (``MachineFailed``).

    A Failed Machine a health check has marked, or will mark at once (``autorepair``: the
    ControlPlane's own MachineHealthCheck judges a Failed Machine unhealthy without a timeout), is
    one the ControlPlane replaces itself, by its remediation and within its retry bounds: the
    message says so, and what that remediation waits for, rather than asking for a delete. A
    delete by hand would get a replacement at once, outside the backoff that keeps a template
    whose Machines fail from being retried in a tight loop; once the retries are spent, the
    remediation's own failure (``ReplacementsFailing``, ``MaxRetryReached``) is the one given and
    says what to do. A Failed Machine nothing will mark (autorepair off and no other health check's
    mark, or the ControlPlane paused) is left to a human: fix the cause and delete it.
    """
    if inputs.failure is not None:
        return inputs.failure
    failed = sorted((m for m in inputs.machines if m.failed), key=lambda m: m.name)
    if not failed:
        return None
    ours = ", ".join(m.name for m in failed if m.marked_unhealthy or inputs.autorepair)
    a_humans = ", ".join(m.name for m in failed if not (m.marked_unhealthy or inputs.autorepair))
    parts = []
    if a_humans:
        parts.append(
            f"Machine(s) {a_humans} Failed; see their status.errorMessage, fix the cause and delete "
            "them to get replacements"
        )
    if ours:
        remediation = inputs.remediation
        waits = (
            f" ({remediation.reason}: {remediation.message})"
            if remediation and not remediation.allowed
            else ""
        )
        parts.append(
            f"Machine(s) {ours} Failed; see their status.errorMessage: the health check marks them "
            f"and the ControlPlane replaces them itself{waits}; if the replacements fail too, fix "
            "the template or the provider"
        )
    return REASON_MACHINE_FAILED, "; ".join(parts)


def is_remediating(inputs: StatusInputs) -> bool:
    """A remediation is in progress, or was allowed in this reconcile."""
    return inputs.remediating or (inputs.remediation is not None and inputs.remediation.allowed)


def phase(inputs: StatusInputs, *, failure: tuple[str, str] | None, remediating: bool) -> Phase:
    """Deleting > Remediating > Degraded > Pending (no Machine) > Provisioning (none ready)
    > Updating (outdated Machines) > Scaling (count differs) > Running. An Inactive ControlPlane
    is never Remediating, Updating or Scaling: nothing is under way (``Progressing`` says what
    would be)."""
    machines, active = inputs.machines, inputs.active
    if inputs.deleting:
        return "Deleting"
    if remediating and not inputs.inactive:
        return "Remediating"
    if failure is not None or inputs.owned_by_others:
        return "Degraded"
    if not machines:
        return "Pending"
    if not any(m.ready for m in machines):
        return "Provisioning"
    if inputs.inactive:
        return "Running"
    if inputs.outdated:
        return "Updating"
    if len(active) != inputs.replicas or len(machines) != len(active):
        return "Scaling"
    return "Running"


def _condition(type_: str, status: bool, reason: str, message: str) -> JSON:
    return condition(type_, "True" if status else "False", reason, message)


def etcd_quorum(etcd: EtcdView) -> tuple[bool, str]:
    """Whether the stacked etcd has quorum, and how that was seen.

    Quorum: more than half of the voters (members that are not learners, with or without a
    Machine) answered a health read. Only the members of this ControlPlane's Machines are asked,
    so a healthy member without a Machine is not counted for quorum: the answer errs towards "no
    quorum", never the other way. An etcd that cannot be asked has no quorum we know of.
    """
    if not etcd.facts.reachable:
        return False, f"etcd cannot be asked: {etcd.facts.error}"
    voters = len(etcd.facts.member_names) - len(etcd.facts.learners)
    healthy = len(etcd.healthy)
    quorum = voters > 0 and healthy >= quorum_of(voters)
    verdict = "has quorum" if quorum else "has no quorum"
    return quorum, f"etcd {verdict} ({healthy} of {voters} voter(s) healthy)"


def available_condition(inputs: StatusInputs) -> JSON:
    """``Available``: the control plane serves: etcd has quorum and at least one Machine serves.

    KCP's rule (its Available needs etcd quorum and one Machine whose control plane is healthy),
    rather than one judged by Machines alone: a control plane without etcd quorum serves no
    write, so calling it available would be a lie. The message says what was judged:

    * stacked etcd (``inputs.etcd`` is the view the reconciler gathered): :func:`etcd_quorum`,
      and a Machine serves when it is available (ready, its member a healthy voter);
    * external etcd (no view while Machines are owned): Machines only, a Machine serving when
      it is ready; that etcd is its owner's to watch.

    True with reason ``AsExpected`` when every desired replica is available, ``MissingReplicas``
    when some are missing but the control plane still serves (with less to spare). False with
    ``EtcdQuorumLost`` (stacked etcd without quorum, or not answering) or ``NoMachineAvailable``.
    """
    available = sum(m.available for m in inputs.machines)
    serving = f"{available} Machine(s) serve"
    if inputs.etcd is not None:
        quorum, etcd = etcd_quorum(inputs.etcd)
    else:
        quorum, etcd = True, "external etcd, not checked" if inputs.machines else "no etcd yet"
    summary = f"{etcd}; {serving}"
    if not quorum:
        return _condition(CONDITION_AVAILABLE, False, REASON_ETCD_QUORUM_LOST, summary)
    if available == 0:
        return _condition(CONDITION_AVAILABLE, False, REASON_NO_MACHINE_AVAILABLE, summary)
    if inputs.missing == 0:
        return _condition(CONDITION_AVAILABLE, True, REASON_AS_EXPECTED, summary)
    return _condition(
        CONDITION_AVAILABLE,
        True,
        REASON_MISSING_REPLICAS,
        f"Missing {inputs.missing} available replica(s); {summary}",
    )


def progressing_condition(inputs: StatusInputs) -> JSON:
    """``Progressing``: True while a step is under way or held back; the reason and message are
    the plan (:mod:`~controllers.controlplane.plan` lists the reasons).

    By precedence: ``Inactive`` (False, what it would do:
    :func:`~controllers.controlplane.inactive.inactive_progress`), ``Paused`` (False, and the
    step it would take), ``Remediating`` (a remediation started this pass: the decision's
    message names the Machine), the preflight's reason when it holds the step
    (:func:`~controllers.controlplane.plan.blocked_progress`), the step's own reason, else
    ``UpToDate``. A step with nothing to do (``UpToDate``, OnDelete's
    ``WaitingForManualDeletion``) is False.
    """
    step = inputs.step
    if inputs.inactive:
        return _condition(CONDITION_PROGRESSING, False, *inactive_progress(step))
    if inputs.paused:
        then = f"; then: {step.message}" if step is not None and step.action != "none" else ""
        return _condition(
            CONDITION_PROGRESSING,
            False,
            REASON_PAUSED,
            f"spec.paused is true: no Machine is created or deleted{then}",
        )
    decision = inputs.remediation
    if decision is not None and decision.allowed:
        return _condition(CONDITION_PROGRESSING, True, REASON_REMEDIATING, decision.message)
    if inputs.preflight_failures:
        return _condition(
            CONDITION_PROGRESSING, True, *blocked_progress(inputs.preflight_failures, inputs.machines, step)
        )
    if step is not None and step.action != "none":
        return _condition(CONDITION_PROGRESSING, True, step.reason, step.message)
    if step is not None:
        message = step.message if step.reason != UP_TO_DATE.reason else _up_to_date(inputs)
        return _condition(CONDITION_PROGRESSING, False, step.reason, message)
    return _condition(CONDITION_PROGRESSING, False, UP_TO_DATE.reason, _up_to_date(inputs))


def _up_to_date(inputs: StatusInputs) -> str:
    return f"All {len(inputs.active)} Machine(s) are up to date"


def unready_beyond_grace(
    replicas: int, machines: Sequence[MachineInfo], *, now: datetime, grace: timedelta = NOT_READY_GRACE
) -> list[MachineInfo]:
    """The Machines that make the ControlPlane Degraded for being unready (empty: none do).

    Only while fewer Machines not being deleted are ready than ``replicas``: an unready
    replacement next to ``replicas`` ready Machines costs nothing yet. Then, the Machines not
    being deleted that are unready since at least ``grace`` before ``now``: since their Node's
    Ready condition last changed (:attr:`MachineInfo.not_ready_since`), or since their creation
    when their Node never came. Both times are stored in the API, so an operator restart does not
    restart the clock. A Machine not created yet (the step that creates it is held or under way)
    is reported by ``Progressing``, not here: the shortfall is judged on Machines that exist.
    The reconciler looks again when the first grace ends (:func:`seconds_until_degraded`), so
    Degraded turns True then, not up to a resync period later.
    """
    active = [m for m in machines if not m.deleting]
    if sum(m.ready for m in active) >= replicas:
        return []
    return sorted(
        (m for m in active if not m.ready and (m.not_ready_since or m.created) + grace <= now),
        key=lambda m: m.name,
    )


def seconds_until_degraded(
    replicas: int, machines: Sequence[MachineInfo], *, now: datetime, grace: timedelta = NOT_READY_GRACE
) -> float | None:
    """Seconds until an unready Machine's grace ends and :func:`unready_beyond_grace` names it,
    or None when none will without a change (which a watch event brings: a Node's readiness,
    a Machine's phase). No watch event marks the end of a grace, so the reconciler requeues for
    it; a Machine whose grace ended already is reported now and needs no wake-up."""
    active = [m for m in machines if not m.deleting]
    if sum(m.ready for m in active) >= replicas:
        return None
    ends = [((m.not_ready_since or m.created) + grace - now).total_seconds() for m in active if not m.ready]
    pending = [end for end in ends if end > 0]
    return max(min(pending), 1.0) if pending else None


def degraded_condition(inputs: StatusInputs, failure: tuple[str, str] | None) -> JSON:
    """``Degraded``: True when something needs a human. The first one's reason, every one's message:

    * the :func:`failure_of` (Failed Machines, maxRetry reached);
    * configuration problems, which also hold scale-in and rollout until fixed (CPMS; see
      :func:`controllers.controlplane.scale.next_step`): Machines the selector matches but
      another controller owns (``MachinesAlreadyOwned``), control-plane Nodes without a Machine
      (``UnmanagedNodes``);
    * fewer ready Machines than ``replicas`` beyond :data:`NOT_READY_GRACE`
      (``MachinesNotReady``, :func:`unready_beyond_grace`): holds nothing, so a rollout can still
      replace those Machines and remediation goes on.
    """
    problems: list[tuple[str, str]] = []
    if failure is not None:
        problems.append(failure)
    if inputs.owned_by_others:
        problems.append(
            (
                REASON_MACHINES_ALREADY_OWNED,
                f"Machine(s) {', '.join(inputs.owned_by_others)} match spec.selector but another controller "
                "owns them; they are left alone",
            )
        )
    if inputs.unwatched:
        problems.append((REASON_MACHINE_NOT_WATCHED, unwatched_message(inputs.unwatched)))
    if inputs.unmanaged_nodes:
        problems.append(
            (
                REASON_UNMANAGED_NODES,
                f"control-plane Node(s) {', '.join(inputs.unmanaged_nodes)} have no Machine",
            )
        )
    unready = unready_beyond_grace(inputs.replicas, inputs.machines, now=inputs.at)
    if unready:
        ready = sum(m.ready for m in inputs.active)
        since = ", ".join(f"{m.name} since {format_time(m.not_ready_since or m.created)}" for m in unready)
        problems.append(
            (
                REASON_MACHINES_NOT_READY,
                f"{ready} of {inputs.replicas} Machine(s) ready for more than {NOT_READY_GRACE}; "
                f"not ready: {since}",
            )
        )
    if not problems:
        return _condition(CONDITION_DEGRADED, False, REASON_AS_EXPECTED, "")
    return _condition(CONDITION_DEGRADED, True, problems[0][0], "; ".join(message for _, message in problems))


def machines_ready_condition(inputs: StatusInputs) -> JSON:
    """``MachinesReady``: every Machine not being deleted is Running with a Ready Node."""
    not_ready = sorted(m.name for m in inputs.active if not m.ready)
    if not not_ready:
        return _condition(CONDITION_MACHINES_READY, True, REASON_AS_EXPECTED, "")
    message = f"Machine(s) {', '.join(not_ready)} not ready"
    return _condition(CONDITION_MACHINES_READY, False, REASON_MACHINES_NOT_READY, message)


def remediating_condition(inputs: StatusInputs, remediating: bool) -> JSON:
    """``Remediating``: True while a remediation is in progress; else False with the reason the
    marked Machine's remediation waits (the decision's), or ``AsExpected`` when none is marked."""
    decision = inputs.remediation
    if remediating:
        message = decision.message if decision and decision.allowed else ""
        return _condition(
            CONDITION_REMEDIATING, True, REASON_REMEDIATING, message or "Replacing an unhealthy Machine"
        )
    if decision is not None:
        return _condition(CONDITION_REMEDIATING, False, decision.reason, decision.message)
    return _condition(CONDITION_REMEDIATING, False, REASON_AS_EXPECTED, "")
