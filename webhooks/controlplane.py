"""Admission rules for ControlPlane: validation the schema cannot express, and defaulting.

The rules (each one function, below unless another module is named; each message in kube's
field-error form):

* ``spec.replicas`` is at least 1 and, for stacked etcd, odd (1, 3, 5, 7): an even member count
  tolerates no more failures than the odd count below it and costs a vote. With
  ``spec.etcd.external`` any count ≥ 1 is fine. Above 7 (stacked) the request passes with a warning.
* ``spec.strategy.rollingUpdate.maxSurge`` is 0 or 1; 0 (delete before replacing) needs ≥ 3 replicas.
* failure-domain names are DNS-1123 labels and unique.
* ``spec.selector`` is well formed and not empty, and matches ``spec.template.metadata.labels``.
* ``spec.selector`` *requires* the control-plane role label
  ``machine.openshift.io/cluster-api-machine-role: master``, and the template's labels carry it
  (:mod:`webhooks.controlplane_selector`: the operator sees what it manages).
* ``spec.selector`` and ``spec.etcd.external`` never change after creation.
* ``spec.state`` is Active or Inactive and never goes from Active back to Inactive; an Active
  ControlPlane created over existing Machines (or an Inactive one made Active) must have as many
  replicas as there are such Machines, none of them controlled by another controller (another
  ControlPlane's Machines are never adopted), and each in a failure domain it lists (else it would
  replace them at once): :mod:`webhooks.adoption`.
* The same replica rules apply to ``controlplanes/scale`` (``kubectl scale --replicas 4``).

Pure functions do the work and return ``(errors, warnings)``, so they are tested without a server:

>>> from webhooks.field import invalid_message
>>> template = {"spec": {"providerSpec": {"value": {}}}}
>>> obj = {"apiVersion": "controlplane.cpo.dev/v1alpha1", "kind": "ControlPlane",
...        "metadata": {"name": "cluster"}, "spec": {"replicas": 4, "template": template}}
>>> default_controlplane(obj)
>>> errors, warnings = validate_controlplane_create(obj)
>>> if errors:
...     print(invalid_message("ControlPlane.controlplane.cpo.dev", "cluster", errors))
ControlPlane.controlplane.cpo.dev "cluster" is invalid: spec.replicas: Invalid value: 4:
must be an odd number (1, 3, 5, 7) for a stacked etcd control plane

:mod:`webhooks.controlplane_admission` wraps them in the webhook server's ``CustomValidator`` /
``CustomDefaulter`` contracts (:class:`~webhooks.controlplane_admission.ControlPlaneValidator`,
:class:`~webhooks.controlplane_admission.ControlPlaneDefaulter`), with what a write to the scale
subresource needs besides the Scale.

Updates are *ratcheted*: an update that leaves ``spec`` as it was (labels, finalizers, an object
being deleted) is never refused for rules the stored object already broke — otherwise an object
created before this webhook was installed could never lose its finalizer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from api.controlplane import DEFAULT_SELECTOR_LABELS, DEFAULT_STATE
from api.quorum import MIN_REPLICAS_FOR_NO_SURGE, quorum

from .adoption import state_errors, state_transition_errors
from .controlplane_selector import normalized_selector, ratchet_role_errors, selector_errors
from .field import FieldError, duplicate, invalid, not_supported, required

MAX_RECOMMENDED_REPLICAS = 7
STRATEGY_TYPES = ("RollingUpdate", "OnDelete")
MAX_SURGE_VALUES = (0, 1)

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)

Result = tuple[list[FieldError], list[str]]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_external(spec: Mapping[str, Any]) -> bool:
    return _mapping(spec.get("etcd")).get("external") is True


def _strategy_type(spec: Mapping[str, Any]) -> Any:
    return _mapping(spec.get("strategy")).get("type", "RollingUpdate")


def _max_surge(spec: Mapping[str, Any]) -> Any:
    return _mapping(_mapping(spec.get("strategy")).get("rollingUpdate")).get("maxSurge", 1)


# ------------------------------------------------------------------------------------ the rules


def replica_errors(replicas: Any, external: bool, field: str = "spec.replicas") -> list[FieldError]:
    """At least 1; odd unless etcd is external. Shared by the object and its scale subresource."""
    if not _is_int(replicas):
        return [invalid(field, replicas, "must be an integer")]
    if replicas < 1:
        if external:
            return [invalid(field, replicas, "must be at least 1")]
        return [
            invalid(
                field, replicas, "must be at least 1 and odd (1, 3, 5, 7) for a stacked etcd control plane"
            )
        ]
    if not external and replicas % 2 == 0:
        return [
            invalid(field, replicas, "must be an odd number (1, 3, 5, 7) for a stacked etcd control plane")
        ]
    return []


def replica_warnings(replicas: Any, external: bool, field: str = "spec.replicas") -> list[str]:
    """A warning above 7 stacked members: every write then waits for more members to agree."""
    if external or not _is_int(replicas) or replicas <= MAX_RECOMMENDED_REPLICAS:
        return []
    return [
        f"{field}: {replicas} is more than the recommended {MAX_RECOMMENDED_REPLICAS} etcd members: "
        f"every write must reach {quorum(replicas)} of them, which slows etcd down; "
        "3 or 5 is the usual choice"
    ]


def max_surge_errors(max_surge: Any, strategy_type: Any, replicas: Any) -> list[FieldError]:
    """maxSurge is 0 or 1; with RollingUpdate, 0 needs at least
    :data:`~api.quorum.MIN_REPLICAS_FOR_NO_SURGE` replicas."""
    field = "spec.strategy.rollingUpdate.maxSurge"
    if not _is_int(max_surge) or max_surge not in MAX_SURGE_VALUES:
        return [not_supported(field, max_surge, MAX_SURGE_VALUES)]
    least = MIN_REPLICAS_FOR_NO_SURGE
    if max_surge == 0 and strategy_type == "RollingUpdate" and _is_int(replicas) and replicas < least:
        return [
            invalid(
                field,
                0,
                f"must be 1 when spec.replicas is less than {least} (spec.replicas is {replicas}): "
                "with maxSurge 0 a machine is deleted before its replacement exists, which loses "
                f"quorum below {least} members",
            )
        ]
    return []


def strategy_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    strategy = spec.get("strategy")
    if strategy is None:
        return []
    if not isinstance(strategy, Mapping):
        return [invalid("spec.strategy", strategy, "must be an object with type and rollingUpdate")]
    errors: list[FieldError] = []
    strategy_type = strategy.get("type", "RollingUpdate")
    if strategy_type not in STRATEGY_TYPES:
        errors.append(not_supported("spec.strategy.type", strategy_type, STRATEGY_TYPES))
    rolling = strategy.get("rollingUpdate")
    if rolling is not None and not isinstance(rolling, Mapping):
        return [*errors, invalid("spec.strategy.rollingUpdate", rolling, "must be an object with maxSurge")]
    return errors + max_surge_errors(_max_surge(spec), strategy_type, spec.get("replicas", 1))


def failure_domain_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """Each name a DNS-1123 label (it becomes a label value), and no name twice."""
    domains = spec.get("failureDomains")
    if domains is None:
        return []
    if not isinstance(domains, list):
        return [invalid("spec.failureDomains", domains, "must be a list of {name, providerSpec}")]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, domain in enumerate(domains):
        field = f"spec.failureDomains[{index}].name"
        name = _mapping(domain).get("name")
        if name is None or name == "":
            errors.append(required(field))
            continue
        if not isinstance(name, str):
            errors.append(invalid(field, name, "must be a string"))
            continue
        if len(name) > 63:
            errors.append(invalid(field, name, "must be no more than 63 characters"))
        if not _DNS1123_LABEL.match(name):
            errors.append(invalid(field, name, _DNS1123_LABEL_MESSAGE))
        if name in seen:
            errors.append(duplicate(field, name))
        seen.add(name)
    return errors


def etcd_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    etcd = spec.get("etcd")
    if etcd is None:
        return []
    if not isinstance(etcd, Mapping):
        return [invalid("spec.etcd", etcd, "must be an object with endpoints, tlsSecretRef or external")]
    external = etcd.get("external", False)
    if not isinstance(external, bool):
        return [invalid("spec.etcd.external", external, "must be true or false")]
    return []


def _spec_result(spec: Mapping[str, Any]) -> Result:
    external = _is_external(spec)
    replicas = spec.get("replicas", 1)
    errors = replica_errors(replicas, external)
    errors += strategy_errors(spec)
    errors += failure_domain_errors(spec)
    errors += selector_errors(spec)
    errors += etcd_errors(spec)
    errors += state_errors(spec)
    if spec.get("template") is None:
        errors.append(required("spec.template"))
    return errors, replica_warnings(replicas, external)


def validate_controlplane_create(obj: Mapping[str, Any]) -> Result:
    """Errors and warnings for a new ControlPlane (the wire form, already defaulted)."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return [required("spec")] if spec is None else [invalid("spec", spec, "must be an object")], []
    return _spec_result(spec)


def immutable_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[FieldError]:
    """spec.selector and spec.etcd.external keep their values from creation."""
    errors: list[FieldError] = []
    if normalized_selector(old_spec) != normalized_selector(new_spec):
        errors.append(invalid("spec.selector", new_spec.get("selector"), "field is immutable"))
    if _is_external(old_spec) != _is_external(new_spec):
        errors.append(invalid("spec.etcd.external", _is_external(new_spec), "field is immutable"))
    return errors


def validate_controlplane_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Result:
    """Errors and warnings for an update; an unchanged spec is always accepted (ratcheting)."""
    old_spec, new_spec = old.get("spec"), new.get("spec")
    if isinstance(old_spec, Mapping) and new_spec == old_spec:
        return [], []
    errors, warnings = validate_controlplane_create(new)
    if isinstance(old_spec, Mapping) and isinstance(new_spec, Mapping):
        errors = immutable_errors(old_spec, new_spec) + state_transition_errors(old_spec, new_spec) + errors
        errors, warnings = ratchet_role_errors(old_spec, new_spec, errors, warnings)
    return errors, warnings


def scale_replicas(scale: Mapping[str, Any]) -> Any:
    """``spec.replicas`` of an ``autoscaling/v1`` Scale; absent means 0 (Go omits a zero int32)."""
    return _mapping(scale.get("spec")).get("replicas", 0)


def scale_needs_controlplane(scale: Mapping[str, Any]) -> bool:
    """Whether the verdict on this Scale depends on the ControlPlane (external etcd, maxSurge)."""
    replicas = scale_replicas(scale)
    return _is_int(replicas) and replicas >= 1 and (replicas % 2 == 0 or replicas < MIN_REPLICAS_FOR_NO_SURGE)


def validate_controlplane_scale(
    scale: Mapping[str, Any],
    controlplane: Mapping[str, Any] | None,
    old_scale: Mapping[str, Any] | None = None,
) -> Result:
    """Errors and warnings for a write to ``controlplanes/scale``.

    ``controlplane`` is the stored object (for ``spec.etcd.external`` and the strategy), or None
    when unknown, in which case the stacked-etcd rules apply. A Scale that keeps the replica count
    of ``old_scale`` is accepted as it is.
    """
    replicas = scale_replicas(scale)
    if old_scale is not None and scale_replicas(old_scale) == replicas:
        return [], []
    spec = _mapping(_mapping(controlplane).get("spec"))
    external = _is_external(spec)
    errors = replica_errors(replicas, external)
    if not errors and controlplane is not None:
        max_surge = _max_surge(spec)
        if _is_int(max_surge) and max_surge in MAX_SURGE_VALUES:
            errors += max_surge_errors(max_surge, _strategy_type(spec), replicas)
    return errors, replica_warnings(replicas, external)


# ------------------------------------------------------------------------------------ defaulting


def default_controlplane(obj: dict[str, Any]) -> None:
    """Fill in the defaults, in place: replicas 1, state Active, the master-role selector,
    RollingUpdate with maxSurge 1, enableAutorepair true, and template labels from the selector
    when there are none.

    Values of the wrong type are left alone for validation to report; nothing here raises.
    """
    spec = obj.get("spec")
    if spec is None:
        spec = obj["spec"] = {}
    if not isinstance(spec, dict):
        return
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("state") is None:
        spec["state"] = DEFAULT_STATE
    if spec.get("selector") is None:
        spec["selector"] = {"matchLabels": dict(DEFAULT_SELECTOR_LABELS)}
    if spec.get("strategy") is None:
        spec["strategy"] = {}
    strategy = spec["strategy"]
    if isinstance(strategy, dict):
        if strategy.get("type") is None:
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            if strategy.get("rollingUpdate") is None:
                strategy["rollingUpdate"] = {}
            rolling = strategy["rollingUpdate"]
            if isinstance(rolling, dict) and rolling.get("maxSurge") is None:
                rolling["maxSurge"] = 1
    if spec.get("enableAutorepair") is None:
        spec["enableAutorepair"] = True
    _default_template_labels(spec)


def _default_template_labels(spec: dict[str, Any]) -> None:
    template, selector = spec.get("template"), spec.get("selector")
    if not isinstance(template, dict) or not isinstance(selector, dict):
        return
    match_labels = selector.get("matchLabels")
    if not isinstance(match_labels, dict) or not match_labels:
        return
    if template.get("metadata") is None:
        template["metadata"] = {}
    metadata = template["metadata"]
    if isinstance(metadata, dict) and not metadata.get("labels"):
        metadata["labels"] = dict(match_labels)
