"""How the etcd-quorum-hook controller removes members that belong to no Machine.

:class:`StrayMembers` carries out two rules: an abandoned learner
(:func:`~.rules.is_abandoned_learner`: added, never started, no Machine, for a grace period) and
a dead member of no Machine and no Node (:func:`~.members_without_machine.orphan_decision`),
confirmed right before its removal by a list of Machines from the API server and a health read.
It keeps, in memory only, since when each such member has been seen: a restart starts the grace
periods over (a later removal, never an earlier one).
"""

from __future__ import annotations

import contextlib
import time

import aiohttp

import controllers.etcdquorum.metrics as etcd_metrics
from api.controlplane import STATE_INACTIVE
from api.machine import API_VERSION as MACHINE_API_VERSION
from controllers.etcd.client import EtcdClient
from controllers.etcd.membership import (
    MachineIdentity,
    MemberState,
    map_members,
    member_node,
    member_owner,
    node_identity,
)
from controllers.etcdquorum.members_without_machine import (
    ClusterGuards,
    MemberWithoutMachine,
    machine_api_worked,
    orphan_decision,
)
from controllers.etcdquorum.options import ResolvedEtcdQuorumOptions
from controllers.etcdquorum.removals import MemberRemover
from controllers.etcdquorum.report import Pass, Reporter
from controllers.etcdquorum.rules import is_abandoned_learner, machine_api_functional, quorum_lost
from runtime.cache import Cache
from runtime.client import Client
from runtime.errors import APIError
from runtime.log import get_logger

_log = get_logger("controllers.etcdquorum")


class StrayMembers:
    """Removes members of no Machine when their rule allows it; see the module docstring."""

    def __init__(
        self,
        client: Client,
        cache: Cache,
        options: ResolvedEtcdQuorumOptions,
        reporter: Reporter,
        remover: MemberRemover,
    ) -> None:
        self.client = client
        self.cache = cache
        self.options = options
        self.reporter = reporter
        self.remover = remover
        self.last_change = remover.last_change
        self._unmapped_since: dict[tuple[str, int], float] = {}
        self._orphan_unhealthy_since: dict[tuple[str, int], float] = {}

    def forget(self, key: str) -> None:
        """Drop what is remembered of ControlPlane ``key``."""
        for table in (self._unmapped_since, self._orphan_unhealthy_since):
            for k in [k for k in table if k[0] == key]:
                del table[k]

    async def remove_abandoned_learner(self, state: Pass, etcd: EtcdClient, *, act: bool) -> bool:
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
            leadership = await self.remover.remove_as_is(state, etcd, member, "abandoned learner")
            if leadership is None:
                return True
            self._unmapped_since.pop((state.key, member.member.id), None)
            message = (
                f"removed etcd learner {member.label}: added {now - first:.0f}s or more ago, never "
                "started, and no Machine names it (a provider stopped between member add and start); "
                f"{leadership}"
            )
            self.reporter.event(state.cp, "Warning", "AbandonedLearnerRemoved", message)
            _log.info(message)
            state.requeue_after = self.options.busy_period
            return True
        return False

    async def remove_member_without_machine(self, state: Pass, etcd: EtcdClient, *, act: bool) -> bool:
        """Remove one dead member of no Machine and no Node when ``act`` and
        :func:`~.members_without_machine.orphan_decision` allows it; True when one was chosen, so
        that nothing else changes in this pass. Every member of no Machine that stays is recorded
        in ``state.kept`` for the report.

        Before the removal, two reads that do not trust this pass (:meth:`_still_dead_and_alone`).
        """
        # One mapping over every Machine of the namespace, not only the guarded ones.
        owners = map_members(state.members, state.namespace_identities)
        orphans = [m for m in state.states if m.member.started and owners[m.member.id] is None]
        seen = {(state.key, m.member.id) for m in orphans if not m.healthy}
        for stale in [k for k in self._orphan_unhealthy_since if k[0] == state.key and k not in seen]:
            del self._orphan_unhealthy_since[stale]
        if not orphans:
            return False
        mapped = {machine for machine in state.owners.values() if machine is not None}
        guards = ClusterGuards(
            machine_api_functional=machine_api_worked(
                machine_api_functional(list(state.infos.values())),
                any(i.deleting and i.node_name for i in state.identities.values()),
            ),
            active=state.spec.state != STATE_INACTIVE,
            owns_member_machine=any(name in mapped for name in state.owned),
        )
        with_member = {machine for machine in owners.values() if machine is not None}
        described = await self._describe(state, orphans, with_member)
        decision = orphan_decision(state.states, described, guards, self.options.member_without_machine_grace)
        state.kept.extend(decision.kept)
        if any(not m.healthy for m in orphans):
            state.busy = True  # the grace period is counted by passes
        member = decision.remove
        if member is None:
            return False
        if not act or not await self._still_dead_and_alone(state, etcd, member):
            return True
        # A dead member does not lead (it answers nothing): no hand-off.
        leadership = await self.remover.remove_as_is(state, etcd, member, "member without Machine")
        if leadership is None:
            return True
        etcd_metrics.members_without_machine_removed_total.labels(state.key).inc()
        self._orphan_unhealthy_since.pop((state.key, member.member.id), None)
        message = f"removed etcd {decision.why}; {leadership}"
        self.reporter.event(state.cp, "Warning", "MemberWithoutMachineRemoved", message)
        _log.info(message)
        state.requeue_after = self.options.busy_period
        return True

    async def _describe(
        self, state: Pass, orphans: list[MemberState], with_member: set[str]
    ) -> list[MemberWithoutMachine]:
        """Each member of no Machine with the Node that speaks for it (the cache's control-plane
        Nodes, less those of the Machines ``with_member``, whose own member is another) and how
        long it has been unhealthy."""
        now = time.monotonic()
        nodes = [node_identity(node) for node in await self.cache.list("v1", "Node")]
        claimed = {
            identity.node_name
            for identity in state.namespace_identities
            if identity.node_name and identity.name in with_member
        }
        return [
            MemberWithoutMachine(
                m,
                node=member_node(m.member, nodes, claimed),
                unhealthy_for=0.0
                if m.healthy
                else now - self._orphan_unhealthy_since.setdefault((state.key, m.member.id), now),
            )
            for m in orphans
        ]

    async def _still_dead_and_alone(self, state: Pass, etcd: EtcdClient, member: MemberState) -> bool:
        """Whether ``member`` still belongs to no Machine as the API server lists them now (a
        Machine the cache has not shown yet must not lose its member) and still fails a health
        read made now (a member that came back stays)."""
        namespace = state.cp["metadata"].get("namespace") or ""
        try:
            listed = await self.client.list(MACHINE_API_VERSION, "Machine", namespace)
            fresh = [MachineIdentity.from_machine(obj) for obj in listed.get("items") or ()]
        except (APIError, aiohttp.ClientError, OSError, TimeoutError) as err:
            _log.info("member without Machine stays: Machines cannot be listed", error=str(err))
            return False
        owner = member_owner(member.member, fresh)
        if owner is not None:
            _log.info(
                "member without Machine stays: the API server shows its Machine",
                member=member.label,
                machine=owner,
            )
            return False
        if member.endpoint is not None:
            with contextlib.suppress(ValueError):
                (answer,) = await etcd.health([member.endpoint])
                if answer.healthy:
                    _log.info("member without Machine stays: it answers again", member=member.label)
                    return False
        return True
