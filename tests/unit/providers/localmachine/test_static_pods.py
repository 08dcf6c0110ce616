"""The control-plane mirror Pods (providers/localmachine/static_pods.py), rule by rule: what a
mirror Pod is, when its container is ready, how it crash-loops, and when its status is written."""

from __future__ import annotations

from typing import Any

import pytest

from providers.localmachine import static_pods as sp
from providers.localmachine.reconciler import FAULTS, _InvalidConfiguration, machine_faults

NODE: dict[str, Any] = {"metadata": {"name": "master-0", "uid": "node-uid-1"}}
T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:10Z"


def stored(component: str, status: dict[str, Any] | None = None) -> dict[str, Any]:
    """The desired Pod as the server would hand it back (a uid, the given status)."""
    pod = sp.desired_pod(component, NODE, "ns/master-0")
    pod["metadata"]["uid"] = f"pod-{component}"
    if status is not None:
        pod["status"] = status
    return pod


# ------------------------------------------------------------------------------ the Pod


@pytest.mark.parametrize(
    ("component", "name"),
    [
        (sp.ETCD, "etcd-master-0"),
        (sp.KUBE_APISERVER, "kube-apiserver-master-0"),
        (sp.KUBE_CONTROLLER_MANAGER, "kube-controller-manager-master-0"),
        (sp.KUBE_SCHEDULER, "kube-scheduler-master-0"),
    ],
)
def test_names_are_component_dash_node(component: str, name: str) -> None:
    pod = sp.desired_pod(component, NODE, "ns/master-0")
    assert pod["metadata"]["name"] == name
    assert pod["metadata"]["namespace"] == "kube-system"


def test_labels_are_kubeadms() -> None:
    pod = sp.desired_pod(sp.KUBE_SCHEDULER, NODE, "ns/master-0")
    assert pod["metadata"]["labels"] == {"component": "kube-scheduler", "tier": "control-plane"}


def test_annotations_mark_a_mirror_pod_from_a_file_with_its_hash() -> None:
    annotations = sp.desired_pod(sp.ETCD, NODE, "ns/master-0")["metadata"]["annotations"]
    assert annotations["kubernetes.io/config.source"] == "file"
    assert annotations["kubernetes.io/config.mirror"] == annotations["kubernetes.io/config.hash"]
    int(annotations["kubernetes.io/config.mirror"], 16)  # a hex string
    assert annotations["local.cpo.dev/machine"] == "ns/master-0"


def test_the_hash_is_stable_and_differs_per_component_and_node() -> None:
    assert sp.config_hash("etcd", "a") == sp.config_hash("etcd", "a")
    assert sp.config_hash("etcd", "a") != sp.config_hash("etcd", "b")
    assert sp.config_hash("etcd", "a") != sp.config_hash("kube-scheduler", "a")


def test_owner_is_the_node_as_controller() -> None:
    pod = sp.desired_pod(sp.ETCD, NODE, "ns/master-0")
    assert pod["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "master-0", "uid": "node-uid-1", "controller": True}
    ]
    assert sp.owner_node(pod) == ("master-0", "node-uid-1")


def test_spec_is_node_critical_host_network_without_a_service_account() -> None:
    spec = sp.desired_pod(sp.KUBE_APISERVER, NODE, "ns/master-0")["spec"]
    assert spec["nodeName"] == "master-0"
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["hostNetwork"] is True
    assert [c["name"] for c in spec["containers"]] == ["kube-apiserver"]
    assert spec["containers"][0]["image"]
    assert "serviceAccountName" not in spec and "serviceAccount" not in spec


@pytest.mark.parametrize(
    ("change", "matches"),
    [
        (lambda pod: None, True),
        (lambda pod: pod["metadata"]["ownerReferences"][0].update(uid="node-uid-2"), False),
        (lambda pod: pod["metadata"]["annotations"].update({"kubernetes.io/config.mirror": "0"}), False),
        (lambda pod: pod["metadata"]["annotations"].pop("local.cpo.dev/machine"), False),
        (lambda pod: pod["metadata"].update(ownerReferences=[]), False),
    ],
    ids=["as made", "another node uid", "another hash", "not marked ours", "no owner"],
)
def test_a_stored_pod_matches_only_the_manifest_on_the_same_node(change: Any, matches: bool) -> None:
    pod = stored(sp.ETCD)
    change(pod)
    assert sp.matches(pod, sp.desired_pod(sp.ETCD, NODE, "ns/master-0")) is matches


@pytest.mark.parametrize(
    ("change", "ours"),
    [
        (lambda pod: None, True),
        (lambda pod: pod["metadata"]["annotations"].pop("local.cpo.dev/machine"), False),
        (lambda pod: pod["metadata"]["annotations"].pop("kubernetes.io/config.mirror"), False),
        (lambda pod: pod["metadata"]["annotations"].update({"local.cpo.dev/machine": "other/m"}), False),
        (lambda pod: pod["metadata"].update(namespace="default"), False),
    ],
    ids=["ours", "a kubelet's", "not a mirror pod", "another cluster's", "another namespace"],
)
def test_ours_are_marked_mirror_pods_of_the_clusters_served(change: Any, ours: bool) -> None:
    pod = stored(sp.ETCD)
    change(pod)
    assert sp.is_ours(pod, {"ns"}) is ours


# ------------------------------------------------------------------------------ faults


@pytest.mark.parametrize(
    ("faults", "failing"),
    [
        (set(), set()),
        ({"notready"}, set()),
        ({"kube-apiserver-notready"}, {"kube-apiserver"}),
        ({"kube-controller-manager-notready"}, {"kube-controller-manager"}),
        ({"kube-scheduler-notready", "kill"}, {"kube-scheduler"}),
    ],
    ids=["none", "node notready", "apiserver", "controller-manager", "scheduler and kill"],
)
def test_each_pod_fault_fails_its_component_only(faults: set[str], failing: set[str]) -> None:
    assert sp.faulted_components(frozenset(faults)) == failing


def test_the_pod_faults_are_faults_of_the_provider() -> None:
    assert set(sp.POD_FAULTS) <= set(FAULTS)
    faults = machine_faults(
        {"spec": {"providerSpec": {"value": {"faults": ["kube-scheduler-notready"]}}}, "metadata": {}}
    )
    assert faults == {"kube-scheduler-notready"}


@pytest.mark.parametrize(
    ("annotation", "faults"),
    [
        ("kube-apiserver-notready", {"kube-apiserver-notready"}),
        ("stop,kube-scheduler-notready", {"stop", "kube-scheduler-notready"}),
        (" notready , kill ", {"notready", "kill"}),
        ("", set()),
    ],
    ids=["one", "two", "spaces", "empty"],
)
def test_the_annotation_holds_one_fault_or_a_comma_separated_list(annotation: str, faults: set[str]) -> None:
    obj = {"metadata": {"annotations": {"local.cpo.dev/fault": annotation}}}
    assert machine_faults(obj) == faults


def test_an_unknown_pod_fault_in_the_provider_spec_fails_the_machine() -> None:
    with pytest.raises(_InvalidConfiguration):
        machine_faults({"spec": {"providerSpec": {"value": {"faults": ["kube-proxy-notready"]}}}})


# ------------------------------------------------------------------------------ crash loop


def run(loop: sp.CrashLoop, passes: list[tuple[float, bool]]) -> list[sp.CrashLoop]:
    out = []
    for clock, failing in passes:
        loop = sp.advance(loop, failing=failing, clock=clock, wall=f"t{clock:g}")
        out.append(loop)
    return out


def test_a_healthy_container_runs_from_its_first_pass_and_stays_put() -> None:
    first, second = run(sp.CrashLoop(), [(0, False), (5, False)])
    assert first == sp.CrashLoop(restarts=0, started_at="t0")
    assert second is first


def test_a_fault_restarts_at_once_then_backs_off_10s_doubling() -> None:
    loops = run(
        sp.CrashLoop(started_at="t0"),
        [(100, True), (105, True), (110, True), (125, True), (130, True), (170, True)],
    )
    assert [loop.restarts for loop in loops] == [1, 1, 2, 2, 3, 4]
    assert [loop.backoff for loop in loops] == [10, 10, 20, 20, 40, 80]
    assert all(loop.waiting for loop in loops)
    assert loops[0].crashed_at == "t100" and loops[-1].crashed_at == "t170"


def test_the_back_off_is_capped_at_300s() -> None:
    loop = sp.CrashLoop(restarts=6, backoff=160.0, next_restart=0.0)
    (capped,) = run(loop, [(0, True)])
    assert capped.backoff == 300
    (still,) = run(capped, [(300, True)])
    assert still.backoff == 300 and still.restarts == 8


def test_clearing_the_fault_runs_it_again_keeping_its_restarts_and_resetting_the_back_off() -> None:
    _, _, cleared, again = run(
        sp.CrashLoop(started_at="t0"), [(0, True), (10, True), (12, False), (13, True)]
    )
    assert cleared.restarts == 2 and cleared.started_at == "t12" and cleared.backoff is None
    assert again.restarts == 3 and again.backoff == 10


def test_a_crash_loop_remembered_from_the_stored_status_resumes_its_back_off() -> None:
    pod = stored(
        sp.KUBE_APISERVER,
        {"containerStatuses": [{"name": "kube-apiserver", "restartCount": 4, "state": {"waiting": {}}}]},
    )
    loop = sp.loop_from_status(pod, sp.KUBE_APISERVER)
    assert loop.restarts == 4 and loop.waiting
    waits, restarts = run(loop, [(50, True), (60, True)])
    assert waits.restarts == 4 and restarts.restarts == 5


def test_a_running_container_remembered_from_the_stored_status_keeps_its_start() -> None:
    status = {"name": "etcd", "restartCount": 1, "state": {"running": {"startedAt": T0}}}
    loop = sp.loop_from_status(stored(sp.ETCD, {"containerStatuses": [status]}), sp.ETCD)
    assert loop == sp.CrashLoop(restarts=1, started_at=T0)


# ------------------------------------------------------------------------------ status


def conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status["conditions"]}


def test_a_ready_pod_is_running_with_four_true_conditions() -> None:
    status = sp.pod_status(
        stored(sp.KUBE_APISERVER), sp.CrashLoop(started_at=T0), ready=True, host_ip="127.0.0.1", wall=T0
    )
    assert status["phase"] == "Running"
    assert {t: c["status"] for t, c in conditions(status).items()} == {
        "Initialized": "True",
        "PodScheduled": "True",
        "ContainersReady": "True",
        "Ready": "True",
    }
    (container,) = status["containerStatuses"]
    assert container["name"] == "kube-apiserver"
    assert container["ready"] is True and container["started"] is True
    assert container["restartCount"] == 0
    assert container["state"] == {"running": {"startedAt": T0}}


@pytest.mark.parametrize("healthy", [True, False], ids=["healthy member", "unhealthy member"])
def test_etcd_readiness_follows_the_member_health(healthy: bool) -> None:
    status = sp.pod_status(stored(sp.ETCD), sp.CrashLoop(started_at=T0), ready=healthy, host_ip="h", wall=T0)
    assert conditions(status)["Ready"]["status"] == str(healthy)
    assert status["containerStatuses"][0]["ready"] is healthy
    assert status["containerStatuses"][0]["state"] == {"running": {"startedAt": T0}}


def test_a_crash_looping_pod_is_not_ready_and_waits_in_crash_loop_back_off() -> None:
    loop = sp.advance(sp.CrashLoop(started_at=T0), failing=True, clock=0, wall=T1)
    status = sp.pod_status(stored(sp.KUBE_SCHEDULER), loop, ready=True, host_ip="h", wall=T1)
    assert conditions(status)["Ready"]["status"] == "False"
    assert conditions(status)["ContainersReady"]["status"] == "False"
    assert conditions(status)["Ready"]["reason"] == "ContainersNotReady"
    (container,) = status["containerStatuses"]
    assert container["ready"] is False and container["started"] is False
    assert container["restartCount"] == 1
    assert container["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert container["lastState"]["terminated"]["finishedAt"] == T1


def test_a_transition_time_moves_only_when_its_condition_changes() -> None:
    pod = stored(sp.ETCD)
    pod["status"] = sp.pod_status(pod, sp.CrashLoop(started_at=T0), ready=True, host_ip="h", wall=T0)
    later = sp.pod_status(pod, sp.CrashLoop(started_at=T0), ready=False, host_ip="h", wall=T1)
    assert conditions(later)["Ready"]["lastTransitionTime"] == T1
    assert conditions(later)["PodScheduled"]["lastTransitionTime"] == T0
    assert later["startTime"] == T0


def test_no_write_when_nothing_changed() -> None:
    pod = stored(sp.ETCD)
    pod["status"] = sp.pod_status(pod, sp.CrashLoop(started_at=T0), ready=True, host_ip="h", wall=T0)
    again = sp.pod_status(pod, sp.CrashLoop(started_at=T0), ready=True, host_ip="h", wall=T1)
    assert not sp.status_changes(pod, again)


def test_what_the_server_adds_is_no_change() -> None:
    pod = stored(sp.ETCD)
    wanted = sp.pod_status(pod, sp.CrashLoop(started_at=T0), ready=True, host_ip="h", wall=T0)
    as_served = {**wanted, "qosClass": "BestEffort"}
    as_served["conditions"] = [{**c, "lastProbeTime": None} for c in wanted["conditions"]]
    as_served["containerStatuses"] = [{**wanted["containerStatuses"][0], "containerID": "x"}]
    pod["status"] = as_served
    assert not sp.status_changes(pod, wanted)


@pytest.mark.parametrize(
    ("ready", "loop"),
    [
        (False, sp.CrashLoop(started_at=T0)),
        (True, sp.CrashLoop(restarts=1, backoff=10, next_restart=10, crashed_at=T1)),
    ],
    ids=["readiness", "a restart"],
)
def test_a_write_when_readiness_or_restarts_change(ready: bool, loop: sp.CrashLoop) -> None:
    pod = stored(sp.ETCD)
    pod["status"] = sp.pod_status(pod, sp.CrashLoop(started_at=T0), ready=True, host_ip="h", wall=T0)
    assert sp.status_changes(pod, sp.pod_status(pod, loop, ready=ready, host_ip="h", wall=T1))


def test_a_new_pods_status_is_a_change() -> None:
    pod = stored(sp.ETCD, {"phase": "Pending", "qosClass": "BestEffort"})
    assert sp.status_changes(pod, sp.pod_status(pod, sp.CrashLoop(), ready=True, host_ip="h", wall=T0))


def test_a_node_that_stops_posting_gets_its_pods_ready_turned_false_once() -> None:
    pod = stored(sp.ETCD)
    pod["status"] = sp.pod_status(pod, sp.CrashLoop(started_at=T0), ready=True, host_ip="h", wall=T0)
    turned = sp.marked_not_ready(pod, T1)
    assert turned is not None
    assert {c["type"]: c["status"] for c in turned} == {
        "Initialized": "True",
        "Ready": "False",
        "ContainersReady": "True",
        "PodScheduled": "True",
    }
    assert conditions({"conditions": turned})["Ready"]["lastTransitionTime"] == T1
    pod["status"]["conditions"] = turned
    assert sp.marked_not_ready(pod, T1) is None
    assert sp.marked_not_ready(stored(sp.ETCD, {"phase": "Pending"}), T1) is None
