"""Waiting for the first of several :class:`asyncio.Event` s, as a runnable waits for "stop, or
failure" and a reader for "synced, or stopped".

>>> import asyncio
>>> async def main() -> str:
...     stopped, failed = asyncio.Event(), asyncio.Event()
...     asyncio.get_running_loop().call_later(0.01, failed.set)
...     await wait_for_any(stopped, failed)
...     return "failed" if failed.is_set() else "stopped"
>>> asyncio.run(main())
'failed'
"""

from __future__ import annotations

import asyncio

__all__ = ["wait_for_any"]


async def wait_for_any(*events: asyncio.Event, within: float | None = None) -> None:
    """Return once one of ``events`` is set, or after ``within`` seconds (None: no limit).

    The waits on the events are cancelled and finished before it returns, so none is left behind.
    """
    waiters = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, timeout=within, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
