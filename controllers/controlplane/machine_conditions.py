"""What the ControlPlane controller says on its Machines: up to date or why not, and what it decided
about a Machine its health check marked.

``UpToDate`` (:func:`up_to_date_condition`), on every owned Machine not being deleted:

==========  ================================  ==================================================
status      reason                            when (:func:`~.placement.outdated_reason`)
==========  ================================  ==================================================
True        ``UpToDate``                      what it is (providerSpec, failure domain)
                                              matches the template; labels and annotations
                                              are written in place and never count
False       ``FailureDomainNotConfigured``    its failure domain left ``spec.failureDomains``
False       ``TemplateChanged``               its providerSpec differs from the template's
False       ``RolloutAfter``                  created before ``spec.rolloutAfter``, now passed
==========  ================================  ==================================================

``OwnerRemediated`` (:func:`owner_remediated_condition`), on a Machine the MachineHealthCheck
marked (``HealthCheckSucceeded=False``, ``OwnerRemediated=False`` ``WaitingForRemediation``),
always False, its reason what the ControlPlane decided (cluster-api's names):

* ``MachineDeleting``: remediated now (the Machine is deleted; its replacement follows);
* ``RemediationDeferred``: a rule makes it wait; the message starts with the rule's reason
  (``WaitingForPreviousRemediation``, ``WaitingForDeletion``, ``WaitingForProvisioning``,
  ``EtcdUnreachable``, ``EtcdQuorumAtRisk``, ``WaitingForRetryPeriod``), or
  ``OneRemediationAtATime`` when another marked Machine goes first; a rule that holds every
  remediation (``Paused``) is read by every marked Machine, without a retry count;
* ``CannotBeRemediated``: only a human can go on (``MaxRetryReached``, ``ReplacementsFailing``,
  ``CannotRemediateLastMachine``).

The message counts the retries along the Machine's lineage (``retry 2 of maxRetry 3``, see
:mod:`~.remediation_record`), the limit being the one the retry rule applied (``maxRetry``, or
the operator's default limit when it is not set). While the reason is a waiting one the health
check may still take its mark back (the Machine recovered): it then removes the condition.

``ControlPlaneComponentsHealthy`` (:func:`~.components.machine_condition`), on every owned Machine
not being deleted: whether its kube-apiserver, kube-controller-manager, kube-scheduler and etcd
Pods are Ready, the reason naming the failing one.

All are written only when they change (:mod:`controllers.conditions`), never on the
Machines of an Inactive ControlPlane (the reconciler does not call this for one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from api.controlplane import ControlPlaneSpec
from api.controlplane_reasons import REASON_ONE_REMEDIATION_AT_A_TIME
from api.machine import (
    CONDITION_COMPONENTS_HEALTHY,
    CONDITION_OWNER_REMEDIATED,
    CONDITION_UP_TO_DATE,
    REASON_CANNOT_BE_REMEDIATED,
    REASON_MACHINE_DELETING,
    REASON_REMEDIATION_DEFERRED,
    REASON_UP_TO_DATE,
    SEVERITY_WARNING,
)
from controllers.common import now
from controllers.conditions import Wanted, condition, write_machine_conditions
from controllers.controlplane.components import MachineComponents, machine_condition
from controllers.controlplane.facts import ComponentsView
from controllers.controlplane.machines import marked_for_remediation
from controllers.controlplane.placement import outdated_reason
from controllers.controlplane.remediation import RemediationDecision, paused_rule
from controllers.controlplane.remediation_record import lineage_of
from runtime.client import JSON, Client


def up_to_date_condition(spec: ControlPlaneSpec, machine: Mapping[str, Any], when: datetime) -> JSON:
    """``UpToDate`` of ``machine`` at ``when``."""
    why = outdated_reason(spec, machine, now=when)
    if why is None:
        return condition(CONDITION_UP_TO_DATE, "True", REASON_UP_TO_DATE)
    reason, message = why
    return condition(CONDITION_UP_TO_DATE, "False", reason, f"outdated: {message}", SEVERITY_WARNING)


def retry_text(
    machine: Mapping[str, Any], retry_count: int, max_retry: int | None, default_limit: int | None = None
) -> str:
    """Where this remediation stands along the Machine's lineage: of the user's ``max_retry``,
    else of the operator's ``default_limit`` (when the retry rule applied one)."""
    lineage = lineage_of(machine)
    if max_retry is not None:
        limit = f"maxRetry {max_retry}"
    else:
        limit = f"the default limit {default_limit}" if default_limit is not None else "no maxRetry"
    if retry_count == 0 or lineage is None:
        return f"first remediation of its lineage ({limit})"
    return f"retry {retry_count} of {limit} along the lineage of Machine {lineage.machine}"


def owner_remediated_condition(
    spec: ControlPlaneSpec,
    machine: Mapping[str, Any],
    target: str | None,
    decision: RemediationDecision | None,
) -> JSON | None:
    """``OwnerRemediated`` of the marked ``machine``, given the remediation step's ``target`` and
    ``decision`` this pass; None when there is nothing new to say (no decision taken).

    A decision about the whole ControlPlane (``whole_control_plane``) is every marked Machine's,
    as its rule wrote it. Without a decision the rules that judge the ControlPlane alone still
    say it (:func:`~.remediation.paused_rule`), whichever Machine would have been judged."""
    name = machine["metadata"]["name"]
    max_retry = spec.remediation.max_retry if spec.remediation else None
    if decision is None:
        decision = paused_rule(paused=spec.paused)
    if decision is not None and decision.whole_control_plane:
        message = f"{decision.reason}: {decision.message}"
        return condition(CONDITION_OWNER_REMEDIATED, "False", REASON_REMEDIATION_DEFERRED, message)
    if target is None or decision is None:
        return None
    if name != target:
        message = f"{REASON_ONE_REMEDIATION_AT_A_TIME}: marked Machine {target} is remediated first"
        return condition(CONDITION_OWNER_REMEDIATED, "False", REASON_REMEDIATION_DEFERRED, message)
    retries = retry_text(machine, decision.retry_count, max_retry, decision.retry_limit)
    if decision.allowed:
        message = f"{decision.message}; {retries}"
        return condition(CONDITION_OWNER_REMEDIATED, "False", REASON_MACHINE_DELETING, message)
    message = f"{decision.reason}: {decision.message}; {retries}"
    if decision.needs_human:
        return condition(
            CONDITION_OWNER_REMEDIATED, "False", REASON_CANNOT_BE_REMEDIATED, message, SEVERITY_WARNING
        )
    return condition(CONDITION_OWNER_REMEDIATED, "False", REASON_REMEDIATION_DEFERRED, message)


def wanted_conditions(
    spec: ControlPlaneSpec,
    owned: Sequence[Mapping[str, Any]],
    target: str | None,
    decision: RemediationDecision | None,
    when: datetime,
    components: ComponentsView | None = None,
) -> dict[str, Wanted]:
    """Machine name → the conditions to set on it this pass (Machines being deleted get only the
    remediation's own ``MachineDeleting``)."""
    wanted: dict[str, Wanted] = {}
    for machine in owned:
        name = machine["metadata"]["name"]
        entry: dict[str, JSON] = {}
        if not machine["metadata"].get("deletionTimestamp"):
            entry[CONDITION_UP_TO_DATE] = up_to_date_condition(spec, machine, when)
            if components is not None:
                judged = components.machines.get(name) or MachineComponents()
                entry[CONDITION_COMPONENTS_HEALTHY] = machine_condition(judged, components.check_reason)
            owner = owner_remediated_condition(spec, machine, target, decision)
            if owner is not None and marked_for_remediation(machine):
                entry[CONDITION_OWNER_REMEDIATED] = owner
        if entry:
            wanted[name] = entry
    return wanted


async def write_conditions(
    client: Client,
    spec: ControlPlaneSpec,
    owned: Sequence[Mapping[str, Any]],
    target: str | None,
    decision: RemediationDecision | None,
    components: ComponentsView | None = None,
) -> None:
    """Write each owned Machine's conditions of this pass where they changed. ``target`` and
    ``decision`` are the remediation step's (None when it decided nothing); ``components`` what
    was read of the control-plane components (None: no ``ControlPlaneComponentsHealthy``)."""
    by_name = {machine["metadata"]["name"]: machine for machine in owned}
    for name, wanted in wanted_conditions(spec, owned, target, decision, now(), components).items():
        await write_machine_conditions(client, by_name[name], wanted)
