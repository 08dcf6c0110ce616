"""What a MachineHealthCheck does about each Machine: :func:`choose_action` as a table, every action
and every rule's precedence."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controllers.machinehealthcheck.actions import (
    Action,
    ActionKind,
    CheckFacts,
    Target,
    TargetFacts,
    choose_action,
    plan,
)
from controllers.machinehealthcheck.health import HEALTHY, Verdict
from controllers.machinehealthcheck.marks import mark_conditions
from runtime.jsoncodec import JSON

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)

UNHEALTHY = Verdict(unhealthy=True, reason="NodeNotFound", message="Node n1 does not exist")
PENDING = Verdict(recheck_after=30.0)

MARKED = [
    {"type": "HealthCheckSucceeded", "status": "False", "severity": "Warning", "reason": "NodeNotFound",
     "message": "Node n1 does not exist", "lastTransitionTime": "2026-03-01T11:00:00Z"},
    {"type": "OwnerRemediated", "status": "False", "severity": "Warning", "reason": "WaitingForRemediation",
     "message": "waiting for the owning ControlPlane to remediate the Machine",
     "lastTransitionTime": "2026-03-01T11:00:00Z"},
]  # fmt: skip
DECIDED = [
    {"type": "HealthCheckSucceeded", "status": "False", "reason": "NodeNotFound"},
    {"type": "OwnerRemediated", "status": "False", "reason": "MachineDeleting"},
]
RECOVERED = [{"type": "HealthCheckSucceeded", "status": "True", "lastTransitionTime": "2026-03-01T11:00:00Z"}]


def unhealthy(**facts: object) -> TargetFacts:
    return TargetFacts(verdict=UNHEALTHY, healthy=False, **facts)  # type: ignore[arg-type]


def healthy(**facts: object) -> TargetFacts:
    return TargetFacts(verdict=HEALTHY, healthy=True, **facts)  # type: ignore[arg-type]


CP = {"controlplane_owned": True}
ACTIVE = CheckFacts()
BLOCKED = CheckFacts(allowed=False)
PAUSED = CheckFacts(paused=True)
EXTERNAL = CheckFacts(external=True)


@pytest.mark.parametrize(
    ("target", "check", "kind"),
    [
        # 1. paused
        pytest.param(unhealthy(), PAUSED, "leave", id="when paused it leaves an unhealthy Machine"),
        pytest.param(
            healthy(**CP, conditions=MARKED),
            CheckFacts(paused=True, external=True),
            "leave",
            id="when paused it leaves a recovered Machine's request and mark too",
        ),
        # 2. recovered
        pytest.param(
            healthy(**CP, conditions=MARKED),
            ACTIVE,
            "clear",
            id="when a marked Machine recovers it clears the mark",
        ),
        pytest.param(
            healthy(**CP, conditions=MARKED),
            BLOCKED,
            "clear",
            id="when short-circuited it still clears a recovered Machine's mark",
        ),
        pytest.param(
            healthy(), EXTERNAL, "clear", id="when a Machine recovers with a template it deletes the request"
        ),
        pytest.param(
            healthy(), ACTIVE, "leave", id="when a healthy Machine has nothing to clean up it leaves it"
        ),
        pytest.param(
            healthy(**CP, conditions=RECOVERED),
            ACTIVE,
            "leave",
            id="when the mark was taken back already it leaves the Machine",
        ),
        pytest.param(
            healthy(**CP, conditions=DECIDED),
            ACTIVE,
            "clear",
            id="when the owner is deleting a recovered Machine it still sets HealthCheckSucceeded True",
        ),
        pytest.param(
            healthy(conditions=MARKED),
            ACTIVE,
            "leave",
            id="when a recovered Machine is not a ControlPlane's it leaves its conditions",
        ),
        # 3. neither healthy nor unhealthy
        pytest.param(
            TargetFacts(verdict=PENDING, healthy=False, **CP),
            ACTIVE,
            "leave",
            id="when a timeout is still running it leaves the Machine",
        ),
        pytest.param(
            TargetFacts(verdict=HEALTHY, healthy=False),
            EXTERNAL,
            "leave",
            id="when a Machine is not unhealthy but not counted healthy it neither remediates nor cleans up",
        ),
        # 4. short-circuit
        pytest.param(
            unhealthy(**CP), BLOCKED, "leave", id="when short-circuited it leaves a ControlPlane's Machine"
        ),
        pytest.param(unhealthy(), BLOCKED, "leave", id="when short-circuited it deletes nothing"),
        pytest.param(
            unhealthy(),
            CheckFacts(allowed=False, external=True),
            "leave",
            id="when short-circuited it requests no external remediation",
        ),
        # 5. deleting
        pytest.param(
            unhealthy(deleting=True), ACTIVE, "leave", id="when the Machine is being deleted it leaves it"
        ),
        pytest.param(
            unhealthy(deleting=True, **CP),
            ACTIVE,
            "leave",
            id="when a ControlPlane's Machine is being deleted it does not mark it",
        ),
        # 6. ControlPlane-owned
        pytest.param(unhealthy(**CP), ACTIVE, "mark", id="when a ControlPlane owns the Machine it marks it"),
        pytest.param(
            unhealthy(**CP),
            EXTERNAL,
            "mark",
            id="when a ControlPlane owns the Machine it marks it even with a template",
        ),
        pytest.param(
            unhealthy(**CP, conditions=MARKED),
            ACTIVE,
            "leave",
            id="when the mark is there already it leaves the Machine",
        ),
        pytest.param(
            unhealthy(**CP, conditions=DECIDED),
            ACTIVE,
            "mark",
            id="when the stored mark says less than the verdict it marks again",
        ),
        # 7. external
        pytest.param(
            unhealthy(), EXTERNAL, "external", id="when a template is set it requests external remediation"
        ),
        pytest.param(
            unhealthy(has_controller=False),
            EXTERNAL,
            "external",
            id="when a template is set it requests external remediation even for an orphan",
        ),
        # 8. no controller
        pytest.param(
            unhealthy(has_controller=False),
            ACTIVE,
            "skip",
            id="when nothing controls the Machine it skips it",
        ),
        # 9. delete
        pytest.param(
            unhealthy(), ACTIVE, "delete", id="when another controller owns the Machine it deletes it"
        ),
    ],
)
def test_choose_action(target: TargetFacts, check: CheckFacts, kind: ActionKind) -> None:
    action = choose_action(target, check)
    assert action.kind == kind, action
    assert action.why


@pytest.mark.parametrize(
    ("target", "check", "expected"),
    [
        pytest.param(
            unhealthy(**CP),
            ACTIVE,
            Action("mark", "unhealthy, owned by a ControlPlane", conditions=mark_conditions((), UNHEALTHY)),
            id="when it marks it sets HealthCheckSucceeded and OwnerRemediated",
        ),
        pytest.param(
            healthy(**CP, conditions=MARKED),
            EXTERNAL,
            Action(
                "clear",
                "healthy again",
                conditions={"HealthCheckSucceeded": {"type": "HealthCheckSucceeded", "status": "True"},
                            "OwnerRemediated": None},
                delete_request=True,
            ),
            id="when a marked Machine recovers with a template it deletes the request and unmarks it",
        ),
        pytest.param(
            healthy(),
            EXTERNAL,
            Action("clear", "healthy again", conditions={}, delete_request=True),
            id="when a Machine recovers with a template but no mark it only deletes the request",
        ),
        pytest.param(
            healthy(**CP, conditions=MARKED),
            ACTIVE,
            Action(
                "clear",
                "healthy again",
                conditions={"HealthCheckSucceeded": {"type": "HealthCheckSucceeded", "status": "True"},
                            "OwnerRemediated": None},
            ),
            id="when a marked Machine recovers without a template it only takes the mark back",
        ),
    ],
)  # fmt: skip
def test_the_data_each_action_carries(target: TargetFacts, check: CheckFacts, expected: Action) -> None:
    assert choose_action(target, check) == expected


def machine(
    name: str, *, owner: str | None = "MachineSet", deleting: bool = False, node: bool = True
) -> JSON:
    metadata: JSON = {"name": name, "namespace": "ns", "resourceVersion": "1", "uid": f"uid-{name}"}
    if owner is not None:
        api_version = (
            "controlplane.cpo.dev/v1alpha1" if owner == "ControlPlane" else "machine.openshift.io/v1beta1"
        )
        metadata["ownerReferences"] = [
            {"apiVersion": api_version, "kind": owner, "name": "o", "uid": "u", "controller": True}
        ]
    if deleting:
        metadata["deletionTimestamp"] = "2026-03-01T11:00:00Z"
    status: JSON = {"phase": "Running", "nodeRef": {"name": f"node-{name}"}} if node else {"phase": "Running"}
    return {"metadata": metadata, "status": status}


READY_NODE: JSON = {
    "metadata": {"name": "n"},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}


def test_a_target_reads_its_facts_from_the_machine() -> None:
    target = Target.judge(machine("m1", owner="ControlPlane", deleting=True), None, {}, NOW)
    assert target.verdict.unhealthy and not target.healthy  # its Node is gone
    assert target.facts() == TargetFacts(
        verdict=target.verdict, healthy=False, deleting=True, controlplane_owned=True, has_controller=True
    )
    assert Target.judge(machine("m2", owner=None), READY_NODE, {}, NOW).facts() == TargetFacts(
        verdict=HEALTHY, healthy=True, has_controller=False
    )
    assert target.describe({"metadata": {"name": "mhc", "namespace": "ns"}}) == "ns/mhc/m1/node-m1"


def test_the_plan_remediates_first_then_cleans_up_and_drops_what_it_leaves() -> None:
    recovered = Target.judge(machine("a-recovered"), READY_NODE, {}, NOW)
    gone = Target.judge(machine("b-gone"), None, {}, NOW)
    orphan = Target.judge(machine("c-orphan", owner=None), None, {}, NOW)
    dying = Target.judge(machine("d-dying", deleting=True), None, {}, NOW)
    chosen = plan([recovered, gone, orphan, dying], EXTERNAL)
    assert [(t.name, a.kind) for t, a in chosen] == [
        ("b-gone", "external"),
        ("c-orphan", "external"),
        ("a-recovered", "clear"),
    ]
    assert [(t.name, a.kind) for t, a in plan([recovered, gone, orphan, dying], ACTIVE)] == [
        ("b-gone", "delete"),
        ("c-orphan", "skip"),
    ]
