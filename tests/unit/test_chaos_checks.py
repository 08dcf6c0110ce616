"""The chaos campaign's timeline checks (``bench.chaos``) on made-up timelines: each flags what it
must and nothing a correct operator does (a scale-in, a dead member's removal, a replacement)."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from bench.chaos import (
    COMPONENT_ACTIONS,
    HOST_CAP,
    KILL_UNSEEN_FOR,
    LATER_ACTIONS,
    MEMBERSHIP_ACTIONS,
    ORPHAN_SLACK,
    ROLLOUT_AFTER_FAR,
    HookOff,
    Injector,
    Intent,
    RunResult,
    early_removals,
    fault_budget,
    healthy_voter_removals,
    host_cap,
    machines_added_together,
    members_left_without_machine,
    plan,
    remediations_together,
    remediations_while_creating,
    timeline_violations,
    unseen_kills,
)
from bench.mutation import MUTATIONS
from demo.monitor import QuorumSample
from demo.observer import MachineView, Observer, Sample
from demo.tour import Tour
from demo.world import DemoWorld

REPO = Path(__file__).resolve().parents[2]
DESIRED_3 = [(0.0, 3)]


def members(
    at: float, names: list[str], healthy: int | None = None, error: str | None = None
) -> QuorumSample:
    """A monitor sample: ``names`` are the members (a ``~`` marks a learner); every voter healthy
    unless ``healthy`` says how many are."""
    voters = sum(not n.endswith("~") for n in names)
    healthy = voters if healthy is None else healthy
    return QuorumSample(
        at, voters, len(names) - voters, healthy, names[0] if names else None, healthy > voters // 2,
        tuple(sorted(names)), error,
    )  # fmt: skip


def voters(at: float, count: int) -> Sample:
    return Sample(at, (), count, 0, count, True, 0, desired=None)


def test_a_healthy_voter_removed_below_desired_is_flagged() -> None:
    timeline = [members(1.0, ["a", "b", "c"]), members(1.1, ["a", "b"])]
    [found] = healthy_voter_removals(timeline, DESIRED_3)
    assert "c removed while all 3 voters were healthy: 2 left, desired 3" in found


def test_the_check_reads_across_an_unreadable_sample() -> None:
    timeline = [members(1.0, ["a", "b", "c"]), members(1.1, [], error="timeout"), members(1.2, ["a", "b"])]
    assert len(healthy_voter_removals(timeline, DESIRED_3)) == 1


def test_what_a_correct_operator_does_is_not_flagged() -> None:
    replacement = [
        members(1.0, ["a", "b", "c", "d~"]),
        members(2.0, ["a", "b", "c", "d"]),
        members(3.0, ["a", "b", "d"]),
    ]
    dead_member_removed = [members(1.0, ["a", "b", "c"], healthy=2), members(1.1, ["a", "b"])]
    learner_removed = [members(1.0, ["a", "b", "c", "d~"]), members(1.1, ["a", "b", "c"])]
    # The injector records a scale-in when kubectl returns, which may be just after the removal.
    scale_in = [members(5.0, ["a", "b", "c"]), members(5.1, ["a", "b"])]
    assert healthy_voter_removals(replacement, DESIRED_3) == []
    assert healthy_voter_removals(dead_member_removed, DESIRED_3) == []
    assert healthy_voter_removals(learner_removed, DESIRED_3) == []
    assert healthy_voter_removals(scale_in, [(0.0, 3), (5.8, 1)]) == []
    assert len(healthy_voter_removals(scale_in, [(0.0, 3), (6.5, 1)])) == 1
    # A removal decided on 3 replicas can land just after a scale-out to 5.
    assert healthy_voter_removals(replacement[1:], [(0.0, 3), (1.8, 5)]) == []
    assert len(healthy_voter_removals(replacement[1:], [(0.0, 3), (0.5, 5)])) == 1


def test_voters_above_desired_plus_one_or_two_promotions_at_once_are_flagged() -> None:
    assert timeline_violations([voters(1.0, 3), voters(1.1, 4)], DESIRED_3) == []
    [above] = timeline_violations([voters(1.0, 4), voters(1.1, 5)], DESIRED_3)
    assert "above desired + 1 = 4" in above
    [both] = timeline_violations([voters(1.0, 3), voters(1.1, 5)], [(0.0, 5)])
    assert "two promoted together" in both
    assert timeline_violations([voters(1.0, 3), voters(1.1, 4)], [(0.0, 1), (0.5, 5)]) == []
    # A promotion decided on 3 replicas can land just after a scale-in to 1.
    assert timeline_violations([voters(5.0, 3), voters(5.1, 4)], [(0.0, 3), (4.9, 1)]) == []
    [late] = timeline_violations([voters(9.0, 3), voters(9.1, 4)], [(0.0, 3), (4.9, 1)])
    assert "above desired + 1 = 2" in late


def world(at: float, *machines: str, remediated: str | None = None) -> Sample:
    """An observer sample of Machines given as ``name:phase[:deleting][:role][:marked]`` (role
    ``voter``, ``learner``, ``dead`` for an unhealthy voter; default none; ``marked``: handed
    over for remediation by the health check)."""
    views = []
    for text in machines:
        name, phase, deleting, role, marked = ([*text.split(":"), "", "", "", ""])[:5]
        views.append(
            MachineView(
                name,
                phase,
                deleting == "deleting",
                "zone-a",
                None,
                etcd_role="voter" if role == "dead" else (role or "-"),
                etcd_healthy=role != "dead",
                marked_unhealthy=marked == "marked",
            )
        )
    return Sample(at, tuple(views), 3, 0, 3, True, 0, desired=3, last_remediation=remediated)


def test_two_machines_added_together_are_flagged_once() -> None:
    timeline = [
        world(1.0, "a:Running", "b:Running", "c:Running"),
        world(2.0, "a:Running", "b:Running", "c:Running", "d:Provisioning"),
        world(2.1, "a:Running", "b:Running", "c:Running", "d:Provisioned", "e:"),
        world(2.2, "a:Running", "b:Running", "c:Running", "d:Provisioned", "e:Provisioning"),
    ]
    [found] = machines_added_together(timeline)
    assert "Machines d, e added together" in found


def test_one_machine_at_a_time_is_not_flagged() -> None:
    timeline = [
        world(1.0, "a:Running", "b:Running", "c:Running"),
        world(2.0, "a:Running", "b:Running", "c:Running", "d:Provisioning"),
        world(3.0, "a:Running", "b:Running", "c:Running", "d:Running"),
        world(4.0, "a:Running:deleting", "b:Running", "c:Running", "d:Running", "e:Provisioning"),
        # A member restarted after a fault: its Machine was Running before, it is not new.
        world(5.0, "b:Provisioning", "c:Running", "d:Running", "e:Provisioned"),
        world(6.0, "b:Running", "c:Running", "d:Running", "e:Running", "f:Provisioning:deleting", "g:"),
    ]
    assert machines_added_together(timeline) == []


def test_a_remediation_before_the_previous_ones_machine_is_gone_is_flagged() -> None:
    one_after_the_other = [
        world(1.0, "a:Running", "b:Running", "c:Running"),
        world(2.0, "a:Running:deleting:dead", "b:Running", "c:Running", remediated="a"),
        world(3.0, "b:Running", "c:Running", "d:Provisioning", remediated="a"),
        world(4.0, "b:Running:deleting", "c:Running", "d:Running", remediated="b"),
    ]
    assert remediations_together(one_after_the_other) == []
    overlapping = [
        world(2.0, "a:Running:deleting:dead", "b:Running", "c:Running", remediated="a"),
        world(2.5, "a:Running:deleting:dead", "b:Running:deleting", "c:Running", remediated="b"),
    ]
    [found] = remediations_together(overlapping)
    assert "remediation of b started while that of a had not finished" in found
    # The earlier one is held by the hook on its healthy voter until a replacement
    # votes; the next remediation must not wait for it.
    held = [
        world(2.0, "a:Running:deleting:voter", "b:Running::dead", "c:Running", remediated="a"),
        world(2.5, "a:Running:deleting:voter", "b:Running:deleting:dead", "c:Running", remediated="b"),
    ]
    assert remediations_together(held) == []


def test_a_seed_always_draws_the_same_schedule_within_its_duration() -> None:
    assert plan(7, 60.0) == plan(7, 60.0)
    assert plan(7, 60.0) != plan(8, 60.0)
    shorter = plan(7, 30.0)
    assert all(intent.at < 30.0 for intent in shorter)

    def others(intents: list[Intent]) -> list[Intent]:
        drawn_apart = ("kill-domain", *LATER_ACTIONS, *MEMBERSHIP_ACTIONS, *COMPONENT_ACTIONS)
        return [intent for intent in intents if intent.kind not in drawn_apart]

    assert others(shorter) == others(plan(7, 60.0))[: len(others(shorter))]
    # One failure-domain outage per minute of schedule, at least one, drawn apart from the rest.
    for duration, outages in ((30.0, 1), (60.0, 1), (150.0, 2)):
        schedule = plan(7, duration)
        assert [i.kind for i in schedule].count("kill-domain") == outages
        assert [i.at for i in schedule] == sorted(i.at for i in schedule)
    # One later user action per 30 s of schedule, at least one, drawn apart from the rest.
    for duration, later in ((30.0, 1), (60.0, 2), (150.0, 5)):
        schedule = plan(7, duration)
        assert sum(i.kind in LATER_ACTIONS for i in schedule) == later


def test_the_component_faults_are_drawn_apart_at_their_own_pace() -> None:
    # A component fault per 20 s and a broken template per minute, at least one each.
    for duration, faults, templates in ((30.0, 1, 1), (60.0, 3, 1), (150.0, 7, 2)):
        kinds = [i.kind for i in plan(7, duration)]
        assert (kinds.count("component-fault"), kinds.count("broken-template")) == (faults, templates)


def test_the_membership_actions_are_drawn_apart_at_their_own_pace() -> None:
    # A maxSurge 0 rollout per 30 s and a hook taken off by hand per minute, at least one each.
    for duration, rollouts, hooks_off in ((30.0, 1, 1), (60.0, 2, 1), (150.0, 5, 2)):
        kinds = [i.kind for i in plan(7, duration)]
        assert kinds.count("surge-zero-rollout") == rollouts
        assert kinds.count("hook-off") == hooks_off
    # Adding them left every other draw of a seed as it was.
    for seed in (7, 18, 37):
        schedule = plan(seed, 60.0)
        assert [i for i in schedule if i.kind not in MEMBERSHIP_ACTIONS] == sorted(
            (i for i in schedule if i.kind not in MEMBERSHIP_ACTIONS), key=lambda i: i.at
        )
        assert all(i.at < 60.0 for i in schedule)


def test_a_host_cap_is_drawn_per_seed_only_for_schedules_that_can_still_converge() -> None:
    caps = {seed: host_cap(seed, plan(seed, 60.0)) for seed in range(1, 61)}
    assert caps == {seed: host_cap(seed, plan(seed, 60.0)) for seed in range(1, 61)}, "a seed replays"
    assert set(caps.values()) == {None, HOST_CAP}, "some runs get host pools, some do not"
    for seed, cap in caps.items():
        if cap is not None:
            # Every domain keeps a spare host: 3 Machines at most, over 3 domains of HOST_CAP.
            assert max((i.value for i in plan(seed, 60.0) if i.kind == "scale"), default=3) <= 3
    # A schedule that scales to 5 never gets a cap, whatever its seed draws.
    to_five = [Intent(1.0, "scale", 0.5, 5.0)]
    assert all(host_cap(seed, to_five) is None for seed in range(1, 61))
    assert any(host_cap(seed, []) == HOST_CAP for seed in range(1, 61))


def test_the_later_user_actions_are_all_drawn_over_a_campaign() -> None:
    drawn = [i for seed in range(1, 31) for i in plan(seed, 60.0) if i.kind in LATER_ACTIONS]
    assert {i.kind for i in drawn} == set(LATER_ACTIONS)
    ahead = [i.value for i in drawn if i.kind == "rollout-after-ahead"]
    assert ROLLOUT_AFTER_FAR in ahead, "an hour ahead: must replace nothing during the run"
    assert any(5.0 <= value <= 25.0 for value in ahead), "seconds ahead: comes due during the run"


def test_every_mutation_of_the_mutation_check_still_finds_its_rule() -> None:
    """``bench.mutation`` switches rules off by text: a refactored rule must fail here, not
    leave the mutation check running unmutated code."""
    for mutation in MUTATIONS:
        text = (REPO / mutation.path).read_text()
        for old, new in mutation.changes:
            assert text.count(old) == 1, (mutation.rule, old)
            assert old != new


def voter_machine(
    name: str,
    *,
    deleting: bool = False,
    role: str = "voter",
    healthy: bool = True,
    marked: bool = False,
    node: str | None = None,
) -> MachineView:
    return MachineView(
        name, "Running", deleting, "zone-a", None, node=node, etcd_role=role, etcd_healthy=healthy,
        remove_member_first=marked,
    )  # fmt: skip


def voting_world(
    names: list[str],
    *,
    healthy: int | None = None,
    deleting: tuple[str, ...] = (),
    down: tuple[str, ...] = (),
    marked: tuple[str, ...] = (),
    at: float = 1.0,
    nodes: dict[str, str] | None = None,
) -> Sample:
    """Voters ``names``, each with a Machine; ``down`` are shown unhealthy, and ``healthy`` (by
    default all the others) is how many voters the sample counts healthy."""
    views = tuple(
        voter_machine(
            n, deleting=n in deleting, healthy=n not in down, marked=n in marked, node=(nodes or {}).get(n)
        )
        for n in names
    )
    count = len(names)
    healthy = count - len(down) if healthy is None else healthy
    return Sample(at, views, count, 0, healthy, healthy > count // 2, 0, desired=None)


def test_the_fault_budget_counts_a_removal_the_operator_may_make_at_any_moment() -> None:
    steady = voting_world(["a", "b", "c"])
    assert fault_budget(steady, desired=3, held=()) == 1
    assert fault_budget(voting_world(["a", "b", "c", "d", "e"]), desired=5, held=()) == 2
    # Scaling in to 1, 3 voters; the operator may remove one at any moment, and
    # one of the 2 left must not be killed.
    assert fault_budget(steady, desired=1, held=()) == 0
    # A replacement: the old Machine's voter goes once the new one votes.
    replacing = voting_world(["a", "b", "c", "d"], deleting=("a",))
    assert fault_budget(replacing, desired=3, held=()) == 1
    assert fault_budget(voting_world(["a", "b", "c"], deleting=("a",)), desired=3, held=()) == 0
    # Members already down, or held down by the injector, use it up.
    assert fault_budget(voting_world(["a", "b", "c"], healthy=2), desired=3, held=()) == 0
    assert fault_budget(steady, desired=3, held={"a"}) == 0
    assert fault_budget(None, desired=3, held=()) == 0


def test_the_fault_budget_counts_a_member_down_once_whether_or_not_the_sample_has_seen_it() -> None:
    # One voter of 3 SIGKILLed, and 300 ms later, the sample still
    # showing 3 healthy, a failure-domain outage killed a second: the kill must use the budget up.
    assert fault_budget(voting_world(["a", "b", "c"]), desired=5, held={"a"}) == 0
    five = ["a", "b", "c", "d", "e"]
    assert fault_budget(voting_world(five, down=("a",)), desired=5, held={"a"}) == 1
    assert fault_budget(voting_world(five, down=("a",)), desired=5, held={"b"}) == 0
    # A voter down that no Machine names still counts.
    assert fault_budget(voting_world(five, healthy=4), desired=5, held={"a"}) == 0


def test_a_kill_counts_until_the_sample_shows_the_member_down() -> None:
    killed = {"a": 100.0, "b": 100.0, "gone": 100.0}
    steady = voting_world(["a", "b", "c"])
    assert unseen_kills(steady, killed, now=100.3) == {"a", "b"}
    assert unseen_kills(voting_world(["a", "b", "c"], down=("a",)), killed, now=100.3) == {"b"}
    assert unseen_kills(steady, killed, now=100.0 + KILL_UNSEEN_FOR) == set()
    assert unseen_kills(None, killed, now=100.3) == set()


def test_the_injector_counts_its_own_kill_before_the_sample_shows_it() -> None:
    steady = voting_world(["a", "b", "c"])
    tour = cast(Tour, SimpleNamespace(replicas=3))
    observer = SimpleNamespace(latest=steady, started=time.monotonic())
    injector = Injector(cast(DemoWorld, None), tour, cast(Observer, observer), RunResult(30))
    assert injector.budget() == 1
    injector.killed["a"] = time.monotonic()
    assert injector.budget() == 0


def test_the_injector_budgets_against_a_replica_count_just_raised() -> None:
    # Scaled to 1 and, a moment later, back to 3: the operator may still remove a voter on 1.
    tour = cast(Tour, SimpleNamespace(replicas=3))
    observer = SimpleNamespace(latest=voting_world(["a", "b", "c"]), started=time.monotonic() - 10.0)
    injector = Injector(cast(DemoWorld, None), tour, cast(Observer, observer), RunResult(18))
    injector.desired_history += [(8.5, 1), (9.5, 3)]
    injector.desired = 3
    assert injector.budget() == 0
    injector.desired_history[1:] = [(5.0, 1), (7.0, 3)]
    assert injector.budget() == 1


def test_the_fault_budget_counts_a_healthy_voter_of_no_machine_as_removed() -> None:
    # A scale-in: the Machine is gone (its member removed first), the monitor's older member
    # list still shows 3 healthy voters; etcd has 2, and neither may be killed.
    stale = voting_world(["a", "b", "c"])
    stale = Sample(stale.at, stale.machines[:2], 3, 0, 3, True, 0, desired=None)
    assert fault_budget(stale, desired=3, held=()) == 0
    # A dead one of no Machine is counted once, as down.
    dead = Sample(stale.at, stale.machines, 3, 0, 2, True, 0, desired=None)
    assert fault_budget(dead, desired=3, held=()) == 0
    five = voting_world(["a", "b", "c", "d", "e"])
    assert (
        fault_budget(Sample(1.0, five.machines[:4], 5, 0, 5, True, 0, desired=None), desired=5, held=()) == 1
    )
    assert (
        fault_budget(Sample(1.0, five.machines[:4], 5, 0, 4, True, 0, desired=None), desired=5, held=()) == 1
    )
    # The realistic provider's replacement may take the old member's Node name: one member, two Machines.
    nodes = {"a": "ip-1", "b": "ip-2", "c": "ip-3", "d": "ip-3"}
    shared = voting_world(["a", "b", "c", "d"], nodes=nodes)
    shared = Sample(1.0, shared.machines, 3, 0, 3, True, 0, desired=None)
    assert fault_budget(shared, desired=3, held=()) == 1


def remediating_c(c_member: str, *others: str) -> list[Sample]:
    """Voters a and b, Machine c (member ``c_member``: role[:marked]) remediated at 2.1 s, and
    ``others`` unchanged from 1.0 s."""
    return [
        world(1.0, "a:Running::voter", "b:Running::voter", f"c:Running::{c_member}", *others),
        world(
            2.1,
            "a:Running::voter",
            "b:Running::voter",
            f"c:Running:deleting:{c_member}",
            *others,
            remediated="c",
        ),
    ]


def test_a_remediation_while_another_machine_is_being_created_is_flagged() -> None:
    creating = [
        world(1.0, "a:Running::voter", "b:Running::voter", "c:Running::dead", "d:Provisioned::learner"),
        world(1.5, "a:Running::voter", "b:Running::voter", "c:Running::dead", "d:Provisioned::learner"),
        world(
            2.1,
            "a:Running::voter",
            "b:Running::voter",
            "c:Running:deleting:dead",
            "d:Provisioned::learner",
            remediated="c",
        ),
    ]
    [found] = remediations_while_creating(creating)
    assert "remediation of c started while d was being created" in found
    # The new Machine became Running by the sample that shows the remediation: the operator's
    # decision may have seen it Running.
    running_by_then = [
        *creating[:2],
        world(2.1, "a:Running", "b:Running", "c:Running:deleting", "d:Running", remediated="c"),
    ]
    assert remediations_while_creating(running_by_then) == []
    # A Machine first seen less than a second before: the operator's cache may not have had it.
    just_created = [
        world(1.0, "a:Running", "b:Running", "c:Running::dead"),
        world(1.5, "a:Running", "b:Running", "c:Running::dead", "d:"),
        world(2.1, "a:Running", "b:Running", "c:Running:deleting:dead", "d:", remediated="c"),
    ]
    assert remediations_while_creating(just_created) == []
    # No member yet while the remediated Machine's member is an unhealthy voter: etcd would take
    # no member, so the ControlPlane does not wait for it.
    assert remediations_while_creating(remediating_c("dead", "d:Provisioning")) == []
    # ... but with a healthy voter remediated (its Node NotReady), it must wait.
    [found] = remediations_while_creating(remediating_c("voter:marked", "d:Provisioning"))
    assert "while d was being created" in found
    # A Machine that is itself marked for remediation, or deleting, is not being created.
    marked_or_deleting = remediating_c(
        "voter:marked", "d:Provisioning::learner:marked", "e:Provisioning:deleting:learner"
    )
    assert remediations_while_creating(marked_or_deleting) == []
    # The same remediation seen again is not a new one.
    assert remediations_while_creating([*creating, creating[-1]]) == remediations_while_creating(creating)


def test_the_fault_budget_counts_a_marked_machines_healthy_voter_as_already_removed() -> None:
    # maxSurge 0: the ControlPlane marked a and deletes it; its healthy voter may go before
    # its replacement votes, leaving 2 of 3 with nothing to lose.
    assert (
        fault_budget(voting_world(["a", "b", "c"], marked=("a",), deleting=("a",)), desired=3, held=()) == 0
    )
    # Counted from the mark, which comes right before the deletion.
    assert fault_budget(voting_world(["a", "b", "c"], marked=("a",)), desired=3, held=()) == 0
    # With 5, the early removal leaves 4, which may lose one.
    five = ["a", "b", "c", "d", "e"]
    assert fault_budget(voting_world(five, marked=("a",), deleting=("a",)), desired=5, held=()) == 1
    assert fault_budget(voting_world(five, marked=("a",), deleting=("a",)), desired=5, held={"b"}) == 0


def marking(at: float, marked: str | None, names: list[str], nodes: dict[str, str] | None = None) -> Sample:
    """An observer sample of voters ``names``, ``marked`` (if any) deleting with the mark."""
    chosen = (marked,) if marked else ()
    return voting_world(names, marked=chosen, deleting=chosen, at=at, nodes=nodes)


def test_a_marked_early_removal_to_desired_minus_one_is_accepted_and_an_unmarked_one_is_not() -> None:
    removal = [members(1.0, ["a", "b", "c"]), members(1.1, ["a", "b"])]
    seen_marked = [marking(0.5, "c", ["a", "b", "c"])]
    assert healthy_voter_removals(removal, DESIRED_3, seen_marked) == []
    assert early_removals(removal, DESIRED_3, seen_marked) == ["t=1.1s c (c)"]
    # Unmarked (a user's deletion, a remediation): the replacement must vote first.
    [found] = healthy_voter_removals(removal, DESIRED_3, [marking(0.5, None, ["a", "b", "c"])])
    assert "c removed while all 3 voters were healthy: 2 left, desired 3" in found
    # Another Machine's mark does not cover it.
    assert len(healthy_voter_removals(removal, DESIRED_3, [marking(0.5, "a", ["a", "b", "c"])])) == 1


def test_a_marked_removal_is_matched_through_its_node_name() -> None:
    # The realistic provider names members after their Node, not their Machine.
    nodes = {"m-1": "ip-127-0-0-1", "m-2": "ip-127-0-0-2", "m-3": "ip-127-0-0-3"}
    removal = [members(1.0, list(nodes.values())), members(1.1, ["ip-127-0-0-1", "ip-127-0-0-2"])]
    assert healthy_voter_removals(removal, DESIRED_3, [marking(0.5, "m-3", list(nodes), nodes)]) == []
    assert len(healthy_voter_removals(removal, DESIRED_3, [marking(0.5, "m-1", list(nodes), nodes)])) == 1


def test_a_marked_removal_below_desired_minus_one_or_a_second_early_removal_is_flagged() -> None:
    # From 2 voters of 3 desired (the first early removal's replacement not voting yet).
    second = [members(5.0, ["a", "b"]), members(5.1, ["a"])]
    [found] = healthy_voter_removals(second, DESIRED_3, [marking(4.5, "b", ["a", "b", "c"])])
    assert "1 left, desired 3 (an early removal may leave desired − 1, no fewer)" in found
    # Two at once.
    both = [members(1.0, ["a", "b", "c", "d", "e"]), members(1.1, ["a", "b", "c"])]
    seen = [marking(0.5, "e", ["a", "b", "c", "d", "e"]), marking(0.6, "d", ["a", "b", "c", "d", "e"])]
    assert len(healthy_voter_removals(both, [(0.0, 5)], seen)) == 1
    # A second early removal while the first one's Machine is still there.
    timeline = [
        members(1.0, ["a", "b", "c"]),
        members(1.1, ["a", "b"]),
        members(4.0, ["a", "b", "d"]),
        members(4.1, ["a", "d"]),
    ]
    machines = [
        marking(0.5, "c", ["a", "b", "c"]),
        voting_world(["a", "b", "c", "d"], marked=("b", "c"), deleting=("b", "c"), at=3.5),
        voting_world(["a", "b", "c", "d"], marked=("b", "c"), deleting=("b", "c"), at=4.1),
    ]
    [found] = healthy_voter_removals(timeline, DESIRED_3, machines)
    assert "early removal of b (b) while the Machine of the previous one, c, was still there" in found
    # Once c's Machine is gone, b may go early.
    gone = [machines[0], voting_world(["a", "b", "d"], marked=("b",), deleting=("b",), at=3.5)]
    gone.append(voting_world(["a", "b", "d"], marked=("b",), deleting=("b",), at=4.1))
    assert healthy_voter_removals(timeline, DESIRED_3, gone) == []


def test_a_member_whose_hook_was_taken_off_must_be_gone_within_the_grace() -> None:
    grace = 5.0
    hook = HookOff(2.0, "c", ("c",))
    machines = [voting_world(["a", "b", "c"], at=1.0), voting_world(["a", "b"], at=3.0)]
    end = 3.0 + grace + ORPHAN_SLACK + 1.0
    removed = [members(2.5, ["a", "b", "c"], healthy=2), members(9.0, ["a", "b"]), members(end, ["a", "b"])]
    assert members_left_without_machine([hook], machines, removed, grace) == []
    stays = [members(2.5, ["a", "b", "c"], healthy=2), members(end, ["a", "b", "c"], healthy=2)]
    [found] = members_left_without_machine([hook], machines, stays, grace)
    assert "the member of c (hook taken off at t=2.0s, Machine gone at t=3.0s) still votes" in found
    # A replacement joining under the freed Node's name is a learner: the old voter is gone.
    nodes = HookOff(2.0, "c", ("c", "ip-127-0-0-3"))
    rejoined = [
        members(2.5, ["a", "b", "ip-127-0-0-3"], healthy=2),
        members(9.0, ["a", "b", "ip-127-0-0-3~"]),
        members(end, ["a", "b", "ip-127-0-0-3"]),
    ]
    assert members_left_without_machine([nodes], machines, rejoined, grace) == []
    # Samples ending before the deadline, or a Machine that never went: the convergence check's.
    assert members_left_without_machine([hook], machines, stays[:1], grace) == []
    assert members_left_without_machine([hook], machines[:1], stays, grace) == []
