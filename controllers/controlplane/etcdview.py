"""What the ControlPlane controller asks etcd before a step (members, their views, alarms, voter
health), and the one thing it tells etcd (move leadership).

:func:`gather_etcd_facts` reads the cluster through the one model of it
(:func:`controllers.etcd.membership.read_membership`: members, which Machine each belongs to,
health, leader, alarms) and adds what only the preflight asks: whether every healthy voter
reports the same member list. The verdict is :func:`controllers.controlplane.preflight.preflight`'s.
:func:`forward_leadership` moves leadership off a member whose Machine is about to be deleted.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from api.controlplane import ControlPlaneSpec
from api.controlplane_reasons import REASON_LEADERSHIP_MOVED, REASON_LEADERSHIP_NOT_MOVED
from controllers.controlplane.machines import EtcdFacts, MachineInfo
from controllers.controlplane.preflight import etcd_facts_for_preflight
from controllers.etcd.client import EtcdClient, EtcdError
from controllers.etcd.membership import (
    MachineIdentity,
    Membership,
    MemberState,
    client_endpoints,
    read_membership,
)
from controllers.etcd.pool import EtcdClientPool
from controllers.etcd.tls import TLSSecretError
from runtime.client import JSON


@dataclass
class EtcdView:
    """The facts for the preflight plus, per Machine name, whether its member votes and is healthy."""

    facts: EtcdFacts
    voters: set[str] = field(default_factory=set)
    healthy: set[str] = field(default_factory=set)
    """Machines whose member is a voter that answers a health read."""
    with_member: set[str] = field(default_factory=set)
    leader: str | None = None
    """Name of the Machine whose member leads, when known."""
    member_ids: dict[str, int] = field(default_factory=dict)
    """Member id per Machine name."""
    client_urls: dict[str, str] = field(default_factory=dict)
    """A client URL of each Machine's started member."""


def _label(state: MemberState) -> str:
    return state.machine or state.member.name or state.member.id_hex


async def _member_view(etcd: EtcdClient, endpoint: str) -> frozenset[tuple[int, bool]] | None:
    try:
        return frozenset((m.id, m.is_learner) for m in await etcd.member_list_at(endpoint))
    except (EtcdError, ValueError):
        return None


async def _disagreeing(etcd: EtcdClient, asked: Sequence[MemberState]) -> list[str]:
    """The endpoints of ``asked`` whose member list differs from the most common one."""
    views = await asyncio.gather(*(_member_view(etcd, m.endpoint or "") for m in asked))
    known = [view for view in views if view is not None]
    if not known:
        return []
    majority, _ = Counter(known).most_common(1)[0]
    return [
        member.endpoint or ""
        for member, view in zip(asked, views, strict=True)
        if view is not None and view != majority
    ]


def view_of(membership: Membership, deleting: set[str], disagreeing: Sequence[str] = ()) -> EtcdView:
    """The :class:`EtcdView` of ``membership``.

    Voters of Machines being deleted are left out of the health checks (their health is still
    reported in :attr:`EtcdView.healthy`): they are on their way out (a remediated Machine's
    member is dead by definition), and the hook holds them until their replacement votes.
    """
    members = membership.members
    by_id = {m.member.id: m for m in members}
    checked = [m for m in membership.voters if m.endpoint and m.machine not in deleting]
    alarm_labels = [
        f"{alarm.alarm}@{_label(by_id[alarm.member_id])}"
        if alarm.member_id in by_id
        else f"{alarm.alarm}@{alarm.member_id:x}"
        for alarm in membership.alarms
    ]
    if membership.alarm_error is not None:
        # Unknown alarms count as an alarm: the preflight must not go ahead on a guess.
        alarm_labels.append(f"alarm list failed: {membership.alarm_error}")
    facts = EtcdFacts(
        member_names=tuple(m.machine or m.member.name for m in members),
        learners=tuple(_label(m) for m in membership.learners),
        disagreeing=tuple(disagreeing),
        alarms=tuple(alarm_labels),
        unhealthy_voters=tuple((_label(m), str(m.error)) for m in checked if not m.healthy),
    )
    owned = [m for m in members if m.machine]
    return EtcdView(
        facts,
        leader=membership.leader_machine,
        member_ids={m.machine or "": m.member.id for m in owned},
        client_urls={m.machine or "": m.member.client_urls[0] for m in owned if m.member.client_urls},
        voters={m.machine or "" for m in owned if m.voter},
        healthy={m.machine or "" for m in owned if m.voter and m.healthy},
        with_member={m.machine or "" for m in owned},
    )


async def gather_etcd_facts(
    etcd: EtcdClient, machines: Sequence[Mapping[str, Any]], deleting: set[str]
) -> EtcdView:
    """Read etcd once (:func:`~controllers.etcd.membership.read_membership`) and ask each healthy
    voter of a Machine that stays for its own member list (:attr:`EtcdFacts.disagreeing`)."""
    try:
        membership = await read_membership(
            etcd, [MachineIdentity.from_machine(m) for m in machines], leader_skipping=deleting
        )
    except EtcdError as err:
        return EtcdView(EtcdFacts(reachable=False, error=str(err)))
    asked = [m for m in membership.voters if m.endpoint and m.machine not in deleting and m.healthy]
    return view_of(membership, deleting, await _disagreeing(etcd, asked))


async def etcd_client_for(
    pool: EtcdClientPool, cp: JSON, spec: ControlPlaneSpec, owned: Sequence[JSON]
) -> EtcdClient | EtcdView:
    """The ControlPlane's pooled etcd client, pointed at its endpoints (``spec.etcd.endpoints``,
    else its Machines'); or, when etcd cannot be asked (no endpoint, a bad one, a missing TLS
    Secret), the unreachable view saying why."""
    metadata = cp["metadata"]
    explicit = spec.etcd.endpoints if spec.etcd else None
    endpoints = client_endpoints(explicit, [MachineIdentity.from_machine(m) for m in owned])
    if not endpoints:
        return EtcdView(
            EtcdFacts(reachable=False, error="no etcd endpoint known (no Machine has an address)")
        )
    secret = spec.etcd.tls_secret_ref.name if spec.etcd and spec.etcd.tls_secret_ref else None
    try:
        return await pool.client_for(
            f"{metadata['namespace']}/{metadata['name']}", metadata["namespace"], endpoints, secret
        )
    except (TLSSecretError, ValueError) as err:
        return EtcdView(EtcdFacts(reachable=False, error=str(err)))


async def read_etcd_view(
    pool: EtcdClientPool, cp: JSON, spec: ControlPlaneSpec, owned: Sequence[JSON], deleting: set[str]
) -> EtcdView | None:
    """What the ControlPlane's etcd says this pass, or None when there is nothing to ask: external
    etcd (its pooled client is closed), or no owned Machine and no ``spec.etcd.endpoints``.

    With no Machine owned, ``spec.etcd.endpoints`` may still name an etcd that has members;
    :func:`~controllers.controlplane.preflight.etcd_facts_for_preflight` says when the preflight
    checks it (an etcd that does not answer before the first Machine is a new cluster).
    """
    if spec.etcd is not None and spec.etcd.external:
        await pool.forget(f"{cp['metadata']['namespace']}/{cp['metadata']['name']}")
        return None
    if not owned and not (spec.etcd is not None and spec.etcd.endpoints):
        return None
    etcd = await etcd_client_for(pool, cp, spec, owned)
    view = etcd if isinstance(etcd, EtcdView) else await gather_etcd_facts(etcd, owned, deleting)
    if etcd_facts_for_preflight(view.facts, owns_machines=bool(owned)) is None:
        return None
    return view


async def forward_leadership(
    pool: EtcdClientPool,
    cp: JSON,
    spec: ControlPlaneSpec,
    owned: Sequence[JSON],
    infos: Sequence[MachineInfo],
    view: EtcdView | None,
    name: str,
    event: Callable[[Mapping[str, Any], str, str, str], None],
) -> None:
    """Before deleting the leader's Machine ``name`` (a scale-in's, a rollout's or a
    remediation's), hand leadership to the oldest other healthy voter.

    Removing the leading member costs the cluster an election (no leader for about an
    election timeout); moving leadership first avoids it. The oldest Machine, not the newest:
    etcd refuses membership changes until the leader has been connected to a quorum for 5 s,
    so a leader that joined a moment ago would hold up the removal of the old member. A
    refusal is reported (``event``) and the deletion goes on: an election is survivable, a
    scale-in stuck on it is not.

    This runs before the ControlPlane deletes a Machine, and is the only hand-off with ``cpo run
    --controllers=controlplane``. The etcd-quorum-hook controller, where it runs, moves leadership
    again right before each member removal, whoever deleted the Machine
    (:func:`controllers.etcdquorum.handoff.leadership_handoff`): leadership may come back to the
    member while its replacement joins, and a Machine a user or another health check deletes never
    passes here.
    """
    if view is None or view.leader != name or name not in view.client_urls:
        return
    candidates = sorted(
        (i for i in infos if i.name != name and not i.deleting and i.name in view.healthy),
        key=lambda i: (i.created, i.name),
    )
    target = next((i for i in candidates if i.name in view.member_ids), None)
    if target is None:
        return
    try:
        etcd = await etcd_client_for(pool, cp, spec, owned)
        if isinstance(etcd, EtcdView):
            raise EtcdError(etcd.facts.error)
        await etcd.move_leader(view.client_urls[name], view.member_ids[target.name])
    except EtcdError as err:
        event(cp, "Warning", REASON_LEADERSHIP_NOT_MOVED, f"etcd leadership stays on {name}: {err}")
        return
    event(cp, "Normal", REASON_LEADERSHIP_MOVED, f"Moved etcd leadership from {name} to {target.name}")
