"""The elector: campaign for the Lease, renew it while leading, release it on a clean stop.

The rules it keeps, and why they are safe, are in :mod:`runtime.leaderelection`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

from .. import metrics
from ..client import Client
from ..errors import APIError, Conflict, NotFound
from ..jsoncodec import JSON
from ..waiting import wait_for_any
from .options import JITTER_FACTOR, LeaderElectionOptions

LEASE_API_VERSION: Final = "coordination.k8s.io/v1"

# Named for the package: the elector's lines keep the logger they always had.
_log = logging.getLogger("runtime.leaderelection")


class LeaderElectionLost(Exception):
    """This process was the leader and could not renew the Lease before its renew deadline."""


def _micro_time(now: float | None = None) -> str:
    """A Kubernetes MicroTime (RFC 3339, microseconds, UTC)."""
    moment = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _record(lease: JSON) -> tuple[Any, ...]:
    """The part of a Lease whose change proves its holder is alive (client-go compares the record)."""
    spec = lease.get("spec") or {}
    return (
        spec.get("holderIdentity") or "",
        spec.get("leaseDurationSeconds"),
        spec.get("acquireTime"),
        spec.get("renewTime"),
        spec.get("leaseTransitions"),
    )


Callback = Callable[[], None]


class LeaderElector:
    """Campaigns for, holds and releases one Lease. See :mod:`runtime.leaderelection`.

    Callbacks run synchronously in the event loop and must not block: ``on_started_leading`` when
    the Lease is acquired, ``on_stopped_leading`` when leadership ends (lost or released),
    ``on_new_leader(identity)`` whenever another holder is observed.
    """

    def __init__(
        self,
        client: Client,
        name: str,
        namespace: str,
        options: LeaderElectionOptions | None = None,
        *,
        on_started_leading: Callback | None = None,
        on_stopped_leading: Callback | None = None,
        on_new_leader: Callable[[str], None] | None = None,
    ) -> None:
        if not name or not namespace:
            raise ValueError(
                "leader election: the Lease needs a name and a namespace (leader_election_id/namespace)"
            )
        self.client = client
        self.name = name
        self.namespace = namespace
        self.options = (options or LeaderElectionOptions()).with_defaults()
        self.identity = self.options.identity
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._leading = False
        self._observed: tuple[Any, ...] | None = None
        self._observed_time = 0.0
        self._observed_lease: JSON | None = None
        self._reported_leader: str | None = None
        self._wake = asyncio.Event()
        self.leading_changed = asyncio.Event()
        """Set whenever :attr:`is_leader` flips (cleared by whoever waits on it)."""
        metrics.set_leader_status(name, False)

    @property
    def is_leader(self) -> bool:
        """Whether this process holds the Lease right now (by its own deadline accounting)."""
        return self._leading

    @property
    def observed_leader(self) -> str:
        """The ``holderIdentity`` last read from the Lease (``""`` when free or never read)."""
        return "" if self._observed is None else str(self._observed[0])

    async def run(self, stop: asyncio.Event) -> None:
        """Campaign until ``stop`` is set, lead while holding the Lease, release it on stop.

        Returns after a clean stop; raises :class:`LeaderElectionLost` when leadership was lost.
        """
        try:
            if not await self._acquire(stop):
                return
            await self._renew(stop)
            if stop.is_set():
                # Stopped first: leading ends here, then the Lease is handed back.
                self._set_leading(False)
                if self.options.release_on_cancel:
                    await self.release()
                return
            raise LeaderElectionLost(f"leader election lost: Lease {self.namespace}/{self.name}")
        finally:
            self._set_leading(False)

    # ------------------------------------------------------------------------------ phases

    async def _acquire(self, stop: asyncio.Event) -> bool:
        """Try until acquired (True) or ``stop`` is set (False).

        Attempts come every jittered retry period, as in client-go, and additionally at the very
        moment the observed holder's lease runs out and, with ``watch_lease``, as soon as the
        Lease is seen released: a successor takes over about ``lease_duration`` after the
        leader's last renew, or right after a release, rather than up to a jittered period later.
        """
        _log.info("attempting to acquire leader lease %s/%s", self.namespace, self.name)
        opts = self.options
        self._wake = asyncio.Event()
        watcher = (
            asyncio.get_running_loop().create_task(self._watch_lease(stop), name=f"lease-watch:{self.name}")
            if opts.watch_lease
            else None
        )
        try:
            next_try = time.monotonic()
            last_try = float("-inf")
            while not stop.is_set():
                now = time.monotonic()
                expiry = self._expiry()
                woken_free = self._wake.is_set() and self.observed_leader in ("", self.identity)
                self._wake.clear()
                if now >= next_try or woken_free or last_try < expiry <= now:
                    last_try = now
                    if await self._try_acquire_or_renew():
                        self._set_leading(True)
                        _log.info(
                            "successfully acquired lease %s/%s as %s",
                            self.namespace,
                            self.name,
                            self.identity,
                        )
                        return True
                    next_try = time.monotonic() + opts.retry_period * (1.0 + random.random() * JITTER_FACTOR)
                    continue
                wake_at = min(next_try, expiry) if expiry > last_try else next_try
                if await _wait_either(stop, self._wake, wake_at - now):
                    return False
            return False
        finally:
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher

    def _expiry(self) -> float:
        """Monotonic time the observed holder's lease runs out (−inf when free or ours)."""
        if self._observed is None or self.observed_leader in ("", self.identity):
            return float("-inf")
        duration = self._observed[1]
        seconds = float(duration) if duration else self.options.lease_duration
        return self._observed_time + seconds

    async def _watch_lease(self, stop: asyncio.Event) -> None:
        """Observe every change of the Lease while campaigning, and wake the campaign loop."""
        while not stop.is_set():
            try:
                async for event in self.client.watch(
                    LEASE_API_VERSION,
                    "Lease",
                    self.namespace,
                    field_selector=f"metadata.name={self.name}",
                    timeout_seconds=300,
                    allow_watch_bookmarks=False,
                ):
                    kind, obj = event.get("type"), event.get("object") or {}
                    if kind in ("ADDED", "MODIFIED"):
                        self._observe(obj)
                        self._wake.set()
                    elif kind == "DELETED":
                        self._wake.set()
                    elif kind == "ERROR":
                        break
            except asyncio.CancelledError:
                raise
            except Exception as err:  # the poll keeps campaigning; the watch only speeds it up
                _log.debug("lease watch %s/%s: %r", self.namespace, self.name, err)
            if await _wait(stop, self.options.retry_period):
                return

    async def _renew(self, stop: asyncio.Event) -> None:
        """Renew every retry period until ``stop`` is set or a renew deadline passes."""
        opts = self.options
        while not stop.is_set():
            # The deadline runs from the *send* time of the last renew that succeeded.
            deadline = self._last_renew_sent + opts.renew_deadline
            renewed = False
            while not stop.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    async with asyncio.timeout(remaining):
                        renewed = await self._try_acquire_or_renew()
                except TimeoutError:
                    break
                if renewed:
                    break
                if self._observed is not None and self._observed[0] not in ("", self.identity):
                    # Someone else holds it now: leading on would mean two leaders.
                    _log.error("lease %s/%s taken by %s", self.namespace, self.name, self._observed[0])
                    break
                if await _wait(stop, min(opts.retry_period, max(0.0, deadline - time.monotonic()))):
                    return
            if stop.is_set():
                return
            if not renewed:
                _log.error("failed to renew lease %s/%s before its deadline", self.namespace, self.name)
                self._set_leading(False)
                return
            if await _wait(stop, opts.retry_period):
                return

    async def release(self) -> bool:
        """Give the Lease up if this process holds it: clear the holder, shorten the lease to 1 s."""
        lease = self._observed_lease
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            return False
        now = _micro_time()
        spec = dict(lease.get("spec") or {})
        spec.update(
            holderIdentity="",
            leaseDurationSeconds=1,
            acquireTime=now,
            renewTime=now,
        )
        body = {**lease, "spec": spec}
        try:
            async with asyncio.timeout(self.options.request_timeout):
                self._observe(await self.client.update(body))
        except (APIError, TimeoutError, OSError) as err:
            _log.error("failed to release lease %s/%s: %s", self.namespace, self.name, err)
            return False
        _log.info("released lease %s/%s", self.namespace, self.name)
        return True

    # ------------------------------------------------------------------------------ one attempt

    async def _try_acquire_or_renew(self) -> bool:
        """One read-modify-write of the Lease; True when this process holds it afterwards."""
        opts = self.options
        sent = time.monotonic()
        now = _micro_time()
        mine = {
            "holderIdentity": self.identity,
            # Rounded up: other candidates time us by this whole number, which must stay > renew_deadline.
            "leaseDurationSeconds": max(1, math.ceil(opts.lease_duration)),
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        }
        try:
            async with asyncio.timeout(opts.request_timeout):
                try:
                    lease = await self.client.get(LEASE_API_VERSION, "Lease", self.name, self.namespace)
                except NotFound:
                    created = await self.client.create(
                        {
                            "apiVersion": LEASE_API_VERSION,
                            "kind": "Lease",
                            "metadata": {"name": self.name, "namespace": self.namespace},
                            "spec": mine,
                        }
                    )
                    self._observe(created)
                    self._last_renew_sent = sent
                    return True
            self._observe(lease)
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity") or ""
            if holder and holder != self.identity:
                duration = float(spec.get("leaseDurationSeconds") or opts.lease_duration)
                if self._observed_time + duration > time.monotonic():
                    return False  # held by a live leader
            if holder == self.identity:
                mine["acquireTime"] = spec.get("acquireTime") or now
                mine["leaseTransitions"] = spec.get("leaseTransitions") or 0
            else:
                mine["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
            updated_body = {**lease, "spec": {**spec, **mine}}
            async with asyncio.timeout(max(0.001, opts.request_timeout - (time.monotonic() - sent))):
                updated = await self.client.update(updated_body)
        except Conflict:
            return False  # someone else wrote first; the next attempt reads the new record
        except (APIError, TimeoutError, OSError) as err:
            _log.warning("lease %s/%s: %s", self.namespace, self.name, err or type(err).__name__)
            return False
        except Exception as err:  # aiohttp errors and the like: retried, never fatal
            _log.warning("lease %s/%s: %r", self.namespace, self.name, err)
            return False
        self._observe(updated)
        self._last_renew_sent = sent
        return True

    _last_renew_sent = 0.0

    def _observe(self, lease: JSON) -> None:
        record = _record(lease)
        self._observed_lease = lease
        if record != self._observed:
            self._observed = record
            self._observed_time = time.monotonic()
            holder = str(record[0])
            if holder and holder != self._reported_leader:
                self._reported_leader = holder
                if holder != self.identity:
                    _log.info("new leader of %s/%s: %s", self.namespace, self.name, holder)
                if self._on_new_leader is not None:
                    self._on_new_leader(holder)

    def _set_leading(self, leading: bool) -> None:
        if leading == self._leading:
            return
        self._leading = leading
        metrics.set_leader_status(self.name, leading)
        self.leading_changed.set()
        callback = self._on_started if leading else self._on_stopped
        if callback is not None:
            callback()


async def _wait_either(stop: asyncio.Event, wake: asyncio.Event, seconds: float) -> bool:
    """Wait ``seconds``, or until ``stop`` or ``wake`` is set; True when stopped."""
    if stop.is_set():
        return True
    if wake.is_set() or seconds <= 0:
        return False
    await wait_for_any(stop, wake, within=seconds)
    return stop.is_set()


async def _wait(stop: asyncio.Event, seconds: float) -> bool:
    """Wait ``seconds`` or until ``stop`` is set; True when stopped."""
    if stop.is_set():
        return True
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await stop.wait()
    return stop.is_set()
