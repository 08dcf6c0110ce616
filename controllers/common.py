"""What every controller reads and writes the same way: times and conditions (owner references are
:mod:`api.ownership`'s).

One rule each, so the controllers cannot disagree about the same object:

=====================================  =========================================================
:func:`parse_time`                     a ``metav1.Time`` string as an aware datetime, or None
:func:`now`                            the wall clock as the API stores it (UTC, whole seconds)
:func:`format_time`                    a datetime as RFC 3339 (``2026-01-02T03:04:05Z``)
:func:`conditions_of`                  an object's ``status.conditions``
:func:`find_condition`                 the condition of one type in a list
:func:`condition_status`               an object's condition status (``"True"``, …) or None
:func:`set_condition`                  one condition set in a list, its transition time kept
:func:`merge_conditions`               a controller's computed conditions over the stored ones
=====================================  =========================================================

Every function is pure: it reads mappings and returns new values, never mutating its input.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from api.meta import format_time
from runtime.jsoncodec import JSON

__all__ = [
    "condition_status",
    "conditions_of",
    "find_condition",
    "format_time",
    "merge_conditions",
    "now",
    "parse_time",
    "set_condition",
    "transition_time",
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


# ---------------------------------------------------------------------------------------------- conditions


def conditions_of(obj: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The object's ``status.conditions`` (entries that are not objects are skipped)."""
    found = _mapping(_mapping(obj or {}).get("status")).get("conditions") or ()
    return [condition for condition in found if isinstance(condition, Mapping)]


def find_condition(conditions: Sequence[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    """The condition of ``type_`` in ``conditions``, or None."""
    for condition in conditions:
        if condition.get("type") == type_:
            return condition
    return None


def condition_status(obj: Mapping[str, Any] | None, type_: str) -> str | None:
    """The ``status`` (``"True"``, ``"False"``, ``"Unknown"``) of the object's condition ``type_``."""
    condition = find_condition(conditions_of(obj), type_)
    return None if condition is None else str(condition.get("status"))


def transition_time(previous: Mapping[str, Any] | None, status: str, when: datetime) -> str:
    """The ``lastTransitionTime`` of a condition now at ``status``.

    The previous one's when the status did not change (a reason or message change is no
    transition), else ``when``: that is what "since when" in a condition means.
    """
    kept = previous.get("lastTransitionTime") if previous and previous.get("status") == status else None
    return str(kept) if kept else format_time(when)


def set_condition(
    conditions: Sequence[Mapping[str, Any]],
    type_: str,
    status: str,
    when: datetime,
    *,
    reason: str = "",
    message: str = "",
    severity: str = "",
    observed_generation: int | None = None,
) -> list[JSON]:
    """``conditions`` with ``type_`` set to ``status``; its ``lastTransitionTime`` by
    :func:`transition_time`.

    Other conditions are kept as they are, in their order; a new type is appended. Empty
    ``reason`` / ``message`` are left out; ``severity`` is written only on a False condition
    (cluster-api's convention); ``observedGeneration`` only when given.
    """
    new: JSON = {"type": type_, "status": status}
    if severity and status == "False":
        new["severity"] = severity
    if reason:
        new["reason"] = reason
    if message:
        new["message"] = message
    if observed_generation is not None:
        new["observedGeneration"] = observed_generation
    result: list[JSON] = []
    found = False
    for condition in conditions:
        if condition.get("type") != type_:
            result.append(dict(condition))
            continue
        found = True
        result.append({**new, "lastTransitionTime": transition_time(condition, status, when)})
    if not found:
        result.append({**new, "lastTransitionTime": transition_time(None, status, when)})
    return result


def merge_conditions(
    previous: Sequence[Mapping[str, Any]], computed: Sequence[Mapping[str, Any]], when: datetime
) -> list[JSON]:
    """A controller's ``computed`` conditions (without times) merged over the ``previous`` ones.

    The computed conditions come first, in their order, each with :func:`transition_time`; then
    every previous condition of a type the controller does not compute, unchanged (another
    controller's, such as the etcd-quorum hook's ``EtcdClusterHealthy``): a status has several
    writers, and none may drop another's conditions.
    """
    ours = {condition.get("type") for condition in computed}
    merged = [
        {
            **condition,
            "lastTransitionTime": transition_time(
                find_condition(previous, str(condition.get("type"))), str(condition.get("status")), when
            ),
        }
        for condition in computed
    ]
    merged.extend(dict(condition) for condition in previous if condition.get("type") not in ours)
    return merged


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
