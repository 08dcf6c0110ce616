"""The ControlPlane reconciler: gathers the facts, asks :mod:`controllers.controlplane.rules`, acts.

One reconcile does at most one create or one delete (plus adoption, the owned
MachineHealthCheck and the status), so every step is re-decided from fresh facts::

    manager = await Manager.create(ManagerOptions(kubeconfig="kubeconfig"))
    setup_with_manager(manager, ControlPlaneOptions())
    await manager.run()
"""

from __future__ import annotations

import contextlib
import secrets
import string
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from prometheus_client import Counter, Gauge
from pydantic import ValidationError

from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane import KIND as CP_KIND
from api.controlplane import ControlPlane, ControlPlaneSpec, HealthCheck
from api.machine import (
    API_VERSION as MACHINE_API_VERSION,
)
from api.machine import (
    CONDITION_HEALTH_CHECK_SUCCEEDED,
    CONDITION_OWNER_REMEDIATED,
)
from api.meta import format_time
from api.selector import selector_matches, selector_string
from controllers.controlplane import rules
from controllers.controlplane.etcdfacts import (
    EtcdView,
    etcd_endpoints,
    gather_etcd_facts,
    tls_options,
)
from controllers.controlplane.rules import (
    DELETE_MACHINE_ANNOTATION,
    FAILURE_DOMAIN_LABEL,
    SPEC_HASH_ANNOTATION,
    EtcdFacts,
    MachineInfo,
    PreflightFailure,
    RemediationDecision,
    StatusInputs,
    Step,
)
from controllers.etcd.client import EtcdClient, EtcdClientOptions, EtcdError
from controllers.etcd.tls import TLSSecretError
from runtime.builder import ControllerBuilder
from runtime.cache import Cache
from runtime.client import JSON, Client
from runtime.controller import Controller, ControllerOptions
from runtime.errors import AlreadyExists, Conflict, NotFound
from runtime.event import UpdateEvent
from runtime.events import EventRecorder
from runtime.handler import EnqueueRequestsFromMapFunc
from runtime.log import get_logger
from runtime.manager import Manager
from runtime.metrics import registry
from runtime.predicate import Funcs
from runtime.reconcile import Request, Result, TerminalError

CONTROLLER_NAME: Final = "controlplane"
EXPECTATION_TIMEOUT: Final = 30.0
"""Seconds to wait for the cache to show our own create or delete before deciding anyway."""
FINALIZER: Final = "controlplane.cpo.dev/machines"
"""Held until the ControlPlane's Machines are released and its MachineHealthCheck deleted."""
NODE_MACHINE_ANNOTATION: Final = "machine.openshift.io/machine"
MHC_SUFFIX: Final = "-mhc"

_log = get_logger("controllers.controlplane")

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


@dataclass
class ControlPlaneOptions:
    """How the ControlPlane controller runs. ``None`` means "use the default" named per field."""

    preflight_backoff_initial: float | None = None
    """Seconds before looking again after a failed preflight; doubled per failure in a row.
    Defaults to 2."""
    preflight_backoff_max: float | None = None
    """Longest wait after failed preflights. Defaults to 60."""
    wait_period: float | None = None
    """Seconds between two looks while a step waits on something no watch reports (a learner's
    promotion, a member's removal). Defaults to 5."""
    resync_period: float | None = None
    """Seconds between two looks when nothing is going on (etcd health is not watched).
    Defaults to 60."""
    etcd: EtcdClientOptions | None = None
    """How to reach etcd for the preflight. Defaults to ``EtcdClientOptions(timeout=2)``."""
    controller: ControllerOptions | None = None
    """Options of the controller. Defaults to ``ControllerOptions()``."""

    def with_defaults(self) -> ResolvedControlPlaneOptions:
        """Every default applied and checked; raises ``ValueError`` saying what to change."""
        resolved = ResolvedControlPlaneOptions(
            preflight_backoff_initial=_positive(
                self.preflight_backoff_initial, 2.0, "preflight_backoff_initial"
            ),
            preflight_backoff_max=_positive(self.preflight_backoff_max, 60.0, "preflight_backoff_max"),
            wait_period=_positive(self.wait_period, 5.0, "wait_period"),
            resync_period=_positive(self.resync_period, 60.0, "resync_period"),
            etcd=self.etcd or EtcdClientOptions(timeout=2.0),
            controller=self.controller or ControllerOptions(),
        )
        if resolved.preflight_backoff_max < resolved.preflight_backoff_initial:
            raise ValueError("ControlPlaneOptions.preflight_backoff_max must be ≥ preflight_backoff_initial")
        return resolved


def _positive(value: float | None, default: float, name: str) -> float:
    result = default if value is None else float(value)
    if result <= 0:
        raise ValueError(f"ControlPlaneOptions.{name} must be positive seconds, got {value!r}")
    return result


@dataclass(frozen=True)
class ResolvedControlPlaneOptions:
    """:class:`ControlPlaneOptions` with every default applied."""

    preflight_backoff_initial: float
    preflight_backoff_max: float
    wait_period: float
    resync_period: float
    etcd: EtcdClientOptions
    controller: ControllerOptions


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((obj.get("status") or {}).get("conditions") or ())


def _condition_status(obj: Mapping[str, Any], type_: str) -> str | None:
    for condition in _conditions(obj):
        if condition.get("type") == type_:
            return str(condition.get("status"))
    return None


def marked_for_remediation(machine: Mapping[str, Any]) -> bool:
    """The MachineHealthCheck hand-off: HealthCheckSucceeded=False and OwnerRemediated=False."""
    return (
        _condition_status(machine, CONDITION_HEALTH_CHECK_SUCCEEDED) == "False"
        and _condition_status(machine, CONDITION_OWNER_REMEDIATED) == "False"
    )


def node_ready(node: Mapping[str, Any] | None) -> bool:
    """Whether a Node's Ready condition is True."""
    return _condition_status(node or {}, "Ready") == "True"


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


def desired_mhc(cp: Mapping[str, Any], spec: ControlPlaneSpec, machines: Sequence[MachineInfo] = ()) -> JSON:
    """The MachineHealthCheck ``<name>-mhc`` a ControlPlane with enableAutorepair owns.

    Same selector; unhealthy conditions and nodeStartupTimeout from ``spec.healthCheck``;
    maxUnhealthy :func:`~.rules.health_check_budget` of the owned ``machines``.
    """
    health = spec.health_check or HealthCheck()
    metadata = cp["metadata"]
    return {
        "apiVersion": MACHINE_API_VERSION,
        "kind": "MachineHealthCheck",
        "metadata": {
            "name": metadata["name"] + MHC_SUFFIX,
            "namespace": metadata["namespace"],
            "ownerReferences": [controller_ref(cp)],
        },
        "spec": {
            "selector": spec.selector.to_dict(),
            "unhealthyConditions": [c.to_dict() for c in health.unhealthy_conditions],
            "nodeStartupTimeout": health.node_startup_timeout,
            "maxUnhealthy": rules.health_check_budget(spec.replicas, machines),
        },
    }


@dataclass
class _Facts:
    cp: JSON
    spec: ControlPlaneSpec
    owned: list[JSON]
    infos: list[MachineInfo]
    owned_by_others: list[str]
    unmanaged_nodes: list[str]
    etcd: EtcdView | None
    marked: list[MachineInfo] = field(default_factory=list)
    etcd_options: EtcdClientOptions | None = None
    """How this pass reached etcd (with the TLS context of ``spec.etcd.tlsSecretRef``); every
    later etcd call of the pass must use it, or etcd's client-certificate auth refuses the call."""


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
        self._expected: dict[tuple[str, str], tuple[str, str, float]] = {}

    # ------------------------------------------------------------------------------ entry

    async def reconcile(self, request: Request) -> Result:
        try:
            cp = await self.cache.get(CP_API_VERSION, CP_KIND, request.name, request.namespace)
        except NotFound:
            self._preflight_failures.pop((request.namespace, request.name), None)
            return Result()
        if cp["metadata"].get("deletionTimestamp"):
            return await self._reconcile_delete(cp)
        try:
            spec = ControlPlane.from_dict(cp).spec
        except ValidationError as err:
            raise TerminalError(f"ControlPlane {request} does not parse: {err}") from err
        if FINALIZER not in (cp["metadata"].get("finalizers") or ()):
            cp = await self._add_finalizer(cp)
        facts = await self._gather(cp, spec)
        await self._sync_mhc(cp, spec, facts.infos)
        return await self._act(facts)

    # ------------------------------------------------------------------------------ facts

    async def _gather(self, cp: JSON, spec: ControlPlaneSpec) -> _Facts:
        namespace = cp["metadata"]["namespace"]
        machines = await self.cache.list(MACHINE_API_VERSION, "Machine", namespace=namespace)
        ownership = rules.classify_machines(cp["metadata"]["uid"], spec.selector.to_dict(), machines)
        owned = list(ownership.owned)
        for machine in ownership.adoptable:
            adopted = await self._adopt(cp, machine)
            if adopted is not None:
                owned.append(adopted)
        nodes = await self.cache.list("v1", "Node")
        by_name = {node["metadata"]["name"]: node for node in nodes}
        known = {f"{namespace}/{m['metadata']['name']}" for m in machines}
        unmanaged = sorted(node["metadata"]["name"] for node in nodes if _unmanaged(node, namespace, known))
        deleting = {m["metadata"]["name"] for m in owned if m["metadata"].get("deletionTimestamp")}
        stacked = not (spec.etcd is not None and spec.etcd.external)
        view: EtcdView | None = None
        options: EtcdClientOptions | None = None
        if stacked and owned:
            endpoints = etcd_endpoints(spec.etcd.endpoints if spec.etcd else None, owned)
            secret = spec.etcd.tls_secret_ref.name if spec.etcd and spec.etcd.tls_secret_ref else None
            try:
                options = await tls_options(self.client, namespace, secret, self.options.etcd)
            except TLSSecretError as err:
                view = EtcdView(EtcdFacts(reachable=False, error=str(err)))
            else:
                view = await gather_etcd_facts(endpoints, owned, deleting, options)
        infos = [self._info(spec, machine, by_name, view) for machine in owned]
        return _Facts(
            cp=cp,
            spec=spec,
            owned=owned,
            infos=infos,
            owned_by_others=sorted(m["metadata"]["name"] for m in ownership.owned_by_others),
            unmanaged_nodes=unmanaged,
            etcd=view,
            etcd_options=options,
            marked=[info for info in infos if info.marked_unhealthy and not info.deleting],
        )

    @staticmethod
    def _info(
        spec: ControlPlaneSpec, machine: JSON, nodes: Mapping[str, JSON], view: EtcdView | None
    ) -> MachineInfo:
        metadata = machine["metadata"]
        name = metadata["name"]
        status = machine.get("status") or {}
        node_name = (status.get("nodeRef") or {}).get("name")
        node = nodes.get(node_name) if node_name else None
        created = rules.parse_time(metadata.get("creationTimestamp")) or _now()
        return MachineInfo(
            name=name,
            created=created,
            failure_domain=rules.machine_domain(spec, machine),
            outdated=rules.is_outdated(spec, machine) is not None,
            deleting=bool(metadata.get("deletionTimestamp")),
            delete_annotation=DELETE_MACHINE_ANNOTATION in (metadata.get("annotations") or {}),
            phase=status.get("phase"),
            node_ready=node_ready(node),
            marked_unhealthy=marked_for_remediation(machine),
            etcd_voter=view is None or name in view.voters,
            etcd_healthy=view is None or name in view.healthy,
            etcd_learner=view is not None and name in view.with_member and name not in view.voters,
        )

    # ------------------------------------------------------------------------------ decide and act

    def _cache_caught_up(self, key: tuple[str, str], infos: Sequence[MachineInfo]) -> bool:
        """Whether the cache shows our last create or delete (else we would decide on stale facts
        and, say, create a second Machine before the first is visible)."""
        expected = self._expected.get(key)
        if expected is None:
            return True
        operation, name, deadline = expected
        by_name = {info.name: info for info in infos}
        gone = name not in by_name or by_name[name].deleting
        seen = (name in by_name) if operation == "create" else gone
        if seen or time.monotonic() > deadline:
            del self._expected[key]
            return True
        return False

    def _expect(self, key: tuple[str, str], operation: str, name: str) -> None:
        self._expected[key] = (operation, name, time.monotonic() + EXPECTATION_TIMEOUT)

    async def _act(self, facts: _Facts) -> Result:
        cp, spec = facts.cp, facts.spec
        key = (cp["metadata"]["namespace"], cp["metadata"]["name"])
        if not self._cache_caught_up(key, facts.infos):
            # The Machine watch event that completes the expectation enqueues us again.
            return Result(requeue_after=self.options.wait_period)
        stacked = facts.etcd is not None or not (spec.etcd is not None and spec.etcd.external)
        last = (cp.get("status") or {}).get("lastRemediation") or {}
        remediating = bool(last.get("machine")) and any(i.name == last["machine"] for i in facts.infos)
        decision: RemediationDecision | None = None
        failure: tuple[str, str] | None = None
        last_remediation: JSON | None = None
        result = Result(requeue_after=self.options.resync_period)
        step: Step | None = None
        failures: list[PreflightFailure] = []

        if facts.marked and not spec.paused:
            target = sorted(facts.marked, key=lambda m: (m.created, m.name))[0]
            remediation = spec.remediation
            last_time = rules.parse_time(last.get("timestamp"))
            decision = rules.remediation_decision(
                target=target,
                machines=facts.infos,
                initialized=any((m.get("status") or {}).get("nodeRef") for m in facts.owned),
                stacked_etcd=stacked,
                last_machine=last.get("machine"),
                last_time=last_time,
                last_retry_count=int(last.get("retryCount") or 0),
                max_retry=remediation.max_retry if remediation else None,
                retry_period=remediation.retry_period if remediation else None,
                min_healthy_period=remediation.min_healthy_period if remediation else None,
                now=_now(),
            )
            if decision.allowed:
                if not decision.resumed:
                    last_remediation = {
                        "machine": target.name,
                        "timestamp": format_time(_now()),
                        "retryCount": decision.retry_count,
                    }
                    # Recorded before the delete: a remediation that happened must count for the
                    # retry rules even if this process dies right after the delete.
                    cp = await self._record_remediation(cp, last_remediation)
                    facts.cp = cp
                await self._delete_machine(cp, target.name, "Remediating", decision.message, "remediate")
                self._expect(key, "delete", target.name)
                remediating = True
                result = Result(requeue_after=self.options.wait_period)
            else:
                if decision.needs_human:
                    failure = (decision.reason, decision.message)
                result = Result(requeue_after=decision.requeue_after or self.options.wait_period)

        if decision is None or not decision.allowed:
            step = rules.next_step(
                replicas=spec.replicas,
                strategy=spec.strategy.type,
                max_surge=(spec.strategy.rolling_update.max_surge if spec.strategy.rolling_update else 1),
                domains=rules.domain_names(spec),
                machines=facts.infos,
            )
            if spec.paused:
                result = Result()
            elif step.action in ("create", "delete"):
                hosting = sorted(
                    (facts.etcd.with_member if facts.etcd else set())
                    | {i.name for i in facts.infos if not i.deleting and i.running}
                )
                failures = rules.preflight(
                    facts.infos,
                    facts.etcd.facts if facts.etcd is not None else None,
                    hosting_etcd=hosting,
                    desired=spec.replicas,
                )
                if failures:
                    result = self._preflight_failed(cp, key, failures)
                else:
                    self._preflight_failures.pop(key, None)
                    if step.action == "create":
                        self._expect(key, "create", await self._create_machine(cp, spec, step))
                    else:
                        assert step.machine is not None
                        await self._forward_leadership(cp, facts, step.machine)
                        await self._delete_machine(cp, step.machine, step.reason, step.message, "delete")
                        self._expect(key, "delete", step.machine)
                    result = Result(requeue_after=self.options.wait_period)
            elif step.action == "wait":
                result = Result(requeue_after=self.options.wait_period)

        status = rules.compute_status(
            StatusInputs(
                replicas=spec.replicas,
                selector=selector_string(spec.selector),
                generation=int(cp["metadata"].get("generation") or 0),
                machines=facts.infos,
                step=step,
                preflight_failures=failures,
                paused=spec.paused,
                owned_by_others=facts.owned_by_others,
                unmanaged_nodes=facts.unmanaged_nodes,
                remediation=decision,
                remediating=remediating,
                failure=failure,
            )
        )
        if last_remediation is not None:
            status["lastRemediation"] = last_remediation
        self._observe(cp, spec, facts.infos)
        await self._write_status(cp, status)
        if result.requeue_after == 0 and not spec.paused:
            result = Result(requeue_after=self.options.resync_period)
        return Result(requeue_after=min(result.requeue_after, self.options.resync_period))

    def _preflight_failed(
        self, cp: JSON, key: tuple[str, str], failures: Sequence[PreflightFailure]
    ) -> Result:
        count = self._preflight_failures.get(key, 0)
        self._preflight_failures[key] = count + 1
        label = f"{key[0]}/{key[1]}"
        for failure in failures:
            PREFLIGHT_FAILURES.labels(label, failure.check).inc()
        message = "; ".join(f"{f.check}: {f.message}" for f in failures)
        self._event(cp, "Warning", "PreflightFailed", f"No Machine created or deleted: {message}")
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
        except (Conflict, NotFound):
            return None  # changed meanwhile: the next reconcile looks again
        OPERATIONS.labels(_label(cp), "adopt").inc()
        self._event(cp, "Normal", "MachineAdopted", f"Adopted Machine {metadata['name']}")
        return adopted

    async def _create_machine(self, cp: JSON, spec: ControlPlaneSpec, step: Step) -> str:
        desired = rules.desired_machine(spec, step.domain)
        labels = dict(desired["labels"])
        if step.domain is not None:
            labels[FAILURE_DOMAIN_LABEL] = step.domain
        annotations = {**desired["annotations"], SPEC_HASH_ANNOTATION: rules.template_hash(spec, step.domain)}
        name = machine_name(cp["metadata"]["name"])
        await self.client.create(
            {
                "apiVersion": MACHINE_API_VERSION,
                "kind": "Machine",
                "metadata": {
                    "name": name,
                    "namespace": cp["metadata"]["namespace"],
                    "labels": labels,
                    "annotations": annotations,
                    "ownerReferences": [controller_ref(cp)],
                },
                "spec": {"providerSpec": desired["providerSpec"]},
            }
        )
        OPERATIONS.labels(_label(cp), "create").inc()
        self._event(cp, "Normal", "MachineCreated", f"Created Machine {name}: {step.message}")
        return name

    async def _forward_leadership(self, cp: JSON, facts: _Facts, name: str) -> None:
        """Before deleting the leader's Machine, hand leadership to the oldest other healthy voter.

        Removing the leading member costs the cluster an election (no leader for about an
        election timeout); moving leadership first avoids it. The oldest Machine, not the newest:
        etcd refuses membership changes until the leader has been connected to a quorum for 5 s,
        so a leader that joined a moment ago would hold up the removal of the old member. A
        refusal is reported and the deletion goes on: an election is survivable, a scale-in
        stuck on it is not.
        """
        view = facts.etcd
        if view is None or view.leader != name or name not in view.client_urls:
            return
        candidates = sorted(
            (i for i in facts.infos if i.name != name and not i.deleting and i.name in view.healthy),
            key=lambda i: (i.created, i.name),
        )
        target = next((i for i in candidates if i.name in view.member_ids), None)
        if target is None:
            return
        async with EtcdClient([view.client_urls[name]], facts.etcd_options or self.options.etcd) as etcd:
            try:
                await etcd.move_leader(view.client_urls[name], view.member_ids[target.name])
            except EtcdError as err:
                self._event(cp, "Warning", "LeadershipNotMoved", f"etcd leadership stays on {name}: {err}")
                return
        self._event(cp, "Normal", "LeadershipMoved", f"Moved etcd leadership from {name} to {target.name}")

    async def _delete_machine(self, cp: JSON, name: str, reason: str, message: str, operation: str) -> None:
        try:
            await self.client.delete(MACHINE_API_VERSION, "Machine", name, cp["metadata"]["namespace"])
        except NotFound:
            return
        OPERATIONS.labels(_label(cp), operation).inc()
        self._event(cp, "Normal", "MachineDeleted" if operation == "delete" else "MachineRemediated", message)

    async def _sync_mhc(self, cp: JSON, spec: ControlPlaneSpec, machines: Sequence[MachineInfo]) -> None:
        """Create, update or delete the owned MachineHealthCheck to match enableAutorepair."""
        namespace, name = cp["metadata"]["namespace"], cp["metadata"]["name"] + MHC_SUFFIX
        try:
            current: JSON | None = await self.cache.get(
                MACHINE_API_VERSION, "MachineHealthCheck", name, namespace
            )
        except NotFound:
            current = None
        if current is not None and not any(
            ref.get("uid") == cp["metadata"]["uid"]
            for ref in current["metadata"].get("ownerReferences") or ()
        ):
            return  # someone else's MachineHealthCheck of that name: leave it alone
        if not spec.enable_autorepair or spec.paused:
            if current is not None and not spec.enable_autorepair:
                if not await self._delete_quietly(MACHINE_API_VERSION, "MachineHealthCheck", name, namespace):
                    return  # already gone; the cache has not seen it yet
                self._event(
                    cp, "Normal", "MachineHealthCheckDeleted", f"Deleted {name}: enableAutorepair is false"
                )
            return
        desired = desired_mhc(cp, spec, machines)
        if current is None:
            try:
                await self.client.create(desired)
            except AlreadyExists:
                return  # created by our previous pass; the cache has not seen it yet
            self._event(cp, "Normal", "MachineHealthCheckCreated", f"Created MachineHealthCheck {name}")
            return
        if any(current["spec"].get(k) != v for k, v in desired["spec"].items()):
            # A Conflict means the cache is behind our own last write: its event brings us back.
            with contextlib.suppress(Conflict):
                await self.client.patch(
                    MACHINE_API_VERSION,
                    "MachineHealthCheck",
                    name,
                    {
                        "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                        "spec": desired["spec"],
                    },
                    namespace,
                )

    async def _delete_quietly(self, api_version: str, kind: str, name: str, namespace: str) -> bool:
        """Delete; False when it was already gone."""
        try:
            await self.client.delete(api_version, kind, name, namespace)
        except NotFound:
            return False
        return True

    async def _write_status(self, cp: JSON, status: JSON) -> None:
        """Merge-patch the status subresource when it changed, keeping other writers' conditions."""
        current = cp.get("status") or {}
        status["conditions"] = rules.merge_conditions(
            current.get("conditions") or [], status["conditions"], format_time(_now())
        )
        if "lastRemediation" not in status and current.get("lastRemediation"):
            status["lastRemediation"] = current["lastRemediation"]
        if all(current.get(k) == v for k, v in status.items() if v is not None) and not any(
            current.get(k) is not None for k, v in status.items() if v is None
        ):
            return
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
            return

    async def _record_remediation(self, cp: JSON, last: JSON) -> JSON:
        """Write ``status.lastRemediation`` (only that field: this controller is its one writer)."""
        metadata = cp["metadata"]
        return await self.client.patch_status(
            CP_API_VERSION,
            CP_KIND,
            metadata["name"],
            {"status": {"lastRemediation": last}},
            metadata["namespace"],
        )

    async def _add_finalizer(self, cp: JSON) -> JSON:
        metadata = cp["metadata"]
        finalizers = [*(metadata.get("finalizers") or []), FINALIZER]
        return await self.client.patch(
            CP_API_VERSION,
            CP_KIND,
            metadata["name"],
            {"metadata": {"finalizers": finalizers, "resourceVersion": metadata["resourceVersion"]}},
            metadata["namespace"],
        )

    async def _reconcile_delete(self, cp: JSON) -> Result:
        """Release every owned Machine (drop our ownerReference), delete the MHC, drop the finalizer."""
        metadata = cp["metadata"]
        if FINALIZER not in (metadata.get("finalizers") or ()):
            return Result()
        namespace = metadata["namespace"]
        machines = await self.cache.list(MACHINE_API_VERSION, "Machine", namespace=namespace)
        for machine in machines:
            refs = machine["metadata"].get("ownerReferences") or []
            if not any(ref.get("uid") == metadata["uid"] for ref in refs):
                continue
            kept = [ref for ref in refs if ref.get("uid") != metadata["uid"]]
            await self.client.patch(
                MACHINE_API_VERSION,
                "Machine",
                machine["metadata"]["name"],
                {
                    "metadata": {
                        "ownerReferences": kept or None,
                        "resourceVersion": machine["metadata"]["resourceVersion"],
                    }
                },
                namespace,
            )
            OPERATIONS.labels(_label(cp), "release").inc()
            self._event(cp, "Normal", "MachineReleased", f"Released Machine {machine['metadata']['name']}")
        mhc = metadata["name"] + MHC_SUFFIX
        try:
            current = await self.client.get(MACHINE_API_VERSION, "MachineHealthCheck", mhc, namespace)
            if any(
                ref.get("uid") == metadata["uid"] for ref in current["metadata"].get("ownerReferences") or ()
            ):
                await self._delete_quietly(MACHINE_API_VERSION, "MachineHealthCheck", mhc, namespace)
        except NotFound:
            pass
        await self.client.patch(
            CP_API_VERSION,
            CP_KIND,
            metadata["name"],
            {
                "metadata": {
                    "finalizers": [f for f in metadata.get("finalizers") or [] if f != FINALIZER] or None,
                    "resourceVersion": metadata["resourceVersion"],
                }
            },
            namespace,
        )
        for state in ("desired", "current", "updated", "ready", "available"):
            with contextlib.suppress(KeyError):
                REPLICAS.remove(_label(cp), state)
        return Result()

    # ------------------------------------------------------------------------------ reporting

    def _observe(self, cp: JSON, spec: ControlPlaneSpec, infos: Sequence[MachineInfo]) -> None:
        label = _label(cp)
        REPLICAS.labels(label, "desired").set(spec.replicas)
        REPLICAS.labels(label, "current").set(len(infos))
        REPLICAS.labels(label, "updated").set(sum(1 for i in infos if not i.outdated and not i.deleting))
        REPLICAS.labels(label, "ready").set(sum(1 for i in infos if i.ready))
        REPLICAS.labels(label, "available").set(sum(1 for i in infos if i.available))

    def _event(self, cp: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        _log.info(message, controlplane=_label(cp), reason=reason)
        if self.recorder is not None:
            self.recorder.event(cp, type_, reason, message)


def _unmanaged(node: Mapping[str, Any], namespace: str, known: set[str]) -> bool:
    """A control-plane Node without a Machine: no Machine annotation, or one naming a Machine of
    this namespace that does not exist (a Node of another namespace's Machine is not ours to judge)."""
    ref = ((node.get("metadata") or {}).get("annotations") or {}).get(NODE_MACHINE_ANNOTATION) or ""
    if not ref:
        return True
    return ref.partition("/")[0] == namespace and ref not in known


def _label(cp: Mapping[str, Any]) -> str:
    return f"{cp['metadata'].get('namespace')}/{cp['metadata']['name']}"


# ---------------------------------------------------------------------------------------------- wiring


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
    def controlplanes_for_machine(machine: JSON) -> list[Request]:
        metadata = machine.get("metadata") or {}
        owner = rules.controller_owner(machine)
        namespace = metadata.get("namespace") or ""
        if owner is not None:
            if owner.get("kind") == CP_KIND and str(owner.get("apiVersion", "")).startswith(
                "controlplane.cpo.dev/"
            ):
                return [Request(str(owner["name"]), namespace)]
            return []
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


def setup_with_manager(
    manager: Manager, options: ControlPlaneOptions | ResolvedControlPlaneOptions
) -> Controller:
    """Add the ControlPlane controller to ``manager`` and return it."""
    resolved = options if isinstance(options, ResolvedControlPlaneOptions) else options.with_defaults()
    reconciler = ControlPlaneReconciler(
        manager.client, manager.cache, resolved, manager.get_event_recorder(CONTROLLER_NAME)
    )
    return (
        ControllerBuilder(manager)
        .named(CONTROLLER_NAME)
        .for_(CP_API_VERSION, CP_KIND)
        .owns(MACHINE_API_VERSION, "MachineHealthCheck")
        .watches(MACHINE_API_VERSION, "Machine", EnqueueRequestsFromMapFunc(_map_machine(manager.cache)))
        .watches("v1", "Node", EnqueueRequestsFromMapFunc(_map_node(manager.cache)), _NodeReadinessChanged())
        .with_options(resolved.controller)
        .complete(reconciler)
    )
