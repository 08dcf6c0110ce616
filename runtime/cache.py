"""The informer cache: a local, watch-fed copy of the objects controllers read.

Controllers never poll the API server. Per kind they hold an :class:`Informer`, whose
:class:`Reflector` lists the objects once and then watches for changes, keeps them in a local
store with indexes, and calls event handlers (which enqueue reconcile requests) after every
change. :class:`Cache` keeps one informer per kind and serves ``get``/``list`` from them, and
:class:`CachedClient` is the client controllers use: reads from the cache, writes to the server.
This is controller-runtime's ``cache.Cache`` and client-go's ``SharedIndexInformer``::

    client = await Client.from_kubeconfig("~/.kube/config")
    cache = Cache(client, CacheOptions(namespace="prod"))
    machines = cache.informer_for("machine.openshift.io/v1beta1", "Machine")
    machines.add_event_handler(ResourceEventHandlerFuncs(on_add=lambda obj, initial: print(obj)))
    stop = asyncio.Event()
    task = asyncio.create_task(cache.start(stop))          # a Runnable: blocks until stop is set
    await cache.wait_for_cache_sync()
    m = await cache.get("machine.openshift.io/v1beta1", "Machine", "m-1", "prod")   # a private copy
    masters = await cache.list("machine.openshift.io/v1beta1", "Machine", namespace="prod",
                               label_selector={"machine.openshift.io/cluster-api-machine-role": "master"})
    stop.set(); await task

The reflector (list, then watch)
--------------------------------
The runtime owns the list→watch loop; kubernetes_asyncio's ``Watch`` retries a 410 with the same
stale version, which can never succeed (``reference/runtime-notes.md`` §e).

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

Every timing lives in :class:`InformerOptions` (``CacheOptions.informer``), as do the clock, the
sleep and the random source, so tests run the same code with millisecond timeouts.

Storage, and what reads return
------------------------------
Each object is kept as its compact JSON text (UTF-8 bytes, :mod:`runtime.jsoncodec`), after the
per-resource transform (by default :func:`strip_managed_fields`) and after filling
``apiVersion``/``kind``, which list items of built-in kinds lack. Python dicts cost 3–4× their
JSON size even with ``sys.intern``-ed keys, and the issue's target is ≤ 4 KB of cache per 2 KB
object. Measured with ``python -m bench.cache_memory`` (10,000 Machine-like objects of 2,847 B as
served, 2,296 B without managedFields; tracemalloc; load average ~3 on 2 shared cores): **2,625 B
per cached object** (text, key and the two built-in indexes) against 9,461 B for the same objects
as parsed dicts with interned keys. Text also makes every read a private copy cheaply: orjson
decodes a 2 KB object in ~5 µs (``json.loads`` took 14–18 µs, a recursive dict copy 17–19 µs,
``copy.deepcopy`` 58–62 µs), and the garbage collector has no cached containers to walk. A watch
``MODIFIED`` costs one encode (to store it); the old state is decoded only for handlers that
read it (see Handlers), the indexes and the recreate check working from what was filed per key.
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
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

import aiohttp

from . import jsoncodec
from .client import Client
from .errors import APIError, Gone, NoKindMatch, NotFound, ServerTimeout, from_status
from .labels import Selector, as_selector

JSON = dict[str, Any]
IndexFunc = Callable[[JSON], Iterable[str]]
"""An indexer: the index values of one object (none, one or several)."""
Transform = Callable[[JSON], JSON]
"""Turns an object from the server into what is cached; may change and return its argument."""
LabelSelectorLike = Selector | str | Mapping[str, str]

INDEX_NAMESPACE: Final = "namespace"
INDEX_OWNER_UID: Final = "owner-uid"

log = logging.getLogger("runtime.cache")

_encode = jsoncodec.dumps
_decode = jsoncodec.loads


# ------------------------------------------------------------------------------------ helpers


def object_key(obj: Mapping[str, Any]) -> str:
    """The store key of ``obj``: ``"namespace/name"``, or ``"name"`` for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


def strip_managed_fields(obj: JSON) -> JSON:
    """The default transform: drop ``metadata.managedFields`` (about a third of a typical object)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def keep_everything(obj: JSON) -> JSON:
    """A transform that caches objects exactly as the server sent them."""
    return obj


def namespace_index(obj: JSON) -> list[str]:
    """Index function of :data:`INDEX_NAMESPACE`: the namespace, "" for cluster-scoped objects."""
    return [(obj.get("metadata") or {}).get("namespace") or ""]


def owner_uid_index(obj: JSON) -> list[str]:
    """Index function of :data:`INDEX_OWNER_UID`: the uid of every owner reference."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return [str(ref["uid"]) for ref in refs if isinstance(ref, dict) and ref.get("uid")]


def _resource_version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


# ------------------------------------------------------------------------------------ handlers


@runtime_checkable
class ResourceEventHandler(Protocol):
    """Notified after the informer's store changed; runs on the event loop and must not block."""

    def on_add(self, obj: JSON, is_in_initial_list: bool) -> None:
        """``obj`` appeared; ``is_in_initial_list`` for the first list and for a late handler's replay."""
        ...

    def on_update(self, old: JSON, new: JSON) -> None:
        """``old`` became ``new`` (another resourceVersion)."""
        ...

    def on_delete(self, obj: JSON) -> None:
        """``obj`` is gone: the watch's final state, or after a relist the last state the cache knew."""
        ...


@dataclass(frozen=True)
class ResourceEventHandlerFuncs:
    """Adapt plain functions to :class:`ResourceEventHandler`; a missing one ignores its events."""

    on_add_func: Callable[[JSON, bool], None] | None = None
    on_update_func: Callable[[JSON, JSON], None] | None = None
    on_delete_func: Callable[[JSON], None] | None = None

    def __init__(
        self,
        on_add: Callable[[JSON, bool], None] | None = None,
        on_update: Callable[[JSON, JSON], None] | None = None,
        on_delete: Callable[[JSON], None] | None = None,
    ) -> None:
        object.__setattr__(self, "on_add_func", on_add)
        object.__setattr__(self, "on_update_func", on_update)
        object.__setattr__(self, "on_delete_func", on_delete)

    def on_add(self, obj: JSON, is_in_initial_list: bool) -> None:
        if self.on_add_func is not None:
            self.on_add_func(obj, is_in_initial_list)

    def on_update(self, old: JSON, new: JSON) -> None:
        if self.on_update_func is not None:
            self.on_update_func(old, new)

    def on_delete(self, obj: JSON) -> None:
        if self.on_delete_func is not None:
            self.on_delete_func(obj)


class HandlerRegistration:
    """What :meth:`Informer.add_event_handler` returns: pass it to ``remove_event_handler``."""

    __slots__ = ("_informer", "handler", "on_update_deferred")

    def __init__(self, informer: Informer, handler: ResourceEventHandler) -> None:
        self._informer = informer
        self.handler = handler
        # A handler may take the old state as a function to call only if it needs it (the
        # controller's sources do): then an update whose predicates and handler read only the new
        # object costs no decode of the old one. Its signature: (load_old, new) -> None.
        self.on_update_deferred: Callable[[Callable[[], JSON], JSON], None] | None = getattr(
            handler, "on_update_deferred", None
        )

    def has_synced(self) -> bool:
        """True once the handler has been told about every object of the informer's first list."""
        return self._informer.has_synced()


# ------------------------------------------------------------------------------------ options


@dataclass(frozen=True)
class InformerOptions:
    """Timings of the list/watch loop. ``None`` means "use the default" named per field."""

    page_size: int | None = None
    """Objects per LIST page (``limit``). Defaults to 500, client-go's pager default."""

    watch_timeout_min: float | None = None
    """Shortest server-side watch timeout (``timeoutSeconds``), seconds. Defaults to 300."""

    watch_timeout_max: float | None = None
    """Longest server-side watch timeout; each watch draws uniformly between the two. Defaults to 600."""

    inactivity_timeout: float | None = None
    """Drop and resume a watch that delivers nothing (bookmarks count) for this long, seconds.
    Defaults to 80: the server bookmarks about every 60 s."""

    short_watch: float | None = None
    """A watch closed by the server within this many seconds having delivered no event counts
    as an error (and is backed off from). Defaults to 1.0, as client-go."""

    backoff_initial: float | None = None
    """First wait after an error, seconds. Defaults to 0.8."""

    backoff_max: float | None = None
    """Cap on one wait; the wait doubles per consecutive error up to it. Defaults to 30."""

    backoff_jitter: float | None = None
    """Each wait is drawn from [d, d × (1 + jitter)] (then capped). Defaults to 1.0."""

    backoff_reset: float | None = None
    """Seconds without an error after which the wait starts over at ``backoff_initial``.
    Defaults to 120."""

    clock: Callable[[], float] | None = None
    """Monotonic time in seconds. Defaults to ``time.monotonic``."""

    sleep: Callable[[float], Awaitable[None]] | None = None
    """How a backoff waits. Defaults to ``asyncio.sleep``."""

    random: Callable[[], float] | None = None
    """Uniform [0, 1) numbers for jitter and watch timeouts. Defaults to ``random.random``."""

    def with_defaults(self) -> ResolvedInformerOptions:
        """Fill in every unset field and check the result; the one place defaults are decided."""
        resolved = ResolvedInformerOptions(
            page_size=500 if self.page_size is None else self.page_size,
            watch_timeout_min=300.0 if self.watch_timeout_min is None else self.watch_timeout_min,
            watch_timeout_max=600.0 if self.watch_timeout_max is None else self.watch_timeout_max,
            inactivity_timeout=80.0 if self.inactivity_timeout is None else self.inactivity_timeout,
            short_watch=1.0 if self.short_watch is None else self.short_watch,
            backoff_initial=0.8 if self.backoff_initial is None else self.backoff_initial,
            backoff_max=30.0 if self.backoff_max is None else self.backoff_max,
            backoff_jitter=1.0 if self.backoff_jitter is None else self.backoff_jitter,
            backoff_reset=120.0 if self.backoff_reset is None else self.backoff_reset,
            clock=time.monotonic if self.clock is None else self.clock,
            sleep=asyncio.sleep if self.sleep is None else self.sleep,
            random=random.random if self.random is None else self.random,
        )
        problems = []
        if resolved.page_size < 1:
            problems.append(f"page_size must be at least 1, not {resolved.page_size}")
        if not 1 <= resolved.watch_timeout_min <= resolved.watch_timeout_max:
            problems.append(
                "watch timeouts need 1 <= watch_timeout_min <= watch_timeout_max, not "
                f"{resolved.watch_timeout_min} and {resolved.watch_timeout_max}"
            )
        for name in ("inactivity_timeout", "backoff_initial", "backoff_max"):
            if getattr(resolved, name) <= 0:
                problems.append(f"{name} must be positive, not {getattr(resolved, name)}")
        for name in ("short_watch", "backoff_jitter", "backoff_reset"):
            if getattr(resolved, name) < 0:
                problems.append(f"{name} must not be negative, not {getattr(resolved, name)}")
        if resolved.backoff_initial > resolved.backoff_max:
            problems.append("backoff_initial must not exceed backoff_max")
        if problems:
            raise ValueError("InformerOptions: " + "; ".join(problems))
        return resolved


@dataclass(frozen=True)
class ResolvedInformerOptions:
    """:class:`InformerOptions` with every default applied."""

    page_size: int
    watch_timeout_min: float
    watch_timeout_max: float
    inactivity_timeout: float
    short_watch: float
    backoff_initial: float
    backoff_max: float
    backoff_jitter: float
    backoff_reset: float
    clock: Callable[[], float]
    sleep: Callable[[float], Awaitable[None]]
    random: Callable[[], float]


@dataclass(frozen=True)
class ByObject:
    """Scope and transform of one kind, overriding :class:`CacheOptions`' defaults.

    ``None`` inherits the cache-wide value; ``""`` lifts the restriction for this kind.
    """

    namespace: str | None = None
    """Cache only this namespace ("" for all). Defaults to ``CacheOptions.namespace``."""

    label_selector: LabelSelectorLike | None = None
    """Cache only matching objects ("" for all). Defaults to ``CacheOptions.label_selector``."""

    field_selector: str | None = None
    """Server-side field selector ("" for none). Defaults to ``CacheOptions.field_selector``."""

    transform: Transform | None = None
    """Applied to every object before it is cached. Defaults to ``CacheOptions.transform``."""


@dataclass(frozen=True)
class Scope:
    """What one informer caches, resolved: None/empty means unrestricted."""

    namespace: str | None
    label_selector: str | None
    field_selector: str | None
    transform: Transform


@dataclass(frozen=True)
class CacheOptions:
    """What a :class:`Cache` caches and how it watches. ``None`` means "use the default"."""

    namespace: str | None = None
    """Cache namespaced kinds of this namespace only. Defaults to None: all namespaces."""

    label_selector: LabelSelectorLike | None = None
    """Cache only objects with matching labels (string or ``{key: value}``). Defaults to None: all."""

    field_selector: str | None = None
    """Server-side field selector for every kind. Defaults to None: all objects."""

    transform: Transform | None = None
    """Applied to every object before it is cached. Defaults to :func:`strip_managed_fields`."""

    by_object: Mapping[tuple[str, str], ByObject] | None = None
    """Per ``(api_version, kind)`` overrides of the four fields above. Defaults to none."""

    informer: InformerOptions | None = None
    """Timings of every informer's list/watch loop. Defaults to ``InformerOptions()``."""

    def with_defaults(self) -> ResolvedCacheOptions:
        """Resolve defaults and check selectors; the one place defaults are decided."""
        by_object: dict[tuple[str, str], ByObject] = {}
        for key, value in (self.by_object or {}).items():
            if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, str) for k in key)):
                raise ValueError(f"CacheOptions.by_object: key {key!r} must be (api_version, kind)")
            if not isinstance(value, ByObject):
                raise ValueError(f"CacheOptions.by_object[{key!r}] must be a ByObject, not {value!r}")
            by_object[key] = value
        resolved = ResolvedCacheOptions(
            namespace=self.namespace or None,
            label_selector=_selector_text(self.label_selector, "CacheOptions.label_selector"),
            field_selector=self.field_selector or None,
            transform=strip_managed_fields if self.transform is None else self.transform,
            by_object=by_object,
            informer=(self.informer or InformerOptions()).with_defaults(),
        )
        for key in by_object:
            resolved.scope_for(*key)  # selector errors surface now, not when the kind is first read
        return resolved


@dataclass(frozen=True)
class ResolvedCacheOptions:
    """:class:`CacheOptions` with every default applied."""

    namespace: str | None
    label_selector: str | None
    field_selector: str | None
    transform: Transform
    by_object: Mapping[tuple[str, str], ByObject]
    informer: ResolvedInformerOptions

    def scope_for(self, api_version: str, kind: str) -> Scope:
        """The scope and transform of one kind: its ``by_object`` entry over the cache-wide values."""
        override = self.by_object.get((api_version, kind)) or ByObject()
        namespace = self.namespace if override.namespace is None else override.namespace
        label = (
            self.label_selector
            if override.label_selector is None
            else _selector_text(override.label_selector, f"by_object[{api_version}, {kind}].label_selector")
        )
        fields = self.field_selector if override.field_selector is None else override.field_selector
        transform = self.transform if override.transform is None else override.transform
        return Scope(namespace or None, label or None, fields or None, transform)


def _selector_text(value: LabelSelectorLike | None, where: str) -> str | None:
    if value is None:
        return None
    try:
        return str(as_selector(value))
    except (ValueError, TypeError) as err:
        raise ValueError(f"{where}: {err}") from None


# ------------------------------------------------------------------------------------ reflector


class ReflectorStore(Protocol):
    """Where a :class:`Reflector` puts what it learns; :class:`Informer` is the one implementation."""

    def encode_page(self, objects: list[JSON]) -> dict[str, bytes]:
        """One page of a (re)list as the store will hold it, keyed; the page's dicts can then go.

        The reflector keeps these, not the decoded pages, until the list is complete: the list
        stays all-or-nothing without holding every object as Python objects (~6x its JSON size).
        """
        ...

    def replace_encoded(self, listed: Mapping[str, bytes], resource_version: str) -> None:
        """The complete state from a (re)list: every page's :meth:`encode_page` answer merged."""
        ...

    def apply(self, event_type: str, obj: JSON) -> None:
        """One ``ADDED``, ``MODIFIED`` or ``DELETED`` watch event."""
        ...


class VeryShortWatchError(Exception):
    """The server closed a watch at once without an event: treated as an error, backed off from."""


class _Expired(Exception):
    """The resume point is older than the server's history (410): relist."""


class _Backoff:
    """client-go's reflector backoff: jittered exponential, starting over after a quiet period."""

    def __init__(self, options: ResolvedInformerOptions) -> None:
        self._options = options
        self._step = options.backoff_initial
        self._quiet_from: float | None = None

    def next_delay(self) -> float:
        options = self._options
        now = options.clock()
        if self._quiet_from is None or now - self._quiet_from >= options.backoff_reset:
            self._step = options.backoff_initial
        delay = min(self._step * (1.0 + options.backoff_jitter * options.random()), options.backoff_max)
        self._step = min(self._step * 2.0, options.backoff_max)
        self._quiet_from = now + delay
        return delay


# Errors the loop expects from a server or a network and recovers from by backing off. Anything
# else is a bug and ends the informer (and so the cache), loudly.
_RECOVERABLE = (
    APIError,
    NoKindMatch,
    aiohttp.ClientError,
    OSError,
    TimeoutError,
    jsoncodec.JSONDecodeError,
    VeryShortWatchError,
)


class Reflector:
    """Keeps a :class:`ReflectorStore` equal to the server's state of one kind (list, then watch).

    The rules are in the module docstring. LOW LEVEL: use an :class:`Informer` (or a :class:`Cache`).
    """

    def __init__(
        self,
        client: Client,
        api_version: str,
        kind: str,
        store: ReflectorStore,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        options: ResolvedInformerOptions | None = None,
    ) -> None:
        self._client = client
        self.api_version = api_version
        self.kind = kind
        self._store = store
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self._options = options or InformerOptions().with_defaults()
        self._last_rv = ""
        # After a list said "expired" (or "too large"), the next list reads the latest state.
        self._list_from_latest = False
        # Whether an event arrived since the last list; a relist is backed off from otherwise.
        self._healthy = True
        self.lists = 0
        """LIST calls completed (every page counts once per list): diagnostics for tests and logs."""
        self.watches = 0
        """Watch requests started."""
        self.namespaced: bool | None = None
        """Whether the kind is namespaced; None until discovery answered."""

    @property
    def last_sync_resource_version(self) -> str:
        """The version the next watch resumes from: the last list's, event's or bookmark's."""
        return self._last_rv

    async def run(self) -> None:
        """List and watch until cancelled; recoverable errors are logged and backed off from."""
        backoff = _Backoff(self._options)
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                await self._watch()
            except _Expired:
                log.info("%s: resourceVersion %s expired; relisting", self._what, self._last_rv)
                need_list = True
                if not self._healthy:
                    # Expired again before any event since the last list: a server in trouble, not
                    # a stale resume point. Relisting at once would hammer it.
                    await self._options.sleep(backoff.next_delay())
                self._healthy = False
            except _RECOVERABLE as err:
                delay = backoff.next_delay()
                log.warning(
                    "%s: %s: %s; retrying in %.1fs", self._what, type(err).__name__, err or "-", delay
                )
                await self._options.sleep(delay)

    @property
    def _what(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.kind}.{self.api_version}{where}"

    async def _list(self) -> None:
        info = await self._client.mapper.resource_for(self.api_version, self.kind)
        self.namespaced = info.namespaced
        while True:
            from_version = "" if self._list_from_latest else self._last_rv
            try:
                listed, version = await self._list_pages(from_version)
            except (Gone, ServerTimeout) as err:
                too_large = isinstance(err, ServerTimeout) and "ResourceVersionTooLarge" in str(err.details)
                if from_version and (isinstance(err, Gone) or too_large):
                    # client-go's isLastSyncResourceVersionUnavailable: read the latest state instead.
                    log.info("%s: list at %s failed (%s); listing the latest", self._what, from_version, err)
                    self._list_from_latest = True
                    continue
                raise
            break
        self._store.replace_encoded(listed, version)
        self._last_rv = version
        self._list_from_latest = False
        self.lists += 1

    async def _list_pages(self, from_version: str) -> tuple[dict[str, bytes], str]:
        listed: dict[str, bytes] = {}
        token: str | None = None
        while True:
            # Only the first page names a version; a continue token carries its snapshot.
            page = await self._client.list(
                self.api_version,
                self.kind,
                self.namespace,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                limit=self._options.page_size,
                continue_=token,
                resource_version=None if token else (from_version or None),
                resource_version_match="NotOlderThan" if from_version and not token else None,
            )
            listed.update(self._store.encode_page(page.get("items") or []))
            meta = page.get("metadata") or {}
            del page  # the decoded page is the bulk of a list's memory: not held across the next request
            token = meta.get("continue") or None
            if token is None:
                return listed, str(meta.get("resourceVersion") or "")

    async def _watch(self) -> None:
        options = self._options
        span = options.watch_timeout_max - options.watch_timeout_min
        timeout = max(1, round(options.watch_timeout_min + span * options.random()))
        started = options.clock()
        events = 0
        self.watches += 1
        stream = self._client.watch(
            self.api_version,
            self.kind,
            self.namespace,
            resource_version=self._last_rv or None,
            timeout_seconds=timeout,
            allow_watch_bookmarks=True,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            inactivity_timeout=options.inactivity_timeout,
        )
        try:
            async for event in stream:
                events += 1
                self._handle(event)
        except Gone as err:
            raise _Expired() from err
        finally:
            # Close the response now, also when _handle raised, rather than at garbage collection.
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        if events == 0 and options.clock() - started < options.short_watch:
            raise VeryShortWatchError(
                f"the watch closed after {options.clock() - started:.2f}s with no event"
            )
        log.debug("%s: watch closed after %d events; resuming at %s", self._what, events, self._last_rv)

    def _handle(self, event: JSON) -> None:
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            log.warning("%s: a %s event without an object; ignored", self._what, kind)
            return
        if kind == "ERROR":
            code = obj.get("code")
            if code == 410 or obj.get("reason") in ("Expired", "Gone"):
                raise _Expired()
            raise from_status(int(code) if isinstance(code, int) else 500, obj)
        version = _resource_version(obj)
        self._healthy = True
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self._store.apply(kind, obj)
        elif kind != "BOOKMARK":
            log.warning("%s: unknown watch event type %r; ignored", self._what, kind)
            return
        if version:
            self._last_rv = version


# ------------------------------------------------------------------------------------ informer


class Informer:
    """One kind's cache: a :class:`Reflector` feeding an indexed store that notifies handlers.

    Usually made by :meth:`Cache.informer_for`. Standalone: build it, then run
    ``await informer.start(stop)`` in a task.
    """

    def __init__(
        self,
        client: Client,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        label_selector: LabelSelectorLike | None = None,
        field_selector: str | None = None,
        transform: Transform | None = None,
        options: InformerOptions | ResolvedInformerOptions | None = None,
    ) -> None:
        self.api_version = api_version
        self.kind = kind
        if options is None:
            options = InformerOptions()
        resolved = options.with_defaults() if isinstance(options, InformerOptions) else options
        self.namespace = namespace or None
        self.label_selector = _selector_text(label_selector, f"{kind} informer label_selector")
        self.field_selector = field_selector or None
        self._transform = strip_managed_fields if transform is None else transform
        self.reflector = Reflector(
            client,
            api_version,
            kind,
            self,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            options=resolved,
        )
        self._items: dict[str, bytes] = {}
        # (uid, resourceVersion) per key: an update is checked against them without decoding the
        # stored text, which only a handler that reads the old state pays for.
        self._versions: dict[str, tuple[str, str]] = {}
        # Per index, the values each key is filed under (keys with none are absent). The namespace
        # index needs no entry: a key's namespace is part of the key.
        self._filed: dict[str, dict[str, tuple[str, ...]]] = {}
        self._indexers: dict[str, IndexFunc] = {
            INDEX_NAMESPACE: namespace_index,
            INDEX_OWNER_UID: owner_uid_index,
        }
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}
        self._handlers: tuple[HandlerRegistration, ...] = ()
        self._synced = asyncio.Event()
        self._stopped = asyncio.Event()
        self._started = False

    # -------------------------------------------------------------------------- lifecycle

    @property
    def namespaced(self) -> bool | None:
        """Whether the kind is namespaced; None until the informer has talked to the server."""
        return self.reflector.namespaced

    async def start(self, stop: asyncio.Event) -> None:
        """List and watch until ``stop`` is set. Raises only for a bug, never for a server error."""
        if self._started:
            raise RuntimeError(f"the {self.kind} informer was already started")
        self._started = True
        runner = asyncio.create_task(self.reflector.run(), name=f"reflector {self.kind}")
        stopper = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({runner, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (runner, stopper):
                task.cancel()
            await asyncio.gather(runner, stopper, return_exceptions=True)
            self._stopped.set()
        failure = runner.exception() if runner.done() and not runner.cancelled() else None
        if failure is not None:
            raise failure

    def has_synced(self) -> bool:
        """True once the first list is stored and its ``on_add`` calls are done."""
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        """Wait until :meth:`has_synced`; raises :class:`RuntimeError` if the informer stops first."""
        if self._synced.is_set():
            return
        synced = asyncio.ensure_future(self._synced.wait())
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({synced, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            synced.cancel()
            stopped.cancel()
        if not self._synced.is_set():
            raise RuntimeError(f"the {self.kind} informer stopped before it synced")

    # -------------------------------------------------------------------------- handlers

    def add_event_handler(self, handler: ResourceEventHandler) -> HandlerRegistration:
        """Register ``handler``; it first gets ``on_add(obj, True)`` for every object already cached."""
        registration = HandlerRegistration(self, handler)
        self._handlers = (*self._handlers, registration)
        for key in sorted(self._items):
            self._call(registration, "on_add", _decode(self._items[key]), True)
        return registration

    def remove_event_handler(self, registration: HandlerRegistration) -> None:
        """Stop notifying a handler; removing one twice is harmless."""
        self._handlers = tuple(r for r in self._handlers if r is not registration)

    def _call(self, registration: HandlerRegistration, method: str, *args: Any) -> None:
        try:
            getattr(registration.handler, method)(*args)
        except Exception:
            log.exception("%s informer: handler %r raised in %s", self.kind, registration.handler, method)

    def _notify(self, method: str, *args: Any) -> None:
        for registration in self._handlers:
            self._call(registration, method, *args)

    def _notify_update(self, old_text: bytes, new: JSON) -> None:
        decoded: builtins.list[JSON] = []

        def load_old() -> JSON:
            # Decoded once, on first use: every handler of the event sees the same dict.
            if not decoded:
                decoded.append(_decode(old_text))
            return decoded[0]

        for registration in self._handlers:
            if registration.on_update_deferred is None:
                self._call(registration, "on_update", load_old(), new)
            else:
                self._call(registration, "on_update_deferred", load_old, new)

    # -------------------------------------------------------------------------- indexes

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add named index functions; they are computed at once for the objects already cached."""
        for name in indexers:
            if name in self._indexers:
                raise ValueError(f"{self.kind} informer: an indexer named {name!r} already exists")
        for name, fn in indexers.items():
            self._indexers[name] = fn
            self._indices[name] = {}
            for key, text in self._items.items():
                self._file(name, fn, key, _decode(text), True)

    def _index_values(self, name: str, fn: IndexFunc, obj: JSON) -> tuple[str, ...]:
        try:
            return tuple(sorted({str(value) for value in fn(obj)}))
        except Exception:
            log.exception("%s informer: indexer %r failed on %s", self.kind, name, object_key(obj))
            return ()

    def _index(self, key: str, new: JSON | None, *, added: bool = False) -> None:
        """File ``key`` under ``new``'s index values (None: unfile it); ``added``: it was not filed."""
        for name, fn in self._indexers.items():
            if fn is namespace_index and not added and new is not None:
                continue  # an update: same key, so the same namespace
            self._file(name, fn, key, new, added)

    def _file(self, name: str, fn: IndexFunc, key: str, new: JSON | None, added: bool) -> None:
        filed = self._filed.setdefault(name, {})
        if fn is namespace_index:
            namespace, slash, _ = key.partition("/")
            before: tuple[str, ...] = () if added else ((namespace,) if slash else ("",))
        else:
            before = filed.get(key, ())
        after = self._index_values(name, fn, new) if new is not None else ()
        if fn is not namespace_index:
            if after:
                filed[key] = after
            else:
                filed.pop(key, None)
        if before == after:
            return
        index = self._indices[name]
        for value in before:
            if value not in after:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
        for value in after:
            if value not in before:
                index.setdefault(value, set()).add(key)

    # -------------------------------------------------------------------------- reads

    def get_by_key(self, key: str) -> JSON | None:
        """The cached object of ``key`` (see :func:`object_key`), as a copy the caller owns."""
        text = self._items.get(key)
        return None if text is None else _decode(text)

    def list(self) -> builtins.list[JSON]:
        """Every cached object, sorted by key; copies the caller owns."""
        items = self._items
        return [_decode(items[key]) for key in sorted(items)]

    def list_keys(self) -> builtins.list[str]:
        """Every cached key, sorted."""
        return sorted(self._items)

    def by_index(self, index_name: str, value: str) -> builtins.list[JSON]:
        """The objects whose ``index_name`` values include ``value``, sorted by key; copies."""
        return [_decode(self._items[key]) for key in self.keys_by_index(index_name, value)]

    def keys_by_index(self, index_name: str, value: str) -> builtins.list[str]:
        """The keys whose ``index_name`` values include ``value``, sorted."""
        index = self._indices.get(index_name)
        if index is None:
            raise ValueError(
                f"{self.kind} informer has no index {index_name!r}; known: {sorted(self._indices)}"
            )
        return sorted(index.get(value, ()))

    def __len__(self) -> int:
        return len(self._items)

    # -------------------------------------------------------------------------- store updates

    def _prepare(self, obj: JSON) -> JSON:
        obj.setdefault("apiVersion", self.api_version)
        obj.setdefault("kind", self.kind)
        try:
            return self._transform(obj)
        except Exception:
            log.exception(
                "%s informer: transform failed on %s; caching it untransformed", self.kind, object_key(obj)
            )
            return obj

    def _upsert(self, obj: JSON, initial: bool, text: bytes | None = None) -> None:
        key = object_key(obj)
        if text is None:
            text = _encode(obj)
        items = self._items
        old_text = items.get(key)
        versions = (_uid(obj), _resource_version(obj))
        if old_text is None:
            items[key] = text
            self._versions[key] = versions
            self._index(key, obj, added=True)
            self._notify("on_add", obj, initial)
            return
        if old_text == text:
            return
        old_uid, old_version = self._versions[key]
        if old_uid != versions[0]:
            # Deleted and recreated under the same name while we were not watching: two events.
            self._remove(key, _decode(old_text))
            self._upsert(obj, initial, text)
            return
        if old_version == versions[1]:
            return
        items[key] = text
        self._versions[key] = versions
        self._index(key, obj)
        self._notify_update(old_text, obj)

    def _remove(self, key: str, last: JSON) -> None:
        text = self._items.pop(key, None)
        if text is None:
            return
        del self._versions[key]
        self._index(key, None)
        self._notify("on_delete", last)

    def replace(self, objects: builtins.list[JSON], resource_version: str) -> None:
        """LOW LEVEL: make the store equal to ``objects`` (a whole list), notifying the difference."""
        self.replace_encoded(self.encode_page(objects), resource_version)

    def encode_page(self, objects: builtins.list[JSON]) -> dict[str, bytes]:
        """LOW LEVEL (the reflector's): one list page transformed and encoded, by key."""
        page: dict[str, bytes] = {}
        for raw in objects:
            obj = self._prepare(raw)
            page[object_key(obj)] = _encode(obj)
        return page

    def replace_encoded(self, listed: Mapping[str, bytes], resource_version: str) -> None:
        """LOW LEVEL (the reflector's): make the store equal to a complete list, notifying the difference.

        Deletions of what the list no longer names come first, then updates and adds in list order.
        """
        initial = not self._synced.is_set()
        items = self._items
        for key in sorted(items.keys() - listed.keys()):
            self._remove(key, _decode(items[key]))
        for key, text in listed.items():
            if items.get(key) == text:
                continue  # unchanged since the store last saw it: nothing to decode or notify
            self._upsert(_decode(text), initial, text)
        if initial:
            self._synced.set()

    def apply(self, event_type: str, obj: JSON) -> None:
        """LOW LEVEL (the reflector's): one watch event."""
        obj = self._prepare(obj)
        if event_type == "DELETED":
            self._remove(object_key(obj), obj)
        else:
            self._upsert(obj, False)


# ------------------------------------------------------------------------------------ cache


class CacheNotStarted(RuntimeError):
    """A read from a :class:`Cache` whose ``start`` has not been called (it would wait forever)."""


class Cache:
    """Informers on demand, one per ``(api_version, kind)``, and reads served from them.

    A :class:`~runtime.runnable.Runnable` that needs no leader election: every replica keeps its
    cache warm so a new leader starts reconciling at once.

    :meth:`get` and :meth:`list` of a kind not read before create its informer and wait until it
    has synced (controller-runtime's behaviour); before :meth:`start` they raise
    :class:`CacheNotStarted` instead of waiting forever. A kind the server does not serve keeps
    its informer retrying with backoff, so bound such waits (the manager's sync timeout).
    """

    def __init__(self, client: Client, options: CacheOptions | None = None) -> None:
        self.client = client
        self.options = (options or CacheOptions()).with_defaults()
        self._informers: dict[tuple[str, str], Informer] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        # The informers' own stop signal: set when the caller's is, or when an informer fails.
        self._stop: asyncio.Event | None = None
        self._failure: BaseException | None = None
        self._failed = asyncio.Event()

    def need_leader_election(self) -> bool:
        return False

    def informer_for(self, api_version: str, kind: str) -> Informer:
        """The informer of a kind, created (and started, if the cache runs) on first call."""
        key = (api_version, kind)
        informer = self._informers.get(key)
        if informer is None:
            scope = self.options.scope_for(api_version, kind)
            informer = Informer(
                self.client,
                api_version,
                kind,
                namespace=scope.namespace,
                label_selector=scope.label_selector,
                field_selector=scope.field_selector,
                transform=scope.transform,
                options=self.options.informer,
            )
            self._informers[key] = informer
            if self._stop is not None:
                self._run(informer)
        return informer

    @property
    def informers(self) -> builtins.list[Informer]:
        """Every informer created so far."""
        return list(self._informers.values())

    def _run(self, informer: Informer) -> None:
        assert self._stop is not None
        task = asyncio.create_task(informer.start(self._stop), name=f"informer {informer.kind}")
        self._tasks.add(task)
        task.add_done_callback(self._on_informer_done)

    def _on_informer_done(self, task: asyncio.Task[None]) -> None:
        failure = None if task.cancelled() else task.exception()
        if failure is not None and self._failure is None:
            self._failure = failure
            self._failed.set()

    async def start(self, stop: asyncio.Event) -> None:
        """Run every informer (including those created later) until ``stop`` is set."""
        if self._stop is not None:
            raise RuntimeError("the cache was already started")
        self._stop = asyncio.Event()
        for informer in list(self._informers.values()):
            self._run(informer)
        stopper = asyncio.ensure_future(stop.wait())
        failed = asyncio.ensure_future(self._failed.wait())
        try:
            await asyncio.wait({stopper, failed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
            failed.cancel()
            # An informer that failed (a bug, not a server error) takes the others down with it,
            # and the cache fails like any runnable: the manager then stops everything.
            self._stop.set()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._failure is not None:
            raise self._failure

    def has_synced(self) -> bool:
        """True when every informer created so far has synced (a readiness check)."""
        return all(informer.has_synced() for informer in self._informers.values())

    async def wait_for_cache_sync(self) -> None:
        """Wait until every informer, including any created meanwhile, has synced."""
        while True:
            pending = [i for i in self._informers.values() if not i.has_synced()]
            if not pending:
                return
            await asyncio.gather(*(informer.wait_for_sync() for informer in pending))

    async def _synced_informer(self, api_version: str, kind: str) -> Informer:
        informer = self.informer_for(api_version, kind)
        if self._stop is None:
            raise CacheNotStarted(
                f"read {kind} from a cache that was not started: run cache.start(stop) (the manager "
                "does) or use the client directly"
            )
        await informer.wait_for_sync()
        return informer

    @staticmethod
    def _check_namespace(informer: Informer, namespace: str | None) -> None:
        if informer.namespace and informer.namespaced and namespace and namespace != informer.namespace:
            raise ValueError(
                f"the cache holds {informer.kind} of namespace {informer.namespace!r} only, not "
                f"{namespace!r}: widen CacheOptions (namespace or by_object) or use the client"
            )

    async def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> JSON:
        """The cached object, as a copy; raises :class:`~runtime.errors.NotFound` when absent."""
        informer = await self._synced_informer(api_version, kind)
        self._check_namespace(informer, namespace)
        key = f"{namespace}/{name}" if namespace and informer.namespaced is not False else name
        obj = informer.get_by_key(key)
        if obj is None:
            raise NotFound(
                404,
                "NotFound",
                f'{kind} "{name}" not found in the cache',
                {"name": name, "kind": kind},
            )
        return obj

    async def list(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        label_selector: LabelSelectorLike | None = None,
        index: tuple[str, str] | None = None,
    ) -> builtins.list[JSON]:
        """Cached objects as copies, sorted by key, filtered by namespace, labels and/or an index.

        ``index=(name, value)`` uses an informer index (say :data:`INDEX_OWNER_UID`, or one added
        with :meth:`Informer.add_indexers`) instead of a scan.
        """
        selector = as_selector(label_selector)
        informer = await self._synced_informer(api_version, kind)
        self._check_namespace(informer, namespace)
        if index is not None:
            name, value = index
            keys = informer.keys_by_index(name, value)
            if namespace and informer.namespaced is not False:
                keys = [key for key in keys if key.startswith(namespace + "/")]
        elif namespace and informer.namespaced is not False:
            keys = informer.keys_by_index(INDEX_NAMESPACE, namespace)
        else:
            keys = informer.list_keys()
        found = []
        for key in keys:
            obj = informer.get_by_key(key)
            if obj is not None and (
                selector.empty or selector.matches((obj.get("metadata") or {}).get("labels"))
            ):
                found.append(obj)
        return found


class CachedClient:
    """controller-runtime's default client: ``get``/``list`` from the :class:`Cache`, writes to the server.

    Writes are the :class:`~runtime.client.Client`'s own methods (``create``, ``update``,
    ``update_status``, ``patch``, ``patch_status``, ``delete``, ``get_scale``, ``update_scale``).
    A read right after a write may not see it yet: the cache catches up when the watch event
    arrives (use the ``resourceVersion`` for optimistic locking, or :attr:`reader` to read the
    server directly).
    """

    def __init__(self, client: Client, cache: Cache) -> None:
        self.reader = client
        """The uncached client, for reads that must see the server's latest state."""
        self.cache = cache
        self.create = client.create
        self.update = client.update
        self.update_status = client.update_status
        self.patch = client.patch
        self.patch_status = client.patch_status
        self.delete = client.delete
        self.get_scale = client.get_scale
        self.update_scale = client.update_scale

    async def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> JSON:
        """The cached object (a copy); raises :class:`~runtime.errors.NotFound` when absent."""
        return await self.cache.get(api_version, kind, name, namespace or "")

    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: LabelSelectorLike | None = None,
        field_selector: str | None = None,
        index: tuple[str, str] | None = None,
    ) -> JSON:
        """A list dict shaped like :meth:`Client.list`'s (``items``, ``metadata.resourceVersion``).

        Field selectors are not evaluated by the cache: use an index, or :attr:`reader`.
        """
        if field_selector:
            raise ValueError(
                "the cache does not evaluate field selectors: list by index=(name, value) after "
                "Informer.add_indexers, or use CachedClient.reader"
            )
        items = await self.cache.list(
            api_version, kind, namespace=namespace, label_selector=label_selector, index=index
        )
        informer = self.cache.informer_for(api_version, kind)
        return {
            "apiVersion": api_version,
            "kind": f"{kind}List",
            "metadata": {"resourceVersion": informer.reflector.last_sync_resource_version},
            "items": items,
        }


__all__ = [
    "INDEX_NAMESPACE",
    "INDEX_OWNER_UID",
    "JSON",
    "ByObject",
    "Cache",
    "CacheNotStarted",
    "CacheOptions",
    "CachedClient",
    "HandlerRegistration",
    "IndexFunc",
    "Informer",
    "InformerOptions",
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
