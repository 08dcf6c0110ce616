"""The MachineHealthCheck health decision as a table: target health, requeue times, the short-circuit.

A Node condition without ``lastTransitionTime``: the machine-api-operator reads it as the zero time,
so a matching condition without one is past any timeout (``target.needsRemediation``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api.meta import format_time
from controllers.machinehealthcheck.health import (
    EXTERNAL_REMEDIATION_ANNOTATION,
    HEALTHY,
    check_unhealthy_conditions,
    check_unhealthy_machine_conditions,
    counts_as_healthy,
    earliest_recheck,
    parse_max_unhealthy,
    short_circuit,
    target_health,
    with_machine_conditions,
)
from runtime.jsoncodec import JSON

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def ago(seconds: float) -> str:
    return format_time(NOW - timedelta(seconds=seconds))


def machine(
    *,
    node: str | None = "n1",
    phase: str = "Running",
    last_updated: float | None = 1000,
    deleting: bool = False,
    annotations: dict[str, str] | None = None,
) -> JSON:
    status: JSON = {"phase": phase}
    if node is not None:
        status["nodeRef"] = {"kind": "Node", "name": node}
    if last_updated is not None:
        status["lastUpdated"] = ago(last_updated)
    metadata: JSON = {"name": "m1", "namespace": "ns"}
    if deleting:
        metadata["deletionTimestamp"] = ago(1)
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "Machine",
        "metadata": metadata,
        "status": status,
    }


def node(**conditions: tuple[str, float]) -> JSON:
    """A Node with conditions ``type=(status, seconds since lastTransitionTime)``."""
    return {
        "metadata": {"name": "n1"},
        "status": {
            "conditions": [
                {"type": t, "status": s, "lastTransitionTime": ago(age)} for t, (s, age) in conditions.items()
            ]
        },
    }


def spec(startup: str | None = "300s", **extra: Any) -> JSON:
    result: JSON = {
        "selector": {},
        "unhealthyConditions": [
            {"type": "Ready", "status": "False", "timeout": "300s"},
            {"type": "Ready", "status": "Unknown", "timeout": "300s"},
        ],
        **extra,
    }
    if startup is not None:
        result["nodeStartupTimeout"] = startup
    return result


@dataclass(frozen=True)
class Case:
    id: str
    machine: JSON
    node: JSON | None
    spec: JSON
    unhealthy: bool
    reason: str = ""
    recheck: float | None = None
    healthy: bool = False


HEALTHY_NODE = node(Ready=("True", 5000))

CASES = [
    Case("healthy", machine(), HEALTHY_NODE, spec(), False, healthy=True),
    Case(
        "no nodeRef past nodeStartupTimeout",
        machine(node=None, phase="Provisioned", last_updated=301),
        None,
        spec(),
        True,
        "NodeStartupTimeout",
    ),
    Case(
        "no nodeRef before nodeStartupTimeout: requeue at the timeout +1s",
        machine(node=None, phase="Provisioned", last_updated=100),
        None,
        spec(),
        False,
        recheck=201,
    ),
    Case(
        'no nodeRef with nodeStartupTimeout "0": never unhealthy, never rechecked, not healthy',
        machine(node=None, phase="Provisioned", last_updated=100_000),
        None,
        spec("0"),
        False,
    ),
    Case(
        "no nodeRef and no lastUpdated: look again after the whole timeout",
        machine(node=None, phase="Provisioning", last_updated=None),
        None,
        spec(),
        False,
        recheck=301,
    ),
    Case(
        "default nodeStartupTimeout is 10m",
        machine(node=None, phase="Provisioned", last_updated=599),
        None,
        spec(None),
        False,
        recheck=2,
    ),
    Case("nodeRef set but the Node is missing", machine(), None, spec(), True, "NodeNotFound"),
    Case("phase Failed", machine(phase="Failed"), HEALTHY_NODE, spec(), True, "MachineHasFailure"),
    Case(
        "phase Failed without a Node",
        machine(node=None, phase="Failed", last_updated=1),
        None,
        spec(),
        True,
        "MachineHasFailure",
    ),
    Case(
        "Ready=False for 200s with a 300s timeout: healthy for now, requeue in ~100s",
        machine(),
        node(Ready=("False", 200)),
        spec(),
        False,
        recheck=101,
    ),
    Case(
        "a condition past its timeout",
        machine(),
        node(Ready=("Unknown", 301)),
        spec(),
        True,
        "UnhealthyNode",
    ),
    Case(
        "conditions are ORed: the second entry fires",
        machine(),
        node(Ready=("True", 10), DiskPressure=("True", 61)),
        spec(
            unhealthyConditions=[
                {"type": "Ready", "status": "False", "timeout": "300s"},
                {"type": "DiskPressure", "status": "True", "timeout": "1m"},
            ]
        ),
        True,
        "UnhealthyNode",
    ),
    Case(
        "two pending entries: the earliest expiry wins",
        machine(),
        node(Ready=("False", 10), DiskPressure=("True", 50)),
        spec(
            unhealthyConditions=[
                {"type": "Ready", "status": "False", "timeout": "300s"},
                {"type": "DiskPressure", "status": "True", "timeout": "1m"},
            ]
        ),
        False,
        recheck=11,
    ),
    Case(
        "a condition with another status does not match",
        machine(),
        node(Ready=("True", 10_000)),
        spec(unhealthyConditions=[{"type": "Ready", "status": "False", "timeout": "1s"}]),
        False,
        healthy=True,
    ),
    Case("a deleting Machine is not healthy", machine(deleting=True), HEALTHY_NODE, spec(), False),
    Case(
        "a Machine under external remediation is not healthy",
        machine(annotations={EXTERNAL_REMEDIATION_ANNOTATION: ""}),
        HEALTHY_NODE,
        spec(),
        False,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_target_health(case: Case) -> None:
    verdict = target_health(case.machine, case.node, case.spec, NOW)
    assert verdict.unhealthy is case.unhealthy, verdict
    assert verdict.reason == case.reason, verdict
    if case.recheck is None:
        assert verdict.recheck_after is None, verdict
    else:
        assert verdict.recheck_after == pytest.approx(case.recheck), verdict
    assert counts_as_healthy(case.machine, case.node, verdict) is case.healthy


def test_unhealthy_messages_say_which_check_and_since_when() -> None:
    verdict = target_health(machine(), node(Ready=("Unknown", 400)), spec(), NOW)
    assert verdict.message == (
        f"Node n1 has condition Ready=Unknown since {ago(400)}, longer than its timeout of 300s"
    )
    assert verdict.since == NOW - timedelta(seconds=400)
    startup = target_health(machine(node=None, last_updated=400), None, spec(), NOW)
    assert (
        startup.message == f"Machine has no Node since {ago(400)}, longer than the nodeStartupTimeout of 300s"
    )


def test_the_requeue_is_the_earliest_pending_target() -> None:
    verdicts = [
        target_health(machine(), node(Ready=("False", 200)), spec(), NOW),
        target_health(machine(node=None, last_updated=250), None, spec(), NOW),
        target_health(machine(), node(Ready=("Unknown", 400)), spec(), NOW),  # unhealthy: no recheck
        target_health(machine(), HEALTHY_NODE, spec(), NOW),
    ]
    assert earliest_recheck(verdicts) == pytest.approx(51)
    assert earliest_recheck(verdicts[2:]) is None


@pytest.mark.parametrize(
    ("max_unhealthy", "expected", "healthy", "allowed", "remediations_allowed"),
    [
        pytest.param(2, 5, 3, True, 0, id="when 2 of 5 are unhealthy with a count of 2 it allows"),
        pytest.param(2, 5, 2, False, 0, id="when 3 of 5 are unhealthy with a count of 2 it blocks"),
        pytest.param("2", 5, 3, True, 0, id="when the count is a string it allows the same"),
        pytest.param("2", 5, 2, False, 0, id="when the count is a string it blocks the same"),
        pytest.param("40%", 5, 3, True, 0, id="when 2 of 5 are unhealthy with 40% it allows"),
        pytest.param("40%", 5, 2, False, 0, id="when 3 of 5 are unhealthy with 40% it blocks"),
        pytest.param("40%", 5, 5, True, 2, id="when all of 5 are healthy with 40% it allows 2 more"),
        pytest.param("60%", 7, 3, True, 0, id="when 60% of 7 is 4 rounded down it allows 4 unhealthy"),
        pytest.param("60%", 7, 2, False, 0, id="when 60% of 7 is 4 rounded down it blocks 5 unhealthy"),
        pytest.param(None, 5, 0, True, 0, id="when maxUnhealthy is unset it is 100% and allows all"),
        pytest.param(None, 5, 4, True, 4, id="when maxUnhealthy is unset it allows the rest"),
        pytest.param(0, 3, 2, False, 0, id="when maxUnhealthy is 0 it blocks one unhealthy"),
        pytest.param("0%", 3, 2, False, 0, id="when maxUnhealthy is 0% it blocks one unhealthy"),
        pytest.param(0, 3, 3, True, 0, id="when maxUnhealthy is 0 and nothing is unhealthy it allows"),
        pytest.param(-2, 3, 2, False, 0, id="when maxUnhealthy is negative it tolerates nothing"),
        pytest.param("foo%50", 3, 3, False, 0, id="when maxUnhealthy is invalid it blocks with all healthy"),
        pytest.param(
            "foo%50", 3, 2, False, 0, id="when maxUnhealthy is invalid it blocks with one unhealthy"
        ),
    ],
)
def test_short_circuit(
    max_unhealthy: Any, expected: int, healthy: int, allowed: bool, remediations_allowed: int
) -> None:
    decision = short_circuit(max_unhealthy, expected, healthy)
    assert decision.allowed is allowed, decision
    assert decision.remediations_allowed == remediations_allowed
    assert decision.unhealthy == expected - healthy
    assert bool(decision.message) is not allowed


@pytest.mark.parametrize(
    ("value", "expected", "limit"),
    [
        pytest.param(2, 5, 2, id="when it is a count it is that count"),
        pytest.param("2", 5, 2, id="when it is a count as a string it is that count"),
        pytest.param("40%", 5, 2, id="when it is 40% of 5 it is 2"),
        pytest.param("60%", 7, 4, id="when it is 60% of 7 it is 4 rounded down"),
        pytest.param("100%", 7, 7, id="when it is 100% it is every Machine"),
        pytest.param(None, 7, 7, id="when it is unset it is every Machine"),
        pytest.param(-2, 3, 0, id="when it is negative it is 0"),
    ],
)
def test_max_unhealthy_parsing(value: Any, expected: int, limit: int) -> None:
    assert parse_max_unhealthy(value, expected).limit == limit


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("foo%50", id="when it is garbage around a percent sign it is invalid"),
        pytest.param("12.5%", id="when it is a fractional percentage it is invalid"),
        pytest.param("", id="when it is empty it is invalid"),
        pytest.param("%", id="when it is a bare percent sign it is invalid"),
        pytest.param(True, id="when it is a boolean it is invalid"),
        pytest.param(1.5, id="when it is a float it is invalid"),
    ],
)
def test_invalid_max_unhealthy_blocks_and_says_why(value: Any) -> None:
    resolved = parse_max_unhealthy(value, 5)
    assert resolved.limit is None and "maxUnhealthy" in resolved.problem
    decision = short_circuit(value, 5, 5)
    assert not decision.allowed and resolved.problem in decision.message


def test_short_circuit_message_has_the_machine_api_operator_shape() -> None:
    decision = short_circuit("40%", 5, 2)
    assert decision.message == (
        "Remediation is not allowed, the number of not started or unhealthy machines exceeds "
        "maxUnhealthy (total: 5, unhealthy: 3, maxUnhealthy: 40%)"
    )


READY_UNKNOWN = [{"type": "Ready", "status": "Unknown", "timeout": "300s"}]


def test_a_matching_condition_without_lasttransitiontime_is_past_its_timeout() -> None:
    node = {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}
    verdict = check_unhealthy_conditions(node, READY_UNKNOWN, NOW)
    assert verdict.unhealthy, verdict
    assert verdict.reason == "UnhealthyNode"
    running = {"metadata": {"name": "m1"}, "status": {"phase": "Running", "nodeRef": {"name": "n1"}}}
    assert target_health(running, node, {"unhealthyConditions": READY_UNKNOWN}, NOW).unhealthy


def test_a_condition_without_lasttransitiontime_that_does_not_match_stays_healthy() -> None:
    node = {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert check_unhealthy_conditions(node, READY_UNKNOWN, NOW) == HEALTHY


COMPONENTS_RULE = [{"type": "ControlPlaneComponentsHealthy", "status": "False", "timeout": "10m"}]


def machine_with(status: str, minutes: float) -> dict[str, Any]:
    since = format_time(NOW - timedelta(minutes=minutes))
    condition = {"type": "ControlPlaneComponentsHealthy", "status": status, "lastTransitionTime": since}
    condition["message"] = "kube-apiserver: Pod kube-system/kube-apiserver-n not ready"
    return {"metadata": {"name": "m"}, "status": {"conditions": [condition]}}


@pytest.mark.parametrize(
    ("case", "machine", "unhealthy", "pending"),
    [
        ("False past the timeout: unhealthy", machine_with("False", 11), True, False),
        ("False within the timeout: pending, looked at again then", machine_with("False", 4), False, True),
        ("True: healthy", machine_with("True", 60), False, False),
        ("Unknown (a Pod not seen yet): healthy", machine_with("Unknown", 60), False, False),
    ],
)
def test_a_machine_condition_held_past_its_timeout_makes_the_machine_unhealthy(
    case: str, machine: dict[str, Any], unhealthy: bool, pending: bool
) -> None:
    verdict = check_unhealthy_machine_conditions(machine, COMPONENTS_RULE, NOW)
    assert (verdict.unhealthy, verdict.pending) == (unhealthy, pending), case
    if unhealthy:
        assert verdict.reason == "UnhealthyMachineCondition"
        assert "longer than its timeout of 600s: kube-apiserver: Pod" in verdict.message
    if pending:
        assert verdict.recheck_after == pytest.approx(360, abs=2)


@pytest.mark.parametrize(
    ("case", "annotation", "rules"),
    [
        ("the owned MHC's rule", json.dumps(COMPONENTS_RULE), COMPONENTS_RULE),
        ("no annotation: no Machine condition is judged", None, []),
        ("not JSON: ignored", "ControlPlaneComponentsHealthy=False", []),
        ("not a list: ignored", '{"type": "X"}', []),
    ],
)
def test_the_machine_conditions_ride_on_the_annotation(
    case: str, annotation: str | None, rules: list[Any]
) -> None:
    annotations = (
        {} if annotation is None else {"controlplane.cpo.dev/unhealthy-machine-conditions": annotation}
    )
    spec = with_machine_conditions({"metadata": {"annotations": annotations}, "spec": {"maxUnhealthy": 1}})
    assert spec["unhealthyMachineConditions"] == rules, case
    assert spec["maxUnhealthy"] == 1


def test_target_health_judges_machine_conditions_too() -> None:
    spec = {"unhealthyMachineConditions": COMPONENTS_RULE}
    machine = {
        **machine_with("False", 11),
        "status": {**machine_with("False", 11)["status"], "phase": "Running"},
    }
    assert target_health(machine, {"metadata": {"name": "n"}}, spec, NOW).unhealthy
