"""The runtime's Kubernetes client: CRUD, patch, subresources and raw watch streams over plain dicts.

This is the counterpart of controller-runtime's ``client.Client``. Objects are JSON dicts on the hot
path: kubernetes_asyncio's OpenAPI models cost ~20x a ``json.loads`` per object (see
``/work/shared/reference/runtime-notes.md`` §d), so the client speaks HTTP itself through one
aiohttp session and uses kubernetes_asyncio only to *load credentials* (kubeconfig tokens, client
certificates, exec plugins, in-cluster service accounts). Measured against the embedded server
(500 GETs of one ConfigMap, JSON decoded either way), a GET through this session took ~540 µs and
one through ``ApiClient.call_api(..., _preload_content=False)`` ~1.5 ms: its parameter sanitising
and header plumbing run on every call.

Usage::

    async with await Client.from_kubeconfig(path_or_dict) as client:
        cm = await client.get("v1", "ConfigMap", "cfg", namespace="ns")
        await client.patch("v1", "ConfigMap", "cfg", {"data": {"k": "v"}}, namespace="ns")
        async for event in client.watch("v1", "ConfigMap", namespace="ns", timeout_seconds=300):
            ...

Pydantic models are accepted wherever an object goes in (``create(model_instance)``) and come back
when a model class is given (``get(..., model=Machine)``).

Kinds are mapped to REST paths through discovery (:class:`RESTMapper`), cached per group-version
and refreshed when a kind is missing (a CRD installed after start). Failures raise the typed
errors of :mod:`runtime.errors`. 429 and 503 answers are retried after their ``Retry-After``
delay, a bounded number of times (:class:`ClientOptions`). Every HTTP request counts in
``rest_client_requests_total{code,method,host}`` and ``rest_client_request_duration_seconds``.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import ssl
import sys
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeGuard, TypeVar, overload
from urllib.parse import quote, urlsplit

import aiohttp
import yaml

from . import jsoncodec, metrics
from ._kube_credentials import (
    ConfigException,
    Configuration,
    load_incluster_config,
    load_kube_config_from_dict,
)
from .errors import APIError, NoKindMatch, from_status

if TYPE_CHECKING:
    # Types only: importing pydantic costs an operator ~5 MiB of RSS, and one that passes plain
    # dicts never needs it. At run time models are recognised by _is_model.
    from pydantic import BaseModel

JSON = dict[str, Any]
M = TypeVar("M", bound="BaseModel")
PatchType = Literal["merge", "json", "strategic", "apply"]

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    # JSON is YAML, so an apply body needs no YAML encoder.
    "apply": "application/apply-patch+yaml",
}

RETRIABLE_STATUSES = frozenset({429, 503})

# The wait between retries; a module attribute so tests can observe delays without sleeping.
_sleep = asyncio.sleep


# ------------------------------------------------------------------------------------------ options


@dataclass(frozen=True)
class ClientOptions:
    """How the client talks to the server. ``None`` means "use the default"; see :meth:`resolved`.

    qps:           client-side requests per second. Defaults to None: no client-side limit, as
                   controller-runtime's ``GetConfig`` (QPS=-1), relying on API Priority and Fairness.
    burst:         requests allowed at once above ``qps``. Defaults to 10 (client-go's default).
    retries:       extra attempts after a 429/503 answer. Defaults to 10 (client-go's maxRetries).
    max_retry_wait: cap on one wait between attempts, seconds. Defaults to 30.
    timeout:       seconds for one non-watch request, connect to last byte. Defaults to 60.
    user_agent:    ``User-Agent`` header. Defaults to ``<program> (<os>/<arch>) cpo-runtime``.
    field_manager: ``fieldManager`` sent with writes. Defaults to None: the server derives one
                   from the user agent, except for server-side apply, which requires one.
    """

    qps: float | None = None
    burst: int | None = None
    retries: int | None = None
    max_retry_wait: float | None = None
    timeout: float | None = None
    user_agent: str | None = None
    field_manager: str | None = None

    def resolved(self) -> ResolvedClientOptions:
        """The options with every default filled in: the one place defaults are decided."""
        program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
        return ResolvedClientOptions(
            qps=self.qps if self.qps is not None and self.qps > 0 else None,
            burst=self.burst if self.burst is not None else 10,
            retries=self.retries if self.retries is not None else 10,
            max_retry_wait=self.max_retry_wait if self.max_retry_wait is not None else 30.0,
            timeout=self.timeout if self.timeout is not None else 60.0,
            user_agent=self.user_agent or f"{program} ({sys.platform}/{platform.machine()}) cpo-runtime",
            field_manager=self.field_manager,
        )


@dataclass(frozen=True)
class ResolvedClientOptions:
    """:class:`ClientOptions` after defaulting; ``qps`` None means unlimited."""

    qps: float | None
    burst: int
    retries: int
    max_retry_wait: float
    timeout: float
    user_agent: str
    field_manager: str | None


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


# ------------------------------------------------------------------------------------------ mapping


@dataclass(frozen=True)
class ResourceInfo:
    """Where a kind lives: ``/api/v1`` or ``/apis/<group>/<version>``, plus its plural and scope."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    subresources: frozenset[str] = frozenset()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The REST path; ``namespace`` is ignored for cluster-scoped kinds, None lists all namespaces."""
        parts = [self.group_version_path]
        if self.namespaced and namespace:
            parts.append(f"/namespaces/{quote(namespace, safe='')}")
        parts.append(f"/{self.plural}")
        if name is not None:
            if not name:
                raise ValueError(f"{self.kind}: an empty name")
            parts.append(f"/{quote(name, safe='')}")
            if subresource:
                parts.append(f"/{subresource}")
        return "".join(parts)


class RESTMapper:
    """Maps ``(apiVersion, kind)`` to :class:`ResourceInfo` via discovery, cached per group-version.

    A kind missing from the cache refetches its group-version once (a CRD may have appeared since);
    still missing, it raises :class:`~runtime.errors.NoKindMatch`. Concurrent misses share one fetch.
    """

    def __init__(self, client: Client) -> None:
        self._client = client
        self._by_group_version: dict[str, dict[str, ResourceInfo]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def invalidate(self, api_version: str | None = None) -> None:
        """Forget one group-version (or all); the next lookup rediscovers it."""
        if api_version is None:
            self._by_group_version.clear()
        else:
            self._by_group_version.pop(api_version, None)

    async def resource_for(self, api_version: str, kind: str) -> ResourceInfo:
        known = self._by_group_version.get(api_version)
        if known is not None and kind in known:
            return known[kind]
        lock = self._locks.setdefault(api_version, asyncio.Lock())
        async with lock:
            current = self._by_group_version.get(api_version)
            if current is not None and current is not known and kind in current:
                return current[kind]  # another task refreshed while we waited
            current = await self._discover(api_version)
            self._by_group_version[api_version] = current
        if kind not in current:
            raise NoKindMatch(api_version, kind)
        return current[kind]

    async def _discover(self, api_version: str) -> dict[str, ResourceInfo]:
        group, _, version = api_version.rpartition("/")
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            listing = await self._client.request_json("GET", path)
        except APIError as err:
            if err.status == 404:
                return {}
            raise
        subresources: dict[str, set[str]] = {}
        for resource in listing.get("resources", []):
            plural, _, sub = str(resource.get("name", "")).partition("/")
            if sub:
                subresources.setdefault(plural, set()).add(sub)
        found: dict[str, ResourceInfo] = {}
        for resource in listing.get("resources", []):
            name = str(resource.get("name", ""))
            if "/" in name:
                continue
            found[str(resource["kind"])] = ResourceInfo(
                group=group,
                version=version,
                kind=str(resource["kind"]),
                plural=name,
                namespaced=bool(resource.get("namespaced")),
                subresources=frozenset(subresources.get(name, ())),
            )
        return found


# ------------------------------------------------------------------------------------------ client


@dataclass
class ObjectList(Generic[M]):
    """A LIST answer with its items decoded into a model class."""

    items: list[M]
    resource_version: str = ""
    continue_: str = ""
    remaining_item_count: int | None = None
    raw_metadata: JSON = field(default_factory=dict)


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


class Client:
    """An async Kubernetes client over JSON dicts; build it with :meth:`from_kubeconfig`,
    :meth:`in_cluster` or :meth:`from_configuration`, and close it (``async with``) when done."""

    def __init__(
        self,
        configuration: Configuration,
        options: ClientOptions | None = None,
        *,
        kubeconfig: JSON | None = None,
        context: str | None = None,
    ) -> None:
        """LOW LEVEL: prefer the ``from_*`` constructors, which load credentials for you.

        Must be called inside a running event loop (the aiohttp session binds to it).
        """
        self.options = (options or ClientOptions()).resolved()
        self._connection = _Connection(configuration, kubeconfig, context)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self._connection.ssl_context(), limit=100),
            # Watch events and large lists can exceed aiohttp's default 64 KiB read buffer.
            read_bufsize=2**21,
        )
        self._limiter = (
            _TokenBucket(self.options.qps, self.options.burst) if self.options.qps is not None else None
        )
        self.mapper = RESTMapper(self)
        host = self._connection.host
        # Label children looked up once per client: a labels() lookup costs more than the update.
        self._duration_by_method = {
            method: metrics.rest_client_request_duration_seconds.labels(method, host)
            for method in ("GET", "POST", "PUT", "PATCH", "DELETE")
        }
        self._requests_by_code: dict[tuple[str, str], Any] = {}

    # ---------------------------------------------------------------------------- constructors

    @classmethod
    async def from_kubeconfig(
        cls,
        kubeconfig: Mapping[str, Any] | str | os.PathLike[str],
        *,
        context: str | None = None,
        options: ClientOptions | None = None,
    ) -> Client:
        """A client for ``kubeconfig`` (a dict, or a path to a YAML file) and its ``context``."""
        if isinstance(kubeconfig, Mapping):
            document: JSON = json.loads(json.dumps(kubeconfig))
        else:
            loaded = yaml.safe_load(await asyncio.to_thread(Path(kubeconfig).read_text))
            if not isinstance(loaded, dict):
                raise ValueError(f"{kubeconfig}: not a kubeconfig document")
            document = loaded
        configuration = Configuration()
        # The loader mutates what it is given (exec results, temp-file paths): hand it a copy.
        await load_kube_config_from_dict(
            json.loads(json.dumps(document)), context=context, client_configuration=configuration
        )
        return cls(configuration, options, kubeconfig=document, context=context)

    @classmethod
    async def in_cluster(cls, options: ClientOptions | None = None) -> Client:
        """A client using the pod's service account (token reread as the kubelet rotates it)."""
        configuration = Configuration()
        load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        return cls(configuration, options)

    @classmethod
    async def from_configuration(
        cls, configuration: Configuration, options: ClientOptions | None = None
    ) -> Client:
        """A client sharing an already loaded kubernetes_asyncio ``Configuration``."""
        return cls(configuration, options)

    async def close(self) -> None:
        await self._session.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def host(self) -> str:
        """``host:port`` of the API server, the ``host`` label of the REST metrics."""
        return self._connection.host

    # ------------------------------------------------------------------------------ reads

    @overload
    async def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> JSON: ...
    @overload
    async def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None, *, model: type[M]
    ) -> M: ...
    async def get(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        model: type[M] | None = None,
    ) -> JSON | M:
        """The object ``name``; raises :class:`~runtime.errors.NotFound` when it does not exist."""
        info = await self._resource(api_version, kind, namespace, name=True)
        return _out(await self.request_json("GET", info.path(namespace, name)), model)

    @overload
    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> JSON: ...
    @overload
    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        model: type[M],
    ) -> ObjectList[M]: ...
    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        model: type[M] | None = None,
    ) -> JSON | ObjectList[M]:
        """One LIST page (``namespace`` None: all namespaces). Without ``model``, the raw list dict
        (``items``, ``metadata.resourceVersion``, ``metadata.continue``); with it, an :class:`ObjectList`."""
        info = await self._resource(api_version, kind, namespace, name=False)
        query = _query(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            limit=limit,
            resourceVersion=resource_version,
            resourceVersionMatch=resource_version_match,
        )
        if continue_:
            query["continue"] = continue_
        listing = await self.request_json("GET", info.path(namespace), query=query)
        if model is None:
            return listing
        meta = listing.get("metadata") or {}
        return ObjectList(
            items=[model.model_validate(item) for item in listing.get("items") or []],
            resource_version=str(meta.get("resourceVersion", "")),
            continue_=str(meta.get("continue", "")),
            remaining_item_count=meta.get("remainingItemCount"),
            raw_metadata=dict(meta),
        )

    # ------------------------------------------------------------------------------ writes

    @overload
    async def create(self, obj: M, *, field_manager: str | None = None, dry_run: bool = False) -> M: ...
    @overload
    async def create(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> JSON: ...
    @overload
    async def create(
        self,
        obj: Mapping[str, Any],
        *,
        model: type[M],
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> M: ...
    async def create(
        self,
        obj: Mapping[str, Any] | BaseModel,
        *,
        model: type[M] | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> JSON | M | BaseModel:
        """POST ``obj`` to its collection (namespace from ``metadata.namespace``); the stored object."""
        body, api_version, kind, _, namespace = _identify(obj)
        info = await self._resource(api_version, kind, namespace, name=False)
        created = await self.request_json(
            "POST", info.path(namespace), body=body, query=self._write_query(field_manager, dry_run)
        )
        return _out(created, _model_of(obj, model))

    @overload
    async def update(self, obj: M, *, field_manager: str | None = None, dry_run: bool = False) -> M: ...
    @overload
    async def update(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> JSON: ...
    @overload
    async def update(
        self,
        obj: Mapping[str, Any],
        *,
        model: type[M],
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> M: ...
    async def update(
        self,
        obj: Mapping[str, Any] | BaseModel,
        *,
        model: type[M] | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> JSON | M | BaseModel:
        """PUT ``obj``; with ``metadata.resourceVersion`` set, a stale copy raises ``Conflict``."""
        return await self._put(obj, None, model, field_manager, dry_run)

    @overload
    async def update_status(
        self, obj: M, *, field_manager: str | None = None, dry_run: bool = False
    ) -> M: ...
    @overload
    async def update_status(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> JSON: ...
    @overload
    async def update_status(
        self,
        obj: Mapping[str, Any],
        *,
        model: type[M],
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> M: ...
    async def update_status(
        self,
        obj: Mapping[str, Any] | BaseModel,
        *,
        model: type[M] | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> JSON | M | BaseModel:
        """PUT ``obj`` to its ``status`` subresource (only ``status`` changes are kept)."""
        return await self._put(obj, "status", model, field_manager, dry_run)

    async def _put(
        self,
        obj: Mapping[str, Any] | BaseModel,
        subresource: str | None,
        model: type[M] | None,
        field_manager: str | None,
        dry_run: bool,
    ) -> JSON | M | BaseModel:
        body, api_version, kind, name, namespace = _identify(obj)
        if not name:
            raise ValueError(f"{kind}: update needs metadata.name")
        info = await self._resource(api_version, kind, namespace, name=True)
        updated = await self.request_json(
            "PUT",
            info.path(namespace, name, subresource),
            body=body,
            query=self._write_query(field_manager, dry_run),
        )
        return _out(updated, _model_of(obj, model))

    @overload
    async def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
    ) -> JSON: ...
    @overload
    async def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
        model: type[M],
    ) -> M: ...
    async def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
        model: type[M] | None = None,
    ) -> JSON | M:
        """PATCH ``name`` with ``patch`` (a dict, a JSON-patch list, or a model for merge/apply).

        ``patch_type``: ``merge`` (RFC 7386), ``json`` (RFC 6902 operations), ``strategic``
        (built-in kinds only) or ``apply`` (server-side apply; needs a field manager, from here or
        :attr:`ClientOptions.field_manager`; ``force`` takes over conflicting fields).
        """
        content_type = PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"unknown patch type {patch_type!r}; use one of {sorted(PATCH_CONTENT_TYPES)}")
        if _is_model(patch):
            patch = patch.model_dump(by_alias=True, exclude_none=True, mode="json")
        manager = field_manager or self.options.field_manager
        if patch_type == "apply" and not manager:
            raise ValueError("server-side apply needs a field manager (field_manager= or ClientOptions)")
        query = _query(fieldManager=manager, force=force if patch_type == "apply" else None)
        if dry_run:
            query["dryRun"] = "All"
        info = await self._resource(api_version, kind, namespace, name=True)
        patched = await self.request_json(
            "PATCH",
            info.path(namespace, name, subresource),
            body=patch,
            query=query,
            content_type=content_type,
        )
        return _out(patched, model)

    async def patch_status(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> JSON:
        """:meth:`patch` on the ``status`` subresource."""
        return await self.patch(
            api_version,
            kind,
            name,
            patch,
            namespace,
            patch_type=patch_type,
            subresource="status",
            field_manager=field_manager,
            force=force,
        )

    async def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: Literal["Foreground", "Background", "Orphan"] | None = None,
        preconditions: Mapping[str, str] | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """DELETE ``name``; the answer is the object (when finalizers delay it) or a ``Status``.

        ``preconditions``: ``{"uid": ..., "resourceVersion": ...}``; a mismatch raises ``Conflict``.
        """
        info = await self._resource(api_version, kind, namespace, name=True)
        options: JSON = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = dict(preconditions)
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if dry_run:
            options["dryRun"] = ["All"]
        return await self.request_json("DELETE", info.path(namespace, name), body=options)

    async def get_scale(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> JSON:
        """The ``autoscaling/v1`` ``Scale`` of ``name`` (``spec.replicas``, ``status.replicas``)."""
        info = await self._resource(api_version, kind, namespace, name=True)
        return await self.request_json("GET", info.path(namespace, name, "scale"))

    async def update_scale(
        self,
        api_version: str,
        kind: str,
        name: str,
        scale: Mapping[str, Any] | int,
        namespace: str | None = None,
    ) -> JSON:
        """PUT a ``Scale`` to ``name``'s scale subresource; an int means "set spec.replicas"."""
        info = await self._resource(api_version, kind, namespace, name=True)
        if isinstance(scale, int):
            body: JSON = {
                "apiVersion": "autoscaling/v1",
                "kind": "Scale",
                "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
                "spec": {"replicas": scale},
            }
        else:
            body = dict(scale)
        return await self.request_json("PUT", info.path(namespace, name, "scale"), body=body)

    # ------------------------------------------------------------------------------ watch

    async def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_watch_bookmarks: bool = True,
        label_selector: str | None = None,
        field_selector: str | None = None,
        send_initial_events: bool | None = None,
        resource_version_match: str | None = None,
        inactivity_timeout: float | None = None,
    ) -> AsyncIterator[JSON]:
        """One watch stream: yields ``{"type", "object"}`` dicts as the server sends them.

        A raw primitive: no reconnect, no relist. The stream ends when the server closes it (after
        ``timeout_seconds``). ``ERROR`` events are yielded like any other, their ``object`` being a
        ``Status``; turn one into an exception with ``errors.from_status(obj["code"], obj)`` (410 means
        relist). ``inactivity_timeout`` raises :class:`TimeoutError` when no bytes (bookmarks
        included) arrive for that many seconds, to catch streams that hang silently.
        """
        info = await self._resource(api_version, kind, namespace, name=False)
        query = _query(
            watch="true",
            resourceVersion=resource_version,
            timeoutSeconds=timeout_seconds,
            allowWatchBookmarks=allow_watch_bookmarks or None,
            labelSelector=label_selector,
            fieldSelector=field_selector,
            sendInitialEvents=send_initial_events,
            resourceVersionMatch=resource_version_match,
        )
        timeout = aiohttp.ClientTimeout(
            total=None, connect=self.options.timeout, sock_read=inactivity_timeout
        )
        response = await self._send("GET", info.path(namespace), query=query, client_timeout=timeout)
        try:
            if response.status >= 300:
                raise await _error_from_response(response)
            pending = b""
            loads = jsoncodec.loads
            try:
                async for chunk in response.content.iter_any():
                    # Split ourselves: aiohttp's readline refuses lines above its buffer size. A
                    # chunk can hold hundreds of events after a stall: walk it with an offset and
                    # copy only each line, never the rest of the chunk once per line.
                    data = pending + chunk if pending else chunk
                    start = 0
                    while (newline := data.find(b"\n", start)) >= 0:
                        line = data[start:newline]
                        start = newline + 1
                        if line and not line.isspace():
                            yield loads(line)
                    pending = data[start:]
            except (TimeoutError, aiohttp.ServerTimeoutError) as err:
                raise TimeoutError(
                    f"watch {info.path(namespace)}: no data for {inactivity_timeout}s"
                ) from err
            if pending.strip():
                yield loads(pending)
        finally:
            response.release()

    # ------------------------------------------------------------------------------ HTTP

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
        attempt = 0
        refreshed = False
        while True:
            if self._limiter is not None:
                await self._limiter.wait()
            headers = {"Accept": "application/json", "User-Agent": self.options.user_agent}
            if data is not None:
                headers["Content-Type"] = content_type
            authorization = await self._connection.authorization()
            if authorization:
                headers["Authorization"] = authorization
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
            status = response.status
            if status == 401 and not refreshed:
                refreshed = True
                if await self._connection.refresh():
                    response.release()
                    continue
            if status in RETRIABLE_STATUSES and attempt < self.options.retries:
                attempt += 1
                delay = _retry_after(response.headers.get("Retry-After"))
                if delay is None:
                    delay = min(2.0 ** (attempt - 1) * 0.5, self.options.max_retry_wait)
                response.release()
                await _sleep(min(delay, self.options.max_retry_wait))
                continue
            return response

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

    async def _resource(
        self, api_version: str, kind: str, namespace: str | None, *, name: bool
    ) -> ResourceInfo:
        info = await self.mapper.resource_for(api_version, kind)
        if name and info.namespaced and not namespace:
            raise ValueError(f"{kind} is namespaced: pass a namespace")
        return info

    def _write_query(self, field_manager: str | None, dry_run: bool) -> dict[str, str]:
        query = _query(fieldManager=field_manager or self.options.field_manager)
        if dry_run:
            query["dryRun"] = "All"
        return query


# ------------------------------------------------------------------------------------------ helpers


def _query(**params: str | int | bool | None) -> dict[str, str]:
    query: dict[str, str] = {}
    for key, value in params.items():
        if value is None:
            continue
        query[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return query


def _is_model(obj: object) -> TypeGuard[BaseModel]:
    """Whether ``obj`` is a pydantic model, without importing pydantic: a model instance exists
    only once ``pydantic.main`` has been imported, by whoever defined its class."""
    main = sys.modules.get("pydantic.main")
    return main is not None and isinstance(obj, main.BaseModel)


def _identify(obj: Mapping[str, Any] | BaseModel) -> tuple[JSON, str, str, str, str | None]:
    body = obj.model_dump(by_alias=True, exclude_none=True, mode="json") if _is_model(obj) else dict(obj)
    api_version = body.get("apiVersion")
    kind = body.get("kind")
    if not api_version or not kind:
        raise ValueError("the object needs apiVersion and kind")
    meta = body.get("metadata") or {}
    return body, str(api_version), str(kind), str(meta.get("name") or ""), meta.get("namespace") or None


def _model_of(obj: Mapping[str, Any] | BaseModel, model: type[M] | None) -> type[BaseModel] | None:
    if model is not None:
        return model
    return type(obj) if _is_model(obj) else None


@overload
def _out(answer: JSON, model: None) -> JSON: ...
@overload
def _out(answer: JSON, model: type[M]) -> M: ...
@overload
def _out(answer: JSON, model: type[BaseModel] | None) -> JSON | BaseModel: ...
def _out(answer: JSON, model: type[BaseModel] | None) -> JSON | BaseModel:
    return answer if model is None else model.model_validate(answer)


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


__all__ = [
    "PATCH_CONTENT_TYPES",
    "Client",
    "ClientOptions",
    "ConfigException",
    "ObjectList",
    "RESTMapper",
    "ResolvedClientOptions",
    "ResourceInfo",
]
