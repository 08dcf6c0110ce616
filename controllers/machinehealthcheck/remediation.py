"""Pure helpers of remediation: who owns a Machine, conditions, external remediation requests.

Like :mod:`controllers.machinehealthcheck.health`, these functions read dicts and return new
values; the controller does the writing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from api.machine import (
    API_VERSION,
    CONDITION_HEALTH_CHECK_SUCCEEDED,
    CONDITION_OWNER_REMEDIATED,
    OWNER_WAITING_REASONS,
    REASON_WAITING_FOR_REMEDIATION,
    SEVERITY_WARNING,
)
from api.ownership import controlling_controlplane
from controllers.conditions import condition, conditions_of, find_condition, set_conditions
from runtime.jsoncodec import JSON

from .health import Verdict

TEMPLATE_SUFFIX = "Template"
CLONED_FROM_NAME_ANNOTATION = "cluster.x-k8s.io/cloned-from-name"
CLONED_FROM_GROUP_KIND_ANNOTATION = "cluster.x-k8s.io/cloned-from-groupkind"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# ------------------------------------------------------------------------------------ ownership


def is_owned_by_controlplane(machine: Mapping[str, Any]) -> bool:
    """Whether the Machine's controller owner is a ControlPlane (any version of its group).

    Such a Machine is only marked: its ControlPlane decides when replacing it keeps etcd quorum.
    """
    return controlling_controlplane(machine) is not None


def is_deleting(obj: Mapping[str, Any]) -> bool:
    """Whether deletion of ``obj`` was requested (``metadata.deletionTimestamp`` set)."""
    return bool(_mapping(obj.get("metadata")).get("deletionTimestamp"))


# ------------------------------------------------------------------------------------ conditions


def machine_conditions(machine: Mapping[str, Any]) -> list[JSON]:
    """The Machine's ``status.conditions`` (copies)."""
    return [dict(c) for c in conditions_of(machine)]


def marked_for_owner(machine: Mapping[str, Any], verdict: Verdict, now: datetime) -> list[JSON]:
    """The Machine's conditions once marked for its ControlPlane to remediate.

    ``HealthCheckSucceeded=False`` (reason: which check failed; message: what and since when) and
    ``OwnerRemediated=False`` with reason ``WaitingForRemediation``. An ``OwnerRemediated`` the
    owner already set (it has started) is left alone.
    """
    conditions = set_conditions(
        machine_conditions(machine),
        {
            CONDITION_HEALTH_CHECK_SUCCEEDED: condition(
                CONDITION_HEALTH_CHECK_SUCCEEDED, "False", verdict.reason, verdict.message, SEVERITY_WARNING
            )
        },
        now,
    )
    if find_condition(conditions, CONDITION_OWNER_REMEDIATED) is None:
        conditions = set_conditions(
            conditions,
            {
                CONDITION_OWNER_REMEDIATED: condition(
                    CONDITION_OWNER_REMEDIATED,
                    "False",
                    REASON_WAITING_FOR_REMEDIATION,
                    "waiting for the owning ControlPlane to remediate the Machine",
                    SEVERITY_WARNING,
                )
            },
            now,
        )
    return conditions


def cleared_for_healthy(machine: Mapping[str, Any], now: datetime) -> list[JSON]:
    """The Machine's conditions once it is healthy again before its owner acted on the mark.

    ``HealthCheckSucceeded`` turns True, and an ``OwnerRemediated`` whose reason says nothing was
    carried out (``WaitingForRemediation``, or the owner's ``RemediationDeferred`` /
    ``CannotBeRemediated``) is removed (the owner has nothing to do); one the owner acted on
    (``MachineDeleting``) is left to the owner.
    """
    conditions = machine_conditions(machine)
    if find_condition(conditions, CONDITION_HEALTH_CHECK_SUCCEEDED) is not None:
        conditions = set_conditions(
            conditions,
            {CONDITION_HEALTH_CHECK_SUCCEEDED: condition(CONDITION_HEALTH_CHECK_SUCCEEDED, "True")},
            now,
        )
    owner = find_condition(conditions, CONDITION_OWNER_REMEDIATED)
    if owner is not None and owner.get("reason") in OWNER_WAITING_REASONS:
        conditions = set_conditions(conditions, {CONDITION_OWNER_REMEDIATED: None}, now)
    return conditions


def same_conditions(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> bool:
    """Equal lists of conditions, order aside."""
    key = lambda c: str(c.get("type"))  # noqa: E731
    return sorted((dict(c) for c in a), key=key) == sorted((dict(c) for c in b), key=key)


def status_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether writing ``new`` (the fields this controller owns) would change the stored ``old`` status.

    Unchanged status is never written: a reconcile that finds nothing new costs no API write.
    """
    for key, value in new.items():
        if key == "conditions":
            if not same_conditions(old.get("conditions") or [], value or []):
                return True
        elif old.get(key) != value:
            return True
    return False


# ------------------------------------------------------------------------ external remediation


def request_kind(template_kind: str) -> str:
    """The kind a template stamps out: ``Metal3RemediationTemplate`` → ``Metal3Remediation``."""
    return template_kind.removesuffix(TEMPLATE_SUFFIX) if template_kind != TEMPLATE_SUFFIX else template_kind


def external_remediation_request(template: Mapping[str, Any], machine: Mapping[str, Any]) -> JSON:
    """The remediation request for ``machine``, generated from the remediation ``template``.

    Named after the Machine, in its namespace, of the template's kind without ``Template``; its
    labels, annotations and spec come from the template's ``spec.template``; it is owned by the
    Machine (so it goes with it) and says which template it was cloned from.
    """
    meta = _mapping(machine.get("metadata"))
    template_meta = _mapping(template.get("metadata"))
    body = _mapping(_mapping(template.get("spec")).get("template"))
    body_meta = _mapping(body.get("metadata"))
    api_version = str(template.get("apiVersion") or "")
    kind = str(template.get("kind") or "")
    annotations = {str(k): str(v) for k, v in _mapping(body_meta.get("annotations")).items()}
    annotations[CLONED_FROM_NAME_ANNOTATION] = str(template_meta.get("name") or "")
    annotations[CLONED_FROM_GROUP_KIND_ANNOTATION] = f"{kind}.{api_version.rpartition('/')[0]}"
    request: JSON = {
        "apiVersion": api_version,
        "kind": request_kind(kind),
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "labels": {str(k): str(v) for k, v in _mapping(body_meta.get("labels")).items()},
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": API_VERSION,
                    "kind": "Machine",
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                }
            ],
        },
    }
    if "spec" in body:
        request["spec"] = body["spec"]
    return request
