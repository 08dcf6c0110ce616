"""Pins the per-Machine conditions the etcd-quorum-hook controller writes: every reason of
EtcdMemberHealthy and EtcdQuorumHookHolding, and that a settled pass wants the same again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from api.machine import ETCD_MEMBER_REASONS
from controllers.conditions import Wanted
from controllers.etcd.client import Member
from controllers.etcd.membership import MemberState
from controllers.etcdquorum.machine_conditions import (
    hook_condition,
    inspection_failed,
    member_condition,
)
from controllers.etcdquorum.machine_conditions import wanted_conditions as etcd_wanted
from controllers.etcdquorum.report import Pass
from controllers.etcdquorum.rules import (
    HOOK_OWNER,
    WAIT_HEALTHY_VOTERS,
    WAIT_QUORUM_AFTER_REMOVAL,
    GuardedMachine,
    Wait,
)
from tests.support.controlplane_specs import local_spec
from tests.support.machine_rows import guarded_machine


def brief(c: Mapping[str, Any] | None) -> tuple[Any, ...] | None:
    return None if c is None else (c["type"], c["status"], c["reason"])


def of(wanted: Mapping[str, Wanted], name: str, type_: str) -> Mapping[str, Any]:
    """The wanted condition ``type_`` of Machine ``name`` (there must be one)."""
    found = wanted[name][type_]
    assert found is not None
    return found


# ----------------------------------------------------------------------------------------- EtcdMemberHealthy


def state(index: int, *, learner: bool = False, started: bool = True, healthy: bool = True) -> MemberState:
    member = Member(
        id=0x100 + index,
        name=f"m{index}" if started else "",
        peer_urls=(f"https://10.0.0.{index}:2380",),
        client_urls=(f"https://10.0.0.{index}:2379",) if started else (),
        is_learner=learner,
    )
    return MemberState(member, f"machine-{index}", healthy, None if healthy else "connection refused")


@pytest.mark.parametrize(
    ("members", "leader", "expected", "words"),
    [
        pytest.param(
            [state(1)],
            0x101,
            ("True", "Leader"),
            "etcd voter m1 (101) is healthy and leads the cluster",
            id="a healthy voter that leads is the Leader",
        ),
        pytest.param(
            [state(1)],
            0x102,
            ("True", "Voter"),
            "etcd voter m1 (101) is healthy",
            id="a healthy voter while another member leads is a Voter",
        ),
        pytest.param(
            [state(1)],
            0,
            ("True", "Voter"),
            "etcd voter m1 (101) is healthy",
            id="a healthy voter with no leader known is a Voter",
        ),
        pytest.param(
            [state(1, learner=True)],
            0x101,
            ("True", "Learner"),
            "etcd learner m1 (101) is healthy",
            id="a healthy learner is a Learner",
        ),
        pytest.param(
            [state(1, healthy=False)],
            0,
            ("False", "VoterUnhealthy"),
            "does not answer: connection refused",
            id="when the voter does not answer it is VoterUnhealthy",
        ),
        pytest.param(
            [state(1, learner=True, started=False, healthy=False)],
            0,
            ("False", "LearnerUnhealthy"),
            "etcd learner 101 (not started, https://10.0.0.1:2380) has not started",
            id="when the learner has not started it is LearnerUnhealthy",
        ),
        pytest.param(
            [state(1, learner=True, healthy=False)],
            0,
            ("False", "LearnerUnhealthy"),
            "does not answer",
            id="when the started learner does not answer it is LearnerUnhealthy",
        ),
        pytest.param(
            [],
            0x101,
            ("False", "MemberNotFound"),
            "no member of the etcd cluster belongs to this Machine",
            id="when no member belongs to the Machine it is MemberNotFound",
        ),
    ],
)
def test_etcd_member_healthy_says_found_role_health_and_leader(
    members: list[MemberState], leader: int, expected: tuple[str, str], words: str
) -> None:
    got = member_condition(members, leader)
    assert (got["type"], got["status"], got["reason"]) == ("EtcdMemberHealthy", *expected)
    assert words in got["message"]
    assert got["reason"] in ETCD_MEMBER_REASONS
    assert ("severity" in got) == (got["status"] == "False")


def test_a_machine_with_two_members_is_spoken_for_by_its_voter_and_names_the_other() -> None:
    got = member_condition([state(2, learner=True), state(1)], 0)
    assert got["reason"] == "Voter" and "other members of this Machine: m2 (102)" in got["message"]


def test_etcd_unreadable_is_unknown_never_a_guess() -> None:
    got = inspection_failed("no etcd endpoint")
    assert (got["status"], got["reason"], got["message"]) == (
        "Unknown",
        "InspectionFailed",
        "etcd cannot be read: no etcd endpoint",
    )


# ------------------------------------------------------------------------------------- EtcdQuorumHookHolding


def info(name: str = "machine-1", *, deleting: bool = False, hooked: bool = True) -> GuardedMachine:
    return guarded_machine(name, deleting=deleting, hook_owner=HOOK_OWNER if hooked else None)


HELD = Wait(
    "machine-1",
    WAIT_HEALTHY_VOTERS,
    "removing member m1 (101) would leave 2 healthy voters, fewer than the 3 desired: waiting for a "
    "replacement to be promoted",
)


@pytest.mark.parametrize(
    ("machine", "members", "waits", "functional", "expected", "words"),
    [
        pytest.param(
            info(),
            [state(1)],
            [],
            True,
            ("False", "Guarding"),
            "a deletion waits until etcd can lose",
            id="a Running Machine with the hook is Guarding",
        ),
        pytest.param(
            info(hooked=False),
            [],
            [],
            False,
            ("False", "HookNotPlaced"),
            "no control-plane Machine is Running",
            id="without the hook while no Machine is Running the hook is not placed",
        ),
        pytest.param(
            info(deleting=True),
            [state(1)],
            [HELD],
            True,
            ("True", WAIT_HEALTHY_VOTERS),
            "2 healthy voters",
            id="when a deleting Machine must wait the hook holds and says why",
        ),
        pytest.param(
            info(deleting=True),
            None,
            [HELD],
            True,
            ("True", WAIT_HEALTHY_VOTERS),
            "fewer than the 3",
            id="when etcd is unreadable a held deletion still says why it waits",
        ),
        pytest.param(
            info(deleting=True),
            [state(1)],
            [],
            True,
            ("True", "RemovingMember"),
            "which quorum now allows",
            id="when quorum allows it a deleting Machine's member is being removed",
        ),
        pytest.param(
            info(deleting=True, hooked=False),
            [],
            [],
            True,
            ("False", "Released"),
            "the drain goes on",
            id="when the hook is gone and no member is listed the Machine is released",
        ),
        pytest.param(
            info(deleting=True, hooked=False),
            [state(1)],
            [],
            True,
            ("False", "HookRemovedByOthers"),
            "while member m1 (101) is still listed",
            id="when others removed the hook while its member is listed it says so",
        ),
    ],
)
def test_the_hook_condition_says_held_and_why_or_released_or_not_needed(
    machine: GuardedMachine,
    members: list[MemberState] | None,
    waits: list[Wait],
    functional: bool,
    expected: tuple[str, str],
    words: str,
) -> None:
    got = hook_condition(machine, members, waits, api_functional=functional)
    assert got is not None
    assert (got["type"], got["status"], got["reason"]) == ("EtcdQuorumHookHolding", *expected)
    assert words in got["message"]


def test_the_hook_condition_joins_every_wait_of_the_machine_under_the_first_reason() -> None:
    second = Wait("machine-1", WAIT_QUORUM_AFTER_REMOVAL, "quorum too")
    got = hook_condition(info(deleting=True), [state(1)], [HELD, second], api_functional=True)
    assert (
        got is not None and got["reason"] == WAIT_HEALTHY_VOTERS and got["message"].endswith("; quorum too")
    )


def test_a_deleting_machine_without_hook_is_not_judged_while_etcd_is_unreadable() -> None:
    assert hook_condition(info(deleting=True, hooked=False), None, [], api_functional=True) is None


def etcd_pass(**fields: Any) -> Pass:
    infos = {
        "machine-1": info("machine-1"),
        "machine-2": info("machine-2", deleting=True),
        "machine-3": info("machine-3", deleting=True, hooked=False),
    }
    defaults: dict[str, Any] = {
        "cp": {"metadata": {"name": "cp", "namespace": "ns"}},
        "key": "ns/cp",
        "spec": local_spec(),
        "desired": 3,
        "machines": {name: {"metadata": {"name": name}} for name in infos},
        "infos": infos,
        "identities": {},
        "namespace_identities": [],
        "owned": [],
        "members": [],
        "owners": {},
        "states": [state(1), state(2)],
        "alarms": [],
        "waits": [Wait("machine-2", WAIT_HEALTHY_VOTERS, "held"), Wait("machine-1", "LearnerNotInSync", "x")],
        "leader": 0x101,
    }
    defaults.update(fields)
    return Pass(**defaults)


def test_a_pass_gives_each_machine_its_member_and_its_hook_and_the_same_again_when_nothing_moved() -> None:
    wanted = etcd_wanted(etcd_pass())
    assert {
        name: (of(wanted, name, "EtcdMemberHealthy")["reason"], brief(w.get("EtcdQuorumHookHolding")))
        for name, w in wanted.items()
    } == {
        "machine-1": ("Leader", ("EtcdQuorumHookHolding", "False", "Guarding")),
        "machine-2": ("Voter", ("EtcdQuorumHookHolding", "True", WAIT_HEALTHY_VOTERS)),
        "machine-3": ("MemberNotFound", ("EtcdQuorumHookHolding", "False", "Released")),
    }
    assert etcd_wanted(etcd_pass()) == wanted  # settled: nothing that moves by itself


def test_a_pass_that_cannot_read_etcd_says_unknown_and_leaves_the_unjudgeable_hook_alone() -> None:
    wanted = etcd_wanted(etcd_pass(), unreadable="connection refused")
    assert {of(wanted, name, "EtcdMemberHealthy")["reason"] for name in wanted} == {"InspectionFailed"}
    assert "EtcdQuorumHookHolding" not in wanted["machine-3"]
    assert of(wanted, "machine-2", "EtcdQuorumHookHolding")["status"] == "True"
