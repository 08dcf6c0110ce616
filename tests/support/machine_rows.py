"""One builder of rows per model the controllers' rule tables read, so every table starts from the
same realistic Machine and states only what its case changes.

- :func:`cp_machine`: a :class:`controllers.controlplane.machines.MachineInfo`, what the
  ControlPlane controller's rules know of one Machine.
- :func:`guarded_machine`: a :class:`controllers.etcdquorum.rules.GuardedMachine`, what the
  etcd-quorum-hook rules know of one Machine; :class:`MemberRow` and :func:`quorum_cluster` make
  the members and Machines of a whole etcd-quorum table, :func:`etcd_member` one member.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from controllers.controlplane.machines import MachineInfo
from controllers.etcd.client import Member
from controllers.etcdquorum.rules import HOOK_OWNER, GuardedMachine, MemberState

NOW: Final = datetime(2026, 1, 1, 12, tzinfo=UTC)
"""The moment the tables judge at, where they need one."""
CREATED: Final = NOW - timedelta(hours=1)
"""When a row's Machine was created, unless its case says otherwise."""


def cp_machine(name: str, *, age: float = 0, **fields: Any) -> MachineInfo:
    """A Running Machine with a Ready Node (``has_node`` and ``node_ready``) whose etcd member is a
    healthy voter, created ``age`` minutes before :data:`CREATED`, in no failure domain; any field
    of :class:`MachineInfo` given as a keyword overrides these."""
    row: dict[str, Any] = {
        "created": CREATED - timedelta(minutes=age),
        "phase": "Running",
        "has_node": True,
        "node_ready": True,
        "etcd_voter": True,
        "etcd_healthy": True,
    }
    row.update(fields)
    return MachineInfo(name=name, **row)


def guarded_machine(name: str, **fields: Any) -> GuardedMachine:
    """A Running Machine, not being deleted, that carries the etcd-quorum hook with our owner; any
    field of :class:`GuardedMachine` given as a keyword overrides these."""
    row: dict[str, Any] = {"running": True, "hook_owner": HOOK_OWNER}
    row.update(fields)
    return GuardedMachine(name=name, **row)


def etcd_member(
    index: int, *, learner: bool = False, started: bool = True, host: str = "10.0.0.{i}"
) -> Member:
    """Member ``0x100 + index`` named ``m<index>`` (no name and no client URL before it started),
    on ``host`` with ``{i}`` replaced by the index."""
    address = host.format(i=index)
    literal = f"[{address}]" if ":" in address else address
    return Member(
        id=0x100 + index,
        name=f"m{index}" if started else "",
        peer_urls=(f"https://{literal}:2380",),
        client_urls=(f"https://{literal}:2379",) if started else (),
        is_learner=learner,
    )


@dataclass(frozen=True)
class MemberRow:
    """One row of an etcd-quorum table: a member and its Machine ``m<index>``."""

    index: int
    learner: bool = False
    healthy: bool = True
    deleting: bool = False
    hook: bool = True
    zone: str | None = None
    created: str = ""
    """Its Machine's ``creationTimestamp`` (RFC 3339); empty: unknown."""
    marked: bool = False
    """Its Machine is marked for remediation by a MachineHealthCheck."""


def quorum_cluster(*rows: MemberRow) -> tuple[list[MemberState], dict[str, GuardedMachine]]:
    """The members and the Machines (by name) of ``rows``, as the etcd-quorum rules take them."""
    members = []
    for r in rows:
        member = etcd_member(r.index, learner=r.learner)
        members.append(MemberState(member, f"m{r.index}", r.healthy, endpoint=member.client_urls[0]))
    machines = {
        f"m{r.index}": guarded_machine(
            f"m{r.index}",
            deleting=r.deleting,
            hook_owner=HOOK_OWNER if r.hook else None,
            failure_domain=r.zone,
            created=r.created,
            remediation_marked=r.marked,
        )
        for r in rows
    }
    return members, machines
