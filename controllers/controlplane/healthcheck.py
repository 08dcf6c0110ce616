"""The MachineHealthCheck a ControlPlane with ``enableAutorepair`` owns: what it should be, and
keeping it so.

The health check only marks Machines (the ControlPlane owns them, so the MachineHealthCheck
controller hands them off instead of deleting them); the ControlPlane's remediation rules decide
when a marked Machine is replaced.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Final

from api.controlplane import (
    MHC_SCOPE_LABEL,
    MHC_SCOPE_VALUE,
    UNHEALTHY_MACHINE_CONDITIONS_ANNOTATION,
    ControlPlaneSpec,
    HealthCheck,
)
from api.controlplane_reasons import REASON_MACHINE_HEALTH_CHECK_CREATED, REASON_MACHINE_HEALTH_CHECK_DELETED
from api.machine import API_VERSION as MACHINE_API_VERSION
from api.machine import CONDITION_COMPONENTS_HEALTHY
from api.meta import parse_duration
from api.ownership import references
from api.quorum import fault_tolerance
from controllers.controlplane.machines import MachineInfo, controller_ref
from runtime.cache import Cache
from runtime.client import JSON, Client
from runtime.errors import AlreadyExists, Conflict, NotFound

MHC_SUFFIX: Final = "-mhc"
"""The owned MachineHealthCheck is named ``<controlplane>-mhc``."""

EventFunc = Callable[[Mapping[str, Any], str, str, str], None]
"""Records an event on an object: ``(object, type, reason, message)``."""


def health_check_budget(replicas: int, machines: Sequence[MachineInfo]) -> int:
    """The owned MachineHealthCheck's ``maxUnhealthy``: the failed Machines etcd can lose, plus
    the Machines in transition.

    etcd can lose (n − 1) / 2 of n members, n being the larger of the replica count and the
    owned Machines: what etcd can lose depends on the members that are there, and during a
    scale-in they are still there. With the replica count alone, a member dying after a scale-in
    to 1 was requested would get a budget of 0, never be replaced, and hold the scale-in (which
    waits for every voter to be healthy) for ever.

    A MachineHealthCheck counts a Machine being deleted or created
    (:attr:`MachineInfo.in_transition`) as not healthy, as machine-api's does, but it is no
    failure: during a replacement the old Machine, whose voter the etcd-quorum hook holds until
    the new one votes, and the new one would otherwise use up a 3-replica control plane's whole
    budget; a Machine failing then would never be remediated, while the held deletion waits for
    a replacement that only that remediation lets join. The budget only decides which Machines
    are marked: every remediation still passes
    :func:`~controllers.controlplane.remediation.remediation_decision`.

    A Machine whose control-plane components are broken while its Node is up counts the same
    way: the health check sees its ``ControlPlaneComponentsHealthy`` False waiting on its timeout,
    so not healthy, but its etcd member still votes, so it costs etcd nothing; counted as a
    failure, a broken component beside one dead member would short-circuit the health check, and
    the dead member's remediation (which every other step waits for) would never come.
    """
    members = max(replicas, len(machines))
    broken_components = sum(
        1 for m in machines if not m.in_transition and m.node_up and m.components_unhealthy
    )
    return fault_tolerance(members) + sum(m.in_transition for m in machines) + broken_components


def desired_mhc(cp: Mapping[str, Any], spec: ControlPlaneSpec, machines: Sequence[MachineInfo] = ()) -> JSON:
    """The MachineHealthCheck ``<name>-mhc`` a ControlPlane with enableAutorepair owns.

    Same selector; unhealthy conditions and nodeStartupTimeout from ``spec.healthCheck``;
    ``spec.healthCheck.componentsUnhealthyTimeout`` as :func:`components_rule`; maxUnhealthy
    :func:`health_check_budget` of the owned
    ``machines``; labelled :data:`~api.controlplane.MHC_SCOPE_LABEL`, so that the operator's
    MachineHealthCheck webhook and controller take it (and no other unlabelled one).
    """
    health = spec.health_check or HealthCheck()
    metadata = cp["metadata"]
    return {
        "apiVersion": MACHINE_API_VERSION,
        "kind": "MachineHealthCheck",
        "metadata": {
            "name": metadata["name"] + MHC_SUFFIX,
            "namespace": metadata["namespace"],
            "labels": {MHC_SCOPE_LABEL: MHC_SCOPE_VALUE},
            "annotations": {UNHEALTHY_MACHINE_CONDITIONS_ANNOTATION: components_rule(health)},
            "ownerReferences": [controller_ref(cp)],
        },
        "spec": {
            "selector": spec.selector.to_dict(),
            "unhealthyConditions": [c.to_dict() for c in health.unhealthy_conditions],
            "nodeStartupTimeout": health.node_startup_timeout,
            "maxUnhealthy": health_check_budget(spec.replicas, machines),
        },
    }


def components_rule(health: HealthCheck) -> str:
    """The owned MachineHealthCheck's :data:`~api.controlplane.UNHEALTHY_MACHINE_CONDITIONS_ANNOTATION`:
    ``ControlPlaneComponentsHealthy`` False for ``componentsUnhealthyTimeout`` (``[]`` when "0s")."""
    timeout = health.components_unhealthy_timeout
    if parse_duration(timeout) <= timedelta(0):
        return "[]"
    return json.dumps([{"type": CONDITION_COMPONENTS_HEALTHY, "status": "False", "timeout": timeout}])


async def delete_quietly(client: Client, api_version: str, kind: str, name: str, namespace: str) -> bool:
    """Delete; False when it was already gone."""
    try:
        await client.delete(api_version, kind, name, namespace)
    except NotFound:
        return False
    return True


async def sync_mhc(
    client: Client,
    cache: Cache,
    cp: JSON,
    spec: ControlPlaneSpec,
    machines: Sequence[MachineInfo],
    event: EventFunc,
) -> None:
    """Create, update or delete the owned MachineHealthCheck to match enableAutorepair.

    A MachineHealthCheck of that name that the ControlPlane does not own is left alone; a paused
    ControlPlane keeps its MachineHealthCheck as it is.
    """
    namespace, name = cp["metadata"]["namespace"], cp["metadata"]["name"] + MHC_SUFFIX
    try:
        current: JSON | None = await cache.get(MACHINE_API_VERSION, "MachineHealthCheck", name, namespace)
    except NotFound:
        current = None
    if current is not None and not references(current, cp["metadata"]["uid"]):
        return  # someone else's MachineHealthCheck of that name: leave it alone
    if not spec.enable_autorepair or spec.paused:
        if current is not None and not spec.enable_autorepair:
            if not await delete_quietly(client, MACHINE_API_VERSION, "MachineHealthCheck", name, namespace):
                return  # already gone; the cache has not seen it yet
            event(
                cp,
                "Normal",
                REASON_MACHINE_HEALTH_CHECK_DELETED,
                f"Deleted {name}: enableAutorepair is false",
            )
        return
    desired = desired_mhc(cp, spec, machines)
    if current is None:
        try:
            await client.create(desired)
        except AlreadyExists:
            return  # created by our previous pass; the cache has not seen it yet
        event(cp, "Normal", REASON_MACHINE_HEALTH_CHECK_CREATED, f"Created MachineHealthCheck {name}")
        return
    patch = mhc_patch(current, desired)
    if patch is not None:
        # A Conflict means the cache is behind our own last write: its event brings us back.
        with contextlib.suppress(Conflict):
            await client.patch(MACHINE_API_VERSION, "MachineHealthCheck", name, patch, namespace)


def mhc_patch(current: Mapping[str, Any], desired: Mapping[str, Any]) -> JSON | None:
    """The merge patch that brings the owned MachineHealthCheck to ``desired``; None when it is.

    It sets the spec fields the ControlPlane decides, the scope label (added to a
    MachineHealthCheck created before the label existed, so that an upgraded operator keeps
    checking it) and the Machine-conditions annotation; other labels, annotations and fields stay
    as they are. The ``resourceVersion`` makes it a
    compare-and-swap against the copy it was computed from.
    """
    spec_differs = any(current["spec"].get(k) != v for k, v in desired["spec"].items())
    labels = current["metadata"].get("labels") or {}
    missing = {k: v for k, v in desired["metadata"]["labels"].items() if labels.get(k) != v}
    annotations = current["metadata"].get("annotations") or {}
    stale = {k: v for k, v in desired["metadata"]["annotations"].items() if annotations.get(k) != v}
    if not spec_differs and not missing and not stale:
        return None
    metadata: JSON = {"resourceVersion": current["metadata"]["resourceVersion"]}
    if missing:
        metadata["labels"] = missing
    if stale:
        metadata["annotations"] = stale
    return {"metadata": metadata, "spec": desired["spec"]}
