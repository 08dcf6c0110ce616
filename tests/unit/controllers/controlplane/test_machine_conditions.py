"""Pins the per-Machine conditions the ControlPlane controller writes: every reason of UpToDate and
OwnerRemediated, and that a settled pass wants the same again (merging is test_conditions')."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from api.controlplane import ControlPlaneSpec
from api.failuredomains import FAILURE_DOMAIN_LABEL
from api.machine import (
    REASON_CANNOT_BE_REMEDIATED,
    REASON_MACHINE_DELETING,
    REASON_REMEDIATION_DEFERRED,
)
from controllers.conditions import Wanted
from controllers.controlplane.machine_conditions import (
    owner_remediated_condition,
    retry_text,
    up_to_date_condition,
)
from controllers.controlplane.machine_conditions import wanted_conditions as controlplane_wanted
from controllers.controlplane.placement import (
    SPEC_HASH_ANNOTATION,
    desired_machine,
    template_hash,
)
from controllers.controlplane.remediation import RemediationDecision
from controllers.controlplane.remediation_record import REMEDIATION_FOR_ANNOTATION
from tests.support.controlplane_specs import local_spec

T1 = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)


def of(wanted: Mapping[str, Wanted], name: str, type_: str) -> Mapping[str, Any]:
    """The wanted condition ``type_`` of Machine ``name`` (there must be one)."""
    found = wanted[name][type_]
    assert found is not None
    return found


# -------------------------------------------------------------------------------------------------- UpToDate


def created(s: ControlPlaneSpec, name: str = "cp-a", domain: str = "a", **meta: Any) -> dict[str, Any]:
    wanted = desired_machine(s, domain)
    return {
        "metadata": {
            "name": name,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {**wanted["labels"], FAILURE_DOMAIN_LABEL: domain},
            "annotations": {**wanted["annotations"], SPEC_HASH_ANNOTATION: template_hash(s, domain)},
            **meta,
        },
        "spec": {"providerSpec": wanted["providerSpec"]},
    }


@pytest.mark.parametrize(
    ("change", "reason", "words"),
    [
        pytest.param({}, "UpToDate", None, id="a Machine made from the unchanged spec is up to date"),
        pytest.param(
            {
                "template": {
                    "spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "size": 2}}}
                }
            },
            "TemplateChanged",
            "outdated: its spec differs from the template",
            id="when the template changed the Machine is outdated",
        ),
        pytest.param(
            {"failureDomains": [{"name": "b"}, {"name": "c"}]},
            "FailureDomainNotConfigured",
            "outdated: failure domain a is not in spec.failureDomains",
            id="when its failure domain is no longer configured the Machine is outdated",
        ),
        pytest.param(
            {"rolloutAfter": "2026-01-02T00:00:00Z"},
            "RolloutAfter",
            "outdated: it was created before spec.rolloutAfter, which has passed",
            id="when spec.rolloutAfter has passed since its creation the Machine is outdated",
        ),
    ],
)
def test_up_to_date_says_why_a_machine_is_outdated(
    change: dict[str, Any], reason: str, words: str | None
) -> None:
    got = up_to_date_condition(local_spec(**change), created(local_spec()), datetime(2026, 6, 1, tzinfo=UTC))
    assert (got["type"], got["status"], got["reason"]) == (
        "UpToDate",
        "True" if words is None else "False",
        reason,
    )
    assert got.get("message") == words


# ------------------------------------------------------------------------------------------- OwnerRemediated


def lineage(retry_count: int) -> dict[str, str]:
    record = f'{{"machine": "cp-old", "timestamp": "2026-01-01T00:00:00Z", "retryCount": {retry_count}}}'
    return {REMEDIATION_FOR_ANNOTATION: record}


@pytest.mark.parametrize(
    ("decision", "annotations", "reason", "words"),
    [
        pytest.param(
            RemediationDecision(True, "Remediating", "Replacing unhealthy Machine cp-a"),
            {},
            REASON_MACHINE_DELETING,
            "Replacing unhealthy Machine cp-a; first remediation of its lineage (maxRetry 3)",
            id="the first remediation of a lineage deletes the Machine",
        ),
        pytest.param(
            RemediationDecision(True, "Remediating", "Replacing unhealthy Machine cp-a", retry_count=2),
            lineage(1),
            REASON_MACHINE_DELETING,
            "retry 2 of maxRetry 3 along the lineage of Machine cp-old",
            id="a retry deletes the Machine and counts along the lineage",
        ),
        pytest.param(
            RemediationDecision(False, "WaitingForRetryPeriod", "waits for retryPeriod", retry_count=1),
            lineage(0),
            REASON_REMEDIATION_DEFERRED,
            "WaitingForRetryPeriod: waits for retryPeriod; retry 1 of maxRetry 3",
            id="when waiting for retryPeriod it is deferred with its retry count",
        ),
        pytest.param(
            RemediationDecision(False, "WaitingForPreviousRemediation", "The previous remediation (cp-x)"),
            {},
            REASON_REMEDIATION_DEFERRED,
            "WaitingForPreviousRemediation: The previous remediation (cp-x)",
            id="when a previous remediation is under way it is deferred",
        ),
        pytest.param(
            RemediationDecision(False, "WaitingForDeletion", "Machine(s) cp-y being deleted"),
            {},
            REASON_REMEDIATION_DEFERRED,
            "WaitingForDeletion: Machine(s) cp-y being deleted",
            id="when Machines are being deleted it is deferred",
        ),
        pytest.param(
            RemediationDecision(False, "EtcdQuorumAtRisk", "too few healthy voters"),
            {},
            REASON_REMEDIATION_DEFERRED,
            "EtcdQuorumAtRisk: too few",
            id="when etcd quorum is at risk it is deferred",
        ),
        pytest.param(
            RemediationDecision(False, "MaxRetryReached", "find the cause", retry_count=4, needs_human=True),
            lineage(3),
            REASON_CANNOT_BE_REMEDIATED,
            "MaxRetryReached: find the cause; retry 4 of maxRetry 3",
            id="when maxRetry is used up the Machine cannot be remediated",
        ),
        pytest.param(
            RemediationDecision(
                False, "CannotRemediateLastMachine", "the only control-plane Machine", needs_human=True
            ),
            {},
            REASON_CANNOT_BE_REMEDIATED,
            "CannotRemediateLastMachine: the only",
            id="the last control-plane Machine cannot be remediated",
        ),
    ],
)
def test_owner_remediated_carries_the_decision_and_the_retry_count(
    decision: RemediationDecision, annotations: dict[str, str], reason: str, words: str
) -> None:
    s = local_spec(remediation={"maxRetry": 3})
    machine = created(s, annotations=annotations)
    got = owner_remediated_condition(s, machine, "cp-a", decision)
    assert got is not None
    assert (got["type"], got["status"], got["reason"]) == ("OwnerRemediated", "False", reason)
    assert words in got["message"]


def test_owner_remediated_of_the_others_waiting_when_paused_and_when_nothing_was_decided() -> None:
    s = local_spec()
    decision = RemediationDecision(True, "Remediating", "Replacing unhealthy Machine cp-a")
    other = owner_remediated_condition(s, created(s, "cp-b"), "cp-a", decision)
    assert other is not None and other["reason"] == REASON_REMEDIATION_DEFERRED
    assert other["message"] == "OneRemediationAtATime: marked Machine cp-a is remediated first"
    paused = owner_remediated_condition(local_spec(paused=True), created(s), None, None)
    assert paused is not None and paused["message"].startswith("Paused: ")
    assert owner_remediated_condition(s, created(s), None, None) is None


def test_retry_text_without_max_retry() -> None:
    assert retry_text(created(local_spec(), annotations=lineage(0)), 1, None) == (
        "retry 1 of no maxRetry along the lineage of Machine cp-old"
    )


def test_a_lineage_stopped_by_the_default_limit_cannot_be_remediated_and_says_that_limit() -> None:
    s = local_spec()
    decision = RemediationDecision(
        False, "ReplacementsFailing", "fix the template", retry_count=6, needs_human=True, retry_limit=5
    )
    got = owner_remediated_condition(s, created(s, annotations=lineage(5)), "cp-a", decision)
    assert got is not None and got["reason"] == REASON_CANNOT_BE_REMEDIATED, got
    assert got["message"] == (
        "ReplacementsFailing: fix the template; retry 6 of the default limit 5 along the lineage of "
        "Machine cp-old"
    )
    mine = local_spec(remediation={"maxRetry": 7})
    waiting = RemediationDecision(False, "WaitingForRetryPeriod", "waits", retry_count=6, retry_limit=7)
    said = owner_remediated_condition(mine, created(mine, annotations=lineage(5)), "cp-a", waiting)
    assert said is not None and "retry 6 of maxRetry 7" in said["message"], said


def marks(owner_reason: str = "WaitingForRemediation") -> dict[str, Any]:
    return {
        "conditions": [
            {"type": "HealthCheckSucceeded", "status": "False", "reason": "UnhealthyNode"},
            {"type": "OwnerRemediated", "status": "False", "reason": owner_reason},
        ]
    }


def test_the_controlplane_writes_up_to_date_on_machines_that_stay_and_owner_remediated_only_on_marked() -> (
    None
):
    s = local_spec()
    owned = [
        {**created(s, "cp-a"), "status": marks()},
        {**created(s, "cp-b"), "status": marks()},
        created(s, "cp-c"),
        created(s, "cp-d", deletionTimestamp="2026-01-01T00:00:00Z"),
    ]
    decision = RemediationDecision(False, "WaitingForProvisioning", "Machine(s) cp-c still provisioning")
    wanted = controlplane_wanted(s, owned, "cp-a", decision, T1)
    assert {name: sorted(w) for name, w in wanted.items()} == {
        "cp-a": ["OwnerRemediated", "UpToDate"],
        "cp-b": ["OwnerRemediated", "UpToDate"],
        "cp-c": ["UpToDate"],
    }
    assert of(wanted, "cp-a", "OwnerRemediated")["message"].startswith("WaitingForProvisioning: ")
    assert of(wanted, "cp-b", "OwnerRemediated")["message"].startswith("OneRemediationAtATime: ")
    assert controlplane_wanted(s, owned, "cp-a", decision, T1) == wanted  # settled: the same every pass
