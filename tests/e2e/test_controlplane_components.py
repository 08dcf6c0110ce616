"""The control-plane components gate every step of a ControlPlane, end to end.

One world for the module (the embedded API server, ``cpo localmachine`` and ``cpo run``, each a
subprocess; real etcd members; the provider keeps each Node's kube-apiserver,
kube-controller-manager, kube-scheduler and etcd mirror Pods in ``kube-system`` as kubelet
does), with two ControlPlanes in namespaces of their own, driven with kubectl as a user would:

* ``rollout`` (namespace ``components-rollout``): a template change whose new Machines carry
  ``kube-apiserver-notready`` in their providerSpec. The first replacement is created, and then
  no original Machine is deleted for 60 s while ``Progressing`` and ``cpo explain -o json`` name
  the replacement and its kube-apiserver. Reverting the template deletes the bad replacement
  first and keeps every original Machine.
* ``scaling`` (namespace ``components-scaling``), while the rollout's hold lasts: a scale-in
  whose marked Machine's delete waits for another Machine's crash-looping scheduler, saying why;
  deleting that Machine does not deadlock; a Machine a user deletes is replaced while another
  one's scheduler fails; a scale from 5 to 3 deletes first the Machine whose controller manager
  is not ready; a component unhealthy past ``spec.healthCheck.componentsUnhealthyTimeout`` gets
  its Machine remediated.

Each ControlPlane's quorum monitor samples its etcd all along; the last test reads both records.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio

from api.machine import API_VERSION
from demo.observer import Observer
from demo.tour import CONTROLPLANE, Tour, settled
from demo.tour import bootstrap as bootstrap_step
from demo.world import DemoWorld
from providers.localmachine import FAULT_ANNOTATION
from runtime.client import Client
from runtime.errors import NotFound
from runtime.jsoncodec import JSON
from tests.support.controlplane import cp_condition
from tests.support.explain import explain_json
from tests.support.poll import eventually, holds_for
from tests.support.tour_world import TourWorld, tour_world

pytestmark = [pytest.mark.slow, pytest.mark.kubectl, pytest.mark.asyncio(loop_scope="module")]

ROLLOUT = "components-rollout"
SCALING = "components-scaling"
CP = "controlplane.cpo.dev/v1alpha1"
HOLD = 60.0
"""Seconds the rollout must keep every original Machine while its replacement's API server fails."""


@dataclass
class Components:
    """The world, its two ControlPlanes' tours, and what the tests carry from one to the next."""

    world: TourWorld
    scaling: Tour
    scaling_observer: Observer
    originals: set[str] = field(default_factory=set)
    replacement: str = ""
    hold_started: float = 0.0


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def components(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Components]:
    world = DemoWorld(tmp_path_factory.mktemp("components"), namespace=ROLLOUT, provider_all_namespaces=True)
    async with tour_world(world, replicas=3, step_budget=240.0) as started:
        await started.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SCALING}})
        async with Observer(started.client, SCALING, controlplane=CONTROLPLANE) as observer:
            scaling = Tour(world.kubeconfig_path, SCALING, observer, replicas=3, fast=True, step_budget=240.0)
            await asyncio.gather(bootstrap_step(started.tour), bootstrap_step(scaling))
            yield Components(started, scaling, observer)


async def machines(client: Client, namespace: str) -> list[JSON]:
    listed = await client.list(API_VERSION, "Machine", namespace=namespace)
    return list(listed.get("items") or ())


def condition_of(obj: JSON, type_: str) -> JSON:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == type_), {})


async def patch_cp(tour: Tour, patch: JSON) -> None:
    await tour.kubectl("patch", "controlplane", CONTROLPLANE, "--type", "merge", "-p", json.dumps(patch))


async def set_fault(tour: Tour, machine: str, fault: str | None) -> None:
    value = "null" if fault is None else json.dumps(fault)
    patch = f'{{"metadata":{{"annotations":{{"{FAULT_ANNOTATION}":{value}}}}}}}'
    await tour.kubectl("patch", "machine", machine, "--type", "merge", "-p", patch)


async def cpo_explain(world: TourWorld, namespace: str) -> JSON:
    """``cpo explain -o json``, as a user runs it."""
    return json.loads(await explain_json(world.world.kubeconfig_path, namespace, CONTROLPLANE))  # type: ignore[no-any-return]


def template(revision: str, faults: list[str] | None) -> JSON:
    value: JSON = {"revision": revision, "faults": faults}
    return {"spec": {"template": {"spec": {"providerSpec": {"value": value}}}}}


# ---------------------------------------------------------------------------------------------- rollout


async def test_a_replacement_whose_api_server_crash_loops_holds_the_rollout_and_says_why(
    components: Components,
) -> None:
    rollout = components.world
    components.originals = {m["metadata"]["name"] for m in await machines(rollout.client, ROLLOUT)}
    assert len(components.originals) == 3
    await patch_cp(rollout.tour, template("2", ["kube-apiserver-notready"]))

    async def broken_replacement() -> str | None:
        """A new Machine whose kube-apiserver mirror Pod is there and not Ready (the provider's fact)."""
        for machine in await machines(rollout.client, ROLLOUT):
            name = machine["metadata"]["name"]
            node = ((machine.get("status") or {}).get("nodeRef") or {}).get("name")
            if name in components.originals or not node:
                continue
            try:
                pod = await rollout.client.get("v1", "Pod", f"kube-apiserver-{node}", "kube-system")
            except NotFound:
                continue
            if condition_of(pod, "Ready").get("status") == "False":
                return str(name)
        return None

    components.replacement = await eventually(
        broken_replacement, timeout=180, message="the first replacement, its kube-apiserver not ready"
    )
    components.hold_started = time.monotonic()

    async def reported() -> bool:
        machine = await rollout.client.get(API_VERSION, "Machine", components.replacement, ROLLOUT)
        return condition_of(machine, "ControlPlaneComponentsHealthy").get("reason") == "APIServerPodUnhealthy"

    await eventually(reported, timeout=60, message="the replacement's condition names its kube-apiserver")

    async def says_why() -> bool:
        progressing = cp_condition(await rollout.tour.controlplane(), "Progressing")
        message = str(progressing.get("message", ""))
        return (
            progressing.get("reason") == "ControlPlaneComponentsUnhealthy"
            and components.replacement in message
            and "kube-apiserver" in message
        )

    try:
        await eventually(
            says_why, timeout=60, message="Progressing names the replacement and its kube-apiserver"
        )
    except AssertionError as err:  # say what the ControlPlane did instead
        status = (await rollout.tour.controlplane()).get("status") or {}
        names = sorted(m["metadata"]["name"] for m in await machines(rollout.client, ROLLOUT))
        raise AssertionError(f"{err}; Machines {names}; status {json.dumps(status)}") from None
    explained = await cpo_explain(rollout, ROLLOUT)
    (entry,) = [m for m in explained["machines"] if m["name"] == components.replacement]
    assert entry["components"]["status"] == "False", entry
    assert entry["components"]["reason"] == "APIServerPodUnhealthy", entry
    assert "kube-apiserver" in entry["components"]["message"], entry
    blocked = [b for b in explained["plan"]["blocked"] if b["reason"] == "ControlPlaneComponentsUnhealthy"]
    assert blocked and components.replacement in blocked[0]["message"], explained["plan"]


# ---------------------------------------------------------------------------------------------- scaling


async def test_a_scale_in_waits_for_another_machines_scheduler_and_says_why(components: Components) -> None:
    """At 5 Machines, one's scheduler crash-loops and a user marks another for deletion
    (``machine.openshift.io/delete-machine``), then scales to 3: the delete of the marked Machine
    waits, saying why. Deleting the broken Machine does not deadlock: it goes, and the scale-in
    goes on."""
    tour, client = components.scaling, components.world.client
    await tour.kubectl("scale", f"controlplane/{CONTROLPLANE}", "--replicas", "5")
    await tour.wait_for("5 Machines settled", settled(5))
    names = sorted(m["metadata"]["name"] for m in await machines(client, SCALING))
    broken, marked = names[0], names[1]
    await set_fault(tour, broken, "kube-scheduler-notready")
    await eventually(
        lambda: scheduler_reported(components, broken), timeout=60, message="the scheduler reported not ready"
    )
    await tour.kubectl("annotate", "machine", marked, "machine.openshift.io/delete-machine=true")
    await tour.kubectl("scale", f"controlplane/{CONTROLPLANE}", "--replicas", "3")

    async def says_why() -> bool:
        progressing = cp_condition(await tour.controlplane(), "Progressing")
        message = str(progressing.get("message", ""))
        return progressing.get("reason") == "ControlPlaneComponentsUnhealthy" and broken in message

    await eventually(says_why, timeout=60, message="Progressing names the Machine whose scheduler fails")

    async def none_deleted() -> bool:
        listed = await machines(client, SCALING)
        return len(listed) == 5 and not any(m["metadata"].get("deletionTimestamp") for m in listed)

    await holds_for(none_deleted, duration=10, message="no Machine is deleted while the scheduler fails")

    # Deleting the Machine whose scheduler crash-loops does not deadlock: it goes, and so does the
    # marked one.
    await tour.kubectl("delete", "machine", broken, "--wait=false")

    def scaled_in(sample: Any, controlplane: JSON) -> bool:
        return not {broken, marked} & {m.name for m in sample.machines} and settled(3)(sample, controlplane)

    await tour.wait_for("3 Machines settled without the broken and the marked one", scaled_in)


async def at_rest(tour: Tour, replicas: int) -> None:
    """Wait until ``replicas`` Machines are settled and the ControlPlane has nothing left to do
    (``Progressing`` says ``UpToDate``): a scale-in may leave the failure domains uneven, and a
    test that breaks a Machine during the rebalance that follows would see that surplus Machine
    go first (the scale-in takes one with broken components), not the scenario it pins."""

    def resting(sample: Any, controlplane: JSON) -> bool:
        progressing = cp_condition(controlplane, "Progressing")
        return settled(replicas)(sample, controlplane) and progressing.get("reason") == "UpToDate"

    await tour.wait_for(f"{replicas} Machines settled, nothing left to do", resting)


async def scheduler_reported(components: Components, name: str) -> bool:
    machine = await components.world.client.get(API_VERSION, "Machine", name, SCALING)
    return condition_of(machine, "ControlPlaneComponentsHealthy").get("reason") == "SchedulerPodUnhealthy"


async def test_a_deleted_machine_is_replaced_while_another_machines_component_fails(
    components: Components,
) -> None:
    """A user deletes a Machine while another one's scheduler crash-loops: the replacement is
    created (it takes nothing away), so the deletion, which the etcd-quorum hook holds until the
    replacement votes, completes; the broken Machine is left to its own remediation."""
    tour, client = components.scaling, components.world.client
    await at_rest(tour, 3)
    listed = sorted(m["metadata"]["name"] for m in await machines(client, SCALING))
    count = len(listed)
    broken, deleted = listed[0], listed[1]
    await set_fault(tour, broken, "kube-scheduler-notready")
    await eventually(
        lambda: scheduler_reported(components, broken), timeout=60, message="the scheduler reported not ready"
    )
    await tour.kubectl("delete", "machine", deleted, "--wait=false")

    async def replaced() -> bool:
        present = {m["metadata"]["name"]: m for m in await machines(client, SCALING)}
        running = [m for m in present.values() if (m.get("status") or {}).get("phase") == "Running"]
        return deleted not in present and len(present) == count and len(running) == count

    try:
        await eventually(
            replaced, timeout=120, message=f"{deleted} gone and replaced while {broken} is broken"
        )
    except AssertionError as err:  # say what the ControlPlane did instead
        progressing = cp_condition(await tour.controlplane(), "Progressing")
        raise AssertionError(
            f"{err}; Progressing: {progressing.get('reason')}: {progressing.get('message')}"
        ) from None
    await set_fault(tour, broken, None)
    await tour.wait_for(f"{count} Machines settled", settled(count))


async def test_scaling_5_to_3_deletes_the_machine_whose_controller_manager_fails_first(
    components: Components,
) -> None:
    tour, client = components.scaling, components.world.client
    await tour.kubectl("scale", f"controlplane/{CONTROLPLANE}", "--replicas", "5")
    await tour.wait_for("5 Machines settled", settled(5))
    listed = await machines(client, SCALING)
    # The newest Machine: the default order (fullest domain, then oldest) would take it last.
    newest = max(listed, key=lambda m: (m["metadata"]["creationTimestamp"], m["metadata"]["name"]))
    victim = newest["metadata"]["name"]
    await set_fault(tour, victim, "kube-controller-manager-notready")

    async def reported() -> bool:
        machine = await client.get(API_VERSION, "Machine", victim, SCALING)
        return (
            condition_of(machine, "ControlPlaneComponentsHealthy").get("reason")
            == "ControllerManagerPodUnhealthy"
        )

    await eventually(reported, timeout=60, message="the controller manager reported not ready")
    before = {m["metadata"]["name"] for m in listed}
    await tour.kubectl("scale", f"controlplane/{CONTROLPLANE}", "--replicas", "3")

    async def first_deleted() -> str | None:
        gone_or_going = [
            m["metadata"]["name"]
            for m in await machines(client, SCALING)
            if m["metadata"].get("deletionTimestamp")
        ]
        present = {m["metadata"]["name"] for m in await machines(client, SCALING)}
        gone = sorted(before - present)
        found = gone + gone_or_going
        return found[0] if found else None

    assert await eventually(first_deleted, timeout=60, message="a first Machine deleted") == victim
    await tour.wait_for("3 Machines settled", settled(3))


async def test_a_component_unhealthy_past_its_timeout_gets_its_machine_remediated(
    components: Components,
) -> None:
    tour, client = components.scaling, components.world.client
    await at_rest(tour, 3)
    await patch_cp(tour, {"spec": {"healthCheck": {"componentsUnhealthyTimeout": "10s"}}})
    listed = await machines(client, SCALING)
    victim = sorted(m["metadata"]["name"] for m in listed)[0]
    await set_fault(tour, victim, "kube-scheduler-notready")

    async def marked() -> bool:
        machine = await client.get(API_VERSION, "Machine", victim, SCALING)
        check = condition_of(machine, "HealthCheckSucceeded")
        return check.get("status") == "False" and check.get("reason") == "UnhealthyMachineCondition"

    await eventually(marked, timeout=90, message="the health check marks the Machine past the timeout")

    def replaced(sample: Any, controlplane: JSON) -> bool:
        return victim not in {m.name for m in sample.machines} and settled(3)(sample, controlplane)

    await tour.wait_for("the Machine remediated and 3 settled", replaced)
    assert (await tour.controlplane())["status"]["lastRemediation"]["machine"] == victim


# ------------------------------------------------------------------------------------- rollout, reverted


async def test_reverting_the_template_deletes_the_bad_replacement_first_and_keeps_every_original(
    components: Components,
) -> None:
    rollout = components.world
    client = rollout.client

    async def originals_kept() -> bool:
        """Every original there and not being deleted, beside the one replacement only."""
        present = {m["metadata"]["name"]: m for m in await machines(client, ROLLOUT)}
        return set(present) == components.originals | {components.replacement} and not any(
            present[name]["metadata"].get("deletionTimestamp") for name in components.originals
        )

    remaining = HOLD - (time.monotonic() - components.hold_started)
    if remaining > 0:
        await holds_for(originals_kept, duration=remaining, message="every original Machine kept")
    assert await originals_kept()
    assert time.monotonic() - components.hold_started >= HOLD
    # What the observer sampled all along says the same: no original was ever being deleted.
    for sample in rollout.observer.samples:
        gone = [m.name for m in sample.machines if m.name in components.originals and m.deleting]
        assert gone == [], (sample.at, gone)

    await patch_cp(rollout.tour, template("1", None))

    async def only_originals() -> bool:
        present = {m["metadata"]["name"] for m in await machines(client, ROLLOUT)}
        return present == components.originals

    await eventually(only_originals, timeout=180, message="the bad replacement deleted, the originals kept")
    await rollout.tour.wait_for("3 Machines settled", settled(3))
    assert {m["metadata"]["name"] for m in await machines(client, ROLLOUT)} == components.originals


async def test_the_quorum_monitors_saw_quorum_kept_all_along(components: Components) -> None:
    for observer in (components.world.observer, components.scaling_observer):
        monitor = observer.monitor
        assert monitor is not None
        samples = monitor.samples
        assert len(samples) > 50, "the monitor sampled etcd all along"
        monitor.assert_never_lost_quorum()
