"""The per-Machine conditions the ControlPlane and etcd-quorum-hook controllers write, case by case:
every reason of each, and the rule that a settled pass changes nothing (how they are merged and
compared is :mod:`tests.unit.controllers.test_conditions`')."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from api.controlplane import ControlPlaneSpec
from api.failuredomains import FAILURE_DOMAIN_LABEL
from api.machine import (
    ETCD_MEMBER_REASONS,
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
from controllers.etcd.client import Member
from controllers.etcd.membership import MemberState
from controllers.etcdquorum.machine_conditions import (
    hook_condition,
    inspection_failed,
    member_condition,
)
from controllers.etcdquorum.machine_conditions import wanted_conditions as etcd_wanted
from controllers.etcdquorum.report import Pass
from controllers.etcdquorum.rules import (
    HOOK_OWNER,
    WAIT_HEALTHY_VOTERS,
    WAIT_QUORUM_AFTER_REMOVAL,
    GuardedMachine,
    Wait,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)


def brief(c: Mapping[str, Any] | None) -> tuple[Any, ...] | None:
    return None if c is None else (c["type"], c["status"], c["reason"])


def of(wanted: Mapping[str, Wanted], name: str, type_: str) -> Mapping[str, Any]:
    """The wanted condition ``type_`` of Machine ``name`` (there must be one)."""
    found = wanted[name][type_]
    assert found is not None
    return found


# ----------------------------------------------------------------------------------------- EtcdMemberHealthy


def state(index: int, *, learner: bool = False, started: bool = True, healthy: bool = True) -> MemberState:
    member = Member(
        id=0x100 + index,
        name=f"m{index}" if started else "",
        peer_urls=(f"https://10.0.0.{index}:2380",),
        client_urls=(f"https://10.0.0.{index}:2379",) if started else (),
        is_learner=learner,
    )
    return MemberState(member, f"machine-{index}", healthy, None if healthy else "connection refused")


@pytest.mark.parametrize(
    ("members", "leader", "expected", "words"),
    [
        ([state(1)], 0x101, ("True", "Leader"), "etcd voter m1 (101) is healthy and leads the cluster"),
        ([state(1)], 0x102, ("True", "Voter"), "etcd voter m1 (101) is healthy"),
        ([state(1)], 0, ("True", "Voter"), "etcd voter m1 (101) is healthy"),
        ([state(1, learner=True)], 0x101, ("True", "Learner"), "etcd learner m1 (101) is healthy"),
        ([state(1, healthy=False)], 0, ("False", "VoterUnhealthy"), "does not answer: connection refused"),
        (
            [state(1, learner=True, started=False, healthy=False)],
            0,
            ("False", "LearnerUnhealthy"),
            "etcd learner 101 (not started, https://10.0.0.1:2380) has not started",
        ),
        ([state(1, learner=True, healthy=False)], 0, ("False", "LearnerUnhealthy"), "does not answer"),
        ([], 0x101, ("False", "MemberNotFound"), "no member of the etcd cluster belongs to this Machine"),
    ],
)
def test_etcd_member_healthy_says_found_role_health_and_leader(
    members: list[MemberState], leader: int, expected: tuple[str, str], words: str
) -> None:
    got = member_condition(members, leader)
    assert (got["type"], got["status"], got["reason"]) == ("EtcdMemberHealthy", *expected)
    assert words in got["message"]
    assert got["reason"] in ETCD_MEMBER_REASONS
    assert ("severity" in got) == (got["status"] == "False")


def test_a_machine_with_two_members_is_spoken_for_by_its_voter_and_names_the_other() -> None:
    got = member_condition([state(2, learner=True), state(1)], 0)
    assert got["reason"] == "Voter" and "other members of this Machine: m2 (102)" in got["message"]


def test_etcd_unreadable_is_unknown_never_a_guess() -> None:
    got = inspection_failed("no etcd endpoint")
    assert (got["status"], got["reason"], got["message"]) == (
        "Unknown",
        "InspectionFailed",
        "etcd cannot be read: no etcd endpoint",
    )


# ------------------------------------------------------------------------------------- EtcdQuorumHookHolding


def info(name: str = "machine-1", *, deleting: bool = False, hooked: bool = True) -> GuardedMachine:
    return GuardedMachine(
        name=name, deleting=deleting, running=True, hook_owner=HOOK_OWNER if hooked else None
    )


HELD = Wait(
    "machine-1",
    WAIT_HEALTHY_VOTERS,
    "removing member m1 (101) would leave 2 healthy voters, fewer than the 3 desired: waiting for a "
    "replacement to be promoted",
)


@pytest.mark.parametrize(
    ("machine", "members", "waits", "functional", "expected", "words"),
    [
        (info(), [state(1)], [], True, ("False", "Guarding"), "a deletion waits until etcd can lose"),
        (
            info(hooked=False),
            [],
            [],
            False,
            ("False", "HookNotPlaced"),
            "no control-plane Machine is Running",
        ),
        (info(deleting=True), [state(1)], [HELD], True, ("True", WAIT_HEALTHY_VOTERS), "2 healthy voters"),
        (info(deleting=True), None, [HELD], True, ("True", WAIT_HEALTHY_VOTERS), "fewer than the 3"),
        (info(deleting=True), [state(1)], [], True, ("True", "RemovingMember"), "which quorum now allows"),
        (info(deleting=True, hooked=False), [], [], True, ("False", "Released"), "the drain goes on"),
        (
            info(deleting=True, hooked=False),
            [state(1)],
            [],
            True,
            ("False", "HookRemovedByOthers"),
            "while member m1 (101) is still listed",
        ),
    ],
)
def test_the_hook_condition_says_held_and_why_or_released_or_not_needed(
    machine: GuardedMachine,
    members: list[MemberState] | None,
    waits: list[Wait],
    functional: bool,
    expected: tuple[str, str],
    words: str,
) -> None:
    got = hook_condition(machine, members, waits, api_functional=functional)
    assert got is not None
    assert (got["type"], got["status"], got["reason"]) == ("EtcdQuorumHookHolding", *expected)
    assert words in got["message"]


def test_the_hook_condition_joins_every_wait_of_the_machine_under_the_first_reason() -> None:
    second = Wait("machine-1", WAIT_QUORUM_AFTER_REMOVAL, "quorum too")
    got = hook_condition(info(deleting=True), [state(1)], [HELD, second], api_functional=True)
    assert (
        got is not None and got["reason"] == WAIT_HEALTHY_VOTERS and got["message"].endswith("; quorum too")
    )


def test_a_deleting_machine_without_hook_is_not_judged_while_etcd_is_unreadable() -> None:
    assert hook_condition(info(deleting=True, hooked=False), None, [], api_functional=True) is None


def etcd_pass(**fields: Any) -> Pass:
    infos = {
        "machine-1": info("machine-1"),
        "machine-2": info("machine-2", deleting=True),
        "machine-3": info("machine-3", deleting=True, hooked=False),
    }
    defaults: dict[str, Any] = {
        "cp": {"metadata": {"name": "cp", "namespace": "ns"}},
        "key": "ns/cp",
        "spec": cp_spec(),
        "desired": 3,
        "machines": {name: {"metadata": {"name": name}} for name in infos},
        "infos": infos,
        "identities": {},
        "members": [],
        "owners": {},
        "states": [state(1), state(2)],
        "alarms": [],
        "waits": [Wait("machine-2", WAIT_HEALTHY_VOTERS, "held"), Wait("machine-1", "LearnerNotInSync", "x")],
        "leader": 0x101,
    }
    defaults.update(fields)
    return Pass(**defaults)


def test_a_pass_gives_each_machine_its_member_and_its_hook_and_the_same_again_when_nothing_moved() -> None:
    wanted = etcd_wanted(etcd_pass())
    assert {
        name: (of(wanted, name, "EtcdMemberHealthy")["reason"], brief(w.get("EtcdQuorumHookHolding")))
        for name, w in wanted.items()
    } == {
        "machine-1": ("Leader", ("EtcdQuorumHookHolding", "False", "Guarding")),
        "machine-2": ("Voter", ("EtcdQuorumHookHolding", "True", WAIT_HEALTHY_VOTERS)),
        "machine-3": ("MemberNotFound", ("EtcdQuorumHookHolding", "False", "Released")),
    }
    assert etcd_wanted(etcd_pass()) == wanted  # settled: nothing that moves by itself


def test_a_pass_that_cannot_read_etcd_says_unknown_and_leaves_the_unjudgeable_hook_alone() -> None:
    wanted = etcd_wanted(etcd_pass(), unreadable="connection refused")
    assert {of(wanted, name, "EtcdMemberHealthy")["reason"] for name in wanted} == {"InspectionFailed"}
    assert "EtcdQuorumHookHolding" not in wanted["machine-3"]
    assert of(wanted, "machine-2", "EtcdQuorumHookHolding")["status"] == "True"


# -------------------------------------------------------------------------------------------------- UpToDate


def cp_spec(**extra: Any) -> ControlPlaneSpec:
    raw: dict[str, Any] = {
        "replicas": 3,
        "template": {"spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "size": 1}}}},
        "failureDomains": [{"name": "a"}, {"name": "b"}],
    }
    raw.update(extra)
    return ControlPlaneSpec.model_validate(raw)


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
        ({}, "UpToDate", None),
        (
            {
                "template": {
                    "spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "size": 2}}}
                }
            },
            "TemplateChanged",
            "outdated: its spec differs from the template",
        ),
        (
            {"failureDomains": [{"name": "b"}, {"name": "c"}]},
            "FailureDomainNotConfigured",
            "outdated: failure domain a is not in spec.failureDomains",
        ),
        (
            {"rolloutAfter": "2026-01-02T00:00:00Z"},
            "RolloutAfter",
            "outdated: it was created before spec.rolloutAfter, which has passed",
        ),
    ],
)
def test_up_to_date_says_why_a_machine_is_outdated(
    change: dict[str, Any], reason: str, words: str | None
) -> None:
    got = up_to_date_condition(cp_spec(**change), created(cp_spec()), datetime(2026, 6, 1, tzinfo=UTC))
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
        (
            RemediationDecision(True, "Remediating", "Replacing unhealthy Machine cp-a"),
            {},
            REASON_MACHINE_DELETING,
            "Replacing unhealthy Machine cp-a; first remediation of its lineage (maxRetry 3)",
        ),
        (
            RemediationDecision(True, "Remediating", "Replacing unhealthy Machine cp-a", retry_count=2),
            lineage(1),
            REASON_MACHINE_DELETING,
            "retry 2 of maxRetry 3 along the lineage of Machine cp-old",
        ),
        (
            RemediationDecision(False, "WaitingForRetryPeriod", "waits for retryPeriod", retry_count=1),
            lineage(0),
            REASON_REMEDIATION_DEFERRED,
            "WaitingForRetryPeriod: waits for retryPeriod; retry 1 of maxRetry 3",
        ),
        (
            RemediationDecision(False, "WaitingForPreviousRemediation", "The previous remediation (cp-x)"),
            {},
            REASON_REMEDIATION_DEFERRED,
            "WaitingForPreviousRemediation: The previous remediation (cp-x)",
        ),
        (
            RemediationDecision(False, "WaitingForDeletion", "Machine(s) cp-y being deleted"),
            {},
            REASON_REMEDIATION_DEFERRED,
            "WaitingForDeletion: Machine(s) cp-y being deleted",
        ),
        (
            RemediationDecision(False, "EtcdQuorumAtRisk", "too few healthy voters"),
            {},
            REASON_REMEDIATION_DEFERRED,
            "EtcdQuorumAtRisk: too few",
        ),
        (
            RemediationDecision(False, "MaxRetryReached", "find the cause", retry_count=4, needs_human=True),
            lineage(3),
            REASON_CANNOT_BE_REMEDIATED,
            "MaxRetryReached: find the cause; retry 4 of maxRetry 3",
        ),
        (
            RemediationDecision(
                False, "CannotRemediateLastMachine", "the only control-plane Machine", needs_human=True
            ),
            {},
            REASON_CANNOT_BE_REMEDIATED,
            "CannotRemediateLastMachine: the only",
        ),
    ],
)
def test_owner_remediated_carries_the_decision_and_the_retry_count(
    decision: RemediationDecision, annotations: dict[str, str], reason: str, words: str
) -> None:
    s = cp_spec(remediation={"maxRetry": 3})
    machine = created(s, annotations=annotations)
    got = owner_remediated_condition(s, machine, "cp-a", decision)
    assert got is not None
    assert (got["type"], got["status"], got["reason"]) == ("OwnerRemediated", "False", reason)
    assert words in got["message"]


def test_owner_remediated_of_the_others_waiting_when_paused_and_when_nothing_was_decided() -> None:
    s = cp_spec()
    decision = RemediationDecision(True, "Remediating", "Replacing unhealthy Machine cp-a")
    other = owner_remediated_condition(s, created(s, "cp-b"), "cp-a", decision)
    assert other is not None and other["reason"] == REASON_REMEDIATION_DEFERRED
    assert other["message"] == "OneRemediationAtATime: marked Machine cp-a is remediated first"
    paused = owner_remediated_condition(cp_spec(paused=True), created(s), None, None)
    assert paused is not None and paused["message"].startswith("Paused: ")
    assert owner_remediated_condition(s, created(s), None, None) is None


def test_retry_text_without_max_retry() -> None:
    assert retry_text(created(cp_spec(), annotations=lineage(0)), 1, None) == (
        "retry 1 of no maxRetry along the lineage of Machine cp-old"
    )


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
    s = cp_spec()
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
