"""ControlPlane objects and specs for the controllers' rule tests: one builder each, so that two
tables never disagree about what a plain ControlPlane is."""

from __future__ import annotations

from typing import Any

from api.controlplane import ControlPlane, ControlPlaneSpec

CONTROLPLANE: dict[str, Any] = {
    "apiVersion": "controlplane.cpo.dev/v1alpha1",
    "kind": "ControlPlane",
    "metadata": {"name": "cluster", "namespace": "ns", "uid": "u-1"},
    "spec": {"template": {"spec": {"providerSpec": {"value": {}}}}},
}
"""A ControlPlane as the API stores it: defaults only, an empty providerSpec."""


def spec_with(**fields: Any) -> ControlPlaneSpec:
    """:data:`CONTROLPLANE`'s spec with ``fields`` (wire names) set."""
    return ControlPlane.from_dict({**CONTROLPLANE, "spec": {**CONTROLPLANE["spec"], **fields}}).spec


def local_spec(**fields: Any) -> ControlPlaneSpec:
    """3 replicas of the local provider's Machines over failure domains ``a`` and ``b``, with
    ``fields`` (wire names) set."""
    raw: dict[str, Any] = {
        "replicas": 3,
        "template": {"spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "size": 1}}}},
        "failureDomains": [{"name": "a"}, {"name": "b"}],
        **fields,
    }
    return ControlPlaneSpec.model_validate(raw)
