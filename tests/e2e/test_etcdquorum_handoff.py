"""No etcd member removal costs an election: leadership is handed off right before each removal.

One world for the module (the embedded API server, ``cpo localmachine`` and ``cpo run``, each a
subprocess, started by :class:`demo.world.DemoWorld`; real etcd members), driven as a user would
with kubectl: a ControlPlane of 5, then ``kubectl delete machine`` of the etcd leader's Machine
(the ControlPlane's own hand-off never sees a user's deletion), a rolling update that replaces
every Machine, and a scale from 5 to 3 that deletes the leader's Machine first. Every member
removal leaves a ``MemberRemoved`` Event on its Machine naming the leader and the raft term read
right before the removal and the term read right after it; the last test reads them all through
the API: the removed member never led and no removal changed the term. The quorum monitor samples
etcd all along; its record shows quorum kept throughout.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio

from api.machine import API_VERSION
from demo.monitor import quorum_losses
from demo.observer import Sample
from demo.tour import CONTROLPLANE, rollout, settled
from demo.tour import bootstrap as bootstrap_step
from demo.world import DemoWorld
from runtime.client import Client
from tests.support.poll import eventually
from tests.support.tour_world import TourWorld, tour_world

pytestmark = [pytest.mark.slow, pytest.mark.kubectl, pytest.mark.asyncio(loop_scope="module")]

NAMESPACE = "handoff"
REPLICAS = 5
DELETE_MACHINE_ANNOTATION = "machine.openshift.io/delete-machine"
"""A scale-in deletes the Machine carrying it first (OpenShift's Machine API convention)."""
REMOVED = re.compile(
    r"^etcd (?P<role>voter|learner) (?P<member>.+?) removed: .*; "
    r"leader before: (?P<leader>.+), term (?P<before>\d+|\?) → (?P<after>\d+|\?)$"
)
"""A ``MemberRemoved`` Event's message (the etcd-quorum-hook package docstring, What to watch)."""


@dataclass
class World(TourWorld):
    deleted_leader: str | None = None
    """The leader's Machine a user deleted."""
    scaled_in_leader: str | None = None
    """The leader's Machine the scale from 5 to 3 deleted first."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def handoff(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    world = DemoWorld(tmp_path_factory.mktemp("handoff-world"), namespace=NAMESPACE)
    async with tour_world(world, replicas=REPLICAS, step_budget=240.0) as started:
        yield World(started.world, started.client, started.observer, started.tour)


async def machine_names(client: Client) -> set[str]:
    listed = await client.list(API_VERSION, "Machine", namespace=NAMESPACE)
    return {item["metadata"]["name"] for item in listed.get("items") or ()}


async def leader_machine(handoff: World) -> str:
    """The Machine whose member leads, as the quorum monitor saw it last (the local provider names
    each member after its Machine)."""
    monitor = handoff.observer.monitor
    assert monitor is not None

    async def leader() -> str | None:
        sample = monitor.samples[-1] if monitor.samples else None
        if sample is None or sample.leader not in await machine_names(handoff.client):
            return None
        return sample.leader

    return str(await eventually(leader, timeout=30, message="etcd has a leader among the Machines"))


async def removal_events(client: Client) -> dict[str, str]:
    """Per Machine, the message of its ``MemberRemoved`` Event."""
    listed = await client.list("v1", "Event", namespace=NAMESPACE)
    return {
        e["involvedObject"]["name"]: e.get("message", "")
        for e in listed.get("items") or ()
        if e.get("reason") == "MemberRemoved" and e["involvedObject"].get("kind") == "Machine"
    }


async def test_bootstrap_five(handoff: World) -> None:
    await bootstrap_step(handoff.tour)


async def test_a_user_deletes_the_leaders_machine(handoff: World) -> None:
    victim = await leader_machine(handoff)
    handoff.deleted_leader = victim
    await handoff.tour.kubectl("delete", "machine", victim, "--wait=false")

    def replaced(sample: Sample, controlplane: dict[str, Any]) -> bool:
        return all(m.name != victim for m in sample.machines) and settled(REPLICAS)(sample, controlplane)

    await handoff.tour.wait_for(f"{victim} replaced", replaced)
    assert victim in await removal_events(handoff.client)


async def test_a_rolling_update_replaces_every_machine(handoff: World) -> None:
    await rollout(handoff.tour)


async def test_scaling_from_five_to_three_deletes_the_leaders_machine_first(handoff: World) -> None:
    victim = await leader_machine(handoff)
    handoff.scaled_in_leader = victim
    await handoff.tour.kubectl("annotate", "machine", victim, f"{DELETE_MACHINE_ANNOTATION}=")
    await handoff.tour.kubectl("scale", f"controlplane/{CONTROLPLANE}", "--replicas", "3")
    await handoff.tour.wait_for("3 voters", settled(3))
    assert victim not in await machine_names(handoff.client)


async def test_no_removal_removed_the_leader_or_changed_the_term(handoff: World) -> None:
    events = await removal_events(handoff.client)
    # 1 deleted by a user, 5 replaced by the rollout, 2 gone in the scale-in.
    assert len(events) == 1 + REPLICAS + 2, events
    assert handoff.deleted_leader in events and handoff.scaled_in_leader in events
    parsed = {}
    for machine, message in events.items():
        found = REMOVED.match(message)
        assert found is not None, (machine, message)
        parsed[machine] = found
    led = {machine: m["leader"] for machine, m in parsed.items() if m["leader"] == m["member"]}
    assert led == {}, f"removed while leading: {led}"
    terms = {machine: (m["before"], m["after"]) for machine, m in parsed.items() if m["before"] != m["after"]}
    assert terms == {}, f"term changed across the removal: {terms}"
    monitor = handoff.observer.monitor
    assert monitor is not None
    samples = monitor.samples
    assert quorum_losses(samples) == [], [
        (samples[start].at, samples[end - 1].at) for start, end in quorum_losses(samples)
    ]
