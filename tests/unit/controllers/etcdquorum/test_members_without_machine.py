"""Members of no Machine (controllers/etcdquorum/members_without_machine.py), case by case: which
dead member is removed, and why every other one stays."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from controllers.etcd.membership import MemberState
from controllers.etcdquorum.members_without_machine import (
    KEPT_CLUSTER_NOT_READY,
    KEPT_GRACE_PERIOD,
    KEPT_HEALTHY,
    KEPT_NODE_PRESENT,
    KEPT_ONE_AT_A_TIME,
    KEPT_REASONS,
    ClusterGuards,
    MemberWithoutMachine,
    kept_counts,
    machine_api_worked,
    orphan_decision,
)
from tests.support.machine_rows import etcd_member

GRACE = 60.0
READY = ClusterGuards(machine_api_functional=True, active=True, owns_member_machine=True)


@dataclass(frozen=True)
class Row:
    """Member ``m<index>``: with a Machine (``orphan=False``) or of none, with its health, Node and
    how long it has been unhealthy."""

    index: int
    orphan: bool = False
    healthy: bool = True
    learner: bool = False
    node: str | None = None
    unhealthy_for: float = 120.0


def decide(rows: tuple[Row, ...], guards: ClusterGuards = READY) -> tuple[str | None, dict[str, str]]:
    states = [
        MemberState(etcd_member(r.index, learner=r.learner), None if r.orphan else f"m{r.index}", r.healthy)
        for r in rows
    ]
    orphans = [
        MemberWithoutMachine(state, r.node, 0.0 if r.healthy else r.unhealthy_for)
        for state, r in zip(states, rows, strict=True)
        if r.orphan
    ]
    decision = orphan_decision(states, orphans, guards, GRACE)
    removed = decision.remove.member.name if decision.remove else None
    return removed, {k.state.member.name: k.reason for k in decision.kept}


CASES = [
    # (id, rows, guards, removed member, {kept member: reason})
    (
        "a dead voter of no Machine and no Node past the grace period is removed",
        (Row(0), Row(1), Row(2, orphan=True, healthy=False)),
        READY,
        "m2",
        {},
    ),
    (
        "a healthy member of no Machine stays: it may run outside the Machine API",
        (Row(0), Row(1), Row(2, orphan=True)),
        READY,
        None,
        {"m2": KEPT_HEALTHY},
    ),
    (
        "a dead member whose Node still exists stays",
        (Row(0), Row(1), Row(2, orphan=True, healthy=False, node="m2")),
        READY,
        None,
        {"m2": KEPT_NODE_PRESENT},
    ),
    (
        "a dead member within the grace period stays",
        (Row(0), Row(1), Row(2, orphan=True, healthy=False, unhealthy_for=59.0)),
        READY,
        None,
        {"m2": KEPT_GRACE_PERIOD},
    ),
    (
        "nothing is removed before the Machine API works",
        (Row(0), Row(1), Row(2, orphan=True, healthy=False)),
        ClusterGuards(machine_api_functional=False, active=True, owns_member_machine=True),
        None,
        {"m2": KEPT_CLUSTER_NOT_READY},
    ),
    (
        "nothing is removed for an Inactive ControlPlane",
        (Row(0), Row(1), Row(2, orphan=True, healthy=False)),
        ClusterGuards(machine_api_functional=True, active=False, owns_member_machine=True),
        None,
        {"m2": KEPT_CLUSTER_NOT_READY},
    ),
    (
        "nothing is removed while the ControlPlane owns no Machine with a member",
        (Row(0, orphan=True), Row(1, orphan=True, healthy=False)),
        ClusterGuards(machine_api_functional=True, active=True, owns_member_machine=False),
        None,
        {"m0": KEPT_HEALTHY, "m1": KEPT_CLUSTER_NOT_READY},
    ),
    (
        "nothing is removed from a cluster that has lost quorum",
        (Row(0), Row(1, healthy=False), Row(2, orphan=True, healthy=False)),
        READY,
        None,
        {"m2": KEPT_CLUSTER_NOT_READY},
    ),
    (
        "two dead members of no Machine go one at a time, by label",
        (Row(0), Row(1), Row(2), Row(3, orphan=True, healthy=False), Row(4, orphan=True, healthy=False)),
        READY,
        "m3",
        {"m4": KEPT_ONE_AT_A_TIME},
    ),
    (
        "a started learner of no Machine that is dead is removed too",
        (Row(0), Row(1), Row(2), Row(3, orphan=True, healthy=False, learner=True)),
        READY,
        "m3",
        {},
    ),
    (
        "a dead member of no Machine is removed beside a healthy one, which stays",
        (Row(0), Row(1), Row(2, orphan=True), Row(3, orphan=True, healthy=False), Row(4)),
        READY,
        "m3",
        {"m2": KEPT_HEALTHY},
    ),
]


@pytest.mark.parametrize(
    ("rows", "guards", "removed", "kept"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_orphan_decision(
    rows: tuple[Row, ...], guards: ClusterGuards, removed: str | None, kept: dict[str, str]
) -> None:
    assert decide(rows, guards) == (removed, kept)


def test_the_removal_says_why_it_is_safe() -> None:
    states = [MemberState(etcd_member(i), f"m{i}", True) for i in range(2)]
    dead = MemberState(etcd_member(2), None, False)
    decision = orphan_decision([*states, dead], [MemberWithoutMachine(dead, None, 300.0)], READY, GRACE)
    assert decision.remove is dead
    assert "belongs to no Machine and no Node" in decision.why
    assert "2 healthy of 2 voters remain" in decision.why


def test_kept_counts_name_every_reason() -> None:
    dead = MemberState(etcd_member(2), None, False)
    decision = orphan_decision([dead], [MemberWithoutMachine(dead, "node-2", 300.0)], READY, GRACE)
    assert kept_counts(decision.kept) == {**dict.fromkeys(KEPT_REASONS, 0), KEPT_NODE_PRESENT: 1}


@pytest.mark.parametrize(
    ("running", "deleting_with_node", "worked"),
    [(True, False, True), (False, True, True), (False, False, False)],
    ids=[
        "a Running Machine: the Machine API works",
        "every Machine deleting or provisioning, one deleting had a Node: it has worked",
        "nothing provisioned yet (an install): it has not",
    ],
)
def test_machine_api_worked(running: bool, deleting_with_node: bool, worked: bool) -> None:
    assert machine_api_worked(running, deleting_with_node) is worked
