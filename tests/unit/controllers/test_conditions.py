"""How every controller writes conditions: the setter keeps other writers' conditions and the
transition time of an unchanged status, the change predicate ignores transition times, and one
message bound applies before the comparison."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers.common import format_time
from controllers.conditions import (
    MAX_MESSAGE,
    changes,
    condition,
    condition_status,
    conditions_of,
    differs,
    find_condition,
    set_conditions,
    transition_time,
)

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
EARLIER = format_time(T0 - timedelta(minutes=5))


def stored() -> list[dict[str, Any]]:
    return [
        {
            "type": "EtcdMemberStarted",
            "status": "True",
            "reason": "Started",
            "lastTransitionTime": "t-prov",
        },
        {"type": "UpToDate", "status": "True", "reason": "UpToDate", "lastTransitionTime": "t-old"},
        {"type": "HealthCheckSucceeded", "status": "True", "lastTransitionTime": "t-mhc"},
    ]


# ---------------------------------------------------------------------------------------------- readers


def test_conditions_are_found_by_type_on_objects_and_in_lists() -> None:
    node = {"status": {"conditions": [{"type": "Ready", "status": "True"}, "junk"]}}
    assert conditions_of(node) == [{"type": "Ready", "status": "True"}]
    assert conditions_of(None) == [] and conditions_of({"status": None}) == []
    assert condition_status(node, "Ready") == "True"
    assert condition_status(node, "DiskPressure") is None
    assert condition_status(None, "Ready") is None
    assert find_condition(conditions_of(node), "Ready") == {"type": "Ready", "status": "True"}
    assert find_condition([], "Ready") is None


# ---------------------------------------------------------------------------------------------- condition


def test_condition_keeps_severity_only_when_false_and_leaves_out_empty_fields() -> None:
    assert condition("X", "True", "R", "", "Warning") == {"type": "X", "status": "True", "reason": "R"}
    assert condition("X", "False", "R", "m", "Warning")["severity"] == "Warning"
    assert condition("X", "True") == {"type": "X", "status": "True"}
    assert condition("X", "True", observed_generation=4)["observedGeneration"] == 4


def test_a_message_is_cut_to_the_api_limit() -> None:
    long = "x" * (MAX_MESSAGE + 10)
    assert len(condition("X", "False", "R", long)["message"]) == MAX_MESSAGE


# ---------------------------------------------------------------------------------- the change predicate


@pytest.mark.parametrize(
    ("present", "wanted", "changed"),
    [
        pytest.param(
            {"type": "A", "status": "True", "reason": "R", "lastTransitionTime": "t"},
            condition("A", "True", "R"),
            False,
            id="a condition as stored is no change, whatever its transition time",
        ),
        pytest.param(
            {"type": "A", "status": "True", "reason": "R"},
            condition("A", "False", "R"),
            True,
            id="a new status is a change",
        ),
        pytest.param(
            {"type": "A", "status": "True", "reason": "R"},
            condition("A", "True", "S"),
            True,
            id="a new reason is a change",
        ),
        pytest.param(
            {"type": "A", "status": "True", "reason": "R", "message": "m"},
            condition("A", "True", "R", "n"),
            True,
            id="a new message is a change",
        ),
        pytest.param(
            {"type": "A", "status": "False", "reason": "R"},
            condition("A", "False", "R", "", "Warning"),
            True,
            id="a new severity is a change",
        ),
        pytest.param(
            {"type": "A", "status": "True", "observedGeneration": 3},
            condition("A", "True", observed_generation=4),
            True,
            id="a new observed generation is a change",
        ),
        pytest.param(
            {"type": "A", "status": "True", "reason": "R", "message": "x" * MAX_MESSAGE},
            {"type": "A", "status": "True", "reason": "R", "message": "x" * (MAX_MESSAGE + 5)},
            False,
            id="an over-long message is compared as it would be stored, so it is no change every pass",
        ),
        pytest.param(None, condition("A", "True"), True, id="a condition not stored yet is a change"),
        pytest.param({"type": "A", "status": "True"}, None, True, id="removing a stored type is a change"),
        pytest.param(None, None, False, id="removing an absent type is no change"),
    ],
)
def test_differs(present: dict[str, Any] | None, wanted: dict[str, Any] | None, changed: bool) -> None:
    assert differs(present, wanted) is changed


def test_changes_lists_only_the_wanted_types_that_differ() -> None:
    same = condition("UpToDate", "True", "UpToDate")
    assert changes(stored(), {"UpToDate": same, "Absent": None}) == {}
    outdated = condition("UpToDate", "False", "TemplateChanged", "outdated", "Warning")
    assert changes(stored(), {"UpToDate": outdated}) == {"UpToDate": outdated}
    assert changes(stored(), {"HealthCheckSucceeded": None}) == {"HealthCheckSucceeded": None}


# ---------------------------------------------------------------------------------------------- the setter


def test_transition_time_moves_only_with_the_status() -> None:
    previous = {"type": "A", "status": "True", "reason": "Old", "lastTransitionTime": EARLIER}
    assert transition_time(previous, "True", T0) == EARLIER
    assert transition_time(previous, "False", T0) == format_time(T0)
    assert transition_time(None, "True", T0) == format_time(T0)
    assert transition_time({"type": "A", "status": "True"}, "True", T0) == format_time(T0)


def test_set_conditions_sets_ours_by_type_and_keeps_every_other_writer_in_place() -> None:
    wanted = {
        "UpToDate": condition("UpToDate", "True", "UpToDate", "reworded"),
        "EtcdMemberHealthy": condition("EtcdMemberHealthy", "True", "Voter"),
    }
    result = set_conditions(stored(), wanted, T0)
    assert [c["type"] for c in result] == [
        "EtcdMemberStarted",
        "UpToDate",
        "HealthCheckSucceeded",
        "EtcdMemberHealthy",
    ]
    assert result[0] == stored()[0] and result[2] == stored()[2]
    assert result[1]["lastTransitionTime"] == "t-old"  # same status: no transition
    assert result[1]["message"] == "reworded"
    assert result[3]["lastTransitionTime"] == format_time(T0)


def test_set_conditions_moves_the_transition_time_only_with_the_status_and_removes_a_none() -> None:
    wanted = {"UpToDate": condition("UpToDate", "False", "RolloutAfter"), "HealthCheckSucceeded": None}
    result = set_conditions(stored(), wanted, T0)
    assert [c["type"] for c in result] == ["EtcdMemberStarted", "UpToDate"]
    assert result[1]["lastTransitionTime"] == format_time(T0)


def test_set_conditions_normalises_a_plain_dict_and_never_mutates_its_input() -> None:
    start = [{"type": "A", "status": "True", "lastTransitionTime": EARLIER}]
    result = set_conditions(
        start, {"A": {"type": "A", "status": "True", "reason": "", "severity": "Warning"}}, T0
    )
    assert result == [{"type": "A", "status": "True", "lastTransitionTime": EARLIER}]
    assert start == [{"type": "A", "status": "True", "lastTransitionTime": EARLIER}]


def test_a_settled_writer_sets_nothing_new() -> None:
    """What a controller does every pass: compute, compare, write only on change; once written,
    the same wanted conditions are no change."""
    wanted = {"UpToDate": condition("UpToDate", "False", "TemplateChanged", "outdated", "Warning")}
    written = set_conditions(stored(), wanted, T0)
    assert changes(written, wanted) == {}
    assert set_conditions(written, wanted, T0 + timedelta(hours=1)) == written
