"""How every controller reads and writes conditions, on any object: one setter, one change
predicate, one message bound.

An object's ``status.conditions`` has several writers. A Machine's: its provider, the
MachineHealthCheck (``HealthCheckSucceeded``, ``OwnerRemediated``), the ControlPlane controller
(``UpToDate``, and ``OwnerRemediated`` once it has decided) and the etcd-quorum-hook controller
(``EtcdMemberHealthy``, ``EtcdQuorumHookHolding``). A ControlPlane's: its controller and the
etcd-quorum-hook controller (``EtcdClusterHealthy``). A MachineHealthCheck's: its controller.
Each writer states the conditions it wants by type and sets only those:

=====================================  =============================================================
:func:`condition`                      a wanted condition: empty reason, message and severity left
                                       out, severity only when False, the message bounded
:func:`set_conditions`                 the stored list with the wanted types set (or removed), every
                                       other writer's condition kept in its place; the setter
:func:`changes`                        the wanted conditions that differ from the stored ones;
                                       nothing differs, nothing is written
:func:`differs`                        the change predicate :func:`changes` applies per type
:func:`transition_time`                "since when": moves only when the status does
:func:`write_machine_conditions`       the wanted conditions written on a Machine, only on change,
                                       with the resourceVersion they were computed from
:func:`conditions_of`,                 readers
:func:`find_condition`,
:func:`condition_status`
=====================================  =============================================================

The rules, as Kubernetes' own ``meta.SetStatusCondition`` and cluster-api's condition utilities
have them: a condition is compared by status, reason, message, severity and observedGeneration,
never by its transition time, so a settled controller costs no API write; ``lastTransitionTime``
is kept while the status stays (a new reason or message is no transition); a message is cut to
:data:`MAX_MESSAGE`, the API's limit, before it is compared, so an over-long message does not
look changed on every pass.

Every function but :func:`write_machine_conditions` is pure: it reads mappings and returns new
values, never mutating its input.

>>> from datetime import UTC, datetime
>>> stored = [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
>>> wanted = {"Ready": condition("Ready", "True", "Running", "all good")}
>>> changes(stored, wanted) == wanted
True
>>> set_conditions(stored, wanted, datetime(2026, 2, 1, tzinfo=UTC))
[{'type': 'Ready', 'status': 'True', 'reason': 'Running', 'message': 'all good', \
'lastTransitionTime': '2026-01-01T00:00:00Z'}]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from api.machine import API_VERSION as MACHINE_API_VERSION
from api.meta import format_time
from controllers.common import now
from runtime.client import JSON, Client
from runtime.errors import Conflict, NotFound
from runtime.log import get_logger

__all__ = [
    "MAX_MESSAGE",
    "WRITE_ATTEMPTS",
    "Wanted",
    "changes",
    "condition",
    "condition_status",
    "conditions_of",
    "differs",
    "find_condition",
    "set_conditions",
    "transition_time",
    "write_machine_conditions",
]

MAX_MESSAGE: Final = 32768
"""The API's limit on a condition's message (``metav1.Condition``'s ``maxLength``)."""

WRITE_ATTEMPTS: Final = 3
"""Writes :func:`write_machine_conditions` tries against a fresh read when another writer got in
between."""

Wanted = Mapping[str, Mapping[str, Any] | None]
"""Condition type → the condition wanted (as :func:`condition` builds it), or None to remove that
type."""

_COMPARED: Final = ("status", "reason", "message", "severity", "observedGeneration")

_log = get_logger("controllers.conditions")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# ---------------------------------------------------------------------------------------------- readers


def conditions_of(obj: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The object's ``status.conditions`` (entries that are not objects are skipped)."""
    found = _mapping(_mapping(obj or {}).get("status")).get("conditions") or ()
    return [entry for entry in found if isinstance(entry, Mapping)]


def find_condition(conditions: Sequence[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    """The condition of ``type_`` in ``conditions``, or None."""
    for entry in conditions:
        if entry.get("type") == type_:
            return entry
    return None


def condition_status(obj: Mapping[str, Any] | None, type_: str) -> str | None:
    """The ``status`` (``"True"``, ``"False"``, ``"Unknown"``) of the object's condition ``type_``."""
    found = find_condition(conditions_of(obj), type_)
    return None if found is None else str(found.get("status"))


# ---------------------------------------------------------------------------------------------- writers


def condition(
    type_: str,
    status: str,
    reason: str = "",
    message: str = "",
    severity: str = "",
    *,
    observed_generation: int | None = None,
) -> JSON:
    """A wanted condition (no transition time: :func:`set_conditions` gives it one).

    Empty ``reason`` and ``message`` are left out; ``severity`` is kept only on a False condition
    (cluster-api's convention); ``observedGeneration`` only when given; the message is cut to
    :data:`MAX_MESSAGE`.
    """
    wanted: JSON = {"type": type_, "status": status}
    if severity and status == "False":
        wanted["severity"] = severity
    if reason:
        wanted["reason"] = reason
    if message:
        wanted["message"] = message[:MAX_MESSAGE]
    if observed_generation is not None:
        wanted["observedGeneration"] = observed_generation
    return wanted


def _normal(wanted: Mapping[str, Any]) -> JSON:
    """``wanted`` as :func:`condition` would have built it (a caller may hand a plain dict)."""
    generation = wanted.get("observedGeneration")
    return condition(
        str(wanted.get("type")),
        str(wanted.get("status")),
        str(wanted.get("reason") or ""),
        str(wanted.get("message") or ""),
        severity=str(wanted.get("severity") or ""),
        observed_generation=generation if isinstance(generation, int) else None,
    )


def differs(stored: Mapping[str, Any] | None, wanted: Mapping[str, Any] | None) -> bool:
    """Whether writing ``wanted`` over ``stored`` (either absent: None) changes the condition.

    Compared: status, reason, message, severity and observedGeneration, with an absent field and
    an empty one alike; never the transition time, which only :func:`set_conditions` moves.
    """
    if stored is None or wanted is None:
        return (stored is None) != (wanted is None)
    normal = _normal(wanted)
    return any((stored.get(key) or "") != (normal.get(key) or "") for key in _COMPARED)


def changes(stored: Sequence[Mapping[str, Any]], wanted: Wanted) -> dict[str, JSON | None]:
    """The entries of ``wanted`` that :func:`differs` from ``stored``: a condition to set, or the
    removal of a type that is there."""
    return {
        type_: None if want is None else _normal(want)
        for type_, want in wanted.items()
        if differs(find_condition(stored, type_), want)
    }


def transition_time(previous: Mapping[str, Any] | None, status: str, when: datetime) -> str:
    """The ``lastTransitionTime`` of a condition now at ``status``.

    The previous one's when the status did not change (a reason or message change is no
    transition), else ``when``: that is what "since when" in a condition means.
    """
    kept = previous.get("lastTransitionTime") if previous and previous.get("status") == status else None
    return str(kept) if kept else format_time(when)


def set_conditions(stored: Sequence[Mapping[str, Any]], wanted: Wanted, when: datetime) -> list[JSON]:
    """``stored`` with each type of ``wanted`` set (or removed, for None), every other condition
    kept as it is and where it is; a new type is appended, in ``wanted``'s order.

    A set condition is ``wanted``'s (normalised as :func:`condition` builds it) with its
    :func:`transition_time`. Another writer's conditions are never dropped: a status has several
    writers.
    """
    pending = dict(wanted)
    result: list[JSON] = []
    for present in stored:
        type_ = str(present.get("type"))
        if type_ not in pending:
            result.append(dict(present))
            continue
        want = pending.pop(type_)
        if want is not None:
            normal = _normal(want)
            result.append({**normal, "lastTransitionTime": transition_time(present, normal["status"], when)})
    for want in pending.values():
        if want is not None:
            normal = _normal(want)
            result.append({**normal, "lastTransitionTime": transition_time(None, normal["status"], when)})
    return result


async def write_machine_conditions(client: Client, machine: Mapping[str, Any], wanted: Wanted) -> bool:
    """Set ``wanted`` on ``machine`` when one of them :func:`differs` from what it stores; True
    when written.

    Written through the status subresource with the resourceVersion the list was computed from:
    a JSON merge patch replaces a list whole, so without the lock a condition another writer
    added after our read would be erased. On a conflict it reads the Machine again and
    recomputes, :data:`WRITE_ATTEMPTS` times, then leaves the rest to the next pass (the Machine
    watch event of the other write brings one). ``machine`` may be a cached copy: a stale
    resourceVersion only costs a conflict and a fresh read. A Machine gone meanwhile is not an
    error (nothing to report on).
    """
    metadata = machine["metadata"]
    name, namespace = metadata["name"], metadata.get("namespace")
    current: Mapping[str, Any] = machine
    for attempt in range(WRITE_ATTEMPTS):
        stored = conditions_of(current)
        if not changes(stored, wanted):
            return False
        patch: JSON = {
            "metadata": {"resourceVersion": current["metadata"].get("resourceVersion")},
            "status": {"conditions": set_conditions(stored, wanted, now())},
        }
        try:
            await client.patch_status(MACHINE_API_VERSION, "Machine", name, patch, namespace)
            return True
        except NotFound:
            return False
        except Conflict:
            if attempt == WRITE_ATTEMPTS - 1:
                break
            try:
                current = await client.get(MACHINE_API_VERSION, "Machine", name, namespace)
            except NotFound:
                return False
    _log.info("Machine conditions not written: it kept changing; the next pass writes them", machine=name)
    return False
