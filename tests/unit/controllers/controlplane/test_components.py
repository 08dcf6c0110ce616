"""The control-plane components rules: where their Pods are, when a component is judged, and what
the ControlPlane and each Machine say about them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from controllers.controlplane.components import (
    KUBEADM_LAYOUT,
    OPENSHIFT_LAYOUT,
    ComponentsCheck,
    MachineComponents,
    controlplane_condition,
    layout_named,
    machine_components,
    machine_condition,
    pod_state,
    pods_by_node,
    ready_since,
)
from tests.support.machine_rows import NOW

GRACE = timedelta(seconds=120)
KUBEADM = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd")


def mirror_pod(
    component: str,
    node: str,
    *,
    ready: bool = True,
    namespace: str = "kube-system",
    labels: dict[str, str] | None = None,
    mirror: bool = True,
    created: str = "2026-01-01T11:00:00Z",
    waiting: str | None = None,
    restarts: int = 0,
    phase: str = "Running",
) -> dict[str, Any]:
    """A kubeadm mirror Pod of ``component`` on ``node`` (kubelet's shape)."""
    state: dict[str, Any] = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
    return {
        "metadata": {
            "name": f"{component}-{node}",
            "namespace": namespace,
            "labels": labels if labels is not None else {"component": component, "tier": "control-plane"},
            "annotations": {"kubernetes.io/config.mirror": "abc"} if mirror else {},
            "creationTimestamp": created,
        },
        "spec": {"nodeName": node},
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [
                {"name": component, "ready": ready, "restartCount": restarts, "state": state}
            ],
        },
    }


def node(name: str, *, ready: bool = True, since: str = "2026-01-01T11:00:00Z") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": since}
            ]
        },
    }


# ---------------------------------------------------------------------------------------------- where


def test_layouts_name_the_namespaces_and_labels_of_kubeadm_and_openshift() -> None:
    assert KUBEADM_LAYOUT.locations["kube-scheduler"].namespace == "kube-system"
    assert (
        KUBEADM_LAYOUT.locations["kube-scheduler"].label_selector
        == "component=kube-scheduler,tier=control-plane"
    )
    assert set(OPENSHIFT_LAYOUT.scopes()) == {
        "openshift-kube-apiserver",
        "openshift-kube-controller-manager",
        "openshift-kube-scheduler",
        "openshift-etcd",
    }
    # kubeadm's four components are one set-based selector: one watch, not four.
    assert KUBEADM_LAYOUT.scopes() == {
        "kube-system": [
            "component in (etcd,kube-apiserver,kube-controller-manager,kube-scheduler),tier=control-plane"
        ]
    }


@pytest.mark.parametrize(
    ("case", "pod", "component"),
    [
        ("kubeadm mirror pod", mirror_pod("kube-apiserver", "n1"), "kube-apiserver"),
        ("no mirror annotation: not a static pod", mirror_pod("kube-apiserver", "n1", mirror=False), None),
        ("another namespace", mirror_pod("kube-apiserver", "n1", namespace="default"), None),
        (
            "not control-plane tier",
            mirror_pod("kube-apiserver", "n1", labels={"component": "kube-apiserver"}),
            None,
        ),
    ],
)
def test_a_pod_counts_for_a_component_only_as_a_mirror_pod_of_the_layout(
    case: str, pod: dict[str, Any], component: str | None
) -> None:
    assert KUBEADM_LAYOUT.component_of(pod) == component, case


def test_openshift_guard_and_installer_pods_are_not_components() -> None:
    apiserver = mirror_pod(
        "kube-apiserver", "n1", namespace="openshift-kube-apiserver", labels={"apiserver": "true"}
    )
    guard = mirror_pod(
        "kube-apiserver-guard", "n1", namespace="openshift-kube-apiserver", labels={"app": "guard"}
    )
    assert OPENSHIFT_LAYOUT.component_of(apiserver) == "kube-apiserver"
    assert OPENSHIFT_LAYOUT.component_of(guard) is None


def test_pods_are_matched_to_nodes_by_node_name_and_the_newest_wins() -> None:
    old = mirror_pod("etcd", "n1", ready=False, created="2026-01-01T10:00:00Z")
    new = mirror_pod("etcd", "n1", created="2026-01-01T11:00:00Z")
    found = pods_by_node(KUBEADM_LAYOUT, [new, old])
    assert found[("n1", "etcd")] is not None and pod_state("etcd", found[("n1", "etcd")]).healthy is True


def test_a_layout_is_named_kubeadm_openshift_or_off() -> None:
    assert layout_named("off") is None
    assert layout_named("openshift") is OPENSHIFT_LAYOUT
    with pytest.raises(ValueError, match="choose one of kubeadm, openshift, off"):
        layout_named("rke2")


# ---------------------------------------------------------------------------------------------- one Pod


@pytest.mark.parametrize(
    ("case", "pod", "healthy", "message"),
    [
        ("ready", mirror_pod("kube-apiserver", "n1"), True, "Pod kube-system/kube-apiserver-n1 Ready"),
        (
            "crash-looping",
            mirror_pod("kube-apiserver", "n1", ready=False, waiting="CrashLoopBackOff", restarts=4),
            False,
            "Pod kube-system/kube-apiserver-n1 not ready (CrashLoopBackOff, 4 restarts)",
        ),
        (
            "failed",
            mirror_pod("kube-scheduler", "n1", phase="Failed"),
            False,
            "Pod kube-system/kube-scheduler-n1 is Failed",
        ),
    ],
)
def test_a_pod_is_healthy_when_ready(case: str, pod: dict[str, Any], healthy: bool, message: str) -> None:
    state = pod_state("c", pod)
    assert (state.healthy, state.message) == (healthy, message), case


def test_a_pod_being_deleted_is_unhealthy() -> None:
    pod = mirror_pod("etcd", "n1")
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    assert pod_state("etcd", pod).healthy is False


# ---------------------------------------------------------------------------------------------- one Machine


def judge(
    pods: list[dict[str, Any]], *, ready_for: float | None = 600, checked: tuple[str, ...] = KUBEADM
) -> MachineComponents:
    return machine_components(
        node="n1",
        ready_since=None if ready_for is None else NOW - timedelta(seconds=ready_for),
        pods=pods_by_node(KUBEADM_LAYOUT, pods),
        checked=checked,
        now=NOW,
        grace=GRACE,
    )


ALL_READY = [mirror_pod(c, "n1") for c in KUBEADM]


@pytest.mark.parametrize(
    ("case", "pods", "ready_for", "checked", "unhealthy", "pending"),
    [
        ("every component ready", ALL_READY, 600, KUBEADM, (), ()),
        (
            "api server crash-looping",
            [mirror_pod("kube-apiserver", "n1", ready=False), *ALL_READY[1:]],
            600,
            KUBEADM,
            ("kube-apiserver",),
            (),
        ),
        (
            "missing pod within the grace: pending, not unhealthy",
            ALL_READY[1:],
            30,
            KUBEADM,
            (),
            ("kube-apiserver",),
        ),
        (
            "missing pod after the grace: unhealthy (Pod not found)",
            ALL_READY[1:],
            600,
            KUBEADM,
            ("kube-apiserver",),
            (),
        ),
        ("a component never seen anywhere is not checked", ALL_READY[:3], 600, KUBEADM[:3], (), ()),
        ("a NotReady Node: nothing judged", [], None, KUBEADM, (), ()),
        ("no component checked: nothing judged", [], 600, (), (), ()),
    ],
)
def test_which_components_of_a_machine_are_unhealthy_or_pending(
    case: str,
    pods: list[dict[str, Any]],
    ready_for: float | None,
    checked: tuple[str, ...],
    unhealthy: tuple[str, ...],
    pending: tuple[str, ...],
) -> None:
    judged = judge(pods, ready_for=ready_for, checked=checked)
    assert (judged.unhealthy, judged.pending) == (unhealthy, pending), case


def test_a_missing_pod_after_the_grace_says_pod_not_found() -> None:
    assert judge(ALL_READY[1:]).summary == "kube-apiserver: Pod not found on Node n1"


def test_a_node_ready_without_transition_time_has_no_grace() -> None:
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    since = ready_since(ready)
    assert since is not None and NOW - since > GRACE
    assert ready_since(node("n1", ready=False)) is None


# ------------------------------------------------------------------------------------------ one ControlPlane


def test_components_seen_once_stay_checked_and_only_control_plane_nodes_count() -> None:
    check = ComponentsCheck(KUBEADM_LAYOUT, GRACE)
    pods = pods_by_node(KUBEADM_LAYOUT, [mirror_pod("kube-apiserver", "n1"), mirror_pod("etcd", "worker")])
    assert check.observe(pods, ["n1"]) == ["kube-apiserver"]
    assert check.observe({}, ["n1"]) == ["kube-apiserver"]  # its Pods vanished: missing, not unchecked


def test_the_check_turned_off_is_reported_off_never_passing() -> None:
    check = ComponentsCheck(None, GRACE)
    assert check.observe(pods_by_node(KUBEADM_LAYOUT, ALL_READY), ["n1"]) == []
    cond = controlplane_condition(check, [], {}, timedelta(hours=1))
    assert (cond["status"], cond["reason"]) == ("Unknown", "ComponentsCheckDisabled")


def test_no_pod_of_the_layout_ever_seen_after_the_grace_is_a_misconfiguration_not_unhealthy() -> None:
    check = ComponentsCheck(KUBEADM_LAYOUT, GRACE)
    waiting = controlplane_condition(check, [], {}, timedelta(seconds=30))
    assert (waiting["status"], waiting["reason"]) == ("Unknown", "WaitingForComponentPods")
    found = controlplane_condition(check, [], {}, timedelta(seconds=600))
    assert (found["status"], found["reason"]) == ("Unknown", "ComponentPodsNotFound")
    assert "--control-plane-components=openshift" in found["message"]
    assert "kube-apiserver in kube-system (component=kube-apiserver,tier=control-plane)" in found["message"]
    assert machine_condition(MachineComponents(), "ComponentPodsNotFound")["status"] == "Unknown"


def test_the_controlplane_condition_names_each_machine_and_component() -> None:
    check = ComponentsCheck(KUBEADM_LAYOUT, GRACE)
    broken = judge([mirror_pod("kube-scheduler", "n1", ready=False), *ALL_READY[:2], ALL_READY[3]])
    cond = controlplane_condition(check, list(KUBEADM), {"cp-b": broken, "cp-a": judge(ALL_READY)}, None)
    assert (cond["status"], cond["reason"]) == ("False", "ComponentsUnhealthy")
    assert (
        cond["message"]
        == "Machine cp-b: kube-scheduler: Pod kube-system/kube-scheduler-n1 not ready (0 restarts)"
    )
    healthy = controlplane_condition(check, list(KUBEADM[:3]), {"cp-a": judge(ALL_READY)}, None)
    assert healthy["status"] == "True"
    assert healthy["message"].endswith("not checked (never seen): etcd")


@pytest.mark.parametrize(
    ("case", "pods", "status", "reason"),
    [
        ("healthy", ALL_READY, "True", "ComponentsHealthy"),
        (
            "api server",
            [mirror_pod("kube-apiserver", "n1", ready=False), *ALL_READY[1:]],
            "False",
            "APIServerPodUnhealthy",
        ),
        (
            "controller manager",
            [ALL_READY[0], mirror_pod("kube-controller-manager", "n1", ready=False), *ALL_READY[2:]],
            "False",
            "ControllerManagerPodUnhealthy",
        ),
        ("scheduler and etcd", ALL_READY[:2], "False", "ComponentsUnhealthy"),
    ],
)
def test_the_machine_condition_reason_names_the_failing_component(
    case: str, pods: list[dict[str, Any]], status: str, reason: str
) -> None:
    cond = machine_condition(judge(pods))
    assert (cond["status"], cond["reason"]) == (status, reason), case


def test_a_machine_with_a_pod_not_seen_yet_is_unknown_not_false() -> None:
    cond = machine_condition(judge(ALL_READY[1:], ready_for=30))
    assert (cond["status"], cond["reason"]) == ("Unknown", "WaitingForComponentPods")
    assert machine_condition(judge([], ready_for=None))["reason"] == "WaitingForNode"
