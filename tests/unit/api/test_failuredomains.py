"""The one reader of a Machine's failure domain (:func:`api.failuredomains.machine_domain`), one
table: the ControlPlane's label, the whole providerSpec, a domain's own fragment, the zone label."""

from __future__ import annotations

from typing import Any

import pytest

from api.controlplane import ControlPlaneSpec
from api.failuredomains import (
    FAILURE_DOMAIN_LABEL,
    ZONE_LABEL,
    domain_provider_spec,
    json_merge_patch,
    machine_domain,
    provider_spec_zone,
)

TEMPLATE = {"kind": "LocalMachineProviderSpec", "size": 1}


def spec(*domains: tuple[str, dict[str, Any]], template: dict[str, Any] | None = None) -> ControlPlaneSpec:
    return ControlPlaneSpec.model_validate(
        {
            "template": {"spec": {"providerSpec": {"value": template or TEMPLATE}}},
            "failureDomains": [{"name": name, "providerSpec": {"value": value}} for name, value in domains],
        }
    )


ZONES = spec(("a", {"zone": "us-1a"}), ("b", {"zone": "us-1b"}), ("c", {"zone": "us-1c"}))
LOCAL = spec(("a", {"failureDomain": "zone-a"}), ("b", {"failureDomain": "zone-b"}))
"""Domains as the local provider's users write them: the zone under ``failureDomain``."""


def machine(value: dict[str, Any] | None = None, **labels: str) -> dict[str, Any]:
    return {"metadata": {"labels": labels}, "spec": {"providerSpec": {"value": value or {}}}}


@pytest.mark.parametrize(
    ("cp", "obj", "expected"),
    [
        pytest.param(
            ZONES,
            machine({**TEMPLATE, "zone": "us-1a"}, **{FAILURE_DOMAIN_LABEL: "b"}),
            "b",
            id="when the ControlPlane's label names a domain it wins over the providerSpec",
        ),
        pytest.param(
            ZONES,
            machine(TEMPLATE, **{FAILURE_DOMAIN_LABEL: "gone"}),
            "gone",
            id="when the label names a domain no longer configured that name is kept (a rebalance moves it)",
        ),
        pytest.param(
            ZONES,
            machine({**TEMPLATE, "zone": "us-1c"}),
            "c",
            id="when the whole providerSpec is the template and a domain's it is that domain",
        ),
        pytest.param(
            ZONES,
            machine({"kind": "Old", "size": 9, "zone": "us-1b"}),
            "b",
            id="when the template changed since adoption the domain's own fragment still names it",
        ),
        pytest.param(
            ZONES,
            machine(TEMPLATE, **{ZONE_LABEL: "us-1b"}),
            "b",
            id="when only the zone label tells the zone a domain naming that zone is it",
        ),
        pytest.param(
            ZONES,
            machine(TEMPLATE, **{ZONE_LABEL: "eu-2a"}),
            None,
            id="when the zone label names a zone no domain names there is no domain (never a raw zone)",
        ),
        pytest.param(
            ZONES,
            machine({**TEMPLATE, "zone": "us-1a"}, **{FAILURE_DOMAIN_LABEL: "a", ZONE_LABEL: "us-1c"}),
            "a",
            id="when the ControlPlane's label is there the provider's zone label is not asked",
        ),
        pytest.param(
            LOCAL,
            machine({"kind": "Old"}, **{ZONE_LABEL: "zone-b"}),
            "b",
            id="when the zone label names the zone a domain's failureDomain names that domain is it",
        ),
        pytest.param(
            ZONES,
            machine({"kind": "Old"}, **{ZONE_LABEL: "b"}),
            None,
            id="when the zone label equals a domain's name but no domain names that zone there is none",
        ),
        pytest.param(
            ZONES,
            machine({**TEMPLATE, "zone": "us-1a"}, **{ZONE_LABEL: "us-1b"}),
            "a",
            id="when the providerSpec fits a domain by its whole value the zone label is not asked",
        ),
        pytest.param(
            ZONES,
            machine({"kind": "Old", "zone": "us-1a"}, **{ZONE_LABEL: "us-1b"}),
            None,
            id="when the providerSpec fits one domain and the zone label another there is none",
        ),
        pytest.param(
            spec(("a", {"zone": "us-1a"}), ("any", {"kind": "LocalMachineProviderSpec"})),
            machine({"kind": "LocalMachineProviderSpec", "size": 2, "zone": "us-1a"}),
            None,
            id="when two domains' fragments both fit there is none",
        ),
        pytest.param(
            spec(),
            machine({**TEMPLATE, "zone": "us-1a"}, **{ZONE_LABEL: "us-1a"}),
            None,
            id="when no domain is configured there is none, whatever zone it is in",
        ),
    ],
)
def test_machine_domain(cp: ControlPlaneSpec, obj: dict[str, Any], expected: str | None) -> None:
    assert machine_domain(cp, obj) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(
            {"failureDomain": "x", "zone": "y"}, "x", id="when failureDomain is set it is read first"
        ),
        pytest.param({"zone": "y"}, "y", id="when only zone is set it is read"),
        pytest.param({"placement": {"availabilityZone": "z"}}, "z", id="when an AWS placement names it"),
        pytest.param({"zone": ""}, None, id="when the zone is empty there is none"),
        pytest.param({"placement": "z"}, None, id="when placement is not an object there is none"),
    ],
)
def test_provider_spec_zone(value: dict[str, Any], expected: str | None) -> None:
    assert provider_spec_zone(value) == expected


def test_a_domain_fragment_is_merged_over_the_template() -> None:
    cp = spec(("a", {"zone": "us-1a", "size": None}))
    assert domain_provider_spec(cp, "a") == {"kind": "LocalMachineProviderSpec", "zone": "us-1a"}
    assert domain_provider_spec(cp, None) == TEMPLATE
    assert json_merge_patch({"a": {"b": 1}}, {"a": {"c": 2}}) == {"a": {"b": 1, "c": 2}}
