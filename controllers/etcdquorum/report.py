"""How the etcd-quorum-hook controller reports a pass: the ``EtcdClusterHealthy`` condition, each
Machine's ``EtcdMemberHealthy`` and ``EtcdQuorumHookHolding`` (:mod:`.conditions`), the
``cpo_etcd_*`` gauges, and events (on the Machine and, naming it, on the ControlPlane).

:class:`Pass` is what one pass learnt, shared by the reconciler's steps; :class:`Reporter` turns
it into the conditions, the metrics and, for a wait older than ``wait_event_after``, a Warning
event repeated at that interval. Every condition is written only when it changed.
:func:`removal_leadership` is what a ``MemberRemoved`` event says about etcd leadership.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import controllers.etcdquorum.metrics as etcd_metrics
from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane import CONDITION_ETCD_CLUSTER_HEALTHY, ControlPlaneSpec
from api.controlplane import KIND as CP_KIND
from api.quorum import quorum
from controllers.common import now
from controllers.conditions import changes, condition, conditions_of, set_conditions
from controllers.etcd.client import EndpointStatus, Member
from controllers.etcd.membership import MachineIdentity, MemberState
from controllers.etcdquorum.cluster_health import cluster_health
from controllers.etcdquorum.machine_conditions import write_conditions
from controllers.etcdquorum.members_without_machine import Kept, kept_counts
from controllers.etcdquorum.options import ResolvedEtcdQuorumOptions
from controllers.etcdquorum.rules import (
    WAIT_ETCD_UNREACHABLE,
    WAIT_REASONS,
    GuardedMachine,
    Wait,
)
from runtime.client import JSON, Client
from runtime.events import EventRecorder


@dataclass
class Pass:
    """What one pass learnt, shared by its steps."""

    cp: JSON
    key: str
    spec: ControlPlaneSpec
    """The ControlPlane's spec, parsed once per pass."""
    desired: int
    machines: dict[str, JSON]
    infos: dict[str, GuardedMachine]
    identities: dict[str, MachineIdentity]
    namespace_identities: list[MachineIdentity]
    """Every Machine of the namespace the cache holds (a member of any of them is not an orphan)."""
    owned: list[str]
    """The Machines the ControlPlane owns (by name)."""
    members: list[Member]
    owners: dict[int, str | None]
    states: list[MemberState]
    alarms: list[str]
    waits: list[Wait]
    busy: bool = False
    requeue_after: float | None = None
    leader: int = 0
    """Member id of the etcd leader; 0 when not known."""
    kept: list[Kept] = field(default_factory=list)
    """Members of no Machine that stay this pass, with why
    (:func:`~controllers.etcdquorum.members_without_machine.orphan_decision`)."""


class Reporter:
    """Writes what passes learnt; remembers since when each wait lasts (for its events only)."""

    def __init__(
        self, client: Client, options: ResolvedEtcdQuorumOptions, recorder: EventRecorder | None
    ) -> None:
        self.client = client
        self.options = options
        self.recorder = recorder
        self._wait_since: dict[tuple[str, str | None, str], float] = {}
        self._wait_evented: dict[tuple[str, str | None, str], float] = {}

    async def unreachable(self, state: Pass, why: str) -> None:
        """etcd could not be read: every held Machine waits, and the condition says why."""
        for name, info in state.infos.items():
            if info.deleting and info.has_hook:
                state.waits.append(Wait(name, WAIT_ETCD_UNREACHABLE, f"etcd cannot be read ({why})"))
        self._update_waits(state)
        await write_conditions(self.client, state, unreadable=why)
        await self._write_condition(state, "False", "EtcdUnreachable", why)

    async def report(self, state: Pass) -> None:
        """The metrics, the waits' events and the ``EtcdClusterHealthy`` condition of a pass."""
        voters = [m for m in state.states if not m.member.is_learner]
        healthy = sum(m.healthy for m in voters)
        etcd_metrics.members.labels(state.key, "voter").set(len(voters))
        etcd_metrics.members.labels(state.key, "learner").set(len(state.states) - len(voters))
        etcd_metrics.healthy_voters.labels(state.key).set(healthy)
        etcd_metrics.quorum_margin.labels(state.key).set(healthy - quorum(len(voters)) if voters else 0)
        for reason, count in kept_counts(state.kept).items():
            etcd_metrics.members_without_machine.labels(state.key, reason).set(count)
        self._update_waits(state)
        await write_conditions(self.client, state)
        health = cluster_health(state.states, state.alarms, state.waits, state.kept)
        await self._write_condition(state, health.status, health.reason, health.message)

    def _update_waits(self, state: Pass) -> None:
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
                self.event_both(
                    state, state.machines.get(wait.machine or ""), "Warning", wait.reason, message
                )
        for reason, count in counts.items():
            etcd_metrics.hook_waits.labels(state.key, reason).set(count)

    async def _write_condition(self, state: Pass, status: str, reason: str, message: str) -> None:
        """Patch only ``EtcdClusterHealthy`` into ``status.conditions``, keeping every other
        condition, with the ControlPlane's resourceVersion so a concurrent writer's change is never
        overwritten (a 409 makes the pass run again)."""
        cp = state.cp
        generation = cp["metadata"].get("generation")
        wanted = {
            CONDITION_ETCD_CLUSTER_HEALTHY: condition(
                CONDITION_ETCD_CLUSTER_HEALTHY, status, reason, message, observed_generation=generation
            )
        }
        stored = conditions_of(cp)
        if not changes(stored, wanted):
            return
        conditions = set_conditions(stored, wanted, now())
        metadata = cp["metadata"]
        await self.client.patch_status(
            CP_API_VERSION,
            CP_KIND,
            metadata["name"],
            {
                "metadata": {"resourceVersion": metadata.get("resourceVersion")},
                "status": {"conditions": conditions},
            },
            metadata.get("namespace"),
        )

    def event(self, obj: Mapping[str, Any] | None, type_: str, reason: str, message: str) -> None:
        """An event on ``obj`` when there is a recorder and an object."""
        if self.recorder is not None and obj is not None:
            self.recorder.event(obj, type_, reason, message)

    def event_both(
        self, state: Pass, machine: Mapping[str, Any] | None, type_: str, reason: str, message: str
    ) -> None:
        """The same event on the Machine and, naming the Machine, on the ControlPlane."""
        self.event(machine, type_, reason, message)
        name = (machine or {}).get("metadata", {}).get("name")
        self.event(state.cp, type_, reason, f"Machine {name}: {message}" if name else message)

    def forget(self, key: str) -> None:
        """Drop what is remembered of ControlPlane ``key`` (it is gone)."""
        for waits in (self._wait_since, self._wait_evented):
            for wait_key in [k for k in waits if k[0] == key]:
                del waits[wait_key]


def removal_leadership(
    members: Iterable[MemberState], before: EndpointStatus | None, after: EndpointStatus | None
) -> str:
    """What a ``MemberRemoved`` event says about etcd leadership: ``leader before: <label>, term
    <before> → <after>``, the leader and raft term read right before the removal and the term
    read right after it (``?`` for a read that named no leader). The same term on both sides
    means the removal cost no election."""
    labels = {m.member.id: m.label for m in members}
    leader = "unknown" if before is None else labels.get(before.leader, f"{before.leader:x}")
    term_before = str(before.raft_term) if before is not None else "?"
    term_after = str(after.raft_term) if after is not None else "?"
    return f"leader before: {leader}, term {term_before} → {term_after}"
