"""The etcd-quorum-hook reconciler: one pass per ControlPlane applies the rules of :mod:`.rules`.

A pass reads the ControlPlane and its Machines from the cache and the etcd cluster from etcd
itself, then, in this order:

1. places or repairs the preDrain hook on every Machine that is not being deleted (once one
   control-plane Machine is ``Running``); while the ControlPlane itself is being deleted, only
   until no Machine being deleted carries the hook (its release then removes the hooks:
   :func:`~.rules.hooks_placed_while_deleting`);
2. reads the member list, every member's health and the alarms (nothing below happens when etcd
   cannot be read: a hook is never removed on a guess);
3. removes the hook of each deleting Machine that no member belongs to any more;
4. makes at most **one** membership change, and none within ``member_change_interval`` of the
   previous one: an abandoned learner, else a deleting Machine's member (etcd leadership moved
   off it first when it leads: :class:`~.removals.MemberRemover`), else a
   learner's promotion;
5. writes the ``EtcdClusterHealthy`` condition, each Machine's ``EtcdMemberHealthy`` and
   ``EtcdQuorumHookHolding`` (:mod:`.conditions`), the metrics and, for a wait older than
   ``wait_event_after``, an event.

It keeps nothing that matters in memory: a restarted process recomputes everything from the
Machines and etcd, so a crash between any two steps is finished by the next pass. What memory
holds is only for reporting (since when a wait lasts) and for the grace period of an abandoned
learner, which a restart starts over (later cleanup, never earlier).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any, Final

from pydantic import ValidationError

import controllers.etcdquorum.metrics as etcd_metrics
from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane import KIND as CP_KIND
from api.controlplane import STATE_INACTIVE, ControlPlane, ControlPlaneSpec
from api.machine import API_VERSION as MACHINE_API_VERSION
from api.ownership import ControlPlaneMachines, MachineT, relate
from controllers.common import jittered
from controllers.etcd.client import (
    EtcdClient,
    EtcdClientOptions,
    EtcdError,
    LearnerNotInSync,
    NotEnoughStartedMembers,
    UnhealthyCluster,
)
from controllers.etcd.membership import (
    MachineIdentity,
    client_endpoints,
    read_membership,
)
from controllers.etcd.pool import EtcdClientPool
from controllers.etcd.tls import TLSSecretError
from controllers.etcdquorum.early_removal import early_removal_decision, removes_member_first
from controllers.etcdquorum.hooks import HookKeeper
from controllers.etcdquorum.options import EtcdQuorumOptions, ResolvedEtcdQuorumOptions
from controllers.etcdquorum.removals import MemberRemover
from controllers.etcdquorum.report import Pass, Reporter
from controllers.etcdquorum.rules import (
    WAIT_ETCD_UNREACHABLE,
    WAIT_LEARNER_NOT_IN_SYNC,
    Decision,
    Wait,
    hooks_placed_while_deleting,
    machine_info,
    promotion_decision,
    removal_decision,
)
from controllers.etcdquorum.strays import StrayMembers
from runtime.builder import ControllerBuilder
from runtime.cache import INDEX_NAMESPACE, Cache
from runtime.client import JSON, Client
from runtime.controller import Controller
from runtime.errors import Conflict, NotFound
from runtime.events import EventRecorder
from runtime.handler import EnqueueRequestsFromMapFunc
from runtime.log import get_logger
from runtime.manager import Manager
from runtime.predicate import GenerationChangedPredicate
from runtime.reconcile import Request, Result, TerminalError

CONTROLLER_NAME: Final = "etcd-quorum-hook"

MAX_PROMOTION_BACKOFF: Final = 30.0

_log = get_logger("controllers.etcdquorum")


def _key(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    return f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"


class _EtcdUnreachable(Exception):
    """The member list could not be read; nothing that depends on it may happen this pass."""


class EtcdQuorumReconciler:
    """Reconciles ControlPlanes: hooks, promotions and removals that keep etcd's quorum."""

    def __init__(
        self,
        client: Client,
        cache: Cache,
        options: EtcdQuorumOptions | ResolvedEtcdQuorumOptions | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.options = (
            options
            if isinstance(options, ResolvedEtcdQuorumOptions)
            else (options or EtcdQuorumOptions()).with_defaults()
        )
        self.recorder = recorder
        self._reporter = Reporter(client, self.options, recorder)
        self._hooks = HookKeeper(client, self.options, self._reporter)
        self._promotion_attempts: dict[tuple[str, int], int] = {}
        self._last_change: dict[str, float] = {}
        self._remover = MemberRemover(client, self.options, self._reporter, self._last_change)
        self._strays = StrayMembers(client, cache, self.options, self._reporter, self._remover)
        self.etcd_clients = EtcdClientPool(client, EtcdClientOptions(timeout=self.options.etcd_timeout))

    # ------------------------------------------------------------------------------ entry

    async def reconcile(self, request: Request) -> Result:
        key = f"{request.namespace}/{request.name}"
        try:
            cp = await self.cache.get(CP_API_VERSION, CP_KIND, request.name, request.namespace)
        except NotFound:
            await self._forget(key)
            return Result()
        try:
            spec = ControlPlane.from_dict(cp).spec
        except ValidationError as err:
            raise TerminalError(f"ControlPlane {request} does not parse: {err}") from err
        if spec.etcd is not None and spec.etcd.external:
            # External etcd: nothing of this controller applies, not even the hooks.
            await self._forget(key)
            return Result()
        etcd_metrics.init(key)
        try:
            return await self._reconcile(cp, spec, key)
        except Conflict as err:
            _log.info("conflict, will retry", detail=str(err))
            return Result(requeue=True)

    async def _reconcile(self, cp: JSON, spec: ControlPlaneSpec, key: str) -> Result:
        namespace_machines = await self.cache.list(
            MACHINE_API_VERSION, "Machine", namespace=cp["metadata"].get("namespace") or ""
        )
        # One classification and one identity per Machine serve the guarded Machines, the owned
        # ones and the namespace-wide mapping of members of no Machine.
        related = ControlPlaneMachines.of(
            cp["metadata"].get("uid"), spec.selector.to_dict(), namespace_machines
        )
        machines = {obj["metadata"]["name"]: obj for obj in related.guarded}
        infos = {name: machine_info(obj, self.options.hook, cp_spec=spec) for name, obj in machines.items()}
        identities = {
            obj["metadata"]["name"]: MachineIdentity.from_machine(obj) for obj in namespace_machines
        }
        state = Pass(
            cp=cp,
            key=key,
            spec=spec,
            desired=spec.replicas,
            machines=machines,
            infos=infos,
            identities={name: identities[name] for name in machines},
            namespace_identities=list(identities.values()),
            owned=[m["metadata"]["name"] for m in related.owned],
            members=[],
            owners={},
            states=[],
            alarms=[],
            waits=[],
        )
        # An Inactive ControlPlane (spec.state) observes only: no hook placed or removed on its
        # Machines, no membership change; the condition is still reported.
        inactive = spec.state == STATE_INACTIVE
        deleting = bool(cp["metadata"].get("deletionTimestamp"))
        if not inactive and (not deleting or hooks_placed_while_deleting(infos.values())):
            # A ControlPlane being deleted releases its Machines and takes this hook off them;
            # until then a replacement under way still gets its hook, so that the member removal
            # the release waits for can finish (the rule's docstring).
            await self._hooks.place(state)
        self._hooks.report_escape_hatch(state, members=None)
        state.busy = any(info.deleting and info.has_hook for info in infos.values())
        try:
            etcd = await self._etcd_client(state)
            await self._read_etcd(state, etcd)
            self._hooks.report_escape_hatch(state, members=state.members)
            if not inactive:
                await self._hooks.remove(state)
                await self._change_membership(state, etcd)
        except _EtcdUnreachable as err:
            await self._reporter.unreachable(state, str(err))
            return Result(requeue_after=self.options.busy_period)
        self._remover.report_planned_dip(state)
        await self._reporter.report(state)
        if state.requeue_after is not None:
            return Result(requeue_after=state.requeue_after)
        busy = state.busy or state.waits or any(m.member.is_learner for m in state.states)
        # Jittered: ControlPlanes created together would otherwise poll etcd together for ever.
        resync = jittered(self.options.resync_period)
        return Result(requeue_after=self.options.busy_period if busy else resync)

    # ------------------------------------------------------------------------------ etcd

    async def _etcd_client(self, state: Pass) -> EtcdClient:
        """The ControlPlane's pooled etcd client, pointed at ``spec.etcd.endpoints`` or the
        Machines' endpoints (:func:`~controllers.etcd.membership.client_endpoints`)."""
        etcd_spec = state.spec.etcd
        explicit = etcd_spec.endpoints if etcd_spec is not None else None
        endpoints = client_endpoints(explicit, state.identities.values())
        if not endpoints:
            raise _EtcdUnreachable("no etcd endpoint: no Machine has an etcd client URL or an InternalIP yet")
        secret_ref = etcd_spec.tls_secret_ref.name if etcd_spec and etcd_spec.tls_secret_ref else None
        try:
            return await self.etcd_clients.client_for(
                state.key, state.cp["metadata"].get("namespace") or "", endpoints, secret_ref
            )
        except TLSSecretError as err:
            raise _EtcdUnreachable(str(err)) from err
        except ValueError as err:
            raise _EtcdUnreachable(f"bad etcd endpoint: {err}") from err

    async def _read_etcd(self, state: Pass, etcd: EtcdClient) -> None:
        """Step 2: member list, each member's health, the alarms and the leader (for the Machines'
        ``EtcdMemberHealthy``), read by :func:`~controllers.etcd.membership.read_membership`."""
        try:
            membership = await read_membership(etcd, list(state.identities.values()), leader_skipping=())
        except EtcdError as err:
            raise _EtcdUnreachable(f"etcd member list failed: {err}") from err
        state.members = [m.member for m in membership.members]
        state.owners = {m.member.id: m.machine for m in membership.members}
        state.states = list(membership.members)
        state.leader = membership.leader
        by_id = {m.id: m.name or m.id_hex for m in state.members}
        state.alarms = [
            f"{a.alarm} on {by_id.get(a.member_id, f'{a.member_id:x}')}" for a in membership.alarms
        ]
        if membership.alarm_error is not None:
            state.alarms = [f"alarm list failed: {membership.alarm_error}"]

    async def _change_membership(self, state: Pass, etcd: EtcdClient) -> None:
        """Step 4: at most one membership change, abandoned learners first, then removals, then
        promotions; the decisions are :func:`~.rules.removal_decision` and
        :func:`~.rules.promotion_decision`."""
        # Decisions are made (and their waits reported) every pass; a change is made only once
        # member_change_interval has passed since the previous one.
        since = time.monotonic() - self._last_change.get(state.key, float("-inf"))
        paced = since < self.options.member_change_interval
        if paced:
            state.busy = True
            state.requeue_after = self.options.member_change_interval - since
        if await self._strays.remove_abandoned_learner(state, etcd, act=not paced):
            return
        if await self._strays.remove_member_without_machine(state, etcd, act=not paced):
            return
        removal = removal_decision(state.states, state.infos, state.desired)
        if removal.member is not None:
            state.waits.extend(removal.waits)
            if not paced:
                await self._remover.remove(state, etcd, removal)
            return
        surge_zero = removes_member_first(state.spec)
        early = early_removal_decision(state.states, state.infos, state.desired, surge_zero=surge_zero)
        # For a marked Machine the early rule's wait is the one that says why (the add-then-remove
        # order's HealthyVotersBelowDesired is what the mark exists to skip).
        settled = {w.machine for w in early.waits} | {early.member.machine if early.member else None}
        state.waits.extend(w for w in removal.waits if w.machine not in settled)
        state.waits.extend(early.waits)
        if early.member is not None:
            if not paced:
                await self._remover.remove_early(state, etcd, early)
            return
        promotion = promotion_decision(state.states, state.infos, state.desired)
        state.waits.extend(promotion.waits)
        if promotion.member is not None and not paced:
            await self._promote(state, etcd, promotion)

    async def _promote(self, state: Pass, etcd: EtcdClient, decision: Decision) -> None:
        member = decision.member
        assert member is not None
        attempt_key = (state.key, member.member.id)
        try:
            await etcd.promote(member.member.id)
        except (LearnerNotInSync, NotEnoughStartedMembers, UnhealthyCluster) as err:
            attempts = self._promotion_attempts.get(attempt_key, 0)
            self._promotion_attempts[attempt_key] = attempts + 1
            state.requeue_after = min(
                MAX_PROMOTION_BACKOFF, self.options.busy_period * 2 ** min(attempts, 10) / 2
            )
            state.waits.append(
                Wait(
                    member.machine,
                    WAIT_LEARNER_NOT_IN_SYNC,
                    f"etcd refused to promote {member.label}: {err.message}",
                )
            )
            return
        except EtcdError as err:
            state.waits.append(
                Wait(member.machine, WAIT_ETCD_UNREACHABLE, f"promoting {member.label} failed: {err}")
            )
            return
        self._promotion_attempts.pop(attempt_key, None)
        etcd_metrics.learner_promotions_total.labels(state.key).inc()
        self._last_change[state.key] = time.monotonic()
        message = f"etcd learner {member.label} promoted to voter: {decision.why}"
        self._reporter.event_both(
            state, state.machines.get(member.machine or ""), "Normal", "LearnerPromoted", message
        )
        _log.info(message, machine=member.machine)
        state.requeue_after = self.options.busy_period

    async def _forget(self, key: str) -> None:
        await self.etcd_clients.forget(key)
        etcd_metrics.forget(key)
        self._last_change.pop(key, None)
        self._remover.forget(key)
        self._strays.forget(key)
        for k in [k for k in self._promotion_attempts if k[0] == key]:
            del self._promotion_attempts[k]
        self._reporter.forget(key)


# ---------------------------------------------------------------------------------------------- wiring


def guarded_machines(
    cp: Mapping[str, Any], spec: ControlPlaneSpec, machines: Iterable[MachineT]
) -> list[MachineT]:
    """The Machines whose members the hook controller guards for ``cp``: every Machine it owns,
    whatever its labels say now, and every one its selector matches, deleting ones (their
    members are the ones removed) and other controllers' (their members must stay mapped)
    included (:attr:`api.ownership.ControlPlaneMachines.guarded`)."""
    uid = (cp.get("metadata") or {}).get("uid")
    return ControlPlaneMachines.of(uid, spec.selector.to_dict(), machines).guarded


def controlplanes_for_machine(cache: Cache) -> EnqueueRequestsFromMapFunc:
    """An event handler that maps a Machine to every ControlPlane of its namespace that guards it
    (:func:`guarded_machines`): the one controlling it and each whose selector matches its labels
    (read from the cache: quick, no I/O)."""
    informer = cache.informer_for(CP_API_VERSION, CP_KIND)

    def requests(machine: JSON) -> Iterable[Request]:
        metadata = machine.get("metadata") or {}
        namespace = metadata.get("namespace") or ""
        for cp in informer.by_index(INDEX_NAMESPACE, namespace):
            selector = (cp.get("spec") or {}).get("selector") or {}
            if relate((cp.get("metadata") or {}).get("uid"), selector, machine).guarded:
                yield Request(cp["metadata"]["name"], namespace)

    return EnqueueRequestsFromMapFunc(lambda machine: list(requests(machine)))


def setup_with_manager(manager: Manager, options: EtcdQuorumOptions | None = None) -> Controller:
    """Add the etcd-quorum-hook controller to ``manager`` and return it; ``options`` default to
    ``EtcdQuorumOptions()`` (raises ``ValueError`` saying what to change in a bad one)."""
    resolved = (options or EtcdQuorumOptions()).with_defaults()
    reconciler = EtcdQuorumReconciler(
        manager.client, manager.cache, resolved, manager.get_event_recorder(CONTROLLER_NAME)
    )
    manager.add(reconciler.etcd_clients)
    # The Nodes that may speak for a member of no Machine: the cache's control-plane Nodes,
    # informed from the start so that the first such question does not wait for a sync.
    manager.cache.informer_for("v1", "Node")
    return (
        ControllerBuilder(manager)
        .named(CONTROLLER_NAME)
        .for_(CP_API_VERSION, CP_KIND, GenerationChangedPredicate())
        .watches(MACHINE_API_VERSION, "Machine", controlplanes_for_machine(manager.cache))
        .with_options(resolved.controller)
        .complete(reconciler)
    )
