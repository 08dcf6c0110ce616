"""Carrying out the :class:`~controllers.machinehealthcheck.actions.Action` chosen for a target:
the writes, the Events and the remediation counter, and nothing that decides what to do.

Each write guards itself against a stale cache the way the machine-api-operator's does: a Machine
is re-read from the API server and deleted with its uid and resourceVersion as preconditions (one
already deleting is never deleted again); a Machine's conditions are written with the
resourceVersion they were computed from (a conflict fails the reconcile, which retries); a
remediation request that already exists is not created again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from api.machine import API_VERSION
from controllers.conditions import conditions_of, set_conditions
from runtime.client import Client
from runtime.errors import APIError, NotFound
from runtime.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from runtime.jsoncodec import JSON
from runtime.log import get_logger

from . import metrics
from .actions import Action, Target, is_deleting
from .external import ExternalOutcome, external_remediation_request, template_ref
from .watches import MACHINE_KIND

# Event reasons (the machine-api-operator's).
EVENT_MACHINE_DELETED: Final = "MachineDeleted"
EVENT_MACHINE_DELETION_FAILED: Final = "MachineDeletionFailed"
EVENT_SKIPPED_NO_CONTROLLER: Final = "SkippedNoController"
EVENT_MACHINE_MARKED: Final = "MachineMarkedUnhealthy"
EVENT_EXTERNAL_REMEDIATION_CREATED: Final = "ExternalRemediationRequestCreated"

log = get_logger("controllers.machinehealthcheck")


class Remediator:
    """Carries out the actions of one MachineHealthCheck's pass."""

    def __init__(self, client: Client, recorder: EventRecorder) -> None:
        self.client = client
        self.recorder = recorder

    async def carry_out(
        self, mhc: JSON, plan: list[tuple[Target, Action]], now: datetime, errors: list[str]
    ) -> list[ExternalOutcome]:
        """Carry out every action of ``plan`` in order; a failure is added to ``errors`` and the
        next action still runs. Returns the external remediation attempts, for the status."""
        outcomes: list[ExternalOutcome] = []
        for target, action in plan:
            try:
                outcome = await self._act(mhc, target, action, now)
            except APIError as err:
                errors.append(
                    f"Machine {target.name} is healthy again: {err}"
                    if action.kind == "clear"
                    else f"remediating Machine {target.name}: {err}"
                )
                continue
            if outcome is not None:
                outcomes.append(outcome)
                if outcome.error is not None:
                    errors.append(outcome.error)
        return outcomes

    async def _act(self, mhc: JSON, target: Target, action: Action, now: datetime) -> ExternalOutcome | None:
        if action.kind == "mark":
            await self.mark(mhc, target, action, now)
        elif action.kind == "external":
            return await self.request_external(mhc, target)
        elif action.kind == "skip":
            self.recorder.eventf(
                target.machine,
                EVENT_TYPE_NORMAL,
                EVENT_SKIPPED_NO_CONTROLLER,
                "Machine %s has no controller owner, skipping remediation",
                target.describe(mhc),
            )
        elif action.kind == "delete":
            await self.delete(mhc, target)
        elif action.kind == "clear":
            await self.clear(mhc, target, action, now)
        return None

    # ---------------------------------------------------------------------------------- remediate

    async def mark(self, mhc: JSON, target: Target, action: Action, now: datetime) -> None:
        """Write the mark on a ControlPlane-owned Machine, count the remediation, say so."""
        await self._write_conditions(target.machine, action, now)
        meta = mhc["metadata"]
        metrics.remediation_started(meta["name"], meta["namespace"])
        self.recorder.eventf(
            target.machine,
            EVENT_TYPE_WARNING,
            EVENT_MACHINE_MARKED,
            "Machine %s is unhealthy (%s: %s); its ControlPlane will remediate it",
            target.describe(mhc),
            target.verdict.reason,
            target.verdict.message,
        )

    async def delete(self, mhc: JSON, target: Target) -> None:
        """Delete a Machine its controller owner (a MachineSet, …) will replace.

        The Machine is read from the API server first and deleted with its uid and
        resourceVersion as preconditions, so one already deleting is never deleted again.
        """
        namespace = target.machine["metadata"].get("namespace")
        try:
            current = await self.client.get(API_VERSION, MACHINE_KIND, target.name, namespace)
        except NotFound:
            return
        if is_deleting(current):
            return
        preconditions = {
            "uid": current["metadata"]["uid"],
            "resourceVersion": current["metadata"]["resourceVersion"],
        }
        try:
            await self.client.delete(
                API_VERSION, MACHINE_KIND, target.name, namespace, preconditions=preconditions
            )
        except NotFound:
            return
        except APIError as err:
            self.recorder.eventf(
                target.machine,
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
            target.machine,
            EVENT_TYPE_NORMAL,
            EVENT_MACHINE_DELETED,
            "Machine %s has been remediated by requesting to delete Machine object (%s: %s)",
            target.describe(mhc),
            target.verdict.reason,
            target.verdict.message,
        )

    async def request_external(self, mhc: JSON, target: Target) -> ExternalOutcome | None:
        """Create the remediation request named after the Machine from ``spec.remediationTemplate``.

        None when it exists already (nothing attempted). A template that cannot be read or a
        refused create is in the outcome, which the status reports and the reconcile fails on
        (it retries with backoff).
        """
        ref = template_ref(mhc)
        namespace = target.machine["metadata"].get("namespace")
        try:
            await self.client.get(ref.api_version, ref.request_kind, target.name, namespace)
            return None
        except NotFound:
            pass
        outcome = ExternalOutcome(ref.describe(), f"{ref.request_kind} {namespace}/{target.name}")
        try:
            template = await self.client.get(ref.api_version, ref.kind, ref.name, ref.namespace)
        except APIError as err:
            return ExternalOutcome(outcome.template, outcome.request, template_error=str(err))
        try:
            await self.client.create(external_remediation_request(template, target.machine))
        except APIError as err:
            return ExternalOutcome(outcome.template, outcome.request, create_error=str(err))
        meta = mhc["metadata"]
        metrics.remediation_started(meta["name"], meta["namespace"])
        self.recorder.eventf(
            target.machine,
            EVENT_TYPE_NORMAL,
            EVENT_EXTERNAL_REMEDIATION_CREATED,
            "Machine %s: created %s %s for external remediation (%s: %s)",
            target.describe(mhc),
            ref.request_kind,
            target.name,
            target.verdict.reason,
            target.verdict.message,
        )
        return outcome

    # ---------------------------------------------------------------------------------- recovered

    async def clear(self, mhc: JSON, target: Target, action: Action, now: datetime) -> None:
        """A healthy target: drop its remediation request, then take back the mark its owner has
        not acted on."""
        if action.delete_request:
            await self._delete_request(mhc, target)
        if action.conditions:
            await self._write_conditions(target.machine, action, now)

    async def _delete_request(self, mhc: JSON, target: Target) -> None:
        """Delete the remediation request of a Machine that is healthy again: remediation succeeded."""
        ref = template_ref(mhc)
        namespace = target.machine["metadata"].get("namespace")
        try:
            request = await self.client.get(ref.api_version, ref.request_kind, target.name, namespace)
        except NotFound:
            return
        if is_deleting(request):
            return
        try:
            await self.client.delete(ref.api_version, ref.request_kind, target.name, namespace)
        except NotFound:
            return
        log.info(f"healthy again, deleted its {ref.request_kind}", target=target.describe(mhc))

    async def _write_conditions(self, machine: JSON, action: Action, now: datetime) -> None:
        """Set ``action.conditions`` on the Machine's ``status.conditions``, with the resourceVersion
        they were computed from (a conflict fails the reconcile, which retries)."""
        await self.client.patch_status(
            API_VERSION,
            MACHINE_KIND,
            machine["metadata"]["name"],
            {
                "metadata": {"resourceVersion": machine["metadata"]["resourceVersion"]},
                "status": {"conditions": set_conditions(conditions_of(machine), action.conditions, now)},
            },
            machine["metadata"].get("namespace"),
        )
