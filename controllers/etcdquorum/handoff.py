"""The leadership hand-off before a member removal (:func:`leadership_handoff`): a pure rule,
table-tested; :class:`~controllers.etcdquorum.removals.MemberRemover` carries it out right before
each removal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from controllers.etcd.membership import MemberState
from controllers.etcdquorum.rules import GuardedMachine, voters_of

MAX_HANDOFF_ATTEMPTS: Final = 3
"""Passes in a row a removal waits for leadership to move off its member before it goes on
without (one election), so that a hand-off etcd keeps refusing never holds a Machine for ever."""


@dataclass(frozen=True, slots=True)
class HandOff:
    """What happens to etcd leadership before a member is removed (:func:`leadership_handoff`)."""

    target: MemberState | None = None
    """Move leadership to this voter first; None: remove the member as it is."""
    wait: str | None = None
    """When set, the removal waits this pass (``LeadershipNotMoved``) and this says why."""
    why: str = ""
    """What was decided, for the log and the ``MemberRemoved`` event."""


def leadership_handoff(
    leaving: MemberState,
    leader: int,
    members: Sequence[MemberState],
    machines: Mapping[str, GuardedMachine],
    *,
    failed_attempts: int = 0,
) -> HandOff:
    """Whether leadership must move off ``leaving`` before it is removed, and to which voter.

    ``leader`` is the leader's member id as an endpoint status read just now reports it (0: no
    member named one). Removing the leading member costs the cluster an election: no leader, so
    no write, for about an election timeout. So when ``leaving`` leads, leadership goes first to
    a voter that answers its health read, whose Machine exists, is not being deleted (it would
    be next to go) and is not marked for remediation (:attr:`GuardedMachine.remediation_marked`:
    its replacement is coming); the oldest such Machine, then by name, because etcd refuses
    membership changes until its leader has been connected to a quorum for 5 seconds, so a
    leader that joined a moment ago would hold up the very removal it was moved for.

    No move is needed, and the removal goes on, when ``leaving`` is a learner (it never leads),
    when another member leads, or when ``leaving`` leads but fails its health read (it cannot
    hand leadership on; an election follows either way). When ``leaving`` leads and no voter
    qualifies, the removal goes on too: removal_decision has already found the voters left
    enough for a quorum, and an election is what a removal without a hand-off costs.

    The removal waits (``LeadershipNotMoved``) only when the leader cannot be told (no member
    reports one: an election is under way) or a hand-off was tried and failed
    (``failed_attempts`` passes in a row); after :data:`MAX_HANDOFF_ATTEMPTS` such passes it goes
    on without, so a hand-off etcd keeps refusing costs an election, never a stuck Machine.

    This follows cluster-api's KubeadmControlPlane, whose pre-terminate hook forwards leadership
    off a deleting Machine's member right before removing it, whoever deleted the Machine; it
    skips the hand-off when no Machine without a deletion timestamp is left, and a failed move
    returns an error, so the removal is retried on its next reconcile. Unlike it, the target is
    the oldest qualifying voter, not the newest, healthy and not marked for remediation, and a
    refusal that persists gives way after a bound.
    """
    if leaving.member.is_learner:
        return HandOff(why="a learner never leads")
    if leader != 0 and leader != leaving.member.id:
        return HandOff(why="it does not lead")
    gave_up = failed_attempts >= MAX_HANDOFF_ATTEMPTS
    if leader == 0:
        if gave_up:
            return HandOff(why=f"no member reported a leader in {failed_attempts} passes: removed as is")
        return HandOff(wait=f"no member reports a leader: member {leaving.label} waits for one")
    if not leaving.healthy or not leaving.endpoint:
        return HandOff(why="it leads but fails its health read: it cannot hand leadership on")
    if gave_up:
        return HandOff(
            why=f"leadership could not be moved off it in {failed_attempts} passes: removed as is "
            "(an election)"
        )
    candidates = sorted(
        (
            m
            for m in voters_of(members)
            if m is not leaving
            and m.healthy
            and m.machine is not None
            and m.machine in machines
            and not machines[m.machine].deleting
            and not machines[m.machine].remediation_marked
        ),
        key=lambda m: (machines[m.machine or ""].created or "~", m.machine or ""),
    )
    if not candidates:
        return HandOff(
            why="it leads and no healthy voter of a Machine that stays is left to lead: removed as is "
            "(an election)"
        )
    target = candidates[0]
    return HandOff(target=target, why=f"leadership handed to {target.label} first")
