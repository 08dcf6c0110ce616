"""The one quorum formula (api/quorum.py): a strict majority, what is left of it, and whether it
holds without a member."""

from __future__ import annotations

import pytest

from api.quorum import fault_tolerance, quorum, quorum_kept_without, quorum_lost


def test_quorum_is_a_strict_majority_and_tolerance_what_is_left() -> None:
    assert [quorum(n) for n in range(1, 8)] == [1, 2, 2, 3, 3, 4, 4]
    assert [fault_tolerance(n) for n in range(0, 8)] == [0, 0, 0, 1, 1, 2, 2, 3]


@pytest.mark.parametrize(
    ("voters", "lost"),
    [
        ({}, False),
        ({1: True}, False),
        ({1: False}, True),
        ({1: True, 2: False, 3: True}, False),
        ({1: True, 2: False, 3: False}, True),
        ({1: True, 2: True, 3: False, 4: False}, True),
    ],
)
def test_quorum_lost(voters: dict[int, bool], lost: bool) -> None:
    assert quorum_lost(voters) is lost


@pytest.mark.parametrize(
    ("voters", "member", "kept"),
    [
        ({"a": True, "b": True, "c": True}, "a", True),  # 2 of 2 left
        ({"a": True, "b": True, "c": False}, "a", False),  # 1 of 2 left
        ({"a": True, "b": True, "c": False}, "c", True),  # removing the dead one: 2 of 2
        ({"a": True, "b": True, "c": True, "d": False}, "a", True),  # 2 of 3
        ({"a": True}, "a", False),  # nobody left
        ({"a": True, "b": True}, "x", True),  # not a voter: nothing changes
    ],
)
def test_quorum_kept_without(voters: dict[str, bool], member: str, kept: bool) -> None:
    assert quorum_kept_without(voters, member) is kept
