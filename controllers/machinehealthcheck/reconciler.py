"""The MachineHealthCheck reconciler and its wiring into a manager (controller ``machinehealthcheck``).

One reconcile looks at one MachineHealthCheck in the operator's scope (labelled
:data:`api.controlplane.MHC_SCOPE_LABEL`; any other is neither enqueued nor written), in four
steps, and only the first and third do I/O:

1. gather: the Machines its selector matches (in its namespace, from the cache) and their Nodes,
   each judged with :func:`~controllers.machinehealthcheck.health.target_health`
   (:class:`~controllers.machinehealthcheck.actions.Target`);
2. decide: the short-circuit (:func:`~controllers.machinehealthcheck.health.short_circuit`), the
   action for each target (:func:`~controllers.machinehealthcheck.actions.choose_action`), the
   short-circuit's Event (:func:`~controllers.machinehealthcheck.status.restricted_event`);
3. act: :class:`~controllers.machinehealthcheck.remediator.Remediator` carries the actions out;
4. report: the metrics, and the status
   (:func:`~controllers.machinehealthcheck.status.mhc_status`) when it changed; then ask to be
   called again at the moment the next pending timeout expires.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from api.controlplane import in_health_check_scope
from api.machine import API_VERSION
from api.selector import selector_matches
from runtime.builder import ControllerBuilder
from runtime.cache import Cache
from runtime.client import Client
from runtime.controller import Controller, ControllerOptions
from runtime.errors import NotFound
from runtime.events import EventRecorder
from runtime.handler import EnqueueRequestsFromMapFunc
from runtime.jsoncodec import JSON
from runtime.log import get_logger
from runtime.manager import Manager
from runtime.reconcile import Request, Result

from . import metrics
from .actions import CheckFacts, Target, plan
from .health import earliest_recheck, short_circuit, with_machine_conditions
from .remediator import (
    EVENT_EXTERNAL_REMEDIATION_CREATED,
    EVENT_MACHINE_DELETED,
    EVENT_MACHINE_DELETION_FAILED,
    EVENT_MACHINE_MARKED,
    EVENT_SKIPPED_NO_CONTROLLER,
    Remediator,
)
from .status import EVENT_REMEDIATION_RESTRICTED, MhcStatus, mhc_status, restricted_event
from .watches import (
    MACHINE_KIND,
    MHC_KIND,
    NODE_NAME_INDEX,
    InHealthCheckScope,
    Mapper,
    NodeHealthChanged,
    machine_node_name,
)

__all__ = [
    "CONTROLLER_NAME",
    "EVENT_EXTERNAL_REMEDIATION_CREATED",
    "EVENT_MACHINE_DELETED",
    "EVENT_MACHINE_DELETION_FAILED",
    "EVENT_MACHINE_MARKED",
    "EVENT_REMEDIATION_RESTRICTED",
    "EVENT_SKIPPED_NO_CONTROLLER",
    "PAUSED_ANNOTATION",
    "Clock",
    "MachineHealthCheckOptions",
    "MachineHealthCheckReconciler",
    "setup_with_manager",
    "utc_now",
]

Clock = Callable[[], datetime]

CONTROLLER_NAME: Final = "machinehealthcheck"
PAUSED_ANNOTATION: Final = "cluster.x-k8s.io/paused"

log = get_logger("controllers.machinehealthcheck")


def utc_now() -> datetime:
    """The wall clock, as an aware UTC datetime (the default :data:`Clock`)."""
    return datetime.now(UTC)


@dataclass
class MachineHealthCheckOptions:
    """How the controller runs; every field has a working default."""

    controller: ControllerOptions = field(default_factory=ControllerOptions)
    """Workers, rate limiter, … of the controller. Defaults to ``ControllerOptions()``."""
    clock: Clock = utc_now
    """Where "now" comes from for the health decision. Defaults to the wall clock (UTC)."""


class MachineHealthCheckReconciler:
    """Reconciles one MachineHealthCheck; see the package docstring for the behaviour."""

    def __init__(self, client: Client, cache: Cache, recorder: EventRecorder, clock: Clock = utc_now) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.clock = clock
        self.remediator = Remediator(client, recorder)

    async def reconcile(self, request: Request) -> Result:
        try:
            mhc = await self.cache.get(API_VERSION, MHC_KIND, request.name, request.namespace)
        except NotFound:
            metrics.forget(request.name, request.namespace)
            return Result()
        if not in_health_check_scope(mhc):
            # Another controller's MachineHealthCheck (or one whose scope label was just removed):
            # nothing of it is read, judged or written here.
            metrics.forget(request.name, request.namespace)
            return Result()
        spec = with_machine_conditions(mhc)
        now = self.clock()
        targets = [
            Target.judge(machine, node, spec, now) for machine, node in await self._machines_and_nodes(mhc)
        ]
        healthy = sum(t.healthy for t in targets)
        decision = short_circuit(spec.get("maxUnhealthy"), len(targets), healthy)
        event = restricted_event(decision, len(targets), spec.get("maxUnhealthy"))
        if event is not None:
            log.warning("remediation short-circuited", detail=decision.message)
            self.recorder.event(mhc, event.type, event.reason, event.message)
        check = CheckFacts(
            paused=PAUSED_ANNOTATION in (mhc["metadata"].get("annotations") or {}),
            allowed=decision.allowed,
            external=bool(spec.get("remediationTemplate")),
        )
        if check.paused:
            log.info("paused: no remediation", annotation=PAUSED_ANNOTATION)
        errors: list[str] = []
        outcomes = await self.remediator.carry_out(mhc, plan(targets, check), now, errors)
        metrics.observe(
            request.name, request.namespace, covered=len(targets), short_circuited=not decision.allowed
        )
        stored = mhc.get("status") or {}
        status = mhc_status(
            stored, expected=len(targets), healthy=healthy, decision=decision, outcomes=outcomes, now=now
        )
        if status.differs_from(stored):
            await self._write_status(mhc, status)
        if errors:
            raise RuntimeError(f"{request}: " + "; ".join(errors))
        recheck = earliest_recheck(t.verdict for t in targets)
        return Result(requeue_after=recheck) if recheck is not None else Result()

    # -------------------------------------------------------------------------------- reading

    async def _machines_and_nodes(self, mhc: JSON) -> list[tuple[JSON, JSON | None]]:
        """The Machines the selector matches (empty selector: all in the namespace) and their Nodes."""
        namespace = mhc["metadata"].get("namespace") or ""
        selector = (mhc.get("spec") or {}).get("selector")
        machines = [
            m
            for m in await self.cache.list(API_VERSION, MACHINE_KIND, namespace=namespace)
            if selector_matches(selector, (m.get("metadata") or {}).get("labels"))
        ]
        return [(machine, await self._node_of(machine)) for machine in machines]

    async def _node_of(self, machine: JSON) -> JSON | None:
        """The Node of ``status.nodeRef``, or None when there is none or it does not exist.

        The cache holds control-plane Nodes only (:mod:`api.nodes`); before calling a Node missing
        (which remediates at once), the API server is asked, so a Node without a role label the
        operator knows is not mistaken for a deleted one.
        """
        names = machine_node_name(machine)
        if not names:
            return None
        try:
            return await self.cache.get("v1", "Node", names[0])
        except NotFound:
            pass
        try:
            return await self.client.get("v1", "Node", names[0])
        except NotFound:
            return None

    # -------------------------------------------------------------------------------- status

    async def _write_status(self, mhc: JSON, status: MhcStatus) -> None:
        """Patch ``status`` through the status subresource.

        Fields of the status this controller does not write are left as they are (merge patch),
        and without the optimistic lock, as machine-api-operator's status patch: this controller
        is the only writer of these fields and computes them whole from the Machines each pass,
        so a pass that read the health check before the cache saw the previous pass's write
        still writes the right values. With the lock, Machine events close together made that
        pass fail with a conflict and retry with backoff.
        """
        meta = mhc["metadata"]
        await self.client.patch_status(
            API_VERSION, MHC_KIND, meta["name"], {"status": status.body()}, meta.get("namespace")
        )


# ------------------------------------------------------------------------------------- wiring


def setup_with_manager(manager: Manager, options: MachineHealthCheckOptions | None = None) -> Controller:
    """Add the ``machinehealthcheck`` controller to ``manager`` and return it.

    Watches MachineHealthChecks in the operator's scope (:class:`.watches.InHealthCheckScope`);
    Machines (mapped to every such MachineHealthCheck of their namespace whose selector matches
    them); Nodes (mapped through the Machine whose ``status.nodeRef``
    names them, an index of the Machine informer), when their conditions change.
    """
    options = options or MachineHealthCheckOptions()
    cache = manager.cache
    mapper = Mapper(cache)
    mapper.machines.add_indexers({NODE_NAME_INDEX: machine_node_name})
    reconciler = MachineHealthCheckReconciler(
        manager.client, cache, manager.get_event_recorder(CONTROLLER_NAME), options.clock
    )
    return (
        ControllerBuilder(manager)
        .named(CONTROLLER_NAME)
        .for_(API_VERSION, MHC_KIND, InHealthCheckScope())
        .watches(API_VERSION, MACHINE_KIND, EnqueueRequestsFromMapFunc(mapper.for_machine))
        .watches("v1", "Node", EnqueueRequestsFromMapFunc(mapper.for_node), NodeHealthChanged())
        .with_options(options.controller)
        .complete(reconciler)
    )
