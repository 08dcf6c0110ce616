"""``kubectl get machines`` shows each Machine's region, zone and instance type, and the labels
that say so roll nothing.

One world for the module (the embedded API server, ``cpo localmachine`` and ``cpo run``, each a
subprocess, started by :class:`demo.world.DemoWorld`) with the demo's ControlPlane of 3 replicas
over three failure domains, its template naming a region and no instance type. The provider labels
each Machine as a Machine API provider does (``machine.openshift.io/region``, ``/zone``,
``/instance-type``); kubectl, a real subprocess, prints them in its REGION, ZONE and TYPE columns.
The operator reads a Machine's domain from its own label first, so the provider's zone label
changes nothing it decides: for 10 s after the ControlPlane settles no Machine is replaced and
the etcd membership (the quorum monitor's record) stays the same.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
import yaml

from api.machine import API_VERSION
from demo.tour import settled
from demo.world import DemoWorld
from runtime.client import Client
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
