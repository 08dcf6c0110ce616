"""What the ControlPlane controller asks etcd before a step: members, their views, alarms, voter health.

:func:`gather_etcd_facts` reads etcd through :class:`~controllers.etcd.client.EtcdClient` and
matches members to Machines; the verdict is :func:`controllers.controlplane.rules.preflight`'s.
A member belongs to a Machine when its name is the Machine's (or its Node's) name, or its id or
peer URL is the one the Machine's annotations record (``local.cpo.dev/etcd-member-id``,
``local.cpo.dev/etcd-peer-url``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from controllers.controlplane.rules import EtcdFacts
from controllers.etcd.client import EtcdClient, EtcdClientOptions, EtcdError, Member
from controllers.etcd.tls import tls_context_from_secret
from runtime.client import Client

ETCD_CLIENT_URL_ANNOTATION: Final = "local.cpo.dev/etcd-client-url"
ETCD_PEER_URL_ANNOTATION: Final = "local.cpo.dev/etcd-peer-url"
ETCD_MEMBER_ID_ANNOTATION: Final = "local.cpo.dev/etcd-member-id"
ETCD_CLIENT_PORT: Final = 2379


@dataclass
class EtcdView:
    """The facts for the preflight plus, per Machine name, whether its member votes and is healthy."""

    facts: EtcdFacts
    voters: set[str] = field(default_factory=set)
    healthy: set[str] = field(default_factory=set)
    with_member: set[str] = field(default_factory=set)
    leader: str | None = None
    """Name of the Machine whose member leads, when known."""
    member_ids: dict[str, int] = field(default_factory=dict)
    """Member id per Machine name."""
    client_urls: dict[str, str] = field(default_factory=dict)
    """A client URL of each Machine's started member."""


async def tls_options(
    client: Client, namespace: str, secret_name: str | None, options: EtcdClientOptions
) -> EtcdClientOptions:
    """``options`` with the TLS context of ``spec.etcd.tlsSecretRef`` when one is named; raises
    :class:`~controllers.etcd.tls.TLSSecretError` saying what is wrong."""
    if not secret_name:
        return options
    context = await tls_context_from_secret(client, namespace, secret_name)
    return dataclasses.replace(options, ssl_context=context)


def etcd_endpoints(explicit: Sequence[str] | None, machines: Sequence[Mapping[str, Any]]) -> list[str]:
    """Where to reach etcd: ``spec.etcd.endpoints``; else each Machine's client URL annotation,
    else ``https://<InternalIP>:2379``."""
    if explicit:
        return list(explicit)
    endpoints: list[str] = []
    for machine in machines:
        annotations = (machine.get("metadata") or {}).get("annotations") or {}
        url = annotations.get(ETCD_CLIENT_URL_ANNOTATION)
        if not url:
            for address in (machine.get("status") or {}).get("addresses") or ():
                if address.get("type") == "InternalIP" and address.get("address"):
                    url = f"https://{address['address']}:{ETCD_CLIENT_PORT}"
                    break
        if url and url not in endpoints:
            endpoints.append(str(url))
    return endpoints


def member_owner(member: Member, machines: Sequence[Mapping[str, Any]]) -> str | None:
    """The name of the Machine ``member`` runs on, or None."""
    for machine in machines:
        metadata = machine.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        node = ((machine.get("status") or {}).get("nodeRef") or {}).get("name")
        if member.name and member.name in (metadata.get("name"), node):
            return str(metadata["name"])
        if annotations.get(ETCD_MEMBER_ID_ANNOTATION) == member.id_hex:
            return str(metadata["name"])
        if annotations.get(ETCD_PEER_URL_ANNOTATION) in member.peer_urls:
            return str(metadata["name"])
    return None


def _member_label(member_id: int, owners: Mapping[int, str | None], by_id: Mapping[int, Member]) -> str:
    member = by_id.get(member_id)
    return owners.get(member_id) or (member.name if member else "") or f"{member_id:x}"


async def _member_view(endpoint: str, options: EtcdClientOptions) -> frozenset[tuple[int, bool]] | None:
    async with EtcdClient([endpoint], options) as client:
        try:
            return frozenset((m.id, m.is_learner) for m in await client.member_list())
        except EtcdError:
            return None


async def gather_etcd_facts(
    endpoints: Sequence[str],
    machines: Sequence[Mapping[str, Any]],
    deleting: set[str],
    options: EtcdClientOptions,
) -> EtcdView:
    """Read etcd once: member list, each voter's own member list, alarms, voter health.

    Voters of Machines being deleted are left out of the health and agreement checks (their
    health is still read and reported in :attr:`EtcdView.healthy`): they are on their way out (a
    remediated Machine's member is dead by definition), and the hook holds them until their
    replacement votes.
    """
    if not endpoints:
        return EtcdView(
            EtcdFacts(reachable=False, error="no etcd endpoint known (no Machine has an address)")
        )
    async with EtcdClient(endpoints, options) as client:
        try:
            members = await client.member_list()
            alarms = await client.alarms()
        except EtcdError as err:
            return EtcdView(EtcdFacts(reachable=False, error=str(err)))
        owners = {member.id: member_owner(member, machines) for member in members}
        voters = [m for m in members if not m.is_learner]
        # Every voter's health is read (a deleting Machine's too: the remediation rules ask
        # whether the hook still holds a healthy voter); the checks below leave deleting ones out.
        probed = [m for m in voters if m.client_urls]
        health = dict(
            zip(
                (m.id for m in probed),
                await client.health([m.client_urls[0] for m in probed]) if probed else [],
                strict=True,
            )
        )
        healthy_ids = {member_id for member_id, result in health.items() if result.healthy}
        checked = [m for m in probed if owners[m.id] not in deleting]
        leader_id = 0
        for member in checked:
            if member.id in healthy_ids:
                with contextlib.suppress(EtcdError):
                    leader_id = (await client.endpoint_status(member.client_urls[0])).leader
                    break
    unhealthy = [
        f"{owners[member.id] or member.name or member.id_hex}: {health[member.id].error}"
        for member in checked
        if not health[member.id].healthy
    ]
    views = await asyncio.gather(
        *(_member_view(m.client_urls[0], options) for m in checked if m.id in healthy_ids)
    )
    disagreeing: list[str] = []
    known = [view for view in views if view is not None]
    if known:
        majority, _ = Counter(known).most_common(1)[0]
        disagreeing = [
            member.client_urls[0]
            for member, view in zip([m for m in checked if m.id in healthy_ids], views, strict=True)
            if view is not None and view != majority
        ]
    by_id = {member.id: member for member in members}
    names = tuple(owners[m.id] or m.name for m in members)
    facts = EtcdFacts(
        member_names=names,
        learners=tuple(owners[m.id] or m.name or m.id_hex for m in members if m.is_learner),
        disagreeing=tuple(disagreeing),
        alarms=tuple(f"{alarm.alarm}@{_member_label(alarm.member_id, owners, by_id)}" for alarm in alarms),
        unhealthy_voters=tuple(unhealthy),
    )
    return EtcdView(
        facts,
        leader=owners.get(leader_id),
        member_ids={name: member_id for member_id, name in owners.items() if name},
        client_urls={owners[m.id] or "": m.client_urls[0] for m in members if m.client_urls},
        voters={owners[m.id] or "" for m in voters} - {""},
        healthy={owners[i] or "" for i in healthy_ids} - {""},
        with_member={name for name in owners.values() if name},
    )
