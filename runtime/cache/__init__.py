"""The informer cache: a local, watch-fed copy of the objects controllers read.

Controllers never poll the API server. Per kind they hold an :class:`Informer`, whose
:class:`Reflector` lists the objects once and then watches for changes, keeps them in a local
store with indexes, and calls event handlers (which enqueue reconcile requests) after every
change. :class:`Cache` keeps one informer per kind and serves ``get``/``list`` from them, and
:class:`CachedClient` is the client controllers use: reads from the cache, writes to the server.
This is controller-runtime's ``cache.Cache`` and client-go's ``SharedIndexInformer``:

>>> import asyncio
>>> from runtime.cache import Cache, CacheOptions, ResourceEventHandlerFuncs
>>> from runtime.client import Client
>>> async def main() -> None:
...     async with await Client.from_kubeconfig(kubeconfig) as client:
...         metadata = {"generateName": "cache-", "namespace": "default", "labels": {"role": "master"}}
...         cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": "v"}}
...         name = (await client.create(cm))["metadata"]["name"]
...         cache = Cache(client, CacheOptions(namespace="default"))
...         added: list[str] = []
...         handler = ResourceEventHandlerFuncs(on_add=lambda obj, _: added.append(obj["metadata"]["name"]))
...         cache.informer_for("v1", "ConfigMap").add_event_handler(handler)
...         stop = asyncio.Event()
...         task = asyncio.create_task(cache.start(stop))  # a Runnable: runs until stop is set
...         await cache.wait_for_cache_sync()
...         print(name in added)
...         copy = await cache.get("v1", "ConfigMap", name, "default")  # a private copy
...         print(copy["data"])
...         masters = await cache.list("v1", "ConfigMap", namespace="default", label_selector="role=master")
...         print(name in [m["metadata"]["name"] for m in masters])
...         stop.set()
...         await task
...         await client.delete("v1", "ConfigMap", name, namespace="default")
>>> asyncio.run(main())
True
{'k': 'v'}
True

The reflector (list, then watch)
--------------------------------
The runtime owns the list→watch loop; kubernetes_asyncio's ``Watch`` retries a 410 with the same
stale version, which can never succeed.

* **List** in pages of :attr:`InformerOptions.page_size` (``limit``/``continue``; later pages carry
  only the token). The first list asks for ``resourceVersion=""``: a consistent read, so the cache
  never starts older than what this process may already have written, and it pages on every
  server (a real kube-apiserver before 1.31 ignores ``limit`` for ``"0"``, serving the whole
  collection from its watch cache in one answer; the embedded server treats ``"0"`` and ``""``
  alike). client-go starts at ``"0"`` to spare etcd on clusters with thousands of nodes all
  listing at once; an operator's few informers do not need that trade. Each page is encoded as
  the store will hold it as soon as it arrives and its decoded form dropped, so a list costs the
  memory of one decoded page, yet the store changes only when the last page is in (a list that
  fails half way changes nothing).
* **Watch** from the list's ``resourceVersion`` with ``allowWatchBookmarks=true`` and a random
  ``timeoutSeconds`` in [300, 600] s, so the server ends every stream and reconnects spread out.
  Every event moves the resume point to its ``resourceVersion``; a ``BOOKMARK`` does nothing else.
  A stream that closes (server timeout) or breaks (connection reset, proxy, server restart) is
  resumed from the last seen version **without relisting**: no event is lost, none repeated.
* **Stalls**: a stream that delivers nothing, bookmarks included, for
  :attr:`InformerOptions.inactivity_timeout` (80 s; the server bookmarks about every 60 s) is
  dropped and resumed. A stream that closes within 1 s having delivered nothing counts as an error,
  as client-go's very-short-watch check: a server that keeps doing that gets backed off from.
* **410 Gone** (an ``ERROR`` event with code 410, or a 410 answer) means the resume point left the
  server's history: relist at the last seen version with ``resourceVersionMatch=NotOlderThan``
  (served from the watch cache), and only if that list itself says the version is expired (or
  too large, on a lagging replica) at ``""``. After a relist the store is **diffed** against the
  list: keys that vanished get ``on_delete`` with the last state the cache knew, changed objects
  (another ``resourceVersion``) ``on_update``, new ones ``on_add``; an object deleted and
  recreated under the same name (another ``uid``) gets a delete and then an add. Handlers thus end
  at exactly the server's state, with no phantom objects and no missed final state.
* **Errors** (connection refused, 5xx, 429, an inactivity timeout, a very short watch, a kind not
  yet installed) back off with jitter: 0.8 s doubling to a 30 s cap, each wait drawn from
  [d, 2d] and capped at 30 s, starting over at 0.8 s after 2 min without an error.

* **Reading**: the watch is read with :meth:`Client.watch_events
  <runtime.client.Client.watch_events>`, so each event is stored and its handlers called from the
  socket's read callback, before anything else runs on the loop; a handler must not block.

Every timing lives in :class:`InformerOptions` (``CacheOptions.informer``), as do the clock, the
sleep and the random source, so tests run the same code with millisecond timeouts.

Storage, and what reads return
------------------------------
Each object is kept as its compact JSON text (UTF-8 bytes, :mod:`runtime.jsoncodec`), after the
per-resource transform (by default :func:`strip_managed_fields`) and after filling
``apiVersion``/``kind``, which list items of built-in kinds lack. Python dicts cost several times
their JSON size even with ``sys.intern``-ed keys, so text keeps the cache near the size of the
objects themselves (``python -m bench.cache_memory`` measures it; ``docs/performance.md`` has the
figures). Text also makes every read a private copy cheaply: decoding is faster than any copy of
a dict, and the garbage collector has no cached containers to walk. A watch
``MODIFIED`` costs one encode (to store it); the old state is decoded only for handlers that
read it (see Handlers), the indexes and the recreate check working from what was filed per key.
The first :meth:`Informer.get_by_key` of a key right after its event (a controller's read of
what it was just told about) gets the event's decoded object instead of a second decode, but only
when nothing else refers to it any more, handlers included: it is then as much the reader's own.
So :meth:`Informer.get_by_key`, :meth:`Informer.list`, :meth:`Informer.by_index`,
:meth:`Cache.get` and :meth:`Cache.list` all return objects the caller owns and may change.

Handlers
--------
:class:`ResourceEventHandler` callbacks run synchronously on the event loop right after the store
changed, so a handler that reads the cache sees the new state. They must not block. All handlers
of one event receive the same dict: treat it as read-only. A handler added to a running informer
first gets ``on_add(obj, True)`` for every object already cached. A handler that also defines
``on_update_deferred(load_old, new)`` gets updates that way instead: ``load_old()`` decodes the
old state on first call (shared by every handler of the event), so an update nobody compares
costs no decode; the controller's :class:`~runtime.source.Kind` sources do this. A handler that
raises is logged with its traceback; the other handlers and the informer carry on.

Indexes
-------
Every informer indexes by namespace (:data:`INDEX_NAMESPACE`) and by owner-reference uid
(:data:`INDEX_OWNER_UID`); :meth:`Informer.add_indexers` adds more (``name -> fn(obj) -> values``),
computed for the objects already cached and kept in step on every add, update and delete.

Scope
-----
:class:`CacheOptions` restricts what is cached, for every kind (``namespace``, ``label_selector``,
``field_selector``) or per kind (``by_object``), and sets the transform. Reads outside an
informer's namespace raise :class:`ValueError` rather than answering "not found".

A kind may be cached in **several scopes**: :class:`ByObject` ``namespaces`` (each namespace
with its own selectors, as controller-runtime's ``ByObject.Namespaces``) and ``label_selectors``
(the union of the objects any of them matches: "this label or that one", which one selector
cannot say). Defaults resolve in :meth:`CacheOptions.with_defaults` (:meth:`ResolvedCacheOptions.scopes_for`).
Each scope gets its own informer, listing and watching only its objects, so nothing outside the
union is sent or kept; :meth:`Cache.informer_for` returns a :class:`MultiScopeInformer` that
reads them as one: a get of an object two scopes hold answers one copy (its owner's), and an
object that moves from one scope to another is an update to handlers, never a delete, while a
delete comes once it has left every scope (the rules are in :mod:`runtime.cache.multiscope`).
"""

from ..jsoncodec import JSON
from .cache import Cache, CacheNotStarted, KindInformer
from .handlers import HandlerRegistration, ResourceEventHandler, ResourceEventHandlerFuncs
from .indexers import (
    INDEX_NAMESPACE,
    INDEX_OWNER_UID,
    IndexFunc,
    namespace_index,
    object_key,
    owner_uid_index,
)
from .informer import Informer
from .multiscope import MultiScopeInformer
from .options import (
    ByNamespace,
    ByObject,
    CacheOptions,
    InformerOptions,
    LabelSelectorLike,
    ResolvedCacheOptions,
    ResolvedInformerOptions,
    Scope,
    Transform,
    keep_everything,
    strip_managed_fields,
)
from .reader import CachedClient
from .reflector import Reflector, ReflectorStore, VeryShortWatchError

__all__ = [
    "INDEX_NAMESPACE",
    "INDEX_OWNER_UID",
    "JSON",
    "ByNamespace",
    "ByObject",
    "Cache",
    "CacheNotStarted",
    "CacheOptions",
    "CachedClient",
    "HandlerRegistration",
    "IndexFunc",
    "Informer",
    "InformerOptions",
    "KindInformer",
    "LabelSelectorLike",
    "MultiScopeInformer",
    "Reflector",
    "ReflectorStore",
    "ResolvedCacheOptions",
    "ResolvedInformerOptions",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "Scope",
    "Transform",
    "VeryShortWatchError",
    "keep_everything",
    "namespace_index",
    "object_key",
    "owner_uid_index",
    "strip_managed_fields",
]
