"""The manager's HTTP servers: Prometheus ``/metrics`` and the ``/healthz``/``/readyz`` probes.

``/metrics`` is served either in plain HTTP (anyone who reaches the port may read it) or securely,
as kubebuilder projects serve it: HTTPS with the certificate of a directory (``tls.crt`` and
``tls.key``, reloaded when they change) or, without one, a self-signed certificate generated at
start, and every request passed through a filter (:mod:`runtime.manager.filters`), by default
a TokenReview and SubjectAccessReview of the caller's bearer token.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import ssl
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from .. import metrics
from ..certwatcher import CertWatcher
from ..healthz import HealthHandler
from .filters import Filter

CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"
SELF_SIGNED_VALIDITY = timedelta(days=365)


class _HTTPServer:
    """An aiohttp application on one address; ``port`` is the bound port once started.

    With ``tls_dir`` the server speaks HTTPS with that directory's ``tls.crt``/``tls.key``
    (reloaded when they change); with ``tls_self_signed`` it generates a pair at start.
    """

    def __init__(
        self,
        name: str,
        app: web.Application,
        bind: tuple[str | None, int],
        *,
        tls_dir: str | None = None,
        tls_self_signed: bool = False,
    ) -> None:
        self.name = name
        self.app = app
        self.bind = bind
        self.port: int | None = None
        self.tls_dir = tls_dir
        self.tls_self_signed = tls_self_signed
        self._runner: web.AppRunner | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._watch_stop = asyncio.Event()
        self._watch_task: asyncio.Task[None] | None = None

    @property
    def secure(self) -> bool:
        return self.tls_dir is not None or self.tls_self_signed

    async def start(self) -> None:
        ssl_context = self._ssl_context() if self.secure else None
        runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.bind[0], self.bind[1], reuse_address=True, ssl_context=ssl_context)
        try:
            await site.start()
        except OSError as err:
            await runner.cleanup()
            raise OSError(
                err.errno, f"{self.name} server cannot listen on {self.bind}: {err.strerror}"
            ) from err
        self._runner = runner
        addresses = runner.addresses
        self.port = int(addresses[0][1]) if addresses else self.bind[1]

    def _ssl_context(self) -> ssl.SSLContext:
        if self.tls_dir is not None:
            directory = Path(self.tls_dir)
        else:
            self._tmp = tempfile.TemporaryDirectory(prefix=f"{self.name.replace(' ', '-')}-cert-")
            directory = Path(self._tmp.name)
            cert_pem, key_pem = self_signed_certificate([socket.gethostname(), "localhost", "127.0.0.1"])
            (directory / CERT_FILE).write_bytes(cert_pem)
            (directory / KEY_FILE).write_bytes(key_pem)
        watcher = CertWatcher(directory / CERT_FILE, directory / KEY_FILE)
        watcher.read_certificate()  # CertificateError names the files
        if self.tls_dir is not None:
            self._watch_task = asyncio.get_running_loop().create_task(
                watcher.start(self._watch_stop), name=f"{self.name}-certwatcher"
            )
        return watcher.server_context()

    async def stop(self) -> None:
        self._watch_stop.set()
        if self._watch_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch_task
            self._watch_task = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def self_signed_certificate(hosts: list[str]) -> tuple[bytes, bytes]:
    """A self-signed serving certificate for ``hosts`` (names or IPs): (certificate PEM, key PEM)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    subject = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, f"{hosts[0]}@{int(datetime.now().timestamp())}")]
    )
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))  # a peer whose clock lags still accepts it
        .not_valid_after(now + SELF_SIGNED_VALIDITY)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


async def _serve_metrics(request: web.Request) -> web.Response:
    body = metrics.generate_latest()
    return web.Response(body=body, headers={"Content-Type": metrics.CONTENT_TYPE_LATEST})


def metrics_app(request_filter: Filter | None = None) -> web.Application:
    """``GET /metrics``: the runtime registry in the Prometheus text format; every request goes
    through ``request_filter`` first when one is given (see :mod:`runtime.manager.filters`)."""
    middlewares: list[Middleware] = []
    if request_filter is not None:
        checked = request_filter

        @web.middleware
        async def filtered(request: web.Request, handler: Handler) -> web.StreamResponse:
            answer = await checked(request)
            return answer if answer is not None else await handler(request)

        middlewares.append(filtered)
    app = web.Application(middlewares=middlewares)
    app.router.add_get("/metrics", _serve_metrics)
    return app


def probes_app(healthz: HealthHandler, readyz: HealthHandler) -> web.Application:
    """``/healthz`` and ``/readyz`` with their per-check sub-paths."""
    app = web.Application()
    healthz.add_routes(app)
    readyz.add_routes(app)
    return app
