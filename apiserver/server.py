"""The embedded API server's HTTP layer: TLS, authentication, routing, content negotiation, streaming.

:class:`EmbeddedAPIServer` is what tests, ``cpo dev-apiserver`` and the benchmarks start. It serves
HTTPS on loopback with a freshly generated CA, accepts a bearer token (``admin_token``) or a client
certificate signed by that CA, and answers like kube-apiserver -- same paths, status codes,
messages and JSON shapes -- for everything a controller does. The REST semantics live in
``handlers.py``; this module maps HTTP onto them.

The kubeconfig it hands out is what kubernetes_asyncio, kubectl or :mod:`runtime.client` need:

>>> import asyncio
>>> async def main() -> None:
...     async with EmbeddedAPIServer() as server:
...         kubeconfig = server.kubeconfig()
...         print(kubeconfig["clusters"][0]["cluster"]["server"] == server.url, server.url)
>>> asyncio.run(main())
True https://127.0.0.1:...
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import ssl
import tempfile
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from aiohttp import web
from multidict import CIMultiDict

from runtime import jsoncodec
from runtime.envtest import certs
from runtime.jsoncodec import JSON

from . import admission as admission_mod
from . import builtins, decode, discovery, objectmeta, protobuf, rbac, reviews, schema, tables
from . import metrics as metrics_mod
from .errors import StatusError, bad_request, method_not_allowed, page_not_found
from .handlers import WATCH_ACCEPTED, Caller, Handlers
from .registry import Registry, ResourceType
from .store import Store

# kube-apiserver refuses request bodies above 3 MiB.
MAX_REQUEST_BODY = 3 * 1024 * 1024
ANONYMOUS_PATHS = {"/version", "/healthz", "/livez", "/readyz", "/version/"}
PROBE_PATHS = {"/healthz", "/livez", "/readyz"}


@dataclass
class EmbeddedServerOptions:
    """How to run the embedded server. Every field has a working default."""

    host: str = "127.0.0.1"
    """Address to listen on. Keep loopback: unless ``enforce_rbac`` is on, any valid token may do
    everything."""
    port: int = 0
    """TCP port; 0 picks a free one (read it back from ``EmbeddedAPIServer.url``)."""
    anonymous_auth: bool = True
    """Requests without credentials act as ``system:anonymous`` (allowed only /version and probes),
    as kube-apiserver's default; False answers them 401 like ``--anonymous-auth=false``."""
    watch_history: int = 10_000
    """Changes kept per resource for watches that resume from a resourceVersion; older -> 410 Expired."""
    bookmark_interval: float = 60.0
    """Seconds between BOOKMARK events on watches that allow them (kube-apiserver: about a minute).
    A watch with ``timeoutSeconds`` also gets one 2 s before its deadline and none after; either
    only if its resource type was written since the watch began (see ``Handlers.watch``)."""
    admin_token: str = ""
    """Bearer token of the admin user; empty generates a random one."""
    enforce_rbac: bool = False
    """Authorize every request with RBAC (the stored Roles, ClusterRoles and bindings), like
    ``--authorization-mode=RBAC``; the admin token is in ``system:masters`` and may do everything.
    False (the default) lets every authenticated identity do everything, except those named with
    :meth:`EmbeddedAPIServer.enforce_rbac`."""

    def new_server(self) -> EmbeddedAPIServer:
        """A server with these options, not yet started (what ``runtime.envtest`` asks for)."""
        return EmbeddedAPIServer(self)


@dataclass(frozen=True)
class User:
    name: str
    groups: list[str]
    uid: str = ""
    # authentication "extra" attributes, e.g. the client certificate's credential id.
    extra: dict[str, list[str]] | None = None


@dataclass
class RequestInfo:
    """A parsed resource path, as kube-apiserver's RequestInfoFactory derives it."""

    group: str
    version: str
    resource: str
    namespace: str | None
    name: str | None
    subresource: str
    legacy_watch: bool


def _authenticated(user: User) -> User:
    """Every authenticated identity is also in ``system:authenticated``, as kube-apiserver adds it."""
    if "system:authenticated" in user.groups:
        return user
    return User(user.name, [*user.groups, "system:authenticated"], user.uid, user.extra)


class EmbeddedAPIServer:
    """A kube-apiserver stand-in on loopback (see the module docstring)."""

    def __init__(self, options: EmbeddedServerOptions | None = None) -> None:
        self.options = options or EmbeddedServerOptions()
        self.registry = Registry()
        self.store = Store(history_size=self.options.watch_history)
        self._service_map: dict[tuple[str, str, int], tuple[str, int]] = {}
        self._encoded = EncodedObjects()
        self.request_counters = metrics_mod.RequestCounters()
        """``apiserver_request_total`` by verb and resource, served on ``/metrics``."""
        self.admission = admission_mod.Admission(self._resolve_service)
        self.handlers = Handlers(self.registry, self.store, self.admission, on_crd_change=self._crd_changed)
        self.handlers.bookmark_interval = self.options.bookmark_interval
        self.admin_token = self.options.admin_token or secrets.token_urlsafe(24)
        self._tokens: dict[str, User] = {self.admin_token: User("admin", ["system:masters"], "admin")}
        self._rbac_users: set[str] = set()
        self._recorders: dict[str, rbac.AccessRecorder] = {}
        self.ca = certs.CertificateAuthority.new("cpo-embedded-apiserver-ca")
        self.ca_pem: bytes = self.ca.cert_pem
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._stopping = asyncio.Event()
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.url = ""
        self.address = ""  # host:port, as discovery's serverAddressByClientCIDRs reports it
        self.port = 0
        for rt in builtins.builtin_types():
            self.registry.add(rt)
        for rt, obj in builtins.initial_objects():
            self._seed(rt, obj)

    # --------------------------------------------------------------------------- public API

    async def __aenter__(self) -> EmbeddedAPIServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        app = web.Application(client_max_size=MAX_REQUEST_BODY + 1)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        self._site = web.TCPSite(
            self._runner, self.options.host, self.options.port, ssl_context=self._ssl_context()
        )
        await self._site.start()
        server = self._site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1]
        host = self.options.host if ":" not in self.options.host else f"[{self.options.host}]"
        self.url = f"https://{host}:{self.port}"
        self.address = f"{host}:{self.port}"

    async def stop(self) -> None:
        self._stopping.set()
        for rs_watchers in [self.store.resource(rt.key).watchers for rt in self.registry.all()]:
            for w in list(rs_watchers):
                w.queue.put_nowait(None)
        await self.admission.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def kubeconfig(self, *, user: str = "admin") -> dict[str, Any]:
        import base64

        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "envtest",
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": base64.b64encode(self.ca_pem).decode(),
                    },
                }
            ],
            "users": [{"name": user, "user": {"token": self.admin_token}}],
            "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": user}}],
            "current-context": "envtest",
        }

    def add_token(self, token: str, username: str, groups: list[str] | None = None, uid: str = "") -> None:
        """Accept another bearer token (e.g. to test a non-admin identity)."""
        self._tokens[token] = User(username, list(groups or []), uid)

    def service_account_token(self, namespace: str, name: str) -> str:
        """A new bearer token of the ServiceAccount ``namespace/name`` (which need not exist yet),
        authenticating as ``system:serviceaccount:<namespace>:<name>``; what ``POST
        .../serviceaccounts/<name>/token`` (``kubectl create token``) hands out too."""
        token = secrets.token_urlsafe(32)
        username, groups = rbac.service_account_user(namespace, name)
        account = self.store.get(("", "serviceaccounts"), (namespace, name)) or {}
        self._tokens[token] = User(username, groups, str((account.get("metadata") or {}).get("uid") or ""))
        return token

    def enforce_rbac(self, username: str) -> None:
        """Authorize ``username``'s requests with RBAC from now on (403 when no binding grants them),
        whatever ``EmbeddedServerOptions.enforce_rbac`` says; a service account's username is
        ``system:serviceaccount:<namespace>:<name>``."""
        self._rbac_users.add(username)

    def record_access(self, username: str) -> rbac.AccessRecorder:
        """Start recording every access ``username`` asks for (allowed or not); the recorder's
        ``used`` grows as requests arrive."""
        recorder = self._recorders.setdefault(username, rbac.AccessRecorder(username))
        return recorder

    def map_service(self, namespace: str, name: str, port: int, host: str, local_port: int) -> None:
        """Route webhook calls for ``service {namespace, name, port}`` to a local address."""
        self._service_map[(namespace, name, port)] = (host, local_port)

    # -------------------------------------------------------------------------- internals

    def _resolve_service(self, namespace: str, name: str, port: int) -> tuple[str, int]:
        try:
            return self._service_map[(namespace, name, port)]
        except KeyError:
            # Worded as kube-apiserver's service resolver: the service does not exist here.
            raise LookupError(f'service "{name}" not found') from None

    def _ssl_context(self) -> ssl.SSLContext:
        self._tmp = tempfile.TemporaryDirectory(prefix="cpo-apiserver-")
        cert_path, key_path = self.ca.serving_cert(["127.0.0.1", "localhost", "::1"]).write(
            Path(self._tmp.name)
        )
        ca_path = Path(self._tmp.name) / "ca.crt"
        ca_path.write_bytes(self.ca_pem)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(cert_path, key_path)
        ctx.load_verify_locations(cafile=str(ca_path))
        # Client certificates are optional: a token or anonymous access works without one.
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx

    def _seed(self, rt: ResourceType, obj: JSON) -> None:
        import uuid

        from .handlers import now_rfc3339

        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now_rfc3339())
        key = (meta.get("namespace", "") if rt.namespaced else "", meta["name"])
        self.store.put(rt.key, key, obj, None)

    def _crd_changed(self, crd: JSON, old: JSON | None) -> None:
        """Serve (or stop serving) a CRD's resources, and mark it Established as the real server does."""
        if old is not None:
            for rt in schema.crd_to_resource_types(old):
                self.registry.remove_group_resource(rt.group, rt.resource)
        if not crd:
            if old is not None:
                for rt in schema.crd_to_resource_types(old)[:1]:
                    self.store.drop_resource(rt.key)
            return
        types = schema.crd_to_resource_types(crd)
        storage = _storage_version(crd)
        for rt in types:
            self.registry.add(rt, preferred=rt.version == storage)
        if not (crd.get("status") or {}).get("conditions"):
            # Establish right after the create, on the next loop turn, with its own resourceVersion.
            asyncio.get_running_loop().call_soon(self._establish, crd["metadata"]["name"])

    def _establish(self, name: str) -> None:
        from .handlers import now_rfc3339

        key = ("apiextensions.k8s.io", "customresourcedefinitions")
        current = self.store.get(key, ("", name))
        if current is None:
            return
        new = dict(current)
        new["metadata"] = dict(current["metadata"])
        now = now_rfc3339()
        new["status"] = schema.crd_established_status(current, now)
        # The naming controller writes through /status as "kube-apiserver" and owns what it set.
        crd_type = self.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        entries = objectmeta.update_managed_fields(
            current["metadata"].get("managedFields"),
            current,
            new,
            manager="kube-apiserver",
            operation="Update",
            api_version="apiextensions.k8s.io/v1",
            subresource="status",
            time=now,
            rules=builtins.field_rules(crd_type)
            if crd_type is not None
            else objectmeta.CUSTOM_RESOURCE_RULES,
        )
        if entries:
            new["metadata"]["managedFields"] = entries
        self.store.put(key, ("", name), new, current)

    # ---------------------------------------------------------------------------- dispatch

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        accept = request.headers.get("Accept", "")
        try:
            return await self._serve(request)
        except StatusError as err:
            return _error_response(err, accept)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:  # never a crash: a bug becomes a 500 Status and the server lives on
            return _error_response(
                StatusError(
                    500,
                    "InternalError",
                    f"Internal error occurred: {exc!r}",
                    {"causes": [{"message": repr(exc)}]},
                ),
                accept,
            )

    async def _authenticate(self, request: web.Request) -> User | None:
        header = request.headers.get("Authorization", "")
        if header:
            scheme, _, token = header.partition(" ")
            user = self._tokens.get(token.strip()) if scheme.lower() == "bearer" else None
            if user is None:
                raise StatusError(401, "Unauthorized", "Unauthorized")
            return _authenticated(user)
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        if peer:
            cn = ""
            groups: list[str] = []
            for rdn in peer.get("subject", ()):
                for key, value in rdn:
                    if key == "commonName":
                        cn = value
                    elif key == "organizationName":
                        groups.append(value)
            if cn:
                ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
                der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
                extra = (
                    {
                        "authentication.kubernetes.io/credential-id": [
                            f"X509SHA256={hashlib.sha256(der).hexdigest()}"
                        ]
                    }
                    if der
                    else None
                )
                return _authenticated(User(cn, groups, "", extra))
        return None

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        user = await self._authenticate(request)
        if user is None:
            if not self.options.anonymous_auth:
                raise StatusError(401, "Unauthorized", "Unauthorized")
            if path in ANONYMOUS_PATHS:
                return await self._non_resource(request, path)
            raise self._forbidden_anonymous(request)
        self._authorize(request, user)
        if not path.startswith("/api"):
            return await self._non_resource(request, path)
        accept = request.headers.get("Accept", "")
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if parts[0] == "api":
            if len(parts) == 1:
                return _discovery_response(accept, "core", self.registry, self.address)
            if parts[1] != "v1":
                raise page_not_found()
            if len(parts) == 2:
                return _json(discovery.api_resource_list(self.registry, "", "v1"))
            group, version, rest = "", "v1", parts[2:]
        elif parts[0] == "apis":
            if len(parts) == 1:
                return _discovery_response(accept, "apis", self.registry, self.address)
            group = parts[1]
            if len(parts) == 2:
                doc = discovery.api_group(self.registry, group)
                if doc is None:
                    raise page_not_found()
                return _json(doc)
            version = parts[2]
            if len(parts) == 3:
                doc = discovery.api_resource_list(self.registry, group, version)
                if doc is None:
                    raise page_not_found()
                return _json(doc)
            rest = parts[3:]
        else:
            raise page_not_found()
        if not self.registry.serves_group_version(group, version):
            raise page_not_found()
        info = self._request_info(group, version, rest)
        rt = self.registry.get(group, version, info.resource)
        if rt is None:
            if group:
                raise page_not_found()
            raise StatusError(404, "NotFound", "the server could not find the requested resource", {})
        if info.namespace is None and info.name and rt.namespaced and not info.legacy_watch:
            raise page_not_found()
        return await self._resource(request, user, rt, info)

    def _authorize(self, request: web.Request, user: User) -> None:
        """Record the access for a recorded identity; 403 when RBAC is enforced and denies it."""
        recorder = self._recorders.get(user.name)
        enforced = user.name in self._rbac_users or self.options.enforce_rbac
        if recorder is None and not enforced:
            return
        attrs = self._attributes(request, user)
        if recorder is not None:
            recorder.record(attrs)
        if enforced and not rbac.authorize(self.store, attrs)[0]:
            details: JSON = {}
            if attrs.name:
                details["name"] = attrs.name
            if attrs.group:
                details["group"] = attrs.group
            if attrs.resource:
                details["kind"] = attrs.resource
            raise StatusError(403, "Forbidden", rbac.forbidden_message(attrs), details)

    def _attributes(self, request: web.Request, user: User) -> rbac.Attributes:
        """The request as the authorizer sees it (kube's RequestInfo: verb, resource, namespace...)."""
        path = request.path
        parts = [unquote(p) for p in path.strip("/").split("/")]
        info: RequestInfo | None = None
        try:
            if parts[0] == "api" and len(parts) >= 3:
                info = self._request_info("", parts[1], parts[2:])
            elif parts[0] == "apis" and len(parts) >= 4:
                info = self._request_info(parts[1], parts[2], parts[3:])
        except StatusError:
            info = None
        method = request.method
        if info is None:
            return rbac.Attributes(user.name, user.groups, method.lower(), path=path)
        if method == "GET":
            watch = info.legacy_watch or request.query.get("watch") in ("1", "true")
            verb = "get" if info.name and not watch else ("watch" if watch else "list")
        elif method == "DELETE":
            verb = "delete" if info.name else "deletecollection"
        else:
            verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())
        namespace = info.namespace or (info.name if info.resource == "namespaces" and not info.group else "")
        return rbac.Attributes(
            user.name,
            user.groups,
            verb,
            group=info.group,
            resource=info.resource,
            subresource=info.subresource,
            namespace=namespace or "",
            name=info.name or "",
        )

    def _forbidden_anonymous(self, request: web.Request) -> StatusError:
        path = request.path
        parts = [p for p in path.strip("/").split("/") if p]
        verb = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
            request.method, request.method.lower()
        )
        try:
            group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
            info = self._request_info(group, "", rest) if rest else None
        except (IndexError, StatusError):
            info = None
        if info is None or not rest:
            return StatusError(
                403,
                "Forbidden",
                f'forbidden: User "system:anonymous" cannot {verb} path "{path}"',
                {},
            )
        if verb == "get" and not info.name:
            verb = "watch" if request.query.get("watch") in ("1", "true") else "list"
        resource = info.resource
        qualified = f"{resource}.{group}" if group else resource
        where = f' in the namespace "{info.namespace}"' if info.namespace else " at the cluster scope"
        if info.name:
            msg = (
                f'{qualified} "{info.name}" is forbidden: User "system:anonymous" cannot {verb} resource '
                f'"{resource}" in API group "{group}"{where}'
            )
        else:
            msg = (
                f'{qualified} is forbidden: User "system:anonymous" cannot {verb} resource "{resource}" '
                f'in API group "{group}"{where}'
            )
        details: JSON = {}
        if info.name:
            details["name"] = info.name
        if group:
            details["group"] = group
        details["kind"] = resource
        return StatusError(403, "Forbidden", msg, details)

    @staticmethod
    def _request_info(group: str, version: str, rest: list[str]) -> RequestInfo:
        legacy_watch = False
        if rest and rest[0] == "watch":
            legacy_watch = True
            rest = rest[1:]
        namespace: str | None = None
        if (
            len(rest) >= 2
            and rest[0] == "namespaces"
            and not group
            and (len(rest) == 2 or rest[2] in ("status", "finalize"))
        ):
            return RequestInfo(
                group,
                version,
                "namespaces",
                None,
                rest[1],
                rest[2] if len(rest) > 2 else "",
                legacy_watch,
            )
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace = rest[1]
            rest = rest[2:]
        if not rest:
            raise page_not_found()
        resource = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if len(rest) > 3:
            raise page_not_found()
        return RequestInfo(group, version, resource, namespace, name, sub, legacy_watch)

    async def _non_resource(self, request: web.Request, path: str) -> web.StreamResponse:
        if path in PROBE_PATHS:
            return web.Response(text="ok", content_type="text/plain")
        if path in ("/version", "/version/"):
            return _json(discovery.version_info())
        if path == "/metrics" and request.method == "GET":
            return web.Response(
                body=self.request_counters.exposition(),
                headers={"Content-Type": metrics_mod.CONTENT_TYPE},
            )
        if path == "/openapi/v3":
            return _json(discovery.openapi_v3_root(self.registry), content_type="text/plain; charset=utf-8")
        if path.startswith("/openapi/v3/"):
            doc = discovery.openapi_v3_document(self.registry, path[len("/openapi/v3/") :].strip("/"))
            if doc is None:
                raise page_not_found()
            return _json(doc)
        raise page_not_found()

    # ------------------------------------------------------------------------- resources

    async def _read_body(self, request: web.Request) -> bytes:
        if request.content_length is not None and request.content_length > MAX_REQUEST_BODY:
            raise StatusError(
                413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_REQUEST_BODY}"
            )
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.content.iter_chunked(65536):
            size += len(chunk)
            if size > MAX_REQUEST_BODY:
                raise StatusError(
                    413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_REQUEST_BODY}"
                )
            chunks.append(chunk)
        return b"".join(chunks)

    async def _resource(
        self, request: web.Request, user: User, rt: ResourceType, info: RequestInfo
    ) -> web.StreamResponse:
        query = {k: v for k, v in request.query.items()}
        caller = Caller(
            user.name, user.groups, user.uid, request.headers.get("User-Agent", ""), query, extra=user.extra
        )
        code = 500
        try:
            response = await self._resource_for(request, rt, info, caller)
            code = response.status
            return response
        except StatusError as err:
            code = err.code
            # Like kube-apiserver's warning recorder, which writes each warning into the response
            # headers as it is recorded: warnings gathered before a failure (a validating webhook's
            # warnings on its denial) go out with the error too.
            err.warnings = caller.warnings.headers()
            raise
        finally:
            self._count(request, rt, info, code)

    def _count(self, request: web.Request, rt: ResourceType, info: RequestInfo, code: int) -> None:
        """One answered request in ``apiserver_request_total`` (see :mod:`apiserver.metrics`)."""
        named = info.name is not None
        verb = metrics_mod.verb_of(
            request.method,
            named=named,
            watch=info.legacy_watch or request.query.get("watch") in ("1", "true"),
            apply=request.content_type == "application/apply-patch+yaml",
        )
        scope = "resource" if named else ("namespace" if info.namespace else "cluster")
        self.request_counters.count(
            verb,
            rt.group,
            info.version,
            info.resource,
            info.subresource,
            scope,
            code,
            dry_run="dryRun" in request.query,
        )

    async def _resource_for(
        self, request: web.Request, rt: ResourceType, info: RequestInfo, caller: Caller
    ) -> web.StreamResponse:
        query = caller.query
        method = request.method
        accept = request.headers.get("Accept", "")
        h = self.handlers
        ns = info.namespace or ""
        sub = info.subresource
        if sub and sub not in _subresources(rt):
            if rt.builtin:
                raise StatusError(404, "NotFound", "the server could not find the requested resource", {})
            if method == "GET" and info.name:
                # kube-apiserver claims the *object* is missing, whether it exists or not.
                raise _object_not_found(rt, info.name)
            raise page_not_found()
        if (
            rt.namespaced
            and info.namespace is None
            and method in ("POST", "PUT", "PATCH", "DELETE")
            and not info.legacy_watch
            and (method != "DELETE" or info.name)
        ):
            raise page_not_found()
        if method == "GET":
            if info.legacy_watch or (not info.name and query.get("watch") in ("1", "true")):
                return await self._watch(request, rt, info, query, accept)
            _representation(accept, rt)  # 406 before 404, as kube-apiserver answers
            if info.name:
                obj = h.get(rt, ns, info.name)
                if sub == "scale":
                    return _json(h.scale_of(rt, obj))
                return self._object_response(rt, obj, accept, caller)
            listed = await h.list(rt, info.namespace if rt.namespaced else None, query)
            return self._list_response(rt, listed, accept, query)
        if method == "POST":
            if sub == "token" and rt.key == ("", "serviceaccounts") and info.name:
                return await self._token_request(request, rt, ns, info.name, caller)
            if info.name and rt.builtin and not (rt.resource == "namespaces" and sub == "finalize"):
                raise method_not_allowed()
            body = await self._read_body(request)
            decoded = decode.decode_object(body, request.headers.get("Content-Type"), rt)
            self._note_duplicates(decoded, rt, caller)
            review = self._review(rt, decoded.value)
            if review is not None:
                return self._object_response(rt, review, accept, caller, status=201)
            created = await h.create(rt, ns, decoded.value, caller)
            return self._object_response(rt, created, accept, caller, status=201)
        if method == "PUT":
            if not info.name:
                if rt.builtin:
                    raise method_not_allowed()
                raise bad_request("name must be provided")
            body = await self._read_body(request)
            if sub == "scale":
                scale_obj = decode.decode_object(body, request.headers.get("Content-Type"), _SCALE_TYPE)
                result = await h.update_scale(rt, ns, info.name, scale_obj.value, caller)
                return _json(h.scale_of(rt, result), headers=_warning_headers(caller))
            decoded = decode.decode_object(body, request.headers.get("Content-Type"), rt)
            self._note_duplicates(decoded, rt, caller)
            if sub == "finalize":
                result = await h.finalize_namespace(rt, info.name, decoded.value, caller)
            else:
                result = await h.update(rt, ns, info.name, decoded.value, caller, subresource=sub)
            return self._object_response(rt, result, accept, caller)
        if method == "PATCH":
            if not info.name:
                raise method_not_allowed()
            body = await self._read_body(request)
            patched, was_created = await h.patch(
                rt, ns, info.name, request.headers.get("Content-Type", ""), body, caller, subresource=sub
            )
            if sub == "scale":
                return _json(h.scale_of(rt, patched), headers=_warning_headers(caller))
            return self._object_response(rt, patched, accept, caller, status=201 if was_created else 200)
        if method == "DELETE":
            body = await self._read_body(request)
            options = decode.decode_delete_options(body, request.headers.get("Content-Type"), query)
            if not info.name:
                if "deletecollection" not in rt.verbs:
                    raise method_not_allowed()
                listed = await h.delete_collection(
                    rt, info.namespace if rt.namespaced else None, options, caller
                )
                return self._list_response(rt, listed, accept, query)
            result, is_status = await h.delete(rt, ns, info.name, options, caller)
            if is_status:
                if _representation(accept, rt).kind == tables.PROTOBUF_REPRESENTATION:
                    return _protobuf(result, headers=_warning_headers(caller))
                return _json(result, headers=_warning_headers(caller))
            return self._object_response(rt, result, accept, caller)
        raise method_not_allowed()

    def _review(self, rt: ResourceType, body: JSON) -> JSON | None:
        """The answer to a TokenReview or SubjectAccessReview (None for any other type)."""
        if rt.key == ("authentication.k8s.io", "tokenreviews"):

            def lookup(token: str) -> reviews.UserInfo | None:
                user = self._tokens.get(token)
                if user is None:
                    return None
                user = _authenticated(user)
                return user.name, user.groups, user.uid

            return reviews.token_review(body, lookup)
        if rt.key == ("authorization.k8s.io", "subjectaccessreviews"):
            return reviews.subject_access_review(body, self.store)
        return None

    async def _token_request(
        self, request: web.Request, rt: ResourceType, namespace: str, name: str, caller: Caller
    ) -> web.Response:
        self.handlers.get(rt, namespace, name)  # 404 when the account does not exist
        raw = await self._read_body(request)
        content_type = request.headers.get("Content-Type")
        body = decode.decode_object(raw, content_type, _TOKEN_REQUEST_TYPE).value if raw.strip() else {}
        answer = reviews.token_request(body, namespace, name, self.service_account_token(namespace, name))
        if _representation(request.headers.get("Accept", ""), _TOKEN_REQUEST_TYPE).kind == (
            tables.PROTOBUF_REPRESENTATION
        ):
            return _protobuf(answer, status=201, headers=_warning_headers(caller))
        return _json(answer, status=201, headers=_warning_headers(caller))

    @staticmethod
    def _note_duplicates(decoded: decode.DecodedObject, rt: ResourceType, caller: Caller) -> None:
        """Duplicate JSON keys: the last one wins with a warning, or the request fails when Strict."""
        if not decoded.duplicates:
            return
        if caller.query.get("fieldValidation") == "Strict":
            body = decoded.value
            raise decode.strict_decoding_error(
                str(body.get("kind", "")),
                str(body.get("apiVersion", "")).rpartition("/")[2],
                rt.kind,
                decoded.strict_problems(),
            )
        if caller.query.get("fieldValidation") != "Ignore":
            for path in decoded.duplicates:
                caller.warnings.add(f'duplicate field "{path}"')

    def _object_response(
        self, rt: ResourceType, obj: JSON, accept: str, caller: Caller, *, status: int = 200
    ) -> web.Response:
        """An object in the representation the Accept header negotiated (JSON, protobuf, YAML, Table,
        metadata)."""
        headers = _warning_headers(caller)
        representation = _representation(accept, rt)
        if representation.kind == tables.PROTOBUF_REPRESENTATION:
            return _protobuf(builtins.order_builtin(rt, obj), status=status, headers=headers)
        rendered = tables.render_object(representation, rt, obj, caller.query)
        if rendered is not None:
            headers["Content-Type"] = rendered.content_type
            return web.Response(body=rendered.body, status=status, headers=headers)
        headers["Content-Type"] = "application/json"
        return web.Response(body=self._encoded.encode(rt, obj), status=status, headers=headers)

    def _list_response(
        self, rt: ResourceType, listed: JSON, accept: str, query: dict[str, str]
    ) -> web.Response:
        representation = _representation(accept, rt)
        if representation.kind == tables.PROTOBUF_REPRESENTATION:
            return _protobuf(list_document(rt, listed))
        rendered = tables.render_list(representation, rt, listed, query)
        if rendered is not None:
            return web.Response(body=rendered.body, headers={"Content-Type": rendered.content_type})
        return web.Response(body=encode_list(rt, listed), content_type="application/json")

    async def _watch(
        self, request: web.Request, rt: ResourceType, info: RequestInfo, query: dict[str, str], accept: str
    ) -> web.StreamResponse:
        namespace = info.namespace if rt.namespaced else None
        events: AsyncGenerator[list[tuple[str, JSON]], None] = self.handlers.watch(
            rt, namespace, query, name=info.name, stopping=self._stopping
        )
        in_protobuf = tables.serves_protobuf(rt)
        rep = tables.negotiate(accept, watch=True, protobuf=in_protobuf)
        if rep.kind == "not-acceptable":
            raise tables.not_acceptable_error(watch=True, builtin=rt.builtin, protobuf=in_protobuf)
        renderer = tables.WatchEventRenderer(rep, rt, query)
        framed = rep.kind == tables.PROTOBUF_REPRESENTATION
        # Errors raised before the acceptance marker are plain HTTP errors, not stream events.
        accepted = await anext(events)
        assert accepted[0][0] == WATCH_ACCEPTED
        content_type = protobuf.PROTOBUF_WATCH_MEDIA_TYPE if framed else "application/json"
        response = web.StreamResponse(
            status=200, headers={"Content-Type": content_type, "Cache-Control": "no-cache, private"}
        )
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            async for batch in events:
                # One write (one chunk, one TLS record run) for every event that is ready.
                if framed:
                    lines = [encode_protobuf_event(rt, kind, obj) for kind, obj in batch]
                elif renderer.alternate:
                    lines = [
                        json.dumps(
                            {"type": kind, "object": renderer.render(kind, obj)}, separators=(",", ":")
                        ).encode()
                        + b"\n"
                        for kind, obj in batch
                    ]
                else:
                    lines = [encode_event(rt, kind, obj, self._encoded) for kind, obj in batch]
                await response.write(lines[0] if len(lines) == 1 else b"".join(lines))
        except (ConnectionResetError, ConnectionError):
            pass
        finally:
            await events.aclose()
        try:
            await response.write_eof()
        except (ConnectionResetError, ConnectionError):
            pass
        return response


# The body of POST .../serviceaccounts/<name>/token, decoded (JSON, YAML or protobuf) but not stored.
_TOKEN_REQUEST_TYPE = ResourceType(
    "authentication.k8s.io", "v1", "tokenrequests", "TokenRequest", "tokenrequest", True, builtin=True
)
_SCALE_TYPE = ResourceType(
    group="autoscaling",
    version="v1",
    resource="scale",
    kind="Scale",
    singular="scale",
    namespaced=True,
    builtin=True,
)


def _storage_version(crd: JSON) -> str:
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("storage"):
            return str(v.get("name"))
    return ""


def _subresources(rt: ResourceType) -> set[str]:
    subs: set[str] = set()
    if rt.has_status:
        subs.add("status")
    if rt.scale is not None:
        subs.add("scale")
    if rt.builtin and rt.resource == "namespaces" and not rt.group:
        subs.add("finalize")
    if rt.builtin and rt.resource == "serviceaccounts" and not rt.group:
        subs.add("token")
    return subs


def _object_not_found(rt: ResourceType, name: str) -> StatusError:
    from .errors import not_found

    return not_found(rt.qualified, name)


def _representation(accept: str, rt: ResourceType) -> tables.Representation:
    in_protobuf = tables.serves_protobuf(rt)
    rep = tables.negotiate(accept, protobuf=in_protobuf)
    if rep.kind == "not-acceptable":
        raise tables.not_acceptable_error(builtin=rt.builtin, protobuf=in_protobuf)
    return rep


def _warning_headers(caller: Caller) -> CIMultiDict[str]:
    """One ``Warning`` header per message, as kube-apiserver sends them."""
    headers: CIMultiDict[str] = CIMultiDict()
    for value in caller.warnings.headers():
        headers.add("Warning", value)
    return headers


def _json(
    doc: Any,
    *,
    status: int = 200,
    content_type: str = "application/json",
    headers: CIMultiDict[str] | None = None,
) -> web.Response:
    all_headers: CIMultiDict[str] = CIMultiDict(headers or {})
    all_headers["Content-Type"] = content_type
    return web.Response(body=jsoncodec.dumps(doc), status=status, headers=all_headers)


def _protobuf(doc: JSON, *, status: int = 200, headers: CIMultiDict[str] | None = None) -> web.Response:
    """``doc`` (an object, list or Status with apiVersion and kind) in Kubernetes' protobuf encoding."""
    all_headers: CIMultiDict[str] = CIMultiDict(headers or {})
    all_headers["Content-Type"] = protobuf.PROTOBUF_MEDIA_TYPE
    return web.Response(body=protobuf.encode_envelope(doc), status=status, headers=all_headers)


def _discovery_response(accept: str, which: str, registry: Registry, server_address: str) -> web.Response:
    """``/api`` and ``/apis``: plain or aggregated discovery, as the Accept header asks.

    kubectl reads the Content-Type to tell which one it got, so it must name the aggregated form.
    """
    doc = discovery.negotiate_document(accept, which, registry, server_address)
    content_type = discovery.negotiate_discovery(accept)
    headers: CIMultiDict[str] = CIMultiDict()
    if content_type != discovery.PLAIN_JSON:
        headers["Cache-Control"] = "public"
        headers["Vary"] = "Accept"
        headers["Etag"] = discovery.etag(doc)
    return _json(doc, content_type=content_type, headers=headers)


def _error_response(err: StatusError, accept: str = "") -> web.Response:
    """The error's Status, in protobuf when the request's Accept prefers it (see
    :func:`tables.error_media_type`), else JSON; or its plain text (``404 page not found``)."""
    headers: CIMultiDict[str] = CIMultiDict({"Cache-Control": "no-cache, private", **err.headers})
    for value in err.warnings:
        headers.add("Warning", value)
    if err.plain_text is not None:
        headers["Content-Type"] = "text/plain; charset=utf-8"
        headers["X-Content-Type-Options"] = "nosniff"
        return web.Response(text=err.plain_text, status=err.code, headers=headers)
    if tables.error_media_type(accept) == protobuf.PROTOBUF_MEDIA_TYPE:
        headers["Content-Type"] = protobuf.PROTOBUF_MEDIA_TYPE
        return web.Response(body=protobuf.encode_envelope(err.status()), status=err.code, headers=headers)
    headers["Content-Type"] = "application/json"
    return web.Response(
        body=json.dumps(err.status(), separators=(",", ":")).encode(), status=err.code, headers=headers
    )


def encode_object(rt: ResourceType, obj: JSON) -> bytes:
    """Custom resources serialise with sorted keys; built-ins in Go struct order."""
    if rt.builtin:
        return jsoncodec.dumps(builtins.order_builtin(rt, obj))
    return jsoncodec.dumps(obj, sort_keys=True)


class EncodedObjects:
    """The JSON of the objects encoded last, by identity: one write is encoded once.

    A write's stored object goes out in the response and in one event per watcher; all of them
    are the same dict (stored objects are never changed in place: every write stores a new one),
    so its bytes are worked out once. A hit needs the very same object, served as the very same
    resource type (one stored Event reads differently as core/v1 and events.k8s.io/v1), at the
    same resourceVersion; the entries hold their objects, so an id is never reused while cached.
    """

    def __init__(self, size: int = 128) -> None:
        self.size = size
        self._items: dict[int, tuple[JSON, ResourceType, str | None, bytes]] = {}

    def encode(self, rt: ResourceType, obj: JSON) -> bytes:
        meta = obj.get("metadata")
        rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
        hit = self._items.get(id(obj))
        if hit is not None and hit[0] is obj and hit[1] is rt and hit[2] == rv:
            return hit[3]
        body = encode_object(rt, obj)
        items = self._items
        items[id(obj)] = (obj, rt, rv, body)
        if len(items) > self.size:
            del items[next(iter(items))]
        return body


def list_document(rt: ResourceType, listed: JSON) -> JSON:
    """A built-in list as it is written: no empty ``continue``, items without apiVersion and kind."""
    meta = dict(listed["metadata"])
    if not meta.get("continue"):
        meta.pop("continue", None)
    return {
        "kind": listed["kind"],
        "apiVersion": listed["apiVersion"],
        "metadata": meta,
        "items": [builtins.order_builtin(rt, o, with_type=False) for o in listed["items"]],
    }


def encode_list(rt: ResourceType, listed: JSON) -> bytes:
    if rt.builtin:
        return jsoncodec.dumps(list_document(rt, listed))
    meta = dict(listed["metadata"])
    meta.setdefault("continue", "")
    doc = {
        "apiVersion": listed["apiVersion"],
        "items": listed["items"],
        "kind": listed["kind"],
        "metadata": meta,
    }
    return jsoncodec.dumps(doc, sort_keys=True)


def encode_event(rt: ResourceType, kind: str, obj: JSON, encoded: EncodedObjects | None = None) -> bytes:
    """One watch event line; ``encoded`` shares the object's bytes with the response and other watchers."""
    if kind == "ERROR" or obj.get("kind") == "Table":
        body = jsoncodec.dumps(obj, sort_keys=kind != "ERROR" and obj.get("kind") != "Table")
    elif encoded is not None and kind != "BOOKMARK":
        body = encoded.encode(rt, obj)
    else:
        body = encode_object(rt, obj)
    return b'{"type":"' + kind.encode() + b'","object":' + body + b"}\n"


def encode_protobuf_event(rt: ResourceType, kind: str, obj: JSON) -> bytes:
    """One frame of a protobuf watch stream; ERROR events carry their Status, bookmarks their
    empty typed object, the others the object as a response would write it."""
    doc = obj if kind in ("ERROR", "BOOKMARK") else builtins.order_builtin(rt, obj)
    return protobuf.watch_frame(kind, protobuf.encode_envelope(doc))
