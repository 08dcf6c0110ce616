"""How a client talks to the server: its options and their defaults."""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ClientOptions:
    """How the client talks to the server. ``None`` means "use the default"; see :meth:`with_defaults`.

    qps:           client-side requests per second. Defaults to None: no client-side limit, as
                   controller-runtime's ``GetConfig`` (QPS=-1), relying on API Priority and Fairness.
    burst:         requests allowed at once above ``qps``. Defaults to 10 (client-go's default).
    retries:       extra attempts after a 429/503 answer. Defaults to 10 (client-go's maxRetries).
    max_retry_wait: cap on one wait between attempts, seconds. Defaults to 30.
    timeout:       seconds for one non-watch request, connect to last byte. Defaults to 60.
    user_agent:    ``User-Agent`` header. Defaults to ``<program> (<os>/<arch>) cpo-runtime``.
    field_manager: ``fieldManager`` sent with writes. Defaults to None: the server derives one
                   from the user agent, except for server-side apply, which requires one.
    """

    qps: float | None = None
    burst: int | None = None
    retries: int | None = None
    max_retry_wait: float | None = None
    timeout: float | None = None
    user_agent: str | None = None
    field_manager: str | None = None

    def with_defaults(self) -> ResolvedClientOptions:
        """The options with every default filled in: the one place defaults are decided."""
        program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
        return ResolvedClientOptions(
            qps=self.qps if self.qps is not None and self.qps > 0 else None,
            burst=self.burst if self.burst is not None else 10,
            retries=self.retries if self.retries is not None else 10,
            max_retry_wait=self.max_retry_wait if self.max_retry_wait is not None else 30.0,
            timeout=self.timeout if self.timeout is not None else 60.0,
            user_agent=self.user_agent or f"{program} ({sys.platform}/{platform.machine()}) cpo-runtime",
            field_manager=self.field_manager,
        )


@dataclass(frozen=True)
class ResolvedClientOptions:
    """:class:`ClientOptions` after defaulting; ``qps`` None means unlimited."""

    qps: float | None
    burst: int
    retries: int
    max_retry_wait: float
    timeout: float
    user_agent: str
    field_manager: str | None
