"""The MachineHealthCheck's status and the short-circuit's Event, as tables."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api.meta import format_time
from controllers.conditions import condition, set_conditions
from controllers.machinehealthcheck.external import ExternalOutcome
from controllers.machinehealthcheck.health import ShortCircuit, short_circuit
from controllers.machinehealthcheck.status import EventNote, mhc_status, restricted_event
from runtime.jsoncodec import JSON

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
EARLIER = format_time(NOW - timedelta(minutes=5))
AT_NOW = format_time(NOW)

ALLOWED = ShortCircuit(allowed=True, remediations_allowed=1, unhealthy=0)
BLOCKED = short_circuit("40%", 5, 2)
TEMPLATE = "RebootRemediationTemplate ns/reboot"
REQUEST = "RebootRemediation ns/m1"

ALLOWED_TRUE = {"type": "RemediationAllowed", "status": "True", "lastTransitionTime": AT_NOW}
TEMPLATE_TRUE = {
    "type": "ExternalRemediationTemplateAvailable",
    "status": "True",
    "lastTransitionTime": AT_NOW,
}
REQUEST_TRUE = {"type": "ExternalRemediationRequestAvailable", "status": "True", "lastTransitionTime": AT_NOW}


@pytest.mark.parametrize(
    ("stored", "decision", "outcomes", "expected"),
    [
        pytest.param(
            [], ALLOWED, (), [ALLOWED_TRUE], id="when remediation is allowed it says RemediationAllowed"
        ),
        pytest.param(
            [],
            BLOCKED,
            (),
            [
                {
                    "type": "RemediationAllowed",
                    "status": "False",
                    "severity": "Warning",
                    "reason": "TooManyUnhealthy",
                    "message": BLOCKED.message,
                    "lastTransitionTime": AT_NOW,
                }
            ],
            id="when short-circuited it says TooManyUnhealthy with the short-circuit's message",
        ),
        pytest.param(
            [{"type": "RemediationAllowed", "status": "True", "lastTransitionTime": EARLIER}],
            ALLOWED,
            (),
            [{"type": "RemediationAllowed", "status": "True", "lastTransitionTime": EARLIER}],
            id="when the status stays it keeps the transition time",
        ),
        pytest.param(
            [{"type": "Other", "status": "True"}],
            ALLOWED,
            (),
            [{"type": "Other", "status": "True"}, ALLOWED_TRUE],
            id="when another condition is stored it keeps it in its place",
        ),
        pytest.param(
            [],
            ALLOWED,
            [ExternalOutcome(TEMPLATE, REQUEST, template_error="not found")],
            [
                ALLOWED_TRUE,
                {
                    "type": "ExternalRemediationTemplateAvailable",
                    "status": "False",
                    "severity": "Error",
                    "reason": "ExternalRemediationTemplateNotFound",
                    "message": f"{TEMPLATE}: not found",
                    "lastTransitionTime": AT_NOW,
                },
            ],
            id="when the template could not be read it says so and nothing of the request",
        ),
        pytest.param(
            [],
            ALLOWED,
            [ExternalOutcome(TEMPLATE, REQUEST, create_error="forbidden")],
            [
                ALLOWED_TRUE,
                TEMPLATE_TRUE,
                {
                    "type": "ExternalRemediationRequestAvailable",
                    "status": "False",
                    "severity": "Error",
                    "reason": "ExternalRemediationRequestCreationFailed",
                    "message": f"{REQUEST}: forbidden",
                    "lastTransitionTime": AT_NOW,
                },
            ],
            id="when the create was refused it says the template is there and the request is not",
        ),
        pytest.param(
            [],
            ALLOWED,
            [ExternalOutcome(TEMPLATE, REQUEST)],
            [ALLOWED_TRUE, TEMPLATE_TRUE, REQUEST_TRUE],
            id="when the request was created it says both are available",
        ),
        pytest.param(
            [],
            ALLOWED,
            [
                ExternalOutcome(TEMPLATE, REQUEST, create_error="forbidden"),
                ExternalOutcome(TEMPLATE, REQUEST),
            ],
            [ALLOWED_TRUE, TEMPLATE_TRUE, REQUEST_TRUE],
            id="when two attempts were made the last one says what each condition is",
        ),
    ],
)
def test_mhc_status_conditions(
    stored: list[JSON], decision: ShortCircuit, outcomes: Sequence[ExternalOutcome], expected: list[JSON]
) -> None:
    status = mhc_status(
        {"conditions": stored}, expected=5, healthy=4, decision=decision, outcomes=outcomes, now=NOW
    )
    assert status.conditions == expected
    assert status.body() == {
        "expectedMachines": 5,
        "currentHealthy": 4,
        "remediationsAllowed": decision.remediations_allowed,
        "conditions": expected,
    }


def test_status_is_written_only_when_a_field_or_condition_changed() -> None:
    conditions = [{"type": "RemediationAllowed", "status": "True", "lastTransitionTime": EARLIER}]
    old = {"expectedMachines": 3, "currentHealthy": 3, "remediationsAllowed": 1, "conditions": conditions}
    same = mhc_status(old, expected=3, healthy=3, decision=ALLOWED, now=NOW)
    assert not same.differs_from(old)
    assert not same.differs_from({**old, "other": "kept"})
    assert mhc_status(old, expected=3, healthy=2, decision=ALLOWED, now=NOW).differs_from(old)
    # the counts stay, only the condition turns False
    blocked = ShortCircuit(allowed=False, remediations_allowed=1, unhealthy=0, message="blocked")
    assert mhc_status(old, expected=3, healthy=3, decision=blocked, now=NOW).differs_from(old)
    assert same.conditions != set_conditions(
        conditions, {"RemediationAllowed": condition("RemediationAllowed", "False")}, NOW
    )
    assert same.differs_from({})


def test_a_transition_time_alone_is_no_change() -> None:
    stored = {
        "expectedMachines": 3,
        "currentHealthy": 3,
        "remediationsAllowed": 1,
        "conditions": [
            {"type": "RemediationAllowed", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}
        ],
    }
    assert not mhc_status(stored, expected=3, healthy=3, decision=ALLOWED, now=NOW).differs_from(stored)


@pytest.mark.parametrize(
    ("max_unhealthy", "expected", "healthy", "event"),
    [
        pytest.param("40%", 5, 3, None, id="when remediation is allowed it sends no Event"),
        pytest.param(
            "40%",
            5,
            2,
            EventNote(
                "Warning",
                "RemediationRestricted",
                "Remediation restricted due to exceeded number of unhealthy machines "
                "(total: 5, unhealthy: 3, maxUnhealthy: 40%)",
            ),
            id="when short-circuited it sends RemediationRestricted with the counts",
        ),
        pytest.param(
            "foo%50",
            3,
            3,
            EventNote(
                "Warning",
                "RemediationRestricted",
                "Remediation restricted due to exceeded number of unhealthy machines "
                "(total: 3, unhealthy: 0, maxUnhealthy: foo%50)",
            ),
            id="when maxUnhealthy is invalid it sends RemediationRestricted with the value as given",
        ),
    ],
)
def test_restricted_event(max_unhealthy: Any, expected: int, healthy: int, event: EventNote | None) -> None:
    decision = short_circuit(max_unhealthy, expected, healthy)
    assert restricted_event(decision, expected, max_unhealthy) == event
