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

Example::

    async def main() -> int:
        manager = await Manager.create(ManagerOptions(
            leader_election=True, leader_election_id="my-operator",
            leader_election_namespace="kube-system"))
        manager.add(my_controller)
        return await manager.run()           # SIGTERM/SIGINT handled; 0 after a clean stop

    sys.exit(asyncio.run(main()))
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from aiohttp import web

from . import metrics
from .cache import Cache, CacheOptions
from .client import Client
from .events import EventRecorder, EventSink
from .healthz import Checker, HealthHandler
from .leaderelection import LeaderElectionLost, LeaderElectionOptions, LeaderElector
from .runnable import Runnable, needs_leader_election
from .signals import remove_signal_handler, setup_signal_handler

__all__ = [
    "CacheLike",
    "GracefulShutdownTimeout",
    "LeaderElectionLost",
    "Manager",
    "ManagerOptions",
    "ResolvedManagerOptions",
]

DEFAULT_METRICS_BIND_ADDRESS: Final = ":8080"
DEFAULT_HEALTH_PROBE_BIND_ADDRESS: Final = ":8081"
DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: Final = 30.0
CACHES_SYNCED_CHECK: Final = "caches-synced"
IN_CLUSTER_NAMESPACE_FILE: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


@runtime_checkable
class CacheLike(Protocol):
    """What puts a runnable in the manager's cache group: a runnable that can be waited on until
    synced (:class:`~runtime.cache.Cache`, or any other informer-like source of your own)."""

    async def start(self, stop: asyncio.Event) -> None: ...

    async def wait_for_cache_sync(self) -> None: ...


class GracefulShutdownTimeout(Exception):
    """Some runnables were still running when the graceful shutdown timeout ran out."""


def parse_bind_address(address: str, option: str) -> tuple[str | None, int] | None:
    """``"host:port"``/``":port"``/``"[v6]:port"`` → (host or None for all interfaces, port);
    ``"0"`` → None (disabled). Raises ``ValueError`` naming ``option`` on anything else."""
    if address == "0":
        return None
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(
            f"{option} {address!r}: use 'host:port' or ':port' (port 0-65535; port 0 picks a free "
            "one), or '0' to disable the server"
        )
    host = host.removeprefix("[").removesuffix("]")
    return (host or None), int(port_text)


@dataclass(frozen=True)
class ManagerOptions:
    """How to build a :class:`Manager`; every default is applied in :meth:`with_defaults`."""

    client: Client | None = None
    """An existing client to use (the manager does not close it). Defaults to one built from
    ``kubeconfig``."""
    kubeconfig: str | os.PathLike[str] | Mapping[str, Any] | None = None
    """Kubeconfig path or document when no ``client`` is given. Defaults to ``$KUBECONFIG``, else
    the pod's service account (in-cluster)."""
    kubeconfig_context: str | None = None
    """Context of ``kubeconfig`` to use. Defaults to its current context."""
    metrics_bind_address: str | None = None
    """Where ``/metrics`` is served. Defaults to ``":8080"``; ``"0"`` disables it."""
    health_probe_bind_address: str | None = None
    """Where ``/healthz`` and ``/readyz`` are served. Defaults to ``":8081"``; ``"0"`` disables it."""
    leader_election: bool | None = None
    """Run leader runnables only while holding the Lease. Defaults to False."""
    leader_election_id: str | None = None
    """Name of the Lease. Defaults to none; required with ``leader_election``."""
    leader_election_namespace: str | None = None
    """Namespace of the Lease. Defaults to the pod's namespace when in a cluster; required otherwise."""
    lease_duration: float | None = None
    """See :class:`~runtime.leaderelection.LeaderElectionOptions`. Defaults to 15 s."""
    renew_deadline: float | None = None
    """See :class:`~runtime.leaderelection.LeaderElectionOptions`. Defaults to 10 s."""
    retry_period: float | None = None
    """See :class:`~runtime.leaderelection.LeaderElectionOptions`. Defaults to 2 s."""
    leader_election_identity: str | None = None
    """This candidate's holder identity. Defaults to ``<hostname>_<uuid4>``."""
    leader_election_watch_lease: bool | None = None
    """Watch the Lease while campaigning (faster, exact hand-over); False polls like client-go.
    Defaults to True."""
    leader_election_release_on_cancel: bool | None = None
    """Release the Lease on a clean stop. Defaults to True (the manager exits right after)."""
    graceful_shutdown_timeout: float | None = None
    """Seconds runnables get to wind down after stop before they are cancelled. Defaults to 30."""
    cache: Cache | None = None
    """An existing cache to use as :attr:`Manager.cache`. Defaults to a :class:`~runtime.cache.Cache`
    built on first use from ``client`` and ``cache_options``."""
    cache_options: CacheOptions | None = None
    """Options of the default cache (namespace, selectors, transform...). Defaults to
    ``CacheOptions()``: every namespace, managedFields stripped."""
    logger: logging.Logger | None = None
    """Where the manager logs. Defaults to ``logging.getLogger("runtime.manager")``."""

    def with_defaults(self) -> ResolvedManagerOptions:
        """Every default filled in and checked; raises ``ValueError`` saying what to change."""
        metrics_address = (
            DEFAULT_METRICS_BIND_ADDRESS if self.metrics_bind_address is None else self.metrics_bind_address
        )
        probe_address = (
            DEFAULT_HEALTH_PROBE_BIND_ADDRESS
            if self.health_probe_bind_address is None
            else self.health_probe_bind_address
        )
        metrics_bind = parse_bind_address(metrics_address, "metrics_bind_address")
        probe_bind = parse_bind_address(probe_address, "health_probe_bind_address")
        grace = (
            DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT
            if self.graceful_shutdown_timeout is None
            else float(self.graceful_shutdown_timeout)
        )
        if grace < 0:
            raise ValueError(f"graceful_shutdown_timeout must be ≥ 0 seconds, got {grace}")
        leader_election = bool(self.leader_election)
        le_options: LeaderElectionOptions | None = None
        namespace = self.leader_election_namespace
        if leader_election:
            if not self.leader_election_id:
                raise ValueError("leader_election needs leader_election_id, the name of the Lease")
            if not namespace:
                namespace = _in_cluster_namespace()
            if not namespace:
                raise ValueError(
                    "leader_election needs leader_election_namespace when not running in a cluster "
                    f"({IN_CLUSTER_NAMESPACE_FILE} not found)"
                )
            le_options = LeaderElectionOptions(
                lease_duration=self.lease_duration,
                renew_deadline=self.renew_deadline,
                retry_period=self.retry_period,
                identity=self.leader_election_identity,
                release_on_stop=self.leader_election_release_on_cancel,
                watch_lease=self.leader_election_watch_lease,
            )
            le_options.with_defaults()  # validate now, not at start
        kubeconfig = self.kubeconfig
        if self.client is None and kubeconfig is None and os.environ.get("KUBECONFIG"):
            kubeconfig = os.environ["KUBECONFIG"].split(os.pathsep)[0]
        return ResolvedManagerOptions(
            client=self.client,
            kubeconfig=kubeconfig,
            kubeconfig_context=self.kubeconfig_context,
            metrics_bind=metrics_bind,
            health_probe_bind=probe_bind,
            leader_election=leader_election,
            leader_election_id=self.leader_election_id or "",
            leader_election_namespace=namespace or "",
            leader_election_options=le_options,
            graceful_shutdown_timeout=grace,
            cache=self.cache,
            cache_options=self.cache_options,
            logger=self.logger or logging.getLogger("runtime.manager"),
        )


@dataclass(frozen=True)
class ResolvedManagerOptions:
    """:class:`ManagerOptions` with every default applied."""

    client: Client | None
    kubeconfig: str | os.PathLike[str] | Mapping[str, Any] | None
    kubeconfig_context: str | None
    metrics_bind: tuple[str | None, int] | None
    health_probe_bind: tuple[str | None, int] | None
    leader_election: bool
    leader_election_id: str
    leader_election_namespace: str
    leader_election_options: LeaderElectionOptions | None
    graceful_shutdown_timeout: float
    cache: Cache | None
    cache_options: CacheOptions | None
    logger: logging.Logger


def _in_cluster_namespace() -> str | None:
    try:
        return IN_CLUSTER_NAMESPACE_FILE.read_text().strip() or None
    except OSError:
        return None


class _HTTPServer:
    """An aiohttp application on one address; ``port`` is the bound port once started."""

    def __init__(self, name: str, app: web.Application, bind: tuple[str | None, int]) -> None:
        self.name = name
        self.app = app
        self.bind = bind
        self.port: int | None = None
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.bind[0], self.bind[1], reuse_address=True)
        try:
            await site.start()
        except OSError as err:
            await runner.cleanup()
            raise OSError(
                err.errno, f"{self.name} server cannot listen on {self.bind}: {err.strerror}"
            ) from err
        self._runner = runner
        addresses = runner.addresses
        self.port = int(addresses[0][1]) if addresses else self.bind[1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


class _Group:
    """Runnables started and stopped together, each in its own task under one stop event."""

    def __init__(self, name: str, on_exit: Callable[[_Group, asyncio.Task[None]], None]) -> None:
        self.name = name
        self.runnables: list[Runnable] = []
        self.stop = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []
        self.started = False
        self._on_exit = on_exit

    def add(self, runnable: Runnable) -> None:
        self.runnables.append(runnable)
        if self.started and not self.stop.is_set():
            self._launch(runnable)

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        for runnable in self.runnables:
            self._launch(runnable)

    def _launch(self, runnable: Runnable) -> None:
        task = asyncio.get_running_loop().create_task(
            runnable.start(self.stop), name=f"{self.name}:{type(runnable).__name__}"
        )
        self.tasks.append(task)
        task.add_done_callback(lambda t: self._on_exit(self, t))

    def cancel(self) -> None:
        self.stop.set()
        for task in self.tasks:
            task.cancel()

    async def stop_within(self, deadline: float) -> bool:
        """Set stop, wait until ``deadline`` (monotonic), cancel stragglers; True if none straggled."""
        self.stop.set()
        pending = [task for task in self.tasks if not task.done()]
        clean = True
        if pending:
            _, still = await asyncio.wait(pending, timeout=max(0.0, deadline - time.monotonic()))
            if still:
                clean = False
                for task in still:
                    task.cancel()
                await asyncio.wait(still)
        return clean


class Manager:
    """Runs runnables with shared client, cache, probes, metrics and leader election.

    Build it with ``await Manager.create(options)`` (which makes the client from a kubeconfig or
    the service account), or ``Manager(ManagerOptions(client=client))`` with a client you own.
    """

    def __init__(self, options: ManagerOptions | None = None) -> None:
        self.options = (options or ManagerOptions()).with_defaults()
        if self.options.client is None:
            raise ValueError(
                "Manager(options) needs options.client; use `await Manager.create(options)` to build "
                "the client from a kubeconfig or the in-cluster service account"
            )
        self.client: Client = self.options.client
        self._owns_client = False
        self.log = self.options.logger
        self._cache: Cache | None = self.options.cache
        self._cache_added = False
        self.elected = asyncio.Event()
        """Set once leader runnables have been started (at once when leader election is off)."""
        self.leader_elector: LeaderElector | None = None
        self.metrics_port: int | None = None
        """The port ``/metrics`` listens on, once started (None when disabled)."""
        self.health_probe_port: int | None = None
        """The port ``/healthz`` and ``/readyz`` listen on, once started (None when disabled)."""
        self._healthz = HealthHandler("healthz")
        self._readyz = HealthHandler("readyz")
        self._caches_synced = False
        self._readyz.add_check(CACHES_SYNCED_CHECK, self._check_caches_synced)
        self._failed = asyncio.Event()
        self._errors: list[BaseException] = []
        self._lost = False
        self._stopping = False
        self._releasing = False
        self._started = False
        self._event_sink: EventSink | None = None
        self._groups: dict[str, _Group] = {
            name: _Group(name, self._runnable_exited)
            for name in ("webhooks", "caches", "others", "leader-election")
        }
        self._servers: list[_HTTPServer] = []
        self._elector_stop = asyncio.Event()
        self._elector_task: asyncio.Task[None] | None = None

    @classmethod
    async def create(cls, options: ManagerOptions | None = None) -> Manager:
        """A manager whose client is built from ``options`` (kubeconfig, ``$KUBECONFIG`` or in-cluster)."""
        options = options or ManagerOptions()
        resolved = options.with_defaults()
        if resolved.client is not None:
            return cls(options)
        if resolved.kubeconfig is not None:
            client = await Client.from_kubeconfig(resolved.kubeconfig, context=resolved.kubeconfig_context)
        else:
            client = await Client.in_cluster()
        manager = cls(dataclasses.replace(options, client=client))
        manager._owns_client = True
        return manager

    # ------------------------------------------------------------------------------ wiring

    @property
    def cache(self) -> Cache:
        """The shared informer cache controllers read from, created on first use and run by this
        manager (started and synced before any leader runnable)."""
        if self._cache is None:
            self._cache = Cache(self.client, self.options.cache_options)
        if not self._cache_added:
            self._cache_added = True
            self.add(self._cache)
        return self._cache

    def add(self, runnable: Runnable | CacheLike) -> None:
        """Run ``runnable`` with the manager (started at once if the manager already runs its group).

        Grouped as controller-runtime does: caches (``wait_for_cache_sync``), webhook servers
        (``started_checker``), runnables that do not need the lease, and leader runnables. A
        webhook server's ``started_checker()`` becomes the readyz check ``webhook``, so the
        process is ready only once caches are synced *and* the webhook serves.
        """
        if not callable(getattr(runnable, "start", None)):
            raise TypeError(f"{runnable!r} is not a Runnable: it needs `async def start(self, stop)`")
        if self._stopping:
            raise RuntimeError("cannot add a runnable to a manager that is stopping")
        if runnable is self._cache:
            self._cache_added = True
        group = self._group_of(runnable)
        if group == "webhooks":
            checker = runnable.started_checker()  # type: ignore[union-attr]
            if callable(checker):
                name = (
                    "webhook"
                    if "webhook" not in self._readyz.checks
                    else f"webhook-{len(self._readyz.checks)}"
                )
                self._readyz.add_check(name, checker)
        self._groups[group].add(runnable)

    @staticmethod
    def _group_of(runnable: object) -> str:
        if callable(getattr(runnable, "wait_for_cache_sync", None)):
            return "caches"
        if callable(getattr(runnable, "started_checker", None)):
            return "webhooks"
        if not needs_leader_election(runnable):
            return "others"
        return "leader-election"

    def add_healthz_check(self, name: str, check: Checker) -> None:
        """Add a liveness check: ``async (request) -> None``, raising means unhealthy."""
        self._healthz.add_check(name, check)

    def add_readyz_check(self, name: str, check: Checker) -> None:
        """Add a readiness check: ``async (request) -> None``, raising means not ready."""
        self._readyz.add_check(name, check)

    def get_event_recorder(self, name: str) -> EventRecorder:
        """An event recorder whose Events name ``name`` as their source component."""
        if self._event_sink is None:
            self._event_sink = EventSink(self.client)
        return self._event_sink.recorder(name)

    async def _check_caches_synced(self, request: web.Request) -> None:
        if not self._caches_synced:
            raise RuntimeError("caches not synced yet")

    # ------------------------------------------------------------------------------ running

    async def run(self) -> int:
        """Start with SIGTERM/SIGINT handling; the process exit code (0 after a clean stop)."""
        stop = setup_signal_handler()
        try:
            await self.start(stop)
        except LeaderElectionLost as err:
            self.log.error("%s", err)
            return 1
        except Exception:
            self.log.exception("manager failed")
            return 1
        finally:
            remove_signal_handler()
        return 0

    async def start(self, stop: asyncio.Event) -> None:
        """Run everything until ``stop`` is set, then stop gracefully (see the module docstring).

        Raises :class:`LeaderElectionLost` when the Lease was lost, the first runnable error when
        a runnable failed, :class:`GracefulShutdownTimeout` when the grace period ran out.
        """
        if self._started:
            raise RuntimeError("a Manager can be started only once")
        self._started = True
        groups = self._groups
        try:
            await self._start_servers()
            groups["webhooks"].start()
            groups["caches"].start()
            if not await self._until(self._wait_for_caches(), stop):
                return
            groups["others"].start()
            if self.options.leader_election:
                assert self.options.leader_election_options is not None
                self.leader_elector = LeaderElector(
                    self.client,
                    self.options.leader_election_id,
                    self.options.leader_election_namespace,
                    self.options.leader_election_options,
                    on_started_leading=self._start_leading,
                    on_stopped_leading=self._stopped_leading,
                )
                self._elector_task = asyncio.get_running_loop().create_task(
                    self.leader_elector.run(self._elector_stop), name="leader-election"
                )
                self._elector_task.add_done_callback(self._elector_exited)
            else:
                self._start_leading()
            await self._until(asyncio.get_running_loop().create_future(), stop)  # parked until stop/failure
        finally:
            await self._shutdown()

    async def _until(self, work: Awaitable[Any], stop: asyncio.Event) -> bool:
        """Await ``work`` unless ``stop`` or a failure comes first; True when ``work`` finished."""
        work_task = asyncio.ensure_future(work)
        stop_task = asyncio.ensure_future(stop.wait())
        failed_task = asyncio.ensure_future(self._failed.wait())
        try:
            await asyncio.wait({work_task, stop_task, failed_task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (work_task, stop_task, failed_task):
                if not task.done():
                    task.cancel()
            await asyncio.gather(work_task, stop_task, failed_task, return_exceptions=True)
        if work_task.done() and not work_task.cancelled() and work_task.exception() is not None:
            self._fail(work_task.exception())
            return False
        return work_task.done() and not work_task.cancelled() and not self._failed.is_set()

    async def _wait_for_caches(self) -> None:
        for runnable in self._groups["caches"].runnables:
            waiter = getattr(runnable, "wait_for_cache_sync", None)
            if waiter is not None:
                await waiter()
        self._caches_synced = True
        self.log.info("caches synced")

    async def _start_servers(self) -> None:
        opts = self.options
        if opts.metrics_bind is not None:
            app = web.Application()
            app.router.add_get("/metrics", _serve_metrics)
            server = _HTTPServer("metrics", app, opts.metrics_bind)
            await server.start()
            self._servers.append(server)
            self.metrics_port = server.port
            self.log.info("serving metrics on port %s", server.port)
        if opts.health_probe_bind is not None:
            app = web.Application()
            self._healthz.add_routes(app)
            self._readyz.add_routes(app)
            server = _HTTPServer("health probe", app, opts.health_probe_bind)
            await server.start()
            self._servers.append(server)
            self.health_probe_port = server.port
            self.log.info("serving health probes on port %s", server.port)

    def _start_leading(self) -> None:
        if self._stopping:
            return
        self.log.info("starting leader runnables")
        self._groups["leader-election"].start()
        self.elected.set()

    def _stopped_leading(self) -> None:
        if self._releasing:
            return  # our own release during a clean stop, after the leader runnables ended
        # Lost: the leader runnables must stop *now*, before anyone else may lead.
        self._lost = True
        self._groups["leader-election"].cancel()
        self.log.error("leader election lost: stopping leader runnables at once")
        self._failed.set()

    def _elector_exited(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        err = task.exception()
        if isinstance(err, LeaderElectionLost):
            self._lost = True
            self._groups["leader-election"].cancel()
            self._failed.set()
        elif err is not None:
            self._fail(err)

    def _runnable_exited(self, group: _Group, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        err = task.exception()
        if err is not None:
            self.log.error("runnable %s failed: %r", task.get_name(), err, exc_info=err)
            self._fail(err)

    def _fail(self, err: BaseException | None) -> None:
        if err is not None:
            self._errors.append(err)
        self._failed.set()

    async def _shutdown(self) -> None:
        self._stopping = True
        groups = self._groups
        clean = True
        if self._lost:
            # No grace after a lost lease: another process may already be leading.
            for group in groups.values():
                group.cancel()
            deadline = time.monotonic()
        else:
            deadline = time.monotonic() + self.options.graceful_shutdown_timeout
        clean &= await groups["leader-election"].stop_within(deadline)
        elector_task = self._elector_task
        if elector_task is not None:
            # Leader runnables are done: releasing the Lease now is safe and speeds the handover.
            self._releasing = not self._lost
            self._elector_stop.set()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(elector_task), timeout=self._release_budget())
            if not elector_task.done():
                elector_task.cancel()
                with contextlib.suppress(BaseException):
                    await elector_task
        for name in ("others", "caches", "webhooks"):
            clean &= await groups[name].stop_within(deadline)
        if self._event_sink is not None:
            await self._event_sink.close(drain_timeout=max(0.0, min(5.0, deadline - time.monotonic())))
        for server in reversed(self._servers):
            await server.stop()
        if self._owns_client:
            await self.client.close()
        self.log.info("manager stopped")
        if self._lost:
            raise LeaderElectionLost("leader election lost")
        if self._errors:
            raise self._errors[0]
        if not clean:
            raise GracefulShutdownTimeout(
                f"runnables did not stop within graceful_shutdown_timeout "
                f"({self.options.graceful_shutdown_timeout:g}s) and were cancelled"
            )

    def _release_budget(self) -> float:
        options = self.leader_elector.options if self.leader_elector is not None else None
        # One in-flight renew plus the release call, each bounded by the request timeout.
        return 2 * options.request_timeout + 0.5 if options is not None else 1.0


async def _serve_metrics(request: web.Request) -> web.Response:
    body = metrics.generate_latest()
    return web.Response(body=body, headers={"Content-Type": metrics.CONTENT_TYPE_LATEST})


if TYPE_CHECKING:
    from . import builder

    def _is_a_builder_manager(manager: Manager) -> builder.Manager:
        # mypy proves here that a Manager is everything the builder asks of one.
        return manager
