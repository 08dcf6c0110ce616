"""The etcd-quorum-hook reconciler: one pass per ControlPlane applies the rules of :mod:`.rules`.

A pass reads the ControlPlane and its Machines from the cache and the etcd cluster from etcd
itself, then, in this order:

1. places or repairs the preDrain hook on every Machine that is not being deleted (once one
   control-plane Machine is ``Running``);
2. reads the member list, every member's health and the alarms (nothing below happens when etcd
   cannot be read: a hook is never removed on a guess);
3. removes the hook of each deleting Machine that no member belongs to any more;
4. makes at most **one** membership change, and none within ``member_change_interval`` of the
   previous one: an abandoned learner, else a deleting Machine's member, else a learner's
   promotion;
5. writes the ``EtcdClusterHealthy`` condition, the metrics and, for a wait older than
   ``wait_event_after``, an event.

It keeps nothing that matters in memory: a restarted process recomputes everything from the
Machines and etcd, so a crash between any two steps is finished by the next pass. What memory
holds is only for reporting (since when a wait lasts) and for the grace period of an abandoned
learner, which a restart starts over (later cleanup, never earlier).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

import aiohttp

import controllers.etcdquorum.metrics as etcd_metrics
from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane import CONDITION_ETCD_CLUSTER_HEALTHY
from api.controlplane import KIND as CP_KIND
from api.machine import API_VERSION as MACHINE_API_VERSION
from api.selector import selector_matches
from controllers.etcd.client import (
    EtcdClient,
    EtcdClientOptions,
    EtcdError,
    LearnerNotInSync,
    Member,
    NotEnoughStartedMembers,
    UnhealthyCluster,
)
from controllers.etcd.membership import (
    MachineIdentity,
    MemberState,
    client_endpoints,
    quorum,
    read_membership,
)
from controllers.etcd.pool import EtcdClientPool
from controllers.etcd.tls import TLSSecretError
from controllers.etcdquorum.rules import (
    HOOK_NAME,
    HOOK_OWNER,
    WAIT_ETCD_UNREACHABLE,
    WAIT_LEARNER_NOT_IN_SYNC,
    WAIT_REASONS,
    Decision,
    MachineInfo,
    Wait,
    cluster_health,
    hook_action,
    hook_removable,
    hooks_with_ours,
    hooks_without_ours,
    is_abandoned_learner,
    machine_api_functional,
    machine_info,
    promotion_decision,
    quorum_lost,
    removal_decision,
)
from runtime.builder import ControllerBuilder
from runtime.cache import INDEX_NAMESPACE, Cache
from runtime.client import JSON, Client
from runtime.controller import Controller, ControllerOptions
from runtime.errors import APIError, Conflict, NotFound
from runtime.events import EventRecorder
from runtime.handler import EnqueueRequestsFromMapFunc
from runtime.log import get_logger
from runtime.manager import Manager
from runtime.predicate import GenerationChangedPredicate
from runtime.reconcile import Request, Result

CONTROLLER_NAME: Final = "etcd-quorum-hook"

DEFAULT_RESYNC_PERIOD: Final = 15.0
DEFAULT_BUSY_PERIOD: Final = 1.0
DEFAULT_ABANDONED_LEARNER_GRACE: Final = 300.0
DEFAULT_WAIT_EVENT_AFTER: Final = 60.0
DEFAULT_ETCD_TIMEOUT: Final = 3.0
DEFAULT_MEMBER_CHANGE_INTERVAL: Final = 2.0
MAX_PROMOTION_BACKOFF: Final = 30.0

_log = get_logger("controllers.etcdquorum")


@dataclass(frozen=True)
class EtcdQuorumOptions:
    """How the controller runs. ``None`` means "use the default" named per field."""

    resync_period: float | None = None
    """Seconds between two looks at a quiet cluster (health, metrics, condition). Defaults to 15."""
    busy_period: float | None = None
    """Seconds between two passes while something is in progress (a learner, a deleting Machine,
    a wait): etcd membership is not watchable through the API server, so it is polled. Defaults to 1."""
    abandoned_learner_grace: float | None = None
    """Seconds a never-started learner that belongs to no Machine is left alone before it is
    removed (a provider adds a member and then starts it). Defaults to 300."""
    wait_event_after: float | None = None
    """A change waiting longer than this many seconds gets a Warning event on the Machine and the
    ControlPlane, repeated at that interval. Defaults to 60."""
    etcd_timeout: float | None = None
    """Seconds one etcd request may take. Defaults to 3."""
    member_change_interval: float | None = None
    """Seconds between two membership changes of one cluster (promotion or removal): each change
    reaches every member and shows in their health before the next one is decided, and each
    step shows in monitoring. Defaults to 2."""
    controller: ControllerOptions | None = None
    """Options of the controller (workers, rate limiter). Defaults to ``ControllerOptions()``."""

    def with_defaults(self) -> ResolvedEtcdQuorumOptions:
        """Every default applied and checked; raises ``ValueError`` saying what to change."""

        def positive(value: float | None, default: float, name: str, *, zero: bool = False) -> float:
            result = default if value is None else float(value)
            if result < 0 or (result == 0 and not zero):
                raise ValueError(f"EtcdQuorumOptions.{name} must be positive seconds, got {value!r}")
            return result

        return ResolvedEtcdQuorumOptions(
            resync_period=positive(self.resync_period, DEFAULT_RESYNC_PERIOD, "resync_period"),
            busy_period=positive(self.busy_period, DEFAULT_BUSY_PERIOD, "busy_period"),
            abandoned_learner_grace=positive(
                self.abandoned_learner_grace,
                DEFAULT_ABANDONED_LEARNER_GRACE,
                "abandoned_learner_grace",
                zero=True,
            ),
            wait_event_after=positive(
                self.wait_event_after, DEFAULT_WAIT_EVENT_AFTER, "wait_event_after", zero=True
            ),
            etcd_timeout=positive(self.etcd_timeout, DEFAULT_ETCD_TIMEOUT, "etcd_timeout"),
            member_change_interval=positive(
                self.member_change_interval,
                DEFAULT_MEMBER_CHANGE_INTERVAL,
                "member_change_interval",
                zero=True,
            ),
            controller=self.controller or ControllerOptions(),
        )


@dataclass(frozen=True)
class ResolvedEtcdQuorumOptions:
    """:class:`EtcdQuorumOptions` with every default applied."""

    resync_period: float
    busy_period: float
    abandoned_learner_grace: float
    wait_event_after: float
    etcd_timeout: float
    member_change_interval: float
    controller: ControllerOptions


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _key(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    return f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"


class _EtcdUnreachable(Exception):
    """The member list could not be read; nothing that depends on it may happen this pass."""


@dataclass
class _Pass:
    """What one pass learnt, shared by its steps."""

    cp: JSON
    key: str
    desired: int
    machines: dict[str, JSON]
    infos: dict[str, MachineInfo]
    identities: dict[str, MachineIdentity]
    members: list[Member]
    owners: dict[int, str | None]
    states: list[MemberState]
    alarms: list[str]
    waits: list[Wait]
    busy: bool = False
    requeue_after: float | None = None


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
        self._unmapped_since: dict[tuple[str, int], float] = {}
        self._wait_since: dict[tuple[str, str | None, str], float] = {}
        self._wait_evented: dict[tuple[str, str | None, str], float] = {}
        self._promotion_attempts: dict[tuple[str, int], int] = {}
        self._last_change: dict[str, float] = {}
        self._hooked: set[str] = set()
        self._escape_reported: set[str] = set()
        self.etcd_clients = EtcdClientPool(client, EtcdClientOptions(timeout=self.options.etcd_timeout))

    # ------------------------------------------------------------------------------ entry

    async def reconcile(self, request: Request) -> Result:
        key = f"{request.namespace}/{request.name}"
        try:
            cp = await self.cache.get(CP_API_VERSION, CP_KIND, request.name, request.namespace)
        except NotFound:
            await self._forget(key)
            return Result()
        spec = cp.get("spec") or {}
        if (spec.get("etcd") or {}).get("external"):
            # External etcd: nothing of this controller applies, not even the hooks.
            await self._forget(key)
            return Result()
        etcd_metrics.init(key)
        try:
            return await self._reconcile(cp, key)
        except Conflict as err:
            _log.info("conflict, will retry", detail=str(err))
            return Result(requeue=True)

    async def _reconcile(self, cp: JSON, key: str) -> Result:
        spec = cp.get("spec") or {}
        machines = await self._machines(cp)
        infos = {name: machine_info(obj) for name, obj in machines.items()}
        state = _Pass(
            cp=cp,
            key=key,
            desired=int(spec.get("replicas") or 1),
            machines=machines,
            infos=infos,
            identities={name: MachineIdentity.from_machine(obj) for name, obj in machines.items()},
            members=[],
            owners={},
            states=[],
            alarms=[],
            waits=[],
        )
        await self._place_hooks(state)
        self._report_escape_hatch(state, members=None)
        state.busy = any(info.deleting and info.has_hook for info in infos.values())
        try:
            etcd = await self._etcd_client(state)
            await self._read_etcd(state, etcd)
            self._report_escape_hatch(state, members=state.members)
            await self._remove_hooks(state)
            await self._change_membership(state, etcd)
        except _EtcdUnreachable as err:
            await self._report_unreachable(state, str(err))
            return Result(requeue_after=self.options.busy_period)
        await self._report(state)
        if state.requeue_after is not None:
            return Result(requeue_after=state.requeue_after)
        busy = state.busy or state.waits or any(m.member.is_learner for m in state.states)
        return Result(requeue_after=self.options.busy_period if busy else self.options.resync_period)

    async def _machines(self, cp: JSON) -> dict[str, JSON]:
        """The control-plane Machines of ``cp``: its namespace, matched by its selector."""
        namespace = cp["metadata"].get("namespace") or ""
        selector = (cp.get("spec") or {}).get("selector") or {}
        found = await self.cache.list(MACHINE_API_VERSION, "Machine", namespace=namespace)
        return {
            obj["metadata"]["name"]: obj
            for obj in found
            if selector_matches(selector, (obj.get("metadata") or {}).get("labels"))
        }

    # ------------------------------------------------------------------------------ hooks

    async def _place_hooks(self, state: _Pass) -> None:
        """Step 1: the hook on every Machine not being deleted, once the Machine API works."""
        functional = machine_api_functional(list(state.infos.values()))
        for name, info in sorted(state.infos.items()):
            obj = state.machines[name]
            if info.has_hook:
                self._hooked.add(obj["metadata"].get("uid") or name)
            action = hook_action(info, functional)
            if action is None:
                continue
            hooks = ((obj.get("spec") or {}).get("lifecycleHooks") or {}).get("preDrain") or []
            patched = await self._patch_hooks(obj, hooks_with_ours(hooks))
            state.machines[name] = patched
            state.infos[name] = replace(info, hook_owner=HOOK_OWNER)
            self._hooked.add(obj["metadata"].get("uid") or name)
            if action == "add":
                message = f"preDrain hook {HOOK_NAME} added: the Machine's etcd member is protected"
                self._event_both(state, patched, "Normal", "HookAdded", message)
            else:
                message = (
                    f"preDrain hook {HOOK_NAME} had owner {info.hook_owner!r}; set back to {HOOK_OWNER!r}"
                )
                self._event_both(state, patched, "Warning", "HookRepaired", message)

    async def _patch_hooks(self, obj: JSON, hooks: list[dict[str, Any]]) -> JSON:
        """A merge patch of ``spec.lifecycleHooks.preDrain`` that fails (409) if the Machine changed
        since it was read: the list is written whole, so someone else's hook added meanwhile
        would otherwise be lost."""
        metadata = obj["metadata"]
        return await self.client.patch(
            MACHINE_API_VERSION,
            "Machine",
            metadata["name"],
            {
                "metadata": {"resourceVersion": metadata.get("resourceVersion")},
                "spec": {"lifecycleHooks": {"preDrain": hooks or None}},
            },
            metadata.get("namespace"),
        )

    async def _remove_hooks(self, state: _Pass) -> None:
        """Step 3: a deleting Machine's hook goes once no member belongs to it (fresh member list)."""
        for name, info in sorted(state.infos.items()):
            if not hook_removable(info, state.owners):
                continue
            obj = state.machines[name]
            hooks = ((obj.get("spec") or {}).get("lifecycleHooks") or {}).get("preDrain") or []
            patched = await self._patch_hooks(obj, hooks_without_ours(hooks))
            state.machines[name] = patched
            state.infos[name] = replace(info, hook_owner=None)
            self._escape_reported.add(obj["metadata"].get("uid") or name)  # our own removal
            self._event_both(
                state,
                patched,
                "Normal",
                "HookRemoved",
                f"preDrain hook {HOOK_NAME} removed: no etcd member belongs to this Machine any more",
            )

    def _report_escape_hatch(self, state: _Pass, members: Sequence[Member] | None) -> None:
        """A deleting Machine without the hook that had it, or whose member is still listed: someone
        removed the hook on purpose. Never re-added; said once per Machine in an event."""
        for name, info in sorted(state.infos.items()):
            obj = state.machines[name]
            uid = obj["metadata"].get("uid") or name
            if not info.deleting or info.has_hook or uid in self._escape_reported:
                continue
            listed = [m for m in members or () if state.owners.get(m.id) == name]
            if uid not in self._hooked and not listed:
                continue
            self._escape_reported.add(uid)
            kept = ", ".join(m.name or m.id_hex for m in listed)
            message = (
                f"preDrain hook {HOOK_NAME} was removed from this deleting Machine by someone else: "
                "it is not re-added and the Machine is drained without waiting for etcd"
                + (
                    f"; its member {kept} stays in the cluster until removed by hand (etcdctl member remove)"
                    if kept
                    else ""
                )
            )
            self._event_both(state, obj, "Warning", "HookRemovedByOthers", message)

    # ------------------------------------------------------------------------------ etcd

    async def _etcd_client(self, state: _Pass) -> EtcdClient:
        """The ControlPlane's pooled etcd client, pointed at ``spec.etcd.endpoints`` or the
        Machines' endpoints (:func:`~controllers.etcd.membership.client_endpoints`)."""
        etcd_spec = (state.cp.get("spec") or {}).get("etcd") or {}
        endpoints = client_endpoints(etcd_spec.get("endpoints"), state.identities.values())
        if not endpoints:
            raise _EtcdUnreachable("no etcd endpoint: no Machine has an etcd client URL or an InternalIP yet")
        secret_ref = (etcd_spec.get("tlsSecretRef") or {}).get("name")
        try:
            return await self.etcd_clients.client_for(
                state.key, state.cp["metadata"].get("namespace") or "", endpoints, secret_ref
            )
        except TLSSecretError as err:
            raise _EtcdUnreachable(str(err)) from err
        except ValueError as err:
            raise _EtcdUnreachable(f"bad etcd endpoint: {err}") from err

    async def _read_etcd(self, state: _Pass, etcd: EtcdClient) -> None:
        """Step 2: member list, each member's health and the alarms, read by
        :func:`~controllers.etcd.membership.read_membership`."""
        try:
            membership = await read_membership(etcd, list(state.identities.values()))
        except EtcdError as err:
            raise _EtcdUnreachable(f"etcd member list failed: {err}") from err
        state.members = [m.member for m in membership.members]
        state.owners = {m.member.id: m.machine for m in membership.members}
        state.states = list(membership.members)
        by_id = {m.id: m.name or m.id_hex for m in state.members}
        state.alarms = [
            f"{a.alarm} on {by_id.get(a.member_id, f'{a.member_id:x}')}" for a in membership.alarms
        ]
        if membership.alarm_error is not None:
            state.alarms = [f"alarm list failed: {membership.alarm_error}"]

    async def _change_membership(self, state: _Pass, etcd: EtcdClient) -> None:
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
        if await self._remove_abandoned_learner(state, etcd, act=not paced):
            return
        removal = removal_decision(state.states, state.infos, state.desired)
        state.waits.extend(removal.waits)
        if removal.member is not None:
            if not paced:
                await self._remove(state, etcd, removal)
            return
        promotion = promotion_decision(state.states, state.infos, state.desired)
        state.waits.extend(promotion.waits)
        if promotion.member is not None and not paced:
            await self._promote(state, etcd, promotion)

    async def _remove_abandoned_learner(self, state: _Pass, etcd: EtcdClient, *, act: bool) -> bool:
        """Remove one abandoned learner (:func:`~.rules.is_abandoned_learner`) when ``act``; True
        when one was found, so that nothing else changes in this pass."""
        now = time.monotonic()
        listed = {(state.key, m.member.id) for m in state.states}
        for stale in [k for k in self._unmapped_since if k[0] == state.key and k not in listed]:
            del self._unmapped_since[stale]
        if quorum_lost(state.states):
            return False
        for member in state.states:
            if not (member.member.is_learner and not member.member.started and member.machine is None):
                self._unmapped_since.pop((state.key, member.member.id), None)
                continue
            first = self._unmapped_since.setdefault((state.key, member.member.id), now)
            state.busy = True
            if not is_abandoned_learner(member, first, now, self.options.abandoned_learner_grace):
                continue
            if not act:
                return True
            try:
                await etcd.remove(member.member.id)
            except EtcdError as err:
                _log.info("abandoned learner removal failed", member=member.label, error=str(err))
                return True
            etcd_metrics.member_removals_total.labels(state.key).inc()
            self._last_change[state.key] = time.monotonic()
            self._unmapped_since.pop((state.key, member.member.id), None)
            message = (
                f"removed etcd learner {member.label}: added {now - first:.0f}s or more ago, never "
                "started, and no Machine names it (a provider stopped between member add and start)"
            )
            self._event(state.cp, "Warning", "AbandonedLearnerRemoved", message)
            _log.info(message)
            state.requeue_after = self.options.busy_period
            return True
        return False

    async def _remove(self, state: _Pass, etcd: EtcdClient, decision: Decision) -> None:
        member = decision.member
        assert member is not None
        if not await self._still_hooked(state, member.machine):
            # The cache showed the hook, the API server no longer does: a human took it off (the
            # escape hatch) while the provider, which saw that first, may already have stopped
            # the member. Not ours to remove any more; the next pass reports it.
            state.requeue_after = self.options.busy_period
            return
        try:
            await etcd.remove(member.member.id)
        except EtcdError as err:
            state.waits.append(
                Wait(member.machine, WAIT_ETCD_UNREACHABLE, f"removing member {member.label} failed: {err}")
            )
            return
        etcd_metrics.member_removals_total.labels(state.key).inc()
        self._last_change[state.key] = time.monotonic()
        role = "learner" if member.member.is_learner else "voter"
        message = f"etcd {role} {member.label} removed: {decision.why}"
        machine = state.machines.get(member.machine or "")
        self._event_both(state, machine, "Normal", "MemberRemoved", message)
        _log.info(message, machine=member.machine)
        # The hook goes in a later pass, from a member list read after this change.
        state.requeue_after = self.options.busy_period

    async def _still_hooked(self, state: _Pass, machine: str | None) -> bool:
        """Whether Machine ``machine`` carries the hook as the API server has it now (not the cache).

        When the API server cannot be asked, the cache's answer stands: the removal is gated on
        etcd's state, and a controller cut off from the API server must still be able to finish
        a replacement it has started (the hook then waits for the API server to come back).
        """
        if machine is None:
            return False
        try:
            fresh = await self.client.get(
                MACHINE_API_VERSION, "Machine", machine, state.cp["metadata"].get("namespace")
            )
        except NotFound:
            return False
        except (APIError, aiohttp.ClientError, OSError, TimeoutError):
            return True
        return machine_info(fresh).has_hook

    async def _promote(self, state: _Pass, etcd: EtcdClient, decision: Decision) -> None:
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
        self._event_both(
            state, state.machines.get(member.machine or ""), "Normal", "LearnerPromoted", message
        )
        _log.info(message, machine=member.machine)
        state.requeue_after = self.options.busy_period

    # ------------------------------------------------------------------------------ reporting

    async def _report_unreachable(self, state: _Pass, why: str) -> None:
        for name, info in state.infos.items():
            if info.deleting and info.has_hook:
                state.waits.append(Wait(name, WAIT_ETCD_UNREACHABLE, f"etcd cannot be read ({why})"))
        self._update_waits(state)
        await self._write_condition(state, "False", "EtcdUnreachable", why)

    async def _report(self, state: _Pass) -> None:
        voters = [m for m in state.states if not m.member.is_learner]
        healthy = sum(m.healthy for m in voters)
        etcd_metrics.members.labels(state.key, "voter").set(len(voters))
        etcd_metrics.members.labels(state.key, "learner").set(len(state.states) - len(voters))
        etcd_metrics.healthy_voters.labels(state.key).set(healthy)
        etcd_metrics.quorum_margin.labels(state.key).set(healthy - quorum(len(voters)) if voters else 0)
        self._update_waits(state)
        health = cluster_health(state.states, state.alarms, state.waits)
        await self._write_condition(state, health.status, health.reason, health.message)

    def _update_waits(self, state: _Pass) -> None:
        """The hook_waits gauge, and a Warning event for every wait older than ``wait_event_after``."""
        now = time.monotonic()
        current = {(state.key, w.machine, w.reason): w for w in state.waits}
        for stale in [k for k in self._wait_since if k[0] == state.key and k not in current]:
            self._wait_since.pop(stale, None)
            self._wait_evented.pop(stale, None)
        counts = dict.fromkeys(WAIT_REASONS, 0)
        for key, wait in current.items():
            counts[wait.reason] = counts.get(wait.reason, 0) + 1
            since = self._wait_since.setdefault(key, now)
            last = self._wait_evented.get(key)
            after = self.options.wait_event_after
            if now - since >= after and (last is None or now - last >= max(after, 1.0)):
                self._wait_evented[key] = now
                message = f"waiting {now - since:.0f}s ({wait.reason}): {wait.message}"
                self._event_both(
                    state, state.machines.get(wait.machine or ""), "Warning", wait.reason, message
                )
        for reason, count in counts.items():
            etcd_metrics.hook_waits.labels(state.key, reason).set(count)

    async def _write_condition(self, state: _Pass, status: str, reason: str, message: str) -> None:
        """Patch only ``EtcdClusterHealthy`` into ``status.conditions``, keeping every other
        condition, with the ControlPlane's resourceVersion so a concurrent writer's change is never
        overwritten (a 409 makes the pass run again)."""
        cp = state.cp
        conditions = [dict(c) for c in (cp.get("status") or {}).get("conditions") or ()]
        previous = next((c for c in conditions if c.get("type") == CONDITION_ETCD_CLUSTER_HEALTHY), None)
        generation = cp["metadata"].get("generation")
        if (
            previous is not None
            and previous.get("status") == status
            and previous.get("reason") == reason
            and previous.get("message") == message
            and previous.get("observedGeneration") == generation
        ):
            return
        transition = (
            previous.get("lastTransitionTime") if previous and previous.get("status") == status else None
        ) or _now()
        condition: JSON = {
            "type": CONDITION_ETCD_CLUSTER_HEALTHY,
            "status": status,
            "reason": reason,
            "message": message[:32768],
            "lastTransitionTime": transition,
        }
        if generation is not None:
            condition["observedGeneration"] = generation
        others = [c for c in conditions if c.get("type") != CONDITION_ETCD_CLUSTER_HEALTHY]
        metadata = cp["metadata"]
        await self.client.patch_status(
            CP_API_VERSION,
            CP_KIND,
            metadata["name"],
            {
                "metadata": {"resourceVersion": metadata.get("resourceVersion")},
                "status": {"conditions": [*others, condition]},
            },
            metadata.get("namespace"),
        )

    def _event(self, obj: Mapping[str, Any] | None, type_: str, reason: str, message: str) -> None:
        if self.recorder is not None and obj is not None:
            self.recorder.event(obj, type_, reason, message)

    def _event_both(
        self, state: _Pass, machine: Mapping[str, Any] | None, type_: str, reason: str, message: str
    ) -> None:
        """The same event on the Machine and, naming the Machine, on the ControlPlane."""
        self._event(machine, type_, reason, message)
        name = (machine or {}).get("metadata", {}).get("name")
        self._event(state.cp, type_, reason, f"Machine {name}: {message}" if name else message)

    async def _forget(self, key: str) -> None:
        await self.etcd_clients.forget(key)
        etcd_metrics.forget(key)
        self._last_change.pop(key, None)
        for table in (self._unmapped_since, self._promotion_attempts):
            for k in [k for k in table if k[0] == key]:
                del table[k]
        for waits in (self._wait_since, self._wait_evented):
            for wait_key in [k for k in waits if k[0] == key]:
                del waits[wait_key]


# ---------------------------------------------------------------------------------------------- wiring


def controlplanes_for_machine(cache: Cache) -> EnqueueRequestsFromMapFunc:
    """An event handler that maps a Machine to every ControlPlane of its namespace whose selector
    matches the Machine's labels (read from the cache: quick, no I/O)."""
    informer = cache.informer_for(CP_API_VERSION, CP_KIND)

    def requests(machine: JSON) -> Iterable[Request]:
        metadata = machine.get("metadata") or {}
        namespace = metadata.get("namespace") or ""
        for cp in informer.by_index(INDEX_NAMESPACE, namespace):
            selector = (cp.get("spec") or {}).get("selector") or {}
            if selector_matches(selector, metadata.get("labels")):
                yield Request(cp["metadata"]["name"], namespace)

    return EnqueueRequestsFromMapFunc(lambda machine: list(requests(machine)))


def setup_with_manager(manager: Manager, options: object = None) -> Controller:
    """Add the etcd-quorum-hook controller to ``manager`` and return it.

    ``options`` is an :class:`EtcdQuorumOptions` (or resolved), or anything else (such as the
    operator's own options), which means the defaults.
    """
    resolved = (
        options.with_defaults()
        if isinstance(options, EtcdQuorumOptions)
        else options
        if isinstance(options, ResolvedEtcdQuorumOptions)
        else EtcdQuorumOptions().with_defaults()
    )
    reconciler = EtcdQuorumReconciler(
        manager.client, manager.cache, resolved, manager.get_event_recorder(CONTROLLER_NAME)
    )
    manager.add(reconciler.etcd_clients)
    return (
        ControllerBuilder(manager)
        .named(CONTROLLER_NAME)
        .for_(CP_API_VERSION, CP_KIND, GenerationChangedPredicate())
        .watches(MACHINE_API_VERSION, "Machine", controlplanes_for_machine(manager.cache))
        .with_options(resolved.controller)
        .complete(reconciler)
    )
