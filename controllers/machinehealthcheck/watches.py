"""Which MachineHealthChecks a Machine or Node event wakes: the watches of the ``machinehealthcheck``
controller.

Only MachineHealthChecks in the operator's scope (:func:`api.controlplane.in_health_check_scope`,
the label :data:`api.controlplane.MHC_SCOPE_LABEL`, the same rule the webhook's ``objectSelector``
states) are ever enqueued: :class:`InHealthCheckScope` filters their own events, and the map
functions below skip the others. A Machine maps to every MachineHealthCheck of its namespace
whose selector matches it; a Node to those of the Machine whose ``status.nodeRef`` names it (an
index of the Machine informer); a Node update passes only when a condition a health check reads
changes, so kubelet heartbeats cost nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from api.controlplane import in_health_check_scope
from api.machine import API_VERSION
from api.selector import selector_matches
from runtime.cache import INDEX_NAMESPACE, Cache
from runtime.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from runtime.jsoncodec import JSON
from runtime.predicate import Funcs
from runtime.reconcile import Request

MHC_KIND: Final = "MachineHealthCheck"
MACHINE_KIND: Final = "Machine"
NODE_NAME_INDEX: Final = "machinehealthcheck/status.nodeRef.name"
"""Index of the Machine informer: the Node name in ``status.nodeRef``."""


def machine_node_name(machine: JSON) -> list[str]:
    """Index function: the Node the Machine's ``status.nodeRef`` names (none without nodeRef)."""
    name = ((machine.get("status") or {}).get("nodeRef") or {}).get("name")
    return [name] if isinstance(name, str) and name else []


def node_conditions_changed(old: JSON | None, new: JSON | None) -> bool:
    """Whether a Node update changes anything a health check reads.

    Kubelets rewrite every condition's ``lastHeartbeatTime`` every few seconds; those updates
    cannot change a verdict, so they do not wake the MachineHealthChecks.
    """

    def health(node: JSON | None) -> list[tuple[Any, Any, Any]]:
        conditions = ((node or {}).get("status") or {}).get("conditions") or ()
        return sorted(
            (str(c.get("type")), c.get("status"), c.get("lastTransitionTime"))
            for c in conditions
            if isinstance(c, Mapping)
        )

    return health(old) != health(new)


class NodeHealthChanged(Funcs):
    """Node updates pass only when conditions change (creates and deletes always pass)."""

    def update(self, event: UpdateEvent) -> bool:
        return node_conditions_changed(event.object_old, event.object_new)


class InHealthCheckScope(Funcs):
    """MachineHealthCheck events pass only for a MachineHealthCheck in the operator's scope.

    An update passes when the old or the new object is in scope, so that removing the label
    reaches the reconciler once (it then forgets the check's metrics and writes nothing), as the
    API server calls a webhook whose ``objectSelector`` matches the old or the new object.
    """

    def create(self, event: CreateEvent) -> bool:
        return in_health_check_scope(event.object)

    def update(self, event: UpdateEvent) -> bool:
        return in_health_check_scope(event.object_old) or in_health_check_scope(event.object_new)

    def delete(self, event: DeleteEvent) -> bool:
        return in_health_check_scope(event.object)

    def generic(self, event: GenericEvent) -> bool:
        return in_health_check_scope(event.object)


class Mapper:
    """Map functions from Machines and Nodes to the MachineHealthChecks that select them."""

    def __init__(self, cache: Cache) -> None:
        self.mhcs = cache.informer_for(API_VERSION, MHC_KIND)
        self.machines = cache.informer_for(API_VERSION, MACHINE_KIND)

    def for_machine(self, machine: JSON) -> list[Request]:
        """Every MachineHealthCheck in scope of the Machine's namespace whose selector matches it."""
        meta = machine.get("metadata") or {}
        namespace = meta.get("namespace") or ""
        labels = meta.get("labels") or {}
        return [
            Request(mhc["metadata"]["name"], namespace)
            for mhc in self.mhcs.by_index(INDEX_NAMESPACE, namespace)
            if in_health_check_scope(mhc)
            and selector_matches((mhc.get("spec") or {}).get("selector"), labels)
        ]

    def for_node(self, node: JSON) -> list[Request]:
        """The MachineHealthChecks of the Machine(s) whose ``status.nodeRef`` names the Node."""
        name = (node.get("metadata") or {}).get("name") or ""
        requests: list[Request] = []
        for machine in self.machines.by_index(NODE_NAME_INDEX, name):
            requests.extend(self.for_machine(machine))
        return requests
