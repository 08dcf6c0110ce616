"""The Machine API CRDs the project generates (api/machine.py through api/crdgen.py) carry the
structural facts of OpenShift's own (``openshift/api`` ``machine/v1beta1``, the generated CRD
manifests of the Default feature set), so that what a test writes is kept or pruned as on a real
cluster. The facts, as read from those manifests:

Machine
  * ``spec`` and ``status`` keep no unknown field (no ``x-kubernetes-preserve-unknown-fields``);
    only ``spec.providerSpec.value`` and ``status.providerStatus`` do;
  * ``spec`` has lifecycleHooks, metadata, providerID, providerSpec, taints; ``status`` has
    addresses, conditions, errorMessage, errorReason, lastOperation, lastUpdated, nodeRef, phase,
    providerStatus;
  * ``lifecycleHooks.preDrain`` and ``preTerminate`` are list-maps keyed by ``name``, each item
    requiring ``name`` and ``owner``;
  * ``status.conditions`` is a list-map keyed by ``type``, each item requiring
    ``lastTransitionTime``, ``status`` and ``type``;
  * ``spec.taints`` and ``status.addresses`` are atomic lists, ``status.nodeRef`` an atomic map,
    ``spec.metadata.ownerReferences`` a list-map keyed by ``uid``.

MachineHealthCheck
  * nothing is required: not ``spec``, not ``selector``, not ``unhealthyConditions``, not an
    entry's ``type``, ``status`` or ``timeout``; ``unhealthyConditions`` has at least one item;
  * ``maxUnhealthy`` defaults to ``100%``, ``nodeStartupTimeout`` to ``10m``;
  * ``status.conditions`` is a plain list whose items require nothing;
  * ``spec`` and ``status`` keep no unknown field.
"""

from __future__ import annotations

from typing import Any

import pytest

from api.crdgen import crd_for
from api.machine import MACHINE_CRD, MACHINEHEALTHCHECK_CRD

PRESERVE = "x-kubernetes-preserve-unknown-fields"


def _schema(info: Any) -> dict[str, Any]:
    schema: dict[str, Any] = crd_for(info)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _at(schema: dict[str, Any], *path: str) -> dict[str, Any]:
    for name in path:
        schema = schema["items"] if name == "[]" else schema["properties"][name]
    return schema


MACHINE = _schema(MACHINE_CRD)
MHC = _schema(MACHINEHEALTHCHECK_CRD)


def test_a_machines_spec_and_status_keep_no_unknown_field_but_the_providers_objects() -> None:
    assert PRESERVE not in _at(MACHINE, "spec")
    assert PRESERVE not in _at(MACHINE, "status")
    assert _at(MACHINE, "spec", "providerSpec", "value").get(PRESERVE) is True
    assert _at(MACHINE, "status", "providerStatus").get(PRESERVE) is True


def test_a_machine_has_openshifts_fields_and_no_other() -> None:
    assert set(_at(MACHINE, "spec")["properties"]) == {
        "lifecycleHooks",
        "metadata",
        "providerID",
        "providerSpec",
        "taints",
    }
    assert set(_at(MACHINE, "status")["properties"]) == {
        "addresses",
        "conditions",
        "errorMessage",
        "errorReason",
        "lastOperation",
        "lastUpdated",
        "nodeRef",
        "phase",
        "providerStatus",
    }


@pytest.mark.parametrize("hooks", ["preDrain", "preTerminate"])
def test_lifecycle_hooks_are_a_list_map_keyed_by_name(hooks: str) -> None:
    schema = _at(MACHINE, "spec", "lifecycleHooks", hooks)
    assert schema["x-kubernetes-list-type"] == "map"
    assert schema["x-kubernetes-list-map-keys"] == ["name"]
    assert set(schema["items"]["required"]) == {"name", "owner"}


def test_machine_conditions_are_a_list_map_keyed_by_type_with_last_transition_time_required() -> None:
    schema = _at(MACHINE, "status", "conditions")
    assert schema["x-kubernetes-list-type"] == "map"
    assert schema["x-kubernetes-list-map-keys"] == ["type"]
    assert set(schema["items"]["required"]) == {"lastTransitionTime", "status", "type"}


def test_machine_lists_and_maps_merge_as_openshifts_do() -> None:
    assert _at(MACHINE, "spec", "taints")["x-kubernetes-list-type"] == "atomic"
    assert _at(MACHINE, "status", "addresses")["x-kubernetes-list-type"] == "atomic"
    assert _at(MACHINE, "status", "nodeRef")["x-kubernetes-map-type"] == "atomic"
    owners = _at(MACHINE, "spec", "metadata", "ownerReferences")
    assert (owners["x-kubernetes-list-type"], owners["x-kubernetes-list-map-keys"]) == ("map", ["uid"])


def test_a_machinehealthcheck_requires_nothing_openshifts_does_not() -> None:
    assert "spec" not in MHC.get("required", [])
    assert "required" not in _at(MHC, "spec")
    assert "required" not in _at(MHC, "spec", "unhealthyConditions", "[]")
    assert _at(MHC, "spec", "unhealthyConditions")["minItems"] == 1
    assert "required" not in _at(MHC, "status", "conditions", "[]")
    assert "x-kubernetes-list-type" not in _at(MHC, "status", "conditions")


def test_a_machinehealthcheck_has_openshifts_fields_defaults_and_no_unknown_ones() -> None:
    spec, status = _at(MHC, "spec"), _at(MHC, "status")
    assert set(spec["properties"]) == {
        "maxUnhealthy",
        "nodeStartupTimeout",
        "remediationTemplate",
        "selector",
        "unhealthyConditions",
    }
    assert set(status["properties"]) == {
        "conditions",
        "currentHealthy",
        "expectedMachines",
        "remediationsAllowed",
    }
    assert spec["properties"]["maxUnhealthy"]["default"] == "100%"
    assert spec["properties"]["nodeStartupTimeout"]["default"] == "10m"
    assert PRESERVE not in spec and PRESERVE not in status
