"""The MachineHealthCheck's status and the short-circuit's Event, as pure functions of one pass.

==================================  ==============================================================
:func:`mhc_status`                  the fields this controller owns: ``expectedMachines``,
                                    ``currentHealthy``, ``remediationsAllowed`` and the conditions
:func:`remediation_allowed`         ``RemediationAllowed``: True, or False with reason
                                    ``TooManyUnhealthy`` and the short-circuit's message
:func:`external_conditions`         ``ExternalRemediationTemplateAvailable`` /
                                    ``ExternalRemediationRequestAvailable`` from an
                                    :class:`~controllers.machinehealthcheck.external.ExternalOutcome`
:meth:`MhcStatus.differs_from`      whether the stored status needs this write at all
:func:`restricted_event`            the Warning ``RemediationRestricted`` while short-circuited
==================================  ==============================================================

Conditions are stated by type and set over the stored ones with
:func:`controllers.conditions.set_conditions`; a write happens only when
:func:`controllers.conditions.changes` finds a condition that differs or a count differs, so a
settled MachineHealthCheck costs no API write. This controller is the only writer of these fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from api.machine import (
    CONDITION_EXTERNAL_REMEDIATION_REQUEST_AVAILABLE,
    CONDITION_EXTERNAL_REMEDIATION_TEMPLATE_AVAILABLE,
    CONDITION_REMEDIATION_ALLOWED,
    REASON_EXTERNAL_REMEDIATION_REQUEST_CREATION_FAILED,
    REASON_EXTERNAL_REMEDIATION_TEMPLATE_NOT_FOUND,
    REASON_TOO_MANY_UNHEALTHY,
    SEVERITY_ERROR,
    SEVERITY_WARNING,
)
from controllers.conditions import changes, condition, conditions_of, set_conditions
from runtime.events import EVENT_TYPE_WARNING
from runtime.jsoncodec import JSON

from .external import ExternalOutcome
from .health import ShortCircuit, format_max_unhealthy

EVENT_REMEDIATION_RESTRICTED: Final = "RemediationRestricted"
"""The machine-api-operator's event reason for a short-circuited MachineHealthCheck."""


@dataclass(frozen=True)
class MhcStatus:
    """The status fields this controller owns, as one pass computed them."""

    expected_machines: int
    current_healthy: int
    remediations_allowed: int
    wanted: Mapping[str, JSON | None]
    """The conditions this pass states, by type."""
    conditions: list[JSON]
    """The stored conditions with :attr:`wanted` set: the list written."""

    def fields(self) -> dict[str, int]:
        """The counts, under their status field names."""
        return {
            "expectedMachines": self.expected_machines,
            "currentHealthy": self.current_healthy,
            "remediationsAllowed": self.remediations_allowed,
        }

    def body(self) -> JSON:
        """The ``status`` to patch (a merge patch: fields not listed are left as they are)."""
        return {**self.fields(), "conditions": self.conditions}

    def differs_from(self, stored: Mapping[str, Any]) -> bool:
        """Whether writing this over the ``stored`` status changes anything: a count, or a
        condition by :func:`controllers.conditions.changes` (never a transition time alone)."""
        if any(stored.get(key) != value for key, value in self.fields().items()):
            return True
        return bool(changes(conditions_of({"status": stored}), self.wanted))


def remediation_allowed(decision: ShortCircuit) -> JSON:
    """``RemediationAllowed``: True, or False (``TooManyUnhealthy``, Warning) saying why not."""
    if decision.allowed:
        return condition(CONDITION_REMEDIATION_ALLOWED, "True")
    return condition(
        CONDITION_REMEDIATION_ALLOWED, "False", REASON_TOO_MANY_UNHEALTHY, decision.message, SEVERITY_WARNING
    )


def external_conditions(outcome: ExternalOutcome) -> dict[str, JSON | None]:
    """What one external remediation attempt says: a template that could not be read turns
    ``ExternalRemediationTemplateAvailable`` False (and says nothing of the request, never tried);
    else it is True, and ``ExternalRemediationRequestAvailable`` says whether the create worked.
    Both False ones are Errors: only a human fixes a missing template or missing RBAC."""
    if outcome.template_error is not None:
        return {
            CONDITION_EXTERNAL_REMEDIATION_TEMPLATE_AVAILABLE: condition(
                CONDITION_EXTERNAL_REMEDIATION_TEMPLATE_AVAILABLE,
                "False",
                REASON_EXTERNAL_REMEDIATION_TEMPLATE_NOT_FOUND,
                f"{outcome.template}: {outcome.template_error}",
                SEVERITY_ERROR,
            )
        }
    template = condition(CONDITION_EXTERNAL_REMEDIATION_TEMPLATE_AVAILABLE, "True")
    if outcome.create_error is None:
        request = condition(CONDITION_EXTERNAL_REMEDIATION_REQUEST_AVAILABLE, "True")
    else:
        request = condition(
            CONDITION_EXTERNAL_REMEDIATION_REQUEST_AVAILABLE,
            "False",
            REASON_EXTERNAL_REMEDIATION_REQUEST_CREATION_FAILED,
            f"{outcome.request}: {outcome.create_error}",
            SEVERITY_ERROR,
        )
    return {
        CONDITION_EXTERNAL_REMEDIATION_TEMPLATE_AVAILABLE: template,
        CONDITION_EXTERNAL_REMEDIATION_REQUEST_AVAILABLE: request,
    }


def mhc_status(
    stored: Mapping[str, Any],
    *,
    expected: int,
    healthy: int,
    decision: ShortCircuit,
    outcomes: Sequence[ExternalOutcome] = (),
    now: datetime,
) -> MhcStatus:
    """The status of a pass that checked ``expected`` Machines, ``healthy`` of them healthy.

    ``decision`` is the short-circuit; ``outcomes`` the external remediation attempts of the pass,
    in order (the last one says what each external condition is). ``stored`` is the status as
    read; its conditions are kept, with the wanted ones set (``lastTransitionTime`` moves only
    when a status does).
    """
    wanted: dict[str, JSON | None] = {CONDITION_REMEDIATION_ALLOWED: remediation_allowed(decision)}
    for outcome in outcomes:
        wanted.update(external_conditions(outcome))
    return MhcStatus(
        expected_machines=expected,
        current_healthy=healthy,
        remediations_allowed=decision.remediations_allowed,
        wanted=wanted,
        conditions=set_conditions(conditions_of({"status": stored}), wanted, now),
    )


@dataclass(frozen=True)
class EventNote:
    """An Event to record on the MachineHealthCheck."""

    type: str
    reason: str
    message: str


def restricted_event(decision: ShortCircuit, expected: int, max_unhealthy: Any) -> EventNote | None:
    """The machine-api-operator's Warning ``RemediationRestricted`` while short-circuited, else None.

    Recorded on every pass that is short-circuited, paused or not: the event recorder folds
    repeats of the same message into one Event with a count.
    """
    if decision.allowed:
        return None
    return EventNote(
        EVENT_TYPE_WARNING,
        EVENT_REMEDIATION_RESTRICTED,
        "Remediation restricted due to exceeded number of unhealthy machines "
        f"(total: {expected}, unhealthy: {decision.unhealthy}, "
        f"maxUnhealthy: {format_max_unhealthy(max_unhealthy)})",
    )
