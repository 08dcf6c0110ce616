"""The informer: one kind's indexed store, fed by a reflector, notifying handlers of every change."""

from __future__ import annotations

import asyncio
import builtins
import logging
import sys
from collections.abc import Mapping

from .. import jsoncodec
from ..client import Client
from ..jsoncodec import JSON
from ..waiting import wait_for_any
from .handlers import EventHandlers, HandlerRegistration, ResourceEventHandler
from .indexers import (
    INDEX_NAMESPACE,
    INDEX_OWNER_UID,
    IndexFunc,
    _resource_version,
    _uid,
    namespace_index,
    object_key,
    owner_uid_index,
)
from .options import (
    InformerOptions,
    LabelSelectorLike,
    ResolvedInformerOptions,
    Scope,
    Transform,
    _selector_text,
    strip_managed_fields,
)
from .reflector import Reflector

log = logging.getLogger("runtime.cache")

_encode = jsoncodec.dumps
_decode = jsoncodec.loads

# Handing a kept object to a reader rests on CPython's reference counts (see Informer._take_fresh).
_FRESH_HANDOFF = sys.implementation.name == "cpython"


class Informer:
    """One kind's cache: a :class:`Reflector` feeding an indexed store that notifies handlers.

    Usually made by :meth:`Cache.informer_for`. Standalone: build it, then run
    ``await informer.start(stop)`` in a task.
    """

    @classmethod
    def for_scope(
        cls,
        client: Client,
        api_version: str,
        kind: str,
        scope: Scope,
        options: InformerOptions | ResolvedInformerOptions | None = None,
    ) -> Informer:
        """The informer of one cache scope (its namespace, selectors and transform)."""
        return cls(
            client,
            api_version,
            kind,
            namespace=scope.namespace,
            label_selector=scope.label_selector,
            field_selector=scope.field_selector,
            transform=scope.transform,
            options=options,
        )

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
        self._events = EventHandlers(kind)
        # The decoded object of the last store change (key, dict), for the first read of that key
        # to take instead of decoding the text again; see _take_fresh.
        self._fresh_key: str | None = None
        self._fresh: JSON | None = None
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
        await wait_for_any(self._synced, self._stopped)
        if not self._synced.is_set():
            raise RuntimeError(f"the {self.kind} informer stopped before it synced")

    # -------------------------------------------------------------------------- handlers

    def add_event_handler(self, handler: ResourceEventHandler) -> HandlerRegistration:
        """Register ``handler``; it first gets ``on_add(obj, True)`` for every object already cached."""
        existing = (_decode(self._items[key]) for key in sorted(self._items))
        return self._events.add(HandlerRegistration(self, handler), existing)

    def remove_event_handler(self, registration: HandlerRegistration) -> None:
        """Stop notifying a handler; removing one twice is harmless."""
        self._events.remove(registration)

    def _notify_update(self, old_text: bytes, new: JSON) -> None:
        decoded: builtins.list[JSON] = []

        def load_old() -> JSON:
            # Decoded once, on first use: every handler of the event sees the same dict.
            if not decoded:
                decoded.append(_decode(old_text))
            return decoded[0]

        self._events.notify_update(load_old, new)

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
        if key == self._fresh_key:
            fresh = self._take_fresh()
            if fresh is not None:
                return fresh
        text = self._items.get(key)
        return None if text is None else _decode(text)

    def _keep_fresh(self, key: str, obj: JSON) -> None:
        """Keep ``obj``, just stored under ``key`` (and about to go to the handlers), for the next
        read. Set before the handlers run: a handler reading ``key`` must not get an older one."""
        self._fresh_key = key
        self._fresh = obj

    def _take_fresh(self) -> JSON | None:
        """The kept object if nothing but this informer refers to it any more, else None.

        A controller reads the object of an event moments after the event's handlers saw it;
        handing it the dict those handlers were given saves decoding the same text again. That
        dict is the stored text decoded (the store holds its encoding), handlers must treat it as
        read-only, and it is handed out only when no handler (nor anything else) kept a reference:
        then the reader owns it, exactly as it owns a fresh decode. Once taken or refused, it is
        forgotten; the next read decodes.
        """
        obj = self._fresh
        self._fresh_key = self._fresh = None
        # References now: `obj` and getrefcount's argument. Any more is someone else's.
        if obj is not None and _FRESH_HANDOFF and sys.getrefcount(obj) == 2:
            return obj
        return None

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

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is cached (no copy made)."""
        return key in self._items

    def covers_namespace(self, namespace: str | None) -> bool:
        """Whether a read of ``namespace`` (None or "": every namespace) is within what is cached."""
        return not (self.namespace and self.namespaced and namespace and namespace != self.namespace)

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion the store is at (of the last list, watch event or bookmark)."""
        return self.reflector.last_sync_resource_version

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
            self._keep_fresh(key, obj)
            self._events.notify("on_add", obj, initial)
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
        self._keep_fresh(key, obj)
        self._notify_update(old_text, obj)

    def _remove(self, key: str, last: JSON) -> None:
        if key == self._fresh_key:
            self._fresh_key = self._fresh = None
        text = self._items.pop(key, None)
        if text is None:
            return
        del self._versions[key]
        self._index(key, None)
        self._events.notify("on_delete", last)

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
