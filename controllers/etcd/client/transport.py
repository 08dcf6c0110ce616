"""The etcd client's transport: HTTP to etcd's JSON gateway, which endpoint, which connection, and counting.

:class:`GatewayTransport` sends a request to the endpoints in order and decides when to move to the
next (a change that may have been applied never moves on); reads go on connections kept open
between requests, changes on a connection of their own; every request and every connection opened
is counted in the runtime's metrics registry. The package docstring
(:mod:`controllers.etcd.client`) gives the rules and why.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self

import aiohttp
from prometheus_client import Counter

from runtime.jsoncodec import JSON
from runtime.log import KEY_CONTROLLER, current_context
from runtime.metrics import registry

from .errors import EtcdError, NotSupportedForLearner, Unavailable, error_from_response
from .options import EtcdClientOptions, normalize_endpoint

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


class EndpointUnreachable(Exception):
    """One endpoint did not answer (connection refused, reset, timed out); try the next one.

    ``maybe_sent`` is false only when no connection was made, so the request surely was not applied.
    ``dropped`` says the connection was closed or reset under the request (not a timeout).
    """

    def __init__(self, message: str, *, maybe_sent: bool, dropped: bool = False) -> None:
        super().__init__(message)
        self.maybe_sent = maybe_sent
        self.dropped = dropped
        """The connection broke under the request (closed or reset by the member), no timeout."""


class GatewayTransport:
    """Requests to etcd's v3 JSON gateway at :attr:`endpoints`, by the rules of the package docstring.

    :meth:`_post` sends a request to the first endpoint that serves it, :meth:`_post_one` to one
    endpoint. :class:`~controllers.etcd.client.cluster.EtcdClient` builds the etcd calls on them.
    The HTTP sessions are opened on first use, in the running event loop; :meth:`close` closes them.
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

    async def __aenter__(self) -> Self:
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

    async def _post_one(self, endpoint: str, path: str, body: JSON) -> JSON:
        """POST to one endpoint; raises :class:`EndpointUnreachable` or the typed :class:`EtcdError`."""
        result = "unreachable"
        try:
            kept = path in _READS and self.options.keepalive > 0
            try:
                payload = await self._send(endpoint, path, body, kept=kept)
            except EndpointUnreachable as err:
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
            raise EndpointUnreachable(f"no answer within {self.options.timeout:g}s", maybe_sent=True) from err
        except aiohttp.ClientConnectorError as err:
            raise EndpointUnreachable(f"cannot connect: {err.os_error}", maybe_sent=False) from err
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as err:
            raise EndpointUnreachable(f"{type(err).__name__}: {err}", maybe_sent=True, dropped=True) from err
        except (aiohttp.ClientError, OSError) as err:
            raise EndpointUnreachable(f"{type(err).__name__}: {err}", maybe_sent=True) from err

    async def _post(self, path: str, body: JSON, *, mutating: bool = False) -> JSON:
        """POST to the first endpoint that answers (see the module docstring for the rules)."""
        failures: dict[str, str] = {}
        for endpoint in self.endpoints:
            try:
                return await self._post_one(endpoint, path, body)
            except EndpointUnreachable as err:
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
