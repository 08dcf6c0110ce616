"""The ControlPlane controller's decision functions, one table per rule."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api.controlplane import ControlPlaneSpec
from api.failuredomains import FAILURE_DOMAIN_LABEL, machine_domain
from api.machine import REASON_TEMPLATE_CHANGED
from controllers.common import format_time, merge_conditions, parse_time
from controllers.controlplane.machines import EtcdFacts, MachineInfo, classify_machines
from controllers.controlplane.placement import (
    SPEC_HASH_ANNOTATION,
    choose_failure_domain,
    desired_machine,
    is_outdated,
    outdated_reason,
    rollout_after_due,
    seconds_until_rollout_after,
    select_for_scale_in,
    template_hash,
)
from controllers.controlplane.requeue import next_look
from controllers.controlplane.scale import (
    CHECK_ETCD_MEMBER_LISTS_AGREE,
    CHECK_ETCD_MEMBERS_MATCH,
    CHECK_ETCD_NO_ALARMS,
    CHECK_ETCD_NO_PENDING_LEARNER,
    CHECK_ETCD_REACHABLE,
    CHECK_ETCD_VOTERS_REACHABLE,
    CHECK_MACHINES_READY,
    PreflightFailure,
    etcd_facts_for_preflight,
    next_step,
    preflight,
)
from controllers.controlplane.status import StatusInputs, compute_status
from controllers.controlplane.step import Step
from runtime.reconcile import Result

T0 = datetime(2026, 1, 1, tzinfo=UTC)
UID = "cp-uid"
SELECTOR = {"matchLabels": {"machine.openshift.io/cluster-api-machine-role": "master"}}
MASTER = {"machine.openshift.io/cluster-api-machine-role": "master"}


def spec(**extra: Any) -> ControlPlaneSpec:
    raw: dict[str, Any] = {
        "replicas": 3,
        "template": {"spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "size": 1}}}},
        "failureDomains": [
            {"name": "a", "providerSpec": {"value": {"failureDomain": "a"}}},
            {"name": "b", "providerSpec": {"value": {"failureDomain": "b"}}},
        ],
    }
    raw.update(extra)
    return ControlPlaneSpec.model_validate(raw)


def m(name: str, age: int = 0, **fields: Any) -> MachineInfo:
    """A healthy Running Machine with a voting member, created ``age`` minutes before T0 + 1h."""
    defaults: dict[str, Any] = {
        "created": T0 + timedelta(hours=1) - timedelta(minutes=age),
        "phase": "Running",
        "node_ready": True,
        "etcd_voter": True,
        "etcd_healthy": True,
        "failure_domain": "a",
    }
    defaults.update(fields)
    return MachineInfo(name=name, **defaults)


# ---------------------------------------------------------------------------------------------- ownership


def raw_machine(
    name: str, labels: dict[str, str] | None = None, owner: str | None = None, **meta: Any
) -> Any:
    metadata: dict[str, Any] = {
        "name": name,
        "labels": labels if labels is not None else dict(MASTER),
        **meta,
    }
    if owner is not None:
        metadata["ownerReferences"] = [{"uid": owner, "controller": True, "kind": "X", "name": "x"}]
    return {"metadata": metadata, "spec": {}}


def test_classify_machines_owned_adoptable_and_owned_by_others() -> None:
    machines = [
        raw_machine("mine", owner=UID),
        raw_machine("mine-relabelled", labels={}, owner=UID),
        raw_machine("orphan"),
        raw_machine("orphan-dying", deletionTimestamp="2026-01-01T00:00:00Z"),
        raw_machine("theirs", owner="other"),
        raw_machine("worker", labels={"machine.openshift.io/cluster-api-machine-role": "worker"}),
        raw_machine("worker-theirs", labels={}, owner="other"),
    ]
    result = classify_machines(UID, SELECTOR, machines)
    assert [x["metadata"]["name"] for x in result.owned] == ["mine", "mine-relabelled"]
    assert [x["metadata"]["name"] for x in result.adoptable] == ["orphan"]
    assert [x["metadata"]["name"] for x in result.owned_by_others] == ["theirs"]


# ---------------------------------------------------------------------------------------------- outdated


def created_machine(
    s: ControlPlaneSpec, domain: str, created: str = "2026-01-01T00:00:00Z"
) -> dict[str, Any]:
    wanted = desired_machine(s, domain)
    return {
        "metadata": {
            "name": "x",
            "creationTimestamp": created,
            "labels": {**wanted["labels"], FAILURE_DOMAIN_LABEL: domain},
            "annotations": {**wanted["annotations"], SPEC_HASH_ANNOTATION: template_hash(s, domain)},
        },
        "spec": {"providerSpec": wanted["providerSpec"]},
    }


def test_desired_machine_merges_the_domain_over_the_template() -> None:
    s = spec()
    assert desired_machine(s, "b")["providerSpec"]["value"] == {
        "kind": "LocalMachineProviderSpec",
        "size": 1,
        "failureDomain": "b",
    }
    assert desired_machine(s, "b")["labels"] == MASTER  # defaults to the selector's matchLabels
    assert template_hash(s, "a") != template_hash(s, "b")


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({}, None),
        (
            {
                "template": {
                    "spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "size": 2}}}
                }
            },
            "its spec differs from the template",
        ),
        (
            {
                "template": {
                    "metadata": {"labels": MASTER, "annotations": {"team": "x"}},
                    "spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "size": 1}}},
                }
            },
            "its spec differs from the template",
        ),
        (
            {
                "failureDomains": [
                    {"name": "a", "providerSpec": {"value": {"failureDomain": "a", "rack": 7}}},
                    {"name": "b"},
                ]
            },
            "its spec differs from the template",
        ),
        (
            {"failureDomains": [{"name": "b"}, {"name": "c"}]},
            "failure domain a is not in spec.failureDomains",
        ),
        (
            {"rolloutAfter": "2026-01-02T00:00:00Z"},
            "it was created before spec.rolloutAfter, which has passed",
        ),
        ({"rolloutAfter": "2025-12-31T00:00:00Z"}, None),
    ],
)
def test_is_outdated(change: dict[str, Any], why: str | None) -> None:
    machine = created_machine(spec(), "a")
    assert is_outdated(spec(**change), machine, now=datetime(2026, 6, 1, tzinfo=UTC)) == why


ROLLOUT_AFTER = "2026-03-01T12:00:00Z"
AT_ROLLOUT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("created", "now", "outdated"),
    [
        # Before the moment: nothing is outdated by it, however old the Machine.
        ("2026-01-01T00:00:00Z", AT_ROLLOUT - timedelta(hours=1), False),
        ("2026-01-01T00:00:00Z", AT_ROLLOUT - timedelta(seconds=1), False),
        # At and after the moment: Machines created before it are outdated ...
        ("2026-01-01T00:00:00Z", AT_ROLLOUT, True),
        ("2026-03-01T11:59:59Z", AT_ROLLOUT + timedelta(hours=2), True),
        # ... their replacements, created after it, are not (the rollout ends) ...
        ("2026-03-01T12:00:01Z", AT_ROLLOUT + timedelta(seconds=5), False),
        # ... nor one created in the very second it names (whole seconds, as the API stores).
        ("2026-03-01T12:00:00Z", AT_ROLLOUT + timedelta(seconds=5), False),
        # A sub-second clock reading in that second is still the moment itself.
        ("2026-01-01T00:00:00Z", AT_ROLLOUT + timedelta(microseconds=999_999), True),
    ],
)
def test_rollout_after_outdates_only_machines_created_before_it_once_it_has_passed(
    created: str, now: datetime, outdated: bool
) -> None:
    s = spec(rolloutAfter=ROLLOUT_AFTER)
    assert rollout_after_due(s, parse_time(created), now=now) is outdated
    why = is_outdated(s, created_machine(s, "a", created=created), now=now)
    assert (why == "it was created before spec.rolloutAfter, which has passed") is outdated
    assert why is None or outdated


def test_rollout_after_ignores_sub_seconds_of_its_own_value() -> None:
    s = ControlPlaneSpec.model_validate(
        {**spec().model_dump(by_alias=True, exclude_none=True), "rolloutAfter": "2026-03-01T12:00:00.600Z"}
    )
    assert rollout_after_due(s, parse_time("2026-03-01T12:00:00Z"), now=AT_ROLLOUT) is False
    assert rollout_after_due(s, parse_time("2026-03-01T11:59:59Z"), now=AT_ROLLOUT) is True


def test_no_rollout_after_or_no_creation_time_outdates_nothing() -> None:
    assert rollout_after_due(spec(), parse_time("2026-01-01T00:00:00Z"), now=AT_ROLLOUT) is False
    assert rollout_after_due(spec(rolloutAfter=ROLLOUT_AFTER), None, now=AT_ROLLOUT) is False


@pytest.mark.parametrize(
    ("now", "wait"),
    [
        (AT_ROLLOUT - timedelta(hours=1), 3600.0),
        (AT_ROLLOUT - timedelta(seconds=15), 15.0),
        (AT_ROLLOUT - timedelta(seconds=1), 1.0),
        (AT_ROLLOUT - timedelta(microseconds=1), 1.0),  # same second: never a busy loop
        (AT_ROLLOUT, None),  # due: the rollout itself requeues
        (AT_ROLLOUT + timedelta(minutes=5), None),
    ],
)
def test_seconds_until_rollout_after(now: datetime, wait: float | None) -> None:
    assert seconds_until_rollout_after(spec(rolloutAfter=ROLLOUT_AFTER), now=now) == wait
    assert seconds_until_rollout_after(spec(), now=now) is None


def rolled_infos(s: ControlPlaneSpec, created: dict[str, str], now: datetime) -> list[MachineInfo]:
    """The Machines as the reconciler sees them at ``now``: outdated by :func:`is_outdated`."""
    return [
        m(
            name,
            created=parse_time(at),
            failure_domain=domain,
            outdated=is_outdated(s, created_machine(s, domain, created=at), now=now) is not None,
        )
        for (name, at), domain in zip(created.items(), ["a", "b", "a"], strict=True)
    ]


OLD_SET = {"m1": "2026-01-01T00:00:00Z", "m2": "2026-01-01T00:00:01Z", "m3": "2026-01-01T00:00:02Z"}


def test_a_future_rollout_after_replaces_nothing_and_counts_every_machine_updated() -> None:
    s = spec(rolloutAfter=ROLLOUT_AFTER)
    infos = rolled_infos(s, OLD_SET, AT_ROLLOUT - timedelta(hours=1))
    step = next_step(replicas=3, strategy="RollingUpdate", max_surge=1, domains=["a", "b"], machines=infos)
    assert step.action not in ("create", "delete"), step
    assert status_of(infos)["updatedReplicas"] == 3


def test_a_passed_rollout_after_replaces_each_old_machine_once_then_nothing() -> None:
    s = spec(rolloutAfter=ROLLOUT_AFTER)
    infos = rolled_infos(s, OLD_SET, AT_ROLLOUT)
    step = next_step(replicas=3, strategy="RollingUpdate", max_surge=1, domains=["a", "b"], machines=infos)
    assert step.action == "create" and status_of(infos)["updatedReplicas"] == 0
    # Replacements made during the rollout, one in the very second it names: none is outdated.
    replaced = {"r1": "2026-03-01T12:00:00Z", "r2": "2026-03-01T12:00:40Z", "r3": "2026-03-01T12:01:30Z"}
    infos = rolled_infos(s, replaced, AT_ROLLOUT + timedelta(hours=1))
    step = next_step(replicas=3, strategy="RollingUpdate", max_surge=1, domains=["a", "b"], machines=infos)
    assert step.action not in ("create", "delete"), step
    assert status_of(infos)["updatedReplicas"] == 3


RESYNC = (60.0, 66.0)
"""The resync period of these cases, 60 s, and its longest jittered value."""


@pytest.mark.parametrize(
    ("step_requeue", "paused", "rollout_after_in", "expected"),
    [
        (None, False, 3600.0, RESYNC),  # capped by the resync period
        (None, False, 15.0, 15.0),  # the rolloutAfter moment comes first
        (Result(requeue_after=5.0), False, 15.0, 5.0),  # a step's own wait comes first
        (Result(requeue_after=5.0), False, 2.0, 2.0),
        (Result(), False, 15.0, 15.0),  # nothing to wait for but the moment
        (Result(), False, None, RESYNC),
        (Result(), True, 15.0, 0.0),  # paused: nothing until the next change
    ],
)
def test_next_look_is_the_earliest_of_the_step_the_resync_and_the_moments(
    step_requeue: Result | None,
    paused: bool,
    rollout_after_in: float | None,
    expected: float | tuple[float, float],
) -> None:
    low, high = expected if isinstance(expected, tuple) else (expected, expected)
    result = next_look(step_requeue, resync_period=60.0, paused=paused, rollout_after_in=rollout_after_in)
    assert low <= result.requeue_after <= high
    # an unready Machine's grace ending is a moment like rolloutAfter's
    graced = next_look(
        step_requeue, resync_period=60.0, paused=paused, rollout_after_in=None, degraded_in=rollout_after_in
    )
    assert low <= graced.requeue_after <= high


def test_control_planes_created_together_come_due_for_their_resync_apart() -> None:
    """Up to 10 % longer, never shorter: many ControlPlanes created together spread their polls
    of etcd instead of queueing them at one moment for ever."""
    looks = [
        next_look(None, resync_period=60.0, paused=False, rollout_after_in=None).requeue_after
        for _ in range(50)
    ]
    assert all(60.0 <= look <= 66.0 for look in looks)
    assert len(set(looks)) > 40


def test_an_adopted_machine_without_the_annotation_is_compared_by_content() -> None:
    s = spec()
    machine = created_machine(s, "b")
    del machine["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
    del machine["metadata"]["labels"][FAILURE_DOMAIN_LABEL]
    assert is_outdated(s, machine, now=T0) is None
    machine["spec"]["providerSpec"]["value"]["size"] = 5
    assert is_outdated(s, machine, now=T0) is not None


def test_an_adopted_machine_keeps_its_domain_after_the_template_changes() -> None:
    """Without the label, the domain whose own providerSpec the Machine carries names it, once
    the whole providerSpec no longer matches the template; a Machine that fits two domains has none."""
    s = spec()
    machine = created_machine(s, "b")
    del machine["metadata"]["labels"][FAILURE_DOMAIN_LABEL]
    assert machine_domain(s, machine) == "b"
    bigger = {"kind": "LocalMachineProviderSpec", "size": 2}
    changed = spec(template={"spec": {"providerSpec": {"value": bigger}}})
    assert machine_domain(changed, machine) == "b"
    assert outdated_reason(changed, machine, now=T0) == (
        REASON_TEMPLATE_CHANGED,
        "its spec differs from the template",
    )
    catch_all = {"name": "any", "providerSpec": {"value": {"kind": "LocalMachineProviderSpec"}}}
    both = spec(
        template={"spec": {"providerSpec": {"value": bigger}}},
        failureDomains=[*s.model_dump(by_alias=True)["failureDomains"], catch_all],
    )
    assert machine_domain(changed, machine) == "b" and machine_domain(both, machine) is None


# ---------------------------------------------------------------------------------------------- placement


@pytest.mark.parametrize(
    ("domains", "machines", "expected"),
    [
        ([], [], None),
        (["b", "a"], [], "a"),  # tie: alphabetical
        (["a", "b"], [m("1", failure_domain="a")], "b"),
        (["a", "b", "c"], [m("1", failure_domain="a"), m("2", failure_domain="c")], "b"),
        (["a", "b"], [m("1", failure_domain="a"), m("2", failure_domain="b", deleting=True)], "b"),
        (["a", "b"], [m("1", failure_domain="b"), m("2", failure_domain="gone")], "a"),
    ],
)
def test_choose_failure_domain(domains: list[str], machines: list[MachineInfo], expected: str | None) -> None:
    assert choose_failure_domain(domains, machines) == expected


@pytest.mark.parametrize(
    ("machines", "prefer", "expected"),
    [
        # the replaced Machine's domain wins a tie for fewest (a rollout keeps the spread) ...
        ([m("b1", failure_domain="b"), m("c1", failure_domain="c")], ["a"], "a"),
        ([m("a1", failure_domain="a"), m("b1", failure_domain="b")], ["a"], "c"),  # ... not more
        ([m("a1", failure_domain="a"), m("b1", failure_domain="b"), m("c1", failure_domain="c")], ["b"], "b"),
        # a domain no longer configured is never preferred; the first preferred one among the fewest
        ([m("a1", failure_domain="a"), m("b1", failure_domain="b")], ["gone", "c"], "c"),
        ([m("a1", failure_domain="a")], [None, "c", "b"], "c"),
    ],
)
def test_a_replacement_keeps_its_domain_only_on_a_tie(
    machines: list[MachineInfo], prefer: list[str | None], expected: str
) -> None:
    assert choose_failure_domain(["a", "b", "c"], machines, prefer=prefer) == expected


@pytest.mark.parametrize(
    ("machines", "expected"),
    [
        # class order: outdated+annotation > annotation > outdated+unhealthy > outdated > any
        ([m("any"), m("out", outdated=True), m("ann", delete_annotation=True)], "ann"),
        ([m("out", age=50, outdated=True, node_ready=False), m("ann", delete_annotation=True)], "ann"),
        ([m("ann", delete_annotation=True), m("both", outdated=True, delete_annotation=True)], "both"),
        ([m("out", age=50, outdated=True), m("sick", outdated=True, node_ready=False)], "sick"),
        ([m("sick", node_ready=False), m("out", outdated=True)], "out"),
        # a replacement that never became Ready, outdated by a newer template, before older ones
        (
            [
                m("old", age=50, outdated=True),
                m("new", phase="Provisioning", node_ready=False, outdated=True),
            ],
            "new",
        ),
        ([m("sick", marked_unhealthy=True), m("out", outdated=True, marked_unhealthy=True)], "out"),
        # an outdated Machine whose etcd voter fails its health read, though its Node is Ready,
        # before older outdated ones: the preflight refuses any other delete beside it
        (
            [
                m("old", age=50, outdated=True),
                m("etcd-down", age=1, outdated=True, etcd_healthy=False),
            ],
            "etcd-down",
        ),
        (
            [
                m("old", age=50, outdated=True),
                m("learner", outdated=True, etcd_voter=False, etcd_healthy=False),
            ],
            "old",
        ),
        # within a class: most populated domain, then oldest
        (
            [m("a1", age=1), m("a2", age=2), m("b1", age=50, failure_domain="b")],
            "a2",
        ),
        ([m("young", age=1), m("old", age=9)], "old"),
        ([m("gone", deleting=True, delete_annotation=True), m("x")], "x"),
    ],
)
def test_select_for_scale_in(machines: list[MachineInfo], expected: str) -> None:
    chosen = select_for_scale_in(machines)
    assert chosen is not None and chosen.name == expected


# ---------------------------------------------------------------------------------------------- preflight


HEALTHY = EtcdFacts(member_names=("m1", "m2", "m3"))


@pytest.mark.parametrize(
    ("machines", "etcd", "checks"),
    [
        ([m("m1"), m("m2"), m("m3")], HEALTHY, []),
        ([m("m1"), m("m2"), m("m3")], None, []),
        ([m("m1"), m("m2", node_ready=False), m("m3")], HEALTHY, [CHECK_MACHINES_READY]),
        ([m("m1"), m("m2", phase="Provisioning"), m("m3")], None, [CHECK_MACHINES_READY]),
        ([m("m1"), m("m2", deleting=True, node_ready=False), m("m3")], HEALTHY, []),
        ([m("m1"), m("m2"), m("m3")], EtcdFacts(reachable=False, error="refused"), [CHECK_ETCD_REACHABLE]),
        ([m("m1"), m("m2"), m("m3")], EtcdFacts(member_names=("m1", "m2")), [CHECK_ETCD_MEMBERS_MATCH]),
        (
            [m("m1"), m("m2"), m("m3")],
            EtcdFacts(member_names=("m1", "m2", "m3", "ghost")),
            [CHECK_ETCD_MEMBERS_MATCH],
        ),
        (
            [m("m1"), m("m2"), m("m3")],
            EtcdFacts(member_names=("m1", "m2", "m3"), disagreeing=("https://m3",)),
            [CHECK_ETCD_MEMBER_LISTS_AGREE],
        ),
        (
            [m("m1"), m("m2"), m("m3")],
            EtcdFacts(member_names=("m1", "m2", "m3"), alarms=("NOSPACE@m1",)),
            [CHECK_ETCD_NO_ALARMS],
        ),
        (
            [m("m1"), m("m2"), m("m3")],
            EtcdFacts(member_names=("m1", "m2", "m3"), unhealthy_voters=(("m2", "timeout"),)),
            [CHECK_ETCD_VOTERS_REACHABLE],
        ),
        (
            [m("m1"), m("m2"), m("m3")],
            EtcdFacts(member_names=("m1", "m2", "m3"), learners=("m3",)),
            [CHECK_ETCD_NO_PENDING_LEARNER],
        ),
    ],
)
def test_preflight_names_every_failed_check(
    machines: list[MachineInfo], etcd: EtcdFacts | None, checks: list[str]
) -> None:
    failures = preflight(machines, etcd, hosting_etcd=[x.name for x in machines])
    assert [f.check for f in failures] == checks
    assert all(f.message for f in failures)


@pytest.mark.parametrize(
    ("etcd", "owns_machines", "checks"),
    [
        # spec.etcd.endpoints name an etcd with members, none of them this ControlPlane's: the
        # first create would join voters it cannot count.
        (EtcdFacts(member_names=("old-0", "old-1", "old-2")), False, [CHECK_ETCD_MEMBERS_MATCH]),
        # Nothing answers there yet: a new cluster, its first Machine bootstraps etcd.
        (EtcdFacts(reachable=False, error="connection refused"), False, []),
        # With Machines owned, etcd that cannot be asked stops every step.
        (EtcdFacts(reachable=False, error="connection refused"), True, [CHECK_ETCD_REACHABLE]),
    ],
    ids=["members-without-machines", "bootstrap", "owned-unreachable"],
)
def test_with_no_machine_owned_etcd_is_checked_when_it_answers(
    etcd: EtcdFacts, owns_machines: bool, checks: list[str]
) -> None:
    machines = [m("m1")] if owns_machines else []
    facts = etcd_facts_for_preflight(etcd, owns_machines=owns_machines)
    failures = preflight(machines, facts, hosting_etcd=[x.name for x in machines], desired=3)
    assert [f.check for f in failures] == checks
    if checks == [CHECK_ETCD_MEMBERS_MATCH]:
        assert failures[0].message == "member(s) without a Machine: old-0, old-1, old-2"


def test_a_learner_that_can_never_be_promoted_does_not_hold_the_scale_in() -> None:
    """Scaled to 1 while a third member joined: 2 voters and a learner; the hook promotes no
    further (desired + 1 = 2), so only a scale-in step moves on."""
    machines = [m("m1"), m("m2"), m("m3")]
    etcd = EtcdFacts(member_names=("m1", "m2", "m3"), learners=("m3",))
    assert not preflight(machines, etcd, hosting_etcd=["m1", "m2", "m3"], desired=1)
    # While the learner may still be promoted, the step waits for it.
    for desired in (2, 3):
        failures = preflight(machines, etcd, hosting_etcd=["m1", "m2", "m3"], desired=desired)
        assert [f.check for f in failures] == [CHECK_ETCD_NO_PENDING_LEARNER]


# ---------------------------------------------------------------------------------------------- next step


def step(machines: list[MachineInfo], replicas: int = 3, **kw: Any) -> Step:
    args: dict[str, Any] = {"strategy": "RollingUpdate", "max_surge": 1, "domains": ["a", "b", "c"]}
    args.update(kw)
    return next_step(replicas=replicas, machines=machines, **args)


def abc(**fields: Any) -> list[MachineInfo]:
    return [m(f"m{d}", failure_domain=d, **fields) for d in "abc"]


@pytest.mark.parametrize(
    ("machines", "kw", "expected"),
    [
        # scale out into the emptiest domain, one at a time
        ([m("ma", failure_domain="a")], {}, ("create", "b", None)),
        ([], {"replicas": 1}, ("create", "a", None)),
        ([m("ma"), m("mb", failure_domain="b")], {"domains": []}, ("create", None, None)),
        # scale in: the scale-in choice
        ([*abc(), m("old", age=30, failure_domain="a")], {}, ("delete", None, "old")),
        # a deleting Machine is replaced in its domain, never above replicas + 1
        ([*abc()[:2], m("mc", failure_domain="c", deleting=True)], {}, ("create", "c", None)),
        (
            [
                *abc()[:1],
                m("x", failure_domain="b", deleting=True),
                m("y", failure_domain="c", deleting=True),
            ],
            {},
            ("create", "b", None),
        ),
        (
            [
                *abc()[:2],
                m("x", failure_domain="b", deleting=True),
                m("y", failure_domain="c", deleting=True),
            ],
            {},
            ("wait", None, None),
        ),
        ([*abc(), m("d", deleting=True)], {}, ("wait", None, None)),
        # rolling update, maxSurge 1: create in the outdated Machine's domain first
        ([m("ma", age=5, outdated=True), *abc()[1:]], {}, ("create", "a", "ma")),
        # ... then delete the outdated one
        (
            [m("ma", age=5, outdated=True), m("new", failure_domain="a"), *abc()[1:]],
            {},
            ("delete", None, "ma"),
        ),
        # maxSurge 0 with 3 replicas: delete first
        ([m("ma", age=5, outdated=True), *abc()[1:]], {"max_surge": 0}, ("delete", None, "ma")),
        # maxSurge 0 with 1 replica would lose etcd: surge anyway
        ([m("ma", outdated=True)], {"max_surge": 0, "replicas": 1}, ("create", "a", "ma")),
        # OnDelete: outdated Machines are only reported
        ([m("ma", outdated=True), *abc()[1:]], {"strategy": "OnDelete"}, ("none", None, None)),
        (
            [*abc()[:2], m("mc", failure_domain="c", deleting=True)],
            {"strategy": "OnDelete"},
            ("create", "c", None),
        ),
        # rebalancing a new domain through a replacement
        (
            [m("a1", failure_domain="a"), m("a2", failure_domain="a"), m("b1", failure_domain="b")],
            {},
            ("create", "c", None),
        ),
        (
            [m("a1", failure_domain="a"), m("a2", age=5, failure_domain="a"), m("b1", failure_domain="b")],
            {"max_surge": 0},
            ("delete", None, "a2"),
        ),
        (abc(), {}, ("none", None, None)),
        # ... and its replacement goes to the emptiest domain, not back to the crowded one
        (
            [
                m("a1", failure_domain="a"),
                m("a2", failure_domain="a", deleting=True),
                m("b1", failure_domain="b"),
            ],
            {"max_surge": 0},
            ("create", "c", None),
        ),
        # a, a, b over two domains is as even as 3 Machines get: nothing moves
        ([m("a1"), m("a2"), m("b1", failure_domain="b")], {"domains": ["a", "b"]}, ("none", None, None)),
        # a removed domain: its Machine goes first (maxSurge 0), its replacement to a configured one
        (
            [m("ma"), m("mb", failure_domain="b"), m("mc", failure_domain="c", outdated=True)],
            {"max_surge": 0, "domains": ["a", "b"]},
            ("delete", None, "mc"),
        ),
        (
            [m("ma"), m("mb", failure_domain="b"), m("mc", failure_domain="c", deleting=True)],
            {"max_surge": 0, "domains": ["a", "b"]},
            ("create", "a", None),
        ),
        # maxSurge 1 out of a crowded domain: the replacement goes where the spread is thinnest
        (
            [
                m("a1", age=5, outdated=True),
                m("a2", outdated=True),
                m("b1", failure_domain="b", outdated=True),
            ],
            {},
            ("create", "c", "a1"),
        ),
        # a new template while the previous one's replacement is still provisioning: it goes first
        (
            [
                *(dataclasses.replace(x, outdated=True) for x in abc()),
                m("r", phase="Provisioning", outdated=True),
            ],
            {},
            ("delete", None, "r"),
        ),
        # maxSurge 0 rollout of an even spread: each replacement back in its own domain
        (
            [m("ma", deleting=True, outdated=True), m("mb", failure_domain="b", outdated=True), *abc()[2:]],
            {"max_surge": 0},
            ("create", "a", None),
        ),
    ],
)
def test_next_step(machines: list[MachineInfo], kw: dict[str, Any], expected: tuple[Any, ...]) -> None:
    result = step(machines, **kw)
    assert (result.action, result.domain, result.machine) == expected
    assert result.message


def _take_step(machines: list[MachineInfo], taken: Step, serial: int) -> list[MachineInfo]:
    """The world after ``taken``, with the etcd-quorum hook letting a deleting Machine go once
    ``replicas`` others exist (its replacement votes)."""
    if taken.action == "delete":
        return [dataclasses.replace(x, deleting=True) if x.name == taken.machine else x for x in machines]
    if taken.action == "create":
        machines = [*machines, m(f"new{serial}", age=-serial, failure_domain=taken.domain)]
    return [x for x in machines if not x.deleting] if taken.action == "wait" else machines


@pytest.mark.parametrize(
    ("start", "domains", "spread"),
    [
        (["a", "a", "b"], ["a", "b", "c"], ["a", "b", "c"]),  # a domain added
        (["a", "a", "a"], ["a", "b", "c"], ["a", "b", "c"]),
        (["a", "b", "c"], ["a", "b"], ["a", "a", "b"]),  # a domain removed
        (["a", "b", "c"], ["b", "c", "d"], ["b", "c", "d"]),  # one replaced by another
    ],
)
def test_rebalance_under_max_surge_zero_converges_then_stays_still(
    start: list[str], domains: list[str], spread: list[str]
) -> None:
    machines = [
        m(f"m{i}", age=10 - i, failure_domain=d, outdated=d not in domains) for i, d in enumerate(start)
    ]
    for serial in range(20):
        taken = step(machines, max_surge=0, domains=domains)
        if taken.action == "none":
            break
        machines = _take_step(machines, taken, serial)
        assert sum(not x.deleting for x in machines) <= 3, machines
        assert len(machines) <= 4, machines
    else:
        raise AssertionError(f"no convergence: {machines}")
    assert sorted(str(x.failure_domain) for x in machines) == spread
    assert step(machines, max_surge=0, domains=domains).action == "none"


def delete(name: str) -> Step:
    return Step("delete", "ScalingDown", f"Deleting Machine {name}", machine=name)


def replace(name: str) -> Step:
    return Step("create", "ReplacingOutdated", f"Replacing outdated Machine {name}", domain="a", machine=name)


SCALE_UP = Step("create", "ScalingUp", "Scaling up", domain="a")


@pytest.mark.parametrize(
    ("machines", "etcd", "taken", "checks"),
    [
        # a delete does not count its own Machine: NotReady Node, dead member, no member, learner
        ([m("m1"), m("m2", node_ready=False), m("m3")], HEALTHY, delete("m2"), []),
        (
            [m("m1"), m("m2", etcd_healthy=False), m("m3")],
            EtcdFacts(member_names=("m1", "m2", "m3"), unhealthy_voters=(("m2", "timeout"),)),
            delete("m2"),
            [],
        ),
        (
            [*abc(), m("r", phase="Provisioning", etcd_voter=False)],
            EtcdFacts(member_names=("ma", "mb", "mc")),
            delete("r"),
            [],
        ),
        (
            [*abc(), m("r", node_ready=False, etcd_voter=False, etcd_learner=True)],
            EtcdFacts(member_names=("ma", "mb", "mc", "r"), learners=("r",)),
            delete("r"),
            [],
        ),
        # ... but every other Machine and member still counts
        ([m("m1"), m("m2", node_ready=False), m("m3")], HEALTHY, delete("m1"), [CHECK_MACHINES_READY]),
        ([m("m1"), m("m2", node_ready=False), m("m3")], HEALTHY, SCALE_UP, [CHECK_MACHINES_READY]),
        (
            [*abc(), m("r", node_ready=False, etcd_voter=False, etcd_learner=True)],
            EtcdFacts(member_names=("ma", "mb", "mc", "r"), learners=("r",)),
            delete("ma"),
            [CHECK_MACHINES_READY, CHECK_ETCD_NO_PENDING_LEARNER],
        ),
        # the quorum rule holds: no voter goes unless the voters left keep a healthy quorum
        (
            [m("m1"), m("m2", etcd_healthy=False), m("m3", etcd_healthy=False)],
            EtcdFacts(
                member_names=("m1", "m2", "m3"), unhealthy_voters=(("m2", "timeout"), ("m3", "timeout"))
            ),
            delete("m2"),
            [CHECK_ETCD_VOTERS_REACHABLE, CHECK_ETCD_VOTERS_REACHABLE],
        ),
        # a maxSurge-1 create does not count the Node of the Machine it replaces, only its member
        ([m("m1"), m("m2", node_ready=False), m("m3")], HEALTHY, replace("m2"), []),
        # ... once it is Running: one still provisioning may be joining etcd
        (
            [m("m1"), m("m2", phase="Provisioning", etcd_voter=False), m("m3")],
            EtcdFacts(member_names=("m1", "m3")),
            replace("m2"),
            [CHECK_MACHINES_READY],
        ),
        (
            [m("m1"), m("m2", etcd_healthy=False), m("m3")],
            EtcdFacts(member_names=("m1", "m2", "m3"), unhealthy_voters=(("m2", "timeout"),)),
            replace("m2"),
            [CHECK_ETCD_VOTERS_REACHABLE],
        ),
    ],
)
def test_the_preflight_does_not_count_the_machine_the_step_takes_away(
    machines: list[MachineInfo], etcd: EtcdFacts, taken: Step, checks: list[str]
) -> None:
    hosting = [x.name for x in machines if x.running]
    failures = preflight(machines, etcd, hosting_etcd=hosting, desired=3, step=taken)
    assert [f.check for f in failures] == checks
    named = {x.name for x in machines if not x.ready or not x.etcd_healthy or x.etcd_learner} - {
        taken.machine
    }
    for failure in failures:
        assert any(name in failure.message for name in named | {str(taken.machine)}), failure


WITH_R = ["ma", "mb", "mc", "r"]
FOUR = EtcdFacts(member_names=tuple(WITH_R))


def test_a_rollback_replaces_the_failing_replacement_first() -> None:
    """After a template change, maxSurge 1 made a replacement that never got a Ready Node; the
    user rolled the template back: the replacement is the one outdated Machine and goes first,
    and its own readiness does not hold its delete."""
    machines = [*abc(), m("r", node_ready=False, outdated=True)]  # r's member votes
    taken = step(machines)
    assert (taken.action, taken.machine) == ("delete", "r")
    assert not preflight(machines, FOUR, hosting_etcd=WITH_R, desired=3, step=taken)
    # before the rollback it held the rollout: the outdated old Machine may not go
    before = [*(dataclasses.replace(x, outdated=True) for x in abc()), m("r", node_ready=False)]
    held = step(before)
    assert held.action == "delete" and held.machine != "r"
    failures = preflight(before, FOUR, hosting_etcd=WITH_R, desired=3, step=held)
    assert [(f.check, "r" in f.message) for f in failures] == [(CHECK_MACHINES_READY, True)]


def test_under_max_surge_zero_a_rollback_removes_the_replacement_that_never_voted() -> None:
    """maxSurge 0 deleted old Machine ma first; the etcd-quorum hook holds it (its member a
    healthy voter) until a replacement votes. The replacement r never came up (no member) and the
    user rolled the template back: r is outdated, and waiting for ma's deletion would wait for
    ever. r goes first, behind a preflight that does not hold r's own state against it; the
    voters do not change, and the up-to-date replacement follows."""
    old = m("ma", failure_domain="a", deleting=True)
    r = m("r", failure_domain="a", phase="Provisioning", node_ready=False, etcd_voter=False,
          etcd_healthy=False, outdated=True)  # fmt: skip
    machines = [old, m("mb", failure_domain="b"), m("mc", failure_domain="c"), r]
    taken = step(machines, max_surge=0)
    assert (taken.action, taken.machine) == ("delete", "r"), taken
    assert "r" in taken.message and "ma" in taken.message
    assert not preflight(machines, EtcdFacts(member_names=("ma", "mb", "mc")),
                         hosting_etcd=["ma", "mb", "mc", "r"], desired=3, step=taken)  # fmt: skip
    # once r is deleting, the next step waits for the two deletions, then replaces ma in its domain
    gone = [old, machines[1], machines[2], dataclasses.replace(r, deleting=True)]
    assert step(gone, max_surge=0).action == "wait"
    replaced = step([old, machines[1], machines[2]], max_surge=0)
    assert (replaced.action, replaced.domain) == ("create", "a")
    # an up-to-date replacement that fails is the health check's to remediate, not this rule's:
    # the same template would fail the same way
    current = [old, machines[1], machines[2], dataclasses.replace(r, outdated=False)]
    assert step(current, max_surge=0).action == "wait"
    # a replacement whose member votes is no stalled replacement: the held deletion proceeds
    voting = [old, machines[1], machines[2], m("r", failure_domain="a", outdated=True)]
    assert step(voting, max_surge=0).action == "wait"


# ---------------------------------------------------------------------------------------------- status


def status_of(machines: list[MachineInfo], **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"replicas": 3, "selector": "role=master", "generation": 4, "machines": machines}
    args.update(kw)
    return compute_status(StatusInputs(**args))


def condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == type_)


def test_status_counts_and_running_phase() -> None:
    status = status_of(abc())
    assert {k: status[k] for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")} == {
        "replicas": 3,
        "updatedReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
    }
    assert status["unavailableReplicas"] == 0
    assert (status["phase"], status["observedGeneration"], status["selector"]) == (
        "Running",
        4,
        "role=master",
    )
    assert condition(status, "Available")["status"] == "True"
    assert condition(status, "Degraded")["status"] == "False"


def test_status_availability_needs_a_healthy_voter_and_never_goes_negative() -> None:
    machines = [*abc()[:2], m("mc", failure_domain="c", etcd_voter=False)]
    status = status_of(machines)
    assert status["availableReplicas"] == 2 and status["readyReplicas"] == 3
    assert condition(status, "Available")["message"].startswith("Missing 1 available replica(s); ")
    assert status_of([*abc(), m("extra")], replicas=1)["unavailableReplicas"] == 0


@pytest.mark.parametrize(
    ("machines", "kw", "phase"),
    [
        ([], {}, "Pending"),
        ([m("x", phase="Provisioning", node_ready=False)], {}, "Provisioning"),
        ([m("x", outdated=True), *abc()[1:]], {}, "Updating"),
        (abc()[:2], {}, "Scaling"),
        (abc(), {"deleting": True}, "Deleting"),
        (abc(), {"remediating": True}, "Remediating"),
        (abc(), {"owned_by_others": ["theirs"]}, "Degraded"),
        ([*abc()[:2], m("f", phase="Failed", node_ready=False)], {}, "Degraded"),
    ],
)
def test_status_phase(machines: list[MachineInfo], kw: dict[str, Any], phase: str) -> None:
    assert status_of(machines, **kw)["phase"] == phase


def test_status_messages_say_what_is_going_on() -> None:
    outdated = [m("ma", outdated=True), m("mb", outdated=True, failure_domain="b"), m("mc")]
    status = status_of(outdated, step=step(outdated))
    progressing = condition(status, "Progressing")
    assert progressing["reason"] == "ReplacingOutdated", progressing
    assert progressing["message"].startswith("Replacing outdated Machine ma in a: "), progressing
    failed = status_of(abc(), preflight_failures=[PreflightFailure(CHECK_ETCD_NO_ALARMS, "NOSPACE@m1")])
    assert condition(failed, "Progressing")["reason"] == "EtcdAlarm"
    assert "EtcdNoAlarms: NOSPACE@m1" in condition(failed, "Progressing")["message"]
    owned = status_of(abc(), owned_by_others=["theirs"], unmanaged_nodes=["stray"])
    degraded = condition(owned, "Degraded")
    assert degraded["reason"] == "MachinesAlreadyOwned" and "stray" in degraded["message"]
    broken = status_of([*abc()[:2], m("f", phase="Failed", node_ready=False)])
    assert broken["failureReason"] == "MachineFailed" and "f" in broken["failureMessage"]
    human = status_of(abc(), failure=("MaxRetryReached", "find the cause"))
    assert human["failureReason"] == "MaxRetryReached"
    paused = status_of(abc(), paused=True)
    assert condition(paused, "Progressing")["reason"] == "Paused"


def test_merge_conditions_keeps_foreign_conditions_and_transition_times() -> None:
    previous = [
        {"type": "Available", "status": "True", "reason": "A", "message": "", "lastTransitionTime": "old"},
        {"type": "Degraded", "status": "False", "reason": "A", "message": "", "lastTransitionTime": "old"},
        {"type": "EtcdClusterHealthy", "status": "True", "reason": "H", "lastTransitionTime": "old"},
    ]
    computed = [
        {"type": "Available", "status": "True", "reason": "B", "message": "x"},
        {"type": "Degraded", "status": "True", "reason": "C", "message": "y"},
    ]
    merged = {c["type"]: c for c in merge_conditions(previous, computed, T0)}
    assert merged["Available"]["lastTransitionTime"] == "old"
    assert merged["Degraded"]["lastTransitionTime"] == format_time(T0)
    assert merged["EtcdClusterHealthy"] == previous[2]
