"""kube-apiserver's ServiceAccount (mirror Pods) and Priority admission plugins on a Pod's create
(apiserver/builtin_types/pod_admission.py), case by case."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.builtin_types.pod_admission import admit_pod

MIRROR = {"kubernetes.io/config.mirror": "0a1b"}


def pod(annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p"}
    if annotations:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


@pytest.mark.parametrize(
    ("spec", "refusal"),
    [
        ({"serviceAccountName": "default"}, "a mirror pod may not reference service accounts"),
        ({"imagePullSecrets": [{"name": "s"}]}, "a mirror pod may not reference secrets"),
        (
            {"volumes": [{"name": "v", "secret": {"secretName": "s"}}]},
            "a mirror pod may not reference secrets",
        ),
        (
            {
                "containers": [
                    {"name": "c", "image": "i", "envFrom": [{"secretRef": {"name": "s"}}]},
                ]
            },
            "a mirror pod may not reference secrets",
        ),
        (
            {"volumes": [{"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]},
            "a mirror pod may not use ServiceAccountToken volume projections",
        ),
        ({"hostNetwork": True}, None),
    ],
    ids=["service account", "pull secret", "secret volume", "env from secret", "token projection", "none"],
)
def test_a_mirror_pod_references_no_service_account_nor_secret(
    spec: dict[str, Any], refusal: str | None
) -> None:
    assert admit_pod(pod(MIRROR, **spec)) == refusal


def test_a_pod_that_is_no_mirror_may_name_a_service_account() -> None:
    assert admit_pod(pod(serviceAccountName="default")) is None


@pytest.mark.parametrize(
    ("class_name", "priority"),
    [(None, 0), ("system-node-critical", 2000001000), ("system-cluster-critical", 2000000000)],
    ids=["no class", "node critical", "cluster critical"],
)
def test_the_priority_comes_from_the_class(class_name: str | None, priority: int) -> None:
    obj = pod(**({"priorityClassName": class_name} if class_name else {}))
    assert admit_pod(obj) is None
    assert obj["spec"]["priority"] == priority
    assert obj["spec"]["preemptionPolicy"] == "PreemptLowerPriority"


@pytest.mark.parametrize(
    ("spec", "refusal"),
    [
        ({"priorityClassName": "gold"}, "no PriorityClass with name gold was found"),
        (
            {"priorityClassName": "system-node-critical", "priority": 5},
            "the integer value of priority (5) must not be provided in pod spec; priority admission "
            "controller computed 2000001000 from the given PriorityClass name",
        ),
        (
            {"preemptionPolicy": "Never"},
            "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority "
            "admission controller computed PreemptLowerPriority from the given PriorityClass name",
        ),
        ({"priorityClassName": "system-node-critical", "priority": 2000001000}, None),
    ],
    ids=["unknown class", "another priority", "another preemption policy", "the computed priority"],
)
def test_a_priority_or_class_it_cannot_give_is_refused(spec: dict[str, Any], refusal: str | None) -> None:
    assert admit_pod(pod(**spec)) == refusal
