"""In-memory storage of the embedded API server: objects, one global resourceVersion, watch fan-out.

Like etcd behind kube-apiserver, the store hands out one monotonically increasing resourceVersion
for every write across all resources, keeps a bounded history of changes per resource (the watch
cache), and fans every change out to the watchers of that resource. A watch that asks for a
version older than the retained history is told it has expired (410), exactly as a real server
does once its watch cache has moved on.

Everything here runs on the server's event loop; no locks are needed because no method awaits.

Objects are held encoded (:func:`~.jsoncodec.freeze`), the live ones and the history alike, as
etcd holds them: a store of ten thousand objects plus ten thousand changes would otherwise be
half a million dicts and lists that every full garbage collection walks (long pauses under a
write load; docs/performance.md). Readers get a fresh decoded copy, theirs to change; the one decoded object
a write hands to the watchers at commit time is shared by them and not kept.
"""

from __future__ import annotations

import asyncio
import copy
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from runtime.jsoncodec import JSON, freeze, thaw

GroupResource = tuple[str, str]
ObjectKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped


@dataclass(frozen=True)
class Change:
    """One committed write: what a watcher of that resource may see."""

    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    object: JSON
    old_object: JSON | None


# A watcher's filter: (object) -> whether the watcher sees it. Namespace and selectors compose here.
ObjectFilter = Callable[[JSON], bool]


@dataclass(eq=False)
class Watcher:
    """One open watch stream. The HTTP handler drains ``queue``; ``None`` means the server stops it."""

    predicate: ObjectFilter
    queue: asyncio.Queue[tuple[str, JSON] | None] = field(default_factory=asyncio.Queue)

    def offer(self, change: Change) -> None:
        """Translate a change into what this watcher sees, honouring selector transitions.

        An object that starts matching is ADDED; one that stops matching is DELETED, and then the
        watcher is shown the *old* (still matching) state stamped with the new resourceVersion, as
        kube-apiserver's cacher does.
        """
        new_match = self.predicate(change.object)
        if change.type == "MODIFIED" and change.old_object is not None:
            old_match = self.predicate(change.old_object)
            if new_match and old_match:
                self.queue.put_nowait(("MODIFIED", change.object))
            elif new_match:
                self.queue.put_nowait(("ADDED", change.object))
            elif old_match:
                stamped = copy.copy(change.old_object)
                stamped["metadata"] = dict(stamped["metadata"], resourceVersion=str(change.rv))
                self.queue.put_nowait(("DELETED", stamped))
        elif new_match:
            self.queue.put_nowait((change.type, change.object))


@dataclass(frozen=True, slots=True)
class _Record:
    """One change as the history keeps it: encoded (see the module docstring)."""

    rv: int
    type: str
    object: bytes
    old_object: bytes | None

    def change(self) -> Change:
        old = None if self.old_object is None else thaw(self.old_object)
        return Change(self.rv, self.type, thaw(self.object), old)


class ResourceStore:
    """Objects and recent history of one group/resource."""

    def __init__(self, start_rv: int, history_size: int) -> None:
        # key -> (the encoded object, its resourceVersion)
        self.objects: dict[ObjectKey, tuple[bytes, str]] = {}
        self.history: deque[_Record] = deque(maxlen=history_size)
        # The oldest resourceVersion a watch may resume from; moves forward as history is trimmed.
        self.start_rv = start_rv
        # The newest resourceVersion written to this resource (what its bookmarks carry).
        self.last_rv = start_rv
        self.watchers: set[Watcher] = set()
        # Whether history was ever dropped: until then any older state can be rebuilt from it.
        self.trimmed = False

    def record(self, change: Change, encoded: bytes, old_encoded: bytes | None) -> None:
        """Keep ``change`` (whose objects are ``encoded`` / ``old_encoded``) and offer it to the watchers."""
        if len(self.history) == self.history.maxlen:
            self.start_rv = self.history[0].rv
            self.trimmed = True
        self.history.append(_Record(change.rv, change.type, encoded, old_encoded))
        self.last_rv = change.rv
        for watcher in list(self.watchers):
            watcher.offer(change)

    def changes_since(self, rv: int) -> Iterator[Change]:
        """The retained changes newer than ``rv``, oldest first, each decoded afresh."""
        for record in self.history:
            if record.rv > rv:
                yield record.change()


class Store:
    """All resources, keyed by (group, resource), sharing one resourceVersion counter."""

    def __init__(self, *, history_size: int = 10_000, initial_rv: int = 1) -> None:
        self.rv = initial_rv
        self.history_size = history_size
        self._resources: dict[GroupResource, ResourceStore] = {}
        # Notified whenever the global resourceVersion moves, for watches waiting on a future version.
        self.rv_advanced = asyncio.Event()

    def resource(self, gr: GroupResource) -> ResourceStore:
        rs = self._resources.get(gr)
        if rs is None:
            rs = ResourceStore(self.rv, self.history_size)
            self._resources[gr] = rs
        return rs

    def drop_resource(self, gr: GroupResource) -> list[JSON]:
        """Forget a resource (its CRD was deleted); returns the objects it held."""
        rs = self._resources.pop(gr, None)
        if rs is None:
            return []
        for watcher in rs.watchers:
            watcher.queue.put_nowait(None)
        return [thaw(raw) for raw, _ in rs.objects.values()]

    def next_rv(self) -> int:
        self.rv += 1
        self.rv_advanced.set()
        self.rv_advanced = asyncio.Event()
        return self.rv

    def get(self, gr: GroupResource, key: ObjectKey) -> JSON | None:
        """A fresh copy of the stored object, or None."""
        rs = self._resources.get(gr)
        entry = None if rs is None else rs.objects.get(key)
        return None if entry is None else thaw(entry[0])

    def resource_version(self, gr: GroupResource, key: ObjectKey) -> str | None:
        """The stored object's resourceVersion (None if there is none), without decoding it."""
        rs = self._resources.get(gr)
        entry = None if rs is None else rs.objects.get(key)
        return None if entry is None else entry[1]

    def keys(self, gr: GroupResource, namespace: str | None = None) -> list[ObjectKey]:
        """The keys of the stored objects, sorted as :meth:`list` returns the objects.

        Reading a resource starts its history (as a write does), so a watch from the version
        current at this read is never older than the history, whatever is written elsewhere
        before that watch arrives.
        """
        objects = self.resource(gr).objects
        return sorted(k for k in objects if namespace is None or k[0] == namespace)

    def list(self, gr: GroupResource, namespace: str | None = None) -> list[JSON]:
        """Fresh copies of the objects, sorted by (namespace, name) as etcd's key order returns them."""
        objects = self.resource(gr).objects
        return [thaw(objects[k][0]) for k in self.keys(gr, namespace)]

    def put(self, gr: GroupResource, key: ObjectKey, obj: JSON, old: JSON | None) -> JSON:
        """Store a created or updated object with a fresh resourceVersion; returns ``obj``, stamped.

        ``old`` is the stored version being replaced (None for a create). The caller must not
        change ``obj`` afterwards: the watchers are handed that very object.
        """
        rv = self.next_rv()
        rv_text = str(rv)
        obj["metadata"]["resourceVersion"] = rv_text
        rs = self.resource(gr)
        encoded = freeze(obj)
        previous = rs.objects.get(key)
        old_encoded = None
        if old is not None:
            old_encoded = previous[0] if previous is not None else freeze(old)
        rs.objects[key] = (encoded, rv_text)
        rs.record(Change(rv, "ADDED" if old is None else "MODIFIED", obj, old), encoded, old_encoded)
        return obj

    def delete(self, gr: GroupResource, key: ObjectKey, last_state: JSON) -> JSON:
        """Remove an object; watchers get its last state stamped with the deletion's resourceVersion."""
        rv = self.next_rv()
        rs = self.resource(gr)
        rs.objects.pop(key, None)
        gone = copy.copy(last_state)
        gone["metadata"] = dict(last_state["metadata"], resourceVersion=str(rv))
        rs.record(Change(rv, "DELETED", gone, None), freeze(gone), None)
        return gone
