"""What the etcd client's calls return: members, an add's result, a member's status, alarms, health.

Each is decoded from the gateway's JSON (``from_json``), whose conventions are in the package
docstring (:mod:`controllers.etcd.client`): 64-bit integers as strings (:func:`gateway_int`),
fields equal to their zero value left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def gateway_int(value: Any) -> int:
    """A uint64/int64 field of a gateway answer: the gateway writes them as JSON strings and leaves
    out zero values."""
    if value is None or value == "":
        return 0
    return int(value)


def _urls(value: Any) -> tuple[str, ...]:
    return tuple(str(url) for url in value) if isinstance(value, list) else ()


@dataclass(frozen=True, slots=True)
class Member:
    """One etcd member as the member list reports it."""

    id: int
    """The member id (etcdctl prints it in hex, see :attr:`id_hex`)."""
    name: str
    """Its ``--name``; empty until a member that was added has started and published itself."""
    peer_urls: tuple[str, ...]
    client_urls: tuple[str, ...]
    """Empty until the member has started."""
    is_learner: bool

    @property
    def id_hex(self) -> str:
        return f"{self.id:x}"

    @property
    def started(self) -> bool:
        """Whether the member has started and published its name and client URLs."""
        return bool(self.name)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Member:
        return cls(
            id=gateway_int(raw.get("ID")),
            name=str(raw.get("name") or ""),
            peer_urls=_urls(raw.get("peerURLs")),
            client_urls=_urls(raw.get("clientURLs")),
            is_learner=bool(raw.get("isLearner", False)),
        )


@dataclass(frozen=True, slots=True)
class MemberAddResult:
    """The added member and the member list right after the add."""

    member: Member
    members: tuple[Member, ...]

    def initial_cluster(self, name: str) -> str:
        """``--initial-cluster`` for the new member started as ``name`` (as ``etcdctl member add`` prints).

        Every member's ``name=peer-url`` pair, the new member's under ``name``. A member that was
        added but has not started has no name yet and appears as ``=peer-url``, as with etcdctl.
        """
        pairs: list[str] = []
        for member in self.members:
            member_name = name if member.id == self.member.id else member.name
            pairs.extend(f"{member_name}={url}" for url in member.peer_urls)
        return ",".join(pairs)


@dataclass(frozen=True, slots=True)
class EndpointStatus:
    """What one member says about itself (``/v3/maintenance/status``)."""

    endpoint: str
    member_id: int
    """The id of the member serving ``endpoint``."""
    leader: int
    """The member id of the leader it follows; 0 when it knows no leader."""
    raft_index: int
    raft_term: int
    raft_applied_index: int
    db_size: int
    """Bytes the backend file takes."""
    db_size_in_use: int
    version: str
    is_learner: bool
    errors: tuple[str, ...]
    """Errors etcd reports about itself (for example an active alarm)."""

    @property
    def is_leader(self) -> bool:
        return self.member_id != 0 and self.member_id == self.leader

    @classmethod
    def from_json(cls, endpoint: str, raw: Mapping[str, Any]) -> EndpointStatus:
        header = raw.get("header") or {}
        return cls(
            endpoint=endpoint,
            member_id=gateway_int(header.get("member_id")),
            leader=gateway_int(raw.get("leader")),
            raft_index=gateway_int(raw.get("raftIndex")),
            raft_term=gateway_int(raw.get("raftTerm")),
            raft_applied_index=gateway_int(raw.get("raftAppliedIndex")),
            db_size=gateway_int(raw.get("dbSize")),
            db_size_in_use=gateway_int(raw.get("dbSizeInUse")),
            version=str(raw.get("version") or ""),
            is_learner=bool(raw.get("isLearner", False)),
            errors=tuple(str(error) for error in raw.get("errors") or ()),
        )


@dataclass(frozen=True, slots=True)
class Alarm:
    """An active alarm: ``NOSPACE`` (backend quota exceeded) or ``CORRUPT`` (hash check failed)."""

    member_id: int
    alarm: str


@dataclass(frozen=True, slots=True)
class EndpointHealth:
    """The result of one endpoint's health read."""

    endpoint: str
    healthy: bool
    took: float
    """Seconds the read took (or until it failed)."""
    error: str | None
    """Why it is unhealthy; ``None`` when healthy."""
    learner: bool = False
    """The endpoint is a learner, so the read was serializable (see the package docstring)."""
