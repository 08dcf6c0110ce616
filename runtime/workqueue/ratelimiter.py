"""Rate limiters: how long a failing key waits before the work queue hands it out again."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Final, Protocol

from .clock import Clock, MonotonicClock

DEFAULT_BASE_DELAY: Final = 0.005
DEFAULT_MAX_DELAY: Final = 1000.0
DEFAULT_QPS: Final = 10.0
DEFAULT_BURST: Final = 100


class RateLimiter(Protocol):
    """Decides how long a key waits before it is retried."""

    def when(self, item: Hashable) -> float:
        """Seconds ``item`` should wait now; counts as one more retry of it."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item``: its next :meth:`when` starts from scratch."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many retries of ``item`` are being tracked."""
        ...


class ItemExponentialFailureRateLimiter:
    """Per-key exponential backoff: ``base_delay * 2**failures``, capped at ``max_delay``.

    With the defaults a key waits 5 ms, 10 ms, 20 ms, … and from the 19th retry on 1000 s, until
    :meth:`forget` resets it.
    """

    def __init__(self, base_delay: float = DEFAULT_BASE_DELAY, max_delay: float = DEFAULT_MAX_DELAY) -> None:
        if base_delay < 0 or max_delay < 0:
            raise ValueError(f"delays must not be negative (base {base_delay}, max {max_delay})")
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        try:
            delay = self._base_delay * 2.0**failures
        except OverflowError:  # Python raises where Go's float arithmetic saturates
            return self._max_delay
        return min(delay, self._max_delay)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """One token bucket for all keys: ``burst`` retries at once, then ``qps`` per second.

    The bucket starts full. Each :meth:`when` takes a token; when none is left the caller is told
    to wait until one will have accrued, and the bucket goes into debt (tokens below zero), so
    successive callers are spaced ``1/qps`` apart, as golang.org/x/time/rate reservations are.
    Keys are not tracked: :meth:`forget` does nothing and :meth:`num_requeues` is 0.
    """

    def __init__(
        self, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST, clock: Clock | None = None
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"qps must be positive and burst at least 1 (qps {qps}, burst {burst})")
        self._qps = qps
        self._burst = float(burst)
        self._clock: Clock = MonotonicClock() if clock is None else clock
        self._tokens = float(burst)
        self._last = self._clock.now()

    def when(self, item: Hashable) -> float:
        now = self._clock.now()
        elapsed = now - self._last
        if elapsed > 0:
            self._tokens = min(self._burst, self._tokens + elapsed * self._qps)
            self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The strictest of several limiters: every one is consulted, the longest delay wins."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters = limiters

    def when(self, item: Hashable) -> float:
        # Every limiter must see the retry (it counts failures / takes a token), so no short cut.
        return max(limiter.when(item) for limiter in self._limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)


def default_controller_rate_limiter(clock: Clock | None = None) -> RateLimiter:
    """client-go's ``DefaultControllerRateLimiter``: per-key 5 ms → 1000 s, overall 10 qps / 100 burst.

    controller-runtime ≥ v0.23 dropped the bucket and uses the per-key backoff alone; we keep the
    classic pair so that a storm of failing keys cannot retry faster than 10/s overall.
    """
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(DEFAULT_BASE_DELAY, DEFAULT_MAX_DELAY),
        BucketRateLimiter(DEFAULT_QPS, DEFAULT_BURST, clock),
    )
