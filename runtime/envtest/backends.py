"""The three back ends of a test environment (real binaries, an existing cluster, an embedded
server), how one is chosen from the environment variables, and the embedded server's own thread."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from .binaries import KUBE_APISERVER, ControlPlaneBinaries
from .kubeconfig import Kubeconfig

BackendName = Literal["binaries", "existing", "embedded"]
BACKENDS: tuple[BackendName, ...] = ("binaries", "existing", "embedded")

# Environment variables, controller-runtime's names where it has one.
KUBEBUILDER_ASSETS = "KUBEBUILDER_ASSETS"
TEST_KUBECONFIG = "CPO_TEST_KUBECONFIG"
ETCD_BINARY = "ETCD_BINARY"
TEST_ASSET_KUBE_APISERVER = "TEST_ASSET_KUBE_APISERVER"
TEST_ASSET_ETCD = "TEST_ASSET_ETCD"
START_TIMEOUT = "KUBEBUILDER_CONTROLPLANE_START_TIMEOUT"
STOP_TIMEOUT = "KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT"
ATTACH_OUTPUT = "KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT"


class EmbeddedServer(Protocol):
    """An in-process API server the embedded back end runs (the project's stand-in is one)."""

    async def start(self) -> None:
        """Listen; return once clients can connect."""

    async def stop(self) -> None:
        """Close every connection and stop listening."""

    def kubeconfig(self) -> Kubeconfig:
        """A self-contained kubeconfig for an administrator of this server."""


class EmbeddedServerFactory(Protocol):
    """What :attr:`EnvironmentOptions.embedded` holds: the options of a server, able to build it.

    The environment calls :meth:`new_server` on the loop that will serve it (its own thread's loop
    with ``embedded_in_thread``), so whatever asyncio objects the server makes belong to that loop.
    """

    def new_server(self) -> EmbeddedServer:
        """A new, not yet started server."""


class BackendSelectionError(RuntimeError):
    """The environment asks for a back end that cannot run (e.g. a binary is missing)."""


@dataclass(frozen=True)
class BackendChoice:
    """Which back end to start, why, and what it needs."""

    backend: BackendName
    reason: str
    """Human-readable: which setting decided (logged at start, handy when a suite behaves oddly)."""
    binaries: ControlPlaneBinaries | None = None
    """For ``binaries``: the kube-apiserver and etcd to run."""
    kubeconfig_path: Path | None = None
    """For ``existing``: the kubeconfig of the cluster to attach to."""


def select_backend(environ: Mapping[str, str]) -> BackendChoice:
    """Choose the back end from environment variables, in this order of preference.

    1. ``KUBEBUILDER_ASSETS`` is set: real binaries from that folder (etcd may come from
       ``ETCD_BINARY`` instead). A folder without them is an error, never a silent fallback.
    2. ``CPO_TEST_KUBECONFIG`` is set: attach to the cluster of that kubeconfig.
    3. Otherwise: the embedded API server.

    Empty variables count as unset. Only the file system is consulted, nothing is started.
    """
    if environ.get(KUBEBUILDER_ASSETS):
        binaries = find_binaries(environ)
        return BackendChoice(
            "binaries",
            f"{KUBEBUILDER_ASSETS}={environ[KUBEBUILDER_ASSETS]} (kube-apiserver {binaries.kube_apiserver}, "
            f"etcd {binaries.etcd})",
            binaries=binaries,
        )
    if environ.get(TEST_KUBECONFIG):
        path = _existing_file(Path(environ[TEST_KUBECONFIG]).expanduser(), TEST_KUBECONFIG)
        return BackendChoice("existing", f"{TEST_KUBECONFIG}={path}", kubeconfig_path=path)
    return BackendChoice("embedded", f"neither {KUBEBUILDER_ASSETS} nor {TEST_KUBECONFIG} is set")


def find_binaries(environ: Mapping[str, str]) -> ControlPlaneBinaries:
    """Locate kube-apiserver and etcd for the real back end, or explain precisely what is missing.

    kube-apiserver: ``TEST_ASSET_KUBE_APISERVER``, else ``$KUBEBUILDER_ASSETS/kube-apiserver``.
    etcd: ``ETCD_BINARY``, else ``TEST_ASSET_ETCD``, else ``$KUBEBUILDER_ASSETS/etcd``.
    """
    assets = environ.get(KUBEBUILDER_ASSETS, "")
    problems: list[str] = []
    folder = Path(assets).expanduser() if assets else None
    if folder is not None and not folder.is_dir():
        problems.append(f"{KUBEBUILDER_ASSETS}={assets} is not a folder")

    def locate(name: str, overrides: Sequence[str]) -> Path | None:
        for variable in overrides:
            if environ.get(variable):
                candidate = _on_path(environ[variable], environ.get("PATH"))
                if _is_executable(candidate):
                    return candidate.absolute()
                problems.append(f"{variable}={environ[variable]} is not an executable file")
                return None
        if folder is None:
            problems.append(f"no {name}: set {KUBEBUILDER_ASSETS} or {' / '.join(overrides)}")
            return None
        candidate = folder / name
        if _is_executable(candidate):
            return candidate.absolute()
        if folder.is_dir():
            problems.append(f"{KUBEBUILDER_ASSETS}={assets} holds no executable {name!r}")
        return None

    kube_apiserver = locate(KUBE_APISERVER, [TEST_ASSET_KUBE_APISERVER])
    etcd = locate("etcd", [ETCD_BINARY, TEST_ASSET_ETCD])
    if problems or kube_apiserver is None or etcd is None:
        raise BackendSelectionError(
            "cannot use the real-binaries back end: "
            + "; ".join(problems)
            + f" (install them with `setup-envtest use -p path`, or unset {KUBEBUILDER_ASSETS})"
        )
    return ControlPlaneBinaries(kube_apiserver=kube_apiserver, etcd=etcd)


class EmbeddedServerThread:
    """The embedded API server on its own event loop in a daemon thread.

    The server's loop keeps answering while the test's loop is blocked or between tests, which is
    what kubectl subprocesses and synchronous tests need. Clients talk to it over TCP as to any
    API server, so nothing is shared across the two loops but the server object itself.
    """

    def __init__(self, factory: EmbeddedServerFactory) -> None:
        self.factory = factory
        self.server: EmbeddedServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    async def start(self) -> EmbeddedServer:
        """Start the thread and the server in it; returns once the server listens."""
        if self._loop is not None:
            raise RuntimeError("the embedded server thread is already started")
        loop = self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._serve_forever, args=(loop,), name="cpo-embedded-apiserver", daemon=True
        )
        self._thread.start()
        try:
            self.server = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._create(), loop))
        except BaseException:
            await self.stop()
            raise
        return self.server

    async def stop(self) -> None:
        """Stop the server, then its loop, and join the thread. Safe to call twice."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            if self.server is not None:
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self.server.stop(), loop))
        finally:
            loop.call_soon_threadsafe(loop.stop)
            await asyncio.to_thread(thread.join)
            self._loop = self._thread = self.server = None

    async def _create(self) -> EmbeddedServer:
        # Built inside its own loop, so any asyncio object the server makes belongs to that loop.
        server = self.factory.new_server()
        await server.start()
        return server

    @staticmethod
    def _serve_forever(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            # Whatever the server left running (e.g. a watch stream mid-write) is cancelled and
            # awaited, so the loop closes without "task was destroyed but it is pending".
            leftovers = asyncio.all_tasks(loop)
            for task in leftovers:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()


def _existing_kubeconfig(
    explicit: str | os.PathLike[str] | None, environ: Mapping[str, str]
) -> tuple[Path, str]:
    if explicit is not None:
        return _existing_file(Path(explicit).expanduser(), "existing_kubeconfig"), "existing_kubeconfig"
    for variable in (TEST_KUBECONFIG, "KUBECONFIG"):
        value = environ.get(variable, "")
        first = value.split(os.pathsep)[0] if value else ""
        if first:
            return _existing_file(Path(first).expanduser(), variable), variable
    home = environ.get("HOME") or str(Path.home())
    return _existing_file(Path(home) / ".kube" / "config", "the default kubeconfig"), "~/.kube/config"


def _existing_file(path: Path, origin: str) -> Path:
    if not path.is_file():
        raise BackendSelectionError(f"{origin}: kubeconfig {path} does not exist")
    return path


def _on_path(value: str, search_path: str | None) -> Path:
    """A binary given as a bare name (``etcd``) is looked up on ``search_path``, as a shell would."""
    if os.sep not in value:
        found = shutil.which(value, path=search_path)
        if found:
            return Path(found)
    return Path(value).expanduser()


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)
