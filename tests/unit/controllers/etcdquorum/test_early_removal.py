"""The maxSurge-0 early removal (controllers/etcdquorum/early_removal.py), case by case: when a
marked Machine's healthy voter goes before its replacement votes, and why it waits otherwise."""

from __future__ import annotations

import dataclasses

import pytest

from controllers.etcd.membership import MemberState
from controllers.etcdquorum.early_removal import early_removal_decision, removes_member_first
from controllers.etcdquorum.rules import (
    WAIT_HEALTHY_VOTERS,
    WAIT_LEARNER_PENDING,
    WAIT_MEMBERS_UNHEALTHY,
    WAIT_ONE_CHANGE_PER_PASS,
    WAIT_OTHER_HOOKS,
    removal_decision,
)
from tests.support.controlplane_specs import local_spec
from tests.support.machine_rows import MemberRow as M
from tests.support.machine_rows import guarded_machine
from tests.support.machine_rows import quorum_cluster as cluster

# ---------------------------------------------------------------------------------------------- maxSurge 0


def decide_early(
    rows: tuple[M, ...],
    *,
    marked: tuple[int, ...] = (0,),
    other_hooks: dict[int, tuple[str, ...]] | None = None,
    gone_early: tuple[str, ...] = (),
    desired: int = 3,
    surge_zero: bool = True,
) -> tuple[str | None, dict[str | None, str]]:
    members, machines = cluster(*rows)
    for index in marked:
        name = f"m{index}"
        machines[name] = dataclasses.replace(
            machines[name],
            remove_member_first=True,
            other_hooks=(other_hooks or {}).get(index, ()),
        )
    for name in gone_early:
        machines[name] = dataclasses.replace(
            guarded_machine(name, deleting=True, hook_owner=None), remove_member_first=True
        )
    decision = early_removal_decision(members, machines, desired, surge_zero=surge_zero)
    return (decision.member.machine if decision.member else None), {
        w.machine: w.reason for w in decision.waits
    }


EARLY_CASES = [
    # (id, rows, keyword arguments, removed, {machine: wait reason})
    (
        "a marked Machine's healthy voter goes early when the other voters are healthy",
        (M(0, deleting=True), M(1), M(2)),
        {},
        "m0",
        {},
    ),
    (
        "an unmarked deletion (a user's, a health check's) keeps the add-then-remove order",
        (M(0, deleting=True), M(1), M(2)),
        {"marked": ()},
        None,
        {},
    ),
    (
        "under maxSurge 1 the mark changes nothing",
        (M(0, deleting=True), M(1), M(2)),
        {"surge_zero": False},
        None,
        {},
    ),
    (
        "a member unhealthy elsewhere holds it, saying which",
        (M(0, deleting=True), M(1, healthy=False), M(2)),
        {},
        None,
        {"m0": WAIT_MEMBERS_UNHEALTHY},
    ),
    (
        "a learner pending holds it",
        (M(0, deleting=True), M(1), M(2), M(3, learner=True)),
        {},
        None,
        {"m0": WAIT_LEARNER_PENDING},
    ),
    (
        "an extra lifecycle hook on the Machine holds it: removing the member would free no host",
        (M(0, deleting=True), M(1), M(2)),
        {"other_hooks": {0: ("preTerminate/storage.example.com/detach",)}},
        None,
        {"m0": WAIT_OTHER_HOOKS},
    ),
    (
        "two deletions at once: one goes, the other waits its turn",
        (M(0, deleting=True), M(1, deleting=True), M(2), M(3), M(4)),
        {"marked": (0, 1), "desired": 5},
        "m0",
        {"m1": WAIT_ONE_CHANGE_PER_PASS},
    ),
    (
        "with a member already gone early and its replacement not voting, the next one waits",
        (M(1, deleting=True), M(2), M(3), M(4)),
        {"marked": (1,), "gone_early": ("m0",), "desired": 4},
        None,
        {"m1": WAIT_ONE_CHANGE_PER_PASS},
    ),
    (
        "voters below desired: never below desired - 1",
        (M(0, deleting=True), M(1), M(2)),
        {"desired": 4},
        None,
        {"m0": WAIT_HEALTHY_VOTERS},
    ),
    (
        "a dead marked member is the ordinary rule's, not an early removal",
        (M(0, deleting=True, healthy=False), M(1), M(2)),
        {},
        None,
        {},
    ),
]


@pytest.mark.parametrize(
    ("rows", "kwargs", "removed", "waits"), [c[1:] for c in EARLY_CASES], ids=[c[0] for c in EARLY_CASES]
)
def test_early_removal_decision(
    rows: tuple[M, ...], kwargs: dict[str, object], removed: str | None, waits: dict[str | None, str]
) -> None:
    assert decide_early(rows, **kwargs) == (removed, waits)  # type: ignore[arg-type]


def test_a_replacement_promoted_first_is_the_ordinary_rules_case() -> None:
    """Four voters for three desired (the replacement already votes): the ordinary removal takes
    the marked member, so the early rule never needs to run."""
    members, machines = cluster(M(0, deleting=True), M(1), M(2), M(3))
    machines["m0"] = dataclasses.replace(machines["m0"], remove_member_first=True)
    assert removal_decision(members, machines, 3).member is not None
    assert (
        early_removal_decision(members, machines, 3, surge_zero=True).waits[0].reason == WAIT_HEALTHY_VOTERS
    )


def test_the_removal_says_the_fault_tolerance_it_costs() -> None:
    members, machines = cluster(M(0, deleting=True), M(1), M(2))
    machines["m0"] = dataclasses.replace(machines["m0"], remove_member_first=True)
    decision = early_removal_decision(members, machines, 3, surge_zero=True)
    assert isinstance(decision.member, MemberState)
    assert "2 healthy of 2 voters remain (desired 3, quorum 2)" in decision.why


@pytest.mark.parametrize(
    ("strategy", "replicas", "expected"),
    [
        ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}}, 3, True),
        ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}}, 1, False),
        ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}, 3, False),
        ({"type": "OnDelete"}, 3, False),
    ],
    ids=["maxSurge 0 with 3 replicas", "maxSurge 0 with 1 replica surges", "maxSurge 1", "OnDelete"],
)
def test_removes_member_first(strategy: dict[str, object], replicas: int, expected: bool) -> None:
    assert removes_member_first(local_spec(replicas=replicas, strategy=strategy)) is expected
