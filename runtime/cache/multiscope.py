"""Several scopes of one kind: an informer per scope behind one merged reader.

A :class:`~runtime.cache.ByObject` that names several namespaces (each with its own selectors) or
several label selectors gets a :class:`MultiScopeInformer`: one :class:`Informer` per
:class:`~runtime.cache.Scope`, each listing and watching only what its scope matches on the
server, so nothing outside the union is ever sent or cached. controller-runtime has the
namespace half (``ByObject.Namespaces``: disjoint per-namespace caches behind one reader); the
union of label selectors is this runtime's own, because a label selector ANDs its terms ("has
label A or label B" cannot be written as one).

What readers and handlers see
-----------------------------
* **One object per key.** Scopes may overlap (an object with both labels is in both); the merged
  view holds each key once, as the copy of its *owner*: the first scope that held it, for as
  long as that scope holds it. ``get_by_key``, ``list``, ``by_index`` and the cache's reads all
  answer from the owner, so a get of an object two scopes hold returns the copy whose events the
  handlers were told. Memory: an object in two scopes is stored twice (each informer keeps its
  own); objects in none cost nothing.
* **Handlers get the union's events**, from the owner's stream only, so they arrive in that
  stream's order: ``on_add`` when a key enters the union, ``on_update`` while its owner holds it,
  ``on_delete`` when it leaves the union. Another scope's events for an owned key are dropped.
* **Moving between scopes is an update, not a delete.** When the owner drops a key (a relabel out
  of its selector, a relist that no longer names it, or a real delete):

  - if another scope holds it, that scope becomes the owner and handlers get ``on_update`` from
    the last state they were told of to that scope's copy, if the two differ in more than their
    resourceVersion (that copy may be a moment older; that scope's own next event follows);
  - if no scope holds it, it leaves the view at once (gets answer "not found") but handlers are
    not told yet: the two watches are separate streams, and the scope that gains the object may
    not have said so yet. A scope that adds it settles it as a move (``on_update``, or nothing
    when nothing changed). Otherwise the merged informer asks the server, one LIST per scope
    (that scope's selectors and ``metadata.name``): in no scope any more means ``on_delete``
    with the last state handlers saw; still in one means wait for that scope's watch, asking
    again with the informer options' backoff. So no spurious delete reaches handlers while the
    object is still in the union, and a delete always does once it leaves it.
* A new handler first gets ``on_add(obj, True)`` for every key in the view (keys between scopes
  are not in it). Synced means every scope has synced.

The resourceVersion of a merged list (:attr:`MultiScopeInformer.last_sync_resource_version`) is
the last scope's, as controller-runtime's multi-namespace list: do not watch from it.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import Awaitable, Callable, Mapping

from ..client import Client
from ..jsoncodec import JSON
from ..waiting import wait_for_any
from .handlers import EventHandlers, HandlerRegistration, ResourceEventHandler
from .indexers import IndexFunc, _resource_version, _uid, object_key
from .informer import Informer
from .options import ResolvedInformerOptions, Scope

log = logging.getLogger("runtime.cache")


class _ScopeEvents:
    """What one scope's informer tells the merged informer."""

    __slots__ = ("_index", "_merged")

    def __init__(self, merged: MultiScopeInformer, index: int) -> None:
        self._merged = merged
        self._index = index

    def on_add(self, obj: JSON, is_in_initial_list: bool) -> None:
        self._merged._added(self._index, obj, is_in_initial_list)

    def on_update(self, old: JSON, new: JSON) -> None:
        self.on_update_deferred(lambda: old, new)

    def on_update_deferred(self, load_old: Callable[[], JSON], new: JSON) -> None:
        self._merged._updated(self._index, load_old, new)

    def on_delete(self, obj: JSON) -> None:
        self._merged._deleted(self._index, obj)


class MultiScopeInformer:
    """One kind cached in several scopes, read and watched as one (see the module docstring).

    Made by :meth:`Cache.informer_for <runtime.cache.Cache.informer_for>` for a kind with several
    scopes; offers the reads and handler registration of :class:`Informer`.
    """

    def __init__(
        self,
        client: Client,
        api_version: str,
        kind: str,
        scopes: tuple[Scope, ...],
        options: ResolvedInformerOptions,
        *,
        held_on_server: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        """``held_on_server(key)`` says whether some scope matches ``key`` on the server now;
        defaults to one LIST per scope (:meth:`scopes_hold_on_server`)."""
        if len(scopes) < 2:
            raise ValueError(f"{kind}: a MultiScopeInformer needs at least two scopes, got {len(scopes)}")
        self.client = client
        self.api_version = api_version
        self.kind = kind
        self.scopes = scopes
        self._options = options
        self.informers = tuple(
            Informer.for_scope(client, api_version, kind, scope, options) for scope in scopes
        )
        self._owner: dict[str, int] = {}
        self._leaving: dict[str, JSON] = {}
        # The resourceVersion handlers were last told of, per key: the old state of a move is what
        # they saw (a scope's DELETED carries that content, stamped with the event's version).
        self._told: dict[str, str] = {}
        self._events = EventHandlers(kind)
        self._confirming: set[asyncio.Task[None]] = set()
        self._held_on_server = held_on_server or self.scopes_hold_on_server
        self._started = False
        for index, informer in enumerate(self.informers):
            informer.add_event_handler(_ScopeEvents(self, index))

    # -------------------------------------------------------------------------- lifecycle

    @property
    def namespaced(self) -> bool | None:
        """Whether the kind is namespaced; None until a scope has talked to the server."""
        return next((i.namespaced for i in self.informers if i.namespaced is not None), None)

    @property
    def namespaces(self) -> tuple[str | None, ...]:
        """Each scope's namespace (None: every namespace)."""
        return tuple(scope.namespace for scope in self.scopes)

    def covers_namespace(self, namespace: str | None) -> bool:
        """Whether a read of ``namespace`` (None or "": every namespace) is within some scope."""
        return any(informer.covers_namespace(namespace) for informer in self.informers)

    @property
    def last_sync_resource_version(self) -> str:
        return self.informers[-1].last_sync_resource_version

    async def start(self, stop: asyncio.Event) -> None:
        """Run every scope's informer until ``stop`` is set; one that fails (a bug) stops the rest."""
        if self._started:
            raise RuntimeError(f"the {self.kind} informer was already started")
        self._started = True
        inner, failed = asyncio.Event(), asyncio.Event()
        tasks = [
            asyncio.create_task(informer.start(inner), name=f"informer {self.kind} {scope}")
            for informer, scope in zip(self.informers, self.scopes, strict=True)
        ]
        for task in tasks:
            task.add_done_callback(lambda t: failed.set() if not t.cancelled() and t.exception() else None)
        try:
            await wait_for_any(stop, failed)
        finally:
            inner.set()
            for confirming in self._confirming:
                confirming.cancel()
            await asyncio.gather(*tasks, *self._confirming, return_exceptions=True)
        for task in tasks:
            failure = None if task.cancelled() else task.exception()
            if failure is not None:
                raise failure

    def has_synced(self) -> bool:
        """True once every scope has synced."""
        return all(informer.has_synced() for informer in self.informers)

    async def wait_for_sync(self) -> None:
        """Wait until every scope has synced; raises :class:`RuntimeError` if one stops first."""
        await asyncio.gather(*(informer.wait_for_sync() for informer in self.informers))

    # -------------------------------------------------------------------------- handlers

    def add_event_handler(self, handler: ResourceEventHandler) -> HandlerRegistration:
        """Register ``handler``; it first gets ``on_add(obj, True)`` for every object in the view."""
        in_view = (self.get_by_key(key) for key in sorted(self._owner))
        return self._events.add(
            HandlerRegistration(self, handler), (obj for obj in in_view if obj is not None)
        )

    def remove_event_handler(self, registration: HandlerRegistration) -> None:
        """Stop notifying a handler; removing one twice is harmless."""
        self._events.remove(registration)

    def _notify_change(self, last: JSON, now: JSON, initial: bool) -> None:
        """Handlers last saw ``last`` (a DELETED's state); the view now shows ``now`` (same key)."""
        key = object_key(now)
        if _uid(last) != _uid(now):  # deleted and recreated under the same name meanwhile
            self._told.pop(key, None)
            self._events.notify("on_delete", last)
            self._told_of(now)
            self._events.notify("on_add", now, initial)
        elif _without_version(last) != _without_version(now):
            told = self._told.get(key)
            old = last
            if told is not None:
                old = {**last, "metadata": {**last["metadata"], "resourceVersion": told}}
            self._told_of(now)
            self._events.notify_update(lambda: old, now)

    def _told_of(self, obj: JSON) -> None:
        self._told[object_key(obj)] = _resource_version(obj)

    # -------------------------------------------------------------------------- scope events

    def _added(self, index: int, obj: JSON, initial: bool) -> None:
        key = object_key(obj)
        if key in self._owner:
            return  # another scope owns it; its stream tells the handlers
        self._owner[key] = index
        last = self._leaving.pop(key, None)
        if last is None:
            self._told_of(obj)
            self._events.notify("on_add", obj, initial)
        else:
            self._notify_change(last, obj, initial)  # moved from one scope to another

    def _updated(self, index: int, load_old: Callable[[], JSON], new: JSON) -> None:
        if self._owner.get(object_key(new)) == index:
            self._told_of(new)
            self._events.notify_update(load_old, new)

    def _deleted(self, index: int, obj: JSON) -> None:
        key = object_key(obj)
        if self._owner.get(key) != index:
            return
        del self._owner[key]
        heir = next((i for i, informer in enumerate(self.informers) if key in informer), None)
        if heir is not None:
            self._owner[key] = heir
            current = self.informers[heir].get_by_key(key)
            if current is not None:
                self._notify_change(obj, current, False)
            return
        self._leaving[key] = obj
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # driven by hand, outside any loop: nothing to wait for
            self._told.pop(key, None)
            self._events.notify("on_delete", self._leaving.pop(key))
            return
        task = loop.create_task(self._confirm_leaving(key), name=f"{self.kind} {key} left its scopes")
        self._confirming.add(task)
        task.add_done_callback(self._confirming.discard)

    async def _confirm_leaving(self, key: str) -> None:
        """Tell handlers ``key`` is gone once the server says no scope matches it any more; stop
        waiting as soon as a scope adds it (:meth:`_added` settles it as a move)."""
        delay = self._options.backoff_initial
        while key in self._leaving:
            try:
                held = await self._held_on_server(key)
            except Exception as err:
                log.warning("%s informer: cannot tell whether %s left every scope: %s", self.kind, key, err)
                held = True
            if key not in self._leaving:
                return
            if not held:
                self._told.pop(key, None)
                self._events.notify("on_delete", self._leaving.pop(key))
                return
            await self._options.sleep(delay)
            delay = min(2 * delay, self._options.backoff_max)

    async def scopes_hold_on_server(self, key: str) -> bool:
        """Whether some scope's selectors match ``key`` on the server now: one LIST per scope
        whose namespace allows it, with the scope's selectors and ``metadata.name``, at most one item."""
        namespace, slash, name = key.rpartition("/")
        for scope in self.scopes:
            if slash and scope.namespace and scope.namespace != namespace:
                continue
            fields = f"metadata.name={name}" + (f",{scope.field_selector}" if scope.field_selector else "")
            listed = await self.client.list(
                self.api_version,
                self.kind,
                namespace if slash else None,
                label_selector=scope.label_selector,
                field_selector=fields,
                limit=1,
            )
            if listed.get("items"):
                return True
        return False

    # -------------------------------------------------------------------------- reads

    def get_by_key(self, key: str) -> JSON | None:
        """The owner's copy of ``key``, as a copy the caller owns; None when no scope holds it."""
        owner = self._owner.get(key)
        return None if owner is None else self.informers[owner].get_by_key(key)

    def list(self) -> builtins.list[JSON]:
        """Every object in the view, sorted by key; copies the caller owns."""
        return [obj for key in self.list_keys() if (obj := self.get_by_key(key)) is not None]

    def list_keys(self) -> builtins.list[str]:
        """Every key in the view, sorted."""
        return sorted(self._owner)

    def by_index(self, index_name: str, value: str) -> builtins.list[JSON]:
        """The objects whose ``index_name`` values (as their owner files them) include ``value``."""
        keys = self.keys_by_index(index_name, value)
        return [obj for key in keys if (obj := self.get_by_key(key)) is not None]

    def keys_by_index(self, index_name: str, value: str) -> builtins.list[str]:
        """The keys whose owner files them under ``value`` in ``index_name``, sorted."""
        found: set[str] = set()
        for index, informer in enumerate(self.informers):
            found.update(k for k in informer.keys_by_index(index_name, value) if self._owner.get(k) == index)
        return sorted(found)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add named index functions to every scope's informer."""
        for informer in self.informers:
            informer.add_indexers(indexers)

    def __len__(self) -> int:
        return len(self._owner)

    def __contains__(self, key: object) -> bool:
        return key in self._owner


def _without_version(obj: JSON) -> JSON:
    """``obj`` without ``metadata.resourceVersion``: a DELETED event that ends a scope's hold
    carries the last state that scope knew, stamped with the event's version; compared without it,
    the same object in another scope is the same state."""
    meta = dict(obj.get("metadata") or {})
    meta.pop("resourceVersion", None)
    return {**obj, "metadata": meta}
