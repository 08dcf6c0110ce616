"""Kubernetes Events from controllers, written in the background and aggregated like client-go's.

``recorder.event(obj, "Warning", "PreflightFailed", "etcd member m-2 unreachable")`` returns at
once: the Event goes into a bounded queue and a background task writes it. A reconcile is never
slowed down or failed by event writing; when the queue is full the Event is dropped with a log
line (as client-go's broadcaster does), and API errors are logged, never raised.

A spam filter (client-go's) caps what one component may say about one object: a burst of 25
Events, then one more per 5 minutes; the rest is dropped and counted in ``EventSink.filtered``.

Repeats are aggregated rather than stored again: an Event with the same involved object, type,
reason, message and source as one written less than ``aggregation_window`` seconds ago (default
10 minutes) is a PATCH of the existing Event's ``count`` and ``lastTimestamp``. ``kubectl
describe`` then shows ``(x5 over 3m)`` instead of five lines, and a hot loop cannot flood etcd.

Events are **core/v1** Events (``involvedObject``, ``source``, ``count``, ``firstTimestamp``,
``lastTimestamp``), the API client-go's ``tools/record`` and controller-runtime's
``GetEventRecorderFor`` write: every kubectl version and dashboard reads them, and ``count`` +
``lastTimestamp`` is precisely the aggregation model described above (``events.k8s.io/v1``
replaces it with ``series`` and is served from the same storage, so nothing is lost).

The Event goes in the involved object's namespace (``default`` for cluster-scoped objects) and is
named ``<object name>.<hex nanoseconds>`` like client-go's.

Example:

>>> import asyncio
>>> from runtime.client import Client
>>> from runtime.events import EventRecorder
>>> async def record() -> list[str]:
...     async with await Client.from_kubeconfig(kubeconfig) as client:
...         metadata = {"generateName": "events-", "namespace": "default"}
...         cm = await client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata})
...         recorder = EventRecorder(client, "example")  # the component shown as the source
...         for _ in range(3):
...             recorder.eventf(cm, "Normal", "Scaled", "replicas now %d", 3)
...         await recorder.sink.close()  # flush what is queued, then stop
...         events = await client.list("v1", "Event", "default")
...         await client.delete("v1", "ConfigMap", cm["metadata"]["name"], namespace="default")
...         return [
...             f"{e['reason']}: {e['message']} (x{e['count']}, from {e['source']['component']})"
...             for e in events["items"]
...             if e["involvedObject"]["name"] == cm["metadata"]["name"]
...         ]
>>> asyncio.run(record())
['Scaled: replicas now 3 (x3, from example)']

In a manager, use ``manager.get_event_recorder("controlplane")``: its recorders share one
:class:`EventSink`, which the manager flushes and closes when it stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from .client import Client
from .errors import APIError, NotFound
from .jsoncodec import JSON

EVENT_TYPE_NORMAL: Final = "Normal"
EVENT_TYPE_WARNING: Final = "Warning"
EVENT_TYPES: Final = frozenset({EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING})
MAX_MESSAGE_LENGTH: Final = 1024
"""Longer messages are truncated (client-go caps the note of an Event at 1 KiB)."""

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EventSinkOptions:
    """Queueing and aggregation of an :class:`EventSink`; resolve with :meth:`with_defaults`."""

    queue_size: int | None = None
    """Events waiting to be written before new ones are dropped. Defaults to 1000 (client-go's
    broadcaster queue length)."""
    aggregation_window: float | None = None
    """Seconds during which an identical Event increments the earlier one. Defaults to 600."""
    max_tracked: int | None = None
    """Distinct Events remembered for aggregation (least recently used forgotten first).
    Defaults to 4096 (client-go's LRU size)."""
    host: str | None = None
    """``source.host`` of every Event. Defaults to this machine's hostname."""
    spam_burst: int | None = None
    """Events one source may record about one object in a burst before the spam filter drops
    them. Defaults to 25 (client-go's); 0 turns the filter off."""
    spam_refill: float | None = None
    """Seconds for the spam filter to allow one more Event per source and object. Defaults to 300
    (client-go's one per 5 minutes)."""

    def with_defaults(self) -> ResolvedEventSinkOptions:
        """Every default filled in; raises ``ValueError`` on out-of-range values."""
        queue_size = 1000 if self.queue_size is None else self.queue_size
        window = 600.0 if self.aggregation_window is None else float(self.aggregation_window)
        tracked = 4096 if self.max_tracked is None else self.max_tracked
        burst = 25 if self.spam_burst is None else self.spam_burst
        refill = 300.0 if self.spam_refill is None else float(self.spam_refill)
        if queue_size < 1 or tracked < 1 or window < 0 or burst < 0 or refill <= 0:
            raise ValueError(
                f"events: queue_size ({queue_size}) and max_tracked ({tracked}) must be ≥ 1, "
                f"aggregation_window ({window}) and spam_burst ({burst}) ≥ 0, spam_refill ({refill}) > 0"
            )
        return ResolvedEventSinkOptions(
            queue_size, window, tracked, self.host or socket.gethostname(), burst, refill
        )


@dataclass(frozen=True)
class ResolvedEventSinkOptions:
    queue_size: int
    aggregation_window: float
    max_tracked: int
    host: str
    spam_burst: int
    spam_refill: float


class _SpamFilter:
    """client-go's EventSourceObjectSpamFilter: a token bucket per (source, object), LRU-bounded."""

    def __init__(self, burst: int, refill: float, max_tracked: int) -> None:
        self.burst = burst
        self.refill = refill
        self.max_tracked = max_tracked
        self._buckets: OrderedDict[tuple[Any, ...], tuple[float, float]] = OrderedDict()

    def allow(self, key: tuple[Any, ...]) -> bool:
        if self.burst == 0:
            return True
        now = time.monotonic()
        tokens, last = self._buckets.get(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) / self.refill)
        allowed = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)
        self._buckets.move_to_end(key)
        while len(self._buckets) > self.max_tracked:
            self._buckets.popitem(last=False)
        return allowed


@dataclass
class _Seen:
    namespace: str
    name: str
    count: int
    first_seen: float


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def object_reference(obj: Mapping[str, Any]) -> JSON:
    """The ``involvedObject`` reference of ``obj`` (a Kubernetes object as a dict)."""
    meta = obj.get("metadata") or {}
    ref: JSON = {
        "kind": obj.get("kind", ""),
        "apiVersion": obj.get("apiVersion", ""),
        "name": meta.get("name", ""),
    }
    for key in ("namespace", "uid", "resourceVersion"):
        if meta.get(key):
            ref[key] = meta[key]
    return ref


class EventSink:
    """The one writer behind every :class:`EventRecorder` of a process: queue, aggregation, API."""

    def __init__(self, client: Client, options: EventSinkOptions | None = None) -> None:
        self.client = client
        self.options = (options or EventSinkOptions()).with_defaults()
        self._queue: asyncio.Queue[tuple[JSON, tuple[Any, ...]]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._seen: OrderedDict[tuple[Any, ...], _Seen] = OrderedDict()
        self._closed = False
        self._spam = _SpamFilter(self.options.spam_burst, self.options.spam_refill, self.options.max_tracked)
        self.dropped = 0
        """Events dropped because the queue was full or the sink closed."""
        self.filtered = 0
        """Events dropped by the spam filter (too many about one object from one source)."""

    def recorder(self, component: str, host: str | None = None) -> EventRecorder:
        """A recorder whose Events carry ``source.component`` = ``component``."""
        return EventRecorder(self, component, host or self.options.host)

    def submit(self, event: JSON, key: tuple[Any, ...]) -> None:
        """Queue ``event`` for writing; never blocks. Must be called in the event loop's thread.

        ``key`` identifies identical Events: (kind, apiVersion, namespace, name, uid, type, reason,
        message, component, host); its object and source part also keys the spam filter.
        """
        if not self._spam.allow((*key[:5], *key[8:])):
            self.filtered += 1
            _log.debug("event %s on %s filtered as spam", event.get("reason"), key[3])
            return
        if self._closed:
            self.dropped += 1
            _log.warning("event sink closed; dropping event %s", event.get("reason"))
            return
        if self._queue is None:
            self._queue = asyncio.Queue(self.options.queue_size)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._write_loop(), name="event-sink")
        try:
            self._queue.put_nowait((event, key))
        except asyncio.QueueFull:
            self.dropped += 1
            _log.error(
                "event queue full (%d); dropping event %s %s on %s",
                self.options.queue_size,
                event.get("type"),
                event.get("reason"),
                event["involvedObject"].get("name"),
            )

    async def flush(self) -> None:
        """Wait until every queued Event has been written (or failed)."""
        if self._queue is not None:
            await self._queue.join()

    async def close(self, drain_timeout: float = 5.0) -> None:
        """Stop accepting Events, write the queued ones (up to ``drain_timeout`` seconds), stop."""
        self._closed = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(drain_timeout):
                await self.flush()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _write_loop(self) -> None:
        assert self._queue is not None
        queue = self._queue
        while True:
            event, key = await queue.get()
            try:
                await self._write(event, key)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # never let one bad Event stop the writer
                _log.error("could not write event %s: %s", event.get("reason"), err)
            finally:
                queue.task_done()

    async def _write(self, event: JSON, key: tuple[Any, ...]) -> None:
        now = time.monotonic()
        seen = self._seen.get(key)
        if seen is not None and now - seen.first_seen <= self.options.aggregation_window:
            seen.count += 1
            self._seen.move_to_end(key)
            try:
                await self.client.patch(
                    "v1",
                    "Event",
                    seen.name,
                    {"count": seen.count, "lastTimestamp": event["lastTimestamp"]},
                    seen.namespace,
                )
                return
            except NotFound:
                pass  # deleted (TTL or by hand): start a new Event below
            except APIError as err:
                _log.error("could not update event %s/%s: %s", seen.namespace, seen.name, err)
                return
        created = await self.client.create(event)
        meta = created.get("metadata") or {}
        self._seen[key] = _Seen(meta.get("namespace", ""), meta.get("name", ""), 1, now)
        self._seen.move_to_end(key)
        while len(self._seen) > self.options.max_tracked:
            self._seen.popitem(last=False)


class EventRecorder:
    """Records Events about objects for one component; see the module docstring.

    ``EventRecorder(client, "my-controller")`` makes a private :class:`EventSink`; recorders made
    by :meth:`EventSink.recorder` (or ``Manager.get_event_recorder``) share their sink's queue and
    aggregation state, which is what a process with several controllers wants.
    """

    def __init__(self, client: Client | EventSink, component: str, host: str | None = None) -> None:
        if not component:
            raise ValueError("an event recorder needs a component name (the Event's source.component)")
        self.sink = client if isinstance(client, EventSink) else EventSink(client)
        self.component = component
        self.host = host or self.sink.options.host

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None:
        """Record an Event about ``obj``; returns at once, never raises for API problems."""
        if type not in EVENT_TYPES:
            _log.error("event type %r is not one of %s; event %s dropped", type, sorted(EVENT_TYPES), reason)
            return
        ref = object_reference(obj)
        if not ref["name"] or not ref["kind"]:
            _log.error("event %s: the object has no kind or metadata.name; event dropped", reason)
            return
        if len(message) > MAX_MESSAGE_LENGTH:
            message = message[: MAX_MESSAGE_LENGTH - 3] + "..."
        namespace = ref.get("namespace") or "default"
        now = _now()
        body: JSON = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{ref['name']}.{time.time_ns():x}", "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type,
            "source": {"component": self.component, "host": self.host},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }
        key = (
            ref["kind"],
            ref.get("apiVersion"),
            namespace,
            ref["name"],
            ref.get("uid"),
            type,
            reason,
            message,
            self.component,
            self.host,
        )
        self.sink.submit(body, key)

    def eventf(self, obj: Mapping[str, Any], type: str, reason: str, message_fmt: str, *args: Any) -> None:
        """:meth:`event` with ``message_fmt % args`` as the message."""
        try:
            message = message_fmt % args if args else message_fmt
        except (TypeError, ValueError) as err:
            message = f"{message_fmt} {args!r} (bad format: {err})"
        self.event(obj, type, reason, message)
