"""The runtime's Kubernetes client: CRUD, patch, subresources and raw watch streams over plain dicts.

This is the counterpart of controller-runtime's ``client.Client``. Objects are JSON dicts on the hot
path: kubernetes_asyncio's OpenAPI models cost many times a ``json.loads`` per object, so the
client speaks HTTP itself through one aiohttp session and uses kubernetes_asyncio only to *load
credentials* (kubeconfig tokens, client certificates, exec plugins, in-cluster service
accounts); ``docs/performance.md`` has the measurements.

Usage (``kubeconfig`` is the path of a kubeconfig file, or the document as a dict):

>>> import asyncio
>>> from runtime.client import Client
>>> async def main() -> None:
...     async with await Client.from_kubeconfig(kubeconfig) as client:
...         metadata = {"generateName": "client-example-", "namespace": "default"}
...         cm = await client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata})
...         name = cm["metadata"]["name"]
...         await client.patch("v1", "ConfigMap", name, {"data": {"k": "v"}}, namespace="default")
...         cm = await client.get("v1", "ConfigMap", name, namespace="default")
...         print(cm["data"])
...         version = cm["metadata"]["resourceVersion"]
...         watch = client.watch("v1", "ConfigMap", "default", resource_version=version, timeout_seconds=5)
...         await client.delete("v1", "ConfigMap", name, namespace="default")
...         async for event in watch:
...             if event["object"]["metadata"]["name"] == name:
...                 print(event["type"])
...                 break
...         await watch.aclose()  # a stream left early is closed at once, not when collected
>>> asyncio.run(main())
{'k': 'v'}
DELETED

Two ways to read a watch (:mod:`runtime.client.watch`). :meth:`Client.watch` is an async iterator
over aiohttp's stream, read at the caller's pace (aiohttp pauses the socket when the caller falls
behind). :meth:`Client.watch_events` pushes each event to a callback from the socket's read
callback (:mod:`runtime.client.watchstream`, its own HTTP/1.1 reader on httptools): no iterator, no
task switch per event, for a consumer that keeps up by construction; the informers read their
watches this way, because an event arriving alone is their hot path (``docs/performance.md``).

Pydantic models are accepted wherever an object goes in (``create(model_instance)``) and come back
when a model class is given (``get(..., model=Machine)``).

Kinds are mapped to REST paths through discovery (:class:`RESTMapper`), cached per group-version
and refreshed when a kind is missing (a CRD installed after start). Failures raise the typed
errors of :mod:`runtime.errors`. 429 and 503 answers are retried after their ``Retry-After``
delay, a bounded number of times (:class:`ClientOptions`). Every HTTP request counts in
``rest_client_requests_total{code,method,host}`` and ``rest_client_request_duration_seconds``.

Modules: :mod:`~runtime.client.client` (:class:`Client`: constructors and the object verbs) on
:mod:`~runtime.client.watch` (the watch verbs) on :mod:`~runtime.client.mapping` (kinds to REST
paths) on :mod:`~runtime.client.transport` (HTTP, credentials, retries, metrics);
:mod:`~runtime.client.watchstream` (the push reader), :mod:`~runtime.client.objects` (models and
lists) and :mod:`~runtime.client.options`.
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
