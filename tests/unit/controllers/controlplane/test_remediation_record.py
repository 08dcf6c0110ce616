"""The records that carry a remediation across a crash onto its replacement
(controllers/controlplane/remediation_record.py): their wire form and the in-progress list."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from controllers.controlplane.remediation_record import (
    REMEDIATION_FOR_ANNOTATION,
    REMEDIATION_IN_PROGRESS_ANNOTATION,
    MachineState,
    RemediationRecord,
    awaiting_replacement,
    encode_pending,
    encode_record,
    lineage_of,
    pending_after,
    pending_of,
    recorded,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_record_round_trips_and_a_malformed_one_counts_as_absent() -> None:
    record = RemediationRecord("cp-abcde", T0, 2)
    machine = {"metadata": {"annotations": {REMEDIATION_FOR_ANNOTATION: encode_record(record)}}}
    assert lineage_of(machine) == record
    assert json.loads(encode_record(record)) == {
        "machine": "cp-abcde",
        "timestamp": "2026-01-01T00:00:00Z",
        "retryCount": 2,
    }
    for bad in (
        "not json",
        "[]",
        '{"machine": ""}',
        '{"machine": "x", "timestamp": "yesterday"}',
        '{"machine": "x", "timestamp": "2026-01-01T00:00:00Z", "retryCount": -1}',
    ):
        assert lineage_of({"metadata": {"annotations": {REMEDIATION_FOR_ANNOTATION: bad}}}) is None, bad
    assert lineage_of({"metadata": {}}) is None
    records = [record, RemediationRecord("cp-fghij", T0, 0)]
    cp = {"metadata": {"annotations": {REMEDIATION_IN_PROGRESS_ANNOTATION: encode_pending(records)}}}
    assert pending_of(cp) == records
    assert encode_pending([]) is None  # removes the annotation
    assert pending_of({"metadata": {"annotations": {REMEDIATION_IN_PROGRESS_ANNOTATION: "{}"}}}) == []


A = RemediationRecord("a", T0, 0)


B = RemediationRecord("b", T0 + timedelta(seconds=5), 1)


def state(
    name: str, *, deleting: bool = False, marked: bool = False, lineage: RemediationRecord | None = None
) -> MachineState:
    return MachineState(name, deleting, marked, lineage)


@pytest.mark.parametrize(
    ("machines", "kept"),
    [
        # 1. recorded, not deleted (the process died): kept while marked, so it is resumed ...
        ([state("a", marked=True), state("c")], [A]),
        # ... dropped once the Machine is healthy again: nothing was carried out.
        ([state("a"), state("c")], []),
        # 2. deleted, no replacement yet: kept, while it is deleting and once it is gone.
        ([state("a", deleting=True), state("c")], [A]),
        ([state("c")], [A]),
        # 3. the replacement was created with the record: done.
        ([state("a", deleting=True), state("a2", lineage=A)], []),
        # A record equal in name only is another remediation.
        ([state("a2", lineage=RemediationRecord("a", T0 - timedelta(hours=3), 0))], [A]),
    ],
    ids=[
        "a recorded Machine not deleted is kept while it stays marked",
        "a recorded Machine healthy again is dropped",
        "a deleting Machine's record is kept until its replacement exists",
        "a gone Machine's record is kept until its replacement exists",
        "the replacement created with the record completes it",
        "a record equal in name only is another remediation",
    ],
)
def test_the_in_progress_list_after_each_crash_point(
    machines: list[MachineState], kept: list[RemediationRecord]
) -> None:
    assert pending_after([A], machines) == kept


def test_two_remediations_awaiting_replacements_are_carried_oldest_first() -> None:
    """One remediation may start while another's replacement waits (its deletion held by the
    hook): each later create carries one record, the oldest first, and a resumed remediation is
    never listed twice."""
    pending = recorded(recorded([], A), B)
    assert pending == [A, B]
    assert recorded(pending, RemediationRecord("a", T0 + timedelta(minutes=1), 0))[0] == B
    assert awaiting_replacement(pending, present=["c"]) == A
    # a's remediation was recorded but a not deleted yet: the create is not its replacement
    assert awaiting_replacement(pending, present=["a", "c"]) == B
    assert awaiting_replacement(pending, present=["a", "b"]) is None
    after_first = pending_after(pending, [state("b", deleting=True), state("new", lineage=A)])
    assert after_first == [B]
