"""The ControlPlane's status tells the truth: Available needs etcd quorum and a serving Machine,
Degraded counts unready Machines after a grace period, and a configuration problem holds scale-in
and rollout while unready Machines hold nothing. One table per rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api.controlplane import ControlPlaneSpec
from controllers.controlplane.etcdview import EtcdView
from controllers.controlplane.machines import EtcdFacts, MachineInfo, not_ready_since
from controllers.controlplane.reconciler import ControlPlaneReconciler
from controllers.controlplane.scale import next_step
from controllers.controlplane.status import (
    NOT_READY_GRACE,
    StatusInputs,
    compute_status,
    seconds_until_degraded,
    unready_beyond_grace,
)

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
LONG_AGO = NOW - timedelta(hours=1)


def m(name: str, **fields: Any) -> MachineInfo:
    """A Running Machine with a Ready Node and a healthy voting member, created an hour ago."""
    defaults: dict[str, Any] = {
        "created": LONG_AGO,
        "phase": "Running",
        "node_ready": True,
        "etcd_voter": True,
        "etcd_healthy": True,
        "failure_domain": name[-1],
    }
    defaults.update(fields)
    return MachineInfo(name=name, **defaults)


def unready(name: str, since: timedelta, **fields: Any) -> MachineInfo:
    """A Running Machine whose Node has been NotReady for ``since``."""
    return m(name, node_ready=False, not_ready_since=NOW - since, **fields)


def view(voters: int, healthy: list[str], *, learners: int = 0, reachable: bool = True) -> EtcdView:
    names = tuple(f"m{i}" for i in "abcdefg"[:voters]) + tuple(f"l{i}" for i in range(learners))
    if not reachable:
        return EtcdView(EtcdFacts(reachable=False, error="connection refused"))
    return EtcdView(
        EtcdFacts(member_names=names, learners=names[voters:]),
        voters=set(names[:voters]),
        healthy=set(healthy),
        with_member=set(names),
    )


def condition(machines: list[MachineInfo], type_: str, **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"replicas": 3, "selector": "s", "generation": 1, "machines": machines, "at": NOW}
    args.update(kw)
    status = compute_status(StatusInputs(**args))
    return next(c for c in status["conditions"] if c["type"] == type_)


ABC = [m("ma"), m("mb"), m("mc")]


# ---------------------------------------------------------------------------------------------- Available


@pytest.mark.parametrize(
    ("machines", "etcd", "expected"),
    [
        # stacked etcd, whole: True, and the message says what was judged
        (
            ABC,
            view(3, ["ma", "mb", "mc"]),
            ("True", "AsExpected", "etcd has quorum (3 of 3 voter(s) healthy); 3 Machine(s) serve"),
        ),
        # one voter down: quorum holds, one replica missing
        (
            [*ABC[:2], m("mc", etcd_healthy=False)],
            view(3, ["ma", "mb"]),
            (
                "True",
                "MissingReplicas",
                "Missing 1 available replica(s); etcd has quorum (2 of 3 voter(s) healthy); "
                "2 Machine(s) serve",
            ),
        ),
        # two of three voters down: one Machine still "available" by itself, but no quorum: False
        (
            [m("ma"), m("mb", etcd_healthy=False), m("mc", etcd_healthy=False)],
            view(3, ["ma"]),
            ("False", "EtcdQuorumLost", "etcd has no quorum (1 of 3 voter(s) healthy); 1 Machine(s) serve"),
        ),
        # learners do not count towards quorum
        (
            ABC[:1],
            view(1, ["ma"], learners=1),
            (
                "True",
                "MissingReplicas",
                "Missing 2 available replica(s); etcd has quorum (1 of 1 voter(s) healthy); "
                "1 Machine(s) serve",
            ),
        ),
        # a member without a Machine counts as a voter, never as a healthy one
        (
            ABC[:1],
            view(2, ["ma"]),
            ("False", "EtcdQuorumLost", "etcd has no quorum (1 of 2 voter(s) healthy); 1 Machine(s) serve"),
        ),
        # etcd that cannot be asked: no quorum we know of
        (
            ABC,
            view(3, [], reachable=False),
            ("False", "EtcdQuorumLost", "etcd cannot be asked: connection refused; 3 Machine(s) serve"),
        ),
        # quorum, but no Machine serves (every Node NotReady)
        (
            [m(n, node_ready=False) for n in ("ma", "mb", "mc")],
            view(3, ["ma", "mb", "mc"]),
            ("False", "NoMachineAvailable", "etcd has quorum (3 of 3 voter(s) healthy); 0 Machine(s) serve"),
        ),
        # external etcd: Machines only
        (ABC, None, ("True", "AsExpected", "external etcd, not checked; 3 Machine(s) serve")),
        (
            [m("ma", node_ready=False)],
            None,
            ("False", "NoMachineAvailable", "external etcd, not checked; 0 Machine(s) serve"),
        ),
        # nothing yet
        ([], None, ("False", "NoMachineAvailable", "no etcd yet; 0 Machine(s) serve")),
    ],
)
def test_available_needs_etcd_quorum_and_a_serving_machine(
    machines: list[MachineInfo], etcd: EtcdView | None, expected: tuple[str, str, str]
) -> None:
    available = condition(machines, "Available", etcd=etcd)
    assert (available["status"], available["reason"], available["message"]) == expected


# ---------------------------------------------------------------------------------------------- Degraded


JUST_OVER = NOT_READY_GRACE + timedelta(seconds=1)
JUST_UNDER = NOT_READY_GRACE - timedelta(seconds=1)


@pytest.mark.parametrize(
    ("machines", "expected"),
    [
        # a reboot inside the grace: not Degraded
        ([*ABC[:2], unready("mc", JUST_UNDER)], []),
        # the grace ends exactly now: Degraded (the bound is inclusive)
        ([*ABC[:2], unready("mc", NOT_READY_GRACE)], ["mc"]),
        ([*ABC[:2], unready("mc", JUST_OVER)], ["mc"]),
        # only the Machines past the grace are named
        ([ABC[0], unready("mb", JUST_UNDER), unready("mc", JUST_OVER)], ["mc"]),
        # an unready replacement beside three ready Machines costs nothing yet
        ([*ABC, unready("md", JUST_OVER)], []),
        # a Machine being deleted is not judged (its replacement is)
        ([*ABC[:2], unready("mc", JUST_OVER, deleting=True)], []),
        # a Machine whose Node never came is unready since its creation
        ([*ABC[:2], m("mc", phase="Provisioned", node_ready=False, created=NOW - JUST_OVER)], ["mc"]),
        ([*ABC[:2], m("mc", phase="Provisioned", node_ready=False, created=NOW - JUST_UNDER)], []),
        # a Machine not created yet is not judged here (Progressing reports the step)
        (ABC[:2], []),
    ],
)
def test_unready_machines_degrade_only_beyond_the_grace(
    machines: list[MachineInfo], expected: list[str]
) -> None:
    assert [u.name for u in unready_beyond_grace(3, machines, now=NOW)] == expected
    degraded = condition(machines, "Degraded")
    if expected:
        assert (degraded["status"], degraded["reason"]) == ("True", "MachinesNotReady")
        ready = sum(x.ready and not x.deleting for x in machines)
        assert degraded["message"].startswith(
            f"{ready} of 3 Machine(s) ready for more than 0:05:00; not ready: "
        )
        assert all(name in degraded["message"] for name in expected)
    else:
        assert (degraded["status"], degraded["reason"]) == ("False", "AsExpected")


def test_degraded_keeps_configuration_problems_first_and_names_every_one() -> None:
    degraded = condition(
        [*ABC[:2], unready("mc", JUST_OVER)],
        "Degraded",
        owned_by_others=["theirs"],
        unmanaged_nodes=["stray"],
    )
    assert degraded["reason"] == "MachinesAlreadyOwned"
    assert all(text in degraded["message"] for text in ("theirs", "stray", "mc since"))


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (None, None),
        (
            {
                "status": {
                    "conditions": [
                        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T11:00:00Z"}
                    ]
                }
            },
            None,
        ),
        (
            {
                "status": {
                    "conditions": [
                        {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T11:58:00Z"}
                    ]
                }
            },
            datetime(2026, 1, 1, 11, 58, tzinfo=UTC),
        ),
        (
            {
                "status": {
                    "conditions": [
                        {"type": "Ready", "status": "Unknown", "lastTransitionTime": "2026-01-01T11:57:00Z"}
                    ]
                }
            },
            datetime(2026, 1, 1, 11, 57, tzinfo=UTC),
        ),
        ({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, None),
    ],
)
def test_not_ready_since_reads_the_nodes_ready_transition(
    node: dict[str, Any] | None, expected: datetime | None
) -> None:
    assert not_ready_since(node) == expected


# ------------------------------------------------------------------------------------------ Degraded holds


def step(machines: list[MachineInfo], misconfigured: list[str], **kw: Any) -> tuple[str, str | None]:
    args: dict[str, Any] = {
        "replicas": 3,
        "strategy": "RollingUpdate",
        "max_surge": 1,
        "domains": ["a", "b", "c"],
    }
    args.update(kw)
    decided = next_step(machines=machines, misconfigured=misconfigured, **args)
    return decided.action, decided.reason


@pytest.mark.parametrize(
    ("machines", "kw", "free", "held"),
    [
        # scale-in: held by a configuration problem
        ([*ABC, m("md")], {}, ("delete", "ScalingDown"), ("wait", "HeldByConfiguration")),
        # rollout (maxSurge 1 creates the replacement, maxSurge 0 deletes first): held
        (
            [m("ma", outdated=True), *ABC[1:]],
            {},
            ("create", "ReplacingOutdated"),
            ("wait", "HeldByConfiguration"),
        ),
        (
            [m("ma", outdated=True), *ABC[1:]],
            {"max_surge": 0},
            ("delete", "ReplacingOutdated"),
            ("wait", "HeldByConfiguration"),
        ),
        # rebalancing is a rollout: held
        ([m("ma"), m("xa"), m("mb")], {}, ("create", "Rebalancing"), ("wait", "HeldByConfiguration")),
        # scale-up goes on: a member more never lowers the quorum margin
        (ABC[:2], {}, ("create", "ScalingUp"), ("create", "ScalingUp")),
        # nothing to do stays nothing to do
        (ABC, {}, ("none", "UpToDate"), ("none", "UpToDate")),
        # unready Machines hold nothing: an outdated NotReady Machine is still replaced
        (
            [unready("ma", JUST_OVER, outdated=True), *ABC[1:]],
            {},
            ("create", "ReplacingOutdated"),
            ("wait", "HeldByConfiguration"),
        ),
    ],
)
def test_a_configuration_problem_holds_scale_in_and_rollout(
    machines: list[MachineInfo], kw: dict[str, Any], free: tuple[str, str], held: tuple[str, str]
) -> None:
    assert step(machines, [], **kw) == free
    assert step(machines, ["theirs"], **kw) == held


def test_the_hold_names_the_problem() -> None:
    decided = next_step(
        replicas=3,
        strategy="RollingUpdate",
        max_surge=1,
        domains=["a", "b", "c"],
        machines=[*ABC, m("md")],
        misconfigured=["stray-node", "theirs"],
    )
    assert "stray-node, theirs" in decided.message and not decided.needs_preflight


def test_the_reconciler_reads_when_a_machines_node_stopped_being_ready() -> None:
    spec = ControlPlaneSpec.model_validate(
        {
            "replicas": 3,
            "template": {"spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec"}}}},
        }
    )
    machine = {
        "metadata": {"name": "ma", "creationTimestamp": "2026-01-01T10:00:00Z"},
        "status": {"phase": "Running", "nodeRef": {"name": "node-a"}},
    }
    node = {
        "status": {
            "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T11:58:00Z"}]
        }
    }
    info = ControlPlaneReconciler._info(spec, machine, {"node-a": node}, None)
    assert not info.ready and info.not_ready_since == datetime(2026, 1, 1, 11, 58, tzinfo=UTC)
    assert [u.name for u in unready_beyond_grace(1, [info], now=NOW)] == []
    assert [u.name for u in unready_beyond_grace(1, [info], now=NOW + timedelta(minutes=3))] == ["ma"]
    gone = ControlPlaneReconciler._info(spec, machine, {}, None)
    assert gone.not_ready_since is None and gone.created == datetime(2026, 1, 1, 10, tzinfo=UTC)


def test_the_reconciler_wakes_when_the_first_grace_ends() -> None:
    """No watch event marks the end of a grace: the reconciler requeues for it, so Degraded
    turns True when the grace ends, not up to a resync period later."""
    minute = timedelta(minutes=1)
    grace = timedelta(minutes=5)
    # two unready Machines: the one unready longer ends its grace first
    machines = [*ABC[:1], unready("mb", 2 * minute), unready("mc", 4 * minute)]
    assert seconds_until_degraded(3, machines, now=NOW, grace=grace) == 60.0
    # a grace already ended is reported now; the other one still needs a wake-up
    machines = [*ABC[:1], unready("mb", 6 * minute), unready("mc", 4 * minute)]
    assert seconds_until_degraded(3, machines, now=NOW, grace=grace) == 60.0
    # nothing pending: every grace ended, or enough Machines are ready, or the unready one is deleting
    assert seconds_until_degraded(3, [*ABC[:2], unready("mc", 6 * minute)], now=NOW, grace=grace) is None
    assert seconds_until_degraded(3, [*ABC, unready("md", minute)], now=NOW, grace=grace) is None
    assert seconds_until_degraded(3, [*ABC[:2], unready("mc", minute, deleting=True)], now=NOW) is None
