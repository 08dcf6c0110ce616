"""The marks on a ControlPlane's Machine: who gets them, what they are, how they are taken back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api.meta import format_time
from controllers.conditions import changes, condition, conditions_of, set_conditions
from controllers.machinehealthcheck.health import Verdict
from controllers.machinehealthcheck.marks import (
    is_owned_by_controlplane,
    mark_conditions,
    recovered_conditions,
)
from runtime.jsoncodec import JSON

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
EARLIER = format_time(NOW - timedelta(minutes=5))


def marked_for_owner(machine: dict[str, Any], verdict: Verdict, now: datetime) -> list[JSON]:
    """The Machine's conditions once the mark is set, as the reconciler writes them."""
    stored = conditions_of(machine)
    return set_conditions(stored, mark_conditions(stored, verdict), now)


def cleared_for_healthy(machine: dict[str, Any], now: datetime) -> list[JSON]:
    """The Machine's conditions once the mark is taken back, as the reconciler writes them."""
    stored = conditions_of(machine)
    return set_conditions(stored, recovered_conditions(stored), now)


def owned_by(api_version: str, kind: str, controller: bool = True) -> dict[str, Any]:
    ref = {"apiVersion": api_version, "kind": kind, "name": "o", "uid": "u", "controller": controller}
    return {"metadata": {"name": "m", "namespace": "ns", "ownerReferences": [ref]}}


def test_only_a_controlplane_controller_owner_means_mark_instead_of_delete() -> None:
    assert is_owned_by_controlplane(owned_by("controlplane.cpo.dev/v1alpha1", "ControlPlane"))
    assert is_owned_by_controlplane(owned_by("controlplane.cpo.dev/v1beta1", "ControlPlane"))
    assert not is_owned_by_controlplane(owned_by("controlplane.cpo.dev/v1alpha1", "ControlPlane", False))
    assert not is_owned_by_controlplane(owned_by("machine.openshift.io/v1beta1", "MachineSet"))
    assert not is_owned_by_controlplane(owned_by("other.io/v1", "ControlPlane"))
    assert not is_owned_by_controlplane({"metadata": {}})


def test_set_condition_moves_the_transition_time_only_when_the_status_changes() -> None:
    start = [{"type": "A", "status": "True", "lastTransitionTime": EARLIER}, {"type": "B", "status": "True"}]
    same = set_conditions(start, {"A": condition("A", "True", "Still")}, NOW)
    assert same[0] == {"type": "A", "status": "True", "reason": "Still", "lastTransitionTime": EARLIER}
    assert same[1] == start[1]
    flipped = set_conditions(start, {"A": condition("A", "False", "R", "m", "Warning")}, NOW)
    assert flipped[0] == {
        "type": "A",
        "status": "False",
        "severity": "Warning",
        "reason": "R",
        "message": "m",
        "lastTransitionTime": format_time(NOW),
    }
    added = set_conditions(start, {"C": condition("C", "True")}, NOW)
    assert [c["type"] for c in added] == ["A", "B", "C"]


def test_marking_and_clearing_for_the_owner() -> None:
    machine = {"status": {"conditions": [{"type": "Drainable", "status": "True"}]}}
    verdict = Verdict(
        unhealthy=True, reason="UnhealthyNode", message="Node n has condition Ready=False since x"
    )
    marked = marked_for_owner(machine, verdict, NOW)
    by_type = {c["type"]: c for c in marked}
    assert by_type["Drainable"] == {"type": "Drainable", "status": "True"}
    assert by_type["HealthCheckSucceeded"]["status"] == "False"
    assert by_type["HealthCheckSucceeded"]["reason"] == "UnhealthyNode"
    assert by_type["HealthCheckSucceeded"]["message"] == verdict.message
    assert by_type["OwnerRemediated"]["status"] == "False"
    assert by_type["OwnerRemediated"]["reason"] == "WaitingForRemediation"

    # An OwnerRemediated the owner has moved on is its own.
    started = {
        "status": {"conditions": [{"type": "OwnerRemediated", "status": "False", "reason": "Remediating"}]}
    }
    assert {c["type"]: c for c in marked_for_owner(started, verdict, NOW)}["OwnerRemediated"]["reason"] == (
        "Remediating"
    )

    cleared = {c["type"]: c for c in cleared_for_healthy({"status": {"conditions": marked}}, NOW)}
    assert cleared["HealthCheckSucceeded"]["status"] == "True"
    assert "OwnerRemediated" not in cleared and "Drainable" in cleared
    kept = cleared_for_healthy(started, NOW)
    assert kept == started["status"]["conditions"]


@pytest.mark.parametrize(
    ("reason", "taken_back"),
    [
        pytest.param("WaitingForRemediation", True, id="when the owner has not decided yet it is taken back"),
        pytest.param("RemediationDeferred", True, id="when the owner deferred it it is taken back"),
        pytest.param("CannotBeRemediated", True, id="when the owner cannot remediate it it is taken back"),
        pytest.param("MachineDeleting", False, id="when the owner is deleting the Machine it is left"),
    ],
)
def test_a_recovered_machine_loses_a_mark_its_owner_decided_about_but_did_not_act_on(
    reason: str, taken_back: bool
) -> None:
    machine = {
        "status": {
            "conditions": [
                {"type": "HealthCheckSucceeded", "status": "False", "reason": "UnhealthyNode"},
                {"type": "OwnerRemediated", "status": "False", "reason": reason},
            ]
        }
    }
    cleared = {c["type"]: c for c in cleared_for_healthy(machine, NOW)}
    assert cleared["HealthCheckSucceeded"]["status"] == "True"
    assert ("OwnerRemediated" not in cleared) is taken_back


def test_a_machine_never_marked_has_nothing_taken_back() -> None:
    # an OwnerRemediated without our HealthCheckSucceeded is not our mark
    waiting = [{"type": "OwnerRemediated", "status": "False", "reason": "WaitingForRemediation"}]
    assert recovered_conditions(waiting) == {}


def test_a_machine_marked_already_needs_no_second_write() -> None:
    verdict = Verdict(unhealthy=True, reason="NodeNotFound", message="Node n1 does not exist")
    marked = marked_for_owner({"status": {"conditions": []}}, verdict, NOW)
    assert changes(marked, mark_conditions(marked, verdict)) == {}
    other = Verdict(unhealthy=True, reason="UnhealthyNode", message="Node n1 is NotReady")
    assert set(changes(marked, mark_conditions(marked, other))) == {"HealthCheckSucceeded"}
