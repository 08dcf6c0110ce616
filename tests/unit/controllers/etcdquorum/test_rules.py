"""The etcd-quorum-hook rules (controllers/etcdquorum/rules.py), case by case: member removal,
promotion, the Machines and their hooks, abandoned learners."""

from __future__ import annotations

import pytest

from api.controlplane import ControlPlaneSpec
from controllers.etcd.membership import MemberState
from controllers.etcdquorum.rules import (
    HOOK_NAME,
    HOOK_OWNER,
    WAIT_HEALTHY_VOTERS,
    WAIT_MEMBERS_UNHEALTHY,
    WAIT_ONE_CHANGE_PER_PASS,
    WAIT_QUORUM_AFTER_REMOVAL,
    WAIT_QUORUM_LOST,
    GuardedMachine,
    hook_action,
    hook_removable,
    hooks_placed_while_deleting,
    hooks_with_ours,
    hooks_without_ours,
    is_abandoned_learner,
    machine_api_functional,
    machine_info,
    promotion_decision,
    removal_decision,
)
from tests.support.machine_rows import MemberRow as M
from tests.support.machine_rows import etcd_member as member
from tests.support.machine_rows import quorum_cluster as cluster


def removed(rows: tuple[M, ...], desired: int) -> str | None:
    members, machines = cluster(*rows)
    decision = removal_decision(members, machines, desired)
    return decision.member.machine if decision.member else None


REMOVAL_CASES = [
    # (id, rows, desired, machine whose member is removed or None)
    (
        "with four voters and one pending the pending member is removed",
        (M(0, deleting=True), M(1), M(2), M(3)),
        3,
        "m0",
    ),
    (
        "with five voters and two pending one is removed",
        (M(0, deleting=True), M(1, deleting=True), M(2), M(3), M(4)),
        3,
        "m0",
    ),
    (
        "with four voters left of those five and one pending it is removed",
        (M(1, deleting=True), M(2), M(3), M(4)),
        3,
        "m1",
    ),
    (
        "with three healthy voters and one pending it waits for a replacement",
        (M(0, deleting=True), M(1), M(2)),
        3,
        None,
    ),
    (
        "with three voters and an unhealthy one pending that one is removed",
        (M(0, deleting=True, healthy=False), M(1), M(2)),
        3,
        "m0",
    ),
    (
        "with an unhealthy voter not pending the removal is refused",
        (M(0, deleting=True), M(1, healthy=False), M(2), M(3)),
        3,
        None,
    ),
    (
        "with five voters, an unhealthy one not pending and a healthy one pending it waits",
        (M(0, deleting=True), M(1, healthy=False), M(2), M(3), M(4)),
        3,
        None,
    ),
    (
        "when the unhealthy voter is pending too it goes, not the healthy one",
        (M(0, deleting=True), M(1, healthy=False, deleting=True), M(2), M(3), M(4)),
        3,
        "m1",
    ),
    (
        "a pending Machine without our hook is not ours to remove",
        (M(0, deleting=True, hook=False), M(1), M(2), M(3)),
        3,
        None,
    ),
    (
        "the learner of a deleting Machine is removed at once",
        (M(0), M(1), M(2), M(3, learner=True, deleting=True)),
        3,
        "m3",
    ),
    (
        "a learner goes first even when a voter could go",
        (M(0, deleting=True), M(1), M(2), M(3), M(4, learner=True, deleting=True)),
        3,
        "m4",
    ),
    (
        "with quorum lost nothing is removed",
        (M(0, deleting=True, healthy=False), M(1, healthy=False), M(2)),
        3,
        None,
    ),
    (
        "an unhealthy pending member waits while the rest would lack quorum after",
        (M(0, deleting=True, healthy=False), M(1, healthy=False), M(2), M(3), M(4, healthy=False)),
        5,
        None,
    ),
    (
        "scaling in from three to one removes one member",
        (M(0, deleting=True), M(1, deleting=True), M(2)),
        1,
        "m0",
    ),
    ("scaling in from two to one removes the other member", (M(1, deleting=True), M(2)), 1, "m1"),
    (
        "a healthy pending member waits while the rest would lack quorum",
        (M(0, deleting=True), M(1, healthy=False), M(2)),
        1,
        None,
    ),
    (
        "of several pending the one whose failure domain has a duplicate goes",
        (
            M(0, deleting=True, zone="a"),
            M(1, deleting=True, zone="b"),
            M(2, zone="b"),
            M(3, zone="c"),
            M(4, zone="a"),
        ),
        3,
        "m0",
    ),
    (
        "of several pending a duplicate domain beats name order",
        (
            M(0, deleting=True, zone="a"),
            M(1, deleting=True, zone="b"),
            M(2, zone="b"),
            M(3, zone="c"),
            M(4, zone="d"),
        ),
        3,
        "m1",
    ),
    (
        "of several pending in the same domain situation the unhealthy one goes",
        (M(0, deleting=True), M(1, deleting=True, healthy=False), M(2), M(3), M(4)),
        3,
        "m1",
    ),
    (
        "of several pending the unhealthy one goes before a healthy one whose domain has a duplicate",
        (
            M(0, deleting=True, zone="a"),
            M(1, deleting=True, zone="d", healthy=False),
            M(2, zone="b"),
            M(3, zone="c"),
            M(4, zone="a"),
        ),
        3,
        "m1",
    ),
]


@pytest.mark.parametrize(
    ("rows", "desired", "expected"), [c[1:] for c in REMOVAL_CASES], ids=[c[0] for c in REMOVAL_CASES]
)
def test_removal_decision(rows: tuple[M, ...], desired: int, expected: str | None) -> None:
    assert removed(rows, desired) == expected


def test_two_pending_are_removed_one_per_pass_down_to_desired_never_below() -> None:
    rows = [M(0, deleting=True), M(1, deleting=True), M(2), M(3), M(4)]
    order = []
    while True:
        gone = removed(tuple(rows), 3)
        if gone is None:
            break
        order.append(gone)
        rows = [r for r in rows if f"m{r.index}" != gone]
    assert order == ["m0", "m1"]
    assert len(rows) == 3


def test_a_wait_names_the_check_and_the_unhealthy_member() -> None:
    members, machines = cluster(M(0, deleting=True), M(1, healthy=False), M(2), M(3))
    decision = removal_decision(members, machines, 3)
    assert decision.member is None
    (wait,) = decision.waits
    assert wait.machine == "m0"
    assert wait.reason == WAIT_HEALTHY_VOTERS
    assert "m1 (101)" in wait.message and "2 healthy voters" in wait.message


def test_a_healthy_member_waiting_beside_an_unhealthy_voter_names_it() -> None:
    members, machines = cluster(M(0, deleting=True), M(1, healthy=False), M(2), M(3), M(4))
    (wait,) = removal_decision(members, machines, 3).waits
    assert (wait.machine, wait.reason) == ("m0", WAIT_MEMBERS_UNHEALTHY)
    assert "m1 (101)" in wait.message and "delete their Machines" in wait.message


def test_waiting_for_a_replacement_says_so() -> None:
    members, machines = cluster(M(0, deleting=True), M(1), M(2))
    (wait,) = removal_decision(members, machines, 3).waits
    assert wait.reason == WAIT_HEALTHY_VOTERS
    assert "fewer than the 3 desired" in wait.message and "replacement" in wait.message


def test_quorum_after_removal_and_quorum_lost_are_named() -> None:
    members, machines = cluster(M(0, deleting=True), M(1, healthy=False), M(2))
    (wait,) = removal_decision(members, machines, 1).waits
    assert wait.reason == WAIT_QUORUM_AFTER_REMOVAL
    members, machines = cluster(M(0, deleting=True, healthy=False), M(1, healthy=False), M(2))
    (wait,) = removal_decision(members, machines, 3).waits
    assert wait.reason == WAIT_QUORUM_LOST and "m1 (101)" in wait.message


def test_the_other_pending_members_wait_one_change_at_a_time() -> None:
    members, machines = cluster(M(0, deleting=True), M(1, deleting=True), M(2), M(3), M(4))
    decision = removal_decision(members, machines, 3)
    assert decision.member is not None and decision.member.machine == "m0"
    assert [(w.machine, w.reason) for w in decision.waits] == [("m1", WAIT_ONE_CHANGE_PER_PASS)]


def test_a_member_of_no_machine_is_never_a_removal_candidate() -> None:
    members, machines = cluster(M(0), M(1), M(2), M(3))
    orphan = MemberState(members[0].member, None, False)
    assert removal_decision([orphan, *members[1:]], machines, 3).member is None


def promoted(rows: tuple[M, ...], desired: int) -> str | None:
    members, machines = cluster(*rows)
    decision = promotion_decision(members, machines, desired)
    return decision.member.machine if decision.member else None


PROMOTION_CASES = [
    ("scaling out from one to three promotes a learner with the hook", (M(0), M(1, learner=True)), 3, "m1"),
    ("a learner without the hook is not promoted yet", (M(0), M(1, learner=True, hook=False)), 3, None),
    (
        "the learner of a deleting Machine is never promoted",
        (M(0), M(1, learner=True, deleting=True)),
        3,
        None,
    ),
    (
        "a replacement's learner makes desired plus one voters",
        (M(0), M(1), M(2), M(3, learner=True)),
        3,
        "m3",
    ),
    (
        "with desired plus one voters already a learner waits",
        (M(0), M(1), M(2), M(3), M(4, learner=True)),
        3,
        None,
    ),
    (
        "of two learners one is promoted at a time, by name",
        (M(0), M(1, learner=True), M(2, learner=True)),
        3,
        "m1",
    ),
    (
        "with quorum lost no learner is promoted",
        (M(0, healthy=False), M(1, healthy=False), M(2), M(3, learner=True)),
        3,
        None,
    ),
]


@pytest.mark.parametrize(
    ("rows", "desired", "expected"), [c[1:] for c in PROMOTION_CASES], ids=[c[0] for c in PROMOTION_CASES]
)
def test_promotion_decision(rows: tuple[M, ...], desired: int, expected: str | None) -> None:
    assert promoted(rows, desired) == expected


def test_a_learner_with_a_foreign_owned_hook_waits_for_the_repair() -> None:
    members, machines = cluster(M(0), M(1, learner=True))
    machines["m1"] = GuardedMachine(name="m1", running=True, hook_owner="someone/else")
    decision = promotion_decision(members, machines, 3)
    assert decision.member is None
    assert [w.reason for w in decision.waits] == ["HookMissing"]


PROMOTION_WHILE_UNHEALTHY_CASES = [
    # The anchor (cluster-etcd-operator, ClusterMemberController.reconcileMembers) promotes no
    # learner while etcdClient.UnhealthyMembers is not empty: growing the voters beside a dead
    # one makes a quorum that needs the new member (3 voters with 2 healthy become 4 with 3).
    (
        "an unhealthy voter holds the promotion though quorum is kept",
        (M(0, healthy=False), M(1), M(2), M(3, learner=True)),
        3,
    ),
    (
        "scaling out with one of three voters dead waits",
        (M(0), M(1), M(2, healthy=False), M(3, learner=True)),
        5,
    ),
    ("an unhealthy learner waits", (M(0), M(1), M(2), M(3, learner=True, healthy=False)), 3),
]


@pytest.mark.parametrize(
    ("rows", "desired"),
    [c[1:] for c in PROMOTION_WHILE_UNHEALTHY_CASES],
    ids=[c[0] for c in PROMOTION_WHILE_UNHEALTHY_CASES],
)
def test_no_learner_is_promoted_while_a_voter_or_the_learner_is_unhealthy(
    rows: tuple[M, ...], desired: int
) -> None:
    members, machines = cluster(*rows)
    decision = promotion_decision(members, machines, desired)
    assert decision.member is None
    assert [(w.machine, w.reason) for w in decision.waits] == [("m3", WAIT_MEMBERS_UNHEALTHY)]


def test_a_promotion_waiting_on_an_unhealthy_voter_names_it() -> None:
    members, machines = cluster(M(0, healthy=False), M(1), M(2), M(3, learner=True))
    (wait,) = promotion_decision(members, machines, 3).waits
    assert "m0 (100)" in wait.message


def test_a_learner_that_never_started_or_has_no_machine_is_not_promoted() -> None:
    _, machines = cluster(M(0), M(1))
    voter = MemberState(member(0), "m0", True)
    unstarted = MemberState(member(1, learner=True, started=False), "m1", False)
    orphan = MemberState(member(2, learner=True), None, True)
    assert promotion_decision([voter, unstarted, orphan], machines, 3).member is None


def test_machine_info_reads_the_wire_form_and_its_domain_through_the_configured_domains() -> None:
    wire = {
        "metadata": {
            "name": "m0",
            "deletionTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"machine.openshift.io/zone": "us-east-1a"},
        },
        "spec": {"lifecycleHooks": {"preDrain": [{"name": HOOK_NAME, "owner": "x/y"}]}},
        "status": {
            "phase": "Running",
            "addresses": [
                {"type": "Hostname", "address": "m0"},
                {"type": "InternalIP", "address": "fd00::5"},
            ],
        },
    }
    cp_spec = ControlPlaneSpec.model_validate(
        {
            "template": {"spec": {"providerSpec": {"value": {}}}},
            "failureDomains": [{"name": "east-a", "providerSpec": {"value": {"zone": "us-east-1a"}}}],
        }
    )
    info = machine_info(wire, cp_spec=cp_spec)
    assert info.deleting and info.running and info.hook_owner == "x/y" and not info.has_our_hook
    # The zone label is mapped to the configured domain that names it, never taken as a name.
    assert info.failure_domain == "east-a"
    assert machine_info(wire).failure_domain is None


def test_hooks_go_only_on_machines_not_being_deleted_once_the_machine_api_works() -> None:
    running = GuardedMachine(name="a", running=True)
    new = GuardedMachine(name="b")
    assert machine_api_functional([running, new])
    assert not machine_api_functional([new])
    assert hook_action(new, api_functional=True) == "add"
    assert hook_action(new, api_functional=False) is None
    assert hook_action(GuardedMachine(name="c", deleting=True), api_functional=True) is None
    assert hook_action(GuardedMachine(name="d", hook_owner="other/team"), api_functional=True) == "repair"
    assert hook_action(GuardedMachine(name="e", hook_owner=HOOK_OWNER), api_functional=True) is None
    # The escape hatch: a deleting machine whose hook was taken away, or rewritten, stays so.
    assert (
        hook_action(GuardedMachine(name="f", deleting=True, hook_owner="other"), api_functional=True) is None
    )


def test_a_controlplane_being_deleted_still_hooks_machines_while_a_deleting_one_holds_our_hook() -> None:
    replacement = GuardedMachine(name="new", running=True)
    voter = GuardedMachine(name="b", running=True, hook_owner=HOOK_OWNER)
    old = GuardedMachine(name="old", running=True, deleting=True, hook_owner=HOOK_OWNER)
    # The old Machine's member removal waits for the replacement's promotion, which waits for
    # the replacement's hook: placing it is what lets the release go on.
    assert hooks_placed_while_deleting([old, voter, replacement])
    # Settled, or the old Machine already let go: the release takes the hooks off next.
    assert not hooks_placed_while_deleting([voter, replacement])
    assert not hooks_placed_while_deleting([GuardedMachine(name="old", deleting=True), voter])
    # A hook taken off by hand, or another owner's hook of our name, is not ours to finish.
    assert not hooks_placed_while_deleting([GuardedMachine(name="old", deleting=True, hook_owner="other")])


def test_hook_lists_keep_every_other_hook() -> None:
    theirs = {"name": "Other", "owner": "team/x"}
    assert hooks_with_ours([theirs, {"name": HOOK_NAME, "owner": "wrong"}]) == [
        theirs,
        {"name": HOOK_NAME, "owner": HOOK_OWNER},
    ]
    assert hooks_without_ours([{"name": HOOK_NAME, "owner": HOOK_OWNER}, theirs]) == [theirs]


def test_the_hook_goes_only_when_no_member_voter_or_learner_belongs_to_the_machine() -> None:
    machine = GuardedMachine(name="m0", deleting=True, hook_owner=HOOK_OWNER)
    assert not hook_removable(machine, {0x100: "m0", 0x101: "m1"})
    assert not hook_removable(machine, {0x100: "m0"})  # a learner, started or not, counts too
    assert hook_removable(machine, {0x101: "m1", 0x102: None})
    assert not hook_removable(GuardedMachine(name="m0", hook_owner=HOOK_OWNER), {0x101: "m1"})


def test_only_a_never_started_learner_of_no_machine_is_abandoned_after_the_grace_period() -> None:
    unstarted = MemberState(member(9, learner=True, started=False), None, False)
    assert is_abandoned_learner(unstarted, first_seen=0, now=60, grace=60)
    assert not is_abandoned_learner(unstarted, first_seen=0, now=59, grace=60)
    started = MemberState(member(9, learner=True), None, False)
    assert not is_abandoned_learner(started, first_seen=0, now=600, grace=60)
    mapped = MemberState(member(9, learner=True, started=False), "m9", False)
    assert not is_abandoned_learner(mapped, first_seen=0, now=600, grace=60)
    voter = MemberState(member(9, started=False), None, False)
    assert not is_abandoned_learner(voter, first_seen=0, now=600, grace=60)
