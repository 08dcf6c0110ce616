"""The region, zone and instance-type labels the local provider puts on a Machine
(``instance_labels``, ``missing_labels``), read from its providerSpec."""

from __future__ import annotations

from typing import Any

import pytest

from providers.localmachine.reconciler import (
    LABEL_MACHINE_INSTANCE_TYPE,
    LABEL_MACHINE_REGION,
    LABEL_MACHINE_ZONE,
    _InvalidConfiguration,
    instance_labels,
    missing_labels,
)

LOCAL = {LABEL_MACHINE_REGION: "local", LABEL_MACHINE_INSTANCE_TYPE: "local"}
"""The labels of a Machine whose providerSpec names neither region nor instance type."""


def machine(labels: dict[str, str] | None = None, **value: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels or {}},
        "spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", **value}}},
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(
            {},
            LOCAL,
            id="when the providerSpec names nothing region and type are local and there is no zone",
        ),
        pytest.param(
            {"region": "lab-1", "instanceType": "etcd-small", "failureDomain": "zone-a"},
            {
                LABEL_MACHINE_REGION: "lab-1",
                LABEL_MACHINE_INSTANCE_TYPE: "etcd-small",
                LABEL_MACHINE_ZONE: "zone-a",
            },
            id="when the providerSpec names them each label takes its field",
        ),
        pytest.param(
            {"zone": "zone-b"},
            {**LOCAL, LABEL_MACHINE_ZONE: "zone-b"},
            id="when only zone names the zone it is the zone label",
        ),
        pytest.param(
            {"failureDomain": "zone-a", "zone": "zone-b"},
            {**LOCAL, LABEL_MACHINE_ZONE: "zone-a"},
            id="when failureDomain and zone are both set failureDomain wins as for the Node's zone",
        ),
        pytest.param(
            {"region": "", "instanceType": ""},
            LOCAL,
            id="when region and instanceType are empty the defaults stand",
        ),
    ],
)
def test_instance_labels(value: dict[str, Any], expected: dict[str, str]) -> None:
    assert instance_labels(machine(**value)) == expected


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"region": "us east"}, id="when the region has a space"),
        pytest.param({"instanceType": 4}, id="when the instance type is not a string"),
        pytest.param({"failureDomain": "-a"}, id="when the zone starts with a dash"),
    ],
)
def test_a_value_that_cannot_be_a_label_is_an_invalid_configuration(value: dict[str, Any]) -> None:
    with pytest.raises(_InvalidConfiguration, match=r"cannot be a (Node )?label value"):
        instance_labels(machine(**value))


def test_only_the_labels_missing_or_different_are_patched() -> None:
    wanted = {LABEL_MACHINE_REGION: "local", LABEL_MACHINE_ZONE: "zone-a"}
    held = machine({LABEL_MACHINE_REGION: "local", LABEL_MACHINE_ZONE: "zone-b", "other": "x"})
    assert missing_labels(held, wanted) == {LABEL_MACHINE_ZONE: "zone-a"}
    assert missing_labels(machine(dict(wanted)), wanted) == {}
