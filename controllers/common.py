"""What every controller reads the same way: times, and when a resync comes due (conditions are
:mod:`controllers.conditions`', owner references :mod:`api.ownership`'s).

One rule each, so the controllers cannot disagree about the same object:

=====================================  =========================================================
:func:`parse_time`                     a ``metav1.Time`` string as an aware datetime, or None
:func:`now`                            the wall clock as the API stores it (UTC, whole seconds)
:func:`format_time`                    a datetime as RFC 3339 (``2026-01-02T03:04:05Z``)
:func:`jittered`                       a resync period spread so objects do not come due together
=====================================  =========================================================
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from api.meta import format_time

__all__ = [
    "RESYNC_JITTER",
    "format_time",
    "jittered",
    "now",
    "parse_time",
]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# ---------------------------------------------------------------------------------------------- times


def parse_time(value: Any) -> datetime | None:
    """A ``metav1.Time`` string (RFC 3339, ``2026-01-02T03:04:05Z``) as an aware datetime.

    None when the value is missing, not a string, not RFC 3339, or has no UTC offset: a
    timestamp the operator cannot read counts as absent, and every caller says what absent
    means for its rule (a Machine without a creation time is as new as now; no last
    remediation time means no retry window). Never raises, so one malformed field on one
    object cannot stop a controller from reconciling everything else.
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def now() -> datetime:
    """The wall clock as an aware UTC datetime, truncated to whole seconds.

    Whole seconds because that is what ``metav1.Time`` stores: a time written with
    :func:`format_time` and read back with :func:`parse_time` compares equal to this value.
    """
    return datetime.now(UTC).replace(microsecond=0)


# ---------------------------------------------------------------------------------------------- resync


RESYNC_JITTER = 0.1
"""The fraction by which :func:`jittered` may lengthen a resync period."""


def jittered(period: float, fraction: float = RESYNC_JITTER) -> float:
    """``period`` lengthened by a random 0 to ``fraction`` of itself (client-go's ``wait.Jitter``).

    Objects created together would otherwise come due for their resync together for ever: with
    many ControlPlanes under one operator their polls of etcd queue up at the same moment and
    each waits for the others. Spread, they arrive one by one; a resync is a safety net, so its
    exact moment does not matter.
    """
    return period * (1.0 + random.uniform(0.0, fraction))
