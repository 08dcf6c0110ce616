"""The manager: runs runnables with one client, cache, probes, metrics and leader election."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..cache import Cache
from ..client import Client
from ..events import EventRecorder, EventSink
from ..healthz import Checker, HealthHandler
from ..leaderelection import LeaderElectionLost, LeaderElector
from ..runnable import Runnable
from ..signals import remove_signal_handler, setup_signal_handler
from .options import CACHES_SYNCED_CHECK, ManagerOptions
from .runnables import GROUPS, CacheLike, _Group, group_for
from .servers import _HTTPServer, metrics_app, probes_app


class GracefulShutdownTimeout(Exception):
    """Some runnables were still running when the graceful shutdown timeout ran out."""


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
        self._groups: dict[str, _Group] = {name: _Group(name, self._runnable_exited) for name in GROUPS}
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
        group = group_for(runnable)
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
        """Run everything until ``stop`` is set, then stop gracefully (see :mod:`runtime.manager`).

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
            self.metrics_port = await self._serve("metrics", "metrics", metrics_app(), opts.metrics_bind)
        if opts.health_probe_bind is not None:
            app = probes_app(self._healthz, self._readyz)
            self.health_probe_port = await self._serve(
                "health probe", "health probes", app, opts.health_probe_bind
            )

    async def _serve(
        self, name: str, what: str, app: web.Application, bind: tuple[str | None, int]
    ) -> int | None:
        """Start one HTTP server (stopped at shutdown); the port it listens on."""
        server = _HTTPServer(name, app, bind)
        await server.start()
        self._servers.append(server)
        self.log.info("serving %s on port %s", what, server.port)
        return server.port

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


if TYPE_CHECKING:
    from .. import builder

    def _is_a_builder_manager(manager: Manager) -> builder.Manager:
        # mypy proves here that a Manager is everything the builder asks of one.
        return manager
