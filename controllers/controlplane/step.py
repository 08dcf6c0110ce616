"""The one decision the scale and rollout rules make per reconcile: the next :class:`Step`.

Its own module because both :mod:`~controllers.controlplane.scale` (which decides it) and
:mod:`~controllers.controlplane.rollout` (which decides it once the count is right) build it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Step:
    """What to do next: create a Machine (in ``domain``), delete ``machine``, wait, or nothing."""

    action: Literal["create", "delete", "wait", "none"]
    reason: str
    """CamelCase, for conditions and events."""
    message: str
    domain: str | None = None
    machine: str | None = None
    needs_preflight: bool = True
    """A create or delete starts only after :func:`~controllers.controlplane.scale.preflight` passes."""


UP_TO_DATE = Step("none", "UpToDate", "All Machines are up to date", needs_preflight=False)
"""Nothing to do: the count is right and every Machine is up to date and well spread."""


def in_domain(domain: str | None, prefix: str = " in failure domain ") -> str:
    """The message suffix naming a failure domain, or nothing without one."""
    return f"{prefix}{domain}" if domain else ""
