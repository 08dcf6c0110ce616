"""The demo's world: the embedded API server, the local provider and the operator, each in its own process.

:class:`DemoWorld` starts, in this order, ``cpo dev-apiserver`` (with the project's CRDs),
``cpo localmachine`` (a fresh state directory) and ``cpo run`` (all controllers and webhooks, with
a serving certificate generated here), registers the operator's webhook configurations with the
API server by URL, and hands out the kubeconfig. Every child runs in a session of its own, so a
Ctrl-C in the terminal reaches only the demo, which then stops them in reverse order
(:meth:`DemoWorld.stop`) and kills the etcd members the provider left running (members outlive
their provider on purpose, as machines outlive their cloud controller). Each child dies with the
process that started the world and carries the world's marks in its environment, which its etcd
members inherit, so a world whose owner was killed outright is found and ended later
(:mod:`demo.lifetime`). Ports are picked free at start, so a second demo can run at once.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from demo.lifetime import die_with_parent, end_processes, world_environment, world_processes
from providers.localmachine.etcd_process import recorded_processes
from providers.localmachine.realistic import DEFAULT_CLIENT_SECRET
from runtime.envtest.certs import CertificateAuthority
from runtime.localproc import free_port

REPO = Path(__file__).resolve().parents[1]
CRD_DIRS = (REPO / "config" / "crd", REPO / "config" / "machine-api")
"""The ControlPlane CRD and the Machine API component's: the demo's cluster starts empty."""
WEBHOOK_MANIFESTS = (
    REPO / "config" / "webhook" / "manifests.yaml",
    REPO / "config" / "machinehealthcheck" / "manifests.yaml",
)
"""Every webhook configuration: the demo runs every controller, as config/install/standalone does."""
START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
POLL = 0.1


class WorldError(RuntimeError):
    """A process of the demo's world did not start; the message names it and its log."""


@dataclass
class ChildProcess:
    """One ``cpo`` sub-command running in its own session, its output in a log file; it dies
    with the process that started it (:func:`~demo.lifetime.die_with_parent`)."""

    name: str
    argv: list[str]
    log_path: Path
    process: asyncio.subprocess.Process | None = None
    environment: dict[str, str] = field(default_factory=dict)
    """Added to this process's environment for the child (the world's marks)."""

    async def start(self) -> None:
        log = self.log_path.open("ab")
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.environment},
                preexec_fn=die_with_parent(),
            )
        finally:
            log.close()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def log_tail(self, lines: int = 15) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    async def stop(self, timeout: float = STOP_TIMEOUT) -> None:  # noqa: ASYNC109 -- a grace period
        """SIGTERM the whole session, SIGKILL it after ``timeout``."""
        if self.process is None:
            return
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), timeout)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                await self.process.wait()
        # Anything the child started in its session and left behind goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)


def cpo(*args: str) -> list[str]:
    """The argv of a ``cpo`` sub-command run with this interpreter (no PATH lookup)."""
    return [sys.executable, "-m", "cli", *args]


@dataclass(frozen=True)
class OperatorPorts:
    """Where one ``cpo run`` serves its webhooks, ``/metrics`` (plain HTTP) and probes."""

    webhook: int
    metrics: int
    probe: int


@dataclass
class DemoWorld:
    """The processes of the demo and what they share; see the module docstring.

    ``operators`` > 1 starts that many ``cpo run`` replicas with leader election on (a Lease in the
    world's namespace), as the chaos campaign does; the webhook configurations point at the first.
    """

    directory: Path
    namespace: str = "demo"
    heartbeat_period: float = 0.5
    operators: int = 1
    realistic: bool = False
    """Run the provider with ``--realistic`` (its etcd client Secret: :attr:`etcd_client_secret`)."""
    provider_all_namespaces: bool = False
    """Let the provider serve every namespace, not only :attr:`namespace` (one ControlPlane per
    namespace, as ``bench.fleet`` runs them)."""
    max_instances_per_domain: int | None = None
    """Run the provider with ``--max-instances-per-domain``: that many hosts per failure domain,
    as bare metal has (None: no limit)."""
    static_pods: bool = True
    """Let the provider keep the Nodes' mirror Pods (False: ``--no-static-pods``, none is made)."""
    operator_flags: tuple[str, ...] = ()
    """Flags added to every ``cpo run`` of the world (e.g. ``--etcd-hook-name``)."""
    children: list[ChildProcess] = field(default_factory=list)
    kubeconfig_path: Path = field(init=False)
    state_dir: Path = field(init=False)
    operator_ports: list[OperatorPorts] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.kubeconfig_path = self.directory / "kubeconfig"
        self.state_dir = self.directory / "machines"
        (self.directory / "logs").mkdir(exist_ok=True)

    @property
    def etcd_client_secret(self) -> str | None:
        """The Secret with the etcd client certificate in realistic mode; None otherwise."""
        return DEFAULT_CLIENT_SECRET if self.realistic else None

    @property
    def webhook_port(self) -> int:
        return self.operator_ports[0].webhook

    @property
    def metrics_port(self) -> int:
        return self.operator_ports[0].metrics

    @property
    def probe_port(self) -> int:
        return self.operator_ports[0].probe

    async def start(self, progress: Callable[[str], None] = lambda _: None) -> None:
        """Start everything; on any failure stop what did start and raise :class:`WorldError`."""
        try:
            progress("starting the embedded API server")
            self.kubeconfig_path.unlink(missing_ok=True)
            apiserver = await self._spawn(
                "apiserver",
                cpo(
                    "dev-apiserver",
                    "--kubeconfig-out",
                    str(self.kubeconfig_path),
                    *(arg for folder in CRD_DIRS for arg in ("--crd", str(folder))),
                ),
            )
            await self._wait_until(
                apiserver,
                lambda: _async(self.kubeconfig_path.is_file() and self.kubeconfig_path.stat().st_size > 0),
            )
            await self._kubectl_apply(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
            )
            progress("starting the local machine provider")
            await self.start_provider()
            progress("starting the operator (cpo run)")
            authority = CertificateAuthority.new("cpo-demo-webhooks")
            authority.serving_cert(["127.0.0.1", "localhost"]).write(self.cert_dir)
            for index in range(self.operators):
                await self._start_operator_on_free_ports(index)
            progress("registering the operator's admission webhooks")
            for configuration in webhook_configurations(self.webhook_port, authority.cert_pem):
                await self._kubectl_apply(configuration)
        except BaseException:
            await self.stop()
            raise

    @property
    def cert_dir(self) -> Path:
        return self.directory / "serving-certs"

    def child(self, name: str) -> ChildProcess:
        """The newest child process started under ``name``."""
        return next(child for child in reversed(self.children) if child.name == name)

    def operator_name(self, index: int) -> str:
        return "operator" if index == 0 else f"operator-{index}"

    async def start_provider(self) -> ChildProcess:
        """Start ``cpo localmachine`` on the world's state directory (again, after a crash)."""
        return await self._spawn("localmachine", self.provider_argv())

    def provider_argv(self) -> list[str]:
        """The command line of the world's ``cpo localmachine``."""
        return cpo(
            "localmachine",
            "--state-dir", str(self.state_dir),
            "--kubeconfig", str(self.kubeconfig_path),
            *([] if self.provider_all_namespaces else ["--namespace", self.namespace]),
            "--heartbeat-period", str(self.heartbeat_period),
            "--stop-grace-period", "3",
            "--join-backoff-max", "1",
            *(["--realistic"] if self.realistic else []),
            *(
                ["--max-instances-per-domain", str(self.max_instances_per_domain)]
                if self.max_instances_per_domain is not None
                else []
            ),
            *([] if self.static_pods else ["--no-static-pods"]),
        )  # fmt: skip

    async def start_operator(self, index: int, controllers: str | None = None) -> ChildProcess:
        """Start ``cpo run`` number ``index`` on its ports (again, after a crash); waits for /readyz.

        ``controllers``: its ``--controllers`` value (e.g. ``*,-etcd-quorum-hook``); all of them by
        default."""
        ports = self.operator_ports[index]
        election = (
            ["--leader-elect", "--leader-election-namespace", self.namespace] if self.operators > 1 else []
        )
        operator = await self._spawn(
            self.operator_name(index),
            cpo(
                "run",
                "--kubeconfig", str(self.kubeconfig_path),
                "--webhook-host", "127.0.0.1",
                "--webhook-port", str(ports.webhook),
                "--webhook-cert-dir", str(self.cert_dir),
                "--metrics-bind-address", f"127.0.0.1:{ports.metrics}",
                "--metrics-secure=false",
                "--health-probe-bind-address", f"127.0.0.1:{ports.probe}",
                "--log-format", "console",
                *election,
                *self.operator_flags,
                *([f"--controllers={controllers}"] if controllers else []),
            ),
        )  # fmt: skip
        await self._wait_until(operator, lambda: self._operator_ready(ports.probe))
        return operator

    async def _start_operator_on_free_ports(self, index: int, attempts: int = 3) -> None:
        """Start ``cpo run`` number ``index`` on ports free a moment ago; another process (a
        second world on this machine) may take one before it binds, so it tries fresh ports."""
        self.operator_ports.append(OperatorPorts(free_port(), free_port(), free_port()))
        for attempt in range(attempts):
            try:
                await self.start_operator(index)
                return
            except WorldError as err:
                if "Address already in use" not in str(err) or attempt == attempts - 1:
                    raise
                self.operator_ports[index] = OperatorPorts(free_port(), free_port(), free_port())

    async def stop(self) -> None:
        """Stop every process in reverse order, then every etcd member the provider started."""
        for child in reversed(self.children):
            if child.name == "apiserver":
                await self.kill_members()
            await child.stop()
        await self.kill_members()

    async def kill_members(self) -> None:
        """SIGKILL the etcd members and wait until they are gone: those recorded under the state
        directory and any other process with the world's marks but its running children (a member
        a crashed provider never recorded)."""
        children = {child.process.pid for child in self.children if child.running and child.process}
        others = [process for process in world_processes(self.directory) if process.pid not in children]
        await end_processes(recorded_processes(self.state_dir) + others, STOP_TIMEOUT)

    def log_path(self, name: str) -> Path:
        return self.directory / "logs" / f"{name}.log"

    async def _spawn(self, name: str, argv: list[str]) -> ChildProcess:
        child = ChildProcess(name, argv, self.log_path(name), environment=world_environment(self.directory))
        self.children.append(child)
        await child.start()
        return child

    async def _wait_until(self, child: ChildProcess, ready: Callable[[], Awaitable[bool]]) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not await ready():
            if not child.running:
                raise WorldError(
                    f"{child.name} exited during start-up; its log ends with:\n{child.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise WorldError(f"{child.name} not ready within {START_TIMEOUT:g}s; log: {child.log_path}")
            await asyncio.sleep(POLL)

    async def _operator_ready(self, probe_port: int) -> bool:
        url = f"http://127.0.0.1:{probe_port}/readyz"
        try:
            async with aiohttp.ClientSession() as session, session.get(url) as response:
                return response.status == 200
        except aiohttp.ClientError:
            return False

    async def _kubectl_apply(self, obj: dict[str, Any]) -> None:
        await kubectl(self.kubeconfig_path, "apply", "-f", "-", input_text=yaml.safe_dump(obj))


def kubectl_binary() -> str:
    """The kubectl installed beside this interpreter (the project's test extra ships one), else PATH's."""
    beside = Path(sys.executable).parent / "kubectl"
    return str(beside) if beside.is_file() else "kubectl"


async def kubectl(kubeconfig: Path, *args: str, input_text: str | None = None) -> str:
    """Run kubectl against the demo's API server; returns stdout, raises with stderr on failure."""
    process = await asyncio.create_subprocess_exec(
        kubectl_binary(), "--kubeconfig", str(kubeconfig), *args,
        stdin=asyncio.subprocess.PIPE if input_text is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate(input_text.encode() if input_text is not None else None)
    if process.returncode != 0:
        raise KubectlError(err.decode().strip() or out.decode().strip())
    return out.decode()


class KubectlError(RuntimeError):
    """kubectl exited non-zero; the message is its stderr, as a user would read it."""


def webhook_configurations(port: int, ca_pem: bytes) -> list[dict[str, Any]]:
    """The webhook configurations of :data:`WEBHOOK_MANIFESTS` with every webhook pointed at
    ``https://127.0.0.1:<port>``."""
    configurations = []
    documents = [d for path in WEBHOOK_MANIFESTS for d in yaml.safe_load_all(path.read_text())]
    for document in documents:
        if not document:
            continue
        configuration = copy.deepcopy(document)
        configuration["metadata"].pop("annotations", None)
        for webhook in configuration.get("webhooks") or ():
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {
                "url": f"https://127.0.0.1:{port}{path}",
                "caBundle": base64.b64encode(ca_pem).decode(),
            }
        configurations.append(configuration)
    return configurations


async def _async(value: bool) -> bool:
    return value
