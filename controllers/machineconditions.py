"""How the operator's controllers write their conditions on a Machine: merged by type, only on change.

A Machine's ``status.conditions`` has several writers: its provider, the MachineHealthCheck
(``HealthCheckSucceeded``, ``OwnerRemediated``), the ControlPlane controller (``UpToDate``, and
``OwnerRemediated`` once it has decided) and the etcd-quorum-hook controller
(``EtcdMemberHealthy``, ``EtcdQuorumHookHolding``). Each writer sets only its own types:

* :func:`changes` says which of a writer's wanted conditions differ from the stored ones (status,
  reason, message, severity); nothing differs, nothing is written, so a settled control plane
  costs no API write. A transition time is never compared and never moves on its own;
* :func:`merged` is the stored list with the wanted types set by type (``lastTransitionTime``
  kept while the status stays, :func:`controllers.common.transition_time`), a wanted ``None``
  removing its type, every other writer's condition kept in its place;
* :func:`write_machine_conditions` writes that list through the status subresource with the
  resourceVersion it was computed from. A JSON merge patch replaces a list whole, so without the
  lock a condition another writer added after our read would be erased; on a conflict it reads
  the Machine again and recomputes, a few times, then leaves the rest to the next pass (the
  Machine watch event of the other write brings one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from api.machine import API_VERSION as MACHINE_API_VERSION
from controllers.common import conditions_of, find_condition, now, transition_time
from runtime.client import JSON, Client
from runtime.errors import Conflict, NotFound
from runtime.log import get_logger

WRITE_ATTEMPTS: Final = 3
"""Writes tried against a fresh read when another writer got in between."""

MAX_MESSAGE: Final = 32768
"""The API's limit on a condition's message."""

Wanted = Mapping[str, JSON | None]
"""Condition type → the condition wanted (``type``, ``status``, ``reason``, ``message``, and
``severity`` when False), or None to remove that type."""

_COMPARED: Final = ("status", "reason", "message", "severity")

_log = get_logger("controllers.machineconditions")


def condition(type_: str, status: str, reason: str, message: str = "", severity: str = "") -> JSON:
    """A wanted condition; empty message and severity are left out, severity kept only when False."""
    wanted: JSON = {"type": type_, "status": status, "reason": reason}
    if message:
        wanted["message"] = message[:MAX_MESSAGE]
    if severity and status == "False":
        wanted["severity"] = severity
    return wanted


def _same(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return all((stored.get(key) or "") == (wanted.get(key) or "") for key in _COMPARED)


def changes(stored: Sequence[Mapping[str, Any]], wanted: Wanted) -> dict[str, JSON | None]:
    """The entries of ``wanted`` that differ from ``stored``: a condition to set, or a removal of a
    type that is there."""
    differing: dict[str, JSON | None] = {}
    for type_, want in wanted.items():
        present = find_condition(stored, type_)
        if want is None:
            if present is not None:
                differing[type_] = None
        elif present is None or not _same(present, want):
            differing[type_] = dict(want)
    return differing


def merged(stored: Sequence[Mapping[str, Any]], wanted: Wanted, when: datetime) -> list[JSON]:
    """``stored`` with each type of ``wanted`` set (or removed), every other condition kept in place;
    a new type is appended."""
    pending = dict(wanted)
    result: list[JSON] = []
    for present in stored:
        type_ = str(present.get("type"))
        if type_ not in pending:
            result.append(dict(present))
            continue
        want = pending.pop(type_)
        if want is not None:
            status = str(want.get("status"))
            result.append({**want, "lastTransitionTime": transition_time(present, status, when)})
    for want in pending.values():
        if want is not None:
            status = str(want.get("status"))
            result.append({**want, "lastTransitionTime": transition_time(None, status, when)})
    return result


async def write_machine_conditions(client: Client, machine: Mapping[str, Any], wanted: Wanted) -> bool:
    """Set ``wanted`` on ``machine`` when one of them differs from what it stores; True when written.

    ``machine`` may be a cached copy: a stale resourceVersion only costs a conflict and a fresh
    read. A Machine gone meanwhile is not an error (nothing to report on).
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
            "status": {"conditions": merged(stored, wanted, now())},
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
