"""The local provider's faults (providers/localmachine/reconciler.py ``machine_faults``): the live
annotation and the providerSpec's list, case by case."""

from __future__ import annotations

from typing import Any

import pytest

from providers.localmachine import FAULT_ANNOTATION
from providers.localmachine.reconciler import _InvalidConfiguration, machine_faults


def machine(annotation: str | None = None, faults: Any = None) -> dict[str, Any]:
    value: dict[str, Any] = {"kind": "LocalMachineProviderSpec"}
    if faults is not None:
        value["faults"] = faults
    metadata: dict[str, Any] = {"name": "m"}
    if annotation is not None:
        metadata["annotations"] = {FAULT_ANNOTATION: annotation}
    return {"metadata": metadata, "spec": {"providerSpec": {"value": value}}}


@pytest.mark.parametrize(
    ("obj", "faults"),
    [
        (machine(), frozenset()),
        (machine(annotation="kill"), {"kill"}),
        (machine(faults=["notready"]), {"notready"}),
        (
            machine(annotation="stop", faults=["notready", "fail-provision"]),
            {"stop", "notready", "fail-provision"},
        ),
    ],
    ids=["none", "the annotation", "the providerSpec's list", "both together"],
)
def test_the_faults_in_force(obj: dict[str, Any], faults: set[str]) -> None:
    assert machine_faults(obj) == faults


@pytest.mark.parametrize("listed", [["crash"], "notready", [1]], ids=["unknown", "not a list", "not a name"])
def test_a_bad_providerspec_fault_list_says_what_to_give(listed: Any) -> None:
    with pytest.raises(_InvalidConfiguration, match="give a list of faults among kill, stop"):
        machine_faults(machine(faults=listed))
