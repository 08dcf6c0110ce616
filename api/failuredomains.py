"""A ControlPlane's failure domains: the providerSpec each one gives a Machine, and the one reader
of which configured domain a Machine is in (:func:`machine_domain`).

A failure domain is a name and a providerSpec fragment (``spec.failureDomains[].providerSpec``)
merged over the template's (RFC 7386 JSON merge patch): a Machine created in domain ``zone-a``
carries the template's providerSpec with ``zone-a``'s fragment merged in, and the ControlPlane's
label :data:`FAILURE_DOMAIN_LABEL`. Every controller and the admission webhook read a Machine's
domain through :func:`machine_domain`, so they cannot disagree about where a Machine is.

>>> from api.controlplane import ControlPlaneSpec
>>> spec = ControlPlaneSpec.model_validate({
...     "template": {"spec": {"providerSpec": {"value": {"instanceType": "large"}}}},
...     "failureDomains": [{"name": "a", "providerSpec": {"value": {"zone": "us-1a"}}},
...                        {"name": "b", "providerSpec": {"value": {"zone": "us-1b"}}}],
... })
>>> machine_domain(spec, {"metadata": {"labels": {"machine.openshift.io/zone": "us-1b"}}})
'b'
>>> machine_domain(spec, {"metadata": {"labels": {"machine.openshift.io/zone": "eu-2"}}}) is None
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .controlplane import ControlPlaneSpec

__all__ = [
    "FAILURE_DOMAIN_LABEL",
    "ZONE_KEYS",
    "ZONE_LABEL",
    "domain_names",
    "domain_provider_spec",
    "json_merge_patch",
    "machine_domain",
    "provider_spec_zone",
]

FAILURE_DOMAIN_LABEL: Final = "controlplane.cpo.dev/failure-domain"
"""On each Machine the ControlPlane creates: the name of its failure domain."""
ZONE_LABEL: Final = "machine.openshift.io/zone"
"""The zone a Machine API provider labels its Machines with (machine-api-operator's actuators)."""
ZONE_KEYS: Final = ("failureDomain", "zone", "placement.availabilityZone")
"""Where a providerSpec names its zone (dotted: nested keys), in the order they are read."""


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: ``patch`` merged over ``target`` (null deletes a key, objects merge, the rest replaces)."""
    if not isinstance(patch, Mapping):
        return patch
    merged = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = json_merge_patch(merged.get(key), value)
    return merged


def domain_names(spec: ControlPlaneSpec) -> list[str]:
    """The configured failure domains, in spec order (empty: one implicit domain)."""
    return [domain.name for domain in spec.failure_domains or ()]


def domain_provider_spec(spec: ControlPlaneSpec, domain: str | None) -> Any:
    """The ``providerSpec.value`` a Machine created in ``domain`` gets: the template's with the
    domain's fragment merged over it (the template's alone for None or an unknown domain)."""
    value: Any = dict(spec.template.spec.provider_spec.value or {})
    for candidate in spec.failure_domains or ():
        if candidate.name == domain and candidate.provider_spec is not None:
            value = json_merge_patch(value, candidate.provider_spec.value or {})
    return value


def provider_spec_zone(value: Any) -> str | None:
    """The zone a ``providerSpec.value`` names under :data:`ZONE_KEYS`, or None."""
    for key in ZONE_KEYS:
        found: Any = value
        for part in key.split("."):
            found = found.get(part) if isinstance(found, Mapping) else None
        if isinstance(found, str) and found:
            return found
    return None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def machine_domain(spec: ControlPlaneSpec, machine: Mapping[str, Any]) -> str | None:
    """The configured failure domain ``machine`` is in, or None; read in this order:

    1. the ControlPlane's own label :data:`FAILURE_DOMAIN_LABEL` (on every Machine it creates),
       taken as it is, configured or not (a domain removed from the spec is how a rebalance
       finds the Machines to move);
    2. the configured domain whose whole providerSpec (template and domain merged,
       :func:`domain_provider_spec`) the Machine carries;
    3. the configured domains that fit the Machine: one whose own providerSpec fragment the
       Machine's providerSpec carries (every key it sets, with its value), or one whose fragment
       names (:data:`ZONE_KEYS`) the zone of the Machine's :data:`ZONE_LABEL`. Exactly one must
       fit; two that both fit leave the Machine without a domain.

    A zone is never taken as a domain name by itself: a zone that no configured domain names is
    no domain (reading it as one would make every such Machine's domain "not configured" and
    roll it for ever). This is how the ControlPlaneMachineSet reads a Machine it adopted (no
    label): from its providerSpec's zone fields, mapped onto the configured failure domains; a
    Machine adopted before a template change keeps its domain, because step 3 asks only for the
    domain's own fragment, not the whole template.
    """
    metadata = _mapping(machine.get("metadata"))
    labels = _mapping(metadata.get("labels"))
    if labels.get(FAILURE_DOMAIN_LABEL):
        return str(labels[FAILURE_DOMAIN_LABEL])
    value = _mapping(_mapping(_mapping(machine.get("spec")).get("providerSpec")).get("value"))
    for name in domain_names(spec):
        if domain_provider_spec(spec, name) == value:
            return name
    zone = labels.get(ZONE_LABEL) or None
    fitting: set[str] = set()
    for domain in spec.failure_domains or ():
        fragment = domain.provider_spec.value if domain.provider_spec is not None else None
        if not fragment:
            continue
        if json_merge_patch(value, fragment) == value or (
            zone is not None and provider_spec_zone(fragment) == zone
        ):
            fitting.add(domain.name)
    return next(iter(fitting)) if len(fitting) == 1 else None
