"""How a :class:`~runtime.controller.Controller` runs: :class:`ControllerOptions` and their defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from runtime.workqueue import Clock, RateLimiter

DEFAULT_MAX_CONCURRENT_RECONCILES: Final = 1
DEFAULT_CACHE_SYNC_TIMEOUT: Final = 120.0
"""Seconds a controller waits for its sources to sync before failing (controller-runtime's 2 min)."""


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    """How a :class:`Controller` runs. ``None`` means "use the default" named per field."""

    max_concurrent_reconciles: int | None = None
    """Workers reconciling at once (never two on one object). Defaults to 1."""

    rate_limiter: RateLimiter | None = None
    """Backoff for requeues and errors. Defaults to the workqueue's default,
    :func:`runtime.workqueue.default_controller_rate_limiter` (5 ms → 1000 s per object, 10 qps /
    100 burst overall)."""

    reconcile_timeout: float | None = None
    """Seconds after which a reconcile is cancelled and counted as an error (and a timeout).
    Defaults to None: no limit."""

    cache_sync_timeout: float | None = None
    """Seconds :meth:`Controller.start` waits for its sources to sync before it fails.
    Defaults to 120."""

    need_leader_election: bool | None = None
    """Run only while this process holds the leader lease. Defaults to True."""

    skip_name_validation: bool | None = None
    """Allow a name that another live controller already has (their metrics then mix).
    Defaults to False."""

    log_values: Mapping[str, Any] | None = None
    """Keys added to every line the controller writes (the builder adds ``controllerGroup`` and
    ``controllerKind``). Defaults to none."""

    clock: Clock | None = None
    """Time source of the controller's workqueue (delays and backoff). Defaults to
    :class:`runtime.workqueue.MonotonicClock`; tests pass a :class:`~runtime.workqueue.FakeClock`."""

    def with_defaults(self) -> ResolvedControllerOptions:
        """Fill in every unset field and check the values; the one place the defaults live."""
        workers = (
            DEFAULT_MAX_CONCURRENT_RECONCILES
            if self.max_concurrent_reconciles is None
            else self.max_concurrent_reconciles
        )
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"max_concurrent_reconciles must be an integer ≥ 1, got {workers!r}")
        if self.reconcile_timeout is not None and not self.reconcile_timeout > 0:
            raise ValueError(
                "reconcile_timeout must be a positive number of seconds or None, "
                f"got {self.reconcile_timeout!r}"
            )
        sync_timeout = (
            DEFAULT_CACHE_SYNC_TIMEOUT if self.cache_sync_timeout is None else self.cache_sync_timeout
        )
        if not sync_timeout > 0:
            raise ValueError(f"cache_sync_timeout must be a positive number of seconds, got {sync_timeout!r}")
        return ResolvedControllerOptions(
            max_concurrent_reconciles=workers,
            rate_limiter=self.rate_limiter,
            reconcile_timeout=self.reconcile_timeout,
            cache_sync_timeout=float(sync_timeout),
            need_leader_election=True if self.need_leader_election is None else self.need_leader_election,
            skip_name_validation=bool(self.skip_name_validation),
            log_values=dict(self.log_values or {}),
            clock=self.clock,
        )


@dataclass(frozen=True, slots=True)
class ResolvedControllerOptions:
    """:class:`ControllerOptions` with every default applied. ``rate_limiter`` and ``clock`` stay
    None when unset: the workqueue resolves them (its rate limiter must use its clock)."""

    max_concurrent_reconciles: int
    rate_limiter: RateLimiter | None
    reconcile_timeout: float | None
    cache_sync_timeout: float
    need_leader_election: bool
    skip_name_validation: bool
    log_values: Mapping[str, Any]
    clock: Clock | None
