"""The watch verbs of the client: one watch request, read as an iterator or pushed to a callback.

:meth:`WatchClient.watch` reads the response through aiohttp's stream at the caller's pace;
:meth:`WatchClient.watch_events` hands the connection to the push reader of
:mod:`runtime.client.watchstream`. Both send the same request (:meth:`WatchClient._watch_target`).
The package docstring (:mod:`runtime.client`) says when to use which.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import aiohttp

from .. import jsoncodec
from ..jsoncodec import JSON
from .mapping import MappedTransport
from .objects import _query
from .transport import _error_from_response
from .watchstream import OnEvent, SilenceWatchdog, read_events


class WatchClient(MappedTransport):
    """Watch streams of a kind; :class:`~runtime.client.Client` adds the object verbs."""

    async def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_watch_bookmarks: bool = True,
        label_selector: str | None = None,
        field_selector: str | None = None,
        send_initial_events: bool | None = None,
        resource_version_match: str | None = None,
        inactivity_timeout: float | None = None,
    ) -> AsyncIterator[JSON]:
        """One watch stream: yields ``{"type", "object"}`` dicts as the server sends them.

        A raw primitive: no reconnect, no relist. The stream ends when the server closes it (after
        ``timeout_seconds``). ``ERROR`` events are yielded like any other, their ``object`` being a
        ``Status``; turn one into an exception with ``errors.from_status(obj["code"], obj)`` (410 means
        relist). ``inactivity_timeout`` raises :class:`TimeoutError` when no bytes (bookmarks
        included) arrive for that many seconds, to catch streams that hang silently.
        """
        path, query = await self._watch_target(
            api_version, kind, namespace, resource_version, timeout_seconds, allow_watch_bookmarks,
            label_selector, field_selector, send_initial_events, resource_version_match,
        )  # fmt: skip
        timeout = aiohttp.ClientTimeout(
            total=None, connect=self.options.timeout, sock_read=inactivity_timeout
        )
        response = await self._send("GET", path, query=query, client_timeout=timeout)
        try:
            if response.status >= 300:
                raise await _error_from_response(response)
            pending = b""
            loads = jsoncodec.loads
            content = response.content
            readany = content.readany  # what iter_any() awaits, without its wrapper
            progress = _ReadProgress(content)
            watchdog = _silence_watchdog(response, progress, inactivity_timeout, path)
            try:
                while chunk := await readany():
                    progress.last_read = _monotonic()
                    progress.read_bytes += len(chunk)
                    # Split ourselves: aiohttp's readline refuses lines above its buffer size. A
                    # chunk can hold hundreds of events after a stall: walk it with an offset and
                    # copy only each line, never the rest of the chunk once per line.
                    data = pending + chunk if pending else chunk
                    start = 0
                    while (newline := data.find(b"\n", start)) >= 0:
                        line = data[start:newline]
                        start = newline + 1
                        if line and not line.isspace():
                            yield loads(line)
                    pending = data[start:]
            except (TimeoutError, aiohttp.ServerTimeoutError) as err:
                response.close()  # the stream is cut mid-body: the connection cannot be reused
                raise TimeoutError(f"watch {path}: no data for {inactivity_timeout}s") from err
            finally:
                if watchdog is not None:
                    watchdog.cancel()
            if pending.strip():
                yield loads(pending)
        finally:
            response.release()

    async def watch_events(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        on_event: OnEvent,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_watch_bookmarks: bool = True,
        label_selector: str | None = None,
        field_selector: str | None = None,
        send_initial_events: bool | None = None,
        resource_version_match: str | None = None,
        inactivity_timeout: float | None = None,
    ) -> int:
        """One watch stream, pushed: ``on_event(event)`` for each event as it is read off the socket.

        Returns the number of events once the server ends the stream (after ``timeout_seconds``).
        The same request and errors as :meth:`watch` (a non-2xx answer raises its typed error;
        ``ERROR`` events are delivered like any other), but no iterator: ``on_event`` runs inside
        the connection's read callback, so it must not block, and an exception it raises closes
        the stream and is raised here. A stream cut short raises :class:`ConnectionResetError`;
        one silent for ``inactivity_timeout`` seconds, :class:`TimeoutError`. Cancelling the call
        closes the connection. Meant for a consumer that keeps up by construction (the
        reflector's store); one that wants to read at its own pace uses :meth:`watch`.
        """
        path, query = await self._watch_target(
            api_version, kind, namespace, resource_version, timeout_seconds, allow_watch_bookmarks,
            label_selector, field_selector, send_initial_events, resource_version_match,
        )  # fmt: skip
        protocol = await self._open_watch(path, query, on_event)
        return await read_events(protocol, inactivity_timeout=inactivity_timeout, what=f"watch {path}")

    async def _watch_target(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        resource_version: str | None,
        timeout_seconds: int | None,
        allow_watch_bookmarks: bool,
        label_selector: str | None,
        field_selector: str | None,
        send_initial_events: bool | None,
        resource_version_match: str | None,
    ) -> tuple[str, dict[str, str]]:
        """The path and query of a watch request (both readers send the same)."""
        info = await self._resource(api_version, kind, namespace, name=False)
        query = _query(
            watch="true",
            resourceVersion=resource_version,
            timeoutSeconds=timeout_seconds,
            allowWatchBookmarks=allow_watch_bookmarks or None,
            labelSelector=label_selector,
            fieldSelector=field_selector,
            sendInitialEvents=send_initial_events,
            resourceVersionMatch=resource_version_match,
        )
        return info.path(namespace), query


_monotonic = time.monotonic


def _silence_watchdog(
    response: aiohttp.ClientResponse, progress: _ReadProgress, inactivity_timeout: float | None, path: str
) -> SilenceWatchdog | None:
    """The timer that fails the watch at ``path`` once silent for ``inactivity_timeout`` seconds,
    in place of aiohttp's read timeout; None without a timeout (or a connection)."""
    if inactivity_timeout is None or response.connection is None:
        return None
    # aiohttp's read timeout cancels and creates a timer for every chunk, that is per
    # event at a steady rate; from the headers on, one timer of ours does that job.
    what = f"watch {path}"
    watchdog = SilenceWatchdog(
        inactivity_timeout, progress.last_activity, response.content.set_exception, what
    )
    protocol = response.connection.protocol
    if protocol is not None:
        protocol.read_timeout = None
    return watchdog


_monotonic = time.monotonic


class _ReadProgress:
    """What the aiohttp watch reader has taken from its stream, for the :class:`SilenceWatchdog`.

    The reader adds each chunk it takes to :attr:`read_bytes` and stamps :attr:`last_read`. Bytes
    the stream holds that the reader has not taken yet count as activity (a busy reader is not a
    silent server).
    """

    __slots__ = ("_content", "last_read", "read_bytes")

    def __init__(self, content: aiohttp.StreamReader) -> None:
        self._content = content
        self.read_bytes = content.total_bytes
        self.last_read = _monotonic()

    def last_activity(self) -> float:
        if self._content.total_bytes > self.read_bytes:
            self.last_read = _monotonic()
        return self.last_read
