"""The manager: one process's client, cache, runnables, probes, metrics and leader election.

An operator builds one :class:`Manager`, adds its controllers (and webhook server) to it, and
runs it. The manager starts everything in controller-runtime's order and stops it in reverse:

1. **HTTP servers**: ``/metrics`` (Prometheus text of :mod:`runtime.metrics`) and the probe
   server (``/healthz``, ``/readyz``, see :mod:`runtime.healthz`). They come first so kubelet
   probes and scrapes work during start-up.
2. **Webhook-like runnables** (objects with a ``started_checker`` method): before the caches,
   because a conversion webhook served by this process may be needed for the caches to sync.
3. **Caches** (objects with ``wait_for_cache_sync``: the manager's own :attr:`Manager.cache`,
   and any other you add): started, then waited for. ``/readyz`` fails its ``caches-synced``
   check until then.
4. **Other runnables that do not need the lease** (``need_leader_election()`` false).
5. **Leader election** (when enabled), then the **leader runnables** (controllers: anything that
   does not say it may run without the lease) only while this process leads. :attr:`Manager.elected`
   is set when they start.

Stopping (the ``stop`` event, usually from SIGTERM): the leader runnables are told to stop and get
up to ``graceful_shutdown_timeout`` to finish their in-flight work; whatever is still running then
is cancelled. The Lease is released as soon as the leader runnables are done (a successor takes
over at its next retry), then the other groups stop, in reverse start order, within the same
deadline. A **lost lease** skips all of that: leader runnables are cancelled at once, everything
else after them, and :meth:`Manager.start` raises :class:`LeaderElectionLost` ("leader election
lost"): the process must exit, as with controller-runtime.

Example: an operator's ``main`` ends with ``return await manager.run()``, which handles SIGTERM
and SIGINT and returns the exit status (0 after a clean stop); here a runnable that needs the
lease stops the manager itself once it runs:

>>> import asyncio
>>> from runtime.manager import Manager, ManagerOptions
>>> class Leader:
...     def __init__(self, stop: asyncio.Event) -> None:
...         self.stop_manager = stop
...
...     async def start(self, stop: asyncio.Event) -> None:
...         print("leading")
...         self.stop_manager.set()
...         await stop.wait()
>>> async def main() -> None:
...     options = ManagerOptions(
...         kubeconfig=kubeconfig,
...         leader_election=True,
...         leader_election_id="manager-example",
...         leader_election_namespace="default",
...         metrics_bind_address="0",
...         health_probe_bind_address="0",
...     )
...     manager = await Manager.create(options)
...     stop = asyncio.Event()
...     manager.add(Leader(stop))
...     await manager.start(stop)
...     print("stopped, Lease released")
>>> asyncio.run(main())
leading
stopped, Lease released
"""

from ..leaderelection import LeaderElectionLost
from .manager import GracefulShutdownTimeout, Manager
from .options import (
    CACHES_SYNCED_CHECK,
    DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT,
    DEFAULT_HEALTH_PROBE_BIND_ADDRESS,
    DEFAULT_METRICS_BIND_ADDRESS,
    IN_CLUSTER_NAMESPACE_FILE,
    ManagerOptions,
    ResolvedManagerOptions,
    parse_bind_address,
)
from .runnables import CacheLike

__all__ = [
    "CACHES_SYNCED_CHECK",
    "DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT",
    "DEFAULT_HEALTH_PROBE_BIND_ADDRESS",
    "DEFAULT_METRICS_BIND_ADDRESS",
    "IN_CLUSTER_NAMESPACE_FILE",
    "CacheLike",
    "GracefulShutdownTimeout",
    "LeaderElectionLost",
    "Manager",
    "ManagerOptions",
    "ResolvedManagerOptions",
    "parse_bind_address",
]
