"""The controller: sources feed a workqueue, workers take requests out and call your reconciler.

A :class:`Controller` is a :class:`~runtime.runnable.Runnable` that runs only while this process
is the leader (unless told otherwise). Usually the :class:`~runtime.builder.ControllerBuilder` makes
one; by hand it looks like this:

>>> import asyncio
>>> from runtime.controller import Controller, ControllerOptions
>>> from runtime.event import GenericEvent
>>> from runtime.handler import EnqueueRequestForObject
>>> from runtime.reconcile import Request, Result, reconciler_func
>>> from runtime.source import Channel
>>> async def main() -> None:
...     done = asyncio.Event()
...
...     async def reconcile(request: Request) -> Result:
...         print("reconciling", request)
...         done.set()
...         return Result()
...
...     events: asyncio.Queue[GenericEvent] = asyncio.Queue()
...     controller = Controller(
...         "demo", reconciler_func(reconcile), ControllerOptions(max_concurrent_reconciles=2)
...     )
...     controller.watch(Channel(events, EnqueueRequestForObject()))
...     stop = asyncio.Event()
...     running = asyncio.create_task(controller.start(stop))
...     events.put_nowait(GenericEvent.for_request(Request("a", "default")))
...     await done.wait()
...     stop.set()
...     await running
>>> asyncio.run(main())
reconciling default/a

What happens to a request
-------------------------
A worker takes a request from the queue (the queue never hands one key to two workers at once,
however many workers there are), calls ``reconcile`` with the log keys ``controller``,
``object``, ``namespace``, ``name`` and a fresh ``reconcileID`` set for every line written
meanwhile (see :mod:`runtime.log`), and then, as controller-runtime does:

===============================  ============================================  =================
outcome                          what the queue does                           ``result`` label
===============================  ============================================  =================
``Result()``                     ``forget`` (backoff reset)                    ``success``
``Result(requeue_after=s)``      ``forget``, then ``add_after(s)``             ``requeue_after``
``Result(requeue=True)``         ``add_rate_limited`` (the backoff grows)      ``requeue``
an exception                     ``add_rate_limited``; error log + traceback   ``error``
a ``TerminalError``              nothing (not requeued); error log             ``error``
===============================  ============================================  =================

The worker survives every exception (Go's panic recovery is always on). A reconcile that
returns something other than a :class:`~runtime.reconcile.Result` (a forgotten ``return``) is an
error that names the fix. An exception counts as terminal when it is a ``TerminalError`` or was
raised ``from`` one (the ``__cause__`` chain plays the part of Go's error wrapping).

Metrics (controller-runtime's names, see :mod:`runtime.metrics`): ``reconcile_total`` by result as
above; ``reconcile_errors_total`` for every error, terminal included;
``terminal_reconcile_errors_total``; ``reconcile_timeouts_total`` when ``reconcile_timeout``
cut a reconcile short (an error like any other); ``reconcile_time_seconds``; ``active_workers``;
``max_concurrent_reconciles``; and the ``workqueue_*`` families of the controller's queue, named
after the controller. ``reconcile_panics_total`` is exported and stays 0: Go separates returned
errors from panics, Python has only exceptions, and all of them count as errors.

Stopping
--------
When ``stop`` is set the controller stops taking requests (queued ones are dropped: the next
start lists everything again), lets the reconciles in flight finish, stops its sources and
returns. It waits as long as those reconciles take; the manager bounds that with its graceful
shutdown period by cancelling :meth:`Controller.start`, which cancels the reconciles.

Modules
-------
* :mod:`runtime.controller.controller` — :class:`Controller`: starting the sources, the workers
  and what they do with each request's outcome.
* :mod:`runtime.controller.options` — :class:`ControllerOptions` and their defaults.
* :mod:`runtime.controller.logkeys` — the log keys of one reconcile, its reconcile ID among them.
"""

from .controller import Controller
from .options import (
    DEFAULT_CACHE_SYNC_TIMEOUT,
    DEFAULT_MAX_CONCURRENT_RECONCILES,
    ControllerOptions,
    ResolvedControllerOptions,
)

__all__ = [
    "DEFAULT_CACHE_SYNC_TIMEOUT",
    "DEFAULT_MAX_CONCURRENT_RECONCILES",
    "Controller",
    "ControllerOptions",
    "ResolvedControllerOptions",
]
