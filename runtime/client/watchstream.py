"""A watch read straight off the socket: every event decoded and handed on in the read callback.

:meth:`Client.watch_events <runtime.client.Client.watch_events>` is built on this; the reflector
uses it. The async iterator :meth:`Client.watch <runtime.client.Client.watch>` reads through
aiohttp's stream instead, with its flow control, for callers that consume at their own pace.

Why a reader of its own: at a steady rate every watch event arrives alone and wakes the process.
Through aiohttp an event then takes the HTTP parser's callback, a ``StreamReader`` buffer, a future
set per chunk, a task switch into the reader's coroutine and an async generator's yield before
any of the informer's code runs. Here the HTTP parser (httptools, the llhttp binding) calls
:meth:`_WatchProtocol.on_body` from the socket's ``data_received``, which splits the lines,
decodes each and calls the consumer there and then: from the socket to the consumer in one
callback. ``docs/performance.md`` ("The steady-rate cost") has the measurements.

The rules, the same as the aiohttp reader's:

- One request per watch, one connection per request (``Connection: close``): a watch lasts
  minutes, so a pooled connection would save one TLS handshake per watch at most.
- A non-2xx answer is read whole and raised as the typed error of its status (``runtime.errors``),
  after the transport's retry policy (429/503 with ``Retry-After``, one credential refresh on
  401) had its say.
- ``inactivity_timeout``: a stream through which no byte came for that many seconds fails with
  :class:`TimeoutError`; one timer, re-armed when it fires, for the whole stream.
- A stream cut short (the connection lost before the final chunk) raises
  :class:`ConnectionResetError`; a malformed answer raises :class:`ConnectionError`. Both are
  ``OSError``, which the reflector backs off from and retries.
- An exception raised by the consumer ends the stream: the connection is closed at once, the
  events after it in the same read are not delivered, and the exception is raised to the caller.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import cast

import httptools

from .. import jsoncodec
from ..jsoncodec import JSON

OnEvent = Callable[[JSON], None]
"""Called once per decoded watch event (``{"type", "object"}``), inside the socket's read callback:
it must not block, and what it raises ends the stream."""

_monotonic = time.monotonic


class _WatchProtocol(asyncio.Protocol):
    """One watch request's connection: writes the request, parses the answer, delivers events."""

    def __init__(self, request: bytes, on_event: OnEvent, loop: asyncio.AbstractEventLoop) -> None:
        self._request = request
        self._on_event = on_event
        self._parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.status = 0
        self.headers: dict[str, str] = {}
        self.headers_received: asyncio.Future[None] = loop.create_future()
        self.finished: asyncio.Future[None] = loop.create_future()
        self.error_body: list[bytes] = []
        self.events = 0
        self.last_data = _monotonic()
        self._pending = b""
        self._failure: BaseException | None = None

    # ------------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self.transport = cast(asyncio.Transport, transport)
        self.transport.write(self._request)

    def data_received(self, data: bytes) -> None:
        self.last_data = _monotonic()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError:
            pass  # on_body recorded the consumer's exception; failed below
        except httptools.HttpParserError as err:
            self.fail(ConnectionError(f"watch: malformed HTTP answer from the server: {err}"))
        if self._failure is not None:
            self._close()

    def eof_received(self) -> bool | None:
        return None  # close the connection; connection_lost tells whether the answer was whole

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if not self.finished.done():
            cause = exc or "EOF"
            self.fail(ConnectionResetError(f"watch: the connection closed before the answer ended ({cause})"))

    # ------------------------------------------------------------------ httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.status = self._parser.get_status_code()
        if not self.headers_received.done():
            self.headers_received.set_result(None)

    def on_body(self, body: bytes) -> None:
        if self._failure is not None:
            return
        if self.status >= 300:
            self.error_body.append(body)
            return
        # A read holds one event at a steady rate and hundreds after a stall: walk it with an
        # offset, copying only each line, never the rest of the read once per line.
        data = self._pending + body if self._pending else body
        start = 0
        loads = jsoncodec.loads
        on_event = self._on_event
        try:
            while (newline := data.find(b"\n", start)) >= 0:
                line = data[start:newline]
                start = newline + 1
                if line and not line.isspace():
                    self.events += 1
                    on_event(loads(line))
        except Exception as err:  # the consumer's or the decoder's: raised to the caller
            self.fail(err)
            return
        self._pending = data[start:]

    def on_message_complete(self) -> None:
        if self._failure is not None:
            return
        rest = self._pending
        self._pending = b""
        if self.status < 300 and rest.strip():
            try:
                self.events += 1
                self._on_event(jsoncodec.loads(rest))
            except Exception as err:  # as in on_body
                self.fail(err)
                return
        if not self.finished.done():
            self.finished.set_result(None)

    # ------------------------------------------------------------------ ending

    def fail(self, err: BaseException) -> None:
        """End the stream with ``err`` (the first failure wins) and close the connection."""
        if self._failure is None:
            self._failure = err
        for waiter in (self.headers_received, self.finished):
            if not waiter.done():
                waiter.set_exception(self._failure)
                # Retrieved by whoever awaits it; marked so an unawaited one does not warn.
                waiter.exception()
        self._close()

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.abort()
            self.transport = None

    def close(self) -> None:
        """Drop the connection (the caller stopped waiting)."""
        if not self.finished.done():
            self.finished.cancel()
        self._close()


def request_bytes(host: str, target: str, headers: dict[str, str]) -> bytes:
    """The HTTP/1.1 request of one watch: ``GET target`` with ``headers`` and ``Connection: close``."""
    lines = [f"GET {target} HTTP/1.1", f"Host: {host}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class SilenceWatchdog:
    """Ends a stream through which nothing has come for ``seconds``, with one timer.

    ``last_activity()`` says when the stream last showed life (a monotonic time); the timer, when
    it fires, sleeps again for what is left of the period after that, so it is re-armed at most
    once per ``seconds`` however busy the stream. On silence it calls ``on_silence`` with a
    :class:`TimeoutError` naming ``what``. Both watch readers use it.
    """

    def __init__(
        self,
        seconds: float,
        last_activity: Callable[[], float],
        on_silence: Callable[[BaseException], None],
        what: str,
    ) -> None:
        self._seconds = seconds
        self._last_activity = last_activity
        self._on_silence = on_silence
        self._what = what
        self._loop = asyncio.get_running_loop()
        self._handle: asyncio.TimerHandle | None = self._loop.call_later(seconds, self._check)

    def _check(self) -> None:
        self._handle = None
        left = self._last_activity() + self._seconds - _monotonic()
        if left > 0:
            self._handle = self._loop.call_later(left, self._check)
            return
        self._on_silence(TimeoutError(f"{self._what}: no data for {self._seconds}s"))

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


async def read_events(protocol: _WatchProtocol, *, inactivity_timeout: float | None, what: str) -> int:
    """Wait until the answer of a connected 2xx watch ends; returns the events delivered."""
    watchdog = None
    if inactivity_timeout:
        watchdog = SilenceWatchdog(inactivity_timeout, lambda: protocol.last_data, protocol.fail, what)
    try:
        await protocol.finished
    finally:
        if watchdog is not None:
            watchdog.cancel()
        protocol.close()
    return protocol.events
