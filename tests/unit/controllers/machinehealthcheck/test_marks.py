"""Remediation helpers of the MachineHealthCheck controller: ownership, conditions, status, requests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api.meta import format_time
from controllers.conditions import condition, set_conditions
from controllers.machinehealthcheck.health import Verdict
from controllers.machinehealthcheck.remediation import (
    cleared_for_healthy,
    external_remediation_request,
    is_owned_by_controlplane,
    marked_for_owner,
    status_changed,
)

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
EARLIER = format_time(NOW - timedelta(minutes=5))


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
        ("WaitingForRemediation", True),
        ("RemediationDeferred", True),
        ("CannotBeRemediated", True),
        ("MachineDeleting", False),
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


def test_status_is_written_only_when_a_field_or_condition_changed() -> None:
    conditions = [{"type": "RemediationAllowed", "status": "True", "lastTransitionTime": EARLIER}]
    old = {"expectedMachines": 3, "currentHealthy": 3, "remediationsAllowed": 1, "conditions": conditions}
    assert not status_changed(old, dict(old))
    assert not status_changed({**old, "other": "kept"}, dict(old))
    assert status_changed(old, {**old, "currentHealthy": 2})
    assert status_changed(
        old,
        {
            **old,
            "conditions": set_conditions(
                conditions, {"RemediationAllowed": condition("RemediationAllowed", "False")}, NOW
            ),
        },
    )
    assert status_changed({}, old)


def test_the_external_remediation_request_is_stamped_from_the_template() -> None:
    template = {
        "apiVersion": "infra.example.io/v1",
        "kind": "RebootRemediationTemplate",
        "metadata": {"name": "reboot", "namespace": "ns"},
        "spec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {"timeout": "5m"}}},
    }
    machine = {"metadata": {"name": "m-1", "namespace": "ns", "uid": "uid-1"}}
    assert external_remediation_request(template, machine) == {
        "apiVersion": "infra.example.io/v1",
        "kind": "RebootRemediation",
        "metadata": {
            "name": "m-1",
            "namespace": "ns",
            "labels": {"a": "b"},
            "annotations": {
                "cluster.x-k8s.io/cloned-from-name": "reboot",
                "cluster.x-k8s.io/cloned-from-groupkind": "RebootRemediationTemplate.infra.example.io",
            },
            "ownerReferences": [
                {
                    "apiVersion": "machine.openshift.io/v1beta1",
                    "kind": "Machine",
                    "name": "m-1",
                    "uid": "uid-1",
                }
            ],
        },
        "spec": {"timeout": "5m"},
    }
