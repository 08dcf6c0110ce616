"""``maxSurge: 0`` where there is no spare host: a rolling update on one host per failure domain.

One world for the module (the embedded API server, ``cpo localmachine --realistic
--max-instances-per-domain 1`` and ``cpo run``, each a subprocess, started by
:class:`demo.world.DemoWorld`): three failure domains with one host each, as bare metal with
exactly as many hosts as replicas. A replacement Machine stays ``Provisioning`` until the old
instance of its domain is gone, and then takes the freed host's address. The ControlPlane marks the
Machines its maxSurge-0 rollout deletes; the etcd-quorum-hook controller removes a marked
Machine's healthy voter before its replacement votes, so the host is freed. The tests run in
order on that world:

1. a maxSurge-0 rolling update of 3 replicas completes: every Machine replaced, never more than 3
   members, voters never below 2, quorum never lost, no acknowledged write lost;
2. the same rollout with a member unhealthy elsewhere waits, and the condition says why, until the
   member is back;
3. a user's ``kubectl delete machine`` under maxSurge 0 keeps the add-then-remove order: the old
   member stays until its replacement votes (the provider given a spare host for it).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from api.controlplane import REMOVE_MEMBER_FIRST_ANNOTATION
from api.machine import API_VERSION
from demo.monitor import QuorumSample
from demo.observer import Sample
from demo.tour import CONTROLPLANE, FAULT_ANNOTATION, settled
from demo.tour import bootstrap as bootstrap_step
from demo.world import DemoWorld
from demo.writer import EtcdWriter
from runtime.client import Client
from runtime.jsoncodec import JSON
from tests.support.controlplane import cp_condition
from tests.support.poll import eventually
from tests.support.tour_world import TourWorld as World
from tests.support.tour_world import tour_world

pytestmark = [pytest.mark.slow, pytest.mark.kubectl, pytest.mark.asyncio(loop_scope="module")]

NAMESPACE = "metal"
CP = "controlplane.cpo.dev/v1alpha1"
NO_SURGE = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}}}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def metal(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    world = DemoWorld(
        tmp_path_factory.mktemp("metal-world"),
        namespace=NAMESPACE,
        realistic=True,
        max_instances_per_domain=1,
    )
    async with tour_world(world, step_budget=240.0) as started:
        await bootstrap_step(started.tour)
        await started.tour.kubectl(
            "patch", "controlplane", CONTROLPLANE, "--type", "merge", "-p", json.dumps(NO_SURGE)
        )
        yield started


async def machines(client: Client) -> list[JSON]:
    listed = await client.list(API_VERSION, "Machine", namespace=NAMESPACE)
    return list(listed.get("items") or ())


def internal_ip(obj: JSON) -> str:
    return next(a["address"] for a in obj["status"]["addresses"] if a["type"] == "InternalIP")


def since(world: World, mark: float) -> list[QuorumSample]:
    assert world.observer.monitor is not None
    return [s for s in world.observer.monitor.samples if s.at >= mark and s.error is None]


async def roll(world: World, revision: str) -> None:
    patch = {"spec": {"template": {"spec": {"providerSpec": {"value": {"revision": revision}}}}}}
    await world.tour.kubectl(
        "patch", "controlplane", CONTROLPLANE, "--type", "merge", "-p", json.dumps(patch)
    )


async def all_replaced(world: World, before: set[str]) -> None:
    def renewed(now: Sample, controlplane: dict[str, Any]) -> bool:
        return not before & {m.name for m in now.machines} and settled(3)(now, controlplane)

    await world.tour.wait_for("all 3 Machines replaced", renewed)


async def test_a_max_surge_zero_rollout_completes_on_one_host_per_domain(metal: World) -> None:
    monitor = metal.observer.monitor
    assert monitor is not None
    before = await machines(metal.client)
    names = {m["metadata"]["name"] for m in before}
    addresses = {internal_ip(m) for m in before}
    mark = monitor.mark()
    writer = EtcdWriter(metal.observer.endpoints, client_options=lambda: metal.observer.client_options)
    async with writer:
        await roll(metal, "2")
        await all_replaced(metal, names)
    verification = await writer.verify(metal.observer.endpoints())
    assert verification.acknowledged > 0
    assert verification.lost == [], verification.lost[:10]

    after = await machines(metal.client)
    assert {internal_ip(m) for m in after} == addresses, "each replacement took its old host's address"
    samples = since(metal, mark)
    assert max(s.voters + s.learners for s in samples) <= 3, "never more than 3 members (3 hosts)"
    assert min(s.voters for s in samples) >= 2, "voters never below desired - 1"
    monitor.assert_never_lost_quorum(since=mark)
    listed = await metal.client.list("v1", "Event", namespace=NAMESPACE)
    early = [
        e
        for e in listed.get("items") or ()
        if e.get("reason") == "MemberRemoved" and "maxSurge 0" in e["message"]
    ]
    assert early, "the old members were removed before their replacements voted (maxSurge 0)"


async def test_a_member_unhealthy_elsewhere_holds_the_early_removal_and_says_why(metal: World) -> None:
    """The rollout's first delete is made while the etcd-quorum-hook controller is off; then another
    member stops answering (its Node stays Ready: no remediation) and the controller comes back. The
    marked Machine's member stays, the condition says which member holds it; once the member
    answers again the rollout completes."""
    monitor = metal.observer.monitor
    assert monitor is not None
    mark = monitor.mark()
    names = {m["metadata"]["name"] for m in await machines(metal.client)}
    await metal.world.child("operator").stop()
    await metal.world.start_operator(0, "*,-etcd-quorum-hook")
    await roll(metal, "3")

    async def marked_deleting() -> JSON | None:
        for machine in await machines(metal.client):
            metadata = machine["metadata"]
            if metadata.get("deletionTimestamp") and REMOVE_MEMBER_FIRST_ANNOTATION in (
                metadata.get("annotations") or {}
            ):
                return machine
        return None

    old = await eventually(marked_deleting, timeout=60, message="the rollout deletes a marked Machine")
    other = next(m for m in await machines(metal.client) if m["metadata"]["name"] != old["metadata"]["name"])
    other_node = other["status"]["nodeRef"]["name"]
    await metal.tour.kubectl(
        "annotate", "machine", other["metadata"]["name"], f"{FAULT_ANNOTATION}=stop-member"
    )

    def unhealthy() -> bool:
        return other_node in monitor.samples[-1].unhealthy_voters

    await eventually(unhealthy, timeout=30, message=f"member {other_node} unhealthy")
    await metal.world.child("operator").stop()
    await metal.world.start_operator(0)

    async def says_why() -> bool:
        cp = await metal.client.get(CP, "ControlPlane", CONTROLPLANE, NAMESPACE)
        message = cp_condition(cp, "EtcdClusterHealthy").get("message", "")
        return "waiting (MembersUnhealthy)" in message and f"unhealthy voters {other_node}" in message

    await eventually(says_why, timeout=30, message="EtcdClusterHealthy says the unhealthy member holds it")
    assert min(s.voters for s in since(metal, mark)) >= 3, "nothing was removed beside the unhealthy member"
    await metal.tour.kubectl("annotate", "machine", other["metadata"]["name"], f"{FAULT_ANNOTATION}-")
    await all_replaced(metal, names)
    monitor.assert_never_lost_quorum(since=mark)


async def test_a_users_delete_under_max_surge_zero_keeps_add_then_remove(metal: World) -> None:
    """A Machine a user deletes is not marked: its member stays until the replacement votes. The
    provider is restarted with a spare host so that the replacement can come up beside it."""
    monitor = metal.observer.monitor
    assert monitor is not None
    await metal.world.child("localmachine").stop()
    metal.world.max_instances_per_domain = 2
    await metal.world.start_provider()
    mark = monitor.mark()
    victim = (await machines(metal.client))[0]["metadata"]["name"]
    await metal.tour.kubectl("delete", "machine", victim, "--wait=false")

    def replaced(now: Sample, controlplane: dict[str, Any]) -> bool:
        return victim not in {m.name for m in now.machines} and settled(3)(now, controlplane)

    await metal.tour.wait_for(f"{victim} replaced", replaced)
    samples = since(metal, mark)
    assert min(s.voters for s in samples) >= 3, "the user's delete never lowered the voters"
    assert max(s.voters for s in samples) == 4, "the replacement voted before the old member went"
    monitor.assert_never_lost_quorum(since=mark)
