"""The ControlPlane's remediation rules (controllers/controlplane/remediation.py), one table per rule:
the safety gates, the retries counted per lineage, and which marked Machine goes first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest

from controllers.controlplane.machines import MachineInfo
from controllers.controlplane.options import ControlPlaneOptions
from controllers.controlplane.remediation import (
    RetryBackoff,
    remediation_decision,
)
from controllers.controlplane.remediation_order import pick_target, removal_cost
from controllers.controlplane.remediation_record import (
    RemediationRecord,
)
from tests.support.machine_rows import cp_machine

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DEFAULTS = ControlPlaneOptions().with_defaults().remediation_backoff
"""The operator's default bound: 30 s doubling to 10 min, 5 retries."""
RESUME = "controlplane.cpo.dev/resume-remediation"


m = partial(cp_machine, failure_domain="a")
"""A row of :func:`cp_machine` in failure domain a."""


def decide(target: MachineInfo, machines: list[MachineInfo], **kw: Any) -> Any:
    args: dict[str, Any] = {
        "initialized": True,
        "stacked_etcd": True,
        "last_machine": None,
        "resuming": None,
        "lineage": None,
        "max_retry": None,
        "retry_period": None,
        "min_healthy_period": None,
        "now": T0,
        "backoff": DEFAULTS,
    }
    args.update(kw)
    return remediation_decision(target=target, machines=machines, **args)


def replaced(machine: str, minutes_ago: float, retry_count: int = 0) -> RemediationRecord:
    """The record a replacement carries: it replaced ``machine``, remediated ``minutes_ago``."""
    return RemediationRecord(machine, T0 - timedelta(minutes=minutes_ago), retry_count)


def seconds_ago(machine: str, seconds: float, retry_count: int) -> RemediationRecord:
    """:func:`replaced`, ``seconds`` ago."""
    return RemediationRecord(machine, T0 - timedelta(seconds=seconds), retry_count)


SICK = m("sick", marked_unhealthy=True, node_ready=False, etcd_healthy=False)


HEALTHY = [m("m2"), m("m3")]


@pytest.mark.parametrize(
    ("machines", "kw", "allowed", "reason"),
    [
        ([SICK, *HEALTHY], {"paused": True}, False, "Paused"),
        ([SICK, *HEALTHY], {}, True, "Remediating"),
        ([SICK], {}, False, "CannotRemediateLastMachine"),
        ([SICK], {"initialized": False}, True, "Remediating"),
        ([SICK, *HEALTHY], {"last_machine": "m3"}, False, "WaitingForPreviousRemediation"),
        # The previous remediation's Machine (a NotReady Node) is held by the hook on its healthy
        # voter until a replacement votes, which SICK keeps from joining.
        ([SICK, m("m2"), m("m3", deleting=True)], {"last_machine": "m3"}, True, "Remediating"),
        (
            [SICK, m("m2"), m("m3", deleting=True, etcd_healthy=False)],
            {"last_machine": "m3"},
            False,
            "WaitingForPreviousRemediation",
        ),
        ([SICK, m("m2"), m("m3", deleting=True, etcd_voter=False)], {}, False, "WaitingForDeletion"),
        ([SICK, m("m2"), m("m3", deleting=True, etcd_healthy=False)], {}, False, "WaitingForDeletion"),
        # A deleting Machine whose healthy voter the hook holds until its replacement votes: that
        # replacement cannot join while SICK fails the preflight, so waiting would be for ever.
        ([SICK, m("m2"), m("m3", deleting=True)], {}, True, "Remediating"),
        # ... also once its provider has stopped calling it Running: deleting is not provisioning.
        ([SICK, m("m2"), m("m3", deleting=True, phase="Deleting")], {}, True, "Remediating"),
        (
            [SICK, m("m2"), m("m3", phase="Provisioning", node_ready=False)],
            {},
            False,
            "WaitingForProvisioning",
        ),
        # A replacement whose member add etcd refuses while SICK's voter is dead provisions only
        # once SICK is remediated; one whose member has joined is waited for.
        (
            [SICK, m("m2"), m("m3", phase="Provisioning", node_ready=False, etcd_voter=False)],
            {},
            True,
            "Remediating",
        ),
        (
            [
                SICK,
                m("m2"),
                m("m3", phase="Provisioned", node_ready=False, etcd_voter=False, etcd_learner=True),
            ],
            {},
            False,
            "WaitingForProvisioning",
        ),
        ([SICK, m("m2"), m("m3", etcd_healthy=False, node_ready=False)], {}, False, "EtcdQuorumAtRisk"),
        # etcd unreadable: every Machine reads as no voter, so the quorum cannot be judged.
        (
            [
                m("sick", marked_unhealthy=True, node_ready=False, etcd_voter=False, etcd_healthy=False),
                m("m2", etcd_voter=False, etcd_healthy=False),
                m("m3", etcd_voter=False, etcd_healthy=False),
            ],
            {"etcd_error": "Secret etcd-client not found"},
            False,
            "EtcdUnreachable",
        ),
        ([SICK, *HEALTHY], {"etcd_error": "no answer", "initialized": False}, True, "Remediating"),
        ([SICK, *HEALTHY], {"etcd_error": "no answer", "stacked_etcd": False}, True, "Remediating"),
        (
            [SICK, m("m2"), m("m3", etcd_healthy=False, node_ready=False)],
            {"stacked_etcd": False},
            True,
            "Remediating",
        ),
    ],
    ids=[
        "when the ControlPlane is paused it defers every remediation",
        "with two healthy Machines beside it the target is remediated",
        "the last Machine is never remediated",
        "before the control plane is initialized even the last Machine is remediated",
        "the previous remediation's Machine still there holds the next one",
        "the previous remediation's Machine held by the hook on its healthy voter does not hold it",
        "the previous remediation's deleting Machine with a dead voter holds it",
        "a deleting Machine without a member is waited for",
        "a deleting Machine with a dead voter is waited for",
        "a deleting Machine whose healthy voter the hook holds is not waited for",
        "a deleting Machine no longer called Running is still not waited for",
        "a provisioning Machine whose member votes is waited for",
        "a provisioning Machine whose member etcd refuses does not hold the remediation",
        "a provisioned Machine whose learner joined is waited for",
        "a second unhealthy voter puts etcd quorum at risk",
        "etcd that cannot be read holds the remediation",
        "an unreadable etcd before initialization does not hold it",
        "an unreadable external etcd does not hold it",
        "with external etcd the quorum is not judged",
    ],
)
def test_remediation_decision(
    machines: list[MachineInfo], kw: dict[str, Any], allowed: bool, reason: str
) -> None:
    decision = decide(SICK, machines, **kw)
    assert (decision.allowed, decision.reason) == (allowed, reason), decision.message


@pytest.mark.parametrize(
    ("machines", "kw", "needs_human"),
    [
        pytest.param([SICK], {}, True, id="when the target is the last Machine only a human can go on"),
        pytest.param(
            [SICK, *HEALTHY],
            {"lineage": replaced("old", 1, retry_count=3), "max_retry": 3},
            True,
            id="when maxRetry is exhausted only a human can go on",
        ),
        pytest.param(
            [SICK, *HEALTHY], {"last_machine": "m3"}, False, id="when it waits for the previous one it waits"
        ),
    ],
)
def test_needs_human_is_decided_once_by_the_rule_that_refuses(
    machines: list[MachineInfo], kw: dict[str, Any], needs_human: bool
) -> None:
    assert decide(SICK, machines, **kw).needs_human is needs_human


def test_a_machine_without_a_member_is_waited_for_when_the_target_does_not_block_it() -> None:
    """Only an unhealthy voter makes etcd refuse new members: a NotReady Node with a healthy
    member does not, so remediating it waits for a Machine still provisioning."""
    not_ready = m("sick", marked_unhealthy=True, node_ready=False)
    new = m("m3", phase="Provisioning", node_ready=False, etcd_voter=False)
    decision = decide(not_ready, [not_ready, m("m2"), new])
    assert (decision.allowed, decision.reason) == (False, "WaitingForProvisioning")


@pytest.mark.parametrize(
    ("lineage", "kw", "allowed", "reason", "retry_count"),
    [
        # No record: a Machine that replaced nothing starts a lineage, whatever happened before.
        (None, {"max_retry": 0}, True, "Remediating", 0),
        (None, {"max_retry": 0, "last_machine": "gone", "retry_period": "1h"}, True, "Remediating", 0),
        # It replaced a remediated Machine 5 minutes ago: retry n + 1 of that lineage.
        (replaced("gone", 5), {}, True, "Remediating", 1),
        (replaced("gone", 5, retry_count=2), {}, True, "Remediating", 3),
        (replaced("gone", 5), {"max_retry": 1}, True, "Remediating", 1),
        (replaced("gone", 5), {"max_retry": 0}, False, "MaxRetryReached", 1),
        (replaced("gone", 5, retry_count=1), {"max_retry": 1}, False, "MaxRetryReached", 2),
        (replaced("gone", 5), {"retry_period": "10m"}, False, "WaitingForRetryPeriod", 1),
        (replaced("gone", 5), {"retry_period": "1m", "max_retry": 1}, True, "Remediating", 1),
        # Healthy for minHealthyPeriod (default 1h, or as set): a new problem, not a retry.
        (
            replaced("gone", 120, retry_count=5),
            {"max_retry": 1, "retry_period": "10h"},
            True,
            "Remediating",
            0,
        ),
        (replaced("gone", 60), {"max_retry": 0}, True, "Remediating", 0),
        (replaced("gone", 5), {"max_retry": 0, "min_healthy_period": "2m"}, True, "Remediating", 0),
        (replaced("gone", 5), {"max_retry": 0, "min_healthy_period": "2h"}, False, "MaxRetryReached", 1),
    ],
    ids=[
        "without a record a Machine starts a lineage",
        "without a record earlier remediations are no retry",
        "replacing a Machine remediated five minutes ago is retry one",
        "the retry count grows along the lineage",
        "retry one is allowed by maxRetry one",
        "retry one is refused by maxRetry zero",
        "retry two is refused by maxRetry one",
        "a retry within the retry period waits",
        "a retry after the retry period goes",
        "healthy for longer than the default minHealthyPeriod starts a new lineage",
        "healthy for the whole default minHealthyPeriod starts a new lineage",
        "healthy for longer than a set minHealthyPeriod starts a new lineage",
        "within a set minHealthyPeriod it is a retry",
    ],
)
def test_retries_are_counted_along_the_targets_lineage(
    lineage: RemediationRecord | None, kw: dict[str, Any], allowed: bool, reason: str, retry_count: int
) -> None:
    decision = decide(SICK, [SICK, *HEALTHY], lineage=lineage, **kw)
    assert (decision.allowed, decision.reason, decision.retry_count) == (allowed, reason, retry_count)
    assert decision.needs_human is (reason == "MaxRetryReached")


def test_two_unrelated_failures_within_min_healthy_period_are_both_first_tries() -> None:
    """A fails and is replaced by A'; ten minutes later B (an original Machine, no record) fails.
    B's remediation is no retry of A's, even with maxRetry 0; A' failing is retry 1 of A's
    lineage, and with maxRetry 0 a human must act."""
    a_replacement = m("a2", marked_unhealthy=True, node_ready=False, etcd_healthy=False)
    b = m("b", marked_unhealthy=True, node_ready=False, etcd_healthy=False)
    limits = {"max_retry": 0, "min_healthy_period": "1h", "last_machine": "a"}
    first_of_b = decide(b, [b, m("a2"), m("c")], **limits)
    assert (first_of_b.allowed, first_of_b.retry_count) == (True, 0), first_of_b.message
    again = decide(a_replacement, [a_replacement, m("b2"), m("c")], lineage=replaced("a", 10), **limits)
    assert (again.allowed, again.reason, again.retry_count) == (False, "MaxRetryReached", 1)
    assert "a2" in again.message and "maxRetry 0" in again.message


def test_the_retry_period_is_measured_from_the_remediation_the_target_replaced() -> None:
    waiting = decide(SICK, [SICK, *HEALTHY], lineage=replaced("gone", 0.5), retry_period="1m")
    assert waiting.requeue_after == pytest.approx(30)


def test_a_remediation_recorded_but_never_carried_out_is_resumed_not_waited_for() -> None:
    """The ControlPlane's in-progress record is written before the delete. A crash between the
    two leaves the target named there and not deleting; the next pass carries that remediation
    out with its count (the retry rules were applied when it was recorded), and every safety
    gate still applies."""
    resuming = RemediationRecord("sick", T0 - timedelta(seconds=3), 1)
    decision = decide(SICK, [SICK, *HEALTHY], resuming=resuming, max_retry=0, retry_period="1h")
    assert (decision.allowed, decision.reason, decision.retry_count) == (True, "Remediating", 1)
    assert decision.resumed
    going = m("m3", deleting=True, etcd_voter=False)  # its member already removed
    waiting = decide(SICK, [SICK, m("m2"), going], resuming=resuming)
    assert (waiting.allowed, waiting.reason) == (False, "WaitingForDeletion")
    at_risk = decide(SICK, [SICK, m("m2"), m("m3", etcd_healthy=False, node_ready=False)], resuming=resuming)
    assert (at_risk.allowed, at_risk.reason) == (False, "EtcdQuorumAtRisk")
    # a record for another Machine resumes nothing; a fresh remediation is not marked as resumed
    other = RemediationRecord("other", T0, 4)
    assert not decide(SICK, [SICK, *HEALTHY], resuming=other).resumed
    assert decide(SICK, [SICK, *HEALTHY], resuming=other).retry_count == 0


@pytest.mark.parametrize(
    ("machine", "cost"),
    [
        (m("no-node", has_node=False, node_ready=False, etcd_voter=False, etcd_healthy=False), 0),
        (m("no-member", etcd_voter=False, etcd_healthy=False), 1),
        (m("learner", etcd_voter=False, etcd_learner=True), 1),
        (m("dead-voter", etcd_healthy=False), 2),
        (m("healthy-voter", node_ready=False), 3),
    ],
    ids=[
        "a Machine without a Node costs nothing",
        "a Machine without a member costs one",
        "a learner costs one",
        "a dead voter costs two",
        "a healthy voter costs three",
    ],
)
def test_removal_cost(machine: MachineInfo, cost: int) -> None:
    assert removal_cost(machine) == cost


@pytest.mark.parametrize(
    ("marked", "pending", "expected"),
    [
        # The cheapest loss first, whatever the age.
        ([m("voter", age=50), m("dead", age=1, etcd_healthy=False)], [], "dead"),
        ([m("dead", age=50, etcd_healthy=False), m("learner", age=1, etcd_voter=False)], [], "learner"),
        ([m("learner", age=50, etcd_voter=False), m("nonode", age=1, has_node=False)], [], "nonode"),
        # Same cost: the oldest, then by name.
        ([m("young", age=1), m("old", age=50)], [], "old"),
        ([m("b", age=5), m("a", age=5)], [], "a"),
        # A remediation recorded before a crash is carried out first.
        ([m("nonode", has_node=False), m("voter", age=9)], [RemediationRecord("voter", T0)], "voter"),
        ([m("a"), m("b")], [RemediationRecord("gone", T0)], "a"),
    ],
    ids=[
        "a dead voter goes before a healthy voter whatever the age",
        "a learner goes before a dead voter",
        "a Machine without a Node goes before a learner",
        "at the same cost the oldest goes first",
        "at the same cost and age the first by name goes",
        "a remediation recorded before a crash is carried out first",
        "a record of a Machine no longer marked changes nothing",
    ],
)
def test_pick_target(marked: list[MachineInfo], pending: list[RemediationRecord], expected: str) -> None:
    assert pick_target(marked, pending).name == expected


BROKEN_API = {"components_unhealthy": ("kube-apiserver",), "components_message": "kube-apiserver: not ready"}


@pytest.mark.parametrize(
    ("case", "machines", "allowed", "reason"),
    [
        (
            "another Machine keeps every component healthy",
            [SICK, m("m2", **BROKEN_API), m("m3")],
            True,
            "Remediating",
        ),
        (
            "a dead Machine goes even when no other keeps a full healthy set (it serves none)",
            [SICK, m("m2", **BROKEN_API), m("m3", **BROKEN_API)],
            True,
            "Remediating",
        ),
        (
            "without component failures the rule says nothing",
            [SICK, m("m2"), m("m3")],
            True,
            "Remediating",
        ),
    ],
)
def test_remediation_keeps_one_full_healthy_set_of_components(
    case: str, machines: list[MachineInfo], allowed: bool, reason: str
) -> None:
    decision = decide(SICK, machines)
    assert (decision.allowed, decision.reason) == (allowed, reason), case


def test_a_machine_with_broken_components_is_not_waited_for_as_provisioning() -> None:
    """Its Node is Ready and Running: a failure, not a Machine coming up."""
    decision = decide(SICK, [SICK, m("m2", **BROKEN_API), m("m3")])
    assert decision.reason != "WaitingForProvisioning"


def test_among_equal_costs_the_machine_with_broken_components_is_remediated_first() -> None:
    older = m("older", age=50, marked_unhealthy=True)
    broken = m("broken", age=1, marked_unhealthy=True, **BROKEN_API)
    assert pick_target([older, broken]).name == "broken"


FAILED_AT = T0 - timedelta(seconds=20)
"""When the failing replacement below was marked by the health check."""
FAILING = m(
    "new", marked_unhealthy=True, marked_since=FAILED_AT, phase="Failed", has_node=False, etcd_voter=False
)
"""A replacement that never provisioned (``fail-provision``), marked 20 s ago."""
MACHINES = [FAILING, *HEALTHY]


@pytest.mark.parametrize(
    ("lineage", "allowed", "reason", "retry_count", "requeue_after"),
    [
        (None, True, "Remediating", 0, None),
        (seconds_ago("r0", 15, 0), False, "WaitingForRetryPeriod", 1, 15),
        (seconds_ago("r0", 30, 0), True, "Remediating", 1, None),
        (seconds_ago("r1", 59, 1), False, "WaitingForRetryPeriod", 2, 1),
        (seconds_ago("r1", 60, 1), True, "Remediating", 2, None),
        (seconds_ago("r2", 100, 2), False, "WaitingForRetryPeriod", 3, 20),
        (seconds_ago("r3", 240, 3), True, "Remediating", 4, None),
        (seconds_ago("r4", 479, 4), False, "WaitingForRetryPeriod", 5, 1),
        (seconds_ago("r4", 480, 4), True, "Remediating", 5, None),
        (seconds_ago("r5", 600, 5), False, "ReplacementsFailing", 6, None),
        (seconds_ago("r5", 3599, 5), False, "ReplacementsFailing", 6, None),
        (seconds_ago("r5", 3600, 5), True, "Remediating", 0, None),
    ],
    ids=[
        "the first failure of a lineage is replaced at once",
        "retry 1 waits 30 s after the remediation before it",
        "retry 1 goes once 30 s passed",
        "retry 2 waits 1 min",
        "retry 2 goes after 1 min",
        "retry 3 waits 2 min",
        "retry 4 goes after 4 min",
        "retry 5 waits 8 min",
        "retry 5 goes after 8 min",
        "after retry 5 failed the ControlPlane stops",
        "stopped it stays stopped within minHealthyPeriod",
        "a replacement that stayed for minHealthyPeriod starts a new lineage",
    ],
)
def test_without_retry_period_or_max_retry_retries_back_off_and_stop_by_default(
    lineage: RemediationRecord | None,
    allowed: bool,
    reason: str,
    retry_count: int,
    requeue_after: float | None,
) -> None:
    decision = decide(FAILING, MACHINES, lineage=lineage)
    assert (decision.allowed, decision.reason, decision.retry_count) == (allowed, reason, retry_count)
    assert decision.requeue_after == (pytest.approx(requeue_after) if requeue_after else None)
    assert decision.needs_human is (reason == "ReplacementsFailing")
    if decision.needs_human:
        assert "the default limit of 5 retries" in decision.message, decision.message
        assert f"{RESUME}=<the current time, RFC 3339>" in decision.message, decision.message
        assert "fix the template" in decision.message, decision.message


@pytest.mark.parametrize(
    ("retry", "wait"),
    [(1, 30), (2, 60), (3, 120), (4, 240), (5, 480), (6, 600), (12, 600)],
    ids=[f"retry {n}" for n in (1, 2, 3, 4, 5, 6, 12)],
)
def test_the_default_backoff_starts_at_30_s_doubles_and_is_capped_at_10_min(retry: int, wait: float) -> None:
    assert RetryBackoff(initial=30, factor=2, cap=600, max_retry=5) == DEFAULTS
    assert DEFAULTS.period(retry) == wait


@pytest.mark.parametrize(
    ("lineage", "kw", "allowed", "reason", "retry_count"),
    [
        (seconds_ago("r2", 10, 2), {"retry_period": "10s"}, True, "Remediating", 3),
        (seconds_ago("r2", 0, 2), {"retry_period": "0s"}, True, "Remediating", 3),
        (seconds_ago("r0", 20, 0), {"retry_period": "1m"}, False, "WaitingForRetryPeriod", 1),
        (seconds_ago("r5", 600, 5), {"max_retry": 8}, True, "Remediating", 6),
        (seconds_ago("r6", 599, 6), {"max_retry": 8}, False, "WaitingForRetryPeriod", 7),
        (seconds_ago("r2", 600, 2), {"max_retry": 2}, False, "MaxRetryReached", 3),
        (seconds_ago("r0", 600, 0), {"max_retry": 0}, False, "MaxRetryReached", 1),
        (seconds_ago("r5", 0, 5), {"max_retry": 9, "retry_period": "0s"}, True, "Remediating", 6),
    ],
    ids=[
        "a set retryPeriod shorter than the backoff wins",
        "a set retryPeriod of 0 retries at once",
        "a set retryPeriod longer than the backoff wins",
        "a set maxRetry above the default allows more retries",
        "beyond the default count the backoff is capped at 10 min",
        "a set maxRetry below the default stops sooner with MaxRetryReached",
        "maxRetry 0 never retries",
        "both set the operator's defaults play no part",
    ],
)
def test_the_users_retry_period_and_max_retry_win_over_the_defaults(
    lineage: RemediationRecord, kw: dict[str, Any], allowed: bool, reason: str, retry_count: int
) -> None:
    decision = decide(FAILING, MACHINES, lineage=lineage, **kw)
    assert (decision.allowed, decision.reason, decision.retry_count) == (allowed, reason, retry_count)
    assert decision.needs_human is (reason == "MaxRetryReached")
    if decision.needs_human:
        assert f"maxRetry {kw['max_retry']}" in decision.message, decision.message


def test_the_operators_options_set_the_default_bound() -> None:
    small = RetryBackoff(initial=4, factor=2, cap=12, max_retry=3)
    assert [small.period(n) for n in (1, 2, 3, 4)] == [4, 8, 12, 12]
    waiting = decide(FAILING, MACHINES, lineage=seconds_ago("r1", 7, 1), backoff=small)
    assert (waiting.reason, waiting.requeue_after) == ("WaitingForRetryPeriod", pytest.approx(1))
    stopped = decide(FAILING, MACHINES, lineage=seconds_ago("r3", 60, 3), backoff=small)
    assert (stopped.reason, stopped.retry_count, stopped.retry_limit) == ("ReplacementsFailing", 4, 3)


LATER = (FAILED_AT + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
SAME = FAILED_AT.strftime("%Y-%m-%dT%H:%M:%SZ")
EARLIER = (FAILED_AT - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
STOPPED = seconds_ago("r5", 600, 5)
"""A lineage whose 5th retry failed: stopped by the default bound."""
UNMARKED = m("new", marked_unhealthy=True, phase="Failed", has_node=False, etcd_voter=False, age=1)
"""A failing replacement whose mark time is not known (its creation stands in)."""


@pytest.mark.parametrize(
    ("target", "lineage", "kw", "allowed", "reason", "retry_count", "resume_used"),
    [
        (FAILING, STOPPED, {"resume": LATER}, True, "Remediating", 0, True),
        (FAILING, seconds_ago("r2", 5, 2), {"resume": LATER}, True, "Remediating", 0, True),
        (FAILING, seconds_ago("r2", 600, 2), {"resume": LATER, "max_retry": 2}, True, "Remediating", 0, True),
        (FAILING, STOPPED, {"resume": SAME}, False, "ReplacementsFailing", 6, False),
        (FAILING, STOPPED, {"resume": EARLIER}, False, "ReplacementsFailing", 6, False),
        (FAILING, STOPPED, {"resume": "now please"}, False, "ReplacementsFailing", 6, False),
        (FAILING, None, {"resume": LATER}, True, "Remediating", 0, False),
        (
            UNMARKED,
            STOPPED,
            {"resume": (UNMARKED.created - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")},
            False,
            "ReplacementsFailing",
            6,
            False,
        ),
        (
            UNMARKED,
            STOPPED,
            {"resume": (UNMARKED.created + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")},
            True,
            "Remediating",
            0,
            True,
        ),
        (
            m("new", marked_unhealthy=True, phase="Failed", has_node=False, etcd_voter=False, outdated=True),
            STOPPED,
            {},
            True,
            "Remediating",
            0,
            False,
        ),
        (
            m("new", marked_unhealthy=True, phase="Failed", has_node=False, etcd_voter=False, outdated=True),
            seconds_ago("r1", 5, 1),
            {"max_retry": 1},
            True,
            "Remediating",
            0,
            False,
        ),
    ],
    ids=[
        "the resume annotation later than the failure resumes a stopped lineage",
        "the resume annotation also cuts a backoff wait short",
        "the resume annotation resumes a lineage the users maxRetry stopped",
        "the resume annotation at the failure time is ignored",
        "the resume annotation before the failure is ignored",
        "the resume annotation that is not a time is ignored",
        "the resume annotation is not used by a Machine that starts a lineage anyway",
        "without a mark time an annotation before the creation is ignored",
        "without a mark time an annotation after the creation resumes",
        "a changed template resumes a stopped lineage",
        "a changed template resumes a lineage the users maxRetry stopped",
    ],
)
def test_a_stopped_lineage_resumes_on_a_later_resume_annotation_or_a_template_change(
    target: MachineInfo,
    lineage: RemediationRecord | None,
    kw: dict[str, Any],
    allowed: bool,
    reason: str,
    retry_count: int,
    resume_used: bool,
) -> None:
    decision = decide(target, [target, *HEALTHY], lineage=lineage, **kw)
    assert (decision.allowed, decision.reason, decision.retry_count) == (allowed, reason, retry_count)
    assert decision.resume_used is resume_used
    if not allowed and "resume" in kw:
        assert f"{RESUME} {kw['resume']!r} is ignored" in decision.message, decision.message


@pytest.mark.parametrize(
    ("first", "replacement_lineage"),
    [
        (m("rolled", marked_unhealthy=True, phase="Failed", has_node=False, etcd_voter=False), None),
        (m("sick", marked_unhealthy=True, node_ready=False, etcd_healthy=False), None),
    ],
    ids=[
        "rollout and failed replacement: the rollout's Machine starts the lineage",
        "remediation and failed replacement: the remediated Machine starts the lineage",
    ],
)
def test_a_failed_replacement_is_a_retry_of_the_first_failure_however_that_machine_came(
    first: MachineInfo, replacement_lineage: RemediationRecord | None
) -> None:
    """A rollout's Machine carries no record: its failure is the first of a lineage (retry 0,
    at once), as a long-healthy Machine's is. The replacement the next create makes (the
    rollout's step or the remediation's) carries the record of that remediation, so its
    failure is retry 1, and the bound applies alike."""
    decision = decide(first, [first, *HEALTHY], lineage=replacement_lineage)
    assert (decision.allowed, decision.retry_count) == (True, 0)
    record = RemediationRecord(first.name, T0, decision.retry_count)
    replacement = m("next", marked_unhealthy=True, phase="Failed", has_node=False, etcd_voter=False)
    early = decide(replacement, [replacement, *HEALTHY], lineage=record, now=T0 + timedelta(seconds=5))
    assert (early.allowed, early.reason, early.retry_count) == (False, "WaitingForRetryPeriod", 1)
    later = decide(replacement, [replacement, *HEALTHY], lineage=record, now=T0 + timedelta(seconds=30))
    assert (later.allowed, later.retry_count) == (True, 1)
    last = RemediationRecord("r5", T0, 5)
    stop = decide(replacement, [replacement, *HEALTHY], lineage=last, now=T0 + timedelta(minutes=10))
    assert (stop.allowed, stop.reason, stop.needs_human) == (False, "ReplacementsFailing", True)


def test_a_lineage_record_written_before_the_bound_existed_still_counts() -> None:
    """A record of the previous version (no field beyond machine, timestamp, retryCount) reads
    as before: its count goes on, and the default bound applies to it from now on."""
    old = RemediationRecord.from_json({"machine": "r9", "timestamp": "2025-12-31T23:50:00Z", "retryCount": 7})
    assert old is not None
    decision = decide(FAILING, MACHINES, lineage=old)
    assert (decision.reason, decision.retry_count) == ("ReplacementsFailing", 8)
    legacy = RemediationRecord.from_json({"machine": "r9", "timestamp": "2025-12-31T23:59:00Z"})
    assert legacy is not None and legacy.retry_count == 0
    assert decide(FAILING, MACHINES, lineage=legacy).retry_count == 1


SERVING = m("serving", marked_unhealthy=True)
"""Marked, yet Running with a Ready Node and every component healthy: the only full set left."""


@pytest.mark.parametrize(
    ("case", "machines", "allowed", "reason"),
    [
        (
            "the only Machine keeping a full healthy set waits",
            [SERVING, m("m2", **BROKEN_API), m("m3", **BROKEN_API)],
            False,
            "WaitingForHealthyComponents",
        ),
        (
            "a component not seen yet is not a healthy set either",
            [SERVING, m("m2", **BROKEN_API), m("m3", components_pending=("etcd",))],
            False,
            "WaitingForHealthyComponents",
        ),
        ("another full set kept: it goes", [SERVING, m("m2", **BROKEN_API), m("m3")], True, "Remediating"),
    ],
)
def test_the_last_full_healthy_set_is_not_remediated_away(
    case: str, machines: list[MachineInfo], allowed: bool, reason: str
) -> None:
    decision = decide(SERVING, machines)
    assert (decision.allowed, decision.reason) == (allowed, reason), case
