"""A continuous etcd writer: unique keys, every acknowledged write recorded, then read back.

It is how the demo (and the chaos campaign) shows that no acknowledged write was lost while the
control plane changed under it. Each write puts a fresh key ``<prefix><n>`` with a value naming
it; a write counts as *acknowledged* only when etcd answered with a revision. A write that got no
answer is *unknown* (it may or may not have been applied) and is never counted as lost. At the end
:meth:`EtcdWriter.verify` reads every key back with one linearizable range read and reports the
acknowledged writes whose key is missing or holds another value.

The endpoints come from a callable, so the writer follows the members as Machines come and go.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from controllers.etcd.client import EtcdClient, EtcdClientOptions, EtcdError, Unavailable

WRITE_TIMEOUT = 2.0
"""Seconds one write may take before it is counted as unknown and the next one starts."""
WRITE_INTERVAL = 0.02
"""Pause between two writes: about 50 writes a second, a steady load that shows every stall."""


@dataclass
class WriterStats:
    """What the writer saw, for the report."""

    acknowledged: dict[str, int] = field(default_factory=dict)
    """Key → revision etcd acknowledged the write at."""
    unknown: int = 0
    """Writes that got no answer (neither acknowledged nor known to be lost)."""
    refused: int = 0
    """Writes etcd refused with an error (not applied)."""
    acknowledged_at: list[float] = field(default_factory=list)
    """Monotonic time of each acknowledgement (the write rate over time)."""


@dataclass(frozen=True)
class Verification:
    """The read-back of every acknowledged write."""

    acknowledged: int
    lost: list[str]
    """Acknowledged keys missing or holding another value."""


class EtcdWriter:
    """Writes unique keys in a loop until stopped; see the module docstring."""

    def __init__(
        self,
        endpoints: Callable[[], Sequence[str]],
        *,
        prefix: str = "/cpo-demo/w/",
        client_options: Callable[[], EtcdClientOptions] = EtcdClientOptions,
    ) -> None:
        """``client_options`` gives how to connect (TLS), asked before each write; its timeout is
        replaced by the writer's own."""
        self._endpoints = endpoints
        self._client_options = client_options
        self.prefix = prefix
        self.stats = WriterStats()
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    def value_of(self, key: str) -> str:
        """The value written under ``key`` (it names the key, so a misplaced value shows)."""
        return f"value-of-{key}"

    async def __aenter__(self) -> EtcdWriter:
        self._task = asyncio.create_task(self._run(), name="etcd-writer")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def stop(self) -> None:
        """Stop writing and wait for the write in flight."""
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None

    async def _run(self) -> None:
        sequence = 0
        while not self._stop.is_set():
            options = replace(self._client_options(), timeout=WRITE_TIMEOUT)
            endpoints = list(self._endpoints())
            if not endpoints:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), 0.2)
                continue
            key = f"{self.prefix}{sequence:08d}"
            sequence += 1
            async with EtcdClient(endpoints, options) as etcd:
                try:
                    revision = await etcd.put(key, self.value_of(key))
                except EtcdError as err:
                    if isinstance(err, Unavailable):  # maybe applied: never counted as lost
                        self.stats.unknown += 1
                    else:
                        self.stats.refused += 1
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stop.wait(), 0.1)
                    continue
            self.stats.acknowledged[key] = revision
            self.stats.acknowledged_at.append(time.monotonic())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), WRITE_INTERVAL)

    async def verify(self, endpoints: Sequence[str]) -> Verification:
        """Read every key back (linearizable) and list the acknowledged writes that are not there."""
        async with EtcdClient(list(endpoints), replace(self._client_options(), timeout=10)) as etcd:
            stored = await etcd.get_prefix(self.prefix)
        lost = [
            key
            for key in self.stats.acknowledged
            if key not in stored or stored[key][0] != self.value_of(key)
        ]
        return Verification(acknowledged=len(self.stats.acknowledged), lost=lost)
