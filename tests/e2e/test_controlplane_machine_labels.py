"""``kubectl get machines`` shows each Machine's region, zone and instance type, the labels that
say so roll nothing, and the template's labels and annotations are written onto the Machines in
place.

One world for the module (the embedded API server, ``cpo localmachine`` and ``cpo run``, each a
subprocess, started by :class:`demo.world.DemoWorld`) with the demo's ControlPlane of 3 replicas
over three failure domains, its template naming a region and no instance type. The provider labels
each Machine as a Machine API provider does (``machine.openshift.io/region``, ``/zone``,
``/instance-type``); kubectl, a real subprocess, prints them in its REGION, ZONE and TYPE columns.
The operator reads a Machine's domain from its own label first, so the provider's zone label
changes nothing it decides: for 10 s after the ControlPlane settles no Machine is replaced and
the etcd membership (the quorum monitor's record) stays the same.

Then, in order on the same world, as a user would with kubectl:

1. a label and an annotation added to the template (``kubectl patch controlplane``) appear on
   every Machine within 30 s, and for 30 s more no Machine is replaced and each stays up to date;
2. removed from the template, they leave every Machine, while a label and an annotation someone
   else put on a Machine stay;
3. an operator upgrade: ``cpo run`` stopped, the Machines given the spec hash the previous
   version wrote (one of them as if created under a template with another label), ``cpo run``
   started again: for 60 s nothing is replaced, and each Machine's hash is rewritten in place.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import yaml

from api.controlplane import ControlPlane
from api.failuredomains import FAILURE_DOMAIN_LABEL
from api.machine import API_VERSION
from controllers.controlplane.placement import (
    SPEC_HASH_ANNOTATION,
    TEMPLATE_METADATA_ANNOTATION,
    previous_template_hash,
    template_hash,
)
from demo.tour import CONTROLPLANE, settled
from demo.world import DemoWorld
from runtime.client import Client
from tests.support.controlplane import replaced_or_outdated
from tests.support.poll import eventually, holds_for
from tests.support.tour_world import TourWorld as World
from tests.support.tour_world import tour_world

pytestmark = [pytest.mark.slow, pytest.mark.kubectl, pytest.mark.asyncio(loop_scope="module")]

NAMESPACE = "zones"
REGION = "lab-1"
"""The template's ``providerSpec.value.region``; it names no ``instanceType`` (the default ``local``)."""
DOMAINS = ("zone-a", "zone-b", "zone-c")
QUIET = 10.0
"""Seconds after settling during which no Machine may be replaced: a label change reaches the
ControlPlane controller as a Machine event at once, so a rollout it caused would start well within."""
COST_CENTRE = "example.com/cost-centre"
"""The label a user adds to the template (and removes again)."""
OWNER_NOTE = "example.com/owner"
"""The annotation a user adds to the template (and removes again)."""
PROPAGATION = 30.0
"""Seconds within which a template label or annotation must reach every Machine."""
UPGRADE_QUIET = 60.0
"""Seconds after an operator upgrade during which no Machine may be replaced."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def zones(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    world = DemoWorld(tmp_path_factory.mktemp("zones-world"), namespace=NAMESPACE)
    async with tour_world(world, step_budget=240.0) as started:
        assert started.tour.failure_domains == DOMAINS
        manifest = started.tour.manifest()
        manifest["spec"]["template"]["spec"]["providerSpec"]["value"]["region"] = REGION
        await started.tour.kubectl("apply", "-f", "-", input_text=yaml.safe_dump(manifest))
        await started.tour.wait_for("3 voters", settled(3))
        yield started


def columns(table: str) -> list[dict[str, str]]:
    """``kubectl get`` output as one dict per row, keyed by header (empty cells as ``""``)."""
    lines = [line for line in table.splitlines() if line.strip()]
    header = lines[0]
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1] == " ")]
    names = [header[start:].split()[0] for start in starts]
    rows = []
    for line in lines[1:]:
        ends = [*starts[1:], len(line) + 1]
        rows.append({name: line[s:e].strip() for name, s, e in zip(names, starts, ends, strict=True)})
    return rows


async def machine_domains(client: Client) -> dict[str, str]:
    listed = await client.list(API_VERSION, "Machine", namespace=NAMESPACE)
    return {
        m["metadata"]["name"]: m["metadata"]["labels"]["controlplane.cpo.dev/failure-domain"]
        for m in listed.get("items") or ()
    }


async def test_kubectl_get_machines_shows_region_zone_and_type_of_every_machine(zones: World) -> None:
    domains = await machine_domains(zones.client)
    assert sorted(domains.values()) == sorted(DOMAINS)

    async def labelled() -> list[dict[str, str]] | None:
        rows = columns(await zones.tour.kubectl("get", "machines"))
        return rows if all(row["REGION"] and row["ZONE"] and row["TYPE"] for row in rows) else None

    try:
        rows = await eventually(labelled, timeout=30, message="every Machine shows its region and zone")
    except AssertionError:
        print(await zones.tour.kubectl("get", "machines"))
        raise
    assert {row["NAME"]: (row["REGION"], row["ZONE"], row["TYPE"]) for row in rows} == {
        name: (REGION, domain, "local") for name, domain in domains.items()
    }


async def test_the_labels_roll_nothing_after_settling(zones: World) -> None:
    monitor = zones.observer.monitor
    assert monitor is not None
    before = await machine_domains(zones.client)
    members = monitor.samples[-1].machines
    mark = monitor.mark()
    started = time.monotonic()

    async def unchanged() -> bool:
        now = await machine_domains(zones.client)
        assert now == before, f"Machines changed after settling: {sorted(before)} -> {sorted(now)}"
        latest = monitor.samples[-1]
        assert latest.error is not None or latest.machines == members, (
            f"etcd membership changed after settling: {members} -> {latest.machines}"
        )
        return True

    await holds_for(unchanged, duration=QUIET, message="no Machine replaced")
    assert time.monotonic() - started >= QUIET
    monitor.assert_never_lost_quorum(since=mark)


async def machines(client: Client) -> list[dict[str, Any]]:
    listed = await client.list(API_VERSION, "Machine", namespace=NAMESPACE)
    return list(listed.get("items") or ())


async def patch_template(zones: World, metadata: dict[str, Any]) -> None:
    """``kubectl patch controlplane demo --type merge`` of the template's metadata."""
    patch = json.dumps({"spec": {"template": {"metadata": metadata}}})
    await zones.tour.kubectl("patch", "controlplane", CONTROLPLANE, "--type", "merge", "-p", patch)


def nothing_replaced(zones: World, before: dict[str, str]) -> Any:
    """A poll that fails the test once a Machine was replaced or counted as outdated: the same
    Machines, none being deleted, each with its ``UpToDate`` condition True, and ``UPDATED``
    (``updatedReplicas``) equal to ``READY`` (``readyReplicas``).

    Not ``updatedReplicas == 3``: it counts readiness too (a Machine is updated when it is ready
    and needs no update), and on a loaded machine a Node turns NotReady for a moment when its
    etcd member answers its health read late, which lowers both counts while nothing is outdated."""

    async def check() -> bool:
        listed = await machines(zones.client)
        now = {m["metadata"]["name"]: m["metadata"]["labels"][FAILURE_DOMAIN_LABEL] for m in listed}
        assert now == before, f"Machines replaced: {sorted(before)} -> {sorted(now)}"
        problems = replaced_or_outdated(listed, before)
        assert not problems, problems
        status = (await zones.tour.controlplane()).get("status") or {}
        updated, ready = status.get("updatedReplicas"), status.get("readyReplicas")
        assert updated == ready, f"a ready Machine counted outdated: {status}"
        return True

    return check


async def test_a_label_and_an_annotation_added_to_the_template_reach_every_machine_in_place(
    zones: World,
) -> None:
    before = await machine_domains(zones.client)
    unchanged = nothing_replaced(zones, before)
    assert await unchanged()
    started = time.monotonic()
    await patch_template(zones, {"labels": {COST_CENTRE: "cc-42"}, "annotations": {OWNER_NOTE: "team-a"}})

    async def everywhere() -> bool:
        await unchanged()
        items = await machines(zones.client)
        return all(
            (m["metadata"].get("labels") or {}).get(COST_CENTRE) == "cc-42"
            and (m["metadata"].get("annotations") or {}).get(OWNER_NOTE) == "team-a"
            for m in items
        )

    await eventually(everywhere, timeout=PROPAGATION, message="the template's label on every Machine")
    assert time.monotonic() - started <= PROPAGATION + 5
    await holds_for(unchanged, duration=PROPAGATION, message="no Machine replaced after a label change")


async def test_a_label_removed_from_the_template_leaves_the_machines_and_others_keys_stay(
    zones: World,
) -> None:
    before = await machine_domains(zones.client)
    unchanged = nothing_replaced(zones, before)
    name = sorted(before)[0]
    await zones.tour.kubectl("label", "machine", name, "example.com/team=storage")
    await zones.tour.kubectl("annotate", "machine", name, "example.com/ticket=OPS-7")
    await patch_template(zones, {"labels": {COST_CENTRE: None}, "annotations": {OWNER_NOTE: None}})

    async def gone() -> bool:
        await unchanged()
        items = await machines(zones.client)
        return not any(
            COST_CENTRE in (m["metadata"].get("labels") or {})
            or OWNER_NOTE in (m["metadata"].get("annotations") or {})
            for m in items
        )

    await eventually(gone, timeout=PROPAGATION, message="the removed label gone from every Machine")
    await holds_for(unchanged, duration=QUIET, message="no Machine replaced after a label removal")
    kept = next(m for m in await machines(zones.client) if m["metadata"]["name"] == name)
    assert kept["metadata"]["labels"]["example.com/team"] == "storage"
    assert kept["metadata"]["annotations"]["example.com/ticket"] == "OPS-7"


async def test_an_operator_upgrade_over_machines_with_the_previous_hash_replaces_nothing(
    zones: World,
) -> None:
    """The Machines carry what the previous version wrote: its spec hash (template metadata
    included), no record of the template's keys. One was made while the template had another
    label, so its hash matches no hash of today's template: its providerSpec is what decides."""
    before = await machine_domains(zones.client)
    await zones.world.child("operator").stop()
    spec = ControlPlane.from_dict(await zones.tour.controlplane()).spec
    earlier = spec.model_copy(deep=True)
    assert earlier.template.metadata is not None and earlier.template.metadata.labels is not None
    earlier.template.metadata.labels[COST_CENTRE] = "cc-41"
    for index, (name, domain) in enumerate(sorted(before.items())):
        old = previous_template_hash(earlier if index == 0 else spec, domain)
        annotations = {SPEC_HASH_ANNOTATION: old, TEMPLATE_METADATA_ANNOTATION: None}
        await zones.client.patch(
            API_VERSION, "Machine", name, {"metadata": {"annotations": annotations}}, NAMESPACE
        )
    await zones.world.start_operator(0)
    unchanged = nothing_replaced(zones, before)

    async def rewritten() -> bool:
        await unchanged()
        return all(
            (m["metadata"].get("annotations") or {}).get(SPEC_HASH_ANNOTATION)
            == template_hash(spec, m["metadata"]["labels"][FAILURE_DOMAIN_LABEL])
            and TEMPLATE_METADATA_ANNOTATION in (m["metadata"].get("annotations") or {})
            for m in await machines(zones.client)
        )

    started = time.monotonic()
    await eventually(rewritten, timeout=UPGRADE_QUIET, message="every spec hash rewritten in place")
    await holds_for(
        unchanged,
        duration=UPGRADE_QUIET - (time.monotonic() - started),
        message="nothing replaced after an upgrade",
    )
