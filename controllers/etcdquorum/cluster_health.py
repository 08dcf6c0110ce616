"""What the ``EtcdClusterHealthy`` condition says about a ControlPlane's etcd: a pure function.

:func:`cluster_health` takes the member states, alarms and waits of one pass of the
etcd-quorum-hook controller (:mod:`controllers.etcdquorum.rules` decided the waits) and returns
the condition's status, reason and message; the reporter writes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from api.quorum import quorum
from controllers.etcd.membership import MemberState
from controllers.etcdquorum.members_without_machine import Kept
from controllers.etcdquorum.rules import Wait, member_labels, quorum_lost, voters_of


@dataclass(frozen=True, slots=True)
class Health:
    """The ``EtcdClusterHealthy`` condition's status, reason and message."""

    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str


def cluster_health(
    members: Sequence[MemberState],
    alarms: Sequence[str],
    waits: Sequence[Wait] = (),
    kept: Sequence[Kept] = (),
) -> Health:
    """What ``EtcdClusterHealthy`` says: False when quorum is lost, a voter is unhealthy, an alarm
    is active or a member belongs to no Machine; True otherwise. The message always counts
    members, voters and learners, names unhealthy endpoints and alarms, and adds every wait and,
    for each member of no Machine that stays, why (``kept``)."""
    voters = voters_of(members)
    learners = [m for m in members if m.member.is_learner]
    healthy = [m for m in voters if m.healthy]
    unhealthy = [m for m in members if not m.healthy]
    unmapped = [m for m in members if m.machine is None]
    parts = [
        f"{len(members)} members: {len(voters)} voters ({len(healthy)} healthy, quorum "
        f"{quorum(len(voters)) if voters else 0}), {len(learners)} learners"
    ]
    if unhealthy:
        parts.append(f"unhealthy: {member_labels(unhealthy)}")
    if alarms:
        parts.append(f"alarms: {', '.join(alarms)}")
    if unmapped:
        parts.append(f"no Machine for: {member_labels(unmapped)}")
    # Before the waits: a member that stays outside the Machine API is the news; the waits follow.
    parts.extend(f"no Machine, kept ({item.reason}): {item.message}" for item in kept)
    parts.extend(f"waiting ({wait.reason}): {wait.message}" for wait in waits)
    message = "; ".join(parts)
    if quorum_lost(members):
        return Health("False", "QuorumLost", message)
    if any(not m.healthy for m in voters):
        return Health("False", "MembersUnhealthy", message)
    if alarms:
        return Health("False", "AlarmsActive", message)
    if unmapped or kept:
        return Health("False", "MembersWithoutMachine", message)
    return Health("True", "EtcdHealthy", message)
