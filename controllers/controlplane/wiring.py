"""How the ControlPlane controller is wired into a manager: what it watches, how a Machine, a Node
or a control-plane component's mirror Pod event finds its ControlPlanes, and
:func:`setup_with_manager`."""

from __future__ import annotations

from typing import Any, Final

from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane import KIND as CP_KIND
from api.machine import API_VERSION as MACHINE_API_VERSION
from api.ownership import controller_owner, controlling_controlplane
from api.selector import selector_matches
from controllers.controlplane.machines import NODE_MACHINE_ANNOTATION, node_ready
from controllers.controlplane.options import ControlPlaneOptions
from controllers.controlplane.reconciler import ControlPlaneReconciler
from runtime.builder import ControllerBuilder
from runtime.cache import Cache
from runtime.client import JSON
from runtime.controller import Controller
from runtime.event import UpdateEvent
from runtime.handler import EnqueueRequestsFromMapFunc
from runtime.manager import Manager
from runtime.predicate import Funcs
from runtime.reconcile import Request

CONTROLLER_NAME: Final = "controlplane"


class _NodeReadinessChanged(Funcs):
    """Node updates matter only when Ready flips or the Machine annotation changes (not heartbeats)."""

    def update(self, event: UpdateEvent) -> bool:
        old, new = event.object_old or {}, event.object_new or {}
        annotation = NODE_MACHINE_ANNOTATION
        return node_ready(old) != node_ready(new) or (
            (old.get("metadata") or {}).get("annotations", {}).get(annotation)
            != (new.get("metadata") or {}).get("annotations", {}).get(annotation)
        )


def _map_machine(cache: Cache) -> Any:
    """A Machine event concerns its controlling ControlPlane; a Machine no controller owns, every
    ControlPlane of its namespace whose selector matches it (one of them may adopt it)."""

    def controlplanes_for_machine(machine: JSON) -> list[Request]:
        metadata = machine.get("metadata") or {}
        namespace = metadata.get("namespace") or ""
        if controller_owner(machine) is not None:
            owner = controlling_controlplane(machine)
            return [] if owner is None else [Request(owner, namespace)]
        found = []
        for cp in cache.informer_for(CP_API_VERSION, CP_KIND).list():
            cp_meta = cp.get("metadata") or {}
            if cp_meta.get("namespace") != namespace:
                continue
            selector = (cp.get("spec") or {}).get("selector") or {}
            if selector_matches(selector, metadata.get("labels")):
                found.append(Request(cp_meta["name"], namespace))
        return found

    return controlplanes_for_machine


def _map_node(cache: Cache) -> Any:
    """A Node event concerns the ControlPlanes of its Machine (by the Node's Machine annotation,
    else by the Machine's nodeRef); a Node without a Machine concerns every ControlPlane."""
    for_machine = _map_machine(cache)

    def controlplanes_for_node(node: JSON) -> list[Request]:
        metadata = node.get("metadata") or {}
        ref = (metadata.get("annotations") or {}).get(NODE_MACHINE_ANNOTATION)
        informer = cache.informer_for(MACHINE_API_VERSION, "Machine")
        machine = informer.get_by_key(ref) if ref else None
        if machine is None:
            # No (or a stale) annotation: the Machine whose status.nodeRef names this Node.
            machine = next(
                (
                    m
                    for m in informer.list()
                    if ((m.get("status") or {}).get("nodeRef") or {}).get("name") == metadata.get("name")
                ),
                None,
            )
        if machine is not None:
            return list(for_machine(machine))
        # A Node without a Machine concerns every ControlPlane (UnmanagedNodes).
        return [
            Request(cp["metadata"]["name"], cp["metadata"].get("namespace") or "")
            for cp in cache.informer_for(CP_API_VERSION, CP_KIND).list()
        ]

    return controlplanes_for_node


class _PodReadinessChanged(Funcs):
    """Mirror Pod updates matter only when Ready flips (not the restart count going up)."""

    def update(self, event: UpdateEvent) -> bool:
        return pod_ready(event.object_old) != pod_ready(event.object_new)


def pod_ready(pod: JSON | None) -> bool:
    status = (pod or {}).get("status") or {}
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())


def _map_pod(cache: Cache) -> Any:
    """A component's mirror Pod concerns the ControlPlanes of its Node (by ``spec.nodeName``)."""
    for_node = _map_node(cache)

    def controlplanes_for_pod(pod: JSON) -> list[Request]:
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = cache.informer_for("v1", "Node").get_by_key(node_name) if node_name else None
        return list(for_node(node)) if node is not None else []

    return controlplanes_for_pod


def setup_with_manager(manager: Manager, options: ControlPlaneOptions | None = None) -> Controller:
    """Add the ControlPlane controller to ``manager`` and return it; ``options`` default to
    ``ControlPlaneOptions()`` (raises ``ValueError`` saying what to change in a bad one)."""
    resolved = (options or ControlPlaneOptions()).with_defaults()
    reconciler = ControlPlaneReconciler(
        manager.client, manager.cache, resolved, manager.get_event_recorder(CONTROLLER_NAME)
    )
    manager.add(reconciler.etcd_clients)
    builder = (
        ControllerBuilder(manager)
        .named(CONTROLLER_NAME)
        .for_(CP_API_VERSION, CP_KIND)
        .owns(MACHINE_API_VERSION, "MachineHealthCheck")
        .watches(MACHINE_API_VERSION, "Machine", EnqueueRequestsFromMapFunc(_map_machine(manager.cache)))
        .watches("v1", "Node", EnqueueRequestsFromMapFunc(_map_node(manager.cache)), _NodeReadinessChanged())
    )
    if resolved.components_layout is not None:
        # Only the Pods the cache's scopes hold (operator_cache_options): never every Pod.
        builder = builder.watches(
            "v1", "Pod", EnqueueRequestsFromMapFunc(_map_pod(manager.cache)), _PodReadinessChanged()
        )
    return builder.with_options(resolved.controller).complete(reconciler)
