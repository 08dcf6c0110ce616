"""How to build a work queue: its options and their defaults."""

from __future__ import annotations

from dataclasses import dataclass

from .clock import Clock, MonotonicClock
from .ratelimiter import RateLimiter, default_controller_rate_limiter


@dataclass(frozen=True, slots=True)
class WorkQueueOptions:
    """How to build a :class:`WorkQueue`. ``None`` means "use the default" named per field."""

    name: str | None = None
    """Queue name, the ``name`` label of its metrics. Defaults to none: an unnamed queue has no metrics."""

    controller: str | None = None
    """The ``controller`` label of its metrics. Defaults to ``name``, as controller-runtime does."""

    rate_limiter: RateLimiter | None = None
    """Delays for :meth:`WorkQueue.add_rate_limited`. Defaults to
    :func:`default_controller_rate_limiter` on the queue's clock."""

    clock: Clock | None = None
    """Time source and timers. Defaults to :class:`MonotonicClock`."""

    metrics: bool | None = None
    """Export ``workqueue_*`` metrics. Defaults to true when ``name`` is set; needs a name."""

    def with_defaults(self) -> ResolvedWorkQueueOptions:
        """Fill in every unset field; the one place where the defaults above are applied."""
        clock: Clock = MonotonicClock() if self.clock is None else self.clock
        metrics = self.name is not None if self.metrics is None else self.metrics
        if metrics and self.name is None:
            raise ValueError("a workqueue needs a name to export metrics")
        rate_limiter = (
            default_controller_rate_limiter(clock) if self.rate_limiter is None else self.rate_limiter
        )
        return ResolvedWorkQueueOptions(
            name=self.name,
            controller=self.name if self.controller is None else self.controller,
            rate_limiter=rate_limiter,
            clock=clock,
            metrics=metrics,
        )


@dataclass(frozen=True, slots=True)
class ResolvedWorkQueueOptions:
    """:class:`WorkQueueOptions` with every default applied."""

    name: str | None
    controller: str | None
    rate_limiter: RateLimiter
    clock: Clock
    metrics: bool
