"""The timings and identity of a :class:`~runtime.leaderelection.LeaderElector`, their defaults,
and the checks that keep them safe (a leader stops before anyone else may take over)."""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass
from typing import Final

DEFAULT_LEASE_DURATION: Final = 15.0
DEFAULT_RENEW_DEADLINE: Final = 10.0
DEFAULT_RETRY_PERIOD: Final = 2.0
JITTER_FACTOR: Final = 1.2
"""Acquire retries wait ``retry_period * (1 + random() * JITTER_FACTOR)``, as client-go."""


def default_identity() -> str:
    """``<hostname>_<uuid4>``: unique per process, and still says which pod holds the Lease."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class LeaderElectionOptions:
    """Timings and identity of a :class:`LeaderElector`; resolve with :meth:`with_defaults`."""

    lease_duration: float | None = None
    """Seconds a candidate waits, after last seeing the record change, before taking the Lease
    from its holder (written to the Lease rounded up to whole seconds). Defaults to 15."""
    renew_deadline: float | None = None
    """Seconds the leader keeps trying to renew before it gives up leading. Defaults to 10."""
    retry_period: float | None = None
    """Seconds between attempts to acquire (jittered by ×(1..2.2)) or renew. Defaults to 2."""
    identity: str | None = None
    """This candidate's ``holderIdentity``. Defaults to ``<hostname>_<uuid4>``."""
    request_timeout: float | None = None
    """Timeout of one Lease API call, seconds; must be below ``renew_deadline``. Defaults to half
    the renew deadline."""
    release_on_cancel: bool | None = None
    """Release the Lease when stopped cleanly, so a successor need not wait out the lease.
    Defaults to True."""
    watch_lease: bool | None = None
    """Watch the Lease while campaigning, to take it over the moment it is released and to time
    its expiry from the moment each renew happened rather than from the next poll. Defaults to
    True; False polls only, exactly like client-go."""

    def with_defaults(self) -> ResolvedLeaderElectionOptions:
        """Every default filled in and the timings checked; raises ``ValueError`` on bad values."""
        lease = DEFAULT_LEASE_DURATION if self.lease_duration is None else float(self.lease_duration)
        renew = DEFAULT_RENEW_DEADLINE if self.renew_deadline is None else float(self.renew_deadline)
        retry = DEFAULT_RETRY_PERIOD if self.retry_period is None else float(self.retry_period)
        for field_name, value in (
            ("lease_duration", lease),
            ("renew_deadline", renew),
            ("retry_period", retry),
        ):
            if not value > 0:
                raise ValueError(f"leader election: {field_name} must be > 0 seconds, got {value}")
        if not lease > renew:
            raise ValueError(
                f"leader election: lease_duration ({lease}s) must be greater than renew_deadline "
                f"({renew}s), or a new leader could start before the old one has stopped"
            )
        if not renew > JITTER_FACTOR * retry:
            raise ValueError(
                f"leader election: renew_deadline ({renew}s) must be greater than {JITTER_FACTOR} × "
                f"retry_period ({retry}s = {JITTER_FACTOR * retry:g}s), so a leader gets more than one "
                "renew attempt before its deadline"
            )
        timeout = renew / 2 if self.request_timeout is None else float(self.request_timeout)
        if not 0 < timeout < renew:
            raise ValueError(
                f"leader election: request_timeout ({timeout}s) must be > 0 and below renew_deadline "
                f"({renew}s), or one hung call could keep a leader past its deadline"
            )
        identity = self.identity or default_identity()
        return ResolvedLeaderElectionOptions(
            lease_duration=lease,
            renew_deadline=renew,
            retry_period=retry,
            identity=identity,
            request_timeout=timeout,
            release_on_cancel=True if self.release_on_cancel is None else self.release_on_cancel,
            watch_lease=True if self.watch_lease is None else self.watch_lease,
        )


@dataclass(frozen=True)
class ResolvedLeaderElectionOptions:
    """:class:`LeaderElectionOptions` with every default applied and validated."""

    lease_duration: float
    renew_deadline: float
    retry_period: float
    identity: str
    request_timeout: float
    release_on_cancel: bool
    watch_lease: bool
