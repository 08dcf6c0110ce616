"""spec.state Inactive (controllers/controlplane/inactive.py): the controller reports what it would do
and does nothing; the reconciler's Inactive path writes only the status these tables fix."""

from __future__ import annotations

from typing import Any

import pytest

from api.controlplane import DEFAULT_STATE, ControlPlaneMachineTemplate, ControlPlaneSpec
from controllers.controlplane.inactive import inactive_progress, is_inactive
from controllers.controlplane.machines import MachineInfo
from controllers.controlplane.remediation import RemediationDecision
from controllers.controlplane.scale import planned_step
from controllers.controlplane.status import StatusInputs, compute_status
from controllers.controlplane.step import UP_TO_DATE, Step
from tests.support.machine_rows import NOW, cp_machine


def spec(**fields: Any) -> ControlPlaneSpec:
    return ControlPlaneSpec(template=ControlPlaneMachineTemplate.for_provider_spec({}), **fields)


THREE = [cp_machine("ma"), cp_machine("mb"), cp_machine("mc")]


def status(machines: list[MachineInfo], *, replicas: int, inactive: bool, **kw: Any) -> dict[str, Any]:
    the_spec = spec(replicas=replicas)
    inputs = StatusInputs(
        replicas=replicas,
        selector="s",
        generation=1,
        machines=machines,
        step=planned_step(the_spec, machines, ()),
        inactive=inactive,
        at=NOW,
        **kw,
    )
    return compute_status(inputs)


def progressing(result: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in result["conditions"] if c["type"] == "Progressing")


def test_the_default_state_is_active_so_an_empty_cluster_bootstraps() -> None:
    assert DEFAULT_STATE == "Active"
    assert not is_inactive(spec())
    assert is_inactive(spec(state="Inactive"))


@pytest.mark.parametrize(
    ("machines", "replicas", "phase", "would"),
    [
        # Over three Machines with the default replicas (1): it would scale in, and says so.
        (THREE, 1, "Running", "if Active, it would delete a Machine"),
        # Over three up-to-date Machines with replicas 3: nothing to do.
        (THREE, 3, "Running", "nothing to do if Active"),
        # Outdated Machines: it would replace them, yet the phase is not Updating.
        (
            [cp_machine("ma", outdated=True), cp_machine("mb"), cp_machine("mc")],
            3,
            "Running",
            "if Active, it would create a Machine",
        ),
        # Too few: it would create one, yet the phase is not Scaling.
        (THREE[:1], 3, "Running", "if Active, it would create a Machine"),
        # No Machine at all: Pending, and it would create the first.
        ([], 1, "Pending", "if Active, it would create a Machine"),
        # A Machine being deleted: it would wait for it.
        ([*THREE, cp_machine("md", deleting=True)], 3, "Running", "if Active, it would wait"),
    ],
    ids=[
        "over three Machines with one replica it would delete one",
        "over three up-to-date Machines it has nothing to do",
        "with an outdated Machine it would create a replacement yet stays Running",
        "with too few Machines it would create one yet stays Running",
        "with no Machine it is Pending and would create the first",
        "with a Machine being deleted it would wait for it",
    ],
)
def test_inactive_reports_what_it_would_do_and_that_nothing_is_under_way(
    machines: list[MachineInfo], replicas: int, phase: str, would: str
) -> None:
    result = status(machines, replicas=replicas, inactive=True)
    condition = progressing(result)
    assert condition["status"] == "False" and condition["reason"] == "Inactive", condition
    assert condition["message"].startswith(
        "spec.state is Inactive: no Machine is adopted, created or deleted"
    )
    assert would in condition["message"], condition["message"]
    assert condition["message"].endswith("Set spec.state to Active to let it act")
    assert result["phase"] == phase
    # The counts are those of the Machines it would adopt, as for an Active one.
    assert result["replicas"] == len(machines)
    assert result["availableReplicas"] == sum(i.available for i in machines)


def test_the_same_facts_active_are_progressing() -> None:
    condition = progressing(status(THREE, replicas=1, inactive=False))
    assert condition["status"] == "True" and condition["reason"] != "Inactive"
    assert status(THREE, replicas=1, inactive=False)["phase"] == "Scaling"


def test_an_inactive_controlplane_is_never_remediating() -> None:
    decision = RemediationDecision(allowed=True, reason="Remediating", message="replace ma")
    assert status(THREE, replicas=3, inactive=True, remediation=decision)["phase"] == "Running"
    assert status(THREE, replicas=3, inactive=False, remediation=decision)["phase"] == "Remediating"


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (None, "nothing to do if Active: the Machines match spec"),
        (UP_TO_DATE, "nothing to do if Active: the Machines match spec"),
        (
            Step("wait", "WaitingForDeletion", "md is being deleted"),
            "if Active, it would wait: md is being deleted",
        ),
        (
            Step("delete", "ScalingDown", "3 Machines, 1 desired", machine="mc"),
            "if Active, it would delete a Machine (ScalingDown): 3 Machines, 1 desired",
        ),
    ],
    ids=[
        "with no step it has nothing to do",
        "with the up-to-date step it has nothing to do",
        "a wait says what it would wait for",
        "a delete names its reason and its message",
    ],
)
def test_inactive_progress_message(step: Step | None, expected: str) -> None:
    reason, message = inactive_progress(step)
    assert reason == "Inactive"
    assert message == (
        f"spec.state is Inactive: no Machine is adopted, created or deleted; {expected}. "
        "Set spec.state to Active to let it act"
    )
