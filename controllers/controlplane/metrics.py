"""The ControlPlane controller's Prometheus metrics, labelled ``<namespace>/<name>``."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import Counter, Gauge

from api.components import COMPONENTS
from controllers.controlplane.machines import MachineInfo
from runtime.metrics import registry

REPLICAS = Gauge(
    "cpo_controlplane_replicas",
    "Machines of a ControlPlane by state (desired, current, updated, ready, available).",
    ["controlplane", "state"],
    registry=registry,
)
OPERATIONS = Counter(
    "cpo_controlplane_operations",
    "Machine operations of the ControlPlane controller (create, delete, adopt, remediate, release).",
    ["controlplane", "operation"],
    registry=registry,
)
PREFLIGHT_FAILURES = Counter(
    "cpo_controlplane_preflight_failures",
    "Steps held back by a failed preflight check, per check.",
    ["controlplane", "check"],
    registry=registry,
)
UNHEALTHY_COMPONENTS = Gauge(
    "cpo_controlplane_unhealthy_components",
    "Machines of a ControlPlane whose control-plane component (kube-apiserver, "
    "kube-controller-manager, kube-scheduler, etcd) is judged unhealthy.",
    ["controlplane", "component"],
    registry=registry,
)


REPLICA_STATES = ("desired", "current", "updated", "ready", "available")


def label(cp: Mapping[str, Any]) -> str:
    """The ``controlplane`` label of a ControlPlane: ``<namespace>/<name>``."""
    return f"{cp['metadata'].get('namespace')}/{cp['metadata']['name']}"


def observe_replicas(cp: Mapping[str, Any], desired: int, machines: Sequence[MachineInfo]) -> None:
    """Set ``cpo_controlplane_replicas`` for every state, and
    ``cpo_controlplane_unhealthy_components`` for every component, from the owned Machines."""
    name = label(cp)
    REPLICAS.labels(name, "desired").set(desired)
    REPLICAS.labels(name, "current").set(len(machines))
    REPLICAS.labels(name, "updated").set(sum(1 for m in machines if m.updated))
    REPLICAS.labels(name, "ready").set(sum(1 for m in machines if m.ready))
    REPLICAS.labels(name, "available").set(sum(1 for m in machines if m.available))
    for component in COMPONENTS:
        broken = sum(1 for m in machines if not m.deleting and component in m.components_unhealthy)
        UNHEALTHY_COMPONENTS.labels(name, component).set(broken)


def forget_replicas(cp: Mapping[str, Any]) -> None:
    """Drop a deleted ControlPlane's ``cpo_controlplane_replicas`` and
    ``cpo_controlplane_unhealthy_components`` series."""
    for state in REPLICA_STATES:
        with contextlib.suppress(KeyError):
            REPLICAS.remove(label(cp), state)
    for component in COMPONENTS:
        with contextlib.suppress(KeyError):
            UNHEALTHY_COMPONENTS.remove(label(cp), component)
