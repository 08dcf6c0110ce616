"""The etcd-quorum-hook controller with real etcd members from the local provider.

Each test runs the provider and the controller (in a manager of this process, with the
operator's cache scope) against the embedded API server, watches the cluster with a
:class:`~demo.monitor.QuorumMonitor` for the whole test, and checks the order of what
happens to the Machines with a :class:`~tests.support.etcdquorum.MachineTimeline`.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

import pytest

from api.controlplane import API_VERSION as CP_API_VERSION
from api.machine import API_VERSION
from controllers.etcd.client import EtcdClient, MemberAddResult, UnhealthyCluster
from controllers.etcd.membership import PEER_URL_ANNOTATION
from controllers.etcdquorum import HOOK_NAME, HOOK_OWNER
from demo.monitor import QuorumMonitor, QuorumSample
from providers.localmachine import CONDITION_ETCD_MEMBER
from runtime.client import Client
from runtime.envtest.binaries import free_port
from runtime.metrics import generate_latest
from tests.support.etcd import tls_etcd
from tests.support.etcdquorum import (
    client_url,
    controlplane,
    cp_events_in_order,
    cp_machine,
    etcd_condition,
    event_recorded,
    hook_owner,
    machine_timeline,
    quick_options,
    running_quorum_controller,
)
from tests.support.localmachine import (
    get_machine,
    machine_condition,
    provider_options,
    running_provider,
    set_fault,
)
from tests.support.poll import eventually, holds_for

pytestmark = pytest.mark.slow


Check = Callable[[QuorumSample], bool]


def voter(name: str) -> Check:
    return lambda s: name in s.machines


def has_member(name: str) -> Check:
    return lambda s: name in s.machines or f"{name}~" in s.machines


async def latest(monitor: QuorumMonitor, check: Check) -> QuorumSample | None:
    if not monitor.samples:
        return None
    sample = monitor.samples[-1]
    return sample if check(sample) else None


async def wait_sample(monitor: QuorumMonitor, check: Check, within: float, what: str) -> QuorumSample:
    sample: QuorumSample = await eventually(lambda: latest(monitor, check), timeout=within, message=what)
    return sample


def assert_one_step_at_a_time(monitor: QuorumMonitor) -> None:
    """Voters change by at most one between two samples (one promotion or removal per pass)."""
    for before, after in zip(monitor.samples, monitor.samples[1:], strict=False):
        if before.error is None and after.error is None:
            assert abs(after.voters - before.voters) <= 1, (before, after)


async def test_scale_out_deletion_wait_replacement_repair_and_escape_hatch(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    prefix = f"eq{secrets.token_hex(2)}"
    m0, m1, m2, m3 = (f"{prefix}-m{i}" for i in range(4))
    cp_name = f"{prefix}-cp"
    await kube.create(controlplane(cp_name, namespace, 3))
    async with (
        machine_timeline(kube, namespace) as timeline,
        running_provider(kube, namespace, provider_options(provider_state_dir)),
        running_quorum_controller(kube, namespace, quick_options()),
    ):
        await kube.create(cp_machine(m0, namespace, zone="zone-a"))
        url = await client_url(kube, m0, namespace)
        async with QuorumMonitor([url]) as monitor, EtcdClient([url]) as etcd:
            await monitor.next_sample()

            # --- scale 1 → 3: learners promoted one at a time, each after its Machine got the hook.
            await kube.create(cp_machine(m1, namespace, zone="zone-b"))
            await kube.create(cp_machine(m2, namespace, zone="zone-c"))
            await wait_sample(monitor, lambda s: s.voters == 3 and s.learners == 0, 90, "3 voters")
            bootstrapped = monitor.mark()
            assert monitor.peak("learners") <= 1
            for name in (m0, m1, m2):
                assert name in timeline.hook_added, f"{name} never got the hook"
            for name in (m1, m2):
                # The provider writes the condition after the member starts: the monitor may see the
                # third voter before it, so the condition is waited for, not read once.
                async def joined(machine: str = name) -> bool:
                    found = machine_condition(
                        await get_machine(kube, machine, namespace), CONDITION_ETCD_MEMBER
                    )
                    return "joined as a learner" in found.get("message", "")

                await eventually(
                    joined, timeout=30, message=f"{name}'s condition says it joined as a learner"
                )
                promoted = monitor.first(voter(name))
                assert promoted is not None, monitor.changes()
                assert timeline.hook_added[name] < monitor.started_at + promoted.at, (
                    f"{name} promoted before its Machine carried the hook"
                )
            assert_one_step_at_a_time(monitor)
            await event_recorded(kube, namespace, "Machine", m1, "LearnerPromoted")
            await event_recorded(kube, namespace, "ControlPlane", cp_name, "LearnerPromoted")
            # The condition is True while the last learner waits too: wait for the pass that saw
            # the third promotion (the monitor can see it before the controller's next write).
            condition = await eventually(
                lambda: _condition_with(
                    kube, cp_name, namespace, status="True", text="3 voters (3 healthy, quorum 2), 0 learners"
                ),
                timeout=10,
                message="healthy with 3 voters",
            )
            assert condition["reason"] == "EtcdHealthy"
            assert condition["message"].startswith("3 members: 3 voters (3 healthy, quorum 2), 0 learners")

            async def machines_say_voter_leader_and_guarding() -> bool:
                objs = [await get_machine(kube, name, namespace) for name in (m0, m1, m2)]
                members = [machine_condition(obj, "EtcdMemberHealthy").get("reason") for obj in objs]
                hooks = [machine_condition(obj, "EtcdQuorumHookHolding").get("reason") for obj in objs]
                return sorted(members) == ["Leader", "Voter", "Voter"] and hooks == ["Guarding"] * 3

            # Each Machine says its member's role (one leads) and that the hook guards it.
            await eventually(
                machines_say_voter_leader_and_guarding, timeout=10, message="EtcdMemberHealthy per Machine"
            )

            # --- a foreign owner of our hook is repaired; other hooks are kept.
            obj = await get_machine(kube, m1, namespace)
            assert obj is not None
            await kube.patch(
                API_VERSION,
                "Machine",
                m1,
                {
                    "spec": {
                        "lifecycleHooks": {
                            "preDrain": [
                                {"name": HOOK_NAME, "owner": "someone/else"},
                                {"name": "TeamXHold", "owner": "team/x"},
                            ]
                        }
                    }
                },
                namespace,
            )

            async def repaired() -> bool:
                hooks = ((await get_machine(kube, m1, namespace)) or {})["spec"]["lifecycleHooks"]["preDrain"]
                return sorted((h["name"], h["owner"]) for h in hooks) == [
                    (HOOK_NAME, HOOK_OWNER),
                    ("TeamXHold", "team/x"),
                ]

            await eventually(repaired, timeout=10, message="hook owner repaired, the other hook kept")
            await event_recorded(kube, namespace, "Machine", m1, "HookRepaired")

            # --- deleting one of 3 voters with no replacement: member and hook stay, and it says why.
            await kube.delete(API_VERSION, "Machine", m2, namespace)
            condition = await eventually(
                lambda: _condition_with(kube, cp_name, namespace, text="HealthyVotersBelowDesired"),
                timeout=10,
                message="the wait reason in the condition",
            )
            assert m2 in condition["message"] and "fewer than the 3 desired" in condition["message"]

            async def m2_held() -> bool:
                obj = await get_machine(kube, m2, namespace)
                members = await etcd.member_list()
                return hook_owner(obj) == HOOK_OWNER and any(
                    m.name == m2 and not m.is_learner for m in members
                )

            await holds_for(m2_held, duration=2.5, message=f"{m2}'s member and hook kept")
            holding = machine_condition(await get_machine(kube, m2, namespace), "EtcdQuorumHookHolding")
            assert (holding["status"], holding["reason"]) == ("True", "HealthyVotersBelowDesired"), holding
            assert "fewer than the 3 desired" in holding["message"], holding
            waited = await event_recorded(kube, namespace, "Machine", m2, "HealthyVotersBelowDesired")
            assert "replacement" in waited["message"]

            # --- with a replacement: promoted first, then the old member removed, then the hook, then gone.
            await kube.create(cp_machine(m3, namespace, zone="zone-c"))
            await eventually(lambda: m2 in timeline.gone, timeout=90, message=f"{m2} gone")
            order = [
                (e["reason"], e["message"].split(":")[0])
                for e in await cp_events_in_order(kube, namespace, cp_name)
                if e["reason"] in ("LearnerPromoted", "MemberRemoved", "HookRemoved")
            ][-3:]
            assert order == [
                ("LearnerPromoted", f"Machine {m3}"),
                ("MemberRemoved", f"Machine {m2}"),
                ("HookRemoved", f"Machine {m2}"),
            ], order
            assert timeline.hook_removed[m2] < timeline.gone[m2]
            assert monitor.low("voters", since=bootstrapped) >= 3
            assert monitor.peak("voters") <= 4
            await event_recorded(kube, namespace, "Machine", m2, "MemberRemoved")
            await event_recorded(kube, namespace, "Machine", m2, "HookRemoved")

            # --- the escape hatch: a human takes the hook off a deleting Machine; it is not re-added.
            await kube.delete(API_VERSION, "Machine", m1, namespace)
            await eventually(
                lambda: _condition_with(kube, cp_name, namespace, text=m1), timeout=10, message=f"{m1} waits"
            )
            await kube.patch(
                API_VERSION, "Machine", m1, {"spec": {"lifecycleHooks": {"preDrain": None}}}, namespace
            )
            await eventually(lambda: m1 in timeline.gone, timeout=30, message=f"{m1} drained and gone")
            event = await event_recorded(kube, namespace, "Machine", m1, "HookRemovedByOthers")
            assert "not re-added" in event["message"]
            assert m1 not in timeline.hook_removed or timeline.hook_removed[m1] < timeline.gone[m1]
            # Its member stays listed (a human's job now) and is reported as belonging to no Machine.
            assert any(m.name == m1 for m in await etcd.member_list())
            await eventually(
                lambda: _condition_with(kube, cp_name, namespace, text="no Machine for"),
                timeout=10,
                message="the orphaned member reported",
            )
            monitor.assert_never_lost_quorum()
            assert monitor.low("voters", since=bootstrapped) >= 3 and monitor.peak("voters") <= 4
            assert_one_step_at_a_time(monitor)


async def test_killed_member_removed_abandoned_learner_cleaned_up_voter_limit_and_deletions_one_at_a_time(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    prefix = f"eq{secrets.token_hex(2)}"
    m0, m1, m2, m3, m4, m5 = (f"{prefix}-m{i}" for i in range(6))
    cp_name = f"{prefix}-cp"
    await kube.create(controlplane(cp_name, namespace, 3, domains=("zone-a", "zone-b", "zone-c")))
    async with (
        machine_timeline(kube, namespace) as timeline,
        running_provider(kube, namespace, provider_options(provider_state_dir)),
        running_quorum_controller(kube, namespace, quick_options()),
    ):
        await kube.create(cp_machine(m0, namespace, zone="zone-a"))
        url = await client_url(kube, m0, namespace)
        await kube.create(cp_machine(m1, namespace, zone="zone-b"))
        await kube.create(cp_machine(m2, namespace, zone="zone-c"))
        async with QuorumMonitor([url]) as monitor, EtcdClient([url]) as etcd:
            await wait_sample(monitor, lambda s: s.voters == 3 and s.learners == 0, 90, "3 voters")

            # --- a learner added but never started, of no Machine: removed after the grace period.
            async def add_learner() -> MemberAddResult | None:
                try:
                    return await etcd.add_learner([f"http://127.0.0.1:{free_port()}"])
                except UnhealthyCluster:  # etcd takes member adds 5 s after the last promotion
                    return None

            added: MemberAddResult = await eventually(add_learner, timeout=15, message="a learner added")
            abandoned = added.member.id_hex
            await wait_sample(monitor, lambda s: f"{abandoned}~" in s.machines, 10, "the learner listed")
            await wait_sample(monitor, lambda s: f"{abandoned}~" not in s.machines, 15, "the learner removed")
            event = await event_recorded(kube, namespace, "ControlPlane", cp_name, "AbandonedLearnerRemoved")
            assert abandoned in event["message"]

            # --- a killed member pending deletion is removed while 2 of 3 stay healthy.
            await set_fault(kube, m2, namespace, "kill")
            await wait_sample(monitor, lambda s: s.healthy_voters == 2, 10, f"{m2} dead")
            await kube.delete(API_VERSION, "Machine", m2, namespace)
            await wait_sample(monitor, lambda s: s.voters == 2 and not has_member(m2)(s), 15, f"{m2} removed")
            await eventually(lambda: m2 in timeline.gone, timeout=30, message=f"{m2} gone")
            assert timeline.hook_removed[m2] < timeline.gone[m2]

            # --- its replacement joins and is promoted; one more makes desired + 1 voters; a third
            # stays a learner (desired + 2 is never allowed) until its Machine is deleted, and then
            # goes at once (a learner holds no vote).
            await kube.create(cp_machine(m3, namespace, zone="zone-a"))
            await wait_sample(monitor, lambda s: s.voters == 3 and s.learners == 0, 60, f"{m3} promoted")
            await kube.create(cp_machine(m4, namespace, zone="zone-c"))
            await wait_sample(monitor, lambda s: s.voters == 4 and s.learners == 0, 60, f"{m4} promoted")
            await kube.create(cp_machine(m5, namespace, zone="zone-b"))
            await wait_sample(monitor, lambda s: f"{m5}~" in s.machines, 60, f"{m5} a started learner")
            await eventually(
                lambda: _condition_with(kube, cp_name, namespace, text="VotersAtMaximum"),
                timeout=10,
                message="the learner waits, and the condition says why",
            )
            await holds_for(
                lambda: latest(monitor, lambda s: s.voters == 4 and f"{m5}~" in s.machines),
                duration=1.5,
                message=f"{m5} stays a learner",
            )
            await kube.delete(API_VERSION, "Machine", m5, namespace)
            await eventually(lambda: m5 in timeline.gone, timeout=30, message=f"{m5} gone")
            await event_recorded(kube, namespace, "Machine", m5, "MemberRemoved")

            # --- three Machines are deleted; they wait while 5 voters are desired. Then the
            # ControlPlane scales in to 1: removals one at a time, first the one whose configured
            # failure domain has another voter (m3 shares zone-a with m0), then by name.
            scaled = await kube.patch(
                CP_API_VERSION, "ControlPlane", cp_name, {"spec": {"replicas": 5}}, namespace
            )

            async def observed() -> bool:
                condition = await etcd_condition(kube, cp_name, namespace)
                return condition.get("observedGeneration") == scaled["metadata"]["generation"]

            await eventually(observed, timeout=10, message="the controller saw replicas: 5")
            for name in (m1, m3, m4):
                await kube.delete(API_VERSION, "Machine", name, namespace)

            async def all_three_wait() -> bool:
                message = (await etcd_condition(kube, cp_name, namespace)).get("message", "")
                return message.count("HealthyVotersBelowDesired") == 3

            await eventually(all_three_wait, timeout=10, message="three removals waiting")
            await kube.patch(CP_API_VERSION, "ControlPlane", cp_name, {"spec": {"replicas": 1}}, namespace)
            await eventually(
                lambda: all(n in timeline.gone for n in (m1, m3, m4)),
                timeout=60,
                message="all three gone",
            )
            removals = [
                e["message"].split(":")[0]
                for e in await cp_events_in_order(kube, namespace, cp_name)
                if e["reason"] == "MemberRemoved"
            ]
            assert removals[-3:] == [f"Machine {m3}", f"Machine {m1}", f"Machine {m4}"], removals
            assert [m.name for m in await etcd.member_list()] == [m0]
            monitor.assert_never_lost_quorum()
            assert monitor.peak("voters") <= 4
            assert_one_step_at_a_time(monitor)


async def test_beside_an_unhealthy_voter_no_learner_is_promoted_and_no_healthy_member_removed(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    """With room for one more voter (replicas raised from 3 to 5), a started learner whose Machine
    carries the hook stays a learner while a voter's member is stopped, the ControlPlane's
    condition says why (``MembersUnhealthy``), and it votes once that member answers again:
    promoted beside a dead voter, it would make a quorum that needs the new member.

    Then a healthy voter's Machine is deleted while another voter is dead: its member stays (its
    removal would leave 4 voters with 3 healthy, no failure survivable) until the dead member's
    Machine is deleted too; the dead member goes first, though the healthy one's failure domain
    keeps another voter."""
    prefix = f"eq{secrets.token_hex(2)}"
    m0, m1, m2, m3, m4 = (f"{prefix}-m{i}" for i in range(5))
    cp_name = f"{prefix}-cp"
    await kube.create(controlplane(cp_name, namespace, 3))
    async with (
        running_provider(kube, namespace, provider_options(provider_state_dir)),
        running_quorum_controller(kube, namespace, quick_options()),
    ):
        await kube.create(cp_machine(m0, namespace, zone="zone-a"))
        url = await client_url(kube, m0, namespace)
        for name, zone in ((m1, "zone-b"), (m2, "zone-c"), (m3, "zone-a")):
            await kube.create(cp_machine(name, namespace, zone=zone))
        async with QuorumMonitor([url]) as monitor:
            await wait_sample(monitor, lambda s: s.voters == 4 and s.learners == 0, 120, "4 voters")
            await kube.create(cp_machine(m4, namespace, zone="zone-b"))
            await wait_sample(monitor, lambda s: f"{m4}~" in s.machines, 60, f"{m4} a started learner")
            await eventually(
                lambda: _condition_with(kube, cp_name, namespace, text="VotersAtMaximum"),
                timeout=10,
                message=f"{m4} waits at desired + 1 voters",
            )
            await set_fault(kube, m1, namespace, "stop")
            await wait_sample(monitor, lambda s: s.healthy_voters == 3, 15, f"{m1}'s member stopped")
            await kube.patch(CP_API_VERSION, "ControlPlane", cp_name, {"spec": {"replicas": 5}}, namespace)
            await holds_for(
                lambda: latest(monitor, lambda s: s.voters == 4 and f"{m4}~" in s.machines),
                duration=10,  # long enough for a pass slowed by the stopped member, then a promotion
                message=f"{m4} stays a learner beside the stopped voter",
            )
            await eventually(
                lambda: _condition_with(kube, cp_name, namespace, text="MembersUnhealthy"),
                timeout=10,
                message=f"{m4} waits for the unhealthy voter, and the condition says so",
            )
            await set_fault(kube, m1, namespace, None)
            await wait_sample(
                monitor,
                lambda s: s.voters == 5 and s.healthy_voters == 5,
                30,
                f"{m4} promoted once {m1} answers",
            )
            monitor.assert_never_lost_quorum()
            assert_one_step_at_a_time(monitor)

        # --- m2 (zone-c, alone) dead, replicas back to 3, and m3 (zone-a, beside m0) deleted:
        # m3's healthy member stays while m2's is dead (removing it would leave 4 voters with
        # 3 healthy, no failure survivable), and the condition says why. Once m2's Machine is
        # deleted too, m2's member goes first, then m3's.
        await set_fault(kube, m2, namespace, "kill")
        async with QuorumMonitor([url]) as monitor:
            await wait_sample(monitor, lambda s: s.healthy_voters == 4, 15, f"{m2}'s member dead")
            await kube.patch(CP_API_VERSION, "ControlPlane", cp_name, {"spec": {"replicas": 3}}, namespace)
            await kube.delete(API_VERSION, "Machine", m3, namespace)
            await eventually(
                lambda: _condition_with(kube, cp_name, namespace, text=f"healthy member {m3}"),
                timeout=15,
                message=f"{m3}'s removal waits for the dead voter, and the condition says so",
            )
            waiting = await etcd_condition(kube, cp_name, namespace)
            assert "MembersUnhealthy" in waiting["message"] and m2 in waiting["message"], waiting

            async def held_for_the_dead_voter() -> bool:
                holding = machine_condition(await get_machine(kube, m3, namespace), "EtcdQuorumHookHolding")
                return (holding.get("status"), holding.get("reason")) == ("True", "MembersUnhealthy")

            await eventually(held_for_the_dead_voter, timeout=10, message=f"{m3}'s condition names the wait")
            await holds_for(
                lambda: latest(monitor, lambda s: s.voters == 5 and voter(m3)(s)),
                duration=5,  # several passes of the quick options
                message=f"{m3} stays a voter beside the dead {m2}",
            )
            await kube.delete(API_VERSION, "Machine", m2, namespace)
            await wait_sample(monitor, lambda s: s.voters == 3, 60, f"{m2} and {m3} removed")
            removals = [
                e["message"].split(":")[0]
                for e in await cp_events_in_order(kube, namespace, cp_name)
                if e["reason"] == "MemberRemoved"
            ]
            assert removals == [f"Machine {m2}", f"Machine {m3}"], removals
            monitor.assert_never_lost_quorum()
            assert_one_step_at_a_time(monitor)


async def _condition_with(
    client: Client, name: str, namespace: str, *, status: str | None = None, text: str | None = None
) -> dict[str, str] | None:
    condition = await etcd_condition(client, name, namespace)
    if status is not None and condition.get("status") != status:
        return None
    if text is not None and text not in condition.get("message", ""):
        return None
    return condition or None


# ---------------------------------------------------------------------------------------------- API only


async def test_hooks_wait_for_a_running_machine_stay_while_etcd_is_unreadable_and_other_conditions_are_kept(
    kube: Client, namespace: str
) -> None:
    """No provider and no etcd here: Machines are written by hand."""
    cp_name = "api-only"
    await kube.create(controlplane(cp_name, namespace, 3))
    available = {
        "type": "Available",
        "status": "False",
        "reason": "WaitingForMachines",
        "message": "written by the ControlPlane controller",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    await kube.patch_status(
        CP_API_VERSION, "ControlPlane", cp_name, {"status": {"conditions": [available]}}, namespace
    )
    x0 = cp_machine("x0", namespace)
    x1 = cp_machine("x1", namespace)
    x1["metadata"]["finalizers"] = ["tests.cpo.dev/hold"]
    async with running_quorum_controller(kube, namespace, quick_options()):
        await kube.create(x0)
        await kube.create(x1)

        async def no_hooks() -> bool:
            return [await _hook_is(kube, n, namespace, None) for n in ("x0", "x1")] == [True, True]

        await holds_for(no_hooks, duration=1.5, message="no hook before a control-plane Machine runs")
        await kube.patch_status(API_VERSION, "Machine", "x0", {"status": {"phase": "Running"}}, namespace)

        async def hooked() -> bool:
            return [await _hook_is(kube, n, namespace, HOOK_OWNER) for n in ("x0", "x1")] == [True, True]

        await eventually(hooked, timeout=10, message="the hook on every Machine once one runs")
        condition = await eventually(
            lambda: _condition_with(kube, cp_name, namespace, status="False"), timeout=10, message="condition"
        )
        assert condition["reason"] == "EtcdUnreachable" and "no etcd endpoint" in condition["message"]
        cp = await kube.get(CP_API_VERSION, "ControlPlane", cp_name, namespace)
        assert available in cp["status"]["conditions"], "another writer's condition was clobbered"

        # Deleting while etcd cannot be read: the hook stays (never removed on a guess) and the wait
        # is counted under its reason.
        await kube.delete(API_VERSION, "Machine", "x1", namespace)
        await holds_for(
            lambda: _hook_is(kube, "x1", namespace, HOOK_OWNER), duration=1.5, message="x1 keeps its hook"
        )
        exposition = generate_latest().decode()
        key = f"{namespace}/{cp_name}"
        assert f'cpo_etcd_hook_waits{{controlplane="{key}",reason="EtcdUnreachable"}} 1.0' in exposition
        assert f'cpo_etcd_members{{controlplane="{key}",role="voter"}}' in exposition
        await kube.patch(API_VERSION, "Machine", "x1", {"metadata": {"finalizers": None}}, namespace)


async def test_a_controlplane_with_external_etcd_is_left_alone(kube: Client, namespace: str) -> None:
    await kube.create(controlplane("external", namespace, 2, external=True))
    async with running_quorum_controller(kube, namespace, quick_options()):
        await kube.create(cp_machine("y0", namespace))
        await kube.patch_status(API_VERSION, "Machine", "y0", {"status": {"phase": "Running"}}, namespace)
        await holds_for(lambda: _hook_is(kube, "y0", namespace, None), duration=2.0, message="no hook")
        assert await etcd_condition(kube, "external", namespace) == {}


async def _hook_is(client: Client, name: str, namespace: str, owner: str | None) -> bool:
    return hook_owner(await get_machine(client, name, namespace)) == owner


async def test_etcd_named_by_endpoints_is_reached_with_the_client_certificate_of_the_secret(
    kube: Client, namespace: str, tmp_path: Path
) -> None:
    etcd = tls_etcd(tmp_path, "etcd-quorum-test-ca")
    supervisor = etcd.supervisor
    try:
        member = await supervisor.bootstrap("tls0")
        cp = controlplane("tls", namespace, 1)
        cp["spec"]["etcd"] = {"endpoints": [member.client_url], "tlsSecretRef": {"name": "etcd-client"}}
        await kube.create(cp)
        obj = cp_machine("tls0", namespace)
        obj["metadata"]["annotations"] = {PEER_URL_ANNOTATION: member.peer_url}
        await kube.create(obj)
        await kube.patch_status(API_VERSION, "Machine", "tls0", {"status": {"phase": "Running"}}, namespace)
        async with running_quorum_controller(kube, namespace, quick_options()):
            missing = await eventually(
                lambda: _condition_with(kube, "tls", namespace, text="etcd-client"),
                timeout=10,
                message="no Secret",
            )
            assert missing["reason"] == "EtcdUnreachable" and "not found" in missing["message"]
            await kube.create(etcd.secret("etcd-client", namespace))
            healthy = await eventually(
                lambda: _condition_with(kube, "tls", namespace, status="True"),
                timeout=15,
                message="read over TLS",
            )
            assert healthy["message"].startswith("1 members: 1 voters (1 healthy, quorum 1), 0 learners")
    finally:
        await supervisor.stop_all()
