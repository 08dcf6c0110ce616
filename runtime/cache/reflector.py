"""The reflector: keeps a store equal to the server's state of one kind by listing, then watching."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

import aiohttp

from .. import jsoncodec
from ..client import Client
from ..errors import APIError, Gone, NoKindMatch, ServerTimeout, from_status
from ..jsoncodec import JSON
from .indexers import _resource_version
from .options import InformerOptions, ResolvedInformerOptions

log = logging.getLogger("runtime.cache")


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

    The rules are in the :mod:`runtime.cache` docstring. LOW LEVEL: use an :class:`Informer` (or a
    :class:`Cache`).
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
        self.watches += 1
        try:
            # Events go from the socket's read callback straight into the store (no iterator,
            # no task switch per event): the cost of an event arriving alone is the hot path.
            events = await self._client.watch_events(
                self.api_version,
                self.kind,
                self.namespace,
                on_event=self._handle,
                resource_version=self._last_rv or None,
                timeout_seconds=timeout,
                allow_watch_bookmarks=True,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                inactivity_timeout=options.inactivity_timeout,
            )
        except Gone as err:
            raise _Expired() from err
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
