"""MachineHealthCheck unhealthyConditions: a Node condition without ``lastTransitionTime``.

The machine-api-operator reads a missing ``lastTransitionTime`` as the zero time, so a matching
condition without one is past any timeout (``target.needsRemediation``).
"""

from __future__ import annotations

from datetime import UTC, datetime

from controllers.machinehealthcheck.health import HEALTHY, check_unhealthy_conditions, target_health

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
READY_UNKNOWN = [{"type": "Ready", "status": "Unknown", "timeout": "300s"}]


def test_a_matching_condition_without_lasttransitiontime_is_past_its_timeout() -> None:
    node = {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}
    verdict = check_unhealthy_conditions(node, READY_UNKNOWN, NOW)
    assert verdict.unhealthy, verdict
    assert verdict.reason == "UnhealthyNode"
    machine = {"metadata": {"name": "m1"}, "status": {"phase": "Running", "nodeRef": {"name": "n1"}}}
    assert target_health(machine, node, {"unhealthyConditions": READY_UNKNOWN}, NOW).unhealthy


def test_a_condition_without_lasttransitiontime_that_does_not_match_stays_healthy() -> None:
    node = {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert check_unhealthy_conditions(node, READY_UNKNOWN, NOW) == HEALTHY
