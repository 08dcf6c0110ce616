"""Waiting for a condition in async tests without relying on timing luck."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

DEADLINE = 5.0
"""Generous bound on a wait that should finish almost at once; reached only when a test fails."""


async def eventually(condition: Callable[[], bool], message: str = "", deadline: float = DEADLINE) -> None:
    """Return once ``condition()`` is true; fail the test if it is still false after ``deadline`` s."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while not condition():
        if loop.time() > end:
            raise AssertionError(f"condition not met within {deadline} s: {message or condition}")
        await asyncio.sleep(0.001)  # allow-sleep: poll interval inside a deadline loop


async def let_other_tasks_run(turns: int = 20) -> None:
    """Give the event loop a few turns so that ready tasks run; this waits for no time to pass."""
    for _ in range(turns):
        await asyncio.sleep(0)
