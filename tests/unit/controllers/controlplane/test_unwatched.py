"""Machines a ControlPlane controls that lost the control-plane role label
(controllers/controlplane/unwatched.py): when to look for them, which they are, what is said."""

from __future__ import annotations

from typing import Any

import pytest

from api.controlplane import MASTER_ROLE_LABEL
from controllers.controlplane.unwatched import (
    may_have_unwatched,
    unwatched_machines,
    unwatched_message,
    unwatched_news,
)

CP_UID = "cp-uid"


def machine(name: str, *, role: str | None = "master", owner: str | None = CP_UID) -> dict[str, Any]:
    labels = {} if role is None else {MASTER_ROLE_LABEL: role}
    refs = [] if owner is None else [{"kind": "ControlPlane", "name": "cp", "uid": owner, "controller": True}]
    return {"metadata": {"name": name, "labels": labels, "ownerReferences": refs}}


@pytest.mark.parametrize(
    ("hints", "look"),
    [
        pytest.param({}, False, id="when nothing hints at one it does not look"),
        pytest.param(
            {"unmanaged_nodes": True}, True, id="a control-plane Node without a Machine makes it look"
        ),
        pytest.param(
            {"members_without_machine": True}, True, id="an etcd member without a Machine makes it look"
        ),
        pytest.param(
            {"reported_replicas": 3}, True, id="fewer owned Machines than last counted makes it look"
        ),
        pytest.param({"reported_replicas": 2}, False, id="as many owned Machines as last counted is no hint"),
        pytest.param({"reported_replicas": None}, False, id="a status never written is no hint"),
    ],
)
def test_may_have_unwatched(hints: dict[str, Any], look: bool) -> None:
    facts: dict[str, Any] = {
        "unmanaged_nodes": False,
        "members_without_machine": False,
        "reported_replicas": 2,
        "owned": 2,
        **hints,
    }
    assert may_have_unwatched(**facts) is look


def test_the_unwatched_are_the_controlled_machines_without_the_master_role() -> None:
    listed = [
        machine("watched"),
        machine("unlabelled", role=None),
        machine("relabelled", role="worker"),
        machine("not-ours", role=None, owner="other-uid"),
        machine("nobodys", role=None, owner=None),
    ]
    assert unwatched_machines(CP_UID, listed) == ["relabelled", "unlabelled"]


def test_the_message_names_the_machines_and_the_label_to_put_back() -> None:
    message = unwatched_message(["a", "b"])
    assert "a, b" in message and f"{MASTER_ROLE_LABEL}=master" in message and "put the label back" in message


def test_the_event_goes_out_once_per_change() -> None:
    degraded = {"type": "Degraded", "status": "True", "message": unwatched_message(["a"])}
    cp = {"status": {"conditions": [degraded]}}
    assert not unwatched_news(cp, ["a"])
    assert unwatched_news(cp, ["a", "b"])
    assert unwatched_news({}, ["a"])
    assert not unwatched_news({}, [])
