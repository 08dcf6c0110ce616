"""etcd members whose Machine went behind the operator's back, as an SRE meets them.

One world for the module (the embedded API server, ``cpo localmachine --realistic`` and ``cpo
run``, each a subprocess, started by :class:`demo.world.DemoWorld`), with the etcd-quorum-hook
controller's grace for a dead member of no Machine cut to :data:`GRACE` seconds. Each scenario
stops ``cpo run`` (the operators are down), makes a Machine go while its member stays, as users
and accidents do, starts ``cpo run`` again, and checks what it does with the member left behind:

1. the member killed, its Machine deleted and the hook taken off by hand (the escape hatch): the
   dead member is removed within the grace period plus a minute, and the ControlPlane returns to
   its replicas with every voter healthy;
2. the Machine deleted with its finalizer stripped while its member runs on (a healthy member of
   no Machine): it stays, named by the ``EtcdClusterHealthy`` condition and ``cpo explain``;
3. the member killed and the Machine's finalizer stripped, so its Node stays: the dead member
   stays while the Node does, and goes once the Node is deleted;
4. the same dead member while every other Machine is being deleted by a user and the replacement
   cannot join (etcd refuses every member add while a voter is dead): it still goes.

The quorum monitor samples etcd over TLS all along; every scenario checks its record since the
scenario began.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from api.machine import API_VERSION
from controllers.etcdquorum.members_without_machine import KEPT_HEALTHY, KEPT_NODE_PRESENT
from demo.lifetime import end_processes
from demo.observer import Sample
from demo.tour import CONTROLPLANE, FAULT_ANNOTATION, settled
from demo.tour import bootstrap as bootstrap_step
from demo.world import DemoWorld
from providers.localmachine.etcd_process import recorded_processes
from runtime.client import Client
from runtime.errors import NotFound
from runtime.jsoncodec import JSON
from tests.support.controlplane import cp_condition
from tests.support.explain import explain_json
from tests.support.poll import eventually
from tests.support.tour_world import TourWorld as World
from tests.support.tour_world import tour_world

pytestmark = [pytest.mark.slow, pytest.mark.kubectl, pytest.mark.asyncio(loop_scope="module")]

NAMESPACE = "orphans"
CP = "controlplane.cpo.dev/v1alpha1"
GRACE = 5.0
"""``cpo run --etcd-member-without-machine-grace``: seconds a dead member of no Machine waits."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def orphans(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    world = DemoWorld(
        tmp_path_factory.mktemp("orphans-world"),
        namespace=NAMESPACE,
        realistic=True,
        operator_flags=(f"--etcd-member-without-machine-grace={GRACE:g}",),
    )
    async with tour_world(world) as started:
        await bootstrap_step(started.tour)
        yield started


async def machines(client: Client) -> list[JSON]:
    listed = await client.list(API_VERSION, "Machine", namespace=NAMESPACE)
    return list(listed.get("items") or ())


def members(world: World) -> set[str]:
    """Every member's name (its Node's, in realistic mode) at the monitor's last sample."""
    assert world.observer.monitor is not None
    return {name.removesuffix("~") for name in world.observer.monitor.samples[-1].machines}


async def pick_victim(world: World) -> tuple[str, str]:
    """A Machine whose member does not lead (so no election muddies the record), and its Node."""
    assert world.observer.monitor is not None
    leader = world.observer.monitor.samples[-1].leader
    victim = next(m for m in await machines(world.client) if m["status"]["nodeRef"]["name"] != leader)
    return victim["metadata"]["name"], victim["status"]["nodeRef"]["name"]


async def member_is_unhealthy(world: World, member: str) -> None:
    def dead() -> bool:
        assert world.observer.monitor is not None
        return member in world.observer.monitor.samples[-1].unhealthy_voters

    await eventually(dead, timeout=30, message=f"member {member} unhealthy")


async def killed_with_the_operators_stopped(world: World) -> tuple[str, str]:
    """Stop ``cpo run``, kill a non-leading Machine's member (the provider's fault) and wait until
    it fails its health reads: that Machine and its member's name."""
    victim, member = await pick_victim(world)
    await world.world.child("operator").stop()
    await world.tour.kubectl("annotate", "machine", victim, f"{FAULT_ANNOTATION}=kill")
    await member_is_unhealthy(world, member)
    return victim, member


async def machine_gone(world: World, name: str) -> None:
    async def gone() -> bool:
        try:
            await world.client.get(API_VERSION, "Machine", name, NAMESPACE)
        except NotFound:
            return True
        return False

    await eventually(gone, timeout=60, message=f"Machine {name} gone")


async def delete_without_finalizer(world: World, name: str) -> None:
    """``kubectl delete`` the Machine and strip its finalizers and hooks: it goes at once, and the
    provider never terminates its instance (its member and Node stay)."""
    await world.tour.kubectl("delete", "machine", name, "--wait=false")
    await world.tour.kubectl(
        "patch",
        "machine",
        name,
        "--type=merge",
        "-p",
        json.dumps({"metadata": {"finalizers": None}, "spec": {"lifecycleHooks": None}}),
    )
    await machine_gone(world, name)


async def member_removed(world: World, member: str) -> None:
    await eventually(
        lambda: member not in members(world), timeout=GRACE + 60, message=f"the dead member {member} removed"
    )


async def etcd_cluster_healthy(world: World) -> JSON:
    cp = await world.client.get(CP, "ControlPlane", CONTROLPLANE, NAMESPACE)
    return cp_condition(cp, "EtcdClusterHealthy")


async def test_a_dead_member_whose_machine_was_deleted_by_hand_is_removed(orphans: World) -> None:
    """With the operators stopped, a member is killed, its Machine deleted and its hook removed by
    hand (the escape hatch: the Machine is drained and terminated, the member stays in etcd). Once
    the operators are back the dead member is removed within the grace period plus a minute, and
    the ControlPlane returns to 3 replicas with 3 healthy voters."""
    monitor = orphans.observer.monitor
    assert monitor is not None
    since = monitor.mark()
    victim, member = await killed_with_the_operators_stopped(orphans)
    await orphans.tour.kubectl("delete", "machine", victim, "--wait=false")
    await orphans.tour.kubectl(
        "patch", "machine", victim, "--type=merge", "-p", '{"spec":{"lifecycleHooks":{"preDrain":null}}}'
    )
    await machine_gone(orphans, victim)
    assert member in members(orphans), "the escape hatch leaves the member in etcd"
    restarted = time.monotonic()
    await orphans.world.start_operator(0)

    await eventually(
        lambda: member not in members(orphans),
        timeout=GRACE + 60,
        message=f"the dead member {member} removed within the grace period plus a minute",
    )
    removed_after = time.monotonic() - restarted
    await orphans.tour.wait_for("3 voters", settled(3))
    sample = monitor.samples[-1]
    assert (sample.voters, sample.healthy_voters, sample.learners) == (3, 3, 0), sample
    assert removed_after >= GRACE, f"removed {removed_after:.1f}s after the restart: before its grace"
    monitor.assert_never_lost_quorum(since=since)
    assert monitor.peak("voters", since=since) <= 4
    listed = await orphans.client.list("v1", "Event", namespace=NAMESPACE)
    assert any(
        e.get("reason") == "MemberWithoutMachineRemoved" and member in e.get("message", "")
        for e in listed.get("items") or ()
    ), "an Event says which member went and why"


async def test_a_healthy_member_of_no_machine_stays_and_is_reported(orphans: World) -> None:
    """The Machine goes with its finalizer stripped while its member runs on, and the member's Node
    is deleted too: a healthy member of no Machine and no Node. It may be one the cluster runs
    outside the Machine API: it stays past the grace period, reported by ``EtcdClusterHealthy``
    and ``cpo explain``."""
    monitor = orphans.observer.monitor
    assert monitor is not None
    since = monitor.mark()
    victim, member = await pick_victim(orphans)
    await orphans.world.child("operator").stop()
    await delete_without_finalizer(orphans, victim)
    await orphans.tour.kubectl("delete", "node", member)
    restarted = time.monotonic()
    await orphans.world.start_operator(0)

    async def reported_kept() -> bool:
        message = (await etcd_cluster_healthy(orphans)).get("message", "")
        return f"kept ({KEPT_HEALTHY}): member {member}" in message

    await eventually(reported_kept, timeout=30, message=f"EtcdClusterHealthy names {member} as kept")

    async def past_grace_and_still_there() -> bool:
        assert member in members(orphans), f"the healthy member {member} was removed"
        return time.monotonic() - restarted > GRACE + 5

    await eventually(past_grace_and_still_there, timeout=GRACE + 30, message="the grace period passed")
    condition = await etcd_cluster_healthy(orphans)
    assert condition["reason"] == "MembersWithoutMachine", condition
    explained = json.loads(await cpo_explain(orphans))
    shown = next(c for c in explained["conditions"] if c["type"] == "EtcdClusterHealthy")
    assert f"kept ({KEPT_HEALTHY}): member {member}" in shown["message"], shown

    # Once it stops answering, it is a dead member of no Machine and no Node: it goes after its
    # grace, and the ControlPlane, whose creates waited for etcd to match its Machines, is whole.
    await end_processes(recorded_processes(orphans.world.state_dir, victim), 10)
    await eventually(
        lambda: member not in members(orphans),
        timeout=GRACE + 60,
        message=f"the dead member {member} removed",
    )
    await orphans.tour.wait_for("3 voters", settled(3))
    monitor.assert_never_lost_quorum(since=since)


async def test_a_dead_member_stays_while_its_node_does(orphans: World) -> None:
    """The member is killed and its Machine goes with its finalizer stripped, so the provider never
    terminates it and its Node stays. A Node still speaks for the member: it stays past the grace
    period, reported. Deleting the Node (the host is gone) lets it go."""
    monitor = orphans.observer.monitor
    assert monitor is not None
    since = monitor.mark()
    victim, member = await killed_with_the_operators_stopped(orphans)
    await delete_without_finalizer(orphans, victim)
    await orphans.client.get("v1", "Node", member)  # the provider did not terminate: the Node stays
    restarted = time.monotonic()
    await orphans.world.start_operator(0)

    async def kept_for_its_node_past_grace() -> bool:
        assert member in members(orphans), f"the member {member} went while its Node exists"
        message = (await etcd_cluster_healthy(orphans)).get("message", "")
        return (
            time.monotonic() - restarted > GRACE + 5
            and f"kept ({KEPT_NODE_PRESENT}): member {member}" in message
        )

    await eventually(kept_for_its_node_past_grace, timeout=GRACE + 30, message=f"{member} kept for its Node")
    await orphans.tour.kubectl("delete", "node", member)
    await eventually(
        lambda: member not in members(orphans),
        timeout=GRACE + 60,
        message=f"the dead member {member} removed",
    )
    await orphans.tour.wait_for("3 voters", settled(3))
    sample = monitor.samples[-1]
    assert (sample.voters, sample.healthy_voters, sample.learners) == (3, 3, 0), sample
    monitor.assert_never_lost_quorum(since=since)


async def cpo_explain(world: World) -> str:
    """``cpo explain -o json`` of the ControlPlane, as a user runs it."""
    return await explain_json(world.world.kubeconfig_path, NAMESPACE, CONTROLPLANE)


async def test_a_dead_member_goes_while_every_machine_is_being_replaced(orphans: World) -> None:
    """With the operators stopped, one member is killed and its Machine goes (finalizer stripped,
    Node deleted: the host is gone), and the two other Machines are deleted by a user (their hooks
    hold them: their members are healthy voters). No Machine is Running once the operators are
    back: two are being deleted and the replacement is provisioning, and it cannot join while the
    dead voter is listed (etcd refuses every member add then). The dead member must still go, so
    that the replacements join, vote, and the old Machines leave one by one."""
    monitor = orphans.observer.monitor
    assert monitor is not None
    since = monitor.mark()
    victim, member = await killed_with_the_operators_stopped(orphans)
    others = [
        m["metadata"]["name"] for m in await machines(orphans.client) if m["metadata"]["name"] != victim
    ]
    await delete_without_finalizer(orphans, victim)
    await orphans.tour.kubectl("delete", "node", member)
    for name in others:
        await orphans.tour.kubectl("delete", "machine", name, "--wait=false")
    await orphans.world.start_operator(0)

    await member_removed(orphans, member)

    def renewed(now: Sample, controlplane: dict[str, Any]) -> bool:
        return not {victim, *others} & {m.name for m in now.machines} and settled(3)(now, controlplane)

    await orphans.tour.wait_for("every Machine replaced", renewed)
    sample = monitor.samples[-1]
    assert (sample.voters, sample.healthy_voters, sample.learners) == (3, 3, 0), sample
    monitor.assert_never_lost_quorum(since=since)
