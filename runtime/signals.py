"""SIGTERM/SIGINT handling: the first signal asks for a graceful stop, the second exits at once.

Kubernetes sends SIGTERM when it deletes a pod and SIGKILL after the pod's grace period. The
first SIGTERM (or Ctrl-C) sets a stop event the manager is waiting on, so it stops taking work,
finishes what is in flight and releases its Lease. A second signal means the operator (or a
human) does not want to wait: the process exits with status 1 right away.

Example (an operator's ``main`` passes ``stop`` to ``manager.start(stop)``; ``Manager.run`` does
all of this itself; here SIGUSR1 stands in for the default SIGTERM and SIGINT):

>>> import asyncio, os, signal
>>> from runtime.signals import remove_signal_handler, setup_signal_handler
>>> async def main() -> str:
...     stop = setup_signal_handler(signals=[signal.SIGUSR1])
...     try:
...         os.kill(os.getpid(), signal.SIGUSR1)
...         await asyncio.wait_for(stop.wait(), timeout=5)
...         return "stopping gracefully"
...     finally:
...         remove_signal_handler(signals=[signal.SIGUSR1])
>>> asyncio.run(main())
'stopping gracefully'
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Iterable

SHUTDOWN_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT)

_log = logging.getLogger(__name__)


def setup_signal_handler(
    stop: asyncio.Event | None = None, signals: Iterable[signal.Signals] = SHUTDOWN_SIGNALS
) -> asyncio.Event:
    """Set (and return) ``stop`` on the first of ``signals``; exit with status 1 on the second.

    Call it from inside the running event loop, in the main thread. Returns the event to pass to
    :meth:`runtime.manager.Manager.start`.
    """
    loop = asyncio.get_running_loop()
    event = stop if stop is not None else asyncio.Event()
    received: list[int] = []

    def handle(signum: int) -> None:
        received.append(signum)
        if len(received) == 1:
            _log.info(
                "received %s: stopping gracefully (send it again to exit at once)",
                signal.Signals(signum).name,
            )
            event.set()
            return
        _log.warning("received %s again: exiting now", signal.Signals(signum).name)
        # os._exit, not sys.exit: this must not wait for the tasks the first signal is winding down.
        os._exit(1)

    for signum in signals:
        loop.add_signal_handler(signum, handle, int(signum))
    return event


def remove_signal_handler(signals: Iterable[signal.Signals] = SHUTDOWN_SIGNALS) -> None:
    """Undo :func:`setup_signal_handler` (default dispositions come back)."""
    loop = asyncio.get_running_loop()
    for signum in signals:
        loop.remove_signal_handler(signum)
