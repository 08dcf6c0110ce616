"""Serve TLS from a certificate and key on disk, and pick up new files without a restart.

A webhook's serving certificate lives in a directory fed by a Kubernetes Secret volume (one that
cert-manager renews, or one written by hand); the files are replaced while the server runs
(rotation, a new CA). :class:`CertWatcher` loads the pair into an :class:`ssl.SSLContext`, polls the files and
loads them again when their content changes. The server context from
:meth:`CertWatcher.server_context` hands every **new** TLS connection the newest good pair;
connections already open keep the certificate they were set up with.

How new connections see a new certificate
    Python cannot replace the certificate of a live :class:`ssl.SSLContext` atomically, so each good
    pair gets a fresh context, and the server context's ``sni_callback`` moves every incoming
    handshake onto the newest one (OpenSSL calls it for every ClientHello, with or without SNI).
    This works for asyncio and aiohttp servers, whose connections are :class:`ssl.SSLObject`\\ s.

Why polling
    Content is compared, not modification times, so the Secret volume's atomic ``..data`` symlink
    swap, an editor's in-place write and a coarse mtime all look the same: the bytes changed.
    Two small file reads every few seconds cost nothing measurable, and no inotify dependency or
    watch-descriptor bookkeeping across symlink swaps is needed.

Bad files never take the server down
    A pair that does not load (half-written, key not matching the certificate, not PEM) is logged
    and counted in ``certwatcher_read_certificate_errors_total``; the last good pair stays in use,
    and the same bytes are not retried until they change again. Every successful load counts in
    ``certwatcher_read_certificate_total``. Only :meth:`CertWatcher.read_certificate`, called once
    before serving, raises (:class:`CertificateError`, naming the files); polling never does.

Example: an aiohttp server whose certificate can be replaced while it runs (the pair comes from
a throw-away CA here; in a cluster, from a Secret volume):

>>> import asyncio, ssl, tempfile
>>> import aiohttp
>>> from aiohttp import web
>>> from runtime.certwatcher import CertWatcher
>>> from runtime.envtest.certs import CertificateAuthority
>>> ca = CertificateAuthority.new()
>>> cert_file, key_file = ca.serving_cert(["127.0.0.1"]).write(tempfile.mkdtemp())
>>> async def hello(request: web.Request) -> web.Response:
...     return web.Response(text="hello")
>>> async def main() -> str:
...     watcher = CertWatcher(str(cert_file), str(key_file), poll_interval=5)
...     watcher.read_certificate()  # raises CertificateError if unusable
...     app = web.Application()
...     app.router.add_get("/", hello)
...     runner = web.AppRunner(app)
...     await runner.setup()
...     await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=watcher.server_context()).start()
...     stop = asyncio.Event()
...     polling = asyncio.create_task(watcher.start(stop))  # polls the files until stop is set
...     trusting_the_ca = ssl.create_default_context(cadata=ca.cert_pem.decode())
...     url = f"https://127.0.0.1:{runner.addresses[0][1]}/"
...     try:
...         async with aiohttp.ClientSession() as session:
...             async with session.get(url, ssl=trusting_the_ca) as response:
...                 return await response.text()
...     finally:
...         stop.set()
...         await polling
...         await runner.cleanup()
>>> asyncio.run(main())
'hello'
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import ssl
from dataclasses import dataclass
from typing import Final

from prometheus_client import Counter

from .metrics import registry

log = logging.getLogger(__name__)

DEFAULT_POLL_INTERVAL: Final = 5.0

# controller-runtime's cert-watcher families, in the runtime's registry (no labels).
certwatcher_read_certificate_total: Final = Counter(
    "certwatcher_read_certificate_total",
    "Certificate and key pairs read and loaded successfully.",
    registry=registry,
)
certwatcher_read_certificate_errors_total: Final = Counter(
    "certwatcher_read_certificate_errors_total",
    "Certificate and key pairs that could not be read or loaded; the previous pair stays in use.",
    registry=registry,
)
"""Seconds between checks of the files: rotations are seen within this time."""


class CertificateError(Exception):
    """The certificate or key files cannot be used; the message says which files and why."""


@dataclass(frozen=True)
class _Loaded:
    context: ssl.SSLContext
    digest: bytes


def _digest(cert: bytes, key: bytes) -> bytes:
    return hashlib.sha256(len(cert).to_bytes(8, "big") + cert + key).digest()


def new_server_context() -> ssl.SSLContext:
    """A TLS server context with our policy (TLS 1.2 or newer, no client certificates asked)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    # controller-runtime's webhook server also refuses anything older than TLS 1.2.
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class CertWatcher:
    """Holds the newest good certificate/key pair read from ``cert_path`` and ``key_path``."""

    def __init__(
        self, cert_path: str | os.PathLike[str], key_path: str | os.PathLike[str], *, poll_interval: float = 0
    ) -> None:
        """``poll_interval`` ≤ 0 means :data:`DEFAULT_POLL_INTERVAL`."""
        self.cert_path = os.fspath(cert_path)
        self.key_path = os.fspath(key_path)
        self.poll_interval = poll_interval if poll_interval > 0 else DEFAULT_POLL_INTERVAL
        self._current: _Loaded | None = None
        # Digest of the last bytes tried, good or bad: unchanged bytes are not loaded twice.
        self._last_seen: bytes | None = None
        self._server_context: ssl.SSLContext | None = None

    @property
    def current_context(self) -> ssl.SSLContext:
        """The context holding the newest good pair; raises if none was ever loaded."""
        if self._current is None:
            raise CertificateError(f"no certificate loaded yet from {self.cert_path} and {self.key_path}")
        return self._current.context

    def read_certificate(self) -> None:
        """Load the pair now; raise :class:`CertificateError` if it is unusable.

        On failure the previous pair (if any) stays in use and the error counter goes up.
        """
        cert, key = self._read_files()
        self._load(cert, key)

    def poll_once(self) -> bool:
        """Load the files if their content changed since the last attempt; whether a new pair is in use.

        Never raises: a bad pair is logged and counted, and the previous one kept.
        """
        try:
            cert, key = self._read_files()
        except CertificateError as err:
            # A file missing for a moment is normal while a Secret volume swaps its symlink.
            log.debug("certificate files not readable yet: %s", err)
            return False
        if _digest(cert, key) == self._last_seen:
            return False
        try:
            self._load(cert, key)
        except CertificateError as err:
            log.error("keeping the previous serving certificate: %s", err)
            return False
        log.info("loaded a new serving certificate from %s", self.cert_path)
        return True

    def server_context(self) -> ssl.SSLContext:
        """The context to serve with: every new handshake is moved onto the newest good pair.

        Call :meth:`read_certificate` first. The same object is returned on every call.
        """
        if self._server_context is None:
            context = new_server_context()
            # Loaded too, so the context is complete on its own should a handshake skip the callback.
            context.load_cert_chain(self.cert_path, self.key_path)
            context.sni_callback = self._select_context
            self._server_context = context
        return self._server_context

    async def start(self, stop: asyncio.Event) -> None:
        """Poll the files every ``poll_interval`` seconds until ``stop`` is set."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.poll_interval)
            if not stop.is_set():
                self.poll_once()

    def need_leader_election(self) -> bool:
        return False

    # --- internals ----------------------------------------------------------------------------------

    def _select_context(
        self, connection: ssl.SSLObject | ssl.SSLSocket, _server_name: str | None, _ctx: ssl.SSLContext
    ) -> None:
        current = self._current
        if current is not None and connection.context is not current.context:
            connection.context = current.context

    def _read_files(self) -> tuple[bytes, bytes]:
        try:
            with open(self.cert_path, "rb") as cert_file:
                cert = cert_file.read()
            with open(self.key_path, "rb") as key_file:
                key = key_file.read()
        except OSError as err:
            raise CertificateError(
                f"cannot read the serving certificate {self.cert_path} or key {self.key_path}: {err}"
            ) from err
        return cert, key

    def _load(self, cert: bytes, key: bytes) -> None:
        digest = _digest(cert, key)
        self._last_seen = digest
        context = new_server_context()
        try:
            # load_cert_chain only takes paths; the bytes read before and after must match, or a
            # writer was busy and the context may hold a mix (retried when the bytes settle).
            context.load_cert_chain(self.cert_path, self.key_path)
            after = self._read_files()
        except (ssl.SSLError, OSError, CertificateError) as err:
            certwatcher_read_certificate_errors_total.inc()
            raise CertificateError(
                f"cannot load the serving certificate {self.cert_path} with key {self.key_path}: {err}; "
                "write a PEM certificate and its matching PEM private key there"
            ) from err
        if _digest(*after) != digest:
            self._last_seen = None
            certwatcher_read_certificate_errors_total.inc()
            raise CertificateError(f"{self.cert_path} or {self.key_path} changed while being loaded")
        self._current = _Loaded(context, digest)
        certwatcher_read_certificate_total.inc()
