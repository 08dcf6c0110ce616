"""What the etcd-quorum-hook controller says on each Machine: its etcd member and its hook.

This controller reads the member list every pass and knows which member each Machine has
(:mod:`controllers.etcd.membership`), and it decides every hook, so it writes both:

``EtcdMemberHealthy`` (:func:`member_condition`)
    ========  ====================  ==========================================================
    status    reason                when
    ========  ====================  ==========================================================
    True      ``Leader``            a voter that answers a health read and leads the cluster
    True      ``Voter``             a voter that answers a health read
    True      ``Learner``           a started learner that answers a health read
    False     ``VoterUnhealthy``    a voter that does not answer (the message says why)
    False     ``LearnerUnhealthy``  a learner not started, or that does not answer
    False     ``MemberNotFound``    no listed member belongs to the Machine
    Unknown   ``InspectionFailed``  etcd could not be read (the message says why)
    ========  ====================  ==========================================================

``EtcdQuorumHookHolding`` (:func:`hook_condition`): True while the hook holds a deleting
Machine's drain, with the check that holds it as the reason (one of
:data:`~controllers.etcdquorum.rules.WAIT_REASONS`, e.g. ``HealthyVotersBelowDesired``: the
replacement is not yet a voter, or ``QuorumAfterRemoval``), or ``RemovingMember`` when nothing
holds it any more and the member goes; False otherwise: ``Guarding`` (not being deleted, the hook
is in place), ``HookNotPlaced`` (no control-plane Machine Running yet), ``Released`` (deleting, no
member, no hook) or ``HookRemovedByOthers`` (deleting, its member still listed, the hook gone).

Messages hold no counter or time that moves by itself, so a settled cluster gives the same
conditions every pass and :func:`write_conditions` writes nothing. An Inactive ControlPlane and
one being deleted get none written: the first writes nothing on Machines, the second releases
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from api.controlplane import STATE_INACTIVE
from api.machine import (
    CONDITION_ETCD_MEMBER_HEALTHY,
    CONDITION_ETCD_QUORUM_HOOK_HOLDING,
    REASON_ETCD_INSPECTION_FAILED,
    REASON_ETCD_LEADER,
    REASON_ETCD_LEARNER,
    REASON_ETCD_LEARNER_UNHEALTHY,
    REASON_ETCD_MEMBER_NOT_FOUND,
    REASON_ETCD_VOTER,
    REASON_ETCD_VOTER_UNHEALTHY,
    REASON_HOOK_GUARDING,
    REASON_HOOK_NOT_PLACED,
    REASON_HOOK_RELEASED,
    REASON_HOOK_REMOVED_BY_OTHERS,
    REASON_HOOK_REMOVING_MEMBER,
    SEVERITY_WARNING,
)
from controllers.conditions import Wanted, condition, write_machine_conditions
from controllers.etcd.membership import MemberState
from controllers.etcdquorum.rules import GuardedMachine, Wait, machine_api_functional
from runtime.client import JSON, Client

if TYPE_CHECKING:  # the reporter, which imports this module, defines the pass
    from controllers.etcdquorum.report import Pass


def _member_of(members: Sequence[MemberState]) -> MemberState | None:
    """The member that speaks for a Machine: a voter before a learner, then by label (a Machine
    normally has one)."""
    return min(members, key=lambda m: (not m.voter, m.label), default=None)


def member_condition(members: Sequence[MemberState], leader: int) -> JSON:
    """``EtcdMemberHealthy`` of a Machine whose members (from a member list just read) are
    ``members``; ``leader`` is the leading member's id (0 when not known)."""
    member = _member_of(members)
    if member is None:
        return condition(
            CONDITION_ETCD_MEMBER_HEALTHY,
            "False",
            REASON_ETCD_MEMBER_NOT_FOUND,
            "no member of the etcd cluster belongs to this Machine",
            SEVERITY_WARNING,
        )
    others = [m.label for m in members if m is not member]
    also = f"; other members of this Machine: {', '.join(others)}" if others else ""
    role = "voter" if member.voter else "learner"
    if not member.healthy:
        reason = REASON_ETCD_VOTER_UNHEALTHY if member.voter else REASON_ETCD_LEARNER_UNHEALTHY
        why = "has not started" if not member.member.started else f"does not answer: {member.error}"
        message = f"etcd {role} {member.label} {why}{also}"
        return condition(CONDITION_ETCD_MEMBER_HEALTHY, "False", reason, message, SEVERITY_WARNING)
    if not member.voter:
        message = f"etcd learner {member.label} is healthy; it votes once promoted{also}"
        return condition(CONDITION_ETCD_MEMBER_HEALTHY, "True", REASON_ETCD_LEARNER, message)
    if leader and member.member.id == leader:
        message = f"etcd voter {member.label} is healthy and leads the cluster{also}"
        return condition(CONDITION_ETCD_MEMBER_HEALTHY, "True", REASON_ETCD_LEADER, message)
    message = f"etcd voter {member.label} is healthy{also}"
    return condition(CONDITION_ETCD_MEMBER_HEALTHY, "True", REASON_ETCD_VOTER, message)


def inspection_failed(why: str) -> JSON:
    """``EtcdMemberHealthy`` when etcd could not be read: Unknown, never a guess."""
    message = f"etcd cannot be read: {why}"
    return condition(CONDITION_ETCD_MEMBER_HEALTHY, "Unknown", REASON_ETCD_INSPECTION_FAILED, message)


def hook_condition(
    info: GuardedMachine,
    members: Sequence[MemberState] | None,
    waits: Sequence[Wait],
    *,
    api_functional: bool,
) -> JSON | None:
    """``EtcdQuorumHookHolding`` of the Machine ``info``; ``members`` are its members from a member
    list just read (None when etcd could not be read), ``waits`` this pass's waits naming it.
    None when it cannot be told (a deleting Machine without the hook while etcd is unreadable)."""
    name = info.hook.name
    if not info.deleting:
        if info.has_hook:
            message = f"preDrain hook {name} in place: a deletion waits until etcd can lose this member"
            return condition(CONDITION_ETCD_QUORUM_HOOK_HOLDING, "False", REASON_HOOK_GUARDING, message)
        why = "no control-plane Machine is Running yet" if not api_functional else "it is being placed"
        message = f"no preDrain hook {name}: {why}"
        return condition(CONDITION_ETCD_QUORUM_HOOK_HOLDING, "False", REASON_HOOK_NOT_PLACED, message)
    if info.has_hook:
        if waits:
            message = "; ".join(wait.message for wait in waits)
            return condition(
                CONDITION_ETCD_QUORUM_HOOK_HOLDING, "True", waits[0].reason, message, SEVERITY_WARNING
            )
        message = f"preDrain hook {name} holds the drain until the Machine's etcd member is removed, "
        message += "which quorum now allows"
        return condition(CONDITION_ETCD_QUORUM_HOOK_HOLDING, "True", REASON_HOOK_REMOVING_MEMBER, message)
    if members is None:
        return None
    if members:
        listed = ", ".join(m.label for m in members)
        message = f"preDrain hook {name} was removed by someone else while member {listed} is still listed"
        return condition(
            CONDITION_ETCD_QUORUM_HOOK_HOLDING,
            "False",
            REASON_HOOK_REMOVED_BY_OTHERS,
            message,
            SEVERITY_WARNING,
        )
    message = f"no etcd member belongs to this Machine: preDrain hook {name} is off and the drain goes on"
    return condition(CONDITION_ETCD_QUORUM_HOOK_HOLDING, "False", REASON_HOOK_RELEASED, message)


def wanted_conditions(state: Pass, *, unreadable: str | None = None) -> dict[str, Wanted]:
    """Machine name → its two conditions for this pass; ``unreadable`` says why etcd could not be
    read, when it could not."""
    functional = machine_api_functional(list(state.infos.values()))
    wanted: dict[str, Wanted] = {}
    for name, info in sorted(state.infos.items()):
        members = None if unreadable is not None else [m for m in state.states if m.machine == name]
        waits = [w for w in state.waits if w.machine == name] if info.deleting else []
        member = (
            inspection_failed(unreadable)
            if unreadable is not None
            else member_condition(members or [], state.leader)
        )
        wanted[name] = {
            CONDITION_ETCD_MEMBER_HEALTHY: member,
            **_present(hook_condition(info, members, waits, api_functional=functional)),
        }
    return wanted


def _present(hook: JSON | None) -> dict[str, JSON]:
    return {} if hook is None else {CONDITION_ETCD_QUORUM_HOOK_HOLDING: hook}


async def write_conditions(client: Client, state: Pass, *, unreadable: str | None = None) -> None:
    """Write each Machine's conditions of this pass where they changed (none for an Inactive
    ControlPlane or one being deleted)."""
    if state.spec.state == STATE_INACTIVE or state.cp["metadata"].get("deletionTimestamp"):
        return
    for name, wanted in wanted_conditions(state, unreadable=unreadable).items():
        await write_machine_conditions(client, state.machines[name], wanted)
