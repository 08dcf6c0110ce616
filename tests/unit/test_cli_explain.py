"""``cpo explain``'s document and screen from fixture objects: a rolling update in progress, a
Machine held for deletion by the etcd-quorum hook, a ControlPlane without ``status.etcd``, an
Inactive ControlPlane, a step blocked by the preflight, a Machine the health check marked."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from cli.__main__ import build_parser
from cli.explain import (
    DOCUMENT_VERSION,
    Snapshot,
    explain_document,
    kubeconfig_path,
    render,
    resolve_connection,
)

NS = "team-a"
T0 = "2026-11-27T10:00:00Z"
T1 = "2026-11-27T10:05:00Z"
REPLACING = "ReplacingOutdated demo-a in zone-a"
UNHEALTHY = "EtcdMemberUnhealthy: member demo-b unhealthy"
HOOK = {"name": "EtcdQuorumOperator", "owner": "clusteroperator/etcd"}


def condition(type_: str, status: str, reason: str, message: str = "", at: str = T0) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": at}


def controlplane(
    *, spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "controlplane.cpo.dev/v1alpha1",
        "kind": "ControlPlane",
        "metadata": {"name": "demo", "namespace": NS, "uid": "cp-uid", "generation": 2},
        "spec": {"replicas": 3, "template": {}, **(spec or {})},
        "status": status or {},
    }


def machine(
    name: str,
    *,
    domain: str = "zone-a",
    phase: str = "Running",
    node: str | None = None,
    conditions: list[dict[str, Any]] | None = None,
    hooks: list[dict[str, str]] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "labels": {
            "machine.openshift.io/cluster-api-machine-role": "master",
            "controlplane.cpo.dev/failure-domain": domain,
        },
    }
    if deleting:
        metadata["deletionTimestamp"] = T1
    status: dict[str, Any] = {"phase": phase, "conditions": conditions or []}
    if node is not None:
        status["nodeRef"] = {"kind": "Node", "name": node}
    return {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "Machine",
        "metadata": metadata,
        "spec": {"lifecycleHooks": {"preDrain": hooks or []}},
        "status": status,
    }


def node(name: str, ready: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"conditions": [condition("Ready", ready, "KubeletReady")]}}


def health_check() -> dict[str, Any]:
    return {
        "metadata": {"name": "demo-mhc", "namespace": NS, "ownerReferences": [{"uid": "cp-uid"}]},
        "spec": {"maxUnhealthy": 2},
        "status": {"expectedMachines": 4, "currentHealthy": 3, "remediationsAllowed": 1},
    }


def screen(document: dict[str, Any]) -> str:
    out = io.StringIO()
    Console(file=out, width=220, color_system=None).print(render(document))
    return out.getvalue()


def rolling_update() -> Snapshot:
    """Replacing demo-a (outdated) in zone-a: its replacement demo-d is a learner catching up."""
    cp = controlplane(
        spec={"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}},
        status={
            "phase": "Updating",
            "replicas": 4,
            "readyReplicas": 3,
            "updatedReplicas": 3,
            "availableReplicas": 3,
            "unavailableReplicas": 1,
            "conditions": [
                condition("Available", "True", "AsExpected", "etcd has quorum"),
                condition(
                    "Progressing", "True", "ReplacingOutdated", "ReplacingOutdated demo-a in zone-a", T1
                ),
            ],
            "etcd": {
                "voters": 3,
                "learners": 1,
                "healthyVoters": 3,
                "quorum": 2,
                "faultTolerance": 1,
                "leaderMachine": "demo-b",
            },
            "lastRemediation": {"machine": "demo-x", "timestamp": T0, "retryCount": 1},
        },
    )
    healthy = condition("EtcdMemberHealthy", "True", "Voter", "etcd voter demo-a (a1) is healthy")
    machines = [
        machine(
            "demo-a",
            node="n-a",
            hooks=[HOOK],
            conditions=[healthy, condition("UpToDate", "False", "TemplateChanged", "template differs")],
        ),
        machine(
            "demo-b",
            domain="zone-b",
            node="n-b",
            hooks=[HOOK],
            conditions=[condition("EtcdMemberHealthy", "True", "Leader", "etcd voter demo-b (b2) leads")],
        ),
        machine("demo-c", domain="zone-c", node="n-c", hooks=[HOOK], conditions=[healthy]),
        machine(
            "demo-d",
            phase="Provisioned",
            node="n-d",
            hooks=[HOOK],
            conditions=[condition("EtcdMemberHealthy", "False", "LearnerUnhealthy", "learner not in sync")],
        ),
    ]
    nodes = {n: node(n, "True") for n in ("n-a", "n-b", "n-c")} | {"n-d": node("n-d", "False")}
    return Snapshot(cp, machines, nodes, health_check())


def test_a_rolling_update_in_progress_names_each_machine_the_plan_and_etcd() -> None:
    document = explain_document(rolling_update())
    json.dumps(document)  # a JSON document, nothing else
    assert document["version"] == DOCUMENT_VERSION and document["kind"] == "ControlPlaneExplanation"
    cp = document["controlPlane"]
    assert cp["desiredReplicas"] == 3 and cp["strategy"] == {"type": "RollingUpdate", "maxSurge": 1}
    assert cp["state"] == "Active" and cp["phase"] == "Updating"
    assert cp["replicas"]["unavailable"] == 1
    by_name = {m["name"]: m for m in document["machines"]}
    assert list(by_name) == ["demo-a", "demo-b", "demo-c", "demo-d"]
    assert by_name["demo-a"]["upToDate"] == {
        "status": "False",
        "reason": "TemplateChanged",
        "message": "template differs",
    }
    assert by_name["demo-a"]["failureDomain"] == "zone-a" and by_name["demo-a"]["nodeReady"] == "True"
    assert by_name["demo-a"]["hooks"]["etcdQuorumHook"] is True
    assert by_name["demo-b"]["etcd"]["role"] == "leader"
    assert by_name["demo-d"]["etcd"] == {
        "role": "learner",
        "healthy": False,
        "reason": "LearnerUnhealthy",
        "message": "learner not in sync",
    }
    assert by_name["demo-d"]["nodeReady"] == "False"
    assert document["etcd"] == {
        "known": True,
        "voters": 3,
        "learners": 1,
        "healthyVoters": 3,
        "quorum": 2,
        "faultTolerance": 1,
        "leaderMachine": "demo-b",
    }
    assert document["remediation"] == {
        "lastRemediation": {"machine": "demo-x", "timestamp": T0, "retryCount": 1},
        "healthCheck": {
            "name": "demo-mhc",
            "maxUnhealthy": 2,
            "expectedMachines": 4,
            "currentHealthy": 3,
            "remediationsAllowed": 1,
        },
    }
    assert document["plan"] == {
        "progressing": {
            "status": "True",
            "reason": "ReplacingOutdated",
            "message": "ReplacingOutdated demo-a in zone-a",
            "since": T1,
        },
        "blocked": [],
    }

    text = screen(document)
    for expected in (
        "ControlPlane team-a/demo",
        "desired 3",
        "strategy RollingUpdate, maxSurge 1",
        "state Active",
        "phase Updating",
        "no: template differs",
        "learner, unhealthy",
        "leader, healthy",
        "etcd: 3 voter(s), 1 learner(s), 3 healthy; quorum 2, fault tolerance 1; leader on demo-b",
        "remediation: last demo-x at 2026-11-27T10:00:00Z (retry 1); demo-mhc: maxUnhealthy 2",
        f"plan: ReplacingOutdated since {T1}: ReplacingOutdated demo-a in zone-a",
    ):
        assert expected in text, f"{expected!r} not in:\n{text}"
    for name in ("demo-a", "demo-b", "demo-c", "demo-d"):
        assert name in text


def test_a_machine_deleting_held_by_the_hook_shows_the_hold_and_the_mark() -> None:
    marked = [
        condition("HealthCheckSucceeded", "False", "UnhealthyNode", "Node Ready=False for 5m"),
        condition("OwnerRemediated", "False", "WaitingForRemediation", "the owner remediates"),
    ]
    snapshot = Snapshot(
        controlplane(status={"phase": "Remediating"}),
        [
            machine("demo-a", phase="Deleting", node="n-a", hooks=[HOOK], deleting=True, conditions=marked),
            machine("demo-b", node="n-b"),
        ],
        {"n-a": node("n-a", "False")},
    )
    document = explain_document(snapshot)
    held, other = document["machines"]
    assert held["deleting"] is True and held["deletionTimestamp"] == T1
    assert held["hooks"]["preDrain"] == [HOOK] and held["hooks"]["etcdQuorumHook"] is True
    assert held["healthCheck"] == {
        "healthy": False,
        "reason": "UnhealthyNode",
        "message": "Node Ready=False for 5m",
        "ownerRemediated": {
            "status": "False",
            "reason": "WaitingForRemediation",
            "message": "the owner remediates",
        },
    }
    # Its Node is gone from the snapshot: Unknown, not a guess.
    assert other["nodeReady"] == "Unknown" and other["healthCheck"]["healthy"] is None
    assert document["remediation"]["healthCheck"] is None
    text = screen(document)
    assert "holds: EtcdQuorumOperator" in text, text
    assert "marked: WaitingForRemediation" in text, text
    assert "no MachineHealthCheck" in text, text


@pytest.mark.parametrize(
    ("reason", "status", "role", "healthy"),
    [
        ("Leader", "True", "leader", True),
        ("Voter", "True", "voter", True),
        ("Learner", "True", "learner", True),
        ("VoterUnhealthy", "False", "voter", False),
        ("LearnerUnhealthy", "False", "learner", False),
        ("MemberNotFound", "False", "none", False),
        ("InspectionFailed", "Unknown", "unknown", None),
        ("SomethingLater", "True", "unknown", True),
    ],
)
def test_the_etcd_role_is_the_one_the_member_condition_reason_names(
    reason: str, status: str, role: str, healthy: bool | None
) -> None:
    # The message says "leader" and "learner": only the reason counts.
    member = condition("EtcdMemberHealthy", status, reason, "not the leader, not a learner")
    document = explain_document(Snapshot(controlplane(), [machine("demo-a", conditions=[member])]))
    etcd = document["machines"][0]["etcd"]
    assert (etcd["role"], etcd["healthy"], etcd["reason"]) == (role, healthy, reason)


def test_the_hook_condition_is_in_the_document_and_its_reason_on_the_screen() -> None:
    holding = condition(
        "EtcdQuorumHookHolding", "True", "HealthyVotersBelowDesired", "replacement not a voter"
    )
    snapshot = Snapshot(
        controlplane(),
        [machine("demo-a", hooks=[HOOK], deleting=True, conditions=[holding]), machine("demo-b")],
    )
    document = explain_document(snapshot)
    assert document["machines"][0]["hooks"]["etcdQuorumHookHolding"] == {
        "status": "True",
        "reason": "HealthyVotersBelowDesired",
        "message": "replacement not a voter",
    }
    assert document["machines"][1]["hooks"]["etcdQuorumHookHolding"] is None
    assert "holds: EtcdQuorumOperator (HealthyVotersBelowDesired)" in screen(document)


def test_without_status_etcd_or_machine_conditions_the_facts_are_unknown() -> None:
    snapshot = Snapshot(controlplane(), [machine("demo-a")], {})
    document = explain_document(snapshot)
    assert document["etcd"] == {
        "known": False,
        "voters": None,
        "learners": None,
        "healthyVoters": None,
        "quorum": None,
        "faultTolerance": None,
        "leaderMachine": None,
    }
    (entry,) = document["machines"]
    assert entry["etcd"] is None and entry["upToDate"] is None and entry["node"] is None
    assert entry["nodeReady"] is None
    assert document["plan"] == {"progressing": None, "blocked": []}
    assert document["conditions"] == []
    text = screen(document)
    assert "quorum unknown" in text, text
    assert "plan: unknown" in text, text
    assert "no conditions written yet" in text, text


def test_an_inactive_controlplane_says_so_and_what_blocks_it() -> None:
    cp = controlplane(
        spec={"state": "Inactive", "strategy": {"type": "OnDelete"}},
        status={
            "phase": "Degraded",
            "failureReason": "InvalidConfiguration",
            "failureMessage": "failure domain zone-z has no provider spec",
            "conditions": [
                condition(
                    "Progressing",
                    "True",
                    "PreflightFailed",
                    "EtcdMemberUnhealthy: member demo-b unhealthy",
                    T1,
                ),
                condition("Degraded", "True", "MachinesNotReady", "Machine(s) demo-b not ready"),
            ],
        },
    )
    document = explain_document(Snapshot(cp, [], {}))
    assert document["controlPlane"]["state"] == "Inactive"
    assert document["controlPlane"]["strategy"] == {"type": "OnDelete", "maxSurge": None}
    assert document["controlPlane"]["failure"] == {
        "reason": "InvalidConfiguration",
        "message": "failure domain zone-z has no provider spec",
    }
    assert document["plan"]["blocked"] == [
        {
            "source": "Progressing",
            "reason": "PreflightFailed",
            "message": "EtcdMemberUnhealthy: member demo-b unhealthy",
            "since": T1,
        },
        {
            "source": "Degraded",
            "reason": "MachinesNotReady",
            "message": "Machine(s) demo-b not ready",
            "since": T0,
        },
        {
            "source": "status.failureReason",
            "reason": "InvalidConfiguration",
            "message": "failure domain zone-z has no provider spec",
            "since": None,
        },
    ]
    text = screen(document)
    assert "state Inactive" in text and "strategy OnDelete " in text, text
    assert f"plan: PreflightFailed since {T1}: {UNHEALTHY}" in text, text
    assert f"blocked: PreflightFailed (Progressing, since {T1})\n" in text, text
    assert "blocked: MachinesNotReady (Degraded, since 2026-11-27T10:00:00Z): Machine(s) demo-b" in text
    assert "no Machine matches the selector" in text


def test_status_etcd_given_as_member_lists_counts_them_and_derives_quorum() -> None:
    cp = controlplane(status={"etcd": {"voters": ["a", "b", "c"], "learners": [], "leader": "demo-a"}})
    etcd = explain_document(Snapshot(cp))["etcd"]
    assert etcd["voters"] == 3 and etcd["learners"] == 0 and etcd["quorum"] == 2
    assert etcd["faultTolerance"] == 1 and etcd["leaderMachine"] == "demo-a"


def test_the_parser_takes_kubectl_style_arguments() -> None:
    args = build_parser().parse_args(["explain", "-n", NS, "demo", "-o", "json", "--watch"])
    assert (args.command, args.name, args.namespace, args.output, args.watch) == (
        "explain",
        "demo",
        NS,
        "json",
        True,
    )
    assert build_parser("kubectl cpo").prog == "kubectl cpo"


def test_the_kubeconfig_and_namespace_resolve_as_kubectl_does(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "contexts:\n- name: c\n  context: {cluster: k, user: u, namespace: from-context}\n"
    )
    missing = tmp_path / "missing"
    home = tmp_path / "home"
    assert kubeconfig_path("/x/explicit", {"KUBECONFIG": str(config)}) == Path("/x/explicit")
    assert kubeconfig_path(None, {"KUBECONFIG": f"{missing}:{config}", "HOME": str(home)}) == config
    assert kubeconfig_path(None, {"HOME": str(home)}) is None  # in-cluster
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text(config.read_text())
    assert kubeconfig_path(None, {"HOME": str(home)}) == home / ".kube" / "config"

    def args(namespace: str | None) -> argparse.Namespace:
        return argparse.Namespace(kubeconfig=str(config), namespace=namespace, context=None)

    assert resolve_connection(args(None))[1] == "from-context"
    assert resolve_connection(args("given"))[1] == "given"


@pytest.mark.parametrize(
    ("reason", "blocked"),
    [
        ("EtcdMemberUnhealthy", True),
        ("MachineNotReady", True),
        ("EtcdUnreachable", True),
        ("HeldByConfiguration", True),
        ("Paused", True),
        ("WaitingForLearner", False),
        ("RemovingMember", False),
        ("ReplacingOutdated", False),
        ("UpToDate", False),
    ],
)
def test_the_controllers_plan_reasons_are_blocked_or_not(reason: str, blocked: bool) -> None:
    message = f"{reason}: about Machine demo-q"
    cp = controlplane(status={"conditions": [condition("Progressing", "True", reason, message, T1)]})
    document = explain_document(Snapshot(cp, [], {}))
    assert document["plan"]["progressing"]["reason"] == reason
    shown = [(b["source"], b["reason"], b["message"]) for b in document["plan"]["blocked"]]
    assert shown == ([("Progressing", reason, message)] if blocked else []), shown


def test_each_machine_shows_its_control_plane_components() -> None:
    broken = condition(
        "ControlPlaneComponentsHealthy",
        "False",
        "APIServerPodUnhealthy",
        "kube-apiserver: Pod kube-system/kube-apiserver-n2 not ready (CrashLoopBackOff, 3 restarts)",
    )
    healthy = condition(
        "ControlPlaneComponentsHealthy", "True", "ComponentsHealthy", "kube-apiserver, etcd Ready"
    )
    snapshot = Snapshot(
        controlplane(),
        [machine("demo-a", conditions=[healthy]), machine("demo-b", conditions=[broken]), machine("demo-c")],
    )
    document = explain_document(snapshot)
    assert [m["components"] for m in document["machines"]] == [
        {"status": "True", "reason": "ComponentsHealthy", "message": "kube-apiserver, etcd Ready"},
        {"status": "False", "reason": "APIServerPodUnhealthy", "message": broken["message"]},
        None,
    ]
    text = screen(document)
    assert "COMPONENTS" in text and "healthy" in text
    assert "unhealthy: kube-apiserver: Pod kube-system/kube-apiserver-n2 not ready" in text.replace(
        "\n", " "
    ), text
