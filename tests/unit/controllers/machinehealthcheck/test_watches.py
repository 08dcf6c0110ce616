"""Which MachineHealthCheck events reach the ``machinehealthcheck`` controller
(controllers/machinehealthcheck/watches.py): only those of checks in the operator's scope."""

from __future__ import annotations

from typing import Any

import pytest

from api.controlplane import MHC_SCOPE_LABEL
from controllers.machinehealthcheck.watches import InHealthCheckScope
from runtime.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent

SCOPED = {"metadata": {"name": "cp-mhc", "labels": {MHC_SCOPE_LABEL: "true"}}}
WORKER = {"metadata": {"name": "workers", "labels": {"team": "infra"}}}
OTHER_VALUE = {"metadata": {"name": "odd", "labels": {MHC_SCOPE_LABEL: "false"}}}


@pytest.mark.parametrize(
    ("obj", "passes"),
    [(SCOPED, True), (WORKER, False), (OTHER_VALUE, False), ({"metadata": {}}, False)],
    ids=[
        "a check carrying the scope label is reconciled",
        "a worker check without it is not",
        "the label with another value is out of scope too",
        "a check without labels is not",
    ],
)
def test_create_delete_and_generic_events_pass_for_checks_in_scope_only(
    obj: dict[str, Any], passes: bool
) -> None:
    scope = InHealthCheckScope()
    assert scope.create(CreateEvent(obj)) is passes
    assert scope.delete(DeleteEvent(obj)) is passes
    assert scope.generic(GenericEvent(obj)) is passes


@pytest.mark.parametrize(
    ("old", "new", "passes"),
    [(WORKER, WORKER, False), (SCOPED, SCOPED, True), (SCOPED, WORKER, True), (WORKER, SCOPED, True)],
    ids=[
        "a worker check's update never reaches the controller",
        "an update of a check in scope does",
        "taking the label off reaches it once so it lets the check go",
        "putting the label on reaches it so it takes the check",
    ],
)
def test_updates_pass_when_the_old_or_the_new_check_is_in_scope(
    old: dict[str, Any], new: dict[str, Any], passes: bool
) -> None:
    assert InHealthCheckScope().update(UpdateEvent(old, new)) is passes
