"""The ControlPlane's next step and its preflight (controllers/controlplane/scale.py): which Machine is
created or deleted, in which domain, and which checks hold the step."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from functools import partial
from typing import Any

import pytest

from api.controlplane import ControlPlaneMachineTemplate, ControlPlaneSpec
from api.controlplane_reasons import (
    CHECK_ETCD_MEMBER_LISTS_AGREE,
    CHECK_ETCD_MEMBERS_MATCH,
    CHECK_ETCD_NO_ALARMS,
    CHECK_ETCD_NO_PENDING_LEARNER,
    CHECK_ETCD_REACHABLE,
    CHECK_ETCD_VOTERS_REACHABLE,
    CHECK_MACHINES_READY,
)
from controllers.controlplane.machines import EtcdFacts, MachineInfo
from controllers.controlplane.preflight import (
    etcd_facts_for_preflight,
    preflight,
)
from controllers.controlplane.scale import (
    next_step,
    planned_step,
)
from controllers.controlplane.status import (
    NOT_READY_GRACE,
)
from controllers.controlplane.step import Step
from tests.support.machine_rows import NOW, cp_machine

m = partial(cp_machine, failure_domain="a")
"""A row of :func:`cp_machine` in failure domain a."""


def lettered(name: str, **fields: Any) -> MachineInfo:
    """A row of :func:`cp_machine` in the failure domain its name's last letter names."""
    return cp_machine(name, **{"failure_domain": name[-1], **fields})


def unready(name: str, since: timedelta, **fields: Any) -> MachineInfo:
    """A Running Machine whose Node has been NotReady for ``since``."""
    return lettered(name, node_ready=False, not_ready_since=NOW - since, **fields)


ABC = [lettered("ma"), lettered("mb"), lettered("mc")]


JUST_OVER = NOT_READY_GRACE + timedelta(seconds=1)


def spec(**fields: Any) -> ControlPlaneSpec:
    return ControlPlaneSpec(template=ControlPlaneMachineTemplate.for_provider_spec({}), **fields)


THREE = [cp_machine("ma"), cp_machine("mb"), cp_machine("mc")]


HEALTHY = EtcdFacts(member_names=("m1", "m2", "m3"))


@pytest.mark.parametrize(
    ("machines", "etcd", "checks"),
    [
        ([m("m1"), m("m2"), m("m3")], HEALTHY, []),
        ([m("m1"), m("m2"), m("m3")], None, []),
        ([m("m1"), m("m2", node_ready=False), m("m3")], HEALTHY, [CHECK_MACHINES_READY]),
        ([m("m1"), m("m2", phase="Provisioning"), m("m3")], None, [CHECK_MACHINES_READY]),
        ([m("m1"), m("m2", deleting=True, node_ready=False), m("m3")], HEALTHY, []),
        ([m("m1"), m("m2"), m("m3")], EtcdFacts(reachable=False, error="refused"), [CHECK_ETCD_REACHABLE]),
        ([m("m1"), m("m2"), m("m3")], EtcdFacts(member_names=("m1", "m2")), [CHECK_ETCD_MEMBERS_MATCH]),
        (
            [m("m1"), m("m2"), m("m3")],
            EtcdFacts(member_names=("m1", "m2", "m3", "ghost")),
            [CHECK_ETCD_MEMBERS_MATCH],
        ),
        (
            [m("m1"), m("m2"), m("m3")],
            EtcdFacts(member_names=("m1", "m2", "m3"), disagreeing=("https://m3",)),
            [CHECK_ETCD_MEMBER_LISTS_AGREE],
        ),
        (
            [m("m1"), m("m2"), m("m3")],
            EtcdFacts(member_names=("m1", "m2", "m3"), alarms=("NOSPACE@m1",)),
            [CHECK_ETCD_NO_ALARMS],
        ),
        (
            [m("m1"), m("m2"), m("m3")],
            EtcdFacts(member_names=("m1", "m2", "m3"), unhealthy_voters=(("m2", "timeout"),)),
            [CHECK_ETCD_VOTERS_REACHABLE],
        ),
        (
            [m("m1"), m("m2"), m("m3")],
            EtcdFacts(member_names=("m1", "m2", "m3"), learners=("m3",)),
            [CHECK_ETCD_NO_PENDING_LEARNER],
        ),
    ],
    ids=[
        "healthy Machines and etcd pass",
        "without etcd facts only the Machines are checked",
        "a NotReady Node fails the Machines check",
        "a provisioning Machine fails the Machines check",
        "a deleting NotReady Machine is not counted",
        "unreachable etcd fails",
        "a Machine without a member fails the match",
        "a member without a Machine fails the match",
        "member lists that differ fail",
        "an alarm fails",
        "an unhealthy voter fails",
        "a pending learner fails",
    ],
)
def test_preflight_names_every_failed_check(
    machines: list[MachineInfo], etcd: EtcdFacts | None, checks: list[str]
) -> None:
    failures = preflight(machines, etcd, hosting_etcd=[x.name for x in machines])
    assert [f.check for f in failures] == checks
    assert all(f.message for f in failures)


@pytest.mark.parametrize(
    ("etcd", "owns_machines", "checks"),
    [
        # spec.etcd.endpoints name an etcd with members, none of them this ControlPlane's: the
        # first create would join voters it cannot count.
        (EtcdFacts(member_names=("old-0", "old-1", "old-2")), False, [CHECK_ETCD_MEMBERS_MATCH]),
        # Nothing answers there yet: a new cluster, its first Machine bootstraps etcd.
        (EtcdFacts(reachable=False, error="connection refused"), False, []),
        # With Machines owned, etcd that cannot be asked stops every step.
        (EtcdFacts(reachable=False, error="connection refused"), True, [CHECK_ETCD_REACHABLE]),
    ],
    ids=[
        "members of no owned Machine fail the match",
        "a new cluster whose etcd does not answer bootstraps",
        "with Machines owned unreachable etcd stops every step",
    ],
)
def test_with_no_machine_owned_etcd_is_checked_when_it_answers(
    etcd: EtcdFacts, owns_machines: bool, checks: list[str]
) -> None:
    machines = [m("m1")] if owns_machines else []
    facts = etcd_facts_for_preflight(etcd, owns_machines=owns_machines)
    failures = preflight(machines, facts, hosting_etcd=[x.name for x in machines], desired=3)
    assert [f.check for f in failures] == checks
    if checks == [CHECK_ETCD_MEMBERS_MATCH]:
        assert failures[0].message == "member(s) without a Machine: old-0, old-1, old-2"


def test_a_learner_that_can_never_be_promoted_does_not_hold_the_scale_in() -> None:
    """Scaled to 1 while a third member joined: 2 voters and a learner; the hook promotes no
    further (desired + 1 = 2), so only a scale-in step moves on."""
    machines = [m("m1"), m("m2"), m("m3")]
    etcd = EtcdFacts(member_names=("m1", "m2", "m3"), learners=("m3",))
    assert not preflight(machines, etcd, hosting_etcd=["m1", "m2", "m3"], desired=1)
    # While the learner may still be promoted, the step waits for it.
    for desired in (2, 3):
        failures = preflight(machines, etcd, hosting_etcd=["m1", "m2", "m3"], desired=desired)
        assert [f.check for f in failures] == [CHECK_ETCD_NO_PENDING_LEARNER]


def step(machines: list[MachineInfo], replicas: int = 3, **kw: Any) -> Step:
    args: dict[str, Any] = {"strategy": "RollingUpdate", "max_surge": 1, "domains": ["a", "b", "c"]}
    args.update(kw)
    return next_step(replicas=replicas, machines=machines, **args)


def abc(**fields: Any) -> list[MachineInfo]:
    return [m(f"m{d}", failure_domain=d, **fields) for d in "abc"]


@pytest.mark.parametrize(
    ("machines", "kw", "expected"),
    [
        # scale out into the emptiest domain, one at a time
        ([m("ma", failure_domain="a")], {}, ("create", "b", None)),
        ([], {"replicas": 1}, ("create", "a", None)),
        ([m("ma"), m("mb", failure_domain="b")], {"domains": []}, ("create", None, None)),
        # scale in: the scale-in choice
        ([*abc(), m("old", age=30, failure_domain="a")], {}, ("delete", None, "old")),
        # a deleting Machine is replaced in its domain, never above replicas + 1
        ([*abc()[:2], m("mc", failure_domain="c", deleting=True)], {}, ("create", "c", None)),
        (
            [
                *abc()[:1],
                m("x", failure_domain="b", deleting=True),
                m("y", failure_domain="c", deleting=True),
            ],
            {},
            ("create", "b", None),
        ),
        (
            [
                *abc()[:2],
                m("x", failure_domain="b", deleting=True),
                m("y", failure_domain="c", deleting=True),
            ],
            {},
            ("wait", None, None),
        ),
        ([*abc(), m("d", deleting=True)], {}, ("wait", None, None)),
        # rolling update, maxSurge 1: create in the outdated Machine's domain first
        ([m("ma", age=5, outdated=True), *abc()[1:]], {}, ("create", "a", "ma")),
        # ... then delete the outdated one
        (
            [m("ma", age=5, outdated=True), m("new", failure_domain="a"), *abc()[1:]],
            {},
            ("delete", None, "ma"),
        ),
        # maxSurge 0 with 3 replicas: delete first
        ([m("ma", age=5, outdated=True), *abc()[1:]], {"max_surge": 0}, ("delete", None, "ma")),
        # maxSurge 0 with 1 replica would lose etcd: surge anyway
        ([m("ma", outdated=True)], {"max_surge": 0, "replicas": 1}, ("create", "a", "ma")),
        # OnDelete: outdated Machines are only reported
        ([m("ma", outdated=True), *abc()[1:]], {"strategy": "OnDelete"}, ("none", None, None)),
        (
            [*abc()[:2], m("mc", failure_domain="c", deleting=True)],
            {"strategy": "OnDelete"},
            ("create", "c", None),
        ),
        # rebalancing a new domain through a replacement
        (
            [m("a1", failure_domain="a"), m("a2", failure_domain="a"), m("b1", failure_domain="b")],
            {},
            ("create", "c", None),
        ),
        (
            [m("a1", failure_domain="a"), m("a2", age=5, failure_domain="a"), m("b1", failure_domain="b")],
            {"max_surge": 0},
            ("delete", None, "a2"),
        ),
        (abc(), {}, ("none", None, None)),
        # ... and its replacement goes to the emptiest domain, not back to the crowded one
        (
            [
                m("a1", failure_domain="a"),
                m("a2", failure_domain="a", deleting=True),
                m("b1", failure_domain="b"),
            ],
            {"max_surge": 0},
            ("create", "c", None),
        ),
        # a, a, b over two domains is as even as 3 Machines get: nothing moves
        ([m("a1"), m("a2"), m("b1", failure_domain="b")], {"domains": ["a", "b"]}, ("none", None, None)),
        # a removed domain: its Machine goes first (maxSurge 0), its replacement to a configured one
        (
            [m("ma"), m("mb", failure_domain="b"), m("mc", failure_domain="c", outdated=True)],
            {"max_surge": 0, "domains": ["a", "b"]},
            ("delete", None, "mc"),
        ),
        (
            [m("ma"), m("mb", failure_domain="b"), m("mc", failure_domain="c", deleting=True)],
            {"max_surge": 0, "domains": ["a", "b"]},
            ("create", "a", None),
        ),
        # maxSurge 1 out of a crowded domain: the replacement goes where the spread is thinnest
        (
            [
                m("a1", age=5, outdated=True),
                m("a2", outdated=True),
                m("b1", failure_domain="b", outdated=True),
            ],
            {},
            ("create", "c", "a1"),
        ),
        # a new template while the previous one's replacement is still provisioning: it goes first
        (
            [
                *(dataclasses.replace(x, outdated=True) for x in abc()),
                m("r", phase="Provisioning", outdated=True),
            ],
            {},
            ("delete", None, "r"),
        ),
        # maxSurge 0 rollout of an even spread: each replacement back in its own domain
        (
            [m("ma", deleting=True, outdated=True), m("mb", failure_domain="b", outdated=True), *abc()[2:]],
            {"max_surge": 0},
            ("create", "a", None),
        ),
    ],
    ids=[
        "scaling out goes to the emptiest domain",
        "the first Machine goes to the first domain",
        "without domains a Machine is created in none",
        "scaling in deletes the scale-in choice",
        "a deleting Machine is replaced in its domain",
        "two deleting Machines are replaced one at a time",
        "no more than replicas plus one Machines exist during replacements",
        "an extra deleting Machine is waited for",
        "a maxSurge 1 rollout creates the replacement in the outdated Machine's domain",
        "then the outdated Machine is deleted",
        "a maxSurge 0 rollout deletes first",
        "a maxSurge 0 rollout of one replica surges anyway to keep etcd",
        "under OnDelete outdated Machines are only reported",
        "under OnDelete a deleted Machine is still replaced",
        "a new domain is filled through a replacement",
        "under maxSurge 0 rebalancing deletes from the crowded domain first",
        "three Machines in three domains need nothing",
        "the rebalancing replacement goes to the emptiest domain",
        "two domains holding a, a and b are as even as three Machines get",
        "a Machine in a removed domain goes first under maxSurge 0",
        "the replacement of a Machine in a removed domain goes to a configured one",
        "a maxSurge 1 replacement out of a crowded domain goes where the spread is thinnest",
        "a previous template's replacement still provisioning goes first",
        "a maxSurge 0 rollout of an even spread puts each replacement back in its own domain",
    ],
)
def test_next_step(machines: list[MachineInfo], kw: dict[str, Any], expected: tuple[Any, ...]) -> None:
    result = step(machines, **kw)
    assert (result.action, result.domain, result.machine) == expected
    assert result.message


def _take_step(machines: list[MachineInfo], taken: Step, serial: int) -> list[MachineInfo]:
    """The world after ``taken``, with the etcd-quorum hook letting a deleting Machine go once
    ``replicas`` others exist (its replacement votes)."""
    if taken.action == "delete":
        return [dataclasses.replace(x, deleting=True) if x.name == taken.machine else x for x in machines]
    if taken.action == "create":
        machines = [*machines, m(f"new{serial}", age=-serial, failure_domain=taken.domain)]
    return [x for x in machines if not x.deleting] if taken.action == "wait" else machines


@pytest.mark.parametrize(
    ("start", "domains", "spread"),
    [
        (["a", "a", "b"], ["a", "b", "c"], ["a", "b", "c"]),  # a domain added
        (["a", "a", "a"], ["a", "b", "c"], ["a", "b", "c"]),
        (["a", "b", "c"], ["a", "b"], ["a", "a", "b"]),  # a domain removed
        (["a", "b", "c"], ["b", "c", "d"], ["b", "c", "d"]),  # one replaced by another
    ],
    ids=[
        "an added domain spreads a, a and b over three",
        "an added domain spreads a, a and a over three",
        "a removed domain packs its Machine into those left",
        "a domain replaced by another moves its Machine there",
    ],
)
def test_rebalance_under_max_surge_zero_converges_then_stays_still(
    start: list[str], domains: list[str], spread: list[str]
) -> None:
    machines = [
        m(f"m{i}", age=10 - i, failure_domain=d, outdated=d not in domains) for i, d in enumerate(start)
    ]
    for serial in range(20):
        taken = step(machines, max_surge=0, domains=domains)
        if taken.action == "none":
            break
        machines = _take_step(machines, taken, serial)
        assert sum(not x.deleting for x in machines) <= 3, machines
        assert len(machines) <= 4, machines
    else:
        raise AssertionError(f"no convergence: {machines}")
    assert sorted(str(x.failure_domain) for x in machines) == spread
    assert step(machines, max_surge=0, domains=domains).action == "none"


def delete(name: str) -> Step:
    return Step("delete", "ScalingDown", f"Deleting Machine {name}", machine=name)


def replace(name: str) -> Step:
    return Step("create", "ReplacingOutdated", f"Replacing outdated Machine {name}", domain="a", machine=name)


SCALE_UP = Step("create", "ScalingUp", "Scaling up", domain="a")


@pytest.mark.parametrize(
    ("machines", "etcd", "taken", "checks"),
    [
        # a delete does not count its own Machine: NotReady Node, dead member, no member, learner
        ([m("m1"), m("m2", node_ready=False), m("m3")], HEALTHY, delete("m2"), []),
        (
            [m("m1"), m("m2", etcd_healthy=False), m("m3")],
            EtcdFacts(member_names=("m1", "m2", "m3"), unhealthy_voters=(("m2", "timeout"),)),
            delete("m2"),
            [],
        ),
        (
            [*abc(), m("r", phase="Provisioning", etcd_voter=False)],
            EtcdFacts(member_names=("ma", "mb", "mc")),
            delete("r"),
            [],
        ),
        (
            [*abc(), m("r", node_ready=False, etcd_voter=False, etcd_learner=True)],
            EtcdFacts(member_names=("ma", "mb", "mc", "r"), learners=("r",)),
            delete("r"),
            [],
        ),
        # ... but every other Machine and member still counts
        ([m("m1"), m("m2", node_ready=False), m("m3")], HEALTHY, delete("m1"), [CHECK_MACHINES_READY]),
        ([m("m1"), m("m2", node_ready=False), m("m3")], HEALTHY, SCALE_UP, [CHECK_MACHINES_READY]),
        (
            [*abc(), m("r", node_ready=False, etcd_voter=False, etcd_learner=True)],
            EtcdFacts(member_names=("ma", "mb", "mc", "r"), learners=("r",)),
            delete("ma"),
            [CHECK_MACHINES_READY, CHECK_ETCD_NO_PENDING_LEARNER],
        ),
        # the quorum rule holds: no voter goes unless the voters left keep a healthy quorum
        (
            [m("m1"), m("m2", etcd_healthy=False), m("m3", etcd_healthy=False)],
            EtcdFacts(
                member_names=("m1", "m2", "m3"), unhealthy_voters=(("m2", "timeout"), ("m3", "timeout"))
            ),
            delete("m2"),
            [CHECK_ETCD_VOTERS_REACHABLE, CHECK_ETCD_VOTERS_REACHABLE],
        ),
        # a maxSurge-1 create does not count the Node of the Machine it replaces, only its member
        ([m("m1"), m("m2", node_ready=False), m("m3")], HEALTHY, replace("m2"), []),
        # ... once it is Running: one still provisioning may be joining etcd
        (
            [m("m1"), m("m2", phase="Provisioning", etcd_voter=False), m("m3")],
            EtcdFacts(member_names=("m1", "m3")),
            replace("m2"),
            [CHECK_MACHINES_READY],
        ),
        (
            [m("m1"), m("m2", etcd_healthy=False), m("m3")],
            EtcdFacts(member_names=("m1", "m2", "m3"), unhealthy_voters=(("m2", "timeout"),)),
            replace("m2"),
            [CHECK_ETCD_VOTERS_REACHABLE],
        ),
    ],
    ids=[
        "a delete does not count its own NotReady Node",
        "a delete does not count its own dead member",
        "a delete does not count its own missing member",
        "a delete does not count its own learner",
        "a delete counts every other NotReady Node",
        "a scale-up counts every NotReady Node",
        "a delete counts every other learner",
        "no voter goes unless the voters left keep a healthy quorum",
        "a maxSurge 1 create does not count the Node of the Machine it replaces",
        "a replaced Machine still provisioning counts, as it may be joining etcd",
        "a maxSurge 1 create counts the member of the Machine it replaces",
    ],
)
def test_the_preflight_does_not_count_the_machine_the_step_takes_away(
    machines: list[MachineInfo], etcd: EtcdFacts, taken: Step, checks: list[str]
) -> None:
    hosting = [x.name for x in machines if x.running]
    failures = preflight(machines, etcd, hosting_etcd=hosting, desired=3, step=taken)
    assert [f.check for f in failures] == checks
    named = {x.name for x in machines if not x.ready or not x.etcd_healthy or x.etcd_learner} - {
        taken.machine
    }
    for failure in failures:
        assert any(name in failure.message for name in named | {str(taken.machine)}), failure


WITH_R = ["ma", "mb", "mc", "r"]


FOUR = EtcdFacts(member_names=tuple(WITH_R))


def test_a_rollback_replaces_the_failing_replacement_first() -> None:
    """After a template change, maxSurge 1 made a replacement that never got a Ready Node; the
    user rolled the template back: the replacement is the one outdated Machine and goes first,
    and its own readiness does not hold its delete."""
    machines = [*abc(), m("r", node_ready=False, outdated=True)]  # r's member votes
    taken = step(machines)
    assert (taken.action, taken.machine) == ("delete", "r")
    assert not preflight(machines, FOUR, hosting_etcd=WITH_R, desired=3, step=taken)
    # before the rollback it held the rollout: the outdated old Machine may not go
    before = [*(dataclasses.replace(x, outdated=True) for x in abc()), m("r", node_ready=False)]
    held = step(before)
    assert held.action == "delete" and held.machine != "r"
    failures = preflight(before, FOUR, hosting_etcd=WITH_R, desired=3, step=held)
    assert [(f.check, "r" in f.message) for f in failures] == [(CHECK_MACHINES_READY, True)]


def test_under_max_surge_zero_a_rollback_removes_the_replacement_that_never_voted() -> None:
    """maxSurge 0 deleted old Machine ma first; the etcd-quorum hook holds it (its member a
    healthy voter) until a replacement votes. The replacement r never came up (no member) and the
    user rolled the template back: r is outdated, and waiting for ma's deletion would wait for
    ever. r goes first, behind a preflight that does not hold r's own state against it; the
    voters do not change, and the up-to-date replacement follows."""
    old = m("ma", failure_domain="a", deleting=True)
    r = m("r", failure_domain="a", phase="Provisioning", node_ready=False, etcd_voter=False,
          etcd_healthy=False, outdated=True)  # fmt: skip
    machines = [old, m("mb", failure_domain="b"), m("mc", failure_domain="c"), r]
    taken = step(machines, max_surge=0)
    assert (taken.action, taken.machine) == ("delete", "r"), taken
    assert "r" in taken.message and "ma" in taken.message
    assert not preflight(machines, EtcdFacts(member_names=("ma", "mb", "mc")),
                         hosting_etcd=["ma", "mb", "mc", "r"], desired=3, step=taken)  # fmt: skip
    # once r is deleting, the next step waits for the two deletions, then replaces ma in its domain
    gone = [old, machines[1], machines[2], dataclasses.replace(r, deleting=True)]
    assert step(gone, max_surge=0).action == "wait"
    replaced = step([old, machines[1], machines[2]], max_surge=0)
    assert (replaced.action, replaced.domain) == ("create", "a")
    # an up-to-date replacement that fails is the health check's to remediate, not this rule's:
    # the same template would fail the same way
    current = [old, machines[1], machines[2], dataclasses.replace(r, outdated=False)]
    assert step(current, max_surge=0).action == "wait"
    # a replacement whose member votes is no stalled replacement: the held deletion proceeds
    voting = [old, machines[1], machines[2], m("r", failure_domain="a", outdated=True)]
    assert step(voting, max_surge=0).action == "wait"


def step_reasons(machines: list[MachineInfo], misconfigured: list[str], **kw: Any) -> tuple[str, str | None]:
    args: dict[str, Any] = {
        "replicas": 3,
        "strategy": "RollingUpdate",
        "max_surge": 1,
        "domains": ["a", "b", "c"],
    }
    args.update(kw)
    decided = next_step(machines=machines, misconfigured=misconfigured, **args)
    return decided.action, decided.reason


@pytest.mark.parametrize(
    ("machines", "kw", "free", "held"),
    [
        # scale-in: held by a configuration problem
        ([*ABC, lettered("md")], {}, ("delete", "ScalingDown"), ("wait", "HeldByConfiguration")),
        # rollout (maxSurge 1 creates the replacement, maxSurge 0 deletes first): held
        (
            [lettered("ma", outdated=True), *ABC[1:]],
            {},
            ("create", "ReplacingOutdated"),
            ("wait", "HeldByConfiguration"),
        ),
        (
            [lettered("ma", outdated=True), *ABC[1:]],
            {"max_surge": 0},
            ("delete", "ReplacingOutdated"),
            ("wait", "HeldByConfiguration"),
        ),
        # rebalancing is a rollout: held
        (
            [lettered("ma"), lettered("xa"), lettered("mb")],
            {},
            ("create", "Rebalancing"),
            ("wait", "HeldByConfiguration"),
        ),
        # scale-up goes on: a member more never lowers the quorum margin
        (ABC[:2], {}, ("create", "ScalingUp"), ("create", "ScalingUp")),
        # nothing to do stays nothing to do
        (ABC, {}, ("none", "UpToDate"), ("none", "UpToDate")),
        # unready Machines hold nothing: an outdated NotReady Machine is still replaced
        (
            [unready("ma", JUST_OVER, outdated=True), *ABC[1:]],
            {},
            ("create", "ReplacingOutdated"),
            ("wait", "HeldByConfiguration"),
        ),
    ],
    ids=[
        "a configuration problem holds a scale-in",
        "it holds a maxSurge 1 rollout",
        "it holds a maxSurge 0 rollout",
        "it holds a rebalance",
        "it never holds a scale-up",
        "nothing to do stays nothing to do",
        "an unready outdated Machine is still replaced when nothing holds it",
    ],
)
def test_a_configuration_problem_holds_scale_in_and_rollout(
    machines: list[MachineInfo], kw: dict[str, Any], free: tuple[str, str], held: tuple[str, str]
) -> None:
    assert step_reasons(machines, [], **kw) == free
    assert step_reasons(machines, ["theirs"], **kw) == held


def test_the_hold_names_the_problem() -> None:
    decided = next_step(
        replicas=3,
        strategy="RollingUpdate",
        max_surge=1,
        domains=["a", "b", "c"],
        machines=[*ABC, lettered("md")],
        misconfigured=["stray-node", "theirs"],
    )
    assert "stray-node, theirs" in decided.message and not decided.needs_preflight


def test_planned_step_follows_the_spec() -> None:
    assert planned_step(spec(replicas=1), THREE, ()).action == "delete"
    assert planned_step(spec(replicas=3), THREE, ()).action == "none"
    assert planned_step(spec(replicas=5), THREE, ()).action == "create"
    # A configuration problem holds the scale-in, as it does for an Active ControlPlane.
    assert planned_step(spec(replicas=1), THREE, ("other-owned",)).action != "delete"
