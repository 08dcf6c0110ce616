"""Admission rules for ControlPlane: validation the schema cannot express, and defaulting.

The rules (each one function below, each message in kube's field-error form):

* ``spec.replicas`` is at least 1 and, for stacked etcd, odd (1, 3, 5, 7): an even member count
  tolerates no more failures than the odd count below it and costs a vote. With
  ``spec.etcd.external`` any count ≥ 1 is fine. Above 7 (stacked) the request passes with a warning.
* ``spec.strategy.rollingUpdate.maxSurge`` is 0 or 1; 0 (delete before replacing) needs ≥ 3 replicas.
* failure-domain names are DNS-1123 labels and unique.
* ``spec.selector`` is well formed and not empty, and matches ``spec.template.metadata.labels``.
* ``spec.selector`` *requires* the control-plane role label
  ``machine.openshift.io/cluster-api-machine-role: master``, and the template's labels carry it
  (see "The operator sees what it manages" below).
* ``spec.selector`` and ``spec.etcd.external`` never change after creation.
* ``spec.state`` is Active or Inactive and never goes from Active back to Inactive; an Active
  ControlPlane created over existing Machines (or an Inactive one made Active) must have as many
  replicas as there are such Machines, none of them controlled by another controller (another
  ControlPlane's Machines are never adopted): :mod:`webhooks.adoption`.
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

:class:`ControlPlaneValidator` and :class:`ControlPlaneDefaulter` wrap them in the webhook
server's ``CustomValidator`` / ``CustomDefaulter`` contracts; a refusal is :class:`Denied` with
code 422 and kube's Invalid message, e.g.
``ControlPlane.controlplane.cpo.dev "cluster" is invalid: spec.replicas: Invalid value: 4: must be
an odd number (1, 3, 5, 7) for a stacked etcd control plane``.

Updates are *ratcheted*: an update that leaves ``spec`` as it was (labels, finalizers, an object
being deleted) is never refused for rules the stored object already broke — otherwise an object
created before this webhook was installed could never lose its finalizer.

The scale subresource
---------------------
For ``PUT``/``PATCH …/controlplanes/<name>/scale`` the API server sends an ``autoscaling/v1``
``Scale`` as ``object`` and ``oldObject`` (see the reference transcript
``16-wh-scale-put.json``) and calls only webhooks whose rules list ``controlplanes/scale``; the
webhook for ``controlplanes`` is *not* called when the new replica count is written through. So
the scale request itself must be checked, and whether etcd is external (and which maxSurge is in
force) is not in it. The validator therefore takes a lookup function (:data:`ControlPlaneGetter`,
typically backed by the manager's cache: :func:`getter_from_reader`). Reading a cache is safe
here because ``spec.etcd.external`` is immutable. The lookup is made only when the answer
depends on it (an even count, or fewer than 3); when the ControlPlane cannot be found, or no
lookup was given, the stacked-etcd rules apply: refusing an even count for an external-etcd
ControlPlane can be worked around by editing ``spec.replicas``, which the full validation checks.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from api.controlplane import DEFAULT_SELECTOR_LABELS, DEFAULT_STATE, GROUP, KIND, MASTER_ROLE_LABEL
from api.selector import selector_matches, selector_problems, selector_string
from runtime.jsoncodec import JSON

from .adoption import (
    MachineLister,
    activates,
    adoption_errors,
    controlled_elsewhere,
    controlled_elsewhere_errors,
    existing_machines,
    state_errors,
    state_transition_errors,
)
from .field import FieldError, duplicate, invalid, invalid_message, not_supported, required

CONTROLPLANE_GROUP_KIND = f"{KIND}.{GROUP}"
SCALE_GROUP_KIND = "Scale.autoscaling"
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

MASTER_ROLE = DEFAULT_SELECTOR_LABELS[MASTER_ROLE_LABEL]
_ADD_ROLE = f'add matchLabels {{"{MASTER_ROLE_LABEL}": "{MASTER_ROLE}"}}'
_ADD_ROLE_LABEL = f'add the label "{MASTER_ROLE_LABEL}": "{MASTER_ROLE}"'


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
        f"every write must reach {replicas // 2 + 1} of them, which slows etcd down; "
        "3 or 5 is the usual choice"
    ]


def max_surge_errors(max_surge: Any, strategy_type: Any, replicas: Any) -> list[FieldError]:
    """maxSurge is 0 or 1; with RollingUpdate, 0 needs at least 3 replicas."""
    field = "spec.strategy.rollingUpdate.maxSurge"
    if not _is_int(max_surge) or max_surge not in MAX_SURGE_VALUES:
        return [not_supported(field, max_surge, MAX_SURGE_VALUES)]
    if max_surge == 0 and strategy_type == "RollingUpdate" and _is_int(replicas) and replicas < 3:
        return [
            invalid(
                field,
                0,
                f"must be 1 when spec.replicas is less than 3 (spec.replicas is {replicas}): with maxSurge 0 "
                f"a machine is deleted before its replacement exists, which loses quorum below 3 members",
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


def selector_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """Well formed, not empty, and matching the template's labels."""
    selector = spec.get("selector")
    if selector is None:
        return [required("spec.selector")]
    if not isinstance(selector, Mapping):
        return [invalid("spec.selector", selector, "must be a label selector object")]
    problems = selector_problems(selector)
    if problems:
        return [invalid("spec.selector", selector, problem) for problem in problems]
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return [
            invalid(
                "spec.selector",
                selector,
                "must not be empty: an empty selector would adopt every Machine in the namespace",
            )
        ]
    errors = selector_role_errors(selector)
    template = spec.get("template")
    if not isinstance(template, Mapping):
        return errors  # a missing template is reported on its own; no labels to compare yet
    labels = _mapping(template.get("metadata")).get("labels") or {}
    if not isinstance(labels, Mapping):
        labels_error = invalid(
            "spec.template.metadata.labels", labels, "must map label keys to string values"
        )
        return [*errors, labels_error]
    errors += template_role_errors(labels)
    # Compared with the role label in place, so a template short of it alone is reported once.
    if not selector_matches(selector, {**labels, MASTER_ROLE_LABEL: MASTER_ROLE}):
        errors.append(
            invalid(
                "spec.template.metadata.labels",
                dict(labels),
                f'must match spec.selector "{selector_string(selector)}", or the '
                f"machines created would not be owned by this control plane",
            )
        )
    return errors


def selector_requires_role(selector: Mapping[str, Any]) -> bool:
    """Whether every Machine ``selector`` matches carries ``role=master``: ``matchLabels`` says so,
    or a ``matchExpressions`` entry is ``In`` with ``master`` as its only value."""
    if _mapping(selector.get("matchLabels")).get(MASTER_ROLE_LABEL) == MASTER_ROLE:
        return True
    expressions = selector.get("matchExpressions") or []
    return any(
        isinstance(e, Mapping)
        and e.get("key") == MASTER_ROLE_LABEL
        and e.get("operator") == "In"
        and isinstance(e.get("values"), list)
        and len(e["values"]) > 0
        and all(value == MASTER_ROLE for value in e["values"])
        for e in (expressions if isinstance(expressions, list) else [])
    )


def selector_role_errors(selector: Mapping[str, Any]) -> list[FieldError]:
    """The selector requires the control-plane role label (see the module docstring: the
    operator caches no other Machine, so it could not see one the selector let in)."""
    if selector_requires_role(selector):
        return []
    return [
        invalid(
            "spec.selector",
            dict(selector),
            f"must require the control-plane role label, or the operator cannot see the Machines "
            f"it creates: {_ADD_ROLE}",
        )
    ]


def template_role_errors(labels: Mapping[str, Any]) -> list[FieldError]:
    """The template's labels carry ``role=master``: the Machines created must be in the
    operator's cache (ControlPlaneMachineSet's rule on its template)."""
    if labels.get(MASTER_ROLE_LABEL) == MASTER_ROLE:
        return []
    return [
        invalid(
            "spec.template.metadata.labels",
            dict(labels),
            f"must carry the control-plane role label, or the operator cannot see the Machines "
            f"created from it: {_ADD_ROLE_LABEL}",
        )
    ]


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


def _normalized_selector(spec: Mapping[str, Any]) -> Any:
    selector = spec.get("selector")
    if selector is None:
        # Absent means the default: the defaulting webhook or the CRD fills it in identically.
        return {"matchLabels": dict(DEFAULT_SELECTOR_LABELS), "matchExpressions": []}
    if not isinstance(selector, Mapping):
        return selector
    labels, expressions = selector.get("matchLabels") or {}, selector.get("matchExpressions") or []
    if not isinstance(labels, Mapping) or not isinstance(expressions, list):
        return selector  # malformed: compared as written (and reported by selector_errors)
    return {"matchLabels": dict(labels), "matchExpressions": list(expressions)}


def immutable_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[FieldError]:
    """spec.selector and spec.etcd.external keep their values from creation."""
    errors: list[FieldError] = []
    if _normalized_selector(old_spec) != _normalized_selector(new_spec):
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
        errors, warnings = _ratchet_role(old_spec, new_spec, errors, warnings)
    return errors, warnings


def _ratchet_role(
    old_spec: Mapping[str, Any], new_spec: Mapping[str, Any], errors: list[FieldError], warnings: list[str]
) -> Result:
    """A selector stored before the role rule existed cannot be changed (it is immutable), so
    its role errors would refuse every later edit: they become a warning saying what to do."""
    selector = old_spec.get("selector")
    if not isinstance(selector, Mapping) or selector_requires_role(selector):
        return errors, warnings
    if _normalized_selector(old_spec) != _normalized_selector(new_spec):
        return errors, warnings
    role_errors = {str(e) for e in selector_role_errors(selector)}
    labels = _mapping(_mapping(_mapping(new_spec.get("template")).get("metadata")).get("labels"))
    role_errors |= {str(e) for e in template_role_errors(labels)}
    kept = [e for e in errors if str(e) not in role_errors]
    if len(kept) == len(errors):
        return errors, warnings
    warning = (
        f"spec.selector does not require the control-plane role label {MASTER_ROLE_LABEL}={MASTER_ROLE}: "
        "the operator cannot see Machines without it; delete this ControlPlane (its Machines stay) "
        f"and create it again with a selector that does ({_ADD_ROLE})"
    )
    return kept, [*warnings, warning]


def scale_replicas(scale: Mapping[str, Any]) -> Any:
    """``spec.replicas`` of an ``autoscaling/v1`` Scale; absent means 0 (Go omits a zero int32)."""
    return _mapping(scale.get("spec")).get("replicas", 0)


def scale_needs_controlplane(scale: Mapping[str, Any]) -> bool:
    """Whether the verdict on this Scale depends on the ControlPlane (external etcd, maxSurge)."""
    replicas = scale_replicas(scale)
    return _is_int(replicas) and replicas >= 1 and (replicas % 2 == 0 or replicas < 3)


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


# ------------------------------------------------------------------------------ webhook adapters


class AdmissionRequestLike(Protocol):
    """The parts of ``runtime.webhook.AdmissionRequest`` these adapters read."""

    @property
    def sub_resource(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def namespace(self) -> str: ...


ControlPlaneGetter = Callable[[str, str], Awaitable[JSON | None]]
"""``async (namespace, name) -> ControlPlane dict or None when it does not exist``."""


class Reader(Protocol):
    """Anything with the client's ``get`` (the runtime Client, Cache or CachedClient)."""

    async def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> JSON: ...


def getter_from_reader(reader: Reader) -> ControlPlaneGetter:
    """A :data:`ControlPlaneGetter` over a cache or client; NotFound becomes None."""
    from runtime.errors import NotFound

    async def get(namespace: str, name: str) -> JSON | None:
        try:
            return await reader.get(f"{GROUP}/v1alpha1", KIND, name, namespace)
        except NotFound:
            return None

    return get


def _denied(message: str, warnings: list[str]) -> Exception:
    from runtime.webhook import Denied

    return Denied(message, 422, warnings=warnings)


class ControlPlaneValidator:
    """``CustomValidator`` for ControlPlane and its scale subresource; refusals are 422 Invalid.

    ``list_machines`` reads the existing Machines for the adoption rule (:mod:`webhooks.adoption`);
    without it (tests of other rules) that rule is not checked.
    """

    def __init__(
        self, get_controlplane: ControlPlaneGetter | None = None, list_machines: MachineLister | None = None
    ) -> None:
        self.get_controlplane = get_controlplane
        self.list_machines = list_machines

    async def validate_create(self, obj: JSON, request: AdmissionRequestLike) -> list[str]:
        errors, warnings = validate_controlplane_create(obj)
        errors += await self._adoption_errors(None, obj, request, errors)
        return self._verdict(CONTROLPLANE_GROUP_KIND, _name(obj, request), errors, warnings)

    async def _adoption_errors(
        self, old: JSON | None, new: JSON, request: AdmissionRequestLike, errors: list[FieldError]
    ) -> list[FieldError]:
        """The adoption rules, checked only on a request otherwise valid (its selector well formed)
        that makes the ControlPlane Active (:func:`webhooks.adoption.activates`): no matched Machine
        controlled by another controller (:func:`webhooks.adoption.controlled_elsewhere_errors`),
        then replicas equal to the matched Machines (:func:`webhooks.adoption.adoption_errors`)."""
        spec = _mapping(new.get("spec"))
        old_spec = None if old is None else _mapping(old.get("spec"))
        if self.list_machines is None or errors or not activates(old_spec, spec):
            return []
        metadata = _mapping(new.get("metadata"))
        namespace = metadata.get("namespace") or request.namespace
        machines = await self.list_machines(namespace)
        existing = existing_machines(spec, machines)
        foreign = controlled_elsewhere(spec, machines, metadata.get("uid") or None)
        if foreign:
            adoptable = len(existing) - len(foreign)
            return controlled_elsewhere_errors(spec, foreign, adoptable, activating=old is not None)
        return adoption_errors(spec, existing, activating=old is not None)

    async def validate_update(self, old: JSON, new: JSON, request: AdmissionRequestLike) -> list[str]:
        if request.sub_resource == "scale" or new.get("kind") == "Scale":
            controlplane = None
            if self.get_controlplane is not None and scale_needs_controlplane(new):
                controlplane = await self.get_controlplane(request.namespace, _name(new, request))
            errors, warnings = validate_controlplane_scale(new, controlplane, old)
            return self._verdict(SCALE_GROUP_KIND, _name(new, request), errors, warnings)
        errors, warnings = validate_controlplane_update(old, new)
        errors += await self._adoption_errors(old, new, request, errors)
        return self._verdict(CONTROLPLANE_GROUP_KIND, _name(new, request), errors, warnings)

    async def validate_delete(self, obj: JSON, request: AdmissionRequestLike) -> list[str]:
        # Deleting releases the machines (the controller drops its ownerReferences): always allowed.
        return []

    @staticmethod
    def _verdict(kind_group: str, name: str, errors: list[FieldError], warnings: list[str]) -> list[str]:
        if errors:
            raise _denied(invalid_message(kind_group, name, errors), warnings)
        return warnings


class ControlPlaneDefaulter:
    """``CustomDefaulter`` for ControlPlane: :func:`default_controlplane` on the main resource only."""

    async def default(self, obj: JSON, request: AdmissionRequestLike) -> None:
        if request.sub_resource:
            return  # a Scale or status write carries no spec to default
        default_controlplane(obj)


def _name(obj: Mapping[str, Any], request: AdmissionRequestLike) -> str:
    name = _mapping(obj.get("metadata")).get("name")
    return name if isinstance(name, str) and name else request.name
