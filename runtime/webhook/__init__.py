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

In an operator, hand the server to the manager (``manager.add(server)``): the manager starts it
before the caches and makes its ``started_checker()`` the readiness check ``webhook``, so the
process is ready only once the webhook serves (adding that check again would be refused).

Example: a validator for a ControlPlane kind, served by a manager, asked once as the API server
would ask it (the serving certificate comes from a throw-away CA here; by default the server
listens on port 9443 and reads ``/tmp/k8s-webhook-server/serving-certs``):

>>> import asyncio, ssl, tempfile
>>> import aiohttp
>>> from runtime.client import Client
>>> from runtime.envtest.certs import CertificateAuthority
>>> from runtime.manager import Manager, ManagerOptions
>>> from runtime.webhook import Denied, WebhookServer, WebhookServerOptions, review_for, validate_path
>>> class OddReplicas:
...     async def validate_create(self, obj, request):
...         replicas = obj.get("spec", {}).get("replicas", 1)
...         if replicas % 2 == 0:
...             raise Denied(f"spec.replicas: Invalid value: {replicas}: must be odd", code=422)
...         return ["more than 7 replicas slow etcd down"] if replicas > 7 else []
...
...     async def validate_update(self, old, new, request):
...         return await self.validate_create(new, request)
...
...     async def validate_delete(self, obj, request):
...         return []
>>> ca = CertificateAuthority.new()
>>> cert_dir = tempfile.mkdtemp()
>>> _ = ca.serving_cert(["127.0.0.1"]).write(cert_dir)
>>> group, version, kind = "controlplane.cpo.dev", "v1alpha1", "ControlPlane"
>>> request = {
...     "uid": "705ab4f5",
...     "operation": "CREATE",
...     "kind": {"group": group, "version": version, "kind": kind},
...     "resource": {"group": group, "version": version, "resource": "controlplanes"},
...     "object": {"apiVersion": f"{group}/{version}", "kind": kind, "spec": {"replicas": 2}},
... }
>>> async def main() -> None:
...     async with await Client.from_kubeconfig(kubeconfig) as client:
...         servers = {"metrics_bind_address": "0", "health_probe_bind_address": "127.0.0.1:0"}
...         manager = Manager(ManagerOptions(client=client, **servers))
...         server = WebhookServer(WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=cert_dir))
...         server.register_validator(group, version, kind, OddReplicas())
...         manager.add(server)
...         stop = asyncio.Event()
...         running = asyncio.create_task(manager.start(stop))
...         await server.wait_started()
...         url = f"https://127.0.0.1:{server.port}{validate_path(group, version, kind)}"
...         trusting_the_ca = ssl.create_default_context(cadata=ca.cert_pem.decode())
...         async with aiohttp.ClientSession() as session:
...             async with session.post(url, json=review_for(request), ssl=trusting_the_ca) as answer:
...                 response = (await answer.json())["response"]
...             print(response["allowed"], response["status"]["code"], response["status"]["message"])
...             readyz = f"http://127.0.0.1:{manager.health_probe_port}/readyz/webhook"
...             async with session.get(readyz) as ready:
...                 print(ready.status, await ready.text())
...         stop.set()
...         await running
>>> asyncio.run(main())
False 422 spec.replicas: Invalid value: 2: must be odd
200 ok

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

from ..jsoncodec import JSON
from .adapters import (
    AdmissionHandler,
    CustomDefaulter,
    CustomValidator,
    DefaulterHandler,
    ValidatorHandler,
    admission_handler_func,
    mutate_path,
    validate_path,
)
from .decode import BadReview, decode_review
from .metrics import WebhookMetrics, init_webhook_metrics
from .options import (
    DEFAULT_CERT_DIR,
    DEFAULT_CERT_NAME,
    DEFAULT_CERT_POLL_INTERVAL,
    DEFAULT_HOST,
    DEFAULT_KEY_NAME,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_PORT,
    DEFAULT_REQUEST_TIMEOUT,
    ResolvedWebhookServerOptions,
    WebhookServerOptions,
)
from .review import (
    ADMISSION_API_VERSION,
    ADMISSION_KIND,
    OPERATIONS,
    AdmissionRequest,
    AdmissionResponse,
    Denied,
    allowed,
    denied,
    errored,
    patch_response,
    review_for,
)
from .server import WebhookServer

__all__ = [
    "ADMISSION_API_VERSION",
    "ADMISSION_KIND",
    "DEFAULT_CERT_DIR",
    "DEFAULT_CERT_NAME",
    "DEFAULT_CERT_POLL_INTERVAL",
    "DEFAULT_HOST",
    "DEFAULT_KEY_NAME",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_PORT",
    "DEFAULT_REQUEST_TIMEOUT",
    "JSON",
    "OPERATIONS",
    "AdmissionHandler",
    "AdmissionRequest",
    "AdmissionResponse",
    "BadReview",
    "CustomDefaulter",
    "CustomValidator",
    "DefaulterHandler",
    "Denied",
    "ResolvedWebhookServerOptions",
    "ValidatorHandler",
    "WebhookMetrics",
    "WebhookServer",
    "WebhookServerOptions",
    "admission_handler_func",
    "allowed",
    "decode_review",
    "denied",
    "errored",
    "init_webhook_metrics",
    "mutate_path",
    "patch_response",
    "review_for",
    "validate_path",
]
