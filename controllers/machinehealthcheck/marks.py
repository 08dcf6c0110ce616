"""The marks a MachineHealthCheck puts on a ControlPlane's Machine instead of remediating it.

A Machine whose controller owner is a ControlPlane (:func:`is_owned_by_controlplane`) is never
deleted by the health check: it is *marked*, and its ControlPlane replaces it when that keeps
etcd quorum. The mark is two Machine conditions, stated here as wanted conditions
(:data:`controllers.conditions.Wanted`: type → condition, or None to remove that type):

==================================  ==============================================================
:func:`mark_conditions`             an unhealthy Machine: ``HealthCheckSucceeded=False`` and, unless
                                    the owner already set one, ``OwnerRemediated=False``
                                    (``WaitingForRemediation``)
:func:`recovered_conditions`        a Machine healthy again before its owner acted: our mark taken
                                    back
==================================  ==============================================================

Pure: these read the Machine's stored conditions and return what to set;
:func:`controllers.machinehealthcheck.actions.choose_action` decides with
:func:`controllers.conditions.changes` whether anything is to be written at all, and the
reconciler writes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from api.machine import (
    CONDITION_HEALTH_CHECK_SUCCEEDED,
    CONDITION_OWNER_REMEDIATED,
    OWNER_WAITING_REASONS,
    REASON_WAITING_FOR_REMEDIATION,
    SEVERITY_WARNING,
)
from api.ownership import controlling_controlplane
from controllers.conditions import condition, find_condition
from runtime.jsoncodec import JSON

from .health import Verdict

WAITING_MESSAGE = "waiting for the owning ControlPlane to remediate the Machine"


def is_owned_by_controlplane(machine: Mapping[str, Any]) -> bool:
    """Whether the Machine's controller owner is a ControlPlane (any version of its group).

    Such a Machine is only marked: its ControlPlane decides when replacing it keeps etcd quorum.
    """
    return controlling_controlplane(machine) is not None


def mark_conditions(conditions: Sequence[Mapping[str, Any]], verdict: Verdict) -> dict[str, JSON | None]:
    """The conditions that mark an unhealthy Machine for its ControlPlane to remediate.

    ``HealthCheckSucceeded=False`` (reason: which check failed; message: what and since when) and
    ``OwnerRemediated=False`` with reason ``WaitingForRemediation``. An ``OwnerRemediated`` the
    owner already set (it has started, or decided) is left alone: it is the owner's word now.
    """
    wanted: dict[str, JSON | None] = {
        CONDITION_HEALTH_CHECK_SUCCEEDED: condition(
            CONDITION_HEALTH_CHECK_SUCCEEDED, "False", verdict.reason, verdict.message, SEVERITY_WARNING
        )
    }
    if find_condition(conditions, CONDITION_OWNER_REMEDIATED) is None:
        wanted[CONDITION_OWNER_REMEDIATED] = condition(
            CONDITION_OWNER_REMEDIATED,
            "False",
            REASON_WAITING_FOR_REMEDIATION,
            WAITING_MESSAGE,
            SEVERITY_WARNING,
        )
    return wanted


def recovered_conditions(conditions: Sequence[Mapping[str, Any]]) -> dict[str, JSON | None]:
    """The conditions that take our mark back from a Machine healthy again before its owner acted.

    Nothing when the Machine was never marked (no ``HealthCheckSucceeded``). Else
    ``HealthCheckSucceeded`` turns True, and an ``OwnerRemediated`` whose reason says nothing was
    carried out (``WaitingForRemediation``, or the owner's ``RemediationDeferred`` /
    ``CannotBeRemediated``) is removed (the owner has nothing to do); one the owner acted on
    (``MachineDeleting``) is left to the owner.
    """
    if find_condition(conditions, CONDITION_HEALTH_CHECK_SUCCEEDED) is None:
        return {}
    wanted: dict[str, JSON | None] = {
        CONDITION_HEALTH_CHECK_SUCCEEDED: condition(CONDITION_HEALTH_CHECK_SUCCEEDED, "True")
    }
    owner = find_condition(conditions, CONDITION_OWNER_REMEDIATED)
    if owner is not None and owner.get("reason") in OWNER_WAITING_REASONS:
        wanted[CONDITION_OWNER_REMEDIATED] = None
    return wanted
