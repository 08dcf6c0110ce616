"""The template-metadata writer against the API server: one patch per Machine that differs, none
for a Machine in step or being deleted, nothing on a second pass, and a stale copy skipped
rather than written over a newer version."""

from __future__ import annotations

import secrets
from typing import Any

from api.machine import API_VERSION
from controllers.controlplane.placement import (
    SPEC_HASH_ANNOTATION,
    TEMPLATE_METADATA_ANNOTATION,
    new_machine,
    previous_template_hash,
    template_hash,
)
from controllers.controlplane.template_metadata import sync_template_metadata
from runtime.client import Client
from tests.support.controlplane_specs import CONTROLPLANE, local_spec
from tests.support.localmachine import get_machine

MASTER = {"machine.openshift.io/cluster-api-machine-role": "master"}
COST = "example.com/cost-centre"


def template(**labels: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {**MASTER, **labels}},
        "spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "size": 1}}},
    }


async def versions(kube: Client, namespace: str, names: list[str]) -> dict[str, str]:
    found = {name: await get_machine(kube, name, namespace) for name in names}
    return {name: (m or {})["metadata"]["resourceVersion"] for name, m in found.items()}


async def test_one_write_per_machine_that_differs_then_none(kube: Client, namespace: str) -> None:
    before = local_spec(template=template())
    after = local_spec(template=template(**{COST: "cc-42"}))
    owner = {**CONTROLPLANE, "metadata": {**CONTROLPLANE["metadata"], "namespace": namespace}}
    suffix = secrets.token_hex(3)
    names = [f"tm-{n}-{suffix}" for n in ("plain", "upgraded", "deleting", "current")]
    made = [new_machine(before if n != names[3] else after, "a", name=n, owner=owner) for n in names]
    made[1]["metadata"]["annotations"][SPEC_HASH_ANNOTATION] = previous_template_hash(before, "a")
    del made[1]["metadata"]["annotations"][TEMPLATE_METADATA_ANNOTATION]
    made[2]["metadata"]["finalizers"] = ["tests.cpo.dev/hold"]
    owned = [await kube.create(m) for m in made]
    await kube.delete(API_VERSION, "Machine", names[2], namespace)
    deleting = await get_machine(kube, names[2], namespace)
    assert deleting is not None and deleting["metadata"].get("deletionTimestamp")
    owned[2] = deleting
    untouched = await versions(kube, namespace, names[2:])

    await sync_template_metadata(kube, after, owned)

    stored = {name: await get_machine(kube, name, namespace) for name in names}
    for name in names[:2]:
        machine = stored[name]
        assert machine is not None and machine["metadata"]["labels"][COST] == "cc-42"
        assert (
            owned[names.index(name)]["metadata"]["resourceVersion"] == machine["metadata"]["resourceVersion"]
        )
    upgraded = stored[names[1]]
    assert upgraded is not None
    assert upgraded["metadata"]["annotations"][SPEC_HASH_ANNOTATION] == template_hash(after, "a")
    assert await versions(kube, namespace, names[2:]) == untouched
    assert COST not in (stored[names[2]] or {})["metadata"]["labels"]

    written = await versions(kube, namespace, names)
    await sync_template_metadata(kube, after, owned)
    assert await versions(kube, namespace, names) == written

    await kube.patch(API_VERSION, "Machine", names[2], {"metadata": {"finalizers": None}}, namespace)


async def test_a_stale_copy_is_skipped_and_the_newer_version_kept(kube: Client, namespace: str) -> None:
    spec = local_spec(template=template(**{COST: "cc-42"}))
    owner = {**CONTROLPLANE, "metadata": {**CONTROLPLANE["metadata"], "namespace": namespace}}
    name = f"tm-stale-{secrets.token_hex(3)}"
    stale = await kube.create(new_machine(local_spec(template=template()), "a", name=name, owner=owner))
    await kube.patch(
        API_VERSION, "Machine", name, {"metadata": {"labels": {"example.com/team": "x"}}}, namespace
    )
    owned = [stale]

    await sync_template_metadata(kube, spec, owned)

    stored = await get_machine(kube, name, namespace)
    assert stored is not None and COST not in stored["metadata"]["labels"]
    assert stored["metadata"]["labels"]["example.com/team"] == "x"
    assert owned == [stale]
    await sync_template_metadata(kube, spec, [stored])
    fresh = await get_machine(kube, name, namespace)
    assert fresh is not None and fresh["metadata"]["labels"][COST] == "cc-42"
