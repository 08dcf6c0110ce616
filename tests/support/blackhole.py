"""A TCP proxy a test can cut: after :meth:`BlackholeProxy.blackhole`, bytes stop flowing both ways.

Used to make one client lose the API server (a partitioned leader) while everything else keeps
talking to it. Blackholing (accepting but never forwarding) rather than closing makes calls hang,
which is the harder failure: the caller's own timeouts must notice it.
"""

from __future__ import annotations

import asyncio
import contextlib


class BlackholeProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._blackholed = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def blackhole(self) -> None:
        """Stop forwarding on every connection, open or future (they stay open, silent)."""
        self._blackholed.set()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for writer in list(self._writers):
            writer.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        if self._blackholed.is_set():
            return  # accepted, never answered
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers.add(up_writer)
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.get_running_loop().create_task(self._pump(src, dst))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while True:
                read = asyncio.ensure_future(src.read(65536))
                cut = asyncio.ensure_future(self._blackholed.wait())
                await asyncio.wait({read, cut}, return_when=asyncio.FIRST_COMPLETED)
                if self._blackholed.is_set():
                    read.cancel()
                    cut.cancel()
                    await asyncio.gather(read, cut, return_exceptions=True)
                    return  # keep the sockets open, forward nothing more
                cut.cancel()
                data = read.result()
                if not data:
                    dst.close()
                    return
                dst.write(data)
                await dst.drain()
