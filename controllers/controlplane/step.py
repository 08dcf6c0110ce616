"""The one decision the scale and rollout rules make per reconcile: the next :class:`Step`.

Its own module because both :mod:`~controllers.controlplane.scale` (which decides it) and
:mod:`~controllers.controlplane.rollout` (which decides it once the count is right) build it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from api.controlplane_reasons import REASON_UP_TO_DATE


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
    """A create or delete starts only after :func:`~controllers.controlplane.preflight.preflight` passes."""
    toward_replicas: bool = False
    """A create made while fewer than ``spec.replicas`` Machines are not being deleted (a scale-up,
    a deleted Machine's replacement): it takes nothing away, unlike a rollout's or rebalance's
    create, whose next step deletes a Machine."""
    remove_member_first: bool = False
    """A ``maxSurge: 0`` delete: the Machine is marked with
    :data:`~api.controlplane.REMOVE_MEMBER_FIRST_ANNOTATION` before it is deleted, so that its
    etcd member may go before its replacement votes (the host it frees takes the replacement)."""


UP_TO_DATE = Step("none", REASON_UP_TO_DATE, "All Machines are up to date", needs_preflight=False)
"""Nothing to do: the count is right and every Machine is up to date and well spread."""


def in_domain(domain: str | None, prefix: str = " in failure domain ") -> str:
    """The message suffix naming a failure domain, or nothing without one."""
    return f"{prefix}{domain}" if domain else ""


def replacing(kind: str, name: str, domain: str | None, placed: str | None, action: str) -> str:
    """The message of a replacement step, naming the Machine, its failure domain and the action,
    e.g. "Replacing outdated Machine demo-abc in zone-b: creating its replacement" (with
    " in zone-c" added when the replacement goes to another domain than ``domain``)."""
    elsewhere = in_domain(placed, " in ") if placed != domain and action.startswith("creating") else ""
    return f"Replacing {kind} Machine {name}{in_domain(domain, ' in ')}: {action}{elsewhere}"
