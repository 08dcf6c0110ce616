"""The test environment: start the chosen API server back end and hand out clients and helpers.

:class:`Environment` is the one object tests talk to. It starts the back end its options choose
(real binaries, an existing cluster, or the embedded server; see :mod:`runtime.envtest.backends`)
and offers what an operator test needs around it: a kubeconfig dict and file, a
``kubernetes_asyncio`` client, and CRD / webhook-configuration / namespace helpers that wait until
the API server really serves what was installed.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import re
import secrets
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import load_kube_config_from_dict

from ..jsoncodec import JSON
from .backends import BackendName, EmbeddedServer, EmbeddedServerThread
from .binaries import BinaryControlPlane
from .kubeconfig import Kubeconfig, load_kubeconfig, server_url, write_kubeconfig
from .manifests import ManifestSource, load_manifests
from .options import DEFAULT_CRD_INSTALL_TIMEOUT, EnvironmentOptions, ResolvedOptions

log = logging.getLogger(__name__)


# How often the helpers re-check the API server while waiting for something to become true.
POLL_INTERVAL = 0.05
_REQUEST_TIMEOUT = 30

_CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
_WEBHOOK_CONFIGURATION_PATHS = {
    "MutatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
}


_MAX_NAMESPACE_LENGTH = 63
_UPDATE_ATTEMPTS = 5


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
        resolved = self.resolved = self.options.with_defaults()
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


def unique_namespace_name(hint: str) -> str:
    """A fresh, valid namespace name derived from ``hint`` (e.g. a test name) plus a random suffix."""
    suffix = secrets.token_hex(3)
    stem = re.sub(r"[^a-z0-9-]+", "-", hint.lower())
    stem = re.sub(r"-{2,}", "-", stem).strip("-")[: _MAX_NAMESPACE_LENGTH - len(suffix) - 1].rstrip("-")
    return f"{stem or 'test'}-{suffix}"


def _name(obj: Mapping[str, Any]) -> str:
    name = (obj.get("metadata") or {}).get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{obj.get('kind', 'object')} without metadata.name")
    return name
