"""The leadership hand-off before a removal (controllers/etcdquorum/handoff.py), case by case."""

from __future__ import annotations

import pytest

from controllers.etcdquorum.handoff import MAX_HANDOFF_ATTEMPTS, leadership_handoff
from controllers.etcdquorum.rules import (
    machine_info,
)
from tests.support.machine_rows import MemberRow as M
from tests.support.machine_rows import quorum_cluster as cluster

# ---------------------------------------------------------------------------------------- leadership hand-off

T0, T1, T2, T3 = (f"2026-01-01T1{h}:00:00Z" for h in range(4))
"""Creation times, oldest first."""


def handoff(
    rows: tuple[M, ...], leaving: int, leader: int | None, failed_attempts: int = 0
) -> tuple[str | None, bool]:
    """(Machine of the member leadership moves to, whether the removal waits) when the member of
    ``m<leaving>`` is removed and ``m<leader>``'s member leads (None: no member reports a leader)."""
    members, machines = cluster(*rows)
    by_machine = {m.machine: m for m in members}
    leader_id = by_machine[f"m{leader}"].member.id if leader is not None else 0
    decision = leadership_handoff(
        by_machine[f"m{leaving}"], leader_id, members, machines, failed_attempts=failed_attempts
    )
    return (decision.target.machine if decision.target else None), decision.wait is not None


HANDOFF_CASES = [
    # (id, rows, leaving, leader, failed attempts, (target, waits))
    (
        "the leaving member leads: leadership goes to the oldest voter that stays",
        (M(0, deleting=True, created=T0), M(1, created=T2), M(2, created=T1), M(3, created=T3)),
        0,
        0,
        0,
        ("m2", False),
    ),
    (
        "another member leads: no move",
        (M(0, deleting=True, created=T0), M(1, created=T1), M(2, created=T2), M(3, created=T3)),
        0,
        2,
        0,
        (None, False),
    ),
    (
        "the oldest other voter is itself leaving: the next oldest that stays",
        (
            M(0, deleting=True, created=T2),
            M(1, deleting=True, created=T0),
            M(2, created=T1),
            M(3, created=T3),
        ),
        0,
        0,
        0,
        ("m2", False),
    ),
    (
        "the only other voter that stays is marked for remediation: no target, removed as is",
        (M(0, deleting=True, created=T0), M(1, deleting=True, created=T1), M(2, created=T2, marked=True)),
        0,
        0,
        0,
        (None, False),
    ),
    (
        "a target marked for remediation is passed over for a younger one",
        (M(0, deleting=True), M(1, created=T0, marked=True), M(2, created=T1), M(3, created=T2)),
        0,
        0,
        0,
        ("m2", False),
    ),
    (
        "an unhealthy voter is passed over",
        (M(0, deleting=True), M(1, created=T0, healthy=False), M(2, created=T1), M(3, created=T2)),
        0,
        0,
        0,
        ("m2", False),
    ),
    (
        "no healthy voter stays: no target, removed as is",
        (M(0, deleting=True), M(1, deleting=True), M(2, healthy=False)),
        0,
        0,
        0,
        (None, False),
    ),
    (
        "a learner is never a target",
        (M(0, deleting=True), M(1, learner=True, created=T0), M(2, created=T1), M(3, created=T2)),
        0,
        0,
        0,
        ("m2", False),
    ),
    (
        "a learner leaving needs no hand-off",
        (M(0, deleting=True, learner=True), M(1), M(2), M(3)),
        0,
        1,
        0,
        (None, False),
    ),
    (
        "the leader fails its health read: it cannot hand on, removed as is",
        (M(0, deleting=True, healthy=False), M(1), M(2), M(3)),
        0,
        0,
        0,
        (None, False),
    ),
    (
        "no member reports a leader: the removal waits",
        (M(0, deleting=True), M(1), M(2), M(3)),
        0,
        None,
        0,
        (None, True),
    ),
    (
        "no member has reported a leader for the bounded number of passes: removed as is",
        (M(0, deleting=True), M(1), M(2), M(3)),
        0,
        None,
        MAX_HANDOFF_ATTEMPTS,
        (None, False),
    ),
    (
        "a failed hand-off is tried again on the next pass",
        (M(0, deleting=True), M(1, created=T0), M(2, created=T1), M(3)),
        0,
        0,
        MAX_HANDOFF_ATTEMPTS - 1,
        ("m1", False),
    ),
    (
        "a hand-off that failed for the bounded number of passes: removed as is (one election)",
        (M(0, deleting=True), M(1, created=T0), M(2, created=T1), M(3)),
        0,
        0,
        MAX_HANDOFF_ATTEMPTS,
        (None, False),
    ),
    (
        "equal ages: by Machine name",
        (M(0, deleting=True), M(2, created=T1), M(1, created=T1), M(3, created=T1)),
        0,
        0,
        0,
        ("m1", False),
    ),
    (
        "an unknown age comes after every known one",
        (M(0, deleting=True), M(1), M(2, created=T3), M(3)),
        0,
        0,
        0,
        ("m2", False),
    ),
]


@pytest.mark.parametrize(
    ("rows", "leaving", "leader", "failed", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in HANDOFF_CASES],
)
def test_leadership_handoff(
    rows: tuple[M, ...], leaving: int, leader: int | None, failed: int, expected: tuple[str | None, bool]
) -> None:
    assert handoff(rows, leaving, leader, failed) == expected


def test_a_handoff_says_where_leadership_goes_and_a_wait_names_the_member() -> None:
    members, machines = cluster(M(0, deleting=True), M(1, created=T0), M(2, created=T1), M(3))
    moved = leadership_handoff(members[0], members[0].member.id, members, machines)
    assert moved.why == f"leadership handed to {members[1].label} first"
    waiting = leadership_handoff(members[0], 0, members, machines)
    assert waiting.wait is not None and members[0].label in waiting.wait


def test_machine_info_reads_the_age_and_the_remediation_mark() -> None:
    marked = {
        "metadata": {"name": "m0", "creationTimestamp": T1},
        "status": {
            "conditions": [
                {"type": "HealthCheckSucceeded", "status": "False"},
                {"type": "OwnerRemediated", "status": "False"},
            ]
        },
    }
    info = machine_info(marked)
    assert (info.created, info.remediation_marked) == (T1, True)
    recovered = {**marked, "status": {"conditions": [{"type": "HealthCheckSucceeded", "status": "True"}]}}
    assert machine_info(recovered).remediation_marked is False
