"""How the etcd-quorum-hook controller removes a member: leadership first, then the removal, its
event and its metrics.

:class:`MemberRemover` carries out what the rules decided (:func:`~.rules.removal_decision`,
:func:`~.early_removal.early_removal_decision`): it checks that the Machine still carries the
hook as the API server has it, moves etcd leadership off the member when it leads
(:func:`~.handoff.leadership_handoff`), removes it, and records the ``MemberRemoved`` event with
the leader and raft term read right before and right after. A maxSurge-0 early removal is decided
again from reads made right before it, and its planned dip in voters is reported
(``cpo_etcd_planned_voter_dip_seconds``).
"""

from __future__ import annotations

import asyncio
import time

import aiohttp

import controllers.etcdquorum.metrics as etcd_metrics
from api.machine import API_VERSION as MACHINE_API_VERSION
from controllers.etcd.client import EndpointStatus, EtcdClient, EtcdError
from controllers.etcd.membership import MemberState, read_membership
from controllers.etcdquorum.early_removal import early_removal_decision, removes_member_first
from controllers.etcdquorum.handoff import leadership_handoff
from controllers.etcdquorum.options import ResolvedEtcdQuorumOptions
from controllers.etcdquorum.report import Pass, Reporter, removal_leadership
from controllers.etcdquorum.rules import (
    WAIT_ETCD_UNREACHABLE,
    WAIT_LEADERSHIP_NOT_MOVED,
    Decision,
    Wait,
    machine_info,
)
from runtime.client import Client
from runtime.errors import APIError, NotFound
from runtime.log import get_logger

_log = get_logger("controllers.etcdquorum")


class MemberRemover:
    """Removes the members the rules chose; see the module docstring. ``last_change`` (ControlPlane
    key → monotonic time of its last membership change) is shared with the reconciler, which paces
    changes by it."""

    def __init__(
        self,
        client: Client,
        options: ResolvedEtcdQuorumOptions,
        reporter: Reporter,
        last_change: dict[str, float],
    ) -> None:
        self.client = client
        self.options = options
        self.reporter = reporter
        self.last_change = last_change
        self._handoff_failures: dict[tuple[str, int], int] = {}
        self._early_removal_at: dict[str, float] = {}

    def forget(self, key: str) -> None:
        """Drop what is remembered of ControlPlane ``key``."""
        self._early_removal_at.pop(key, None)
        for k in [k for k in self._handoff_failures if k[0] == key]:
            del self._handoff_failures[k]

    async def remove_early(self, state: Pass, etcd: EtcdClient, decision: Decision) -> None:
        """A maxSurge-0 early removal (:func:`~.early_removal.early_removal_decision`), decided again from a
        member list and health reads made right now: the pass's reads may be seconds old, and
        every other voter must be healthy at the moment the cluster gives up one of them."""
        assert decision.member is not None
        try:
            fresh = await read_membership(etcd, list(state.identities.values()))
        except EtcdError as err:
            state.waits.append(
                Wait(decision.member.machine, WAIT_ETCD_UNREACHABLE, f"etcd re-read failed: {err}")
            )
            return
        again = early_removal_decision(
            list(fresh.members), state.infos, state.desired, surge_zero=removes_member_first(state.spec)
        )
        if again.member is None or again.member.member.id != decision.member.member.id:
            state.waits.extend(again.waits)
            state.requeue_after = self.options.busy_period
            return
        if await self.remove(state, etcd, again):
            self._early_removal_at[state.key] = time.monotonic()

    def report_planned_dip(self, state: Pass) -> None:
        """``cpo_etcd_planned_voter_dip_seconds``: since the last early removal, until the voters
        are back to the desired count. Kept in memory: a restarted controller reports no dip (and
        CPOEtcdQuorumAtRisk may then fire for the rest of it, which errs on the side of a page)."""
        since = self._early_removal_at.get(state.key)
        if since is not None and sum(m.voter for m in state.states) >= state.desired:
            del self._early_removal_at[state.key]
            since = None
        dip = 0.0 if since is None else time.monotonic() - since
        etcd_metrics.planned_voter_dip_seconds.labels(state.key).set(dip)

    async def remove(self, state: Pass, etcd: EtcdClient, decision: Decision) -> bool:
        """Remove ``decision``'s member; whether it was removed."""
        member = decision.member
        assert member is not None
        if not await self._still_hooked(state, member.machine):
            # The cache showed the hook, the API server no longer does: a human took it off (the
            # escape hatch) while the provider, which saw that first, may already have stopped
            # the member. Not ours to remove any more; the next pass reports it.
            state.requeue_after = self.options.busy_period
            return False
        return await self._hand_off_then_remove(state, etcd, decision)

    async def _hand_off_then_remove(self, state: Pass, etcd: EtcdClient, decision: Decision) -> bool:
        """Remove ``decision.member``, moving etcd leadership off it first when it leads
        (:func:`~.handoff.leadership_handoff`); whether it was removed.

        The leader and its raft term are read (an endpoint status read) right before the removal,
        and the term again right after it, for the ``MemberRemoved`` event. After a move the
        leader is read again and the member is removed only once another one leads; a move that
        fails, or a leader nobody reports, makes the removal wait this pass
        (``LeadershipNotMoved``) and try again on the next.
        """
        member = decision.member
        assert member is not None
        attempt_key = (state.key, member.member.id)
        before = await self.leader_status(state, etcd)
        handoff = leadership_handoff(
            member,
            before.leader if before is not None else 0,
            state.states,
            state.infos,
            failed_attempts=self._handoff_failures.get(attempt_key, 0),
        )
        if handoff.wait is not None:
            self._handoff_failed(state, member, handoff.wait)
            return False
        if handoff.target is not None:
            assert member.endpoint is not None  # the rule moves only off a leader it can reach
            failure = ""
            try:
                await etcd.move_leader(member.endpoint, handoff.target.member.id)
            except EtcdError as err:
                failure = str(err)
            before = await self.leader_status(state, etcd)
            if not failure and (before is None or before.leader in (0, member.member.id)):
                failure = "it still leads" if before is not None and before.leader else "no leader reported"
            if failure:
                self._handoff_failed(
                    state,
                    member,
                    f"leadership of member {member.label} not moved to {handoff.target.label}: {failure}",
                )
                return False
            _log.info("etcd leadership moved before a removal", member=member.label, to=handoff.target.label)
        try:
            await etcd.remove(member.member.id)
        except EtcdError as err:
            state.waits.append(
                Wait(member.machine, WAIT_ETCD_UNREACHABLE, f"removing member {member.label} failed: {err}")
            )
            return False
        self._handoff_failures.pop(attempt_key, None)
        after = await self.leader_status(state, etcd, removed=member.member.id)
        etcd_metrics.member_removals_total.labels(state.key).inc()
        self.last_change[state.key] = time.monotonic()
        role = "learner" if member.member.is_learner else "voter"
        handed = f"; {handoff.why}" if handoff.target is not None or not member.member.is_learner else ""
        message = (
            f"etcd {role} {member.label} removed: {decision.why}{handed}; "
            f"{removal_leadership(state.states, before, after)}"
        )
        machine = state.machines.get(member.machine or "")
        self.reporter.event_both(state, machine, "Normal", "MemberRemoved", message)
        _log.info(message, machine=member.machine)
        # The hook goes in a later pass, from a member list read after this change.
        state.requeue_after = self.options.busy_period
        return True

    async def remove_as_is(self, state: Pass, etcd: EtcdClient, member: MemberState, what: str) -> str | None:
        """Remove ``member`` without a hand-off (one that leads nothing: a learner, a dead member),
        counted and paced like every change; what its event says of leadership
        (:func:`~.report.removal_leadership`), or None when etcd refused (logged as ``what``)."""
        before = await self.leader_status(state, etcd)
        try:
            await etcd.remove(member.member.id)
        except EtcdError as err:
            _log.info(f"{what} removal failed", member=member.label, error=str(err))
            return None
        after = await self.leader_status(state, etcd, removed=member.member.id)
        etcd_metrics.member_removals_total.labels(state.key).inc()
        self.last_change[state.key] = time.monotonic()
        return removal_leadership(state.states, before, after)

    def _handoff_failed(self, state: Pass, member: MemberState, message: str) -> None:
        """The removal of ``member`` waits this pass for leadership to move (``LeadershipNotMoved``)."""
        key = (state.key, member.member.id)
        self._handoff_failures[key] = self._handoff_failures.get(key, 0) + 1
        state.waits.append(Wait(member.machine, WAIT_LEADERSHIP_NOT_MOVED, message))
        state.requeue_after = self.options.busy_period

    async def leader_status(
        self, state: Pass, etcd: EtcdClient, *, removed: int | None = None
    ) -> EndpointStatus | None:
        """An endpoint status that names a leader, read now from the voters that answered this
        pass's health read (those of Machines that stay first); None when none names one.

        With ``removed`` (a member just removed), that member is not asked, and the answer must
        name another leader: when the removed member led, its followers notice only after an
        election timeout, so they are asked again for up to ``etcd_timeout`` seconds; the last
        answer stands after that.
        """
        asked = sorted(
            (m for m in state.states if m.voter and m.healthy and m.endpoint and m.member.id != removed),
            key=lambda m: (state.infos[m.machine].deleting if m.machine in state.infos else True, m.label),
        )
        deadline = time.monotonic() + self.options.etcd_timeout
        while True:
            last: EndpointStatus | None = None
            for m in asked:
                try:
                    status = await etcd.endpoint_status(m.endpoint or "")
                except (EtcdError, ValueError):
                    continue
                last = status
                if status.leader != 0 and status.leader != removed:
                    return status
            if removed is None or time.monotonic() >= deadline:
                return last if last is not None and last.leader != 0 else None
            await asyncio.sleep(0.1)  # allow-sleep: the pause between reads while an election runs

    async def _still_hooked(self, state: Pass, machine: str | None) -> bool:
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
        return machine_info(fresh, self.options.hook).has_hook
