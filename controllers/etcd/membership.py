"""The one model of an etcd cluster as the operator sees it: members, owners, endpoints, quorum.

Both controllers that touch etcd membership — the ControlPlane controller (its preflight, scale-in,
remediation and status) and the etcd-quorum-hook controller (promotions, removals, hooks) — read
etcd through this module, so they cannot disagree about the same cluster. It answers three things
(the quorum arithmetic they apply to it is :mod:`api.quorum`'s, which the webhooks share):

1. **What the cluster is** (:class:`Membership`, read by :func:`read_membership`): every member
   (:class:`~controllers.etcd.client.Member`) with its raft role (voter or learner), whether it
   has started, whether it answers a health read, which member leads, and the active alarms.
2. **Which Machine each member belongs to** (:func:`member_owner`, :func:`map_members`), and
   which Node speaks for a member of none (:func:`member_node`).
3. **Where to reach etcd** (:func:`client_endpoints`, :func:`member_client_url`).

What a Machine provider may tell the operator (the contract)
-----------------------------------------------------------
A Machine provider MAY annotate a control-plane Machine with facts about its etcd member. Each
annotation is optional; the operator never needs one:

``etcd.cpo.dev/client-url`` (:data:`CLIENT_URL_ANNOTATION`)
    Where the member serves clients, e.g. ``https://10.0.0.5:2379``.
``etcd.cpo.dev/peer-url`` (:data:`PEER_URL_ANNOTATION`)
    The member's peer URL exactly as etcd lists it, e.g. ``https://10.0.0.5:2380``. A provider
    that adds the member itself should write it *before* the ``member add``, so a member is never
    in etcd without a Machine naming it.
``etcd.cpo.dev/member-id`` (:data:`MEMBER_ID_ANNOTATION`)
    The member id in hex, as ``etcdctl member list`` prints it.

Without them the operator derives everything from what every real cluster has: the Machine's
``status.addresses`` of type ``InternalIP`` (which machine controllers copy from the Node), the
standard ports (:data:`CLIENT_PORT` 2379, :data:`PEER_PORT` 2380), the host of each member's peer
URL, and the name of the Machine's Node (``status.nodeRef.name``). A provider whose members all
share one address (several members on one host, as the development provider runs them) must
write :data:`PEER_URL_ANNOTATION` or :data:`MEMBER_ID_ANNOTATION`, since addresses cannot tell its
members apart.

Which Machine a member belongs to (the one rule)
------------------------------------------------
Each piece of evidence that links a member to a Machine has a rank (:func:`ownership_rank`):

1. **exact** — the Machine's :data:`MEMBER_ID_ANNOTATION` is the member's id, or its
   :data:`PEER_URL_ANNOTATION` is one of the member's peer URLs. A Machine that carries either
   annotation is matched by them alone: its provider said which member is its, and an address it
   shares with other Machines must not claim theirs;
2. **address and name** — the host of one of the member's peer URLs is one of the Machine's
   InternalIP addresses (compared as IP addresses, IPv4 or IPv6: ``[fd00::0001]`` is ``fd00::1``),
   *and* the member's name is the Machine's or its Node's name;
3. **address** — only the peer-URL host matches an InternalIP;
4. **name** — only the member's name matches the Machine's or its Node's name (a member that
   has not started has no name, so this never matches it).

A member belongs to the Machine with the best rank; among equal ranks a Machine that is not being
deleted wins over one that is (a replacement that reuses a deleted Machine's address takes the
new member), then the first name in alphabetical order, so the answer never depends on list
order. Rank 2 over 3 keeps an old member with its old Machine when the replacement reuses the
address. This follows OpenShift's etcd operator, which links a Machine to a member by the
member's peer-URL host among the Machine's InternalIP addresses; the exact annotations come
first for providers that run several members on one address, and the name comes last for
clusters whose members' peer URLs name hosts rather than addresses.

Which Node speaks for a member
------------------------------
A member of no Machine may still have a host: :func:`member_node` names the Node whose name is
the member's or whose InternalIP is its peer URL's host (ranks 2 to 4 above, a Node read by
:func:`node_identity`), leaving out the Nodes of Machines whose own member is another one. The
etcd-quorum-hook controller removes a dead member of no Machine only when no Node speaks for it
(:mod:`controllers.etcdquorum.members_without_machine`).

Endpoints
---------
``spec.etcd.endpoints`` when the ControlPlane lists them; else, per Machine, its
:data:`CLIENT_URL_ANNOTATION`, else ``https://<first InternalIP>:2379``, ordered by
:func:`client_endpoints`: Machines that stay before deleting ones, running before the rest, then
the oldest (see there why age matters).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from api.quorum import quorum_lost
from controllers.etcd.client import Alarm, EtcdClient, EtcdError, Member

CLIENT_URL_ANNOTATION: Final = "etcd.cpo.dev/client-url"
"""Machine annotation (optional): where its member serves clients."""
PEER_URL_ANNOTATION: Final = "etcd.cpo.dev/peer-url"
"""Machine annotation (optional): its member's peer URL, exactly as etcd lists it."""
MEMBER_ID_ANNOTATION: Final = "etcd.cpo.dev/member-id"
"""Machine annotation (optional): its member's id in hex."""
CONTRACT_ANNOTATIONS: Final = (CLIENT_URL_ANNOTATION, PEER_URL_ANNOTATION, MEMBER_ID_ANNOTATION)
CLIENT_PORT: Final = 2379
"""etcd's standard client port."""
PEER_PORT: Final = 2380
"""etcd's standard peer port."""

RANK_EXACT: Final = 1
RANK_ADDRESS_AND_NAME: Final = 2
RANK_ADDRESS: Final = 3
RANK_NAME: Final = 4

# ---------------------------------------------------------------------------------------------- Machines


def _normalized_ip(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text.strip("[]")))
    except ValueError:
        return None


def _url_host_ip(url: str) -> str | None:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return _normalized_ip(host) if host else None


def url_for_host(host: str, port: int, scheme: str = "https") -> str:
    """``scheme://host:port``, with an IPv6 address in brackets."""
    try:
        literal = f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        literal = host
    return f"{scheme}://{literal}:{port}"


@dataclass(frozen=True, slots=True)
class MachineIdentity:
    """What links a Machine to an etcd member and tells where to reach it (see the module docstring)."""

    name: str
    node_name: str | None = None
    """``status.nodeRef.name``."""
    internal_ips: tuple[str, ...] = ()
    """Its ``status.addresses`` of type InternalIP, in order."""
    deleting: bool = False
    running: bool = False
    """``status.phase`` is ``Running``."""
    created: str = ""
    """``metadata.creationTimestamp`` (RFC 3339, so it sorts as text); empty when unknown."""
    client_url: str | None = None
    """:data:`CLIENT_URL_ANNOTATION`, when present."""
    peer_url: str | None = None
    """:data:`PEER_URL_ANNOTATION`, when present."""
    member_id: str | None = None
    """:data:`MEMBER_ID_ANNOTATION`, when present (hex)."""

    @property
    def annotated(self) -> bool:
        """It names its member exactly (:data:`PEER_URL_ANNOTATION` or :data:`MEMBER_ID_ANNOTATION`)."""
        return self.peer_url is not None or self.member_id is not None

    @property
    def endpoint(self) -> str | None:
        """Where its member answers clients: the annotation, else ``https://<first InternalIP>:2379``."""
        if self.client_url:
            return self.client_url
        return url_for_host(self.internal_ips[0], CLIENT_PORT) if self.internal_ips else None

    @classmethod
    def from_machine(cls, machine: Mapping[str, Any]) -> MachineIdentity:
        """Read a Machine (wire form)."""
        metadata = machine.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        status = machine.get("status") or {}
        return cls(
            name=str(metadata.get("name") or ""),
            node_name=(status.get("nodeRef") or {}).get("name") or None,
            internal_ips=tuple(
                str(address["address"])
                for address in status.get("addresses") or ()
                if address.get("type") == "InternalIP" and address.get("address")
            ),
            deleting=bool(metadata.get("deletionTimestamp")),
            running=status.get("phase") == "Running",
            created=str(metadata.get("creationTimestamp") or ""),
            client_url=annotations.get(CLIENT_URL_ANNOTATION) or None,
            peer_url=annotations.get(PEER_URL_ANNOTATION) or None,
            member_id=annotations.get(MEMBER_ID_ANNOTATION) or None,
        )


# ---------------------------------------------------------------------------------------------- ownership


def ownership_rank(member: Member, machine: MachineIdentity) -> int | None:
    """How strongly ``member`` is linked to ``machine`` (1 strongest), or None when it is not; the
    ranks are the module docstring's."""
    if machine.annotated:
        peers = {url.rstrip("/") for url in member.peer_urls}
        exact_peer = machine.peer_url is not None and machine.peer_url.rstrip("/") in peers
        exact_id = machine.member_id is not None and machine.member_id.lower() == member.id_hex
        return RANK_EXACT if exact_peer or exact_id else None
    ips = {ip for ip in (_normalized_ip(address) for address in machine.internal_ips) if ip}
    by_address = any(_url_host_ip(url) in ips for url in member.peer_urls)
    by_name = bool(member.name) and member.name in (machine.name, machine.node_name)
    if by_address and by_name:
        return RANK_ADDRESS_AND_NAME
    if by_address:
        return RANK_ADDRESS
    if by_name:
        return RANK_NAME
    return None


def member_owner(member: Member, machines: Iterable[MachineIdentity]) -> str | None:
    """The name of the Machine ``member`` belongs to (the module docstring's rule), or None."""
    best: tuple[int, bool, str] | None = None
    for machine in machines:
        rank = ownership_rank(member, machine)
        if rank is None:
            continue
        candidate = (rank, machine.deleting, machine.name)
        if best is None or candidate < best:
            best = candidate
    return best[2] if best is not None else None


def map_members(members: Iterable[Member], machines: Iterable[MachineIdentity]) -> dict[int, str | None]:
    """Member id → the name of the Machine it belongs to (:func:`member_owner`), or None."""
    listed = list(machines)
    return {member.id: member_owner(member, listed) for member in members}


def node_identity(node: Mapping[str, Any]) -> MachineIdentity:
    """A Node read as what the ownership rule matches: its name (as both names) and its InternalIP
    addresses; no annotation, so a member matches it by address or by name (:func:`ownership_rank`)."""
    metadata = node.get("metadata") or {}
    name = str(metadata.get("name") or "")
    return MachineIdentity(
        name=name,
        node_name=name,
        internal_ips=tuple(
            str(address["address"])
            for address in (node.get("status") or {}).get("addresses") or ()
            if address.get("type") == "InternalIP" and address.get("address")
        ),
    )


def member_node(
    member: Member, nodes: Iterable[MachineIdentity], claimed: Collection[str] = ()
) -> str | None:
    """The Node that speaks for ``member`` (read with :func:`node_identity`), or None: one named as
    the member, or whose InternalIP is its peer URL's host, first by name, except the Nodes in
    ``claimed``: the Nodes of Machines whose own member is another one. (Where members share an
    address, as on one test host, a Node of a living Machine says nothing of the others' hosts.)"""
    matches = sorted(
        node.name for node in nodes if node.name not in claimed and ownership_rank(member, node) is not None
    )
    return matches[0] if matches else None


# ---------------------------------------------------------------------------------------------- endpoints


def client_endpoints(explicit: Sequence[str] | None, machines: Iterable[MachineIdentity]) -> list[str]:
    """Where to reach etcd, in the order requests try them.

    ``explicit`` (``spec.etcd.endpoints``) when given. Otherwise each Machine's
    :attr:`MachineIdentity.endpoint`: Machines that stay first (a deleting Machine's member may be
    going away), running ones before the rest, then the oldest. Age matters for membership
    changes: with etcd's strict reconfiguration check (on by default) the member that receives a
    change refuses to remove a voter, or to add a member, unless it has been connected for 5 s to
    enough of the voters; a member that joined a moment ago has not, so a change sent to it fails
    for up to 5 s, while the same change sent to an older member goes through at once.
    """
    if explicit:
        return list(dict.fromkeys(explicit))
    ordered = sorted(machines, key=lambda m: (m.deleting, not m.running, m.created or "~", m.name))
    return list(dict.fromkeys(m.endpoint for m in ordered if m.endpoint))


def member_client_url(member: Member, machine: MachineIdentity | None) -> str | None:
    """Where to ask ``member`` itself: its first listed client URL, else its Machine's endpoint;
    None for a member that has not started (it serves nothing yet)."""
    if not member.started:
        return None
    if member.client_urls:
        return member.client_urls[0]
    return machine.endpoint if machine is not None else None


# ---------------------------------------------------------------------------------------------- the model


@dataclass(frozen=True, slots=True)
class MemberState:
    """One etcd member with what the operator learnt about it."""

    member: Member
    machine: str | None
    """The Machine it belongs to (:func:`member_owner`); None when none."""
    healthy: bool
    """It answered a health read (a linearizable read for a voter)."""
    error: str | None = None
    """Why its health read failed, when it did."""
    endpoint: str | None = None
    """Where it was asked (:func:`member_client_url`)."""

    @property
    def voter(self) -> bool:
        return not self.member.is_learner

    @property
    def label(self) -> str:
        """How messages name it: ``<name> (<hex id>)``, or the id and peer URL before it started."""
        if self.member.name:
            return f"{self.member.name} ({self.member.id_hex})"
        return f"{self.member.id_hex} (not started, {', '.join(self.member.peer_urls)})"


@dataclass(frozen=True)
class Membership:
    """The etcd cluster as one read saw it: members with owners and health, the leader, the alarms."""

    members: tuple[MemberState, ...] = ()
    alarms: tuple[Alarm, ...] = ()
    alarm_error: str | None = None
    """Why the alarm list could not be read, when it could not."""
    leader: int = 0
    """Member id of the leader; 0 when not known."""

    @classmethod
    def of(
        cls,
        members: Sequence[Member],
        machines: Sequence[MachineIdentity],
        health: Mapping[int, tuple[bool, str | None]],
        *,
        alarms: Sequence[Alarm] = (),
        alarm_error: str | None = None,
        leader: int = 0,
    ) -> Membership:
        """The model of a member list read from etcd: each member's Machine (:func:`member_owner`)
        and endpoint (:func:`member_endpoints`), with ``health`` (member id → (healthy, error);
        a member left out is unhealthy, "not asked")."""
        owners = map_members(members, machines)
        endpoints = member_endpoints(members, machines)
        states: list[MemberState] = []
        for member in members:
            healthy, error = health.get(member.id, (False, "not asked"))
            states.append(
                MemberState(
                    member, owners[member.id], healthy, None if healthy else error, endpoints[member.id]
                )
            )
        return cls(tuple(states), tuple(alarms), alarm_error, leader)

    @property
    def voters(self) -> list[MemberState]:
        return [m for m in self.members if m.voter]

    @property
    def learners(self) -> list[MemberState]:
        return [m for m in self.members if not m.voter]

    def voter_health(self) -> dict[int, bool]:
        """Voter id → healthy: the input of the quorum arithmetic."""
        return {m.member.id: m.healthy for m in self.voters}

    @property
    def quorum_lost(self) -> bool:
        """Fewer healthy voters than a quorum of the voters (:func:`api.quorum.quorum_lost`)."""
        return quorum_lost(self.voter_health())

    def of_machine(self, name: str) -> list[MemberState]:
        """The members that belong to Machine ``name``."""
        return [m for m in self.members if m.machine == name]

    def by_id(self, member_id: int) -> MemberState | None:
        return next((m for m in self.members if m.member.id == member_id), None)

    @property
    def leader_machine(self) -> str | None:
        """The Machine whose member leads, when known."""
        leader = self.by_id(self.leader) if self.leader else None
        return leader.machine if leader is not None else None


def member_endpoints(members: Iterable[Member], machines: Sequence[MachineIdentity]) -> dict[int, str | None]:
    """Member id → where to ask that member itself (:func:`member_client_url` with its Machine)."""
    listed = list(members)
    owners = map_members(listed, machines)
    by_name = {machine.name: machine for machine in machines}
    return {m.id: member_client_url(m, by_name.get(owners[m.id] or "")) for m in listed}


async def _health(etcd: EtcdClient, url: str | None) -> tuple[bool, str | None]:
    if url is None:
        return False, "not started"
    try:
        (answer,) = await etcd.health([url])
    except ValueError as err:
        return False, f"bad client URL {url!r}: {err}"
    return answer.healthy, answer.error


async def read_membership(
    etcd: EtcdClient, machines: Sequence[MachineIdentity], *, leader_skipping: Collection[str] | None = None
) -> Membership:
    """Read the cluster once into :meth:`Membership.of`: the member list (raises
    :class:`~controllers.etcd.client.EtcdError` when it cannot be read), every started member's
    health (asked at the member itself), the alarms and, when ``leader_skipping`` is given, the
    leader, as the first healthy voter whose Machine is not named in ``leader_skipping`` reports it."""
    members = await etcd.member_list()
    endpoints = member_endpoints(members, machines)
    answers = await asyncio.gather(*(_health(etcd, endpoints[m.id]) for m in members))
    health = {member.id: answer for member, answer in zip(members, answers, strict=True)}
    alarms: list[Alarm] = []
    alarm_error: str | None = None
    try:
        alarms = await etcd.alarms()
    except EtcdError as err:
        alarm_error = err.message
    membership = Membership.of(members, machines, health, alarms=alarms, alarm_error=alarm_error)
    if leader_skipping is None:
        return membership
    for state in membership.voters:
        if state.healthy and state.endpoint and state.machine not in leader_skipping:
            with contextlib.suppress(EtcdError, ValueError):
                leader = (await etcd.endpoint_status(state.endpoint)).leader
                return dataclasses.replace(membership, leader=leader)
    return membership


__all__ = [
    "CLIENT_PORT",
    "CLIENT_URL_ANNOTATION",
    "CONTRACT_ANNOTATIONS",
    "MEMBER_ID_ANNOTATION",
    "PEER_PORT",
    "PEER_URL_ANNOTATION",
    "MachineIdentity",
    "MemberState",
    "Membership",
    "client_endpoints",
    "map_members",
    "member_client_url",
    "member_endpoints",
    "member_node",
    "member_owner",
    "node_identity",
    "ownership_rank",
    "read_membership",
    "url_for_host",
]
