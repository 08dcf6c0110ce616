"""The HTTPS admission server: routes review bodies to their handlers, with TLS reloading and metrics."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import socket
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from ..certwatcher import CertificateError, CertWatcher
from . import adapters
from .adapters import AdmissionHandler
from .decode import BadReview, _status_body, decode_review
from .metrics import WebhookMetrics, init_webhook_metrics, webhook_panics_total
from .options import WebhookServerOptions
from .review import AdmissionRequest, AdmissionResponse, Denied, denied, errored

log = logging.getLogger("runtime.webhook")


@dataclass(slots=True)
class _Route:
    handler: AdmissionHandler
    metrics: WebhookMetrics


class WebhookServer:
    """The HTTPS admission server; a :class:`runtime.runnable.Runnable` that needs no leader lease."""

    def __init__(self, options: WebhookServerOptions | None = None) -> None:
        self.options = (options or WebhookServerOptions()).with_defaults()
        self.port: int | None = None
        """The port listened on, known once started (useful with port 0)."""
        self._routes: dict[str, _Route] = {}
        self._started = asyncio.Event()
        self._address: tuple[str, int] | None = None
        self.cert_watcher = CertWatcher(
            os.path.join(self.options.cert_dir, self.options.cert_name),
            os.path.join(self.options.cert_dir, self.options.key_name),
            poll_interval=self.options.cert_poll_interval,
        )

    # registration

    def register(
        self,
        path: str,
        handler: AdmissionHandler | Callable[[AdmissionRequest], Awaitable[AdmissionResponse]],
    ) -> WebhookServer:
        """Serve ``handler`` at ``path``; allowed before and after start. Returns the server, for chaining."""
        if not path.startswith("/"):
            raise ValueError(f"webhook path {path!r} must start with '/'")
        if path in self._routes:
            raise ValueError(f"a webhook is already registered at {path}; each path serves one handler")
        if not isinstance(handler, AdmissionHandler):
            if not callable(handler):
                raise TypeError(f"{handler!r} is neither an AdmissionHandler nor an async function")
            handler = adapters.admission_handler_func(handler)
        self._routes[path] = _Route(handler, init_webhook_metrics(path))
        return self

    def register_validator(
        self, group: str, version: str, kind: str, validator: adapters.CustomValidator
    ) -> WebhookServer:
        """Serve ``validator`` at :func:`validate_path` of the kind."""
        return self.register(
            adapters.validate_path(group, version, kind), adapters.ValidatorHandler(validator)
        )

    def register_defaulter(
        self, group: str, version: str, kind: str, defaulter: adapters.CustomDefaulter
    ) -> WebhookServer:
        """Serve ``defaulter`` at :func:`mutate_path` of the kind."""
        return self.register(adapters.mutate_path(group, version, kind), adapters.DefaulterHandler(defaulter))

    @property
    def paths(self) -> list[str]:
        """The registered paths."""
        return list(self._routes)

    # runnable

    def need_leader_election(self) -> bool:
        return False

    async def wait_started(self) -> None:
        """Return once the TLS listener accepts connections."""
        await self._started.wait()

    async def start(self, stop: asyncio.Event) -> None:
        """Serve until ``stop`` is set, then finish requests in flight (up to ``request_timeout``)."""
        opts = self.options
        try:
            self.cert_watcher.read_certificate()
            ssl_context = self.cert_watcher.server_context()
        except (CertificateError, ssl.SSLError, OSError) as err:
            raise CertificateError(
                f"webhook server cannot start: {err}. Put {opts.cert_name} and {opts.key_name} into "
                f"{opts.cert_dir} (mount the kubernetes.io/tls Secret there, e.g. the one cert-manager "
                "issues) or set cert_dir"
            ) from err
        sock = _listen(opts.host, opts.port)
        runner = web.ServerRunner(
            web.Server(self._serve, access_log=None), shutdown_timeout=opts.request_timeout
        )
        await runner.setup()
        watcher = asyncio.create_task(self.cert_watcher.start(stop), name="webhook-certwatcher")
        try:
            site = web.SockSite(runner, sock, ssl_context=ssl_context)
            await site.start()
            host, port = sock.getsockname()[:2]
            self.port = port
            self._address = (host, port)
            self._started.set()
            log.info("webhook server listening on %s port %d, paths %s", host or "*", port, self.paths)
            await stop.wait()
        finally:
            self._started.clear()
            await runner.cleanup()
            sock.close()
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    def started_checker(self) -> Callable[[object], Awaitable[None]]:
        """A readyz check: passes once a TLS handshake with the listener succeeds."""

        async def check(_request: object = None) -> None:
            address = self._address
            if not self._started.is_set() or address is None:
                raise RuntimeError("webhook server has not started listening yet")
            # A wildcard listener (dual-stack included) takes IPv4 loopback even where IPv6 is off.
            host = "127.0.0.1" if address[0] in ("0.0.0.0", "::", "") else address[0]
            # Only that the listener speaks TLS is checked, not who it claims to be.
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            async with asyncio.timeout(10):
                _, writer = await asyncio.open_connection(host, address[1], ssl=context)
            writer.close()
            with contextlib.suppress(OSError, ssl.SSLError):
                await writer.wait_closed()

        return check

    # serving

    async def _serve(self, request: web.BaseRequest) -> web.StreamResponse:
        route = self._routes.get(request.path)
        if route is None:
            return _status_response(
                404, f"no webhook is registered at {request.path}; registered: {', '.join(self.paths)}"
            )
        metrics = route.metrics
        metrics.in_flight.inc()
        started = time.perf_counter()
        try:
            response = await self._answer(route, request)
        except Exception as err:  # a bug of ours must not look like a crash to the API server
            webhook_panics_total.inc()
            log.exception("webhook %s: unexpected error", request.path)
            response = _status_response(500, f"internal error in the webhook server: {err}")
        finally:
            metrics.in_flight.dec()
        metrics.latency.observe(time.perf_counter() - started)
        metrics.requests(response.status).inc()
        return response

    async def _answer(self, route: _Route, request: web.BaseRequest) -> web.Response:
        if request.method != "POST":
            return _status_response(
                405, f"method {request.method} is not allowed; admission reviews are POSTed"
            )
        if request.content_type != "application/json":
            sent = request.headers.get("Content-Type", "")
            return _status_response(
                400, f"Content-Type is {sent!r}; an AdmissionReview must be sent as application/json"
            )
        opts = self.options
        admission: AdmissionRequest | None = None
        try:
            # One deadline for reading, decoding and answering: a slow sender and a slow handler
            # both end here, and the phase tells which (CancelledError passes through _call).
            async with asyncio.timeout(opts.request_timeout):
                body = await _read_body(request, opts.max_body_bytes)
                admission = decode_review(body)
                answer = await self._call(route.handler, admission, request.path)
        except BadReview as err:
            return _status_response(err.code, err.message)
        except TimeoutError:
            if admission is None:
                return _status_response(
                    408, f"the request body did not arrive within {opts.request_timeout:g} s"
                )
            log.error(
                "webhook %s: no answer to %s within %g s", request.path, admission.uid, opts.request_timeout
            )
            answer = errored(504, f"the webhook did not answer within {opts.request_timeout:g} s")
        return web.Response(
            body=json.dumps(answer.to_review(admission.uid)).encode(), content_type="application/json"
        )

    async def _call(
        self, handler: AdmissionHandler, admission: AdmissionRequest, path: str
    ) -> AdmissionResponse:
        try:
            answer = await handler.handle(admission)
            if not isinstance(answer, AdmissionResponse):
                raise TypeError(
                    f"{type(handler).__name__}.handle returned {answer!r}, not an AdmissionResponse"
                )
            return answer
        except Denied as err:
            return denied(err.message, err.code, err.reason, err.warnings)
        except Exception as err:  # the handler's own TimeoutError included: that is its bug, not ours
            webhook_panics_total.inc()
            log.exception("webhook %s: handler failed on request %s", path, admission.uid)
            return errored(500, f"internal error: {type(err).__name__}: {err}")


async def _read_body(request: web.BaseRequest, limit: int) -> bytes:
    too_large = f"the request body is larger than the limit of {limit} bytes"
    length = request.content_length
    if length is not None and length > limit:
        raise BadReview(f"{too_large} (Content-Length {length})", 413)
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await request.content.read(65536)
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            raise BadReview(too_large, 413)
        chunks.append(chunk)
    return b"".join(chunks)


def _status_response(code: int, message: str) -> web.Response:
    return web.Response(status=code, body=_status_body(code, message), content_type="application/json")


def _listen(host: str, port: int) -> socket.socket:
    """One listening socket, so port 0 gives a single port even when listening on every interface."""
    try:
        if host == "":
            if socket.has_dualstack_ipv6():
                try:
                    return socket.create_server(
                        ("", port), family=socket.AF_INET6, dualstack_ipv6=True, backlog=512
                    )
                except OSError as err:
                    if err.errno == errno.EADDRINUSE:
                        raise
                    # IPv6 in the kernel but disabled on the interfaces: listen on IPv4 only.
            return socket.create_server(("", port), backlog=512)
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, _, _, _, address = infos[0]
        return socket.create_server(address[:2], family=family, backlog=512)
    except OSError as err:
        raise OSError(
            err.errno, f"webhook server cannot listen on {host or '*'} port {port}: {err.strerror or err}"
        ) from err
