"""The client's transport: one HTTPS endpoint, its credentials, rate limiting, retries and metrics."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self
from urllib.parse import urlencode, urlsplit

import aiohttp

from .. import jsoncodec, metrics
from .._kube_credentials import (
    Configuration,
    load_kube_config_from_dict,
)
from ..errors import APIError, from_status
from ..jsoncodec import JSON
from .options import ClientOptions
from .watchstream import OnEvent, _WatchProtocol, request_bytes

RETRIABLE_STATUSES = frozenset({429, 503})

# The wait between retries; a module attribute so tests can observe delays without sleeping.
_sleep = asyncio.sleep


class _TokenBucket:
    """client-go's token bucket: starts full with ``burst`` tokens, refills at ``qps``."""

    def __init__(self, qps: float, burst: int) -> None:
        self._qps = qps
        self._burst = max(1, burst)
        self._tokens = float(self._burst)
        self._last = time.monotonic()
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        async with self._lock:
            now = time.monotonic()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now
            if self._tokens < 1:
                await asyncio.sleep((1 - self._tokens) / self._qps)
                self._last = time.monotonic()
                self._tokens = 1.0
            self._tokens -= 1


@dataclass
class _Tries:
    """What one request has used of its second chances (see :meth:`Transport._again`)."""

    retries: int = 0
    refreshed: bool = False


class _Connection:
    """Everything one HTTPS endpoint needs: base URL, TLS, credentials (refreshable)."""

    def __init__(self, configuration: Configuration, kubeconfig: JSON | None, context: str | None) -> None:
        self.configuration = configuration
        self.kubeconfig = kubeconfig
        self.context = context
        self.base_url = str(configuration.host).rstrip("/")
        self.host = urlsplit(self.base_url).netloc
        self.server_hostname: str | None = configuration.tls_server_name or None

    def ssl_context(self) -> ssl.SSLContext | bool:
        if not self.base_url.startswith("https"):
            return False
        context = ssl.create_default_context(cafile=self.configuration.ssl_ca_cert)
        if self.configuration.cert_file:
            context.load_cert_chain(self.configuration.cert_file, keyfile=self.configuration.key_file)
        if not self.configuration.verify_ssl:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    async def authorization(self) -> str | None:
        # Runs the in-cluster loader's refresh hook, which rereads a rotated service-account token.
        value = await self.configuration.get_api_key_with_prefix("BearerToken")
        if value:
            return str(value)
        if self.configuration.username or self.configuration.password:
            return str(self.configuration.get_basic_auth_token())
        return None

    async def refresh(self) -> bool:
        """Reload kubeconfig credentials (reruns an exec plugin); True when something may have changed."""
        if self.kubeconfig is None:
            return False
        fresh = Configuration()
        await load_kube_config_from_dict(
            json.loads(json.dumps(self.kubeconfig)), context=self.context, client_configuration=fresh
        )
        changed = fresh.api_key.get("BearerToken") != self.configuration.api_key.get("BearerToken")
        self.configuration.api_key = fresh.api_key
        return changed


class Transport:
    """One API server endpoint over one aiohttp session: credentials, TLS, client-side rate limiting,
    429/503 retries and the REST metrics. :class:`~runtime.client.Client` adds the Kubernetes verbs."""

    def __init__(
        self,
        configuration: Configuration,
        options: ClientOptions | None = None,
        *,
        kubeconfig: JSON | None = None,
        context: str | None = None,
    ) -> None:
        """LOW LEVEL: prefer the client's ``from_*`` constructors, which load credentials for you.

        Must be called inside a running event loop (the aiohttp session binds to it).
        """
        self.options = (options or ClientOptions()).with_defaults()
        self._connection = _Connection(configuration, kubeconfig, context)
        self._ssl = self._connection.ssl_context()
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self._ssl, limit=100),
            # Watch events and large lists can exceed aiohttp's default 64 KiB read buffer.
            read_bufsize=2**21,
        )
        self._limiter = (
            _TokenBucket(self.options.qps, self.options.burst) if self.options.qps is not None else None
        )
        host = self._connection.host
        # Label children looked up once per client: a labels() lookup costs more than the update.
        self._duration_by_method = {
            method: metrics.rest_client_request_duration_seconds.labels(method, host)
            for method in ("GET", "POST", "PUT", "PATCH", "DELETE")
        }
        self._requests_by_code: dict[tuple[str, str], Any] = {}

    async def close(self) -> None:
        await self._session.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def host(self) -> str:
        """``host:port`` of the API server, the ``host`` label of the REST metrics."""
        return self._connection.host

    async def request_json(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> JSON:
        """LOW LEVEL: one request with retries and metrics; the decoded JSON answer or a typed error."""
        data = None if body is None else jsoncodec.dumps(body)
        timeout = aiohttp.ClientTimeout(total=self.options.timeout)
        response = await self._send(
            method, path, query=query, data=data, content_type=content_type, client_timeout=timeout
        )
        try:
            if response.status >= 300:
                raise await _error_from_response(response)
            payload = await response.read()
        finally:
            response.release()
        decoded = jsoncodec.loads(payload) if payload else {}
        if not isinstance(decoded, dict):
            raise APIError(response.status, "", "the answer is not a JSON object", body=decoded)
        return decoded

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        data: bytes | None = None,
        content_type: str = "application/json",
        client_timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        """Send with rate limiting, 429/503 retries and one credential refresh on 401.

        Returns the final response unread (the caller releases it).
        """
        url = self._connection.base_url + path
        tries = _Tries()
        while True:
            headers = await self._admit(content_type if data is not None else None)
            started = time.monotonic()
            try:
                response = await self._session.request(
                    method,
                    url,
                    params=query,
                    data=data,
                    headers=headers,
                    timeout=client_timeout,
                    server_hostname=self._connection.server_hostname,
                )
            except (TimeoutError, aiohttp.ClientError):
                self._observe(method, "<error>", started)
                raise
            self._observe(method, str(response.status), started)
            wait = await self._again(response.status, response.headers.get("Retry-After"), tries)
            if wait is None:
                return response
            response.release()
            if wait:
                await _sleep(wait)

    async def _admit(self, content_type: str | None) -> dict[str, str]:
        """Wait for the client-side rate limiter, then the headers of one attempt (credentials
        read now: a rotated token is picked up by the next attempt)."""
        if self._limiter is not None:
            await self._limiter.wait()
        headers = {"Accept": "application/json", "User-Agent": self.options.user_agent}
        if content_type is not None:
            headers["Content-Type"] = content_type
        authorization = await self._connection.authorization()
        if authorization:
            headers["Authorization"] = authorization
        return headers

    async def _again(self, status: int, retry_after: str | None, tries: _Tries) -> float | None:
        """Whether to send a request again after an answer of ``status``: None to keep the answer,
        else the seconds to wait first. A 401 is sent again at once if refreshing the credentials
        (once per request) may have changed them; a 429/503 after the server's ``Retry-After``,
        else exponential from 0.5 s, capped by ``max_retry_wait`` either way, ``retries`` times."""
        if status == 401 and not tries.refreshed:
            tries.refreshed = True
            if await self._connection.refresh():
                return 0.0
        if status in RETRIABLE_STATUSES and tries.retries < self.options.retries:
            tries.retries += 1
            delay = _retry_after(retry_after)
            if delay is None:
                delay = 2.0 ** (tries.retries - 1) * 0.5
            return min(delay, self.options.max_retry_wait)
        return None

    async def _open_watch(self, path: str, query: Mapping[str, str], on_event: OnEvent) -> _WatchProtocol:
        """Connect a watch request (:mod:`.watchstream`) with :meth:`_send`'s rate limiting,
        retries, credential refresh and metrics; returns it once a 2xx answer's headers are in.

        Connecting and the headers are bounded by ``options.timeout``; the body is the caller's.
        """
        parts = urlsplit(self._connection.base_url)
        target = parts.path + path + ("?" + urlencode(query) if query else "")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        hostname = parts.hostname or "localhost"
        loop = asyncio.get_running_loop()
        tries = _Tries()
        while True:
            headers = await self._admit(None)
            request = request_bytes(self._connection.host, target, headers)
            started = time.monotonic()
            protocol = _WatchProtocol(request, on_event, loop)
            try:
                async with asyncio.timeout(self.options.timeout):
                    await loop.create_connection(
                        lambda: protocol,  # noqa: B023 - called at once, within this iteration
                        hostname,
                        port,
                        ssl=self._ssl or None,
                        server_hostname=(self._connection.server_hostname or hostname) if self._ssl else None,
                    )
                    await protocol.headers_received
                    if protocol.status >= 300:
                        await protocol.finished  # the error's body, read whole
            except BaseException as err:
                protocol.close()
                if not isinstance(err, asyncio.CancelledError):  # as _send: cancelling is not an answer
                    self._observe("GET", str(protocol.status) if protocol.status else "<error>", started)
                raise
            status = protocol.status
            self._observe("GET", str(status), started)
            if status < 300:
                return protocol
            protocol.close()
            wait = await self._again(status, protocol.headers.get("retry-after"), tries)
            if wait is None:
                retry_after = _retry_after(protocol.headers.get("retry-after"))
                raise from_status(status, b"".join(protocol.error_body), retry_after=retry_after)
            if wait:
                await _sleep(wait)

    def _observe(self, method: str, code: str, started: float) -> None:
        elapsed = time.monotonic() - started
        duration = self._duration_by_method.get(method)
        if duration is None:
            duration = self._duration_by_method[method] = metrics.rest_client_request_duration_seconds.labels(
                method, self._connection.host
            )
        duration.observe(elapsed)
        counter = self._requests_by_code.get((code, method))
        if counter is None:
            counter = self._requests_by_code[(code, method)] = metrics.rest_client_requests_total.labels(
                code, method, self._connection.host
            )
        counter.inc()


def _retry_after(header: str | None) -> float | None:
    if not header:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        return None  # an HTTP-date; the API server only ever sends seconds


async def _error_from_response(response: aiohttp.ClientResponse) -> APIError:
    payload = await response.read()
    return from_status(
        response.status, payload, retry_after=_retry_after(response.headers.get("Retry-After"))
    )
