"""A ControlPlane does what its user means: adopting Machines in an unlisted failure domain is
refused, and ``UPDATED`` reaches ``DESIRED`` only once every replacement is Ready.

One world for the module (the embedded API server, ``cpo localmachine`` and ``cpo run``, each a
subprocess, started by :class:`demo.world.DemoWorld`; real etcd members), driven with kubectl as
a user would. The tests run in order on that world:

1. three Machines run, one in each of zone-a, zone-b and zone-c (a ControlPlane made them, then
   was deleted: its Machines were released and stay). A ControlPlane listing only zone-a and
   zone-b is refused at creation, and again when created Inactive and patched Active, with both
   lists in the message: an Active one would replace the zone-c Machine at once. Listing all
   three, it is activated and replaces nothing;
2. a rolling update whose last replacement's Node is not Ready (the local provider's ``notready``
   fault, annotated on the replacement Machine as soon as it appears): ``kubectl get
   controlplane`` shows ``UPDATED`` below ``DESIRED`` for as long as it is not Ready, and equal
   to it once the fault is removed and the rollout ends.

Its provider makes no mirror Pods (``cpo localmachine --no-static-pods``): a cluster whose
control-plane components are not static pods where ``cpo run --control-plane-components`` looks.
3. the ControlPlane reports that misconfiguration (``ControlPlaneComponentsHealthy`` Unknown,
   ``ComponentPodsNotFound``, naming the flag to set) and the check counts as off: the adoption
   and the rolling update above went as before, and every Machine is ready.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import yaml

from api.failuredomains import FAILURE_DOMAIN_LABEL
from api.machine import API_VERSION
from demo.observer import Sample
from demo.tour import CONTROLPLANE, FAULT_ANNOTATION, Tour, settled
from demo.tour import bootstrap as bootstrap_step
from demo.world import DemoWorld, KubectlError
from runtime.client import Client
from runtime.errors import NotFound
from runtime.jsoncodec import JSON
from tests.support.poll import eventually, holds_for
from tests.support.tour_world import TourWorld as World
from tests.support.tour_world import tour_world

pytestmark = [pytest.mark.slow, pytest.mark.kubectl, pytest.mark.asyncio(loop_scope="module")]

NAMESPACE = "intent"
CP = "controlplane.cpo.dev/v1alpha1"
REPLICAS = 3
COMPONENTS_GRACE = 5.0
"""``cpo run --control-plane-components-grace``: seconds before no Pod seen is a misconfiguration."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def intent(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    world = DemoWorld(
        tmp_path_factory.mktemp("intent-world"),
        namespace=NAMESPACE,
        static_pods=False,
        operator_flags=("--control-plane-components-grace", str(COMPONENTS_GRACE)),
    )
    async with tour_world(world, replicas=REPLICAS, step_budget=240.0) as started:
        await bootstrap_step(started.tour)
        yield started


async def machines(client: Client) -> list[JSON]:
    listed = await client.list(API_VERSION, "Machine", namespace=NAMESPACE)
    return list(listed.get("items") or ())


def manifest(tour: Tour, domains: tuple[str, ...], state: str | None = None) -> str:
    """The tour's ControlPlane listing ``domains``, without autorepair (a Machine left NotReady on
    purpose must not be remediated)."""
    obj = tour.manifest()
    spec: dict[str, Any] = obj["spec"]
    spec["failureDomains"] = [d for d in spec["failureDomains"] if d["name"] in domains]
    spec.pop("healthCheck", None)
    spec["enableAutorepair"] = False
    if state is not None:
        spec["state"] = state
    return yaml.safe_dump(obj)


def one_line(text: str) -> str:
    return " ".join(text.split())


async def refusal(tour: Tour, *args: str, input_text: str | None = None) -> str:
    try:
        out = await tour.kubectl(*args, input_text=input_text)
    except KubectlError as refused:
        return one_line(str(refused))
    raise AssertionError(f"kubectl {' '.join(args)} was accepted: {out}")


async def test_adopting_machines_in_an_unlisted_zone_is_refused_with_both_lists(intent: World) -> None:
    before = {m["metadata"]["name"]: m for m in await machines(intent.client)}
    zone_c = next(
        name for name, m in before.items() if m["metadata"]["labels"].get(FAILURE_DOMAIN_LABEL) == "zone-c"
    )
    await intent.tour.kubectl("delete", "controlplane", CONTROLPLANE)

    async def released() -> bool:
        try:
            await intent.client.get(CP, "ControlPlane", CONTROLPLANE, NAMESPACE)
            return False
        except NotFound:
            pass
        return all(not m["metadata"].get("ownerReferences") for m in await machines(intent.client))

    await eventually(released, timeout=60, message="the ControlPlane gone and its Machines released")
    assert set(before) == {m["metadata"]["name"] for m in await machines(intent.client)}

    lists = "spec.failureDomains lists [zone-a, zone-b] and the control-plane Machines matching "
    lists += "spec.selector run in [zone-a, zone-b, zone-c]"
    two = ("zone-a", "zone-b")
    out = await refusal(intent.tour, "apply", "-f", "-", input_text=manifest(intent.tour, two))
    assert "spec.failureDomains: Forbidden:" in out, out
    assert lists in out, out
    assert f"would replace {zone_c} (zone-c) at once" in out, out

    await intent.tour.kubectl("apply", "-f", "-", input_text=manifest(intent.tour, two, "Inactive"))
    patch = ["patch", "controlplane", CONTROLPLANE, "--type", "merge", "-p"]
    out = await refusal(intent.tour, *patch, '{"spec":{"state":"Active"}}')
    assert "spec.failureDomains: Forbidden:" in out and lists in out, out
    assert "or keep spec.state Inactive" in out, out

    three = ("zone-a", "zone-b", "zone-c")
    domains = yaml.safe_load(manifest(intent.tour, three))["spec"]["failureDomains"]
    await intent.tour.kubectl(*patch, json.dumps({"spec": {"state": "Active", "failureDomains": domains}}))

    def adopted(now: Sample, controlplane: dict[str, Any]) -> bool:
        return {m.name for m in now.machines} == set(before) and settled(REPLICAS)(now, controlplane)

    await intent.tour.wait_for("the three Machines adopted as they are", adopted)
    owned = await machines(intent.client)
    assert all(m["metadata"].get("ownerReferences") for m in owned), "every Machine adopted"
    assert {m["metadata"]["name"] for m in owned} == set(before), "nothing replaced"


async def printed(tour: Tour) -> dict[str, str]:
    """``kubectl get controlplane``'s row, by column."""
    header, row = (await tour.kubectl("get", "controlplane", CONTROLPLANE)).splitlines()[:2]
    return dict(zip(header.split(), row.split(), strict=True))


async def test_updated_counts_a_replacement_only_once_it_is_ready(intent: World) -> None:
    await intent.tour.wait_for(f"{REPLICAS} Machines settled", settled(REPLICAS))
    before = {m["metadata"]["name"] for m in await machines(intent.client)}
    patch = {"spec": {"template": {"spec": {"providerSpec": {"value": {"revision": "2"}}}}}}
    await intent.tour.kubectl(
        "patch", "controlplane", CONTROLPLANE, "--type", "merge", "-p", json.dumps(patch)
    )

    seen: list[str] = []

    async def third_new() -> str | None:
        new = [m for m in await machines(intent.client) if m["metadata"]["name"] not in before]
        for m in sorted(new, key=lambda m: m["metadata"]["creationTimestamp"]):
            if m["metadata"]["name"] not in seen:
                seen.append(m["metadata"]["name"])
        return seen[REPLICAS - 1] if len(seen) >= REPLICAS else None

    last = await eventually(third_new, timeout=240, message="the rollout's last replacement", interval=0.1)
    await intent.tour.kubectl("annotate", "machine", last, f"{FAULT_ANNOTATION}=notready")

    async def unready_snapshot() -> JSON | None:
        cp = json.loads(await intent.tour.kubectl("get", "controlplane", CONTROLPLANE, "-o", "json"))
        ready = next(c for c in cp["status"]["conditions"] if c["type"] == "MachinesReady")
        return cp if ready["status"] == "False" and last in ready.get("message", "") else None

    cp = await eventually(unready_snapshot, timeout=60, message=f"{last} seen not Ready by the ControlPlane")
    status = cp["status"]
    assert status["updatedReplicas"] < cp["spec"]["replicas"], status

    async def below() -> bool:
        row = await printed(intent.tour)
        return int(row["UPDATED"]) < int(row["DESIRED"])

    await holds_for(below, duration=5, message="UPDATED below DESIRED while the replacement is not Ready")

    await intent.tour.kubectl("annotate", "machine", last, f"{FAULT_ANNOTATION}-")

    def renewed(now: Sample, controlplane: dict[str, Any]) -> bool:
        return not before & {m.name for m in now.machines} and settled(REPLICAS)(now, controlplane)

    await intent.tour.wait_for("every Machine replaced and Ready", renewed)
    row = await printed(intent.tour)
    assert row["UPDATED"] == row["DESIRED"] == str(REPLICAS), row


async def test_without_mirror_pods_the_components_check_is_reported_misconfigured_and_holds_nothing(
    intent: World,
) -> None:
    """The two tests above scaled and rolled out as they always did; the ControlPlane says why the
    components are not checked, and what to set."""
    cp = json.loads(await intent.tour.kubectl("get", "controlplane", CONTROLPLANE, "-o", "json"))
    check = next(c for c in cp["status"]["conditions"] if c["type"] == "ControlPlaneComponentsHealthy")
    assert (check["status"], check["reason"]) == ("Unknown", "ComponentPodsNotFound"), check
    assert "--control-plane-components=openshift" in check["message"], check
    assert "--control-plane-components=off" in check["message"], check
    for machine in await machines(intent.client):
        judged = next(
            c for c in machine["status"]["conditions"] if c["type"] == "ControlPlaneComponentsHealthy"
        )
        assert (judged["status"], judged["reason"]) == ("Unknown", "ComponentPodsNotFound"), judged

    async def every_machine_ready() -> bool:
        # Polled, not read once: on a loaded machine a Node turns NotReady for a moment when its
        # etcd member answers its health read late; unknown components keep none from READY.
        status = (await intent.tour.controlplane()).get("status") or {}
        return status.get("readyReplicas") == REPLICAS

    await eventually(every_machine_ready, timeout=30, message="every Machine READY, components unknown")
    pods = await intent.client.list("v1", "Pod", "kube-system")
    assert [p for p in pods.get("items") or () if (p["spec"] or {}).get("nodeName")] == []
