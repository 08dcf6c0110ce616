"""An HTTPS admission webhook server: AdmissionReview v1 in, AdmissionReview v1 out.

The API server sends every create, update or delete of the kinds a
``ValidatingWebhookConfiguration`` or ``MutatingWebhookConfiguration`` names to a URL path of
this server. Register what answers each path, then run the server as a manager runnable:

* :meth:`WebhookServer.register_validator` puts a :class:`CustomValidator` on kubebuilder's path
  ``/validate-<group with dots as dashes>-<version>-<kind lowercase>`` (see :func:`validate_path`);
  it returns warnings, or raises :class:`Denied` to refuse.
* :meth:`WebhookServer.register_defaulter` puts a :class:`CustomDefaulter` on ``/mutate-…``
  (:func:`mutate_path`); it changes the object in place and the server answers with the JSON
  patch from the object it received to the one the defaulter left.
* :meth:`WebhookServer.register` serves any :class:`AdmissionHandler` on any path.

Example (serves until interrupted; the directory must hold tls.crt and tls.key)::

    import asyncio
    from runtime.webhook import Denied, WebhookServer, WebhookServerOptions

    class OddReplicas:
        async def validate_create(self, obj, request):
            replicas = obj.get("spec", {}).get("replicas", 1)
            if replicas % 2 == 0:
                raise Denied(f"spec.replicas: Invalid value: {replicas}: must be odd", code=422)
            return ["more than 7 replicas slow etcd down"] if replicas > 7 else []

        async def validate_update(self, old, new, request):
            return await self.validate_create(new, request)

        async def validate_delete(self, obj, request):
            return []

    async def main() -> None:
        server = WebhookServer(WebhookServerOptions(cert_dir="/tmp/k8s-webhook-server/serving-certs"))
        server.register_validator("controlplane.cpo.dev", "v1alpha1", "ControlPlane", OddReplicas())
        # serves https://<host>:9443/validate-controlplane-cpo-dev-v1alpha1-controlplane
        await server.start(asyncio.Event())

    asyncio.run(main())

In an operator, hand the server to the manager instead (``manager.add(server)``) and add
``manager.add_readyz_check("webhook", server.started_checker())``.

What answers what
-----------------
Following controller-runtime, an AdmissionReview the server could read is always answered with
HTTP 200 and an AdmissionReview carrying the request's ``uid``:

* allowed: ``allowed: true``, ``status.code`` 200, ``warnings`` if any, and for defaulters
  ``patchType: JSONPatch`` with the base64 RFC 6902 ``patch`` (left out when nothing changed);
* :class:`Denied`: ``allowed: false`` with its code (403 by default), reason and message; the API
  server shows ``admission webhook "<name>" denied the request: <message>``;
* any other exception from a handler: ``allowed: false``, code 500 and the exception's text; it
  is logged with its traceback and counted in ``controller_runtime_webhook_panics_total``.
  A handler still running after ``request_timeout``: ``allowed: false``, code 504;
* a well-formed review a handler cannot act on (a validator asked about ``CONNECT``, a ``CREATE``
  without ``object``): ``allowed: false`` with code 400 saying what is missing.

A body that is not an AdmissionReview gets an HTTP error and a ``Status`` object (``kind: Status``,
``status: Failure``, ``reason``, ``message``) saying what to change, which the API server quotes:
400 for a wrong ``Content-Type``, an empty body, bad JSON, a wrong ``apiVersion`` or ``kind``, or a
missing or mistyped ``request`` field; **413** for a body over ``max_body_bytes`` (the exact status
kube-apiserver itself uses for oversized requests, so the limit is named in the message); 408 when
the body does not arrive within ``request_timeout``; 404 for an unregistered path; 405 for a method
other than POST. Nothing a client sends makes the server answer 5xx or stop.

TLS
---
The key and certificate are read from ``cert_dir`` (``tls.crt`` and ``tls.key``, as a Secret of
type ``kubernetes.io/tls`` mounts them) and reloaded by :class:`runtime.certwatcher.CertWatcher`
when they change, without a restart: new connections get the new pair. TLS 1.2 is the minimum.

Metrics
-------
Per registered path (the ``webhook`` label): ``controller_runtime_webhook_requests_total{webhook,
code}`` (HTTP status), ``controller_runtime_webhook_latency_seconds{webhook}`` and
``controller_runtime_webhook_requests_in_flight{webhook}``; see :mod:`runtime.metrics`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import json
import logging
import os
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

import jsonpatch
from aiohttp import web

from runtime.certwatcher import CertificateError, CertWatcher
from runtime.metrics import WebhookMetrics, init_webhook_metrics, webhook_panics_total

log = logging.getLogger(__name__)

JSON = dict[str, Any]

ADMISSION_API_VERSION: Final = "admission.k8s.io/v1"
ADMISSION_KIND: Final = "AdmissionReview"
OPERATIONS: Final = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})

DEFAULT_HOST: Final = ""
DEFAULT_PORT: Final = 9443
DEFAULT_CERT_DIR: Final = os.path.join("/tmp", "k8s-webhook-server", "serving-certs")
DEFAULT_CERT_NAME: Final = "tls.crt"
DEFAULT_KEY_NAME: Final = "tls.key"
DEFAULT_MAX_BODY_BYTES: Final = 7 * 1024 * 1024
DEFAULT_REQUEST_TIMEOUT: Final = 30.0
DEFAULT_CERT_POLL_INTERVAL: Final = 5.0

# HTTP and Status reasons (k8s.io/apimachinery metav1.StatusReason) for the codes we answer with.
_REASONS: Final = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    408: "Timeout",
    409: "Conflict",
    413: "RequestEntityTooLarge",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    504: "Timeout",
}


# --- options ------------------------------------------------------------------------------------


@dataclass
class WebhookServerOptions:
    """How to run a :class:`WebhookServer`. ``None`` means "use the default" named per field."""

    host: str | None = None
    """Address to listen on. Defaults to ``""``: every interface (IPv4 and IPv6), which a server
    in a Pod needs so the Service can reach it. Tests pass ``"127.0.0.1"``."""

    port: int | None = None
    """TCP port. Defaults to 9443 (kubebuilder's). 0 picks a free port; read :attr:`WebhookServer.port`
    after start."""

    cert_dir: str | None = None
    """Directory holding the serving certificate and key. Defaults to
    ``/tmp/k8s-webhook-server/serving-certs`` (controller-runtime's)."""

    cert_name: str | None = None
    """File name of the PEM certificate (chain) in ``cert_dir``. Defaults to ``tls.crt``."""

    key_name: str | None = None
    """File name of the PEM private key in ``cert_dir``. Defaults to ``tls.key``."""

    max_body_bytes: int | None = None
    """Largest request body accepted; larger ones get 413. Defaults to 7 MiB: kube-apiserver
    accepts objects up to 3 MiB, and an UPDATE review carries the object and the old object plus
    the envelope (controller-runtime's limit for the same reason)."""

    request_timeout: float | None = None
    """Seconds allowed for reading a body and answering it. Defaults to 30, the longest
    ``timeoutSeconds`` a webhook configuration may set, so an answer the API server still waits
    for is never cut short."""

    cert_poll_interval: float | None = None
    """Seconds between checks of the certificate files for changes. Defaults to 5."""

    def with_defaults(self) -> ResolvedWebhookServerOptions:
        """Fill in every unset field and check the rest; the one place the defaults are applied."""
        port = DEFAULT_PORT if self.port is None else self.port
        if not 0 <= port <= 65535:
            raise ValueError(f"webhook server port {port} is out of range: use 0 (any free port) to 65535")
        max_body = DEFAULT_MAX_BODY_BYTES if self.max_body_bytes is None else self.max_body_bytes
        if max_body <= 0:
            raise ValueError(f"max_body_bytes must be positive, got {max_body}")
        timeout = DEFAULT_REQUEST_TIMEOUT if self.request_timeout is None else self.request_timeout
        if timeout <= 0:
            raise ValueError(f"request_timeout must be positive seconds, got {timeout}")
        poll = DEFAULT_CERT_POLL_INTERVAL if self.cert_poll_interval is None else self.cert_poll_interval
        if poll <= 0:
            raise ValueError(f"cert_poll_interval must be positive seconds, got {poll}")
        return ResolvedWebhookServerOptions(
            host=DEFAULT_HOST if self.host is None else self.host,
            port=port,
            cert_dir=DEFAULT_CERT_DIR if self.cert_dir is None else self.cert_dir,
            cert_name=DEFAULT_CERT_NAME if self.cert_name is None else self.cert_name,
            key_name=DEFAULT_KEY_NAME if self.key_name is None else self.key_name,
            max_body_bytes=max_body,
            request_timeout=timeout,
            cert_poll_interval=poll,
        )


@dataclass(frozen=True, slots=True)
class ResolvedWebhookServerOptions:
    """:class:`WebhookServerOptions` with every default applied."""

    host: str
    port: int
    cert_dir: str
    cert_name: str
    key_name: str
    max_body_bytes: int
    request_timeout: float
    cert_poll_interval: float


# --- requests and responses ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    """The ``request`` of an AdmissionReview, in snake_case. ``raw`` is the decoded request as sent."""

    uid: str
    kind: JSON
    """The object's group/version/kind, e.g. ``{"group": "", "version": "v1", "kind": "Pod"}``."""
    resource: JSON
    """group/version/resource, e.g. ``{"group": "apps", "version": "v1", "resource": "deployments"}``."""
    sub_resource: str
    """``""``, or e.g. ``"scale"`` or ``"status"``."""
    operation: str
    """CREATE, UPDATE, DELETE or CONNECT."""
    name: str
    namespace: str
    object: JSON | None
    """The new object (None for DELETE)."""
    old_object: JSON | None
    """The existing object for UPDATE and DELETE."""
    dry_run: bool
    user_info: JSON
    raw: JSON


class Denied(Exception):
    """Raise from a validator or defaulter to refuse the request with ``message``.

    ``code`` is the HTTP status the API server answers its client with (403 by default, 422 for
    kube-style field validation errors); ``reason`` defaults to the status' name (``Forbidden``,
    ``Invalid``, …); ``warnings`` are shown to the client along with the denial.
    """

    def __init__(
        self, message: str, code: int = 403, *, reason: str | None = None, warnings: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = _REASONS.get(code, "") if reason is None else reason
        self.warnings = list(warnings)


@dataclass(slots=True)
class AdmissionResponse:
    """What a handler answers; the server adds the uid and the AdmissionReview envelope."""

    allowed: bool
    code: int = 200
    message: str = ""
    reason: str = ""
    patch: list[JSON] | None = None
    """RFC 6902 operations to apply to the object; None or empty for no change."""
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] | None = None

    def to_review(self, uid: str) -> JSON:
        """The whole AdmissionReview answer for the request ``uid``."""
        status: JSON = {"code": self.code}
        if self.reason:
            status["reason"] = self.reason
        if self.message:
            status["message"] = self.message
        response: JSON = {"uid": uid, "allowed": self.allowed, "status": status}
        if self.patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(self.patch).encode()).decode("ascii")
        if self.warnings:
            response["warnings"] = list(self.warnings)
        if self.audit_annotations:
            response["auditAnnotations"] = dict(self.audit_annotations)
        return {"apiVersion": ADMISSION_API_VERSION, "kind": ADMISSION_KIND, "response": response}


def allowed(message: str = "", warnings: Sequence[str] = ()) -> AdmissionResponse:
    """Let the request through."""
    return AdmissionResponse(True, 200, message, warnings=list(warnings))


def denied(
    message: str, code: int = 403, reason: str | None = None, warnings: Sequence[str] = ()
) -> AdmissionResponse:
    """Refuse the request with ``message`` (and ``code``, 403 by default)."""
    return AdmissionResponse(
        False, code, message, _REASONS.get(code, "") if reason is None else reason, warnings=list(warnings)
    )


def errored(code: int, message: str) -> AdmissionResponse:
    """Refuse because the request could not be judged (no reason, like controller-runtime's ``Errored``)."""
    return AdmissionResponse(False, code, message)


def patch_response(original: JSON, modified: JSON, warnings: Sequence[str] = ()) -> AdmissionResponse:
    """Allow, with the JSON patch that turns ``original`` into ``modified``."""
    operations: list[JSON] = jsonpatch.make_patch(original, modified).patch
    return AdmissionResponse(True, 200, patch=operations, warnings=list(warnings))


# --- handler protocols --------------------------------------------------------------------------


@runtime_checkable
class AdmissionHandler(Protocol):
    """Answers one admission request. Raise :class:`Denied` to refuse."""

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse: ...


class CustomValidator(Protocol):
    """Judges objects of one kind; returns warnings, or raises :class:`Denied` to refuse."""

    async def validate_create(self, obj: JSON, request: AdmissionRequest) -> list[str]: ...

    async def validate_update(self, old: JSON, new: JSON, request: AdmissionRequest) -> list[str]: ...

    async def validate_delete(self, obj: JSON, request: AdmissionRequest) -> list[str]: ...


class CustomDefaulter(Protocol):
    """Fills in defaults by changing ``obj`` in place; raise :class:`Denied` to refuse."""

    async def default(self, obj: JSON, request: AdmissionRequest) -> None: ...


class _FuncHandler:
    __slots__ = ("_func",)

    def __init__(self, func: Callable[[AdmissionRequest], Awaitable[AdmissionResponse]]) -> None:
        self._func = func

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        return await self._func(request)


def admission_handler_func(
    func: Callable[[AdmissionRequest], Awaitable[AdmissionResponse]],
) -> AdmissionHandler:
    """Adapt ``async def f(request) -> AdmissionResponse`` to :class:`AdmissionHandler`."""
    return _FuncHandler(func)


def _warnings_from(result: object, who: str) -> list[str]:
    if result is None:
        return []
    if isinstance(result, list | tuple) and all(isinstance(w, str) for w in result):
        return list(result)
    raise TypeError(f"{who} returned {result!r}; it must return a list of warning strings")


class ValidatorHandler:
    """Serves a :class:`CustomValidator`: CREATE, UPDATE and DELETE go to the matching method."""

    __slots__ = ("validator",)

    def __init__(self, validator: CustomValidator) -> None:
        self.validator = validator

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        v = self.validator
        op = request.operation
        if op == "CREATE":
            if request.object is None:
                return errored(400, "request.object is missing: a CREATE review must carry the new object")
            result = await v.validate_create(request.object, request)
        elif op == "UPDATE":
            if request.object is None or request.old_object is None:
                return errored(400, "an UPDATE review must carry both request.object and request.oldObject")
            result = await v.validate_update(request.old_object, request.object, request)
        elif op == "DELETE":
            if request.old_object is None:
                return errored(400, "request.oldObject is missing: a DELETE review must carry the object")
            result = await v.validate_delete(request.old_object, request)
        else:
            return errored(400, f"unknown operation {op!r}: a validator handles CREATE, UPDATE and DELETE")
        return allowed(warnings=_warnings_from(result, type(v).__name__))


class DefaulterHandler:
    """Serves a :class:`CustomDefaulter` on CREATE and UPDATE; other operations are allowed as they are."""

    __slots__ = ("defaulter",)

    def __init__(self, defaulter: CustomDefaulter) -> None:
        self.defaulter = defaulter

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation not in ("CREATE", "UPDATE"):
            # Nothing to default on a delete or connect (controller-runtime skips them too).
            return allowed()
        original = request.object
        if original is None:
            return errored(
                400, f"request.object is missing: a {request.operation} review must carry the object"
            )
        # A JSON round trip is a deep copy at C speed, several times faster than copy.deepcopy.
        working: JSON = json.loads(json.dumps(original))
        await self.defaulter.default(working, request)
        return patch_response(original, working)


def validate_path(group: str, version: str, kind: str) -> str:
    """kubebuilder's validating path: ``("apps", "v1", "Deployment")`` → ``/validate-apps-v1-deployment``.

    The core group ``""`` gives ``/validate--v1-pod``, as controller-runtime builds it.
    """
    return f"/validate-{group.replace('.', '-')}-{version}-{kind.lower()}"


def mutate_path(group: str, version: str, kind: str) -> str:
    """kubebuilder's mutating path, ``/mutate-<group with dashes>-<version>-<kind lowercase>``."""
    return f"/mutate-{group.replace('.', '-')}-{version}-{kind.lower()}"


# --- decoding ------------------------------------------------------------------------------------


class BadReview(Exception):
    """The body is not an AdmissionReview we can answer; ``code`` is the HTTP status to send."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# Built once: json.loads with any keyword argument builds a new decoder per call.
_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _field(request: JSON, name: str, kind: type, *, required: bool = False) -> Any:
    value = request.get(name)
    if value is None:
        if required:
            raise BadReview(f"request.{name} is missing; an AdmissionReview request must have it")
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        want = {str: "string", dict: "object", bool: "boolean"}.get(kind, kind.__name__)
        raise BadReview(f"request.{name} must be {want}, got {_type_name(value)}")
    return value


def _group_version_field(request: JSON, name: str, last: str, *, required: bool) -> JSON:
    value: JSON | None = _field(request, name, dict, required=required)
    if value is None:
        return {}
    for key in ("group", "version", last):
        item = value.get(key)
        if item is not None and not isinstance(item, str):
            raise BadReview(f"request.{name}.{key} must be a string, got {_type_name(item)}")
    return value


def decode_review(body: bytes) -> AdmissionRequest:
    """Decode and check an AdmissionReview v1 body; :class:`BadReview` says what is wrong."""
    if not body:
        raise BadReview("the request body is empty; send an AdmissionReview as JSON")
    try:
        # UTF-8 only, as Go's decoder: json.loads would also guess UTF-16 and UTF-32.
        review = _DECODER.decode(body.decode("utf-8"))
    except RecursionError:
        raise BadReview("the request body is not valid JSON: nested too deeply") from None
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise BadReview(f"the request body is not valid JSON: {err}") from None
    if not isinstance(review, dict):
        raise BadReview(f"the request body is a JSON {_type_name(review)}, not an AdmissionReview object")
    api_version = review.get("apiVersion")
    if api_version != ADMISSION_API_VERSION:
        raise BadReview(
            f"apiVersion is {json.dumps(api_version)}, expected {ADMISSION_API_VERSION!r}; "
            'list "v1" in the webhook configuration\'s admissionReviewVersions'
        )
    if review.get("kind") != ADMISSION_KIND:
        raise BadReview(f"kind is {json.dumps(review.get('kind'))}, expected {ADMISSION_KIND!r}")
    request = review.get("request")
    if not isinstance(request, dict):
        raise BadReview(
            "request is missing: the AdmissionReview has no request to answer"
            if request is None
            else f"request must be an object, got {_type_name(request)}"
        )
    uid = _field(request, "uid", str, required=True)
    if not uid:
        raise BadReview("request.uid is empty; the answer must echo the request's uid")
    operation = _field(request, "operation", str, required=True)
    if operation not in OPERATIONS:
        raise BadReview(
            f"request.operation is {operation!r}; expected one of CREATE, UPDATE, DELETE, CONNECT"
        )
    kind = _group_version_field(request, "kind", "kind", required=True)
    resource = _group_version_field(request, "resource", "resource", required=True)
    for optional in ("requestKind", "requestResource"):
        _group_version_field(
            request, optional, "kind" if optional == "requestKind" else "resource", required=False
        )
    for text in ("subResource", "requestSubResource", "name", "namespace"):
        _field(request, text, str)
    obj = _field(request, "object", dict)
    old = _field(request, "oldObject", dict)
    _field(request, "options", dict)
    dry_run = _field(request, "dryRun", bool)
    user_info = _field(request, "userInfo", dict)
    return AdmissionRequest(
        uid=uid,
        kind=kind,
        resource=resource,
        sub_resource=request.get("subResource") or "",
        operation=operation,
        name=request.get("name") or "",
        namespace=request.get("namespace") or "",
        object=obj,
        old_object=old,
        dry_run=bool(dry_run),
        user_info=user_info or {},
        raw=request,
    )


def _status_body(code: int, message: str) -> bytes:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": _REASONS.get(code, ""),
        "code": code,
    }
    return json.dumps(status).encode()


# --- the server ----------------------------------------------------------------------------------


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
            handler = admission_handler_func(handler)
        self._routes[path] = _Route(handler, init_webhook_metrics(path))
        return self

    def register_validator(
        self, group: str, version: str, kind: str, validator: CustomValidator
    ) -> WebhookServer:
        """Serve ``validator`` at :func:`validate_path` of the kind."""
        return self.register(validate_path(group, version, kind), ValidatorHandler(validator))

    def register_defaulter(
        self, group: str, version: str, kind: str, defaulter: CustomDefaulter
    ) -> WebhookServer:
        """Serve ``defaulter`` at :func:`mutate_path` of the kind."""
        return self.register(mutate_path(group, version, kind), DefaulterHandler(defaulter))

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


def review_for(request: Mapping[str, Any]) -> JSON:
    """Wrap a ``request`` dict in an AdmissionReview v1 envelope (for tests and tools)."""
    return {"apiVersion": ADMISSION_API_VERSION, "kind": ADMISSION_KIND, "request": dict(request)}
