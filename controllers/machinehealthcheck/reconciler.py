"""The MachineHealthCheck reconciler and its wiring into a manager (controller ``machinehealthcheck``).

One reconcile looks at one MachineHealthCheck: it lists the Machines its selector matches (in its
namespace, from the cache), judges each with :func:`~controllers.machinehealthcheck.health.target_health`,
decides the short-circuit, remediates the unhealthy ones when allowed, writes the status when it
changed, and asks to be called again at the moment the next pending timeout expires.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from api.machine import (
    API_VERSION,
    CONDITION_EXTERNAL_REMEDIATION_REQUEST_AVAILABLE,
    CONDITION_EXTERNAL_REMEDIATION_TEMPLATE_AVAILABLE,
    CONDITION_HEALTH_CHECK_SUCCEEDED,
    CONDITION_REMEDIATION_ALLOWED,
    REASON_EXTERNAL_REMEDIATION_REQUEST_CREATION_FAILED,
    REASON_EXTERNAL_REMEDIATION_TEMPLATE_NOT_FOUND,
    REASON_TOO_MANY_UNHEALTHY,
    SEVERITY_ERROR,
    SEVERITY_WARNING,
)
from api.ownership import controller_owner
from api.selector import selector_matches
from controllers.conditions import condition, find_condition, set_conditions
from runtime.builder import ControllerBuilder
from runtime.cache import Cache
from runtime.client import Client
from runtime.controller import Controller, ControllerOptions
from runtime.errors import APIError, NotFound
from runtime.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from runtime.handler import EnqueueRequestsFromMapFunc
from runtime.jsoncodec import JSON
from runtime.log import get_logger
from runtime.manager import Manager
from runtime.reconcile import Request, Result

from . import metrics
from .health import (
    ShortCircuit,
    Verdict,
    counts_as_healthy,
    earliest_recheck,
    format_max_unhealthy,
    short_circuit,
    target_health,
)
from .remediation import (
    cleared_for_healthy,
    external_remediation_request,
    is_deleting,
    is_owned_by_controlplane,
    machine_conditions,
    marked_for_owner,
    request_kind,
    same_conditions,
    status_changed,
)
from .watches import MACHINE_KIND, MHC_KIND, NODE_NAME_INDEX, Mapper, NodeHealthChanged, machine_node_name

Clock = Callable[[], datetime]

CONTROLLER_NAME: Final = "machinehealthcheck"
PAUSED_ANNOTATION: Final = "cluster.x-k8s.io/paused"

# Event reasons (the machine-api-operator's).
EVENT_REMEDIATION_RESTRICTED: Final = "RemediationRestricted"
EVENT_MACHINE_DELETED: Final = "MachineDeleted"
EVENT_MACHINE_DELETION_FAILED: Final = "MachineDeletionFailed"
EVENT_SKIPPED_NO_CONTROLLER: Final = "SkippedNoController"
EVENT_MACHINE_MARKED: Final = "MachineMarkedUnhealthy"
EVENT_EXTERNAL_REMEDIATION_CREATED: Final = "ExternalRemediationRequestCreated"

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


@dataclass
class _Target:
    machine: JSON
    node: JSON | None
    verdict: Verdict

    @property
    def name(self) -> str:
        return str(self.machine["metadata"]["name"])

    def describe(self, mhc: Mapping[str, Any]) -> str:
        """``namespace/mhc/machine/node``, the machine-api-operator's target string."""
        meta = mhc["metadata"]
        node = ((self.machine.get("status") or {}).get("nodeRef") or {}).get("name", "")
        return f"{meta.get('namespace')}/{meta.get('name')}/{self.name}/{node}"


# ------------------------------------------------------------------------------------ mapping


# ---------------------------------------------------------------------------------- reconciler


class MachineHealthCheckReconciler:
    """Reconciles one MachineHealthCheck; see the package docstring for the behaviour."""

    def __init__(self, client: Client, cache: Cache, recorder: EventRecorder, clock: Clock = utc_now) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.clock = clock

    async def reconcile(self, request: Request) -> Result:
        try:
            mhc = await self.cache.get(API_VERSION, MHC_KIND, request.name, request.namespace)
        except NotFound:
            metrics.forget(request.name, request.namespace)
            return Result()
        spec = mhc.get("spec") or {}
        now = self.clock()
        targets = [
            _Target(machine, node, target_health(machine, node, spec, now))
            for machine, node in await self._machines_and_nodes(mhc)
        ]
        healthy = [t for t in targets if counts_as_healthy(t.machine, t.node, t.verdict)]
        decision = short_circuit(spec.get("maxUnhealthy"), len(targets), len(healthy))
        conditions = self._remediation_allowed(mhc, decision, len(targets), now)
        errors: list[str] = []
        if PAUSED_ANNOTATION in (mhc["metadata"].get("annotations") or {}):
            log.info("paused: no remediation", annotation=PAUSED_ANNOTATION)
        else:
            if decision.allowed:
                for target in targets:
                    if target.verdict.unhealthy:
                        conditions = await self._remediate(mhc, target, conditions, now, errors)
            for target in healthy:
                await self._after_recovery(mhc, target, now, errors)
        metrics.observe(
            request.name, request.namespace, covered=len(targets), short_circuited=not decision.allowed
        )
        await self._write_status(
            mhc,
            {
                "expectedMachines": len(targets),
                "currentHealthy": len(healthy),
                "remediationsAllowed": decision.remediations_allowed,
                "conditions": conditions,
            },
        )
        if errors:
            raise RuntimeError(f"{request}: " + "; ".join(errors))
        recheck = earliest_recheck(t.verdict for t in targets)
        return Result(requeue_after=recheck) if recheck is not None else Result()

    def _remediation_allowed(
        self, mhc: JSON, decision: ShortCircuit, expected: int, now: datetime
    ) -> list[JSON]:
        """The MachineHealthCheck's conditions with ``RemediationAllowed`` set from ``decision``; a
        short-circuit is logged and gets the machine-api-operator's ``RemediationRestricted`` event."""
        conditions: list[JSON] = [dict(c) for c in (mhc.get("status") or {}).get("conditions") or ()]
        if decision.allowed:
            return set_conditions(
                conditions,
                {CONDITION_REMEDIATION_ALLOWED: condition(CONDITION_REMEDIATION_ALLOWED, "True")},
                now,
            )
        log.warning("remediation short-circuited", detail=decision.message)
        self.recorder.eventf(
            mhc,
            EVENT_TYPE_WARNING,
            EVENT_REMEDIATION_RESTRICTED,
            "Remediation restricted due to exceeded number of unhealthy machines "
            "(total: %s, unhealthy: %s, maxUnhealthy: %s)",
            expected,
            decision.unhealthy,
            format_max_unhealthy((mhc.get("spec") or {}).get("maxUnhealthy")),
        )
        return set_conditions(
            conditions,
            {
                CONDITION_REMEDIATION_ALLOWED: condition(
                    CONDITION_REMEDIATION_ALLOWED,
                    "False",
                    REASON_TOO_MANY_UNHEALTHY,
                    decision.message,
                    SEVERITY_WARNING,
                )
            },
            now,
        )

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

        The cache holds control-plane Nodes only; before calling a Node missing (which remediates
        at once), the API server is asked, so a Node without the role label is not mistaken for
        a deleted one.
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

    # ---------------------------------------------------------------------------- remediation

    async def _remediate(
        self, mhc: JSON, target: _Target, conditions: list[JSON], now: datetime, errors: list[str]
    ) -> list[JSON]:
        """Remediate one unhealthy target; returns the MHC conditions (external remediation sets some)."""
        machine = target.machine
        if is_deleting(machine):
            return conditions  # already on its way out: never deleted (or marked) twice
        try:
            if is_owned_by_controlplane(machine):
                await self._mark_for_owner(mhc, target, now)
            elif (mhc.get("spec") or {}).get("remediationTemplate"):
                conditions = await self._external_remediation(mhc, target, conditions, now, errors)
            elif controller_owner(machine) is None:
                self.recorder.eventf(
                    machine,
                    EVENT_TYPE_NORMAL,
                    EVENT_SKIPPED_NO_CONTROLLER,
                    "Machine %s has no controller owner, skipping remediation",
                    target.describe(mhc),
                )
            else:
                await self._delete(mhc, target)
        except APIError as err:
            errors.append(f"remediating Machine {target.name}: {err}")
        return conditions

    async def _mark_for_owner(self, mhc: JSON, target: _Target, now: datetime) -> None:
        """Mark a ControlPlane-owned Machine ``HealthCheckSucceeded=False`` / ``OwnerRemediated=False``.

        Never deleted here: the ControlPlane replaces it when that keeps etcd quorum. Written
        with the Machine's resourceVersion (a conflict retries the reconcile).
        """
        machine = target.machine
        marked = marked_for_owner(machine, target.verdict, now)
        if same_conditions(marked, machine_conditions(machine)):
            return
        await self._patch_machine_conditions(machine, marked)
        meta = mhc["metadata"]
        metrics.remediation_started(meta["name"], meta["namespace"])
        self.recorder.eventf(
            machine,
            EVENT_TYPE_WARNING,
            EVENT_MACHINE_MARKED,
            "Machine %s is unhealthy (%s: %s); its ControlPlane will remediate it",
            target.describe(mhc),
            target.verdict.reason,
            target.verdict.message,
        )

    async def _delete(self, mhc: JSON, target: _Target) -> None:
        """Delete a Machine its controller owner (a MachineSet, …) will replace.

        The Machine is read from the API server first and deleted with its uid and
        resourceVersion as preconditions, so one already deleting is never deleted again.
        """
        machine = target.machine
        namespace = machine["metadata"].get("namespace")
        try:
            current = await self.client.get(API_VERSION, MACHINE_KIND, target.name, namespace)
        except NotFound:
            return
        if is_deleting(current):
            return
        try:
            await self.client.delete(
                API_VERSION,
                MACHINE_KIND,
                target.name,
                namespace,
                preconditions={
                    "uid": current["metadata"]["uid"],
                    "resourceVersion": current["metadata"]["resourceVersion"],
                },
            )
        except NotFound:
            return
        except APIError as err:
            self.recorder.eventf(
                machine,
                EVENT_TYPE_WARNING,
                EVENT_MACHINE_DELETION_FAILED,
                "Machine %s remediation failed: unable to delete Machine object: %s",
                target.describe(mhc),
                err,
            )
            raise
        meta = mhc["metadata"]
        metrics.remediation_started(meta["name"], meta["namespace"])
        self.recorder.eventf(
            machine,
            EVENT_TYPE_NORMAL,
            EVENT_MACHINE_DELETED,
            "Machine %s has been remediated by requesting to delete Machine object (%s: %s)",
            target.describe(mhc),
            target.verdict.reason,
            target.verdict.message,
        )

    def _request_ref(self, mhc: JSON) -> tuple[str, str, str, str]:
        """(apiVersion, template kind, template name, template namespace) of ``spec.remediationTemplate``."""
        ref = (mhc.get("spec") or {}).get("remediationTemplate") or {}
        namespace = ref.get("namespace") or mhc["metadata"].get("namespace") or ""
        return (
            str(ref.get("apiVersion") or ""),
            str(ref.get("kind") or ""),
            str(ref.get("name") or ""),
            namespace,
        )

    async def _external_remediation(
        self, mhc: JSON, target: _Target, conditions: list[JSON], now: datetime, errors: list[str]
    ) -> list[JSON]:
        """Create the remediation request named after the Machine from ``spec.remediationTemplate``.

        A missing template or a refused create is said in the MachineHealthCheck's conditions
        (``ExternalRemediationTemplateAvailable`` / ``ExternalRemediationRequestAvailable`` False)
        and fails the reconcile, which retries with backoff.
        """
        api_version, kind, name, template_namespace = self._request_ref(mhc)
        namespace = target.machine["metadata"].get("namespace")
        try:
            await self.client.get(api_version, request_kind(kind), target.name, namespace)
            return conditions  # already requested
        except NotFound:
            pass
        try:
            template = await self.client.get(api_version, kind, name, template_namespace)
        except APIError as err:
            errors.append(f"remediation template {kind} {template_namespace}/{name}: {err}")
            return set_conditions(
                conditions,
                {
                    CONDITION_EXTERNAL_REMEDIATION_TEMPLATE_AVAILABLE: condition(
                        CONDITION_EXTERNAL_REMEDIATION_TEMPLATE_AVAILABLE,
                        "False",
                        REASON_EXTERNAL_REMEDIATION_TEMPLATE_NOT_FOUND,
                        f"{kind} {template_namespace}/{name}: {err}",
                        SEVERITY_ERROR,
                    )
                },
                now,
            )
        conditions = set_conditions(
            conditions,
            {
                CONDITION_EXTERNAL_REMEDIATION_TEMPLATE_AVAILABLE: condition(
                    CONDITION_EXTERNAL_REMEDIATION_TEMPLATE_AVAILABLE, "True"
                )
            },
            now,
        )
        try:
            await self.client.create(external_remediation_request(template, target.machine))
        except APIError as err:
            errors.append(f"creating {request_kind(kind)} {namespace}/{target.name}: {err}")
            return set_conditions(
                conditions,
                {
                    CONDITION_EXTERNAL_REMEDIATION_REQUEST_AVAILABLE: condition(
                        CONDITION_EXTERNAL_REMEDIATION_REQUEST_AVAILABLE,
                        "False",
                        REASON_EXTERNAL_REMEDIATION_REQUEST_CREATION_FAILED,
                        f"{request_kind(kind)} {namespace}/{target.name}: {err}",
                        SEVERITY_ERROR,
                    )
                },
                now,
            )
        meta = mhc["metadata"]
        metrics.remediation_started(meta["name"], meta["namespace"])
        self.recorder.eventf(
            target.machine,
            EVENT_TYPE_NORMAL,
            EVENT_EXTERNAL_REMEDIATION_CREATED,
            "Machine %s: created %s %s for external remediation (%s: %s)",
            target.describe(mhc),
            request_kind(kind),
            target.name,
            target.verdict.reason,
            target.verdict.message,
        )
        return set_conditions(
            conditions,
            {
                CONDITION_EXTERNAL_REMEDIATION_REQUEST_AVAILABLE: condition(
                    CONDITION_EXTERNAL_REMEDIATION_REQUEST_AVAILABLE, "True"
                )
            },
            now,
        )

    async def _after_recovery(self, mhc: JSON, target: _Target, now: datetime, errors: list[str]) -> None:
        """A healthy target: drop its remediation request, clear a mark its owner has not acted on."""
        try:
            if (mhc.get("spec") or {}).get("remediationTemplate"):
                await self._delete_remediation_request(mhc, target)
            if is_owned_by_controlplane(target.machine):
                await self._clear_mark(target, now)
        except APIError as err:
            errors.append(f"Machine {target.name} is healthy again: {err}")

    async def _delete_remediation_request(self, mhc: JSON, target: _Target) -> None:
        """Delete the remediation request of a Machine that is healthy again: remediation succeeded."""
        api_version, kind, _, _ = self._request_ref(mhc)
        namespace = target.machine["metadata"].get("namespace")
        try:
            request = await self.client.get(api_version, request_kind(kind), target.name, namespace)
        except NotFound:
            return
        if is_deleting(request):
            return
        try:
            await self.client.delete(api_version, request_kind(kind), target.name, namespace)
        except NotFound:
            return
        log.info(f"healthy again, deleted its {request_kind(kind)}", target=target.describe(mhc))

    async def _clear_mark(self, target: _Target, now: datetime) -> None:
        """Clear our mark on a ControlPlane-owned Machine that recovered before its owner acted."""
        machine = target.machine
        current = machine_conditions(machine)
        if find_condition(current, CONDITION_HEALTH_CHECK_SUCCEEDED) is None:
            return
        cleared = cleared_for_healthy(machine, now)
        if same_conditions(cleared, current):
            return
        await self._patch_machine_conditions(machine, cleared)

    async def _patch_machine_conditions(self, machine: JSON, conditions: list[JSON]) -> None:
        """Write a Machine's ``status.conditions`` with its resourceVersion (a conflict retries the
        reconcile)."""
        await self.client.patch_status(
            API_VERSION,
            MACHINE_KIND,
            machine["metadata"]["name"],
            {
                "metadata": {"resourceVersion": machine["metadata"]["resourceVersion"]},
                "status": {"conditions": conditions},
            },
            machine["metadata"].get("namespace"),
        )

    # -------------------------------------------------------------------------------- status

    async def _write_status(self, mhc: JSON, new: JSON) -> None:
        """Patch ``status`` through the status subresource, only when a field changed.

        Fields of the status this controller does not write are left as they are (merge patch),
        and without the optimistic lock, as machine-api-operator's status patch: this controller
        is the only writer of these fields and computes them whole from the Machines each pass,
        so a pass that read the health check before the cache saw the previous pass's write
        still writes the right values. With the lock, Machine events close together made that
        pass fail with a conflict and retry with backoff.
        """
        if not status_changed(mhc.get("status") or {}, new):
            return
        meta = mhc["metadata"]
        await self.client.patch_status(
            API_VERSION, MHC_KIND, meta["name"], {"status": new}, meta.get("namespace")
        )


# ------------------------------------------------------------------------------------- wiring


def setup_with_manager(manager: Manager, options: MachineHealthCheckOptions | None = None) -> Controller:
    """Add the ``machinehealthcheck`` controller to ``manager`` and return it.

    Watches MachineHealthChecks; Machines (mapped to every MachineHealthCheck of their namespace
    whose selector matches them); Nodes (mapped through the Machine whose ``status.nodeRef``
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
        .for_(API_VERSION, MHC_KIND)
        .watches(API_VERSION, MACHINE_KIND, EnqueueRequestsFromMapFunc(mapper.for_machine))
        .watches("v1", "Node", EnqueueRequestsFromMapFunc(mapper.for_node), NodeHealthChanged())
        .with_options(options.controller)
        .complete(reconciler)
    )
