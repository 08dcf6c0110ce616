"""The provider's conditions merged by type over a Machine's stored list (``merge_own_conditions``)."""

from __future__ import annotations

from providers.localmachine.reconciler import merge_own_conditions


def condition(type_: str, status: str, at: str, reason: str = "R") -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "lastTransitionTime": at}


def test_other_writers_conditions_stay_in_place_and_ours_are_set_by_type() -> None:
    stored = [
        condition("EtcdMemberStarted", "True", "t0"),
        condition("UpToDate", "False", "t1"),  # another writer's, added after our read
        condition("Drainable", "True", "t0"),
    ]
    ours = [condition("EtcdMemberStarted", "True", "t9", "Started"), condition("Drainable", "False", "t9")]
    assert merge_own_conditions(stored, ours) == [
        # Status unchanged: the stored transition time stands, the rest is ours.
        condition("EtcdMemberStarted", "True", "t0", "Started"),
        condition("UpToDate", "False", "t1"),
        # Status changed: our transition time.
        condition("Drainable", "False", "t9"),
    ]


def test_a_condition_new_to_the_machine_is_appended() -> None:
    stored = [condition("HealthCheckSucceeded", "True", "t1")]
    assert merge_own_conditions(stored, [condition("Terminable", "False", "t2")]) == [
        condition("HealthCheckSucceeded", "True", "t1"),
        condition("Terminable", "False", "t2"),
    ]
    assert merge_own_conditions(None, []) == []
