"""Which MachineHealthChecks a Machine or Node event wakes: the watches of the ``machinehealthcheck``
controller.

A Machine maps to every MachineHealthCheck of its namespace whose selector matches it; a Node to
those of the Machine whose ``status.nodeRef`` names it (an index of the Machine informer); a Node
update passes only when a condition a health check reads changes, so kubelet heartbeats cost
nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from api.machine import API_VERSION
from api.selector import selector_matches
from runtime.cache import INDEX_NAMESPACE, Cache
from runtime.event import UpdateEvent
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


class Mapper:
    """Map functions from Machines and Nodes to the MachineHealthChecks that select them."""

    def __init__(self, cache: Cache) -> None:
        self.mhcs = cache.informer_for(API_VERSION, MHC_KIND)
        self.machines = cache.informer_for(API_VERSION, MACHINE_KIND)

    def for_machine(self, machine: JSON) -> list[Request]:
        """Every MachineHealthCheck of the Machine's namespace whose selector matches it."""
        meta = machine.get("metadata") or {}
        namespace = meta.get("namespace") or ""
        labels = meta.get("labels") or {}
        return [
            Request(mhc["metadata"]["name"], namespace)
            for mhc in self.mhcs.by_index(INDEX_NAMESPACE, namespace)
            if selector_matches((mhc.get("spec") or {}).get("selector"), labels)
        ]

    def for_node(self, node: JSON) -> list[Request]:
        """The MachineHealthChecks of the Machine(s) whose ``status.nodeRef`` names the Node."""
        name = (node.get("metadata") or {}).get("name") or ""
        requests: list[Request] = []
        for machine in self.machines.by_index(NODE_NAME_INDEX, name):
            requests.extend(self.for_machine(machine))
        return requests
