"""What one pass of the ControlPlane controller knows, gathered before it decides anything.

:func:`gather` reads, from the shared cache, the Machines of the ControlPlane's namespace and
classifies them (:func:`~controllers.controlplane.machines.classify_machines`: owned, adoptable,
another controller's), adopting the adoptable through the reconciler's ``adopt`` (an Inactive
ControlPlane only counts them); the Nodes, and among them the control-plane Nodes without a
Machine; the etcd members (:func:`~controllers.controlplane.etcdview.read_etcd_view`); and, when
something hints at one, the Machines it controls that the cache leaves out because their role
label is gone (:mod:`~controllers.controlplane.unwatched`, an uncached LIST); and the
control-plane components' mirror Pods (:func:`read_components`,
:mod:`~controllers.controlplane.components`). Each owned Machine becomes a
:class:`~controllers.controlplane.machines.MachineInfo` (:func:`machine_info`), the row every
rule reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from api.controlplane import ControlPlaneSpec
from api.failuredomains import machine_domain
from api.machine import API_VERSION as MACHINE_API_VERSION
from api.nodes import DEFAULT_CONTROL_PLANE_NODE_SELECTORS
from controllers.common import now, parse_time
from controllers.controlplane.components import (
    ComponentsCheck,
    MachineComponents,
    controlplane_condition,
    machine_components,
    pods_by_node,
    ready_since,
)
from controllers.controlplane.etcdview import EtcdView, read_etcd_view
from controllers.controlplane.inactive import is_inactive
from controllers.controlplane.machines import (
    DELETE_MACHINE_ANNOTATION,
    MachineInfo,
    classify_machines,
    is_unmanaged_node,
    marked_for_remediation,
    marked_since,
    node_ready,
    not_ready_since,
)
from controllers.controlplane.placement import is_outdated
from controllers.controlplane.unwatched import may_have_unwatched, unwatched_machines
from controllers.etcd.pool import EtcdClientPool
from runtime.cache import Cache
from runtime.client import JSON, Client

Adopt = Callable[[JSON, JSON], Awaitable[JSON | None]]
"""``adopt(cp, machine)``: the adopted Machine as written, or None when it could not be adopted."""


@dataclass
class Facts:
    """One pass's facts about a ControlPlane."""

    cp: JSON
    spec: ControlPlaneSpec
    owned: list[JSON]
    infos: list[MachineInfo]
    owned_by_others: list[str]
    """Machines the selector matches that another controller owns."""
    unmanaged_nodes: list[str]
    """Control-plane Nodes without a Machine (an unwatched Machine's Node is not one)."""
    etcd: EtcdView | None
    marked: list[MachineInfo] = field(default_factory=list)
    """Owned Machines the health check marked, not being deleted."""
    unwatched: list[str] = field(default_factory=list)
    """Machines it controls whose control-plane role label is gone."""
    components: ComponentsView | None = None
    """The control-plane components of its Machines (None: not read, e.g. in unit tests)."""

    @property
    def misconfigured(self) -> list[str]:
        """What makes the ControlPlane Degraded by its configuration, which holds scale-in and
        rollout (:func:`~controllers.controlplane.scale.next_step`)."""
        return [*self.owned_by_others, *self.unmanaged_nodes, *self.unwatched]


@dataclass(frozen=True)
class ComponentsView:
    """What this pass read of the control-plane components (:mod:`~.components`)."""

    condition: JSON
    """The ControlPlane's ``ControlPlaneComponentsHealthy``."""
    machines: Mapping[str, MachineComponents]
    """Owned Machine name → its components as judged."""
    check_reason: str | None
    """The ControlPlane condition's reason when no component is checked (off, not found, waiting):
    every Machine's condition is then Unknown with it. None when components are checked."""


def _node_of(machine: Mapping[str, Any], nodes: Mapping[str, JSON]) -> JSON | None:
    return nodes.get(((machine.get("status") or {}).get("nodeRef") or {}).get("name") or "")


async def read_components(
    cache: Cache, check: ComponentsCheck, owned: Sequence[JSON], nodes: Mapping[str, JSON]
) -> ComponentsView:
    """Judge the components of every owned Machine from the cached mirror Pods; ``nodes`` are the
    control-plane Nodes by name."""
    layout, when = check.layout, now()
    pods = []
    for namespace in layout.scopes() if layout is not None else ():
        try:
            pods.extend(await cache.list("v1", "Pod", namespace=namespace))
        except ValueError:
            # A cache scoped without that namespace (a manager of one's own, not cpo run's
            # operator_cache_options): nothing seen there, so not checked, and reported so.
            continue
    found = pods_by_node(layout, pods) if layout is not None else {}
    checked = check.observe(found, nodes)
    judged: dict[str, MachineComponents] = {}
    for machine in owned:
        node = _node_of(machine, nodes)
        judged[machine["metadata"]["name"]] = machine_components(
            node=node["metadata"]["name"] if node is not None else None,
            ready_since=ready_since(node),
            pods=found,
            checked=checked,
            now=when,
            grace=check.grace,
        )
    ready = [since for node in nodes.values() if (since := ready_since(node)) is not None]
    longest = when - min(ready) if ready else None
    cond = controlplane_condition(check, checked, judged, longest)
    return ComponentsView(cond, judged, None if checked else str(cond.get("reason")))


def machine_info(
    spec: ControlPlaneSpec,
    machine: JSON,
    nodes: Mapping[str, JSON],
    view: EtcdView | None,
    components: MachineComponents | None = None,
) -> MachineInfo:
    """The row the rules read of one owned Machine: its Node (by ``status.nodeRef``), its etcd
    member (by the view; without a view, a voter taken as healthy: external etcd) and its
    control-plane components (none judged when ``components`` is None)."""
    metadata = machine["metadata"]
    name = metadata["name"]
    status = machine.get("status") or {}
    node = _node_of(machine, nodes)
    components = components or MachineComponents()
    return MachineInfo(
        name=name,
        created=parse_time(metadata.get("creationTimestamp")) or now(),
        failure_domain=machine_domain(spec, machine),
        outdated=is_outdated(spec, machine, now=now()) is not None,
        deleting=bool(metadata.get("deletionTimestamp")),
        delete_annotation=DELETE_MACHINE_ANNOTATION in (metadata.get("annotations") or {}),
        phase=status.get("phase"),
        node_ready=node_ready(node),
        has_node=node is not None,
        not_ready_since=not_ready_since(node),
        marked_unhealthy=marked_for_remediation(machine),
        marked_since=marked_since(machine),
        etcd_voter=view is None or name in view.voters,
        etcd_healthy=view is None or name in view.healthy,
        etcd_learner=view is not None and name in view.with_member and name not in view.voters,
        components_unhealthy=components.unhealthy,
        components_pending=components.pending,
        components_message=components.summary,
    )


def _unmanaged(
    nodes: Sequence[JSON], namespace: str, machine_names: Sequence[str], selectors: Sequence[str]
) -> list[str]:
    known = {f"{namespace}/{name}" for name in machine_names}
    return sorted(
        node["metadata"]["name"] for node in nodes if is_unmanaged_node(node, namespace, known, selectors)
    )


async def gather(
    cache: Cache,
    client: Client,
    etcd_clients: EtcdClientPool,
    cp: JSON,
    spec: ControlPlaneSpec,
    adopt: Adopt,
    node_selectors: Sequence[str] = DEFAULT_CONTROL_PLANE_NODE_SELECTORS,
    components: ComponentsCheck | None = None,
) -> Facts:
    """The :class:`Facts` of ``cp`` now; adoption is the only write (through ``adopt``).

    ``node_selectors`` tell the control-plane Nodes (:mod:`api.nodes`): the cache holds only
    those in ``cpo run``, and the unmanaged-Node rule counts only those whatever the cache holds.
    """
    namespace = cp["metadata"]["namespace"]
    machines = await cache.list(MACHINE_API_VERSION, "Machine", namespace=namespace)
    ownership = classify_machines(cp["metadata"]["uid"], spec.selector.to_dict(), machines)
    owned = list(ownership.owned)
    for machine in ownership.adoptable:
        # Inactive: counted as the Machines it would adopt, and left untouched.
        adopted = machine if is_inactive(spec) else await adopt(cp, machine)
        if adopted is not None:
            owned.append(adopted)
    nodes = await cache.list("v1", "Node")
    cached_names = [m["metadata"]["name"] for m in machines]
    unmanaged = _unmanaged(nodes, namespace, cached_names, node_selectors)
    deleting = {m["metadata"]["name"] for m in owned if m["metadata"].get("deletionTimestamp")}
    view = await read_etcd_view(etcd_clients, cp, spec, owned, deleting)
    unwatched: list[str] = []
    owned_names = {m["metadata"]["name"] for m in owned}
    hinted = may_have_unwatched(
        unmanaged_nodes=bool(unmanaged),
        members_without_machine=view is not None and bool(set(view.facts.member_names) - owned_names),
        reported_replicas=(cp.get("status") or {}).get("replicas"),
        owned=len(owned),
    )
    if hinted:
        listed = await client.list(MACHINE_API_VERSION, "Machine", namespace)
        unwatched = unwatched_machines(cp["metadata"]["uid"], listed.get("items") or ())
        unmanaged = _unmanaged(nodes, namespace, [*cached_names, *unwatched], node_selectors)
    by_name = {node["metadata"]["name"]: node for node in nodes}
    judged = await read_components(cache, components, owned, by_name) if components is not None else None
    infos = [
        machine_info(spec, m, by_name, view, judged.machines.get(m["metadata"]["name"]) if judged else None)
        for m in owned
    ]
    return Facts(
        cp=cp,
        spec=spec,
        owned=owned,
        infos=infos,
        owned_by_others=sorted(m["metadata"]["name"] for m in ownership.owned_by_others),
        unmanaged_nodes=unmanaged,
        etcd=view,
        marked=[info for info in infos if info.marked_unhealthy and not info.deleting],
        unwatched=unwatched,
        components=judged,
    )
