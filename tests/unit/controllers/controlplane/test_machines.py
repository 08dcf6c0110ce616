"""Which Machines are a ControlPlane's and how Machines and Nodes are read
(controllers/controlplane/machines.py): ownership, remediation marks, names, Node readiness."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from controllers.controlplane.machines import (
    NODE_MACHINE_ANNOTATION,
    classify_machines,
    is_unmanaged_node,
    machine_name,
    marked_for_remediation,
    marked_since,
    not_ready_since,
)
from tests.support.machine_rows import cp_machine

UID = "cp-uid"


SELECTOR = {"matchLabels": {"machine.openshift.io/cluster-api-machine-role": "master"}}


MASTER = {"machine.openshift.io/cluster-api-machine-role": "master"}


def raw_machine(
    name: str, labels: dict[str, str] | None = None, owner: str | None = None, **meta: Any
) -> Any:
    metadata: dict[str, Any] = {
        "name": name,
        "labels": labels if labels is not None else dict(MASTER),
        **meta,
    }
    if owner is not None:
        metadata["ownerReferences"] = [{"uid": owner, "controller": True, "kind": "X", "name": "x"}]
    return {"metadata": metadata, "spec": {}}


def test_classify_machines_owned_adoptable_and_owned_by_others() -> None:
    machines = [
        raw_machine("mine", owner=UID),
        raw_machine("mine-relabelled", labels={}, owner=UID),
        raw_machine("orphan"),
        raw_machine("orphan-dying", deletionTimestamp="2026-01-01T00:00:00Z"),
        raw_machine("theirs", owner="other"),
        raw_machine("worker", labels={"machine.openshift.io/cluster-api-machine-role": "worker"}),
        raw_machine("worker-theirs", labels={}, owner="other"),
    ]
    result = classify_machines(UID, SELECTOR, machines)
    assert [x["metadata"]["name"] for x in result.owned] == ["mine", "mine-relabelled"]
    assert [x["metadata"]["name"] for x in result.adoptable] == ["orphan"]
    assert [x["metadata"]["name"] for x in result.owned_by_others] == ["theirs"]


def conditions(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": t, "status": s} for t, s in pairs]}}


@pytest.mark.parametrize(
    ("machine", "marked"),
    [
        (conditions(("HealthCheckSucceeded", "False"), ("OwnerRemediated", "False")), True),
        (conditions(("HealthCheckSucceeded", "False")), False),
        (conditions(("HealthCheckSucceeded", "True"), ("OwnerRemediated", "False")), False),
        (conditions(("HealthCheckSucceeded", "False"), ("OwnerRemediated", "True")), False),
        ({}, False),
    ],
    ids=[
        "a failed health check the owner has not remediated marks it",
        "a failed health check without OwnerRemediated does not",
        "a passed health check does not",
        "a remediation the owner finished does not",
        "a Machine without conditions is not marked",
    ],
)
def test_marked_for_remediation_needs_both_conditions(machine: dict[str, Any], marked: bool) -> None:
    assert marked_for_remediation(machine) is marked


def test_machine_names_are_the_controlplane_name_and_five_random_characters() -> None:
    names = {machine_name("cluster") for _ in range(50)}
    assert all(re.fullmatch(r"cluster-[a-z0-9]{5}", name) for name in names)
    assert len(names) > 45


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (None, None),
        (
            {
                "status": {
                    "conditions": [
                        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T11:00:00Z"}
                    ]
                }
            },
            None,
        ),
        (
            {
                "status": {
                    "conditions": [
                        {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T11:58:00Z"}
                    ]
                }
            },
            datetime(2026, 1, 1, 11, 58, tzinfo=UTC),
        ),
        (
            {
                "status": {
                    "conditions": [
                        {"type": "Ready", "status": "Unknown", "lastTransitionTime": "2026-01-01T11:57:00Z"}
                    ]
                }
            },
            datetime(2026, 1, 1, 11, 57, tzinfo=UTC),
        ),
        ({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, None),
    ],
    ids=[
        "no Node gives no time",
        "a Ready Node gives no time",
        "a NotReady Node is not ready since its transition",
        "an Unknown Node is not ready since its transition",
        "a condition without a transition time gives no time",
    ],
)
def test_not_ready_since_reads_the_nodes_ready_transition(
    node: dict[str, Any] | None, expected: datetime | None
) -> None:
    assert not_ready_since(node) == expected


def checked(status: str, at: str | None = "2026-01-01T11:40:00Z") -> dict[str, Any]:
    entry = {"type": "HealthCheckSucceeded", "status": status, "lastTransitionTime": at}
    return {"status": {"conditions": [entry]}}


@pytest.mark.parametrize(
    ("machine", "expected"),
    [
        ({}, None),
        (checked("True"), None),
        (checked("False"), datetime(2026, 1, 1, 11, 40, tzinfo=UTC)),
        (checked("False", at=None), None),
        (checked("False", at="yesterday"), None),
    ],
    ids=[
        "a Machine never checked has no mark time",
        "a healthy Machine has no mark time",
        "a marked Machine was marked when its health check turned False",
        "a mark without a transition time gives no time",
        "a mark with an unreadable time gives no time",
    ],
)
def test_marked_since_is_when_the_health_check_turned_false(
    machine: dict[str, Any], expected: datetime | None
) -> None:
    assert marked_since(machine) == expected


def role_node(*labels: str, machine: str | None = None) -> dict[str, Any]:
    annotations = {} if machine is None else {NODE_MACHINE_ANNOTATION: machine}
    return {"metadata": {"name": "n", "labels": dict.fromkeys(labels, ""), "annotations": annotations}}


@pytest.mark.parametrize(
    ("node", "selectors", "unmanaged"),
    [
        (role_node("node-role.kubernetes.io/control-plane"), None, True),
        (role_node("node-role.kubernetes.io/master"), None, True),
        (role_node("node-role.kubernetes.io/worker"), None, False),
        (role_node("node-role.kubernetes.io/control-plane", machine="ns/m1"), None, False),
        (role_node("node-role.kubernetes.io/control-plane", machine="ns/gone"), None, True),
        (role_node("node-role.kubernetes.io/control-plane", machine="other/m1"), None, False),
        (role_node("example.com/cp"), ("example.com/cp",), True),
        (role_node("node-role.kubernetes.io/master"), ("example.com/cp",), False),
    ],
    ids=[
        "a kubeadm control-plane Node without a Machine is unmanaged",
        "an OpenShift master Node without a Machine is unmanaged",
        "a worker Node is never one even when the cache holds it",
        "a control-plane Node of a known Machine is managed",
        "a control-plane Node naming a Machine that does not exist is unmanaged",
        "a Node of another namespace's Machine is not ours to judge",
        "configured selectors tell the control-plane Nodes",
        "configured selectors replace the default role labels",
    ],
)
def test_unmanaged_nodes_are_control_plane_nodes_without_a_machine(
    node: dict[str, Any], selectors: tuple[str, ...] | None, unmanaged: bool
) -> None:
    known = {"ns/m1"}
    if selectors is None:
        assert is_unmanaged_node(node, "ns", known) is unmanaged
    else:
        assert is_unmanaged_node(node, "ns", known, selectors) is unmanaged


@pytest.mark.parametrize(
    ("fields", "updated"),
    [
        ({}, True),
        ({"node_ready": False}, False),
        ({"phase": "Provisioned"}, False),
        ({"outdated": True}, False),
        ({"deleting": True}, False),
        ({"etcd_voter": False, "etcd_healthy": False}, True),
    ],
    ids=[
        "case4-ready-up-to-date",
        "case4-node-not-ready",
        "case4-not-running",
        "case4-outdated",
        "case4-deleting",
        "case4-no-voter-yet-still-updated",
    ],
)
def test_case4_a_machine_is_updated_when_up_to_date_not_deleting_and_ready(
    fields: dict[str, Any], updated: bool
) -> None:
    """Readiness is :attr:`MachineInfo.ready`'s, the one ``readyReplicas`` counts; etcd is not
    asked (that is ``availableReplicas``)."""
    assert cp_machine("m", **fields).updated is updated
