"""The measured kube-apiserver cases (tests/testdata/kube-apiserver/measured) against the rule the
tests hold servers to, and the embedded server's pieces that implement them, without a server."""

from __future__ import annotations

import copy
import json

import pytest

from apiserver import builtins as b
from apiserver.handlers import BOOKMARK_BEFORE_DEADLINE, _next_bookmark_time
from apiserver.registry import ResourceType
from runtime.jsoncodec import JSON
from tests.support.measured import (
    bookmark_problems,
    measured,
    measured_watch_cases,
    recorded_watch,
)
from tests.support.reference import transcript_dir


def rt(group: str, resource: str) -> ResourceType:
    return next(t for t in b.builtin_types() if (t.group, t.resource) == (group, resource))


def bookmark(rv: str) -> JSON:
    return {
        "type": "BOOKMARK",
        "object": {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": rv}},
    }


# ------------------------------------------------------------------------- the bookmark rule


def test_there_are_measured_watch_cases() -> None:
    assert measured_watch_cases() == [
        "watch-no-write-timeout3",
        "watch-written-during-timeout2",
        "watch-written-during-timeout3",
        "watch-written-during-timeout4",
    ]


@pytest.mark.parametrize("name", measured_watch_cases())
def test_every_measured_watch_keeps_the_rule(name: str) -> None:
    assert bookmark_problems(*recorded_watch(measured(name))) == []


def test_the_recorded_ten_second_watch_keeps_the_rule() -> None:
    # 14-watch-bookmarks-timeout10: Gadgets written during the watch, the newest at rv 320 (no
    # Gadget was written afterwards until it ended; see the replay plan in
    # tests/integration/test_reference_transcripts.py), one BOOKMARK at 8.2 s, end at 10.01 s.
    case = json.loads((transcript_dir() / "14-watch-bookmarks-timeout10.json").read_text())
    response = case["response"]
    events = list(zip(response["event_arrival_seconds"], response["events"], strict=True))
    assert bookmark_problems(events, response["stream_ended_by_server_after_seconds"], 10, "320") == []


@pytest.mark.parametrize(
    ("events", "lasted", "timeout", "newest", "complaint"),
    [
        # The earlier, wrong reading of the measurement: one BOOKMARK at the timeout.
        ([(3.02, bookmark("5"))], 3.02, 3, "5", "first BOOKMARK must arrive within [-0.2, 2.2]"),
        ([(1.0, bookmark("5")), (2.0, bookmark("5")), (2.5, bookmark("5"))], 3.0, 3, "5", "1-2 BOOKMARKs"),
        ([], 4.0, 4, "5", "1-2 BOOKMARKs"),
        ([(1.0, bookmark("5"))], 3.0, 3, None, "nothing was written"),
        ([(0.5, bookmark("5"))], 2.0, 2, "5", "its timeout is 2 s"),
        ([(1.0, bookmark("4"))], 3.0, 3, "5", "newest write's resourceVersion 5"),
        ([(1.0, bookmark("5"))], 1.5, 3, "5", "must end at its 3 s timeout"),
        ([(1.0, {"type": "ADDED", "object": {}})], 3.0, 3, None, "only BOOKMARKs"),
    ],
)
def test_the_rule_rejects(
    events: list[tuple[float, JSON]], lasted: float, timeout: int, newest: str | None, complaint: str
) -> None:
    problems = bookmark_problems(events, lasted, timeout, newest)
    assert any(complaint in p for p in problems), problems


def test_the_embedded_server_schedules_bookmarks_two_seconds_before_the_deadline() -> None:
    assert BOOKMARK_BEFORE_DEADLINE == 2.0
    # A 4 s watch started at 100: due at 102; once that has come, nothing more is due.
    assert _next_bookmark_time(100.0, 60.0, 104.0) == 102.0
    assert _next_bookmark_time(102.0, 60.0, 104.0) is None
    assert _next_bookmark_time(102.5, 60.0, 104.0) is None
    # A watch of 2 s or less has none at all.
    assert _next_bookmark_time(100.0, 60.0, 102.0) is None
    assert _next_bookmark_time(100.0, 60.0, 101.0) is None
    # A long watch: every interval, then the pre-deadline one.
    assert _next_bookmark_time(100.0, 60.0, 400.0) == 160.0
    assert _next_bookmark_time(340.0, 60.0, 400.0) == 398.0
    # No timeoutSeconds: every interval, indefinitely.
    assert _next_bookmark_time(100.0, 60.0, None) == 160.0


# ------------------------------------------------------------------- TaintNodesByCondition


NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


def test_a_created_node_gets_the_measured_not_ready_taint() -> None:
    case = measured("node-create-not-ready-taint")
    node = copy.deepcopy(case["request"]["body"])
    b.admit_create(rt("", "nodes"), node)
    assert node["spec"]["taints"] == case["response"]["body"]["spec"]["taints"]


@pytest.mark.parametrize(
    ("taints", "expected"),
    [
        (None, [NOT_READY]),
        ([], [NOT_READY]),
        # Same key and effect: already there, whatever its value or time (Taint.MatchTaint).
        (
            [{"key": "node.kubernetes.io/not-ready", "value": "x", "effect": "NoSchedule"}],
            [{"key": "node.kubernetes.io/not-ready", "value": "x", "effect": "NoSchedule"}],
        ),
        # Another effect is another taint: appended.
        (
            [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}],
            [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}, NOT_READY],
        ),
    ],
)
def test_the_not_ready_taint_is_added_unless_one_matches(
    taints: list[JSON] | None, expected: list[JSON]
) -> None:
    node: JSON = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n"}}
    if taints is not None:
        node["spec"] = {"taints": taints}
    b.admit_create(rt("", "nodes"), node)
    assert node["spec"]["taints"] == expected


def test_only_nodes_are_tainted() -> None:
    pod: JSON = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}, "spec": {}}
    b.admit_create(rt("", "pods"), pod)
    assert pod["spec"] == {}
