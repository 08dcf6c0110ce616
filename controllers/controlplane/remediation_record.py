"""Where remediations are written down: the retries of one lineage are counted, and a crash never
loses a remediation nor carries one out twice.

The record of a remediation is ``{"machine", "timestamp", "retryCount"}``: the Machine
remediated, when, and how many remediations in a row its lineage had then (0 for the first).

* **On the replacement**: the Machine created to replace a remediated one carries its record in
  the annotation :data:`REMEDIATION_FOR_ANNOTATION`, written in the same request that creates
  it. When that replacement is itself marked, its record is its lineage
  (:func:`~controllers.controlplane.remediation.retry_rule`): within ``minHealthyPeriod`` of the
  record's time the new remediation is retry ``retryCount + 1`` of that lineage; a Machine
  without a record (or with a record older than that) starts at 0. An unrelated failure on
  another Machine is therefore never a retry of an earlier remediation.
* **On the ControlPlane, while the replacement does not exist yet**: the annotation
  :data:`REMEDIATION_IN_PROGRESS_ANNOTATION` holds the records still awaiting their replacement
  (a JSON list, oldest first; usually one). It is written *before* the remediated Machine is
  deleted, and each create of a Machine takes the oldest entry onto the new Machine and then
  drops it from the list.

Why a crash at any point leaves state the next reconcile finishes from (see
:func:`pending_after`):

1. after the record, before the delete: the recorded Machine is still there and not deleting;
   the next pass deletes it as the same remediation (same count, no new record); if the health
   check no longer marks it, the entry is dropped (nothing was carried out);
2. after the delete, before the replacement's create: the entry stays on the ControlPlane, even
   once the deleted Machine is gone, and the next create takes it;
3. after the create, before the entry is dropped: the new Machine carries a record equal to the
   entry, so the next pass knows the entry is done and drops it.

The entries are read from the API server, not the cache, right before a create (the cache of
ControlPlanes may lag behind that of Machines), and every write of the list carries the
resourceVersion it was computed from, so a stale view never overwrites a newer list.

KubeadmControlPlane keeps the same two records (its ``remediation-in-progress`` annotation on
the control plane, its ``remediation-for`` annotation on the replacement, with the same three
fields), but writes the in-progress one *after* the delete, holds one at a time, and calls it
done once any Machine is newer than its timestamp. We write it before the delete (case 1 above
would otherwise lose the count) and compare the record itself (a Machine created for another
reason after the timestamp does not end it). A record that does not parse counts as absent
(KubeadmControlPlane stops reconciling on it): one edited annotation must not stop remediation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane import KIND as CP_KIND
from controllers.common import format_time, parse_time
from controllers.controlplane.machines import MachineInfo
from runtime.client import JSON, Client
from runtime.errors import Conflict

REMEDIATION_FOR_ANNOTATION: Final = "controlplane.cpo.dev/remediation-for"
"""On a Machine created to replace a remediated one: that remediation's record (JSON)."""
REMEDIATION_IN_PROGRESS_ANNOTATION: Final = "controlplane.cpo.dev/remediation-in-progress"
"""On the ControlPlane: the records of remediations whose replacement is not created yet (a
JSON list, oldest first)."""


@dataclass(frozen=True)
class RemediationRecord:
    """One remediation: which Machine, when, and its lineage's retry count then."""

    machine: str
    timestamp: datetime
    retry_count: int = 0

    def to_json(self) -> JSON:
        """The record as the API shows it (also ``status.lastRemediation``)."""
        return {
            "machine": self.machine,
            "timestamp": format_time(self.timestamp),
            "retryCount": self.retry_count,
        }

    @classmethod
    def from_json(cls, value: Any) -> RemediationRecord | None:
        """The record in ``value``, or None when it is not one (see the module docstring)."""
        if not isinstance(value, Mapping):
            return None
        machine, timestamp = value.get("machine"), parse_time(value.get("timestamp"))
        count = value.get("retryCount", 0)
        if not isinstance(machine, str) or not machine or timestamp is None:
            return None
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            return None
        return cls(machine, timestamp, count)


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _loads(value: Any) -> Any:
    if not isinstance(value, str):
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def lineage_of(machine: Mapping[str, Any]) -> RemediationRecord | None:
    """The remediation ``machine`` was created to replace (its :data:`REMEDIATION_FOR_ANNOTATION`)."""
    return RemediationRecord.from_json(_loads(_annotations(machine).get(REMEDIATION_FOR_ANNOTATION)))


def pending_of(cp: Mapping[str, Any]) -> list[RemediationRecord]:
    """The remediations awaiting their replacement (the ControlPlane's in-progress annotation)."""
    entries = _loads(_annotations(cp).get(REMEDIATION_IN_PROGRESS_ANNOTATION))
    if not isinstance(entries, list):
        return []
    return [record for record in map(RemediationRecord.from_json, entries) if record is not None]


def encode_pending(records: Sequence[RemediationRecord]) -> str | None:
    """The annotation value for ``records``; None (remove the annotation) when there are none."""
    if not records:
        return None
    return json.dumps([r.to_json() for r in records], separators=(",", ":"))


def encode_record(record: RemediationRecord) -> str:
    """The :data:`REMEDIATION_FOR_ANNOTATION` value for ``record``."""
    return json.dumps(record.to_json(), separators=(",", ":"))


@dataclass(frozen=True)
class MachineState:
    """What :func:`pending_after` needs to know of one owned Machine."""

    name: str
    deleting: bool
    marked: bool
    lineage: RemediationRecord | None


def pending_after(
    pending: Sequence[RemediationRecord], machines: Iterable[MachineState]
) -> list[RemediationRecord]:
    """The entries still awaiting a replacement, given the owned Machines (crash cases 1–3 of the
    module docstring): an entry some Machine carries is done; an entry whose Machine is there,
    not deleting and no longer marked was never carried out. Both are dropped. An entry whose
    Machine is there, not deleting and marked is kept: that remediation is resumed."""
    states = list(machines)
    carried = {m.lineage for m in states if m.lineage is not None}
    by_name = {m.name: m for m in states}
    kept = []
    for record in pending:
        machine = by_name.get(record.machine)
        if record in carried:
            continue
        if machine is not None and not machine.deleting and not machine.marked:
            continue
        kept.append(record)
    return kept


def recorded(pending: Sequence[RemediationRecord], record: RemediationRecord) -> list[RemediationRecord]:
    """``pending`` with ``record`` appended (an earlier entry for the same Machine replaced: a
    resumed remediation is not recorded twice)."""
    return [*(r for r in pending if r.machine != record.machine), record]


def resumable(pending: Sequence[RemediationRecord], name: str) -> RemediationRecord | None:
    """The entry recorded for Machine ``name`` (still there and not deleting: crash case 1)."""
    return next((r for r in pending if r.machine == name), None)


def awaiting_replacement(
    pending: Sequence[RemediationRecord], present: Iterable[str]
) -> RemediationRecord | None:
    """The oldest entry whose Machine is deleting or gone (``present``: the owned Machines not
    being deleted): the record the next created Machine carries. An entry whose Machine is still
    there waits for its remediation to be resumed."""
    staying = set(present)
    return next((r for r in pending if r.machine not in staying), None)


# ---------------------------------------------------------------------------------------------- writes


async def write_pending(
    client: Client, cp: JSON, records: Sequence[RemediationRecord], *, clear: Sequence[str] = ()
) -> JSON:
    """Set the ControlPlane's in-progress list to ``records``, only if ``cp`` is its latest version
    (raises Conflict otherwise: a list computed from a stale view must not overwrite a newer one).
    The annotations named in ``clear`` are removed in the same write (the resume annotation a
    remediation used: it is gone exactly when that remediation is recorded)."""
    metadata = cp["metadata"]
    annotations: dict[str, str | None] = {REMEDIATION_IN_PROGRESS_ANNOTATION: encode_pending(records)}
    annotations.update(dict.fromkeys(clear))
    patch = {"metadata": {"resourceVersion": metadata["resourceVersion"], "annotations": annotations}}
    return await client.patch(CP_API_VERSION, CP_KIND, metadata["name"], patch, metadata["namespace"])


async def take_for_replacement(
    client: Client, cp: JSON, machine: JSON, present: Iterable[str]
) -> JSON | None:
    """Put the record :func:`awaiting_replacement` onto ``machine`` (about to be created), read from
    the API server, not the cache. Returns the ControlPlane as read when a record was taken (pass
    it to :func:`drop_taken` once the create succeeded), else None."""
    metadata = cp["metadata"]
    live = await client.get(CP_API_VERSION, CP_KIND, metadata["name"], metadata["namespace"])
    record = awaiting_replacement(pending_of(live), present)
    if record is None:
        return None
    machine["metadata"].setdefault("annotations", {})[REMEDIATION_FOR_ANNOTATION] = encode_record(record)
    return live


async def drop_taken(client: Client, live: JSON, machine: JSON) -> None:
    """Drop from the in-progress list the record ``machine`` was created with. A Conflict is left
    to the next pass, which finds the record on the Machine (:func:`pending_after`)."""
    taken = lineage_of(machine)
    try:
        await write_pending(client, live, [r for r in pending_of(live) if r != taken])
    except Conflict:
        return


async def settle_pending(
    client: Client, cp: JSON, infos: Sequence[MachineInfo], owned: Sequence[JSON]
) -> tuple[JSON, list[RemediationRecord]]:
    """The ControlPlane and its in-progress list without the entries :func:`pending_after` drops
    (``infos`` and ``owned``: the owned Machines, in the same order), written back when it shrank;
    a Conflict leaves that to the next pass, which recomputes it from a fresher view."""
    pending = pending_of(cp)
    states = [
        MachineState(info.name, info.deleting, info.marked_unhealthy, lineage_of(raw))
        for info, raw in zip(infos, owned, strict=True)
    ]
    kept = pending_after(pending, states)
    if kept != pending:
        try:
            cp = await write_pending(client, cp, kept)
        except Conflict:
            return cp, kept
    return cp, kept


async def report_last(client: Client, cp: JSON, record: RemediationRecord) -> JSON:
    """Write ``status.lastRemediation`` (only that field, whatever the version: this controller is
    its one writer), so a status write that loses a Conflict later cannot lose it."""
    metadata = cp["metadata"]
    body = {"status": {"lastRemediation": record.to_json()}}
    return await client.patch_status(CP_API_VERSION, CP_KIND, metadata["name"], body, metadata["namespace"])
