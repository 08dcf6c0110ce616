"""The MachineHealthCheck a ControlPlane owns (controllers/controlplane/healthcheck.py): its budget is
what etcd can lose plus the Machines in transition, and it takes the ControlPlane's settings."""

from __future__ import annotations

import json
from typing import Any

import pytest

from api.controlplane import MHC_SCOPE_LABEL, UNHEALTHY_MACHINE_CONDITIONS_ANNOTATION, in_health_check_scope
from controllers.controlplane.healthcheck import desired_mhc, mhc_patch
from controllers.controlplane.machines import (
    MachineInfo,
    controller_ref,
)
from tests.support.controlplane_specs import CONTROLPLANE, spec_with
from tests.support.machine_rows import cp_machine


@pytest.mark.parametrize(
    ("replicas", "max_unhealthy"),
    [(1, 0), (2, 0), (3, 1), (5, 2), (7, 3)],
    ids=[
        "one replica tolerates no unhealthy Machine",
        "two replicas tolerate none",
        "three replicas tolerate one",
        "five replicas tolerate two",
        "seven replicas tolerate three",
    ],
)
def test_the_mhc_tolerates_as_many_unhealthy_machines_as_etcd_can_lose(
    replicas: int, max_unhealthy: int
) -> None:
    assert desired_mhc(CONTROLPLANE, spec_with(replicas=replicas))["spec"]["maxUnhealthy"] == max_unhealthy


DEAD = cp_machine("dead", node_ready=False, etcd_healthy=False)


GOING = cp_machine("going", deleting=True)


NEW = cp_machine("new", phase="Provisioning", node_ready=False, etcd_voter=False)


@pytest.mark.parametrize(
    ("replicas", "machines", "max_unhealthy"),
    [
        (3, [cp_machine("a"), cp_machine("b"), cp_machine("c")], 1),
        # A replacement's old Machine, held by the hook, is no failure.
        (3, [cp_machine("a"), cp_machine("b"), DEAD, GOING], 2),
        # Nor is the new Machine that replaces a user's deletion.
        (3, [cp_machine("a"), DEAD, GOING, NEW], 3),
        # Scaled to 1 while 3 members are there, one of them dead.
        (1, [cp_machine("a"), cp_machine("b"), DEAD], 1),
        (1, [cp_machine("a"), DEAD, GOING], 2),
        (5, [cp_machine("a"), cp_machine("b"), cp_machine("c"), DEAD, GOING], 3),
        (3, [cp_machine("a", components_unhealthy=("kube-controller-manager",)), DEAD, GOING], 3),
        (
            3,
            [
                cp_machine("a", components_unhealthy=("kube-apiserver",), node_ready=False),
                DEAD,
                cp_machine("c"),
            ],
            1,
        ),
    ],
    ids=[
        "three running Machines leave a budget of one",
        "a replacement's old Machine held by the hook is no failure",
        "the new Machine replacing a user's deletion is no failure either",
        "scaled to one with three members there the budget counts the three",
        "scaled to one with a dead and a deleting Machine the deleting one is no failure",
        "five replicas with a dead and a deleting Machine tolerate three",
        "a Machine whose components are broken but whose member votes is no etcd failure",
        "broken components on a Machine whose Node is down are that Node's failure",
    ],
)
def test_the_mhc_budget_counts_the_members_there_and_no_transition_as_a_failure(
    replicas: int, machines: list[MachineInfo], max_unhealthy: int
) -> None:
    mhc = desired_mhc(CONTROLPLANE, spec_with(replicas=replicas), machines)
    assert mhc["spec"]["maxUnhealthy"] == max_unhealthy


def test_the_mhc_takes_openshift_defaults_and_the_controlplane_settings() -> None:
    mhc = desired_mhc(CONTROLPLANE, spec_with())
    assert mhc["metadata"]["name"] == "cluster-mhc" and mhc["metadata"]["ownerReferences"] == [
        controller_ref(CONTROLPLANE)
    ]
    assert mhc["spec"]["unhealthyConditions"] == [
        {"type": "Ready", "status": "False", "timeout": "5m0s"},
        {"type": "Ready", "status": "Unknown", "timeout": "5m0s"},
    ]
    assert mhc["spec"]["nodeStartupTimeout"] == "10m"
    assert mhc["spec"]["selector"] == {
        "matchLabels": {"machine.openshift.io/cluster-api-machine-role": "master"}
    }
    demo = desired_mhc(
        CONTROLPLANE,
        spec_with(
            healthCheck={
                "unhealthyConditions": [{"type": "Ready", "status": "Unknown", "timeout": "5s"}],
                "nodeStartupTimeout": "30s",
            }
        ),
    )
    assert demo["spec"]["unhealthyConditions"] == [{"type": "Ready", "status": "Unknown", "timeout": "5s"}]
    assert demo["spec"]["nodeStartupTimeout"] == "30s"


def test_the_mhc_carries_the_scope_label_the_operator_checks_by() -> None:
    mhc = desired_mhc(CONTROLPLANE, spec_with())
    assert in_health_check_scope(mhc)
    assert mhc["metadata"]["labels"] == {MHC_SCOPE_LABEL: "true"}


def stored(labels: dict[str, str] | None, **spec: Any) -> dict[str, Any]:
    desired = desired_mhc(CONTROLPLANE, spec_with())
    metadata = {**desired["metadata"], "resourceVersion": "7"}
    if labels is None:
        metadata.pop("labels")
    else:
        metadata["labels"] = labels
    return {**desired, "metadata": metadata, "spec": {**desired["spec"], **spec}}


@pytest.mark.parametrize(
    ("current", "patch_labels", "patches"),
    [
        (stored({MHC_SCOPE_LABEL: "true"}), None, False),
        (stored(None), {MHC_SCOPE_LABEL: "true"}, True),
        (stored({"team": "infra"}), {MHC_SCOPE_LABEL: "true"}, True),
        (stored({MHC_SCOPE_LABEL: "true"}, maxUnhealthy=5), None, True),
    ],
    ids=[
        "an mhc as desired is left alone",
        "an mhc from before the label existed gets it on upgrade",
        "the label is added beside a user's own labels without removing them",
        "a spec drift is patched without touching the labels",
    ],
)
def test_the_owned_mhc_is_patched_to_its_spec_and_scope_label(
    current: dict[str, Any], patch_labels: dict[str, str] | None, patches: bool
) -> None:
    patch = mhc_patch(current, desired_mhc(CONTROLPLANE, spec_with()))
    if not patches:
        assert patch is None
        return
    assert patch is not None
    assert patch["metadata"].get("labels") == patch_labels
    assert patch["metadata"]["resourceVersion"] == "7"
    assert patch["spec"] == desired_mhc(CONTROLPLANE, spec_with())["spec"]


def test_the_mhc_judges_the_components_condition_with_its_own_timeout() -> None:
    rule = desired_mhc(CONTROLPLANE, spec_with())["metadata"]["annotations"][
        UNHEALTHY_MACHINE_CONDITIONS_ANNOTATION
    ]
    assert json.loads(rule) == [
        {"type": "ControlPlaneComponentsHealthy", "status": "False", "timeout": "10m"}
    ]
    short = desired_mhc(CONTROLPLANE, spec_with(healthCheck={"componentsUnhealthyTimeout": "20s"}))
    assert (
        json.loads(short["metadata"]["annotations"][UNHEALTHY_MACHINE_CONDITIONS_ANNOTATION])[0]["timeout"]
        == "20s"
    )
    off = desired_mhc(CONTROLPLANE, spec_with(healthCheck={"componentsUnhealthyTimeout": "0s"}))
    assert off["metadata"]["annotations"][UNHEALTHY_MACHINE_CONDITIONS_ANNOTATION] == "[]"


def test_an_mhc_from_before_the_components_rule_gets_it_on_upgrade() -> None:
    current = stored({MHC_SCOPE_LABEL: "true"})
    current["metadata"] = {k: v for k, v in current["metadata"].items() if k != "annotations"}
    patch = mhc_patch(current, desired_mhc(CONTROLPLANE, spec_with()))
    assert patch is not None and UNHEALTHY_MACHINE_CONDITIONS_ANNOTATION in patch["metadata"]["annotations"]
