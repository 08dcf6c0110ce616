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

from .._kube_credentials import ConfigException
from ..jsoncodec import JSON
from .client import Client
from .mapping import ResourceInfo, RESTMapper
from .objects import PATCH_CONTENT_TYPES, ObjectList, PatchType
from .options import ClientOptions, ResolvedClientOptions
from .transport import RETRIABLE_STATUSES, Transport

__all__ = [
    "JSON",
    "PATCH_CONTENT_TYPES",
    "RETRIABLE_STATUSES",
    "Client",
    "ClientOptions",
    "ConfigException",
    "ObjectList",
    "PatchType",
    "RESTMapper",
    "ResolvedClientOptions",
    "ResourceInfo",
    "Transport",
]
