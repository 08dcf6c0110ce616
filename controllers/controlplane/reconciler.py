"""The ControlPlane reconciler: gather the facts, decide with the rules, act, report the status.

One reconcile does at most one create or one delete (plus adoption, the owned
MachineHealthCheck and the status), so every step is re-decided from fresh facts:

1. **gather** (:func:`~controllers.controlplane.facts.gather`): owned Machines (adopting the
   adoptable), Nodes, the etcd members, as :class:`~controllers.controlplane.machines.MachineInfo`
   values, and the Machines it controls but cannot see (:mod:`~controllers.controlplane.unwatched`);
   then the template's labels and annotations are written onto the Machines in place
   (:mod:`~controllers.controlplane.template_metadata`);
2. **remediate** (:meth:`ControlPlaneReconciler._remediate`): replace the Machine the health
   check marked, when :func:`~controllers.controlplane.remediation.remediation_decision` allows;
3. **scale or roll out** (:meth:`ControlPlaneReconciler._scale_or_roll_out`), unless a
   remediation was carried out: the :func:`~controllers.controlplane.scale.next_step`, after the
   :func:`~controllers.controlplane.preflight.preflight`;
4. **report** (:meth:`ControlPlaneReconciler._report`): the status, from
   :func:`~controllers.controlplane.status.compute_status`, the metrics, and an Event when the
   plan (``Progressing``) changed (:func:`~controllers.controlplane.plan.decision_event`); then
   each Machine's ``UpToDate`` and ``OwnerRemediated``
   (:mod:`~controllers.controlplane.machine_conditions`).

An Inactive ControlPlane (:mod:`~controllers.controlplane.inactive`) is gathered without
adopting, then only reported (:meth:`ControlPlaneReconciler._observe`).

Wired into a manager by :func:`controllers.controlplane.wiring.setup_with_manager`::

    manager = await Manager.create(ManagerOptions(kubeconfig="kubeconfig"))
    setup_with_manager(manager, ControlPlaneOptions())
    await manager.run()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import ValidationError

from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane import (
    CONDITION_PROGRESSING,
    RESUME_REMEDIATION_ANNOTATION,
    ControlPlane,
)
from api.controlplane import KIND as CP_KIND
from api.controlplane_reasons import (
    REASON_MACHINE_ADOPTED,
    REASON_MACHINE_CREATED,
    REASON_MACHINE_DELETED,
    REASON_MACHINE_NOT_WATCHED,
    REASON_MACHINE_REMEDIATED,
    REASON_REMEDIATING,
)
from api.machine import API_VERSION as MACHINE_API_VERSION
from api.selector import selector_string
from controllers.common import now
from controllers.conditions import find_condition
from controllers.controlplane import remediation_record as records
from controllers.controlplane.components import ComponentsCheck
from controllers.controlplane.etcdview import forward_leadership
from controllers.controlplane.expectations import Expectations
from controllers.controlplane.facts import Facts, gather
from controllers.controlplane.healthcheck import sync_mhc
from controllers.controlplane.inactive import is_inactive
from controllers.controlplane.machine_conditions import write_conditions
from controllers.controlplane.machines import MachineInfo, controller_ref, machine_name
from controllers.controlplane.metrics import OPERATIONS, PREFLIGHT_FAILURES, label, observe_replicas
from controllers.controlplane.options import ResolvedControlPlaneOptions
from controllers.controlplane.placement import new_machine, seconds_until_rollout_after
from controllers.controlplane.plan import decision_event
from controllers.controlplane.preflight import (
    PreflightFailure,
    preflight,
)
from controllers.controlplane.release import HookIdentity, add_finalizer, has_finalizer, release
from controllers.controlplane.remediation import (
    RemediationDecision,
    remediation_decision,
)
from controllers.controlplane.remediation_order import pick_target
from controllers.controlplane.remove_member_first import mark_remove_member_first, unmark_remove_member_first
from controllers.controlplane.requeue import next_look
from controllers.controlplane.scale import planned_step
from controllers.controlplane.status import (
    StatusInputs,
    compute_status,
    seconds_until_degraded,
    status_to_write,
    status_unchanged,
)
from controllers.controlplane.step import Step
from controllers.controlplane.template_metadata import sync_template_metadata
from controllers.controlplane.unwatched import unwatched_message, unwatched_news
from controllers.etcd.pool import EtcdClientPool
from runtime.cache import Cache
from runtime.client import JSON, Client
from runtime.errors import Conflict, NotFound
from runtime.events import EventRecorder
from runtime.log import get_logger
from runtime.reconcile import Request, Result, TerminalError

_log = get_logger("controllers.controlplane")


@dataclass(frozen=True)
class _Remediation:
    """What the remediation step found and did."""

    in_progress: bool
    """A remediation is under way: started now, or its recorded Machine is still there."""
    decision: RemediationDecision | None = None
    """The decision about the marked Machine, when one is marked."""
    recorded: JSON | None = None
    """The ``status.lastRemediation`` written for a remediation started now."""
    result: Result | None = None
    """When to look again, when the remediation step has a say."""
    target: str | None = None
    """The marked Machine the decision is about."""

    @property
    def carried_out(self) -> bool:
        return self.decision is not None and self.decision.allowed

    @property
    def failure(self) -> tuple[str, str] | None:
        """The remediation's problem only a human can fix (maxRetry exhausted)."""
        decision = self.decision
        return (decision.reason, decision.message) if decision and decision.needs_human else None


@dataclass(frozen=True)
class _Scaling:
    """What the scale-or-rollout step decided and did."""

    step: Step
    failures: Sequence[PreflightFailure] = ()
    result: Result | None = None
    """When to look again, or None to leave it to the remediation step's answer."""


class ControlPlaneReconciler:
    """Reconciles one ControlPlane: adopt, keep the MHC, remediate or take one step, report."""

    def __init__(
        self,
        client: Client,
        cache: Cache,
        options: ResolvedControlPlaneOptions,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.options = options
        self.recorder = recorder
        self._preflight_failures: dict[tuple[str, str], int] = {}
        self._expectations = Expectations()
        self._components: dict[tuple[str, str], ComponentsCheck] = {}
        self.etcd_clients = EtcdClientPool(client, options.etcd)

    # ------------------------------------------------------------------------------ entry

    async def reconcile(self, request: Request) -> Result:
        try:
            cp = await self.cache.get(CP_API_VERSION, CP_KIND, request.name, request.namespace)
        except NotFound:
            self._preflight_failures.pop((request.namespace, request.name), None)
            self._components.pop((request.namespace, request.name), None)
            await self.etcd_clients.forget(f"{request.namespace}/{request.name}")
            return Result()
        if cp["metadata"].get("deletionTimestamp"):
            identity = HookIdentity(self.options.etcd_guard_hook, self.options.etcd_quorum_hook_runs)
            released = await release(self.client, self.cache, cp, self._event, identity)
            return Result() if released else Result(requeue_after=self.options.wait_period)
        try:
            spec = ControlPlane.from_dict(cp).spec
        except ValidationError as err:
            raise TerminalError(f"ControlPlane {request} does not parse: {err}") from err
        if not has_finalizer(cp):
            cp = await add_finalizer(self.client, cp)
        facts = await gather(
            self.cache,
            self.client,
            self.etcd_clients,
            cp,
            spec,
            self._adopt,
            self.options.control_plane_node_selectors,
            self._components.setdefault(
                (request.namespace, request.name),
                ComponentsCheck(
                    self.options.components_layout, timedelta(seconds=self.options.components_grace)
                ),
            ),
        )
        if is_inactive(spec):
            return await self._observe(facts)
        await unmark_remove_member_first(self.client, facts.cp, facts.owned)
        await sync_template_metadata(self.client, spec, facts.owned)
        await sync_mhc(self.client, self.cache, cp, spec, facts.infos, self._event)
        return await self._act(facts)

    # ------------------------------------------------------------------------------ decide and act

    async def _observe(self, facts: Facts) -> Result:
        """spec.state Inactive: write the status, saying the step it would take, and nothing else."""
        step = planned_step(facts.spec, facts.infos, facts.misconfigured)
        await self._report(facts, _Remediation(False), _Scaling(step))
        return Result(requeue_after=self.options.resync_period)

    async def _act(self, facts: Facts) -> Result:
        """Remediate, else scale or roll out; then report. At most one create or delete."""
        key = (facts.cp["metadata"]["namespace"], facts.cp["metadata"]["name"])
        if not self._expectations.caught_up(key, facts.infos):
            # The Machine watch event that completes the expectation enqueues us again.
            return Result(requeue_after=self.options.wait_period)
        remediation = await self._remediate(facts, key)
        scaling = None if remediation.carried_out else await self._scale_or_roll_out(facts, key)
        await self._report(facts, remediation, scaling)
        await write_conditions(
            self.client, facts.spec, facts.owned, remediation.target, remediation.decision, facts.components
        )
        result = scaling.result if scaling is not None and scaling.result is not None else remediation.result
        return next_look(
            result,
            resync_period=self.options.resync_period,
            paused=facts.spec.paused,
            rollout_after_in=seconds_until_rollout_after(facts.spec, now=now()),
            degraded_in=seconds_until_degraded(facts.spec.replicas, facts.infos, now=now()),
            retry_in=remediation.decision.requeue_after if remediation.decision else None,
        )

    async def _remediate(self, facts: Facts, key: tuple[str, str]) -> _Remediation:
        """Delete the marked Machine :func:`~controllers.controlplane.remediation_order.pick_target`
        chooses (or the one a remediation recorded before a crash names), when the remediation
        rules allow it, after moving etcd leadership off it.

        Its record goes into the ControlPlane's in-progress list before the delete, and onto the
        replacement when that is created; :mod:`~controllers.controlplane.remediation_record`
        says how a crash at any point is finished by the next pass.
        """
        last = (facts.cp.get("status") or {}).get("lastRemediation") or {}
        in_progress = bool(last.get("machine")) and any(i.name == last["machine"] for i in facts.infos)
        facts.cp, pending = await records.settle_pending(self.client, facts.cp, facts.infos, facts.owned)
        if not facts.marked:
            return _Remediation(in_progress)
        target = pick_target(facts.marked, pending)
        resumed = records.resumable(pending, target.name)
        decision = self._remediation_decision(facts, target, last.get("machine"), resumed)
        if not decision.allowed:
            # A decision on the whole ControlPlane (paused) waits for the update that lifts it.
            wait = decision.requeue_after or self.options.wait_period
            result = None if decision.whole_control_plane else Result(requeue_after=wait)
            return _Remediation(in_progress, decision, result=result, target=target.name)
        record = resumed if decision.resumed else None
        if record is None:
            record = records.RemediationRecord(target.name, now(), decision.retry_count)
            clear = [RESUME_REMEDIATION_ANNOTATION] if decision.resume_used else []
            try:
                facts.cp = await records.write_pending(
                    self.client, facts.cp, records.recorded(pending, record), clear=clear
                )
            except Conflict:  # a stale view of the list: decide again from the fresh one
                return _Remediation(in_progress, result=Result(requeue_after=self.options.wait_period))
        facts.cp = await records.report_last(self.client, facts.cp, record)
        await self._forward_leadership(facts, target.name)
        await self._delete_machine(facts.cp, target.name, REASON_REMEDIATING, decision.message, "remediate")
        self._expectations.expect(key, "delete", target.name)
        result = Result(requeue_after=self.options.wait_period)
        return _Remediation(True, decision, record.to_json(), result, target.name)

    def _remediation_decision(
        self,
        facts: Facts,
        target: MachineInfo,
        last_machine: str | None,
        resumed: records.RemediationRecord | None,
    ) -> RemediationDecision:
        spec = facts.spec
        remediation = spec.remediation
        raw = next(m for m in facts.owned if m["metadata"]["name"] == target.name)
        return remediation_decision(
            target=target,
            machines=facts.infos,
            initialized=any((m.get("status") or {}).get("nodeRef") for m in facts.owned),
            stacked_etcd=facts.etcd is not None or not (spec.etcd is not None and spec.etcd.external),
            etcd_error=None if facts.etcd is None or facts.etcd.facts.reachable else facts.etcd.facts.error,
            last_machine=last_machine,
            resuming=resumed,
            lineage=records.lineage_of(raw),
            max_retry=remediation.max_retry if remediation else None,
            retry_period=remediation.retry_period if remediation else None,
            min_healthy_period=remediation.min_healthy_period if remediation else None,
            now=now(),
            backoff=self.options.remediation_backoff,
            resume=(facts.cp["metadata"].get("annotations") or {}).get(RESUME_REMEDIATION_ANNOTATION),
            paused=spec.paused,
        )

    async def _scale_or_roll_out(self, facts: Facts, key: tuple[str, str]) -> _Scaling:
        """Take the :func:`~controllers.controlplane.scale.next_step` once the preflight passes."""
        spec = facts.spec
        step = planned_step(spec, facts.infos, facts.misconfigured)
        if spec.paused:
            return _Scaling(step, result=Result())
        if step.action == "wait":
            return _Scaling(step, result=Result(requeue_after=self.options.wait_period))
        if step.action not in ("create", "delete"):
            return _Scaling(step)
        failures = self._preflight(facts, step)
        if failures:
            return _Scaling(step, failures, self._preflight_failed(facts.cp, key, failures))
        self._preflight_failures.pop(key, None)
        await self._take(facts, key, step)
        return _Scaling(step, result=Result(requeue_after=self.options.wait_period))

    @staticmethod
    def _preflight(facts: Facts, step: Step) -> list[PreflightFailure]:
        hosting = sorted(
            (facts.etcd.with_member if facts.etcd else set())
            | {i.name for i in facts.infos if not i.deleting and i.running}
        )
        etcd = facts.etcd.facts if facts.etcd is not None else None
        return preflight(facts.infos, etcd, hosting_etcd=hosting, desired=facts.spec.replicas, step=step)

    async def _take(self, facts: Facts, key: tuple[str, str], step: Step) -> None:
        """Carry out a create or delete step (a delete moves etcd leadership off the Machine first)."""
        cp = facts.cp
        if step.action == "create":
            self._expectations.expect(key, "create", await self._create_machine(facts, step))
            return
        assert step.machine is not None
        await self._forward_leadership(facts, step.machine)
        if step.remove_member_first:
            await mark_remove_member_first(self.client, facts.cp, facts.owned, step.machine, step.reason)
        await self._delete_machine(cp, step.machine, step.reason, step.message, "delete")
        self._expectations.expect(key, "delete", step.machine)

    async def _report(self, facts: Facts, remediation: _Remediation, scaling: _Scaling | None) -> None:
        """Write the status computed from the facts and what this reconcile decided, and the metrics."""
        cp, spec = facts.cp, facts.spec
        status = compute_status(
            StatusInputs(
                replicas=spec.replicas,
                selector=selector_string(spec.selector),
                generation=int(cp["metadata"].get("generation") or 0),
                machines=facts.infos,
                step=scaling.step if scaling else None,
                preflight_failures=scaling.failures if scaling else (),
                paused=spec.paused,
                inactive=is_inactive(spec),
                owned_by_others=facts.owned_by_others,
                unmanaged_nodes=facts.unmanaged_nodes,
                unwatched=facts.unwatched,
                etcd=facts.etcd,
                remediation=remediation.decision,
                autorepair=spec.enable_autorepair and not spec.paused,
                remediating=remediation.in_progress,
                failure=remediation.failure,
                components=facts.components.condition if facts.components else None,
            )
        )
        if remediation.recorded is not None:
            status["lastRemediation"] = remediation.recorded
        observe_replicas(cp, spec.replicas, facts.infos)
        stored = find_condition((cp.get("status") or {}).get("conditions") or [], CONDITION_PROGRESSING)
        if unwatched_news(cp, facts.unwatched):
            self._event(cp, "Warning", REASON_MACHINE_NOT_WATCHED, unwatched_message(facts.unwatched))
        if await self._write_status(cp, status):
            announce = decision_event(
                stored, find_condition(status["conditions"], CONDITION_PROGRESSING) or {}
            )
            if announce is not None:
                self._event(cp, *announce)

    def _preflight_failed(
        self, cp: JSON, key: tuple[str, str], failures: Sequence[PreflightFailure]
    ) -> Result:
        """Count the failed checks (the metric; ``Progressing`` and its Event name them) and look
        again after a backoff that doubles per failure in a row."""
        count = self._preflight_failures.get(key, 0)
        self._preflight_failures[key] = count + 1
        for failure in failures:
            PREFLIGHT_FAILURES.labels(label(cp), failure.check).inc()
        delay = min(
            self.options.preflight_backoff_initial * (2 ** min(count, 20)), self.options.preflight_backoff_max
        )
        return Result(requeue_after=delay)

    # ------------------------------------------------------------------------------ writes

    async def _adopt(self, cp: JSON, machine: JSON) -> JSON | None:
        metadata = machine["metadata"]
        refs = [*(metadata.get("ownerReferences") or []), controller_ref(cp)]
        try:
            adopted = await self.client.patch(
                MACHINE_API_VERSION,
                "Machine",
                metadata["name"],
                {"metadata": {"ownerReferences": refs, "resourceVersion": metadata["resourceVersion"]}},
                metadata["namespace"],
            )
        except NotFound:
            return None  # deleted meanwhile: nothing to adopt
        # A Conflict (changed meanwhile, e.g. its hook placed) propagates: this pass must stop, since
        # counting without that Machine would create one too many; the retry adopts it.
        OPERATIONS.labels(label(cp), "adopt").inc()
        self._event(cp, "Normal", REASON_MACHINE_ADOPTED, f"Adopted Machine {metadata['name']}")
        return adopted

    async def _create_machine(self, facts: Facts, step: Step) -> str:
        """Create the Machine ``step`` asks for; it carries the record of a remediation awaiting
        its replacement, if one is."""
        cp, present = facts.cp, [i.name for i in facts.infos if not i.deleting]
        machine = new_machine(facts.spec, step.domain, name=machine_name(cp["metadata"]["name"]), owner=cp)
        name = str(machine["metadata"]["name"])
        live = await records.take_for_replacement(self.client, cp, machine, present)
        await self.client.create(machine)
        if live is not None:
            await records.drop_taken(self.client, live, machine)
        OPERATIONS.labels(label(cp), "create").inc()
        self._event(cp, "Normal", REASON_MACHINE_CREATED, f"Created Machine {name}: {step.message}")
        return name

    async def _forward_leadership(self, facts: Facts, name: str) -> None:
        """Move etcd leadership off ``name``'s member before its deletion
        (:func:`~controllers.controlplane.etcdview.forward_leadership`)."""
        pool, cp = self.etcd_clients, facts.cp
        await forward_leadership(
            pool, cp, facts.spec, facts.owned, facts.infos, facts.etcd, name, self._event
        )

    async def _delete_machine(self, cp: JSON, name: str, reason: str, message: str, operation: str) -> None:
        try:
            await self.client.delete(MACHINE_API_VERSION, "Machine", name, cp["metadata"]["namespace"])
        except NotFound:
            return
        OPERATIONS.labels(label(cp), operation).inc()
        event = REASON_MACHINE_DELETED if operation == "delete" else REASON_MACHINE_REMEDIATED
        self._event(cp, "Normal", event, message)

    async def _write_status(self, cp: JSON, status: JSON) -> bool:
        """Merge-patch the status subresource when it changed, keeping other writers' conditions;
        whether it was written."""
        current = cp.get("status") or {}
        status = status_to_write(current, status, now())
        if status_unchanged(current, status):
            return False
        try:
            await self.client.patch_status(
                CP_API_VERSION,
                CP_KIND,
                cp["metadata"]["name"],
                {"metadata": {"resourceVersion": cp["metadata"]["resourceVersion"]}, "status": status},
                cp["metadata"]["namespace"],
            )
        except Conflict:
            # Someone (the etcd-quorum-hook controller, or our own last write) changed it: the
            # watch brings the new version and the next reconcile recomputes from it.
            return False
        return True

    # ------------------------------------------------------------------------------ reporting

    def _event(self, cp: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        _log.info(message, controlplane=label(cp), reason=reason)
        if self.recorder is not None:
            self.recorder.event(cp, type_, reason, message)
