"""Which asyncio event loop an operator process runs on: uvloop when it is installed, else asyncio's.

uvloop (the ``uvloop`` extra: ``pip install 'controlplane-operator[uvloop]'``) is a drop-in event
loop on libuv. The runtime's per-event work is the same on either loop, but every wake-up of the
process (a watch event arriving alone, a timer) costs less on uvloop (``docs/performance.md``
has the figures). kopf's CLI makes the same choice. ``cpo run`` uses :func:`run`; your own
``main`` can too (an operator's ``main`` would build a manager and ``return await manager.run()``,
and the program end with ``raise SystemExit(run(main()))``):

>>> from runtime.eventloop import loop_name, run
>>> async def main() -> str:
...     return loop_name()
>>> run(main()) in ("uvloop", "asyncio")  # uvloop when importable
True
>>> run(main(), loop="asyncio")  # forces the standard loop; loop="uvloop" requires uvloop
'asyncio'

Nothing in the runtime depends on the loop: timers are scheduled relative to the loop's own clock
(uvloop's ``loop.time()`` has another origin than ``time.monotonic``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Final, Literal, TypeVar

__all__ = ["LOOP_KINDS", "LoopKind", "loop_factory", "loop_name", "run"]

T = TypeVar("T")
LoopKind = Literal["auto", "uvloop", "asyncio"]
LOOP_KINDS: Final[tuple[LoopKind, ...]] = ("auto", "uvloop", "asyncio")
"""Accepted values of ``loop``: ``auto`` (uvloop when importable), ``uvloop``, ``asyncio``."""


def loop_factory(loop: LoopKind = "auto") -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event-loop factory for ``loop``, or None for asyncio's default loop.

    Raises :class:`ValueError` for an unknown kind, and :class:`RuntimeError` for ``"uvloop"``
    when uvloop is not installed (``"auto"`` then quietly uses asyncio's loop).
    """
    if loop not in LOOP_KINDS:
        raise ValueError(f"event loop {loop!r}: use one of {', '.join(LOOP_KINDS)}")
    if loop == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if loop == "uvloop":
            raise RuntimeError(
                "event loop 'uvloop' asked for but uvloop is not installed: "
                "pip install 'controlplane-operator[uvloop]', or use 'auto' or 'asyncio'"
            ) from None
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run(main: Coroutine[Any, Any, T], *, loop: LoopKind = "auto") -> T:
    """``asyncio.run(main)`` on the loop :func:`loop_factory` picks for ``loop``."""
    try:
        factory = loop_factory(loop)
    except Exception:
        main.close()  # never awaited: say nothing about it
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


def loop_name(loop: asyncio.AbstractEventLoop | None = None) -> str:
    """``"uvloop"`` or ``"asyncio"``: what ``loop`` (default: the running loop) is."""
    current = asyncio.get_running_loop() if loop is None else loop
    return "uvloop" if type(current).__module__.startswith("uvloop") else "asyncio"
