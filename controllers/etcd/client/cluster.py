"""The etcd calls: the :class:`EtcdCluster` protocol the controllers depend on, and :class:`EtcdClient`.

:class:`EtcdClient` is membership (list, add, promote, remove), maintenance (status, leadership
transfer, alarms), key reads and writes, and health, each one request (or one per endpoint for
health) over :class:`~controllers.etcd.client.transport.GatewayTransport`.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from runtime.jsoncodec import JSON

from .errors import EtcdError, NotSupportedForLearner, Unavailable
from .options import normalize_endpoint
from .results import Alarm, EndpointHealth, EndpointStatus, Member, MemberAddResult, gateway_int
from .transport import EndpointUnreachable, GatewayTransport


@runtime_checkable
class EtcdCluster(Protocol):
    """The etcd operations the controllers and the provider use; :class:`EtcdClient` implements it."""

    async def member_list(self) -> list[Member]:
        """Every member, voters and learners (a linearizable read: the cluster's current view)."""
        ...

    async def add_learner(self, peer_urls: Sequence[str]) -> MemberAddResult:
        """Add a non-voting member that will replicate the log until promoted."""
        ...

    async def add_voter(self, peer_urls: Sequence[str]) -> MemberAddResult:
        """Add a voting member at once (raises the quorum before it has started: prefer learners)."""
        ...

    async def promote(self, member_id: int) -> list[Member]:
        """Make a learner a voter; raises :class:`LearnerNotInSync` until it has caught up."""
        ...

    async def remove(self, member_id: int) -> list[Member]:
        """Remove a member; returns the member list afterwards."""
        ...

    async def endpoint_status(self, endpoint: str) -> EndpointStatus:
        """The status of the member serving ``endpoint``."""
        ...

    async def alarms(self) -> list[Alarm]:
        """The active alarms of the whole cluster."""
        ...

    async def health(self, endpoints: Sequence[str] | None = None) -> list[EndpointHealth]:
        """A health read on each of ``endpoints`` (default: the client's); never raises for one endpoint."""
        ...


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class EtcdClient(GatewayTransport):
    """:class:`EtcdCluster` over etcd's v3 JSON gateway (see the package docstring).

    Use it as an async context manager, or call :meth:`close` when done. It opens its HTTP session
    on first use, in the running event loop.
    """

    async def member_list(self) -> list[Member]:
        payload = await self._post("/v3/cluster/member/list", {"linearizable": True})
        return [Member.from_json(raw) for raw in payload.get("members") or ()]

    async def member_list_at(self, endpoint: str) -> list[Member]:
        """The member list as the member at ``endpoint`` itself reports it (no other is tried)."""
        normalized = normalize_endpoint(endpoint)
        try:
            payload = await self._post_one(normalized, "/v3/cluster/member/list", {"linearizable": True})
        except EndpointUnreachable as err:
            raise Unavailable("no member list", errors={normalized: str(err)}) from err
        return [Member.from_json(raw) for raw in payload.get("members") or ()]

    async def _member_add(self, peer_urls: Sequence[str], *, learner: bool) -> MemberAddResult:
        if isinstance(peer_urls, str):
            raise TypeError("peer_urls is a list of URLs, not one string: write [url]")
        if not peer_urls:
            raise ValueError("a new member needs at least one peer URL")
        payload = await self._post(
            "/v3/cluster/member/add", {"peerURLs": list(peer_urls), "isLearner": learner}, mutating=True
        )
        return MemberAddResult(
            member=Member.from_json(payload.get("member") or {}),
            members=tuple(Member.from_json(raw) for raw in payload.get("members") or ()),
        )

    async def add_learner(self, peer_urls: Sequence[str]) -> MemberAddResult:
        return await self._member_add(peer_urls, learner=True)

    async def add_voter(self, peer_urls: Sequence[str]) -> MemberAddResult:
        return await self._member_add(peer_urls, learner=False)

    async def promote(self, member_id: int) -> list[Member]:
        payload = await self._post("/v3/cluster/member/promote", {"ID": str(member_id)}, mutating=True)
        return [Member.from_json(raw) for raw in payload.get("members") or ()]

    async def remove(self, member_id: int) -> list[Member]:
        payload = await self._post("/v3/cluster/member/remove", {"ID": str(member_id)}, mutating=True)
        return [Member.from_json(raw) for raw in payload.get("members") or ()]

    async def endpoint_status(self, endpoint: str) -> EndpointStatus:
        normalized = normalize_endpoint(endpoint)
        try:
            payload = await self._post_one(normalized, "/v3/maintenance/status", {})
        except EndpointUnreachable as err:
            raise Unavailable("no status", errors={normalized: str(err)}) from err
        return EndpointStatus.from_json(normalized, payload)

    async def move_leader(self, leader_endpoint: str, target_id: int) -> None:
        """Hand leadership to voter ``target_id``; ``leader_endpoint`` must be the current leader's.

        Removing the leader's member forces an election (about one election timeout without a
        leader); moving leadership first avoids it, as kubeadm's control plane does before a
        scale-in. etcd refuses the request on a follower.
        """
        normalized = normalize_endpoint(leader_endpoint)
        try:
            await self._post_one(
                normalized, "/v3/maintenance/transfer-leadership", {"targetID": str(target_id)}
            )
        except EndpointUnreachable as err:
            raise Unavailable("leadership not moved", errors={normalized: str(err)}) from err

    async def alarms(self) -> list[Alarm]:
        payload = await self._post("/v3/maintenance/alarm", {"action": "GET"})
        return [
            Alarm(member_id=gateway_int(raw.get("memberID")), alarm=str(raw.get("alarm") or "NONE"))
            for raw in payload.get("alarms") or ()
        ]

    async def put(self, key: str, value: str) -> int:
        """Write ``key`` = ``value``; returns the revision etcd acknowledged it at.

        Raises :class:`Unavailable` when no member answered, or when one may have applied the write
        without answering (then the write is neither acknowledged nor known to be lost).
        """
        body = {"key": _b64(key), "value": _b64(value)}
        payload = await self._post("/v3/kv/put", body, mutating=True)
        return gateway_int((payload.get("header") or {}).get("revision"))

    async def get(self, key: str) -> tuple[str, int] | None:
        """A linearizable read of ``key``: its value and the revision it was last written at, or None."""
        payload = await self._post("/v3/kv/range", {"key": _b64(key)})
        for raw in payload.get("kvs") or ():
            value = base64.b64decode(raw.get("value") or "").decode()
            return value, gateway_int(raw.get("mod_revision"))
        return None

    async def get_prefix(self, prefix: str, *, page: int = 1000) -> dict[str, tuple[str, int]]:
        """Linearizable reads of every key under ``prefix``, ``page`` keys a request: value and
        last-write revision by key (all pages at the revision of the first, so the view is one)."""
        end = _b64(prefix[:-1] + chr(ord(prefix[-1]) + 1))
        found: dict[str, tuple[str, int]] = {}
        start, revision = _b64(prefix), 0
        while True:
            body: JSON = {"key": start, "range_end": end, "limit": str(page)}
            if revision:
                body["revision"] = str(revision)
            payload = await self._post("/v3/kv/range", body)
            revision = revision or gateway_int((payload.get("header") or {}).get("revision"))
            kvs = payload.get("kvs") or ()
            for raw in kvs:
                key = base64.b64decode(raw.get("key") or "").decode()
                value = base64.b64decode(raw.get("value") or "").decode()
                found[key] = (value, gateway_int(raw.get("mod_revision")))
            if not payload.get("more") or not kvs:
                return found
            start = base64.b64encode(base64.b64decode(kvs[-1]["key"]) + b"\x00").decode()

    async def _health_one(self, endpoint: str) -> EndpointHealth:
        key = base64.b64encode(self.options.health_key.encode()).decode()
        started = time.monotonic()
        learner = False
        try:
            try:
                await self._post_one(endpoint, "/v3/kv/range", {"key": key})
            except NotSupportedForLearner:
                learner = True
                await self._post_one(endpoint, "/v3/kv/range", {"key": key, "serializable": True})
        except (EndpointUnreachable, EtcdError) as err:
            message = err.message if isinstance(err, EtcdError) else str(err)
            return EndpointHealth(endpoint, False, time.monotonic() - started, message, learner)
        return EndpointHealth(endpoint, True, time.monotonic() - started, None, learner)

    async def health(self, endpoints: Sequence[str] | None = None) -> list[EndpointHealth]:
        targets = self.endpoints if endpoints is None else tuple(normalize_endpoint(e) for e in endpoints)
        return list(await asyncio.gather(*(self._health_one(endpoint) for endpoint in targets)))
