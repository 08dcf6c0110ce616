"""What the ControlPlane's decisions know about its Machines and their etcd members.

The reconciler gathers these facts (from the cache and from etcd) into plain frozen values; every
rule in :mod:`~controllers.controlplane.placement`, :mod:`~controllers.controlplane.scale`,
:mod:`~controllers.controlplane.rollout`, :mod:`~controllers.controlplane.remediation` and
:mod:`~controllers.controlplane.status` reads them and nothing else. Which Machines are the
ControlPlane's at all is decided here too (:func:`classify_machines`), and so are the readings of
Machines and Nodes these facts are made of (:func:`node_ready`, :func:`is_unmanaged_node`, and
:func:`marked_for_remediation`, which is :func:`api.machine.marked_for_remediation`: the
etcd-quorum-hook controller reads the mark too).
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane import KIND as CP_KIND
from api.machine import CONDITION_HEALTH_CHECK_SUCCEEDED
from api.machine import marked_for_remediation as marked_for_remediation
from api.nodes import DEFAULT_CONTROL_PLANE_NODE_SELECTORS, is_control_plane_node
from api.ownership import ControlPlaneMachines
from controllers.common import parse_time
from controllers.conditions import condition_status, conditions_of, find_condition
from runtime.jsoncodec import JSON

DELETE_MACHINE_ANNOTATION: Final = "machine.openshift.io/delete-machine"
"""A user's (or autoscaler's) request: remove this Machine first on scale-in."""
NODE_MACHINE_ANNOTATION: Final = "machine.openshift.io/machine"
"""On a Node: ``<namespace>/<name>`` of the Machine it runs on."""


@dataclass(frozen=True)
class MachineInfo:
    """What the decisions need to know about one owned Machine (gathered by the reconciler)."""

    name: str
    created: datetime
    failure_domain: str | None = None
    outdated: bool = False
    deleting: bool = False
    delete_annotation: bool = False
    """Carries ``machine.openshift.io/delete-machine``."""
    phase: str | None = None
    node_ready: bool = False
    """Its Node exists and is Ready."""
    has_node: bool = False
    """Its Node exists (Ready or not): a Machine without one never came up."""
    not_ready_since: datetime | None = None
    """When its Node's Ready condition last turned to something else than True (see
    :func:`not_ready_since`); None when the Node is Ready, or when not known (then
    :attr:`created` stands in: a Machine not ready since it was created)."""
    marked_unhealthy: bool = False
    """The MachineHealthCheck marked it for remediation (``HealthCheckSucceeded=False``)."""
    marked_since: datetime | None = None
    """When it was marked (see :func:`marked_since`): the time of its failure the resume
    annotation is compared with; None when not marked or not known."""
    etcd_voter: bool = False
    """Its etcd member is a voter."""
    etcd_healthy: bool = False
    """Its etcd member answered a health read."""
    etcd_learner: bool = False
    """Its etcd member is a learner."""
    components_unhealthy: tuple[str, ...] = ()
    """Its control-plane components judged unhealthy (:mod:`~controllers.controlplane.components`)."""
    components_pending: tuple[str, ...] = ()
    """Its components whose Pods are not seen yet on its Ready Node, within the grace period."""
    components_message: str = ""
    """What is wrong with its components, component by component."""

    @property
    def running(self) -> bool:
        return self.phase == "Running"

    @property
    def failed(self) -> bool:
        return self.phase == "Failed"

    @property
    def node_up(self) -> bool:
        """Running with a Ready Node (whatever its components do)."""
        return self.running and self.node_ready

    @property
    def components_healthy(self) -> bool:
        """No component unhealthy or still unseen (true when the components are not checked)."""
        return not self.components_unhealthy and not self.components_pending

    @property
    def ready(self) -> bool:
        """Running with a Ready Node and healthy control-plane components: what
        ``readyReplicas`` counts."""
        return self.node_up and self.components_healthy

    @property
    def updated(self) -> bool:
        """Counted in ``status.updatedReplicas``: not being deleted, not outdated, and
        :attr:`ready`. A replacement counts only once it is ready, so ``updatedReplicas`` equal
        to ``spec.replicas`` means the rollout is done, not merely that every Machine was created
        (the ControlPlaneMachineSet counts so: a Machine is updated when it is Ready and needs no
        update)."""
        return not self.deleting and not self.outdated and self.ready

    @property
    def available(self) -> bool:
        """Not being deleted, ready, and its etcd member is a healthy voter."""
        return not self.deleting and self.ready and self.etcd_voter and self.etcd_healthy

    @property
    def unhealthy(self) -> bool:
        """Marked by the health check, Failed, or its Node is not Ready once Running."""
        return self.marked_unhealthy or self.failed or (self.running and not self.node_ready)

    @property
    def unhealthy_voter(self) -> bool:
        """Its etcd member is a voter that failed its health read (its Node may well be Ready)."""
        return self.etcd_voter and not self.etcd_healthy

    @property
    def has_etcd_member(self) -> bool:
        return self.etcd_voter or self.etcd_learner

    @property
    def in_transition(self) -> bool:
        """Being deleted, or being created (not yet Running with a Ready Node, and not unhealthy):
        not healthy to a MachineHealthCheck, yet no failure either. Broken components on a Ready
        Node are a failure, not a transition."""
        return self.deleting or not (self.node_up or self.unhealthy)


def machine_voters(machines: Iterable[MachineInfo]) -> dict[str, bool]:
    """Machine name → healthy, for the Machines whose etcd member votes: the input of
    :func:`api.quorum.quorum_kept_without` when a Machine's member is to be removed."""
    return {m.name: m.etcd_healthy for m in machines if m.etcd_voter}


@dataclass(frozen=True)
class EtcdFacts:
    """What the reconciler learnt from etcd for the preflight (see :func:`preflight`)."""

    reachable: bool = True
    error: str = ""
    """Why etcd could not be asked, when ``reachable`` is False."""
    member_names: tuple[str, ...] = ()
    """Names of every member (voters and learners; an unstarted member has the name ``""``)."""
    learners: tuple[str, ...] = ()
    """Names (or ids, for unstarted ones) of learners."""
    disagreeing: tuple[str, ...] = ()
    """Endpoints whose member list differs from the others'."""
    alarms: tuple[str, ...] = ()
    """Active alarms as ``ALARM@member``."""
    unhealthy_voters: tuple[tuple[str, str], ...] = ()
    """Voters whose health read failed: (Machine name, or member name or id without a Machine;
    the error)."""


# ---------------------------------------------------------------------------------------------- ownership


@dataclass(frozen=True)
class Ownership:
    """The selector's Machines, split by who controls them."""

    owned: list[JSON] = field(default_factory=list)
    adoptable: list[JSON] = field(default_factory=list)
    owned_by_others: list[JSON] = field(default_factory=list)


def classify_machines(
    uid: str, selector: Mapping[str, Any], machines: Iterable[Mapping[str, Any]]
) -> Ownership:
    """The ControlPlane controller's filter over the one classification
    (:class:`api.ownership.ControlPlaneMachines`): it manages the **owned** Machines (controlled
    by this ControlPlane, by uid, whatever their labels say now), adopts the **adoptable** ones
    (matched, no controller, not being deleted: adopting a dying Machine would only make us
    replace it) and leaves the **foreign** ones alone, reported (``Degraded``, reason
    ``MachinesAlreadyOwned``)."""
    classified = ControlPlaneMachines.of(uid, selector, machines)
    return Ownership(
        owned=[dict(m) for m in classified.owned],
        adoptable=[dict(m) for m in classified.adoptable],
        owned_by_others=[dict(m) for m in classified.foreign],
    )


def controller_ref(cp: Mapping[str, Any]) -> JSON:
    """The controller ownerReference pointing at ``cp``."""
    return {
        "apiVersion": CP_API_VERSION,
        "kind": CP_KIND,
        "name": cp["metadata"]["name"],
        "uid": cp["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def machine_name(cp_name: str) -> str:
    """``<controlplane>-<5 random lowercase letters/digits>``."""
    alphabet = string.ascii_lowercase + string.digits
    return f"{cp_name}-{''.join(secrets.choice(alphabet) for _ in range(5))}"


# ---------------------------------------------------------------------------------------------- readings


def node_ready(node: Mapping[str, Any] | None) -> bool:
    """Whether a Node's Ready condition is True."""
    return condition_status(node, "Ready") == "True"


def not_ready_since(node: Mapping[str, Any] | None) -> datetime | None:
    """When a Node that is not Ready stopped being Ready: its Ready condition's lastTransitionTime.

    None for a Ready Node, and for a missing Node or one without that time: the status rules then
    measure from the Machine's creation (a Machine whose Node never came is unready since then).
    Read from the Node, not from a timer in this process, so a restart of the operator does not
    restart the clock.
    """
    ready = find_condition(conditions_of(node), "Ready")
    if ready is None or ready.get("status") == "True":
        return None
    return parse_time(ready.get("lastTransitionTime"))


def marked_since(machine: Mapping[str, Any]) -> datetime | None:
    """When the health check marked ``machine``: its ``HealthCheckSucceeded`` condition's
    lastTransitionTime while that is False; None otherwise. Read from the Machine, so an operator
    restart does not move it."""
    checked = find_condition(conditions_of(machine), CONDITION_HEALTH_CHECK_SUCCEEDED)
    if checked is None or checked.get("status") != "False":
        return None
    return parse_time(checked.get("lastTransitionTime"))


def is_unmanaged_node(
    node: Mapping[str, Any],
    namespace: str,
    known: set[str],
    selectors: Iterable[str] = DEFAULT_CONTROL_PLANE_NODE_SELECTORS,
) -> bool:
    """A control-plane Node (:func:`api.nodes.is_control_plane_node` by ``selectors``) without a
    Machine: no Machine annotation, or one naming a Machine of this namespace that does not exist
    (a Node of another namespace's Machine is not ours to judge). A worker Node is never one,
    even in a cache that holds every Node."""
    if not is_control_plane_node(node, selectors):
        return False
    ref = ((node.get("metadata") or {}).get("annotations") or {}).get(NODE_MACHINE_ANNOTATION) or ""
    if not ref:
        return True
    return ref.partition("/")[0] == namespace and ref not in known
