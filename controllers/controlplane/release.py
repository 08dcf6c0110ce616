"""Deleting a ControlPlane: its Machines are released, never deleted.

The finalizer ``controlplane.cpo.dev/machines`` is held until every owned Machine has lost the
ControlPlane's ownerReference (so the garbage collector cannot take the control plane with it)
and the owned MachineHealthCheck is gone (so nothing remediates Machines nobody manages).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane import KIND as CP_KIND
from api.machine import API_VERSION as MACHINE_API_VERSION
from controllers.controlplane.healthcheck import MHC_SUFFIX, EventFunc, delete_quietly, owned_by
from controllers.controlplane.metrics import OPERATIONS, forget_replicas, label
from runtime.cache import Cache
from runtime.client import JSON, Client
from runtime.errors import NotFound

FINALIZER: Final = "controlplane.cpo.dev/machines"
"""Held until the ControlPlane's Machines are released and its MachineHealthCheck deleted."""


def has_finalizer(cp: Mapping[str, Any]) -> bool:
    """Whether the ControlPlane carries :data:`FINALIZER`."""
    return FINALIZER in (cp["metadata"].get("finalizers") or ())


async def add_finalizer(client: Client, cp: JSON) -> JSON:
    """Add :data:`FINALIZER` (guarded by the resourceVersion); returns the updated ControlPlane."""
    metadata = cp["metadata"]
    finalizers = [*(metadata.get("finalizers") or []), FINALIZER]
    return await client.patch(
        CP_API_VERSION,
        CP_KIND,
        metadata["name"],
        {"metadata": {"finalizers": finalizers, "resourceVersion": metadata["resourceVersion"]}},
        metadata["namespace"],
    )


async def release(client: Client, cache: Cache, cp: JSON, event: EventFunc) -> None:
    """Release every owned Machine (drop our ownerReference), delete the MHC, drop the finalizer."""
    if not has_finalizer(cp):
        return
    await release_machines(client, cache, cp, event)
    await delete_owned_mhc(client, cp)
    metadata = cp["metadata"]
    await client.patch(
        CP_API_VERSION,
        CP_KIND,
        metadata["name"],
        {
            "metadata": {
                "finalizers": [f for f in metadata.get("finalizers") or [] if f != FINALIZER] or None,
                "resourceVersion": metadata["resourceVersion"],
            }
        },
        metadata["namespace"],
    )
    forget_replicas(cp)


async def release_machines(client: Client, cache: Cache, cp: JSON, event: EventFunc) -> None:
    """Drop the ControlPlane's ownerReference from each Machine it owns (event ``MachineReleased``)."""
    uid, namespace = cp["metadata"]["uid"], cp["metadata"]["namespace"]
    for machine in await cache.list(MACHINE_API_VERSION, "Machine", namespace=namespace):
        if not owned_by(machine, cp):
            continue
        kept = [ref for ref in machine["metadata"].get("ownerReferences") or [] if ref.get("uid") != uid]
        await client.patch(
            MACHINE_API_VERSION,
            "Machine",
            machine["metadata"]["name"],
            {
                "metadata": {
                    "ownerReferences": kept or None,
                    "resourceVersion": machine["metadata"]["resourceVersion"],
                }
            },
            namespace,
        )
        OPERATIONS.labels(label(cp), "release").inc()
        event(cp, "Normal", "MachineReleased", f"Released Machine {machine['metadata']['name']}")


async def delete_owned_mhc(client: Client, cp: JSON) -> None:
    """Delete the ControlPlane's MachineHealthCheck, if it is there and the ControlPlane owns it."""
    namespace, name = cp["metadata"]["namespace"], cp["metadata"]["name"] + MHC_SUFFIX
    try:
        current = await client.get(MACHINE_API_VERSION, "MachineHealthCheck", name, namespace)
    except NotFound:
        return
    if owned_by(current, cp):
        await delete_quietly(client, MACHINE_API_VERSION, "MachineHealthCheck", name, namespace)
