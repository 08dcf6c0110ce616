"""The template's labels and annotations, written onto the ControlPlane's Machines in place.

What a Machine *is* (its providerSpec and failure domain) decides whether it is outdated
(:func:`~controllers.controlplane.placement.spec_hash_matches`); its labels and annotations do
not. A template change that touches only ``spec.template.metadata`` therefore replaces nothing:
on every pass of an Active ControlPlane, each owned Machine not being deleted is brought in step
with the template by one JSON merge patch (:func:`metadata_patch`), under the resourceVersion it
was read at, and only when something differs:

- each label and annotation the template sets is written with the template's value (the template
  wins over a value someone else wrote, a Machine API provider's included: do not set in the
  template a key the provider keeps, such as ``machine.openshift.io/zone``);
- a key the template no longer sets is removed only if the template set it before: the keys it
  set last are recorded on the Machine in the annotation
  :data:`~controllers.controlplane.placement.TEMPLATE_METADATA_ANNOTATION` (``{"labels": [...],
  "annotations": [...]}``), as ``kubectl apply`` keeps its last-applied configuration. A key
  someone else put on the Machine is never in that record and stays; a key both set is removed
  with the template's (as ``kubectl apply`` would). A Machine without a record (made by the
  previous version, or adopted) loses nothing until one is written;
- never touched: the operator's own keys (``controlplane.cpo.dev/...``, ``etcd.cpo.dev/...``:
  spec hash, failure domain, remediation records, the etcd guard), whatever the template says,
  and never removed: a label ``spec.selector`` names, nor the control-plane role label
  (without it a Machine leaves the operator's cache, and its etcd guard hook would never be
  released);
- in the same patch, a spec hash the previous version wrote is replaced by today's when the
  Machine matches the template (:func:`~controllers.controlplane.placement.hash_to_rewrite`), so
  an operator upgrade replaces nothing and leaves every Machine recorded in today's terms.

Every write is idempotent (a second pass over the written Machine finds nothing to change) and
crash-safe (one patch per Machine carries the keys, the record and the hash together; a pass that
dies between two Machines leaves the next pass the rest). A conflict or a Machine gone meanwhile
skips that Machine: the watch event of the other write brings a new pass. An Inactive ControlPlane
writes nothing on Machines (the reconciler does not call this for one); ``spec.paused``, which
holds creates and deletes, does not hold these writes.

The reference controllers, for comparison: KubeadmControlPlane's ``syncMachines`` brings every
Machine not being deleted in step with ``spec.machineTemplate.metadata`` (the template's labels
plus its own cluster-name and control-plane labels, the template's annotations) by server-side
apply under its field manager: the apply's field ownership removes a key KCP applied before and
no longer does, and leaves keys other managers own; a Machine being deleted only gets the
deletion timeouts. Which Machines need a rollout is decided without their labels and
annotations. OpenShift's ControlPlaneMachineSet decides that a Machine needs an update only by
comparing its providerSpec with the template's (the failure domain of the Machine's index
injected, the template's normalized by a dry-run create), and writes the template's labels and
annotations only on the Machines it creates, never on existing ones. Here, as in KCP, they are
kept in step in place; the record annotation plays the part of SSA's field ownership.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, MutableSequence
from typing import Any

from api.controlplane import MASTER_ROLE_LABEL, ControlPlaneSpec
from api.machine import API_VERSION as MACHINE_API_VERSION
from controllers.controlplane.placement import (
    SPEC_HASH_ANNOTATION,
    TEMPLATE_METADATA_ANNOTATION,
    applied_record,
    desired_machine,
    hash_to_rewrite,
    is_operator_key,
)
from runtime.client import JSON, Client
from runtime.errors import Conflict, NotFound
from runtime.log import get_logger

_log = get_logger("controllers.controlplane")


def recorded_keys(machine: Mapping[str, Any]) -> tuple[frozenset[str], frozenset[str]]:
    """The label and annotation keys the template set on ``machine`` last, from
    :data:`~controllers.controlplane.placement.TEMPLATE_METADATA_ANNOTATION`; none when it is
    absent or unreadable (then nothing is removed: an unknown key is someone else's)."""
    annotations = (machine.get("metadata") or {}).get("annotations") or {}
    try:
        record = json.loads(annotations.get(TEMPLATE_METADATA_ANNOTATION) or "{}")
    except ValueError:
        return frozenset(), frozenset()
    if not isinstance(record, Mapping):
        return frozenset(), frozenset()

    def keys(section: str) -> frozenset[str]:
        listed = record.get(section)
        return frozenset(k for k in listed if isinstance(k, str)) if isinstance(listed, list) else frozenset()

    return keys("labels"), keys("annotations")


def kept_labels(spec: ControlPlaneSpec) -> frozenset[str]:
    """Labels never removed from a Machine: every key ``spec.selector`` names and the
    control-plane role label (the operator's cache selects Machines by it)."""
    selector = spec.selector
    named = {*(selector.match_labels or {}), *(r.key for r in selector.match_expressions or ())}
    return frozenset({*named, MASTER_ROLE_LABEL})


def _changes(
    current: Mapping[str, Any], wanted: Mapping[str, str], recorded: Collection[str], kept: Collection[str]
) -> dict[str, str | None]:
    """The merge-patch entries that bring ``current`` in step with ``wanted``: its keys set to
    its values, recorded keys it no longer has removed (``None``), operator keys and ``kept``
    keys never removed, operator keys never written."""
    changes: dict[str, str | None] = {
        key: value for key, value in wanted.items() if not is_operator_key(key) and current.get(key) != value
    }
    for key in sorted(set(recorded) - set(wanted)):
        if key in current and not is_operator_key(key) and key not in kept:
            changes[key] = None
    return changes


def metadata_patch(spec: ControlPlaneSpec, machine: Mapping[str, Any]) -> JSON | None:
    """The JSON merge patch that brings ``machine``'s labels and annotations in step with the
    template (see the module docstring), with its resourceVersion as precondition; None when
    nothing differs."""
    metadata = machine.get("metadata") or {}
    desired = desired_machine(spec, None)
    recorded_labels, recorded_annotations = recorded_keys(machine)
    current_annotations = metadata.get("annotations") or {}
    labels = _changes(metadata.get("labels") or {}, desired["labels"], recorded_labels, kept_labels(spec))
    annotations = _changes(current_annotations, desired["annotations"], recorded_annotations, ())
    record = applied_record(spec)
    if current_annotations.get(TEMPLATE_METADATA_ANNOTATION) != record:
        annotations[TEMPLATE_METADATA_ANNOTATION] = record
    rewritten = hash_to_rewrite(spec, machine)
    if rewritten is not None:
        annotations[SPEC_HASH_ANNOTATION] = rewritten
    if not labels and not annotations:
        return None
    patched: JSON = {"resourceVersion": metadata.get("resourceVersion")}
    if labels:
        patched["labels"] = labels
    if annotations:
        patched["annotations"] = annotations
    return {"metadata": patched}


async def sync_template_metadata(
    client: Client, spec: ControlPlaneSpec, owned: MutableSequence[JSON]
) -> None:
    """Patch each of ``owned`` not being deleted with its :func:`metadata_patch`, where there is
    one; ``owned`` takes each Machine as written, so later writes of the pass start from it."""
    for index, machine in enumerate(owned):
        metadata = machine["metadata"]
        if metadata.get("deletionTimestamp"):
            continue
        patch = metadata_patch(spec, machine)
        if patch is None:
            continue
        try:
            owned[index] = await client.patch(
                MACHINE_API_VERSION, "Machine", metadata["name"], patch, metadata.get("namespace")
            )
        except (Conflict, NotFound):
            continue  # changed or gone meanwhile: that change's watch event brings the next pass
        _log.info("Machine brought in step with the template's metadata", machine=metadata["name"])
