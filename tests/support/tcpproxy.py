"""A TCP proxy between a client and the API server that a test can break on purpose.

It forwards bytes both ways without looking at them (TLS passes through), so it works in front of
any back end. The faults are the ones networks produce:

* :meth:`TCPProxy.cut` closes every open connection (a reset, a restarted load balancer);
* ``refuse = True`` makes new connections close at once (the server unreachable for a while);
* :meth:`TCPProxy.stall` stops forwarding on the open connections while they stay open (a hung
  stream: the client waits forever unless it has a read timeout);
* ``hold = True`` does the same to every new connection (a server that accepts and never answers).

:class:`ServiceProxy` spreads connections over several endpoints and skips one that refuses, as
kube-proxy does for a Service. :func:`proxied_kubeconfig` rewrites a kubeconfig to go through the
proxy, keeping the server's name for TLS verification (``tls-server-name``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import Any
from urllib.parse import urlsplit, urlunsplit


class _Link:
    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.writers = (client, upstream)
        self.stalled = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    def close(self) -> None:
        for writer in self.writers:
            writer.transport.abort()
        for task in self.tasks:
            task.cancel()


class TCPProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.refuse = False
        self.hold = False
        self.connections = 0
        """Connections accepted and forwarded so far."""
        self._links: set[_Link] = set()
        self._server: asyncio.Server | None = None
        self.port = 0
        """The port it listens on, once started."""

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def cut(self) -> None:
        """Abort every open connection, both sides."""
        for link in list(self._links):
            link.close()
        self._links.clear()

    def stall(self) -> None:
        """Stop forwarding on every open connection, leaving it open."""
        for link in self._links:
            link.stalled.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refuse:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        await self._forward(reader, writer, up_reader, up_writer)

    async def _forward(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
    ) -> None:
        self.connections += 1
        link = _Link(writer, up_writer)
        if self.hold:
            link.stalled.set()
        self._links.add(link)
        link.tasks = [
            asyncio.create_task(self._pump(reader, up_writer, link)),
            asyncio.create_task(self._pump(up_reader, writer, link)),
        ]
        await asyncio.gather(*link.tasks, return_exceptions=True)
        link.close()
        self._links.discard(link)

    @staticmethod
    async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, link: _Link) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while True:
                data = await source.read(65536)
                if not data:
                    break
                if link.stalled.is_set():
                    await asyncio.Event().wait()  # hold the bytes forever; the test cuts us later
                sink.write(data)
                await sink.drain()
        with contextlib.suppress(OSError):
            sink.write_eof()


def server_address(kubeconfig: dict[str, Any]) -> tuple[str, int, str]:
    """(host, port, scheme) of the kubeconfig's only cluster."""
    url = urlsplit(kubeconfig["clusters"][0]["cluster"]["server"])
    port = url.port or (443 if url.scheme == "https" else 80)
    return str(url.hostname), port, url.scheme


def proxied_kubeconfig(kubeconfig: dict[str, Any], proxy_port: int) -> dict[str, Any]:
    """A copy of ``kubeconfig`` whose cluster is reached through ``127.0.0.1:proxy_port``."""
    proxied = copy.deepcopy(kubeconfig)
    cluster = proxied["clusters"][0]["cluster"]
    url = urlsplit(cluster["server"])
    cluster.setdefault("tls-server-name", url.hostname)
    cluster["server"] = urlunsplit((url.scheme, f"127.0.0.1:{proxy_port}", url.path, "", ""))
    return proxied


class ServiceProxy(TCPProxy):
    """A Service's virtual IP as kube-proxy plays it: each new connection goes to one of several
    endpoints, in turn, and to the next one when an endpoint refuses (its pod is gone)."""

    def __init__(self, endpoints: list[tuple[str, int]]) -> None:
        super().__init__(*endpoints[0])
        self.endpoints = list(endpoints)
        self.served_by: list[tuple[str, int]] = []
        """The endpoint of every connection forwarded, in order."""
        self._next = 0

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for attempt in range(len(self.endpoints)):
            endpoint = self.endpoints[(self._next + attempt) % len(self.endpoints)]
            try:
                probe_reader, probe_writer = await asyncio.open_connection(*endpoint)
            except OSError:
                continue
            self._next = (self._next + attempt + 1) % len(self.endpoints)
            self.served_by.append(endpoint)
            await self._forward(reader, writer, probe_reader, probe_writer)
            return
        writer.transport.abort()  # no endpoint left: the connection is refused
