"""The ControlPlane's status tells the truth (controllers/controlplane/status.py): the counts and
phase, Available needs etcd quorum and a serving Machine, Degraded counts unready Machines after a
grace period, and a status is written only when it changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest

from api.controlplane_reasons import (
    CHECK_ETCD_NO_ALARMS,
)
from controllers.common import format_time
from controllers.controlplane.etcdview import EtcdView
from controllers.controlplane.machines import (
    EtcdFacts,
    MachineInfo,
)
from controllers.controlplane.preflight import PreflightFailure
from controllers.controlplane.remediation import RemediationDecision
from controllers.controlplane.scale import next_step
from controllers.controlplane.status import (
    NOT_READY_GRACE,
    StatusInputs,
    compute_status,
    seconds_until_degraded,
    status_to_write,
    status_unchanged,
    unready_beyond_grace,
)
from controllers.controlplane.step import Step
from tests.support.machine_rows import NOW, cp_machine


def m(name: str, **fields: Any) -> MachineInfo:
    """A row of :func:`cp_machine` in the failure domain its name's last letter names."""
    return cp_machine(name, **{"failure_domain": name[-1], **fields})


def unready(name: str, since: timedelta, **fields: Any) -> MachineInfo:
    """A Running Machine whose Node has been NotReady for ``since``."""
    return m(name, node_ready=False, not_ready_since=NOW - since, **fields)


def view(voters: int, healthy: list[str], *, learners: int = 0, reachable: bool = True) -> EtcdView:
    names = tuple(f"m{i}" for i in "abcdefg"[:voters]) + tuple(f"l{i}" for i in range(learners))
    if not reachable:
        return EtcdView(EtcdFacts(reachable=False, error="connection refused"))
    return EtcdView(
        EtcdFacts(member_names=names, learners=names[voters:]),
        voters=set(names[:voters]),
        healthy=set(healthy),
        with_member=set(names),
    )


def condition(machines: list[MachineInfo], type_: str, **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"replicas": 3, "selector": "s", "generation": 1, "machines": machines, "at": NOW}
    args.update(kw)
    status = compute_status(StatusInputs(**args))
    return next(c for c in status["conditions"] if c["type"] == type_)


ABC = [m("ma"), m("mb"), m("mc")]


T0 = datetime(2026, 1, 1, tzinfo=UTC)


in_a = partial(cp_machine, failure_domain="a")
"""A row of :func:`cp_machine` in failure domain a."""


def abc(**fields: Any) -> list[MachineInfo]:
    return [in_a(f"in_a{d}", failure_domain=d, **fields) for d in "abc"]


def step(machines: list[MachineInfo], replicas: int = 3, **kw: Any) -> Step:
    args: dict[str, Any] = {"strategy": "RollingUpdate", "max_surge": 1, "domains": ["a", "b", "c"]}
    args.update(kw)
    return next_step(replicas=replicas, machines=machines, **args)


def status_of(machines: list[MachineInfo], **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"replicas": 3, "selector": "role=master", "generation": 4, "machines": machines}
    args.update(kw)
    return compute_status(StatusInputs(**args))


def status_condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == type_)


def test_status_counts_and_running_phase() -> None:
    status = status_of(abc())
    assert {k: status[k] for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")} == {
        "replicas": 3,
        "updatedReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
    }
    assert status["unavailableReplicas"] == 0
    assert (status["phase"], status["observedGeneration"], status["selector"]) == (
        "Running",
        4,
        "role=master",
    )
    assert status_condition(status, "Available")["status"] == "True"
    assert status_condition(status, "Degraded")["status"] == "False"


# Round two of "the ControlPlane does what its user means", case 4: updatedReplicas counts a
# Machine only when it is up to date and ready (the ControlPlaneMachineSet's count), so
# UPDATED == DESIRED means the rollout is done.
@pytest.mark.parametrize(
    ("machines", "updated", "ready"),
    [
        (abc(), 3, 3),
        ([*abc()[:2], in_a("new-c", failure_domain="c", node_ready=False)], 2, 2),
        ([*abc()[:2], in_a("new-c", failure_domain="c", phase="Provisioning", node_ready=False)], 2, 2),
        ([*abc()[:2], in_a("new-c", failure_domain="c", has_node=False, node_ready=False)], 2, 2),
        ([*abc()[:2], in_a("old-c", failure_domain="c", outdated=True)], 2, 3),
        (
            [
                *abc()[:2],
                in_a("old-c", failure_domain="c", outdated=True),
                in_a("new-c", failure_domain="c", node_ready=False),
            ],
            2,
            3,
        ),
        ([*abc(), in_a("old-c", failure_domain="c", deleting=True)], 3, 4),
        ([*abc()[:2], in_a("gone-c", failure_domain="c", deleting=True)], 2, 3),
    ],
    ids=[
        "case4-all-ready-and-up-to-date",
        "case4-replacement-node-not-ready",
        "case4-replacement-not-running",
        "case4-replacement-without-node",
        "case4-outdated-ready",
        "case4-outdated-beside-unready-replacement",
        "case4-ready-replacement-old-one-deleting",
        "case4-deleting-never-counts",
    ],
)
def test_case4_updated_replicas_counts_up_to_date_machines_only_once_ready(
    machines: list[MachineInfo], updated: int, ready: int
) -> None:
    status = status_of(machines)
    assert (status["updatedReplicas"], status["readyReplicas"]) == (updated, ready)
    assert status["updatedReplicas"] == sum(m.updated for m in machines)


def test_case4_updated_equals_desired_only_when_the_rollout_is_done() -> None:
    """The rollout's last replacement exists (the old Machine is gone) but its Node is not Ready:
    UPDATED stays below DESIRED; once Ready, it equals it."""
    waiting = [*abc()[:2], in_a("new-c", failure_domain="c", node_ready=False)]
    assert status_of(waiting)["updatedReplicas"] == 2 < 3
    assert status_of([*abc()[:2], in_a("new-c", failure_domain="c")])["updatedReplicas"] == 3


def test_status_availability_needs_a_healthy_voter_and_never_goes_negative() -> None:
    machines = [*abc()[:2], in_a("mc", failure_domain="c", etcd_voter=False)]
    status = status_of(machines)
    assert status["availableReplicas"] == 2 and status["readyReplicas"] == 3
    assert status_condition(status, "Available")["message"].startswith("Missing 1 available replica(s); ")
    assert status_of([*abc(), in_a("extra")], replicas=1)["unavailableReplicas"] == 0


@pytest.mark.parametrize(
    ("machines", "kw", "phase"),
    [
        ([], {}, "Pending"),
        ([in_a("x", phase="Provisioning", node_ready=False)], {}, "Provisioning"),
        ([in_a("x", outdated=True), *abc()[1:]], {}, "Updating"),
        (abc()[:2], {}, "Scaling"),
        (abc(), {"deleting": True}, "Deleting"),
        (abc(), {"remediating": True}, "Remediating"),
        (abc(), {"owned_by_others": ["theirs"]}, "Degraded"),
        ([*abc()[:2], in_a("f", phase="Failed", node_ready=False)], {}, "Degraded"),
    ],
    ids=[
        "no Machine is Pending",
        "a provisioning Machine is Provisioning",
        "an outdated Machine is Updating",
        "too few Machines is Scaling",
        "a deleting ControlPlane is Deleting",
        "a remediation is Remediating",
        "Machines owned by others are Degraded",
        "a Failed Machine is Degraded",
    ],
)
def test_status_phase(machines: list[MachineInfo], kw: dict[str, Any], phase: str) -> None:
    assert status_of(machines, **kw)["phase"] == phase


WAITING = RemediationDecision(False, "WaitingForRetryPeriod", "Remediation of f waits for 30s")
REPLACING = RemediationDecision(True, "Remediating", "Replacing unhealthy Machine f")
FAILED_CASES = {
    # case: (the Failed Machine's fields, the StatusInputs fields, the message says, never says)
    "a Failed Machine no health check marked is left to a human's delete": (
        {},
        {},
        ["f Failed", "fix the cause and delete them"],
        ["replaces them itself"],
    ),
    "a marked Failed Machine is replaced by the ControlPlane, which says what it waits for": (
        {"marked_unhealthy": True},
        {"remediation": WAITING},
        [
            "f Failed",
            "the ControlPlane replaces them itself",
            "WaitingForRetryPeriod: Remediation of f waits",
        ],
        ["delete them"],
    ),
    "autorepair on: a Failed Machine not marked yet is the ControlPlane's to replace": (
        {},
        {"autorepair": True},
        ["f Failed", "the ControlPlane replaces them itself"],
        ["delete them"],
    ),
    "a marked Failed Machine being replaced now names no wait": (
        {"marked_unhealthy": True},
        {"remediation": REPLACING},
        ["the ControlPlane replaces them itself; if the replacements fail too"],
        ["delete them", "Remediating:"],
    ),
}


@pytest.mark.parametrize(
    ("machine_fields", "inputs", "says", "never"), FAILED_CASES.values(), ids=FAILED_CASES.keys()
)
def test_a_failed_machine_s_message_says_who_replaces_it(
    machine_fields: dict[str, Any], inputs: dict[str, Any], says: list[str], never: list[str]
) -> None:
    machines = [*abc()[:2], in_a("f", phase="Failed", node_ready=False, **machine_fields)]
    status = status_of(machines, **inputs)
    message = status["failureMessage"]
    assert status["failureReason"] == "MachineFailed", status
    assert status_condition(status, "Degraded")["message"].startswith(message)
    assert all(text in message for text in says), message
    assert not any(text in message for text in never), message


def test_status_messages_say_what_is_going_on() -> None:
    outdated = [in_a("ma", outdated=True), in_a("mb", outdated=True, failure_domain="b"), in_a("mc")]
    status = status_of(outdated, step=step(outdated))
    progressing = status_condition(status, "Progressing")
    assert progressing["reason"] == "ReplacingOutdated", progressing
    assert progressing["message"].startswith("Replacing outdated Machine ma in a: "), progressing
    failed = status_of(abc(), preflight_failures=[PreflightFailure(CHECK_ETCD_NO_ALARMS, "NOSPACE@m1")])
    assert status_condition(failed, "Progressing")["reason"] == "EtcdAlarm"
    assert "EtcdNoAlarms: NOSPACE@m1" in status_condition(failed, "Progressing")["message"]
    owned = status_of(abc(), owned_by_others=["theirs"], unmanaged_nodes=["stray"])
    degraded = status_condition(owned, "Degraded")
    assert degraded["reason"] == "MachinesAlreadyOwned" and "stray" in degraded["message"]
    broken = status_of([*abc()[:2], in_a("f", phase="Failed", node_ready=False)])
    assert broken["failureReason"] == "MachineFailed" and "f" in broken["failureMessage"]
    human = status_of(abc(), failure=("MaxRetryReached", "find the cause"))
    assert human["failureReason"] == "MaxRetryReached"
    # The failed replacement is there too; the stopped retries say what to do first.
    stopped = status_of(
        [*abc()[:2], in_a("f", phase="Failed", node_ready=False)],
        failure=("ReplacementsFailing", "fix the template or set the resume annotation"),
    )
    degraded = status_condition(stopped, "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "ReplacementsFailing"), degraded
    assert (stopped["failureReason"], stopped["phase"]) == ("ReplacementsFailing", "Degraded")
    paused = status_of(abc(), paused=True)
    assert status_condition(paused, "Progressing")["reason"] == "Paused"


@pytest.mark.parametrize(
    ("machines", "etcd", "expected"),
    [
        # stacked etcd, whole: True, and the message says what was judged
        (
            ABC,
            view(3, ["ma", "mb", "mc"]),
            ("True", "AsExpected", "etcd has quorum (3 of 3 voter(s) healthy); 3 Machine(s) serve"),
        ),
        # one voter down: quorum holds, one replica missing
        (
            [*ABC[:2], m("mc", etcd_healthy=False)],
            view(3, ["ma", "mb"]),
            (
                "True",
                "MissingReplicas",
                "Missing 1 available replica(s); etcd has quorum (2 of 3 voter(s) healthy); "
                "2 Machine(s) serve",
            ),
        ),
        # two of three voters down: one Machine still "available" by itself, but no quorum: False
        (
            [m("ma"), m("mb", etcd_healthy=False), m("mc", etcd_healthy=False)],
            view(3, ["ma"]),
            ("False", "EtcdQuorumLost", "etcd has no quorum (1 of 3 voter(s) healthy); 1 Machine(s) serve"),
        ),
        # learners do not count towards quorum
        (
            ABC[:1],
            view(1, ["ma"], learners=1),
            (
                "True",
                "MissingReplicas",
                "Missing 2 available replica(s); etcd has quorum (1 of 1 voter(s) healthy); "
                "1 Machine(s) serve",
            ),
        ),
        # a member without a Machine counts as a voter, never as a healthy one
        (
            ABC[:1],
            view(2, ["ma"]),
            ("False", "EtcdQuorumLost", "etcd has no quorum (1 of 2 voter(s) healthy); 1 Machine(s) serve"),
        ),
        # etcd that cannot be asked: no quorum we know of
        (
            ABC,
            view(3, [], reachable=False),
            ("False", "EtcdQuorumLost", "etcd cannot be asked: connection refused; 3 Machine(s) serve"),
        ),
        # quorum, but no Machine serves (every Node NotReady)
        (
            [m(n, node_ready=False) for n in ("ma", "mb", "mc")],
            view(3, ["ma", "mb", "mc"]),
            ("False", "NoMachineAvailable", "etcd has quorum (3 of 3 voter(s) healthy); 0 Machine(s) serve"),
        ),
        # external etcd: Machines only
        (ABC, None, ("True", "AsExpected", "external etcd, not checked; 3 Machine(s) serve")),
        (
            [m("ma", node_ready=False)],
            None,
            ("False", "NoMachineAvailable", "external etcd, not checked; 0 Machine(s) serve"),
        ),
        # nothing yet
        ([], None, ("False", "NoMachineAvailable", "no etcd yet; 0 Machine(s) serve")),
    ],
    ids=[
        "whole stacked etcd is available and says what was judged",
        "one voter down keeps quorum with a replica missing",
        "two of three voters down is not available",
        "learners do not count towards quorum",
        "a member without a Machine counts as a voter, never a healthy one",
        "etcd that cannot be asked is no quorum we know of",
        "quorum without a serving Machine is not available",
        "external etcd judges the Machines only",
        "external etcd with no Ready Machine is not available",
        "nothing yet is not available",
    ],
)
def test_available_needs_etcd_quorum_and_a_serving_machine(
    machines: list[MachineInfo], etcd: EtcdView | None, expected: tuple[str, str, str]
) -> None:
    available = condition(machines, "Available", etcd=etcd)
    assert (available["status"], available["reason"], available["message"]) == expected


JUST_OVER = NOT_READY_GRACE + timedelta(seconds=1)


JUST_UNDER = NOT_READY_GRACE - timedelta(seconds=1)


@pytest.mark.parametrize(
    ("machines", "expected"),
    [
        # a reboot inside the grace: not Degraded
        ([*ABC[:2], unready("mc", JUST_UNDER)], []),
        # the grace ends exactly now: Degraded (the bound is inclusive)
        ([*ABC[:2], unready("mc", NOT_READY_GRACE)], ["mc"]),
        ([*ABC[:2], unready("mc", JUST_OVER)], ["mc"]),
        # only the Machines past the grace are named
        ([ABC[0], unready("mb", JUST_UNDER), unready("mc", JUST_OVER)], ["mc"]),
        # an unready replacement beside three ready Machines costs nothing yet
        ([*ABC, unready("md", JUST_OVER)], []),
        # a Machine being deleted is not judged (its replacement is)
        ([*ABC[:2], unready("mc", JUST_OVER, deleting=True)], []),
        # a Machine whose Node never came is unready since its creation
        ([*ABC[:2], m("mc", phase="Provisioned", node_ready=False, created=NOW - JUST_OVER)], ["mc"]),
        ([*ABC[:2], m("mc", phase="Provisioned", node_ready=False, created=NOW - JUST_UNDER)], []),
        # a Machine not created yet is not judged here (Progressing reports the step)
        (ABC[:2], []),
    ],
    ids=[
        "a reboot inside the grace is not degraded",
        "the grace ending exactly now degrades",
        "a Machine past the grace degrades",
        "only Machines past the grace are named",
        "an unready replacement beside three ready Machines costs nothing yet",
        "a Machine being deleted is not judged",
        "a Machine whose Node never came is unready since its creation",
        "a Machine whose Node has not come within the grace is not judged yet",
        "a Machine not created yet is not judged here",
    ],
)
def test_unready_machines_degrade_only_beyond_the_grace(
    machines: list[MachineInfo], expected: list[str]
) -> None:
    assert [u.name for u in unready_beyond_grace(3, machines, now=NOW)] == expected
    degraded = condition(machines, "Degraded")
    if expected:
        assert (degraded["status"], degraded["reason"]) == ("True", "MachinesNotReady")
        ready = sum(x.ready and not x.deleting for x in machines)
        assert degraded["message"].startswith(
            f"{ready} of 3 Machine(s) ready for more than 0:05:00; not ready: "
        )
        assert all(name in degraded["message"] for name in expected)
    else:
        assert (degraded["status"], degraded["reason"]) == ("False", "AsExpected")


def test_degraded_keeps_configuration_problems_first_and_names_every_one() -> None:
    degraded = condition(
        [*ABC[:2], unready("mc", JUST_OVER)],
        "Degraded",
        owned_by_others=["theirs"],
        unmanaged_nodes=["stray"],
    )
    assert degraded["reason"] == "MachinesAlreadyOwned"
    assert all(text in degraded["message"] for text in ("theirs", "stray", "mc since"))


def test_an_unwatched_machine_makes_the_controlplane_degraded_before_its_node_is_judged() -> None:
    degraded = condition(ABC[:2], "Degraded", unwatched=["mc"], unmanaged_nodes=["stray"])
    assert (degraded["status"], degraded["reason"]) == ("True", "MachineNotWatched")
    assert degraded["message"].startswith("Machine(s) mc belong to this ControlPlane but lack label ")
    assert "stray" in degraded["message"]


def test_the_reconciler_wakes_when_the_first_grace_ends() -> None:
    """No watch event marks the end of a grace: the reconciler requeues for it, so Degraded
    turns True when the grace ends, not up to a resync period later."""
    minute = timedelta(minutes=1)
    grace = timedelta(minutes=5)
    # two unready Machines: the one unready longer ends its grace first
    machines = [*ABC[:1], unready("mb", 2 * minute), unready("mc", 4 * minute)]
    assert seconds_until_degraded(3, machines, now=NOW, grace=grace) == 60.0
    # a grace already ended is reported now; the other one still needs a wake-up
    machines = [*ABC[:1], unready("mb", 6 * minute), unready("mc", 4 * minute)]
    assert seconds_until_degraded(3, machines, now=NOW, grace=grace) == 60.0
    # nothing pending: every grace ended, or enough Machines are ready, or the unready one is deleting
    assert seconds_until_degraded(3, [*ABC[:2], unready("mc", 6 * minute)], now=NOW, grace=grace) is None
    assert seconds_until_degraded(3, [*ABC, unready("md", minute)], now=NOW, grace=grace) is None
    assert seconds_until_degraded(3, [*ABC[:2], unready("mc", minute, deleting=True)], now=NOW) is None


@pytest.mark.parametrize(
    ("current", "status", "unchanged"),
    [
        ({"replicas": 3, "phase": "Running"}, {"replicas": 3, "failureReason": None}, True),
        ({"replicas": 3}, {"replicas": 5}, False),
        ({"replicas": 3, "failureReason": "MachineFailed"}, {"replicas": 3, "failureReason": None}, False),
        ({}, {"phase": "Running"}, False),
    ],
    ids=[
        "a status whose fields match the current ones is not written",
        "a changed count is written",
        "clearing the failure reason is written",
        "a field the current status lacks is written",
    ],
)
def test_a_status_is_written_only_when_it_changes(
    current: dict[str, Any], status: dict[str, Any], unchanged: bool
) -> None:
    assert status_unchanged(current, status) is unchanged


def test_the_status_to_write_keeps_foreign_conditions_transition_times_and_the_last_remediation() -> None:
    previous = [
        {"type": "Available", "status": "True", "reason": "A", "message": "", "lastTransitionTime": "old"},
        {"type": "Degraded", "status": "False", "reason": "A", "message": "", "lastTransitionTime": "old"},
        {"type": "EtcdClusterHealthy", "status": "True", "reason": "H", "lastTransitionTime": "old"},
    ]
    computed = [
        {"type": "Available", "status": "True", "reason": "B", "message": "x"},
        {"type": "Degraded", "status": "True", "reason": "C", "message": "y"},
    ]
    last = {"machine": "demo-a", "timestamp": "old", "retryCount": 0}
    written = status_to_write({"conditions": previous, "lastRemediation": last}, {"conditions": computed}, T0)
    assert written["lastRemediation"] == last
    merged = {c["type"]: c for c in written["conditions"]}
    assert merged["Available"]["lastTransitionTime"] == "old"
    assert merged["Degraded"]["lastTransitionTime"] == format_time(T0)
    assert merged["EtcdClusterHealthy"] == previous[2]
