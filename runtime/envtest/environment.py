"""The test environment: pick an API server back end, start it, and hand out clients and helpers.

:class:`Environment` is the one object tests talk to. It chooses among three back ends with
:func:`select_backend` (real binaries, an existing cluster, or the embedded server), starts the
chosen one, and offers what an operator test needs around it: a kubeconfig dict and file, a
``kubernetes_asyncio`` client, and CRD / webhook-configuration / namespace helpers that wait until
the API server really serves what was installed. :class:`EnvironmentOptions` holds every knob;
:meth:`EnvironmentOptions.resolve` is the single place where unset knobs get their defaults.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
import re
import secrets
import shutil
import tempfile
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import load_kube_config_from_dict

from ..localproc import FlagOverrides
from .binaries import KUBE_APISERVER, BinaryControlPlane, ControlPlaneBinaries
from .kubeconfig import Kubeconfig, load_kubeconfig, server_url, write_kubeconfig

log = logging.getLogger(__name__)

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

DEFAULT_START_TIMEOUT = 60.0
DEFAULT_STOP_TIMEOUT = 20.0
DEFAULT_CRD_INSTALL_TIMEOUT = 30.0
# How often the helpers re-check the API server while waiting for something to become true.
POLL_INTERVAL = 0.05
_REQUEST_TIMEOUT = 30

_CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
_WEBHOOK_CONFIGURATION_PATHS = {
    "MutatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
}
_MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
_MAX_NAMESPACE_LENGTH = 63
_UPDATE_ATTEMPTS = 5

JSON = dict[str, Any]
ManifestSource = str | os.PathLike[str] | Mapping[str, Any]


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
    """Choose the back end from environment variables, in DESIGN §6's order of preference.

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


@dataclass
class EnvironmentOptions:
    """How to build an :class:`Environment`. Every field may stay unset; see :meth:`resolve`."""

    crd_paths: Sequence[str | os.PathLike[str]] = ()
    """Files or folders (non-recursive; ``.yaml``, ``.yml``, ``.json``) of CRDs installed at start."""
    crds: Sequence[Mapping[str, Any]] = ()
    """CRD objects installed at start, in addition to ``crd_paths``."""
    error_if_crd_path_missing: bool = True
    """A ``crd_paths`` entry that does not exist fails the start (False: it is skipped)."""
    crd_install_timeout: float | None = None
    """Seconds to wait for CRDs to be Established and served. Default 30."""
    backend: BackendName | None = None
    """Force a back end. Default: :func:`select_backend` decides from the environment variables."""
    use_existing_cluster: bool = False
    """Attach to an existing cluster (controller-runtime's flag); the same as ``backend="existing"``.
    Nothing is torn down at stop except the namespaces made with :meth:`Environment.create_namespace`."""
    existing_kubeconfig: str | os.PathLike[str] | None = None
    """Kubeconfig of the existing cluster. Default ``CPO_TEST_KUBECONFIG``, else the first file of
    ``KUBECONFIG``, else ``~/.kube/config``."""
    existing_context: str | None = None
    """Context of ``existing_kubeconfig`` to use. Default: its current-context."""
    start_timeout: float | None = None
    """Seconds each real binary may take to become ready. Default
    ``KUBEBUILDER_CONTROLPLANE_START_TIMEOUT`` (a Go duration such as ``90s``), else 60."""
    stop_timeout: float | None = None
    """Seconds a real binary gets after SIGTERM before SIGKILL. Default
    ``KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT``, else 20."""
    attach_control_plane_output: bool | None = None
    """Let the real binaries write to our stdout/stderr instead of log files. Default
    ``KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT=true``, else False."""
    kube_apiserver_flags: FlagOverrides = field(default_factory=dict)
    """Real kube-apiserver only: flags to add or replace (``{"v": "4"}``); ``None`` drops a default."""
    embedded: EmbeddedServerFactory | None = None
    """The embedded back end's server (its options, e.g. ``apiserver.EmbeddedServerOptions()``).
    The framework ships no API server of its own: without this the embedded back end is refused
    with an error saying which back ends remain."""
    embedded_in_thread: bool = True
    """Embedded back end only: serve from a background thread with its own event loop, so test code
    that blocks (``subprocess.run(["kubectl", ...])``, a synchronous test) cannot stall the server.
    False serves from the caller's loop, which must then keep running while clients wait."""
    environ: Mapping[str, str] | None = None
    """The environment variables consulted. Default ``os.environ``."""

    def resolve(self) -> ResolvedOptions:
        """Fill every unset field: explicit option, then environment variable, then built-in default."""
        environ = dict(os.environ if self.environ is None else self.environ)
        if self.use_existing_cluster and self.backend not in (None, "existing"):
            raise ValueError(f"use_existing_cluster=True contradicts backend={self.backend!r}")
        wanted: BackendName | None = "existing" if self.use_existing_cluster else self.backend
        if wanted is not None and wanted not in BACKENDS:
            raise ValueError(f"unknown back end {wanted!r}; expected one of {', '.join(BACKENDS)}")
        if wanted is None:
            choice = select_backend(environ)
        elif wanted == "binaries":
            choice = BackendChoice("binaries", "requested by EnvironmentOptions", find_binaries(environ))
        elif wanted == "embedded":
            choice = BackendChoice("embedded", "requested by EnvironmentOptions")
        else:
            choice = BackendChoice("existing", "requested by EnvironmentOptions")
        if choice.backend == "existing" and (
            self.existing_kubeconfig is not None or choice.kubeconfig_path is None
        ):
            path, source = _existing_kubeconfig(self.existing_kubeconfig, environ)
            choice = BackendChoice(
                "existing", f"{choice.reason}; kubeconfig {path} ({source})", kubeconfig_path=path
            )

        embedded = self.embedded
        if embedded is None and choice.backend == "embedded":
            raise BackendSelectionError(
                f"the embedded back end was chosen ({choice.reason}) but EnvironmentOptions.embedded "
                f"names no server: pass one (e.g. apiserver.EmbeddedServerOptions()), or set "
                f"{KUBEBUILDER_ASSETS} (real binaries) or {TEST_KUBECONFIG} (an existing cluster)"
            )
        return ResolvedOptions(
            choice=choice,
            crd_sources=(*self.crd_paths, *self.crds),
            error_if_crd_path_missing=self.error_if_crd_path_missing,
            crd_install_timeout=_first(self.crd_install_timeout, None, DEFAULT_CRD_INSTALL_TIMEOUT),
            start_timeout=_first(
                self.start_timeout, _duration(environ, START_TIMEOUT), DEFAULT_START_TIMEOUT
            ),
            stop_timeout=_first(self.stop_timeout, _duration(environ, STOP_TIMEOUT), DEFAULT_STOP_TIMEOUT),
            attach_control_plane_output=(
                self.attach_control_plane_output
                if self.attach_control_plane_output is not None
                else environ.get(ATTACH_OUTPUT, "").lower() == "true"
            ),
            kube_apiserver_flags=dict(self.kube_apiserver_flags),
            embedded=embedded,
            embedded_in_thread=self.embedded_in_thread,
            existing_context=self.existing_context,
        )


@dataclass(frozen=True)
class ResolvedOptions:
    """:class:`EnvironmentOptions` with every default filled in; what :class:`Environment` runs on."""

    choice: BackendChoice
    crd_sources: tuple[ManifestSource, ...]
    error_if_crd_path_missing: bool
    crd_install_timeout: float
    start_timeout: float
    stop_timeout: float
    attach_control_plane_output: bool
    kube_apiserver_flags: FlagOverrides
    embedded: EmbeddedServerFactory | None
    embedded_in_thread: bool
    existing_context: str | None


class Environment:
    """An API server for tests, whichever back end provides it (see the package docstring).

    ``async with Environment(options) as env:`` starts it; the attributes below are valid inside.
    """

    def __init__(self, options: EnvironmentOptions | None = None) -> None:
        self.options = options or EnvironmentOptions()
        self.resolved: ResolvedOptions | None = None
        self.embedded_server: Any = None
        """The embedded server when that back end runs (for ``map_service`` and friends). With
        ``embedded_in_thread`` it runs on another thread: call only its plain methods, not coroutines."""
        self._server_thread: EmbeddedServerThread | None = None
        self.control_plane: BinaryControlPlane | None = None
        """The etcd + kube-apiserver processes when the real-binaries back end runs."""
        self._kubeconfig: Kubeconfig | None = None
        self._kubeconfig_path: Path | None = None
        self._workdir: Path | None = None
        self._configuration: Configuration | None = None
        self._api: ApiClient | None = None
        self._created_namespaces: list[str] = []

    # ----------------------------------------------------------------------------- lifecycle

    async def __aenter__(self) -> Environment:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start (or attach to) the API server, write the kubeconfig, install the configured CRDs."""
        if self._api is not None:
            raise RuntimeError("the environment is already started")
        resolved = self.resolved = self.options.resolve()
        choice = resolved.choice
        log.info("envtest back end %s: %s", choice.backend, choice.reason)
        self._workdir = Path(tempfile.mkdtemp(prefix="cpo-envtest-env-"))
        try:
            if choice.backend == "embedded":
                server = await self._start_embedded(resolved)
                kubeconfig = server.kubeconfig()
            elif choice.backend == "binaries":
                assert choice.binaries is not None
                self.control_plane = BinaryControlPlane(
                    choice.binaries,
                    start_timeout=resolved.start_timeout,
                    stop_timeout=resolved.stop_timeout,
                    attach_output=resolved.attach_control_plane_output,
                    apiserver_flags=resolved.kube_apiserver_flags,
                )
                await self.control_plane.start()
                kubeconfig = self.control_plane.kubeconfig()
            else:
                assert choice.kubeconfig_path is not None
                kubeconfig = load_kubeconfig(choice.kubeconfig_path, resolved.existing_context)
            self._kubeconfig = kubeconfig
            self._kubeconfig_path = write_kubeconfig(kubeconfig, self._workdir / "kubeconfig")
            configuration = Configuration()
            # No temp_file_path: kubernetes_asyncio caches the certificate files it writes in a
            # process-wide table keyed by content, so files we deleted at stop would be handed to
            # the next client with the same CA. It removes its own files when the process exits.
            await load_kube_config_from_dict(copy.deepcopy(kubeconfig), client_configuration=configuration)
            self._configuration = configuration
            self._api = ApiClient(configuration=configuration)
            await self._check_reachable()
            if resolved.crd_sources:
                await self.install_crds(resolved.crd_sources, timeout=resolved.crd_install_timeout)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Tear down what this environment started; an existing cluster only loses our namespaces."""
        try:
            if self._api is not None and self.backend == "existing":
                for name in list(self._created_namespaces):
                    try:
                        await self.delete_namespace(name)
                    except ApiException as err:
                        log.warning("could not delete test namespace %s: %s", name, err.reason)
        finally:
            if self._api is not None:
                await self._api.close()
                self._api = None
            if self._server_thread is not None:
                await self._server_thread.stop()
                self._server_thread = None
            elif self.embedded_server is not None:
                await self.embedded_server.stop()
            self.embedded_server = None
            if self.control_plane is not None:
                await self.control_plane.stop()
                self.control_plane = None
            if self._workdir is not None:
                shutil.rmtree(self._workdir, ignore_errors=True)
                self._workdir = None
            self._created_namespaces.clear()

    async def _start_embedded(self, resolved: ResolvedOptions) -> EmbeddedServer:
        assert resolved.embedded is not None
        server: EmbeddedServer
        if resolved.embedded_in_thread:
            self._server_thread = EmbeddedServerThread(resolved.embedded)
            server = await self._server_thread.start()
        else:
            server = resolved.embedded.new_server()
            await server.start()
        self.embedded_server = server
        return server

    # ---------------------------------------------------------------------------- accessors

    @property
    def backend(self) -> BackendName:
        """``"binaries"``, ``"existing"`` or ``"embedded"``."""
        if self.resolved is None:
            raise RuntimeError("the environment is not started")
        return self.resolved.choice.backend

    @property
    def owns_cluster(self) -> bool:
        """False when attached to an existing cluster, whose state outlives the tests."""
        return self.backend != "existing"

    @property
    def kubeconfig(self) -> Kubeconfig:
        """A self-contained kubeconfig dict (one context, certificates inlined)."""
        if self._kubeconfig is None:
            raise RuntimeError("the environment is not started")
        return self._kubeconfig

    @property
    def kubeconfig_path(self) -> Path:
        """:attr:`kubeconfig` written to a private temporary file, for kubectl and subprocesses."""
        if self._kubeconfig_path is None:
            raise RuntimeError("the environment is not started")
        return self._kubeconfig_path

    @property
    def url(self) -> str:
        """The API server's base URL, e.g. ``https://127.0.0.1:40123``."""
        return server_url(self.kubeconfig)

    def client(self) -> ApiClient:
        """A new ``kubernetes_asyncio`` client for this cluster; close it (``async with``) when done."""
        if self._configuration is None:
            raise RuntimeError("the environment is not started")
        return ApiClient(configuration=self._configuration)

    # ----------------------------------------------------------------------------------- CRDs

    async def install_crds(
        self,
        crds: Iterable[ManifestSource],
        timeout: float | None = None,  # noqa: ASYNC109 -- a polling budget, not a cancellation scope
    ) -> list[JSON]:
        """Create or update each CRD, then wait until all are Established and served in discovery.

        ``crds`` mixes CRD objects and paths of files or folders (documents of other kinds are
        skipped). Returns the CRDs as the server stored them.
        """
        budget = self._timeout(timeout)
        documents = load_manifests(
            crds, kinds={"CustomResourceDefinition"}, error_if_missing=self._error_if_crd_path_missing
        )
        installed: list[JSON] = []
        for crd in documents:
            if crd.get("apiVersion") != "apiextensions.k8s.io/v1":
                raise ValueError(
                    f"CRD {_name(crd)!r} has apiVersion {crd.get('apiVersion')!r}; only "
                    "apiextensions.k8s.io/v1 "
                    "is served by current API servers"
                )
            installed.append(await self._create_or_update(_CRD_PATH, crd))
        await self._poll(budget, lambda: self._crds_not_ready(installed), "CRDs to be Established and served")
        return installed

    async def uninstall_crds(
        self,
        crds: Iterable[ManifestSource],
        timeout: float | None = None,  # noqa: ASYNC109 -- a polling budget, not a cancellation scope
    ) -> None:
        """Delete each CRD (absent ones are fine) and wait until it and its resources are gone."""
        budget = self._timeout(timeout)
        documents = load_manifests(
            crds, kinds={"CustomResourceDefinition"}, error_if_missing=self._error_if_crd_path_missing
        )
        for crd in documents:
            await self._delete_ignoring_missing(f"{_CRD_PATH}/{_name(crd)}")
        await self._poll(budget, lambda: self._crds_not_gone(documents), "CRDs to be removed")

    async def _crds_not_ready(self, crds: Sequence[JSON]) -> list[str]:
        waiting: list[str] = []
        for crd in crds:
            name = _name(crd)
            current = await self._get_or_none(f"{_CRD_PATH}/{name}")
            conditions = ((current or {}).get("status") or {}).get("conditions") or []
            if not any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                waiting.append(f"{name} is not Established")
                continue
            spec = crd["spec"]
            for version in spec.get("versions") or []:
                if version.get("served") and not await self._discovery_lists(
                    spec["group"], version["name"], spec["names"]["plural"]
                ):
                    waiting.append(f"{name} is not served at /apis/{spec['group']}/{version['name']}")
        return waiting

    async def _crds_not_gone(self, crds: Sequence[JSON]) -> list[str]:
        waiting: list[str] = []
        for crd in crds:
            name = _name(crd)
            if await self._get_or_none(f"{_CRD_PATH}/{name}") is not None:
                waiting.append(f"{name} still exists")
                continue
            spec = crd.get("spec") or {}
            for version in spec.get("versions") or []:
                if await self._discovery_lists(spec["group"], version["name"], spec["names"]["plural"]):
                    waiting.append(f"{name} is still served at /apis/{spec['group']}/{version['name']}")
        return waiting

    async def _discovery_lists(self, group: str, version: str, plural: str) -> bool:
        document = await self._get_or_none(f"/apis/{group}/{version}")
        return any(r.get("name") == plural for r in (document or {}).get("resources") or [])

    # ------------------------------------------------------------------ webhook configurations

    async def install_webhook_configurations(self, configurations: Iterable[ManifestSource]) -> list[JSON]:
        """Create or update Mutating/ValidatingWebhookConfigurations and wait until they are stored.

        Paths are read like CRD paths; other kinds are skipped. Returns the stored objects.
        """
        installed: list[JSON] = []
        for obj in load_manifests(configurations, kinds=set(_WEBHOOK_CONFIGURATION_PATHS)):
            installed.append(await self._create_or_update(_WEBHOOK_CONFIGURATION_PATHS[obj["kind"]], obj))

        async def missing() -> list[str]:
            return [
                f"{obj['kind']} {_name(obj)}"
                for obj in installed
                if await self._get_or_none(f"{_WEBHOOK_CONFIGURATION_PATHS[obj['kind']]}/{_name(obj)}")
                is None
            ]

        await self._poll(self._timeout(None), missing, "webhook configurations to be stored")
        return installed

    async def uninstall_webhook_configurations(self, configurations: Iterable[ManifestSource]) -> None:
        """Delete webhook configurations (absent ones are fine)."""
        for obj in load_manifests(configurations, kinds=set(_WEBHOOK_CONFIGURATION_PATHS)):
            await self._delete_ignoring_missing(f"{_WEBHOOK_CONFIGURATION_PATHS[obj['kind']]}/{_name(obj)}")

    # ---------------------------------------------------------------------------- namespaces

    async def create_namespace(self, name: str, *, labels: Mapping[str, str] | None = None) -> JSON:
        """Create a namespace; on an existing cluster it is deleted again at :meth:`stop`."""
        metadata: JSON = {"name": name}
        if labels:
            metadata["labels"] = dict(labels)
        created = await self._call(
            "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}
        )
        self._created_namespaces.append(name)
        return created

    async def delete_namespace(self, name: str) -> None:
        """Delete a namespace (absent is fine). Without a namespace controller it stays Terminating."""
        await self._delete_ignoring_missing(f"/api/v1/namespaces/{name}")
        if name in self._created_namespaces:
            self._created_namespaces.remove(name)

    # ------------------------------------------------------------------------------- internals

    @property
    def _error_if_crd_path_missing(self) -> bool:
        return self.resolved.error_if_crd_path_missing if self.resolved is not None else True

    def _timeout(self, timeout: float | None) -> float:
        if timeout is not None:
            return timeout
        return self.resolved.crd_install_timeout if self.resolved is not None else DEFAULT_CRD_INSTALL_TIMEOUT

    async def _check_reachable(self) -> None:
        try:
            await self._call("GET", "/version")
        except (ApiException, OSError) as err:
            detail = err.reason if isinstance(err, ApiException) else str(err)
            raise ConnectionError(
                f"the API server at {self.url} does not answer GET /version: {detail}"
            ) from err

    async def _call(self, method: str, path: str, body: Any = None) -> JSON:
        if self._api is None:
            raise RuntimeError("the environment is not started")
        result: JSON = await self._api.call_api(
            path,
            method,
            header_params={"Accept": "application/json", "Content-Type": "application/json"},
            body=body,
            response_types_map={200: "object", 201: "object", 202: "object"},
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
            _request_timeout=_REQUEST_TIMEOUT,
        )
        return result

    async def _get_or_none(self, path: str) -> JSON | None:
        try:
            return await self._call("GET", path)
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    async def _delete_ignoring_missing(self, path: str) -> None:
        try:
            await self._call("DELETE", path)
        except ApiException as err:
            if err.status != 404:
                raise

    async def _create_or_update(self, collection_path: str, obj: Mapping[str, Any]) -> JSON:
        """POST; when the object exists, PUT it over the stored one (retrying on write conflicts)."""
        try:
            return await self._call("POST", collection_path, dict(obj))
        except ApiException as err:
            if err.status != 409:
                raise
        path = f"{collection_path}/{_name(obj)}"
        for _ in range(_UPDATE_ATTEMPTS):
            current = await self._call("GET", path)
            desired = copy.deepcopy(dict(obj))
            desired.setdefault("metadata", {})["resourceVersion"] = current["metadata"]["resourceVersion"]
            try:
                return await self._call("PUT", path, desired)
            except ApiException as err:
                if err.status != 409:
                    raise
        raise RuntimeError(f"{path} kept changing under us; gave up after {_UPDATE_ATTEMPTS} attempts")

    async def _poll(self, budget: float, pending: Callable[[], Awaitable[list[str]]], what: str) -> None:
        """Re-run ``pending()`` (what is still missing, described) until it returns nothing."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget
        while True:
            waiting: list[str] = await pending()
            if not waiting:
                return
            if loop.time() >= deadline:
                raise TimeoutError(f"timed out after {budget:g}s waiting for {what}: {'; '.join(waiting)}")
            await asyncio.sleep(POLL_INTERVAL)


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


# ------------------------------------------------------------------------------- manifests


def load_manifests(
    sources: Iterable[ManifestSource], *, kinds: set[str], error_if_missing: bool = True
) -> list[JSON]:
    """The objects of ``kinds`` among ``sources``: objects as they are, files and folders parsed.

    Folders are read non-recursively, files with a ``.yaml``/``.yml``/``.json`` suffix, in name
    order; multi-document YAML and ``kind: List`` are unpacked. Objects are copied, never shared.
    """
    if isinstance(sources, (str, os.PathLike, Mapping)):
        sources = [sources]
    found: list[JSON] = []
    for source in sources:
        if isinstance(source, Mapping):
            documents: list[Any] = [source]
        else:
            documents = _read_manifest_path(Path(source), error_if_missing)
        for document in _unpack_lists(documents):
            if document.get("kind") in kinds:
                found.append(copy.deepcopy(dict(document)))
    return found


def _read_manifest_path(path: Path, error_if_missing: bool) -> list[Any]:
    if not path.exists():
        if error_if_missing:
            raise FileNotFoundError(f"manifest path {path} does not exist")
        return []
    files = (
        sorted(p for p in path.iterdir() if p.is_file() and p.suffix in _MANIFEST_SUFFIXES)
        if path.is_dir()
        else [path]
    )
    documents: list[Any] = []
    for file in files:
        try:
            documents.extend(doc for doc in yaml.safe_load_all(file.read_text(encoding="utf-8")) if doc)
        except yaml.YAMLError as err:
            raise ValueError(f"{file} is not valid YAML/JSON: {err}") from err
    return documents


def _unpack_lists(documents: Iterable[Any]) -> Iterable[Mapping[str, Any]]:
    for document in documents:
        if not isinstance(document, Mapping):
            continue
        if document.get("kind") == "List" or str(document.get("kind", "")).endswith("List"):
            yield from _unpack_lists(document.get("items") or [])
        else:
            yield document


# ------------------------------------------------------------------------------- helpers


def unique_namespace_name(hint: str) -> str:
    """A fresh, valid namespace name derived from ``hint`` (e.g. a test name) plus a random suffix."""
    suffix = secrets.token_hex(3)
    stem = re.sub(r"[^a-z0-9-]+", "-", hint.lower())
    stem = re.sub(r"-{2,}", "-", stem).strip("-")[: _MAX_NAMESPACE_LENGTH - len(suffix) - 1].rstrip("-")
    return f"{stem or 'test'}-{suffix}"


def parse_duration(text: str) -> float:
    """Seconds in a Go-style duration (``90s``, ``1m30s``, ``500ms``) or a plain number of seconds."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)", text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise ValueError(f"invalid duration {text!r}")
    return sum(float(number) * units[unit] for number, unit in parts)


def _duration(environ: Mapping[str, str], variable: str) -> float | None:
    value = environ.get(variable)
    if not value:
        return None
    try:
        return parse_duration(value)
    except ValueError as err:
        raise ValueError(f"{variable}: {err}") from None


def _first(*values: float | None) -> float:
    for value in values:
        if value is not None:
            return value
    raise ValueError("no value")


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


def _name(obj: Mapping[str, Any]) -> str:
    name = (obj.get("metadata") or {}).get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{obj.get('kind', 'object')} without metadata.name")
    return name
