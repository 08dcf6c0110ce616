"""The rules every controller shares: times and conditions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers.common import (
    condition_status,
    conditions_of,
    find_condition,
    format_time,
    merge_conditions,
    now,
    parse_time,
    set_condition,
    transition_time,
)

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
EARLIER = format_time(T0 - timedelta(minutes=5))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-03-01T12:00:00Z", T0),
        ("2026-03-01T13:00:00+01:00", T0),
        ("2026-03-01T12:00:00.250000Z", T0 + timedelta(milliseconds=250)),
        (None, None),
        ("", None),
        (17, None),
        ("yesterday", None),
        # No offset: which clock it means is unknown, and it cannot be compared with aware times.
        ("2026-03-01T12:00:00", None),
    ],
)
def test_parse_time_reads_rfc3339_and_treats_anything_else_as_absent(text: Any, expected: Any) -> None:
    assert parse_time(text) == expected


def test_now_is_aware_utc_in_whole_seconds_and_round_trips() -> None:
    moment = now()
    assert moment.tzinfo is not None and moment.utcoffset() == timedelta(0)
    assert moment.microsecond == 0
    assert parse_time(format_time(moment)) == moment
    assert format_time(T0) == "2026-03-01T12:00:00Z"


def test_conditions_are_found_by_type_on_objects_and_in_lists() -> None:
    node = {"status": {"conditions": [{"type": "Ready", "status": "True"}, "junk"]}}
    assert conditions_of(node) == [{"type": "Ready", "status": "True"}]
    assert conditions_of(None) == [] and conditions_of({"status": None}) == []
    assert condition_status(node, "Ready") == "True"
    assert condition_status(node, "DiskPressure") is None
    assert condition_status(None, "Ready") is None
    assert find_condition(conditions_of(node), "Ready") == {"type": "Ready", "status": "True"}
    assert find_condition([], "Ready") is None


def test_transition_time_moves_only_with_the_status() -> None:
    previous = {"type": "A", "status": "True", "reason": "Old", "lastTransitionTime": EARLIER}
    assert transition_time(previous, "True", T0) == EARLIER
    assert transition_time(previous, "False", T0) == format_time(T0)
    assert transition_time(None, "True", T0) == format_time(T0)
    assert transition_time({"type": "A", "status": "True"}, "True", T0) == format_time(T0)


def test_set_condition_keeps_order_and_the_transition_time_of_an_unchanged_status() -> None:
    start = [{"type": "A", "status": "True", "lastTransitionTime": EARLIER}, {"type": "B", "status": "True"}]
    same = set_condition(start, "A", "True", T0, reason="Still")
    assert same == [
        {"type": "A", "status": "True", "reason": "Still", "lastTransitionTime": EARLIER},
        {"type": "B", "status": "True"},
    ]
    flipped = set_condition(start, "A", "False", T0, reason="R", message="m", severity="Warning")
    assert flipped[0] == {
        "type": "A",
        "status": "False",
        "severity": "Warning",
        "reason": "R",
        "message": "m",
        "lastTransitionTime": format_time(T0),
    }
    # Severity belongs to False conditions only; observedGeneration only when given.
    healthy = set_condition(start, "C", "True", T0, severity="Warning", observed_generation=4)
    assert [c["type"] for c in healthy] == ["A", "B", "C"]
    assert healthy[2] == {
        "type": "C",
        "status": "True",
        "observedGeneration": 4,
        "lastTransitionTime": format_time(T0),
    }
    assert start[0]["lastTransitionTime"] == EARLIER and "reason" not in start[0]


def test_merge_conditions_puts_computed_first_and_keeps_other_writers_conditions() -> None:
    previous = [
        {"type": "Foreign", "status": "True", "reason": "H", "lastTransitionTime": EARLIER},
        {"type": "Available", "status": "True", "reason": "A", "lastTransitionTime": EARLIER},
        {"type": "Degraded", "status": "False", "reason": "A", "lastTransitionTime": EARLIER},
    ]
    computed = [
        {"type": "Degraded", "status": "True", "reason": "C", "message": "y"},
        {"type": "Available", "status": "True", "reason": "B", "message": "x"},
        {"type": "New", "status": "False", "reason": "N", "message": ""},
    ]
    merged = merge_conditions(previous, computed, T0)
    assert merged == [
        {
            "type": "Degraded",
            "status": "True",
            "reason": "C",
            "message": "y",
            "lastTransitionTime": format_time(T0),
        },
        {"type": "Available", "status": "True", "reason": "B", "message": "x", "lastTransitionTime": EARLIER},
        {
            "type": "New",
            "status": "False",
            "reason": "N",
            "message": "",
            "lastTransitionTime": format_time(T0),
        },
        previous[0],
    ]
