"""A small async etcd client for membership, status and health: what the controllers and the provider need.

The controllers depend on the :class:`EtcdCluster` protocol; :class:`EtcdClient` implements it.
Here against a one-member etcd on loopback, started by the local provider's supervisor:

>>> import asyncio
>>> from controllers.etcd.client import EtcdClient, LearnerNotInSync
>>> from providers.localmachine.etcd_process import EtcdSupervisor
>>> async def main() -> None:
...     supervisor = EtcdSupervisor(tmp_path)
...     first = await supervisor.bootstrap("m0")
...     try:
...         async with EtcdClient([first.client_url]) as etcd:
...             for member in await etcd.member_list():
...                 print(member.name, member.is_learner)
...             added = await etcd.add_learner(["http://127.0.0.1:2390"])
...             print("start the new member with --initial-cluster", added.initial_cluster("m1"))
...             try:
...                 await etcd.promote(added.member.id)
...             except LearnerNotInSync:
...                 print("not caught up yet: try again later")
...     finally:
...         await supervisor.stop_all()
>>> asyncio.run(main())
m0 False
start the new member with --initial-cluster ...m1=http://127.0.0.1:2390...
not caught up yet: try again later

Why the JSON gateway and not a client library
---------------------------------------------
etcd serves its v3 gRPC API also as JSON over HTTP (the grpc-gateway, ``POST /v3/...``), on the
client port, with the same TLS. We use that over ``aiohttp`` (already a dependency) rather than a
gRPC library: ``aetcd``, the maintained asyncio client, models members without the learner flag
and has no promote call, so we would be calling its generated stubs directly and would pull in
``grpcio`` and ``protobuf`` for six unary calls. The gateway needs neither, and its error bodies
carry etcd's own messages, which we map to typed exceptions. Its JSON conventions: 64-bit integers
(member ids, raft index, db size) are strings, keys are base64, and fields equal to their zero
value are left out (a voter has no ``isLearner``; a member that has not started has no name).

Connections
-----------
Reads (member list, status, alarms, health and key reads) go over connections kept open between
requests, one per member, for :attr:`EtcdClientOptions.keepalive` seconds of idleness: a settled
ControlPlane is read every few seconds by two controllers, and a connection per request would cost
a TCP (and, with TLS, a handshake) for each. A member that is killed or restarted closes its
connections, which are then not reused; one that closes a kept connection just as a read is sent
makes that read fail with a dropped connection, and the read is sent again once on a connection of
its own (a read changes nothing, so sending it twice is harmless). Changes (member add, promote,
remove, leadership transfer, put) always go on a connection of their own, opened for them and
closed after: a change sent on a connection that breaks may or may not have been applied, and
that must not happen because a kept connection had gone stale.

Calls and errors
----------------
Every call has a timeout (:attr:`EtcdClientOptions.timeout`). A call goes to the endpoints in
order: when one cannot be reached, or is a learner that refuses the request, the next is tried;
when all fail the call raises :class:`Unavailable`. Read-only calls also move on after a timeout
or when etcd answers "unavailable"; membership changes do not, because that endpoint may have
applied the change, and repeating it elsewhere would fail or, for an add, add a second member.
etcd's refusals become subclasses of :class:`EtcdError`: :class:`LearnerNotInSync`,
:class:`MemberNotFound`, :class:`TooManyLearners`, :class:`NotALearner`, :class:`PeerURLExists`,
:class:`NotEnoughStartedMembers`, :class:`UnhealthyCluster`; anything else is a plain
:class:`EtcdError` with etcd's message and gRPC code.

Counted requests
----------------
Every HTTP request this client sends is counted in ``cpo_etcd_client_requests_total{controller,
method,result}`` (in the runtime's registry, so ``cpo run`` serves it on ``/metrics``):
``method`` is the gRPC method the gateway path stands for (``MemberList``, ``Range``,
``Status``...), ``result`` is ``ok``, ``refused`` (etcd answered with an error) or ``unreachable``
(no answer), and ``controller`` is the controller whose reconcile sent it (empty outside one).
``cpo_etcd_client_connections_opened_total{controller}`` counts the TCP connections opened for
them. Both say what etcd costs per ControlPlane, which grows with the number of ControlPlanes one
operator manages.

Health is a linearizable read (``/v3/kv/range`` of the key ``health``, as ``etcdctl endpoint
health`` does) sent to each endpoint separately: it succeeds only when that member can reach a
quorum and the leader. Learners refuse linearizable reads, so a learner's health check falls back
to a serializable read, which proves only that the learner answers. Alarms are not part of
health (``etcdctl endpoint health`` counts them): ask :meth:`EtcdClient.alarms` as well, as the
controllers' preflight does.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

import aiohttp
from prometheus_client import Counter

from runtime.jsoncodec import JSON
from runtime.log import KEY_CONTROLLER, current_context
from runtime.metrics import registry

DEFAULT_TIMEOUT = 5.0
DEFAULT_HEALTH_KEY = "health"
DEFAULT_KEEPALIVE = 120.0

# ---------------------------------------------------------------------------------------------- metrics

REQUESTS = Counter(
    "cpo_etcd_client_requests",
    "HTTP requests the operator's etcd client sent, by controller, gRPC method and result "
    "(ok, refused by etcd, or unreachable).",
    ["controller", "method", "result"],
    registry=registry,
)
CONNECTIONS_OPENED = Counter(
    "cpo_etcd_client_connections_opened",
    "TCP connections the operator's etcd client opened, by controller.",
    ["controller"],
    registry=registry,
)

# Gateway path -> the gRPC method it serves (etcdserverpb), the ``method`` label.
_METHODS: dict[str, str] = {
    "/v3/cluster/member/list": "MemberList",
    "/v3/cluster/member/add": "MemberAdd",
    "/v3/cluster/member/promote": "MemberPromote",
    "/v3/cluster/member/remove": "MemberRemove",
    "/v3/maintenance/status": "Status",
    "/v3/maintenance/transfer-leadership": "MoveLeader",
    "/v3/maintenance/alarm": "Alarm",
    "/v3/kv/put": "Put",
    "/v3/kv/range": "Range",
}


# Read-only paths: sent on kept connections, and sent again once when a kept connection broke.
# (``/v3/maintenance/alarm`` is read-only here: this client only ever sends it ``GET``.)
_READS = frozenset(
    {"/v3/cluster/member/list", "/v3/maintenance/status", "/v3/kv/range", "/v3/maintenance/alarm"}
)


def _controller() -> str:
    return str(current_context().get(KEY_CONTROLLER) or "")


async def _on_connection_created(
    session: aiohttp.ClientSession, context: Any, params: aiohttp.TraceConnectionCreateEndParams
) -> None:
    CONNECTIONS_OPENED.labels(_controller()).inc()


# ---------------------------------------------------------------------------------------------- errors


class EtcdError(Exception):
    """etcd refused a request (or none of its endpoints answered: :class:`Unavailable`).

    ``message`` is etcd's own text (``etcdserver: ...``), ``code`` the gRPC status code when etcd
    sent one, ``endpoint`` the endpoint that answered.
    """

    def __init__(self, message: str, *, code: int | None = None, endpoint: str | None = None) -> None:
        super().__init__(message if endpoint is None else f"{message} (from {endpoint})")
        self.message = message
        self.code = code
        self.endpoint = endpoint


class LearnerNotInSync(EtcdError):
    """Promotion refused: the learner has not caught up with the leader's log yet; retry later."""


class MemberNotFound(EtcdError):
    """No member has that id."""


class TooManyLearners(EtcdError):
    """The cluster already has as many learners as it allows (one, before etcd 3.6)."""


class NotALearner(EtcdError):
    """Promotion refused: the member is already a voter."""


class PeerURLExists(EtcdError):
    """Member add refused: a member already has one of these peer URLs.

    etcd says "Peer URLs already exists", or "member ID already exist" when the same URLs are added
    twice within one second (it derives a new member's id from its peer URLs and the time).
    """


class NotEnoughStartedMembers(EtcdError):
    """The change would leave too few started voters for a quorum, so etcd refused it."""


class UnhealthyCluster(EtcdError):
    """The change would make the cluster unhealthy (etcd's strict reconfiguration check)."""


class NotSupportedForLearner(EtcdError):
    """A learner was asked for something only voters serve (a linearizable read, a member change)."""


class Unavailable(EtcdError):
    """No endpoint answered in time, or etcd said it is unavailable; ``errors`` has each failure."""

    def __init__(
        self,
        message: str,
        *,
        errors: Mapping[str, str] | None = None,
        code: int | None = None,
        endpoint: str | None = None,
    ) -> None:
        super().__init__(message, code=code, endpoint=endpoint)
        self.errors = dict(errors or {})
        if self.errors and endpoint is None:
            details = "; ".join(f"{where}: {error}" for where, error in self.errors.items())
            self.args = (f"{message}: {details}",)


# etcd's messages (server/etcdserver/api/v3rpc/rpctypes) → our types. Matched by substring because
# the gateway sends the message with the "etcdserver: " prefix and newer releases add detail.
_ERRORS_BY_MESSAGE: tuple[tuple[str, type[EtcdError]], ...] = (
    ("can only promote a learner member which is in sync with leader", LearnerNotInSync),
    ("can only promote a learner member", NotALearner),
    ("member not found", MemberNotFound),
    ("too many learner members in cluster", TooManyLearners),
    ("peer urls already exists", PeerURLExists),
    ("member id already exist", PeerURLExists),
    ("not enough started members", NotEnoughStartedMembers),
    ("unhealthy cluster", UnhealthyCluster),
    ("rpc not supported for learner", NotSupportedForLearner),
)
_GRPC_UNAVAILABLE = 14
_GRPC_DEADLINE_EXCEEDED = 4


def error_from_response(status: int, body: Any, endpoint: str) -> EtcdError:
    """The typed exception for a gateway error answer (HTTP ``status``, decoded JSON ``body``)."""
    message = ""
    code: int | None = None
    if isinstance(body, dict):
        message = str(body.get("message") or body.get("error") or "")
        raw_code = body.get("code")
        code = raw_code if isinstance(raw_code, int) else None
    if not message:
        message = f"HTTP {status} without an etcd error message"
    lowered = message.lower()
    for needle, error_type in _ERRORS_BY_MESSAGE:
        if needle in lowered:
            return error_type(message, code=code, endpoint=endpoint)
    if code in (_GRPC_UNAVAILABLE, _GRPC_DEADLINE_EXCEEDED) or status == 503:
        return Unavailable(message, errors={endpoint: message}, code=code, endpoint=endpoint)
    return EtcdError(message, code=code, endpoint=endpoint)


# ---------------------------------------------------------------------------------------------- types


def _uint(value: Any) -> int:
    # The gateway writes uint64/int64 fields as JSON strings and leaves out zero values.
    if value is None or value == "":
        return 0
    return int(value)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


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
            id=_uint(raw.get("ID")),
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
            member_id=_uint(header.get("member_id")),
            leader=_uint(raw.get("leader")),
            raft_index=_uint(raw.get("raftIndex")),
            raft_term=_uint(raw.get("raftTerm")),
            raft_applied_index=_uint(raw.get("raftAppliedIndex")),
            db_size=_uint(raw.get("dbSize")),
            db_size_in_use=_uint(raw.get("dbSizeInUse")),
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
    """The endpoint is a learner, so the read was serializable (see the module docstring)."""


# ---------------------------------------------------------------------------------------------- the interface


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


# ---------------------------------------------------------------------------------------------- options


@dataclass
class EtcdClientOptions:
    """How :class:`EtcdClient` connects. ``None`` means "use the default" named per field."""

    timeout: float | None = None
    """Seconds one request to one endpoint may take. Defaults to 5."""

    ca_file: Path | str | None = None
    """CA bundle that signed the members' serving certificates. Defaults to none: the system CAs
    for ``https`` endpoints."""

    cert_file: Path | str | None = None
    """Client certificate for mutual TLS (needs ``key_file``). Defaults to none: no client certificate."""

    key_file: Path | str | None = None
    """Private key of ``cert_file``. Defaults to none."""

    ssl_context: ssl.SSLContext | None = None
    """A ready TLS context; replaces the three files above. Defaults to one built from them."""

    health_key: str | None = None
    """The key the health check reads. Defaults to ``"health"``, as etcdctl does."""

    keepalive: float | None = None
    """Seconds an idle connection to a member stays open for the next read. Defaults to 120:
    longer than the controllers' resync periods (15 s, 60 s), so the passes over a settled
    ControlPlane reuse one connection per member instead of opening one per request. 0 opens a
    connection per read as well."""

    def with_defaults(self) -> ResolvedEtcdClientOptions:
        """Fill in every unset field and check them; the one place where the defaults above are applied."""
        timeout = DEFAULT_TIMEOUT if self.timeout is None else float(self.timeout)
        if timeout <= 0:
            raise ValueError(f"EtcdClientOptions.timeout must be positive seconds, got {self.timeout!r}")
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError(
                "EtcdClientOptions: set both cert_file and key_file for a client certificate, or neither"
            )
        context = self.ssl_context
        if context is None and (self.ca_file is not None or self.cert_file is not None):
            for label, path in (
                ("ca_file", self.ca_file),
                ("cert_file", self.cert_file),
                ("key_file", self.key_file),
            ):
                if path is not None and not Path(path).is_file():
                    raise ValueError(f"EtcdClientOptions.{label}: {path} is not a file")
            context = ssl.create_default_context(
                cafile=str(self.ca_file) if self.ca_file is not None else None
            )
            if self.cert_file is not None and self.key_file is not None:
                context.load_cert_chain(str(self.cert_file), str(self.key_file))
        keepalive = DEFAULT_KEEPALIVE if self.keepalive is None else float(self.keepalive)
        if keepalive < 0:
            raise ValueError(f"EtcdClientOptions.keepalive must be 0 or more seconds, got {self.keepalive!r}")
        return ResolvedEtcdClientOptions(
            timeout=timeout,
            ssl_context=context,
            health_key=DEFAULT_HEALTH_KEY if self.health_key is None else self.health_key,
            keepalive=keepalive,
        )


@dataclass(frozen=True, slots=True)
class ResolvedEtcdClientOptions:
    """:class:`EtcdClientOptions` with every default applied."""

    timeout: float
    ssl_context: ssl.SSLContext | None
    health_key: str
    keepalive: float


def normalize_endpoint(endpoint: str) -> str:
    """``endpoint`` as ``scheme://host:port``; raises ``ValueError`` saying what is wrong with it."""
    text = endpoint.strip().rstrip("/")
    if "://" not in text:
        raise ValueError(f"etcd endpoint {endpoint!r} needs a scheme: write http://{text} or https://{text}")
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise ValueError(
            f"etcd endpoint {endpoint!r}: the scheme must be http or https, not {parts.scheme!r}"
        )
    if not parts.hostname:
        raise ValueError(f"etcd endpoint {endpoint!r} has no host")
    try:
        port = parts.port
    except ValueError as err:
        raise ValueError(f"etcd endpoint {endpoint!r}: {err}") from err
    if port is None:
        raise ValueError(f"etcd endpoint {endpoint!r} has no port (etcd's client port is usually 2379)")
    if parts.path:
        raise ValueError(f"etcd endpoint {endpoint!r} must not have a path")
    return f"{parts.scheme}://{parts.netloc}"


# ---------------------------------------------------------------------------------------------- the client


class _Unreachable(Exception):
    """One endpoint did not answer (connection refused, reset, timed out); try the next one.

    ``maybe_sent`` is false only when no connection was made, so the request surely was not applied.
    ``dropped`` says the connection was closed or reset under the request (not a timeout).
    """

    def __init__(self, message: str, *, maybe_sent: bool, dropped: bool = False) -> None:
        super().__init__(message)
        self.maybe_sent = maybe_sent
        self.dropped = dropped
        """The connection broke under the request (closed or reset by the member), no timeout."""


class EtcdClient:
    """:class:`EtcdCluster` over etcd's v3 JSON gateway (see the module docstring).

    Use it as an async context manager, or call :meth:`close` when done. It opens its HTTP session
    on first use, in the running event loop.
    """

    def __init__(self, endpoints: Sequence[str], options: EtcdClientOptions | None = None) -> None:
        if isinstance(endpoints, str):
            raise TypeError("EtcdClient takes a list of endpoints, not one string: write [endpoint]")
        if not endpoints:
            raise ValueError("EtcdClient needs at least one endpoint, such as http://127.0.0.1:2379")
        self.endpoints: tuple[str, ...] = tuple(normalize_endpoint(endpoint) for endpoint in endpoints)
        self.options = (options or EtcdClientOptions()).with_defaults()
        self._session: aiohttp.ClientSession | None = None
        """Reads, on connections kept open between requests."""
        self._fresh_session: aiohttp.ClientSession | None = None
        """Changes (and a read whose kept connection broke), on a connection of their own."""

    def set_endpoints(self, endpoints: Sequence[str]) -> None:
        """Send the next requests to ``endpoints`` (in this order); the HTTP session is kept."""
        if isinstance(endpoints, str) or not endpoints:
            raise ValueError("EtcdClient needs a non-empty list of endpoints")
        self.endpoints = tuple(normalize_endpoint(endpoint) for endpoint in endpoints)

    async def __aenter__(self) -> EtcdClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        sessions, self._session, self._fresh_session = (self._session, self._fresh_session), None, None
        for session in sessions:
            if session is not None:
                await session.close()

    def _http(self, *, kept: bool) -> aiohttp.ClientSession:
        """The session for reads on kept connections (``kept``), or for a connection per request."""
        session = self._session if kept else self._fresh_session
        if session is None or session.closed:
            tracing = aiohttp.TraceConfig()
            tracing.on_connection_create_end.append(_on_connection_created)
            connector = (
                aiohttp.TCPConnector(keepalive_timeout=self.options.keepalive)
                if kept
                else aiohttp.TCPConnector(force_close=True)
            )
            session = aiohttp.ClientSession(connector=connector, trace_configs=[tracing])
            if kept:
                self._session = session
            else:
                self._fresh_session = session
        return session

    # -- transport

    async def _post_one(self, endpoint: str, path: str, body: JSON) -> JSON:
        """POST to one endpoint; raises :class:`_Unreachable` or the typed :class:`EtcdError`."""
        result = "unreachable"
        try:
            kept = path in _READS and self.options.keepalive > 0
            try:
                payload = await self._send(endpoint, path, body, kept=kept)
            except _Unreachable as err:
                # A kept connection the member closed as we sent (it restarted, or dropped idle
                # connections): the read was not served, so it is safe to send again, once, on a
                # connection of its own.
                if not (kept and err.dropped):
                    raise
                payload = await self._send(endpoint, path, body, kept=False)
            result = "ok"
            return payload
        except EtcdError:
            result = "refused"
            raise
        finally:
            REQUESTS.labels(_controller(), _METHODS.get(path, path), result).inc()

    async def _send(self, endpoint: str, path: str, body: JSON, *, kept: bool) -> JSON:
        ssl_arg: ssl.SSLContext | bool = (
            self.options.ssl_context if self.options.ssl_context is not None else True
        )
        try:
            async with asyncio.timeout(self.options.timeout):
                async with self._http(kept=kept).post(
                    f"{endpoint}{path}", json=body, ssl=ssl_arg if endpoint.startswith("https") else False
                ) as response:
                    try:
                        payload: Any = await response.json(content_type=None)
                    except ValueError:
                        payload = None
                    if response.status != 200:
                        raise error_from_response(response.status, payload, endpoint)
                    if not isinstance(payload, dict):
                        raise EtcdError(
                            f"{path} answered with {payload!r}, not a JSON object", endpoint=endpoint
                        )
                    return payload
        except TimeoutError as err:
            raise _Unreachable(f"no answer within {self.options.timeout:g}s", maybe_sent=True) from err
        except aiohttp.ClientConnectorError as err:
            raise _Unreachable(f"cannot connect: {err.os_error}", maybe_sent=False) from err
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as err:
            raise _Unreachable(f"{type(err).__name__}: {err}", maybe_sent=True, dropped=True) from err
        except (aiohttp.ClientError, OSError) as err:
            raise _Unreachable(f"{type(err).__name__}: {err}", maybe_sent=True) from err

    async def _post(self, path: str, body: JSON, *, mutating: bool = False) -> JSON:
        """POST to the first endpoint that answers (see the module docstring for the rules)."""
        failures: dict[str, str] = {}
        for endpoint in self.endpoints:
            try:
                return await self._post_one(endpoint, path, body)
            except _Unreachable as err:
                failures[endpoint] = str(err)
                if mutating and err.maybe_sent:
                    raise Unavailable(
                        f"{path} got no answer; it may or may not have been applied", errors=failures
                    ) from err
            except NotSupportedForLearner as err:
                failures[endpoint] = err.message
            except Unavailable as err:
                # etcd's "request timed out" or "leader changed": a change may still be applied.
                if mutating:
                    raise
                failures[endpoint] = err.message
        raise Unavailable(f"no etcd endpoint could serve {path}", errors=failures)

    # -- EtcdCluster

    async def member_list(self) -> list[Member]:
        payload = await self._post("/v3/cluster/member/list", {"linearizable": True})
        return [Member.from_json(raw) for raw in payload.get("members") or ()]

    async def member_list_at(self, endpoint: str) -> list[Member]:
        """The member list as the member at ``endpoint`` itself reports it (no other is tried)."""
        normalized = normalize_endpoint(endpoint)
        try:
            payload = await self._post_one(normalized, "/v3/cluster/member/list", {"linearizable": True})
        except _Unreachable as err:
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
        except _Unreachable as err:
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
        except _Unreachable as err:
            raise Unavailable("leadership not moved", errors={normalized: str(err)}) from err

    async def alarms(self) -> list[Alarm]:
        payload = await self._post("/v3/maintenance/alarm", {"action": "GET"})
        return [
            Alarm(member_id=_uint(raw.get("memberID")), alarm=str(raw.get("alarm") or "NONE"))
            for raw in payload.get("alarms") or ()
        ]

    async def put(self, key: str, value: str) -> int:
        """Write ``key`` = ``value``; returns the revision etcd acknowledged it at.

        Raises :class:`Unavailable` when no member answered, or when one may have applied the write
        without answering (then the write is neither acknowledged nor known to be lost).
        """
        body = {"key": _b64(key), "value": _b64(value)}
        payload = await self._post("/v3/kv/put", body, mutating=True)
        return _uint((payload.get("header") or {}).get("revision"))

    async def get(self, key: str) -> tuple[str, int] | None:
        """A linearizable read of ``key``: its value and the revision it was last written at, or None."""
        payload = await self._post("/v3/kv/range", {"key": _b64(key)})
        for raw in payload.get("kvs") or ():
            value = base64.b64decode(raw.get("value") or "").decode()
            return value, _uint(raw.get("mod_revision"))
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
            revision = revision or _uint((payload.get("header") or {}).get("revision"))
            kvs = payload.get("kvs") or ()
            for raw in kvs:
                key = base64.b64decode(raw.get("key") or "").decode()
                value = base64.b64decode(raw.get("value") or "").decode()
                found[key] = (value, _uint(raw.get("mod_revision")))
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
        except (_Unreachable, EtcdError) as err:
            message = err.message if isinstance(err, EtcdError) else str(err)
            return EndpointHealth(endpoint, False, time.monotonic() - started, message, learner)
        return EndpointHealth(endpoint, True, time.monotonic() - started, None, learner)

    async def health(self, endpoints: Sequence[str] | None = None) -> list[EndpointHealth]:
        targets = self.endpoints if endpoints is None else tuple(normalize_endpoint(e) for e in endpoints)
        return list(await asyncio.gather(*(self._health_one(endpoint) for endpoint in targets)))


__all__ = [
    "Alarm",
    "EndpointHealth",
    "EndpointStatus",
    "EtcdClient",
    "EtcdClientOptions",
    "EtcdCluster",
    "EtcdError",
    "LearnerNotInSync",
    "Member",
    "MemberAddResult",
    "MemberNotFound",
    "NotALearner",
    "NotEnoughStartedMembers",
    "NotSupportedForLearner",
    "PeerURLExists",
    "ResolvedEtcdClientOptions",
    "TooManyLearners",
    "Unavailable",
    "UnhealthyCluster",
    "error_from_response",
    "normalize_endpoint",
]
