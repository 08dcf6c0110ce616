"""A runtime Manager with some controllers, run in the test's own process for the length of a block.

:func:`running_manager` is the one way the integration tests start controllers in-process: the
controller-specific helpers (``running_provider``, ``running_quorum_controller``,
``running_controlplane`` ...) only choose the setup functions and their options.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from controllers.cache_scope import operator_cache_options
from runtime.cache import CacheOptions
from runtime.client import Client
from runtime.manager import Manager, ManagerOptions
from tests.support.poll import eventually

Setup = Callable[[Manager], object]
"""Adds a controller (or any runnable) to a manager, e.g. ``lambda m: setup_with_manager(m, options)``."""

STARTED_WITHIN = 20.0
"""Deadline for a manager to start and win its (in-process, uncontested) election on a busy machine."""

GRACEFUL_SHUTDOWN = 10.0
"""How long the manager lets its runnables finish when the block ends."""


@contextlib.asynccontextmanager
async def running_manager(
    client: Client, namespace: str, *setups: Setup, operator_scope: bool = True
) -> AsyncIterator[Manager]:
    """A manager with each of ``setups`` applied, running against ``client``'s API server until the
    block ends, then stopped and awaited (a failure of the manager is raised here).

    The cache watches ``namespace`` only. With ``operator_scope`` it sees Machines and Nodes as
    ``cpo run`` does (control-plane ones only); without it, every object of the namespace (what the
    machine provider needs). The block starts once the manager leads, so its controllers run.
    """
    cache_options = CacheOptions(
        namespace=namespace, by_object=operator_cache_options().by_object if operator_scope else None
    )
    manager = Manager(
        ManagerOptions(
            client=client,
            metrics_bind_address="0",
            health_probe_bind_address="0",
            cache_options=cache_options,
            graceful_shutdown_timeout=GRACEFUL_SHUTDOWN,
        )
    )
    for setup in setups:
        setup(manager)
    stop = asyncio.Event()
    task = asyncio.create_task(manager.start(stop))
    try:
        await eventually(
            lambda: manager.elected.is_set() or task.done(), timeout=STARTED_WITHIN, message="manager started"
        )
        if task.done():
            await task  # raises what stopped it
        yield manager
    finally:
        stop.set()
        await task
