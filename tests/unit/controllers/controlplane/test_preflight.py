"""The preflight's control-plane components check (the etcd and Node checks' tables are in
test_scale.py, from before the preflight had a module of its own)."""

from __future__ import annotations

import pytest

from controllers.controlplane.machines import MachineInfo
from controllers.controlplane.preflight import components_preflight, preflight
from controllers.controlplane.scale import next_step
from controllers.controlplane.step import Step
from tests.support.machine_rows import cp_machine as m

BROKEN = {
    "components_unhealthy": ("kube-apiserver",),
    "components_message": (
        "kube-apiserver: Pod kube-system/kube-apiserver-n not ready (CrashLoopBackOff, 3 restarts)"
    ),
}
CREATE = Step("create", "ReplacingOutdated", "", machine="old")
DELETE_OLD = Step("delete", "ReplacingOutdated", "", machine="old")
DELETE_BROKEN = Step("delete", "ScalingDown", "", machine="broken")


@pytest.mark.parametrize(
    ("case", "machines", "step", "held"),
    [
        ("every component healthy", [m("old"), m("b"), m("c")], DELETE_OLD, ()),
        (
            "a replacement whose API server crash-loops holds the delete of the Machine it replaces",
            [m("old", outdated=True), m("b"), m("c"), m("broken", **BROKEN)],
            DELETE_OLD,
            ("broken",),
        ),
        (
            "deleting the Machine whose component is broken is not held by it (no deadlock)",
            [m("a"), m("b"), m("broken", **BROKEN)],
            DELETE_BROKEN,
            (),
        ),
        (
            "a create replacing a Machine with broken components is not held by it",
            [m("old", **BROKEN), m("b"), m("c")],
            CREATE,
            (),
        ),
        (
            "a component not seen yet holds the step as a Machine coming up does",
            [m("old"), m("b"), m("young", components_pending=("etcd",))],
            DELETE_OLD,
            ("young",),
        ),
        (
            "a Machine being deleted holds nothing",
            [m("old"), m("b"), m("gone", deleting=True, **BROKEN)],
            DELETE_OLD,
            (),
        ),
    ],
)
def test_components_preflight(
    case: str, machines: list[MachineInfo], step: Step, held: tuple[str, ...]
) -> None:
    failures = [
        f
        for f in preflight(machines, None, hosting_etcd=[], step=step)
        if f.check == "ControlPlaneComponentsHealthy"
    ]
    assert tuple(name for f in failures for name in f.machines) == held, case


def test_the_failure_names_the_machine_and_its_component() -> None:
    (failure,) = components_preflight([m("a"), m("broken", **BROKEN)])
    assert failure.message == (
        "Machine(s) with control-plane components not healthy: broken (kube-apiserver: Pod "
        "kube-system/kube-apiserver-n not ready (CrashLoopBackOff, 3 restarts))"
    )


def test_a_machine_with_broken_components_still_passes_the_node_check() -> None:
    failures = preflight([m("a"), m("broken", **BROKEN)], None, hosting_etcd=[], step=DELETE_OLD)
    assert [f.check for f in failures] == ["ControlPlaneComponentsHealthy"]


def test_the_replacement_of_a_machine_being_deleted_is_not_held_by_another_machines_components() -> None:
    """Two Machines being deleted, held by the etcd-quorum hook until their replacements vote, and
    the third's controller manager crash-looping: holding the replacement would hold the two
    deletions with it until the broken Machine's own remediation."""
    machines = [
        m("going-1", deleting=True),
        m("going-2", deleting=True),
        m("broken", outdated=True, components_unhealthy=("kube-controller-manager",)),
    ]
    step = next_step(replicas=3, strategy="RollingUpdate", max_surge=1, domains=["a"], machines=machines)
    assert (step.action, step.reason, step.toward_replicas) == ("create", "ReplacingDeleted", True)
    assert "ControlPlaneComponentsHealthy" not in [
        f.check for f in preflight(machines, None, hosting_etcd=[], step=step)
    ]


@pytest.mark.parametrize(
    ("case", "machines", "held"),
    [
        (
            "a scale-up toward the replicas while another Machine's component fails is not held",
            [
                m("a", failure_domain="a"),
                m("broken", failure_domain="a", components_unhealthy=("kube-scheduler",)),
            ],
            False,
        ),
        (
            "a rollout's create while another Machine's component fails is held",
            [
                m("old", outdated=True, failure_domain="a", age=50),
                m("b", outdated=True, failure_domain="a"),
                m("broken", failure_domain="a", components_unhealthy=("kube-scheduler",)),
            ],
            True,
        ),
    ],
)
def test_only_the_creates_that_lead_to_a_delete_wait_for_other_machines_components(
    case: str, machines: list[MachineInfo], held: bool
) -> None:
    step = next_step(replicas=3, strategy="RollingUpdate", max_surge=1, domains=["a"], machines=machines)
    assert step.action == "create", step
    checks = [f.check for f in preflight(machines, None, hosting_etcd=[], step=step)]
    assert ("ControlPlaneComponentsHealthy" in checks) is held, (case, step, checks)
