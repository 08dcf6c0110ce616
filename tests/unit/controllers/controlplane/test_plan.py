"""The ControlPlane's plan: every decision of the rule tables has a ``Progressing`` reason and a
message naming the Machine and the fact, ``status.etcd`` says the quorum without churning, and
an Event announces each new decision once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api.controlplane_reasons import (
    CHECK_COMPONENTS_HEALTHY,
    CHECK_ETCD_MEMBER_LISTS_AGREE,
    CHECK_ETCD_MEMBERS_MATCH,
    CHECK_ETCD_NO_ALARMS,
    CHECK_ETCD_NO_PENDING_LEARNER,
    CHECK_ETCD_REACHABLE,
    CHECK_ETCD_VOTERS_REACHABLE,
    CHECK_MACHINES_READY,
)
from cli.explain.document import BLOCKING_REASONS as EXPLAIN_BLOCKING_REASONS
from cli.explain.document import _etcd_entry
from controllers.controlplane.etcdview import EtcdView
from controllers.controlplane.machines import EtcdFacts, MachineInfo
from controllers.controlplane.plan import (
    BLOCKED_BY_CHECK,
    BLOCKING_REASONS,
    decision_event,
)
from controllers.controlplane.preflight import (
    PREFLIGHT_CHECKS,
    preflight,
)
from controllers.controlplane.remediation import RemediationDecision
from controllers.controlplane.scale import next_step
from controllers.controlplane.status import StatusInputs, compute_status, status_to_write, status_unchanged
from controllers.controlplane.step import Step
from tests.support.machine_rows import cp_machine

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def m(name: str, **fields: Any) -> MachineInfo:
    """A row of :func:`cp_machine` in the domain its last letter names."""
    return cp_machine(name, **{"failure_domain": f"zone-{name[-1]}", **fields})


ABC = [m("demo-a"), m("demo-b"), m("demo-c")]
DOMAINS = ["zone-a", "zone-b", "zone-c"]
NEW = {
    "created": NOW - timedelta(minutes=1),
    "phase": "Provisioning",
    "node_ready": False,
    "etcd_voter": False,
    "etcd_healthy": False,
}


def plan(machines: list[MachineInfo], **kw: Any) -> Step:
    args: dict[str, Any] = {"replicas": 3, "strategy": "RollingUpdate", "max_surge": 1, "domains": DOMAINS}
    args.update(kw)
    return next_step(machines=machines, **args)


def progressing(machines: list[MachineInfo], step: Step | None, **kw: Any) -> dict[str, Any]:
    status = compute_status(
        StatusInputs(replicas=3, selector="", generation=1, machines=machines, step=step, **kw)
    )
    return next(c for c in status["conditions"] if c["type"] == "Progressing")


# ------------------------------------------------------------------------------------------ every step


@pytest.mark.parametrize(
    ("machines", "kw", "reason", "message"),
    [
        (
            ABC[:2],
            {},
            "ScalingUp",
            "Scaling up from 2 to 3 replica(s): creating a Machine in zone-c",
        ),
        (
            [*ABC, m("demo-d", failure_domain="zone-a")],
            {},
            "ScalingDown",
            "Scaling down from 4 to 3 replica(s): deleting Machine demo-a in zone-a",
        ),
        (
            [m("demo-a"), m("demo-b", outdated=True), m("demo-c")],
            {},
            "ReplacingOutdated",
            "Replacing outdated Machine demo-b in zone-b: creating its replacement",
        ),
        (
            [m("demo-a"), m("demo-b", outdated=True), m("demo-c")],
            {"max_surge": 0},
            "ReplacingOutdated",
            "Replacing outdated Machine demo-b in zone-b: deleting it first (maxSurge 0)",
        ),
        (
            # its own domain is gone: the replacement goes to the emptiest one
            [m("demo-a"), m("demo-x", outdated=True), m("demo-c")],
            {},
            "ReplacingOutdated",
            "Replacing outdated Machine demo-x in zone-x: creating its replacement in zone-b",
        ),
        (
            # maxSurge 1, the replacement is in: the outdated Machine goes
            [m("demo-a"), m("demo-b", outdated=True), m("demo-c"), m("demo-n", failure_domain="zone-b")],
            {},
            "ReplacingOutdated",
            "Replacing outdated Machine demo-b in zone-b: deleting it (4 Machines for 3 replica(s): "
            "its replacement is in)",
        ),
        (
            # maxSurge 0, the outdated Machine is being deleted: its replacement follows
            [m("demo-a"), m("demo-b", outdated=True, deleting=True), m("demo-c")],
            {"max_surge": 0},
            "ReplacingOutdated",
            "Replacing outdated Machine demo-b in zone-b: creating its replacement",
        ),
        (
            [m("demo-a"), m("demo-b", marked_unhealthy=True, deleting=True), m("demo-c")],
            {},
            "Remediating",
            "Replacing unhealthy Machine demo-b in zone-b: creating its replacement",
        ),
        (
            [m("demo-a"), m("demo-b", deleting=True), m("demo-c")],
            {},
            "ReplacingDeleted",
            "Replacing deleted Machine demo-b in zone-b: creating its replacement",
        ),
        (
            [m("demo-a"), m("demo-b", outdated=True, deleting=True), m("demo-c"), m("demo-n", **NEW)],
            {},
            "RemovingMember",
            "Machine(s) demo-b being deleted: waiting for the removal of its etcd member (the "
            "etcd-quorum hook holds the deletion until it is safe)",
        ),
        (
            [m("demo-a"), m("demo-b", deleting=True, etcd_voter=False), m("demo-c"), m("demo-n")],
            {},
            "WaitingForDeletion",
            "Waiting for Machine(s) demo-b to be deleted",
        ),
        (
            # a learner catching up: the old member stays until it votes
            [
                m("demo-a"),
                m("demo-b", outdated=True, deleting=True),
                m("demo-c"),
                m("demo-n", etcd_voter=False, etcd_learner=True),
            ],
            {},
            "WaitingForLearner",
            "Machine(s) demo-n: etcd learner not promoted yet; the member of Machine(s) demo-b is "
            "removed once it votes",
        ),
        (
            # the old member already went (it was dead, or a maxSurge-0 deletion freed its host)
            [
                m("demo-a"),
                m("demo-b", outdated=True, deleting=True, etcd_voter=False, etcd_healthy=False),
                m("demo-c"),
                m("demo-n", etcd_voter=False, etcd_learner=True),
            ],
            {},
            "WaitingForLearner",
            "Machine(s) demo-n: etcd learner not promoted yet; the member of Machine(s) demo-b is "
            "already removed",
        ),
        (
            [m("demo-a"), m("demo-b", deleting=True), m("demo-c", deleting=True), m("demo-d")],
            {},
            "WaitingForDeletion",
            "Waiting for Machine(s) demo-b, demo-c to be deleted before creating more (at most 4 Machines)",
        ),
        (
            [m("demo-a"), m("demo-x", failure_domain="zone-a"), m("demo-b")],
            {},
            "Rebalancing",
            "Failure domains are uneven: creating a Machine in zone-c",
        ),
        (
            [m("demo-a"), m("demo-b", outdated=True), m("demo-c")],
            {"strategy": "OnDelete"},
            "WaitingForManualDeletion",
            "1 outdated Machine(s) (demo-b); strategy OnDelete replaces a Machine only once you delete it",
        ),
        (
            [m("demo-a"), m("demo-b", outdated=True), m("demo-c")],
            {"misconfigured": ["stray-node"]},
            "HeldByConfiguration",
            "Held until the configuration problem is fixed (see Degraded): stray-node; then: "
            "Replacing outdated Machine demo-b in zone-b: creating its replacement",
        ),
        (ABC, {}, "UpToDate", "All 3 Machine(s) are up to date"),
    ],
    ids=[
        "scaling up names the domain of the new Machine",
        "scaling down names the Machine and its domain",
        "a maxSurge 1 rollout creates the replacement first",
        "a maxSurge 0 rollout deletes the outdated Machine first",
        "a replacement whose own domain is gone goes to the emptiest one",
        "under maxSurge 1 the outdated Machine goes once its replacement is in",
        "under maxSurge 0 the replacement follows the deletion",
        "an unhealthy Machine being deleted is replaced as a remediation",
        "a deleted Machine is replaced in its domain",
        "a deleting voter waits for the removal of its etcd member",
        "a deleting Machine without a member is waited for",
        "a learner catching up holds the old member until it votes",
        "a learner catching up after the old member already went says so",
        "two deletions at the Machine limit are waited for before creating more",
        "uneven failure domains are rebalanced",
        "under OnDelete outdated Machines wait for a manual deletion",
        "a configuration problem holds the step and says what follows",
        "three current Machines are up to date",
    ],
)
def test_every_step_names_its_machine_and_domain(
    machines: list[MachineInfo], kw: dict[str, Any], reason: str, message: str
) -> None:
    condition = progressing(machines, plan(machines, **kw))
    assert (condition["reason"], condition["message"]) == (reason, message)
    assert condition["status"] == ("False" if reason in ("UpToDate", "WaitingForManualDeletion") else "True")


# ------------------------------------------------------------------------------------------ preflight


REPLACE_B = plan([m("demo-a"), m("demo-b", outdated=True), m("demo-c")])
THEN = "; then: Replacing outdated Machine demo-b in zone-b: creating its replacement"


@pytest.mark.parametrize(
    ("machines", "etcd", "reason", "fact"),
    [
        (
            [m("demo-a"), m("demo-b", outdated=True), m("demo-c", node_ready=False)],
            EtcdFacts(member_names=("demo-a", "demo-b", "demo-c")),
            "MachineNotReady",
            "MachineNodesReady: Machine(s) demo-c not Running with a Ready Node",
        ),
        (
            [m("demo-a"), m("demo-b", outdated=True), m("demo-c", phase="Failed", node_ready=False)],
            EtcdFacts(member_names=("demo-a", "demo-b", "demo-c")),
            "MachineNotReady",
            "MachineNodesReady: Machine(s) demo-c not Running with a Ready Node",
        ),
        (
            [m("demo-a"), m("demo-b", outdated=True), m("demo-c"), m("demo-n", **NEW)],
            EtcdFacts(member_names=("demo-a", "demo-b", "demo-c")),
            "WaitingForMachine",
            "MachineNodesReady: Machine(s) demo-n not Running with a Ready Node",
        ),
        (
            [m("demo-a"), m("demo-b", outdated=True), m("demo-c")],
            EtcdFacts(reachable=False, error="connection refused"),
            "EtcdUnreachable",
            "EtcdReachable: cannot read the etcd member list: connection refused",
        ),
        (
            [m("demo-a"), m("demo-b", outdated=True), m("demo-c")],
            EtcdFacts(member_names=("demo-a", "demo-b", "demo-c", "stray")),
            "EtcdMembersMismatch",
            "EtcdMembersMatchMachines: member(s) without a Machine: stray",
        ),
        (
            [m("demo-a"), m("demo-b", outdated=True), m("demo-c")],
            EtcdFacts(member_names=("demo-a", "demo-b", "demo-c"), disagreeing=("https://demo-c:2379",)),
            "EtcdMemberListsDisagree",
            "EtcdMemberListsAgree: member list differs at https://demo-c:2379",
        ),
        (
            [m("demo-a"), m("demo-b", outdated=True), m("demo-c")],
            EtcdFacts(member_names=("demo-a", "demo-b", "demo-c"), alarms=("NOSPACE@demo-a",)),
            "EtcdAlarm",
            "EtcdNoAlarms: active alarm(s): NOSPACE@demo-a",
        ),
        (
            [m("demo-a"), m("demo-b", outdated=True), m("demo-q", etcd_healthy=False)],
            EtcdFacts(
                member_names=("demo-a", "demo-b", "demo-q"),
                unhealthy_voters=(("demo-q", "deadline exceeded"),),
            ),
            "EtcdMemberUnhealthy",
            "EtcdVotersHealthy: voter(s) unhealthy: demo-q: deadline exceeded",
        ),
        (
            # a learner catching up, too brief to see end to end
            [
                m("demo-a"),
                m("demo-b", outdated=True),
                m("demo-c"),
                m("demo-n", etcd_voter=False, etcd_learner=True),
            ],
            EtcdFacts(member_names=("demo-a", "demo-b", "demo-c", "demo-n"), learners=("demo-n",)),
            "WaitingForLearner",
            "EtcdNoPendingLearner: learner(s) demo-n not promoted yet",
        ),
    ],
    ids=[
        "a NotReady Node is a Machine not ready",
        "a Failed Machine is a Machine not ready",
        "a new Machine still provisioning is waited for",
        "etcd that cannot be asked is unreachable",
        "a member without a Machine is a mismatch",
        "member lists that differ are named by endpoint",
        "an active alarm is named",
        "an unhealthy voter is named with its error",
        "a learner catching up is waited for",
    ],
)
def test_every_preflight_failure_names_the_machine_and_the_fact(
    machines: list[MachineInfo], etcd: EtcdFacts, reason: str, fact: str
) -> None:
    step = plan(machines)
    hosting = sorted(x.name for x in machines if x.has_etcd_member or (x.running and not x.deleting))
    failures = preflight(machines, etcd, hosting_etcd=hosting, desired=3, step=step)
    assert failures, step
    condition = progressing(machines, step, preflight_failures=failures)
    assert condition["reason"] == reason and condition["status"] == "True"
    assert condition["message"] == fact + f"; then: {step.message}"
    assert (reason in BLOCKING_REASONS) == (reason not in ("WaitingForMachine", "WaitingForLearner"))


def test_the_first_blocking_check_gives_the_reason() -> None:
    machines = [m("demo-a"), m("demo-b", outdated=True), m("demo-q", node_ready=False, etcd_healthy=False)]
    etcd = EtcdFacts(
        member_names=("demo-a", "demo-b", "demo-q"), unhealthy_voters=(("demo-q", "connection refused"),)
    )
    failures = preflight(
        machines, etcd, hosting_etcd=["demo-a", "demo-b", "demo-q"], desired=3, step=REPLACE_B
    )
    condition = progressing(machines, REPLACE_B, preflight_failures=failures)
    assert condition["reason"] == "EtcdMemberUnhealthy"
    assert condition["message"] == (
        "MachineNodesReady: Machine(s) demo-q not Running with a Ready Node; "
        "EtcdVotersHealthy: voter(s) unhealthy: demo-q: connection refused" + THEN
    )


def test_every_check_has_a_reason_and_the_metric_labels_stay() -> None:
    assert set(BLOCKED_BY_CHECK) == set(PREFLIGHT_CHECKS)
    assert PREFLIGHT_CHECKS == (
        CHECK_MACHINES_READY,
        CHECK_ETCD_REACHABLE,
        CHECK_ETCD_MEMBERS_MATCH,
        CHECK_ETCD_MEMBER_LISTS_AGREE,
        CHECK_ETCD_NO_ALARMS,
        CHECK_ETCD_VOTERS_REACHABLE,
        CHECK_ETCD_NO_PENDING_LEARNER,
        CHECK_COMPONENTS_HEALTHY,
    )
    assert [*PREFLIGHT_CHECKS] == [
        "MachineNodesReady",
        "EtcdReachable",
        "EtcdMembersMatchMachines",
        "EtcdMemberListsAgree",
        "EtcdNoAlarms",
        "EtcdVotersHealthy",
        "EtcdNoPendingLearner",
        "ControlPlaneComponentsHealthy",
    ]
    assert BLOCKING_REASONS <= EXPLAIN_BLOCKING_REASONS


# ------------------------------------------------------------------------------------------ other states


def test_remediation_started_names_the_machine() -> None:
    decision = RemediationDecision(True, "Remediating", "Replacing unhealthy Machine demo-q")
    condition = progressing(ABC, None, remediation=decision, remediating=True)
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True",
        "Remediating",
        "Replacing unhealthy Machine demo-q",
    )


def test_paused_names_the_step_it_holds() -> None:
    condition = progressing(ABC[:2], plan(ABC[:2]), paused=True)
    assert (condition["status"], condition["reason"]) == ("False", "Paused")
    assert condition["message"] == (
        "spec.paused is true: no Machine is created or deleted; then: Scaling up from 2 to 3 "
        "replica(s): creating a Machine in zone-c"
    )
    assert progressing(ABC, plan(ABC), paused=True)["message"] == (
        "spec.paused is true: no Machine is created or deleted"
    )


def test_inactive_says_what_it_would_do() -> None:
    machines = [m("demo-a"), m("demo-b", outdated=True), m("demo-c")]
    condition = progressing(machines, plan(machines), inactive=True)
    assert (condition["status"], condition["reason"]) == ("False", "Inactive")
    assert (
        "if Active, it would create a Machine (ReplacingOutdated): Replacing outdated Machine demo-b "
        "in zone-b: creating its replacement"
    ) in condition["message"]


# ------------------------------------------------------------------------------------------ status.etcd


def etcd_view(
    healthy: set[str], *, learners: tuple[str, ...] = (), leader: str | None = "demo-a"
) -> EtcdView:
    names = ("demo-a", "demo-b", "demo-c", *learners)
    return EtcdView(
        EtcdFacts(member_names=names, learners=learners),
        voters={"demo-a", "demo-b", "demo-c"},
        healthy=healthy,
        with_member=set(names),
        leader=leader,
    )


@pytest.mark.parametrize(
    ("view", "expected"),
    [
        (
            etcd_view({"demo-a", "demo-b", "demo-c"}),
            {
                "voters": 3,
                "learners": 0,
                "healthyVoters": 3,
                "quorum": 2,
                "faultTolerance": 1,
                "leaderMachine": "demo-a",
            },
        ),
        (
            etcd_view({"demo-a", "demo-b"}, learners=("demo-n",), leader=None),
            {"voters": 3, "learners": 1, "healthyVoters": 2, "quorum": 2, "faultTolerance": 0},
        ),
        (
            etcd_view({"demo-a"}),
            {
                "voters": 3,
                "learners": 0,
                "healthyVoters": 1,
                "quorum": 2,
                "faultTolerance": 0,
                "leaderMachine": "demo-a",
            },
        ),
        (EtcdView(EtcdFacts(reachable=False, error="refused")), None),
        (None, None),
    ],
    ids=[
        "three healthy voters tolerate one fault and name the leader",
        "a learner and a dead voter leave no fault tolerance and no leader",
        "one healthy voter of three leaves no fault tolerance",
        "etcd that cannot be read leaves status.etcd out",
        "without an etcd view status.etcd is left out",
    ],
)
def test_status_etcd(view: EtcdView | None, expected: dict[str, Any] | None) -> None:
    status = compute_status(StatusInputs(replicas=3, selector="", generation=1, machines=ABC, etcd=view))
    assert status["etcd"] == expected
    if expected is not None:
        entry = _etcd_entry(expected)  # what cpo explain reads of it
        assert entry["known"] and entry["leaderMachine"] == expected.get("leaderMachine")
        assert {k: entry[k] for k in ("voters", "learners", "healthyVoters", "quorum", "faultTolerance")} == {
            k: expected[k] for k in ("voters", "learners", "healthyVoters", "quorum", "faultTolerance")
        }


def test_a_settled_control_plane_writes_nothing_twice() -> None:
    """Two passes over the same facts: the second status equals what the first stored."""

    def status_at(at: datetime) -> dict[str, Any]:
        inputs = StatusInputs(
            replicas=3,
            selector="x",
            generation=1,
            machines=ABC,
            step=plan(ABC),
            etcd=etcd_view(set(ABC_NAMES)),
            at=at,
        )
        return compute_status(inputs)

    stored = status_to_write({}, status_at(NOW), NOW)
    stored = {k: v for k, v in stored.items() if v is not None}
    later = status_to_write(stored, status_at(NOW + timedelta(minutes=10)), NOW + timedelta(minutes=10))
    assert status_unchanged(stored, later)
    dropped = status_at(NOW)
    dropped["etcd"] = None  # etcd could not be read: the field goes
    dropped["conditions"] = stored["conditions"]
    assert not status_unchanged(stored, dropped)


ABC_NAMES = ("demo-a", "demo-b", "demo-c")


# ------------------------------------------------------------------------------------------ events


def cond(reason: str, message: str) -> dict[str, Any]:
    return {"type": "Progressing", "status": "True", "reason": reason, "message": message}


@pytest.mark.parametrize(
    ("previous", "current", "expected"),
    [
        (None, cond("ScalingUp", "up"), ("Normal", "ScalingUp", "up")),
        (cond("ScalingUp", "up"), cond("ScalingUp", "up"), None),
        (cond("ScalingUp", "up"), cond("ScalingUp", "up in zone-b"), ("Normal", "ScalingUp", "up in zone-b")),
        (
            cond("ReplacingOutdated", "x"),
            cond("EtcdMemberUnhealthy", "EtcdVotersHealthy: demo-q"),
            ("Warning", "EtcdMemberUnhealthy", "EtcdVotersHealthy: demo-q"),
        ),
        (cond("WaitingForLearner", "l"), cond("UpToDate", "done"), ("Normal", "UpToDate", "done")),
        (None, cond("Inactive", "would"), None),
        (None, cond("Paused", "p"), ("Warning", "Paused", "p")),
    ],
    ids=[
        "the first decision is announced",
        "the same decision again is not",
        "a new message is announced again",
        "a blocking reason is a warning",
        "reaching up to date is announced",
        "an inactive ControlPlane announces nothing",
        "a pause is a warning",
    ],
)
def test_one_event_per_decision(
    previous: dict[str, Any] | None, current: dict[str, Any], expected: tuple[str, str, str] | None
) -> None:
    assert decision_event(previous, current) == expected
