"""Admission rules for MachineHealthCheck: what the controller cannot act on is refused up front.

The rules (each one function below, each message in kube's field-error form):

* ``spec.selector`` is a well-formed label selector (an empty one is allowed, with a warning: it
  checks every Machine of the namespace).
* ``spec.unhealthyConditions`` has at least one entry; each has a ``type``, a ``status`` of
  ``True``, ``False`` or ``Unknown``, and a ``timeout`` that is a duration (``300s``, ``5m``).
* ``spec.nodeStartupTimeout`` is a duration, or ``0`` to turn the check off.
* ``spec.maxUnhealthy`` is a count ≥ 0 (``2`` or ``"2"``) or a percentage from ``0%`` to
  ``100%``.
* ``spec.remediationTemplate``, when set, names an ``apiVersion``, a ``kind`` and a ``name``, in
  the MachineHealthCheck's own namespace.

Pure functions do the work and return ``(errors, warnings)``::

    errors, warnings = validate_machinehealthcheck_create(obj)

:class:`MachineHealthCheckValidator` wraps them in the webhook server's ``CustomValidator``
contract; a refusal is 422 with kube's Invalid message, e.g.
``MachineHealthCheck.machine.openshift.io "masters" is invalid: spec.maxUnhealthy: Invalid value:
"foo%50": must be a count (e.g. 2) or a percentage from 0% to 100% (e.g. "40%")``.

Only MachineHealthChecks in the operator's scope are judged: those labelled
:data:`api.controlplane.MHC_SCOPE_LABEL` (:func:`api.controlplane.in_health_check_scope`). The
webhook configuration's ``objectSelector`` (``config/machinehealthcheck``) already keeps the API
server from calling for any other; should a call come anyway (a configuration edited by hand), a
MachineHealthCheck whose stored form would lack the label is accepted unjudged, since the
operator's controller will not act on it either.

Updates are ratcheted as for ControlPlane: an update that leaves ``spec`` as it was is accepted,
so an object stored before the webhook was installed can still lose its finalizers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

from api.controlplane import in_health_check_scope
from api.machine import GROUP
from api.meta import parse_duration
from api.selector import selector_problems
from runtime.jsoncodec import JSON

from .field import FieldError, invalid, invalid_message, not_supported, required

KIND = "MachineHealthCheck"
MACHINEHEALTHCHECK_GROUP_KIND = f"{KIND}.{GROUP}"
CONDITION_STATUSES = ("True", "False", "Unknown")
_COUNT = re.compile(r"^[0-9]+$")
_PERCENT = re.compile(r"^([0-9]+)%$")
_MAX_UNHEALTHY_DETAIL = 'must be a count (e.g. 2) or a percentage from 0% to 100% (e.g. "40%")'

Result = tuple[list[FieldError], list[str]]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _duration_errors(field: str, value: Any, allow_zero: bool) -> list[FieldError]:
    if not isinstance(value, str):
        return [invalid(field, value, 'must be a duration such as "300s" or "5m"')]
    if allow_zero and value == "0":
        return []
    try:
        parse_duration(value)
    except ValueError:
        detail = 'must be a duration such as "300s" or "5m"' + (', or "0" to disable' if allow_zero else "")
        return [invalid(field, value, detail)]
    if value == "0":
        return [invalid(field, value, 'must be a duration such as "300s" or "5m"')]
    return []


# ------------------------------------------------------------------------------------ the rules


def selector_errors(spec: Mapping[str, Any]) -> Result:
    """A well-formed label selector; empty is allowed with a warning."""
    selector = spec.get("selector")
    if selector is None:
        return [required("spec.selector", "use {} to check every Machine of the namespace")], []
    if not isinstance(selector, Mapping):
        return [invalid("spec.selector", selector, "must be a label selector object")], []
    problems = selector_problems(selector)
    if problems:
        return [invalid("spec.selector", dict(selector), problem) for problem in problems], []
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return [], ["spec.selector is empty: every Machine of the namespace is checked and may be remediated"]
    return [], []


def unhealthy_condition_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """At least one entry; each with a type, a status True/False/Unknown and a duration timeout."""
    conditions = spec.get("unhealthyConditions")
    field = "spec.unhealthyConditions"
    if conditions is None or conditions == []:
        return [
            required(
                field,
                'at least one Node condition is needed, e.g. {type: Ready, status: "False", timeout: 300s}',
            )
        ]
    if not isinstance(conditions, list):
        return [invalid(field, conditions, "must be a list of {type, status, timeout}")]
    errors: list[FieldError] = []
    for index, entry in enumerate(conditions):
        where = f"{field}[{index}]"
        if not isinstance(entry, Mapping):
            errors.append(invalid(where, entry, "must be an object with type, status and timeout"))
            continue
        if not isinstance(entry.get("type"), str) or not entry.get("type"):
            errors.append(required(f"{where}.type", "the Node condition type, e.g. Ready"))
        status = entry.get("status")
        if status not in CONDITION_STATUSES:
            errors.append(not_supported(f"{where}.status", status, CONDITION_STATUSES))
        if entry.get("timeout") is None:
            errors.append(required(f"{where}.timeout", "how long the condition must hold, e.g. 300s"))
        else:
            errors += _duration_errors(f"{where}.timeout", entry.get("timeout"), allow_zero=False)
    return errors


def node_startup_timeout_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """A duration, or ``0`` (no check); absent means the default 10m."""
    value = spec.get("nodeStartupTimeout")
    if value is None:
        return []
    return _duration_errors("spec.nodeStartupTimeout", value, allow_zero=True)


def max_unhealthy_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """A count ≥ 0 or a percentage from 0% to 100%; absent means 100%."""
    value = spec.get("maxUnhealthy")
    if value is None:
        return []
    field = "spec.maxUnhealthy"
    if isinstance(value, bool) or not isinstance(value, int | str):
        return [invalid(field, value, _MAX_UNHEALTHY_DETAIL)]
    if isinstance(value, int):
        return [] if value >= 0 else [invalid(field, value, "must be 0 or more")]
    percent = _PERCENT.match(value)
    if percent:
        return (
            []
            if int(percent.group(1)) <= 100
            else [invalid(field, value, "a percentage must be at most 100%")]
        )
    return [] if _COUNT.match(value) else [invalid(field, value, _MAX_UNHEALTHY_DETAIL)]


def remediation_template_errors(spec: Mapping[str, Any], namespace: str) -> list[FieldError]:
    """apiVersion, kind and name set, and no namespace other than the MachineHealthCheck's."""
    ref = spec.get("remediationTemplate")
    if ref is None:
        return []
    field = "spec.remediationTemplate"
    if not isinstance(ref, Mapping):
        return [invalid(field, ref, "must be an object reference with apiVersion, kind and name")]
    errors = [
        required(f"{field}.{key}")
        for key in ("apiVersion", "kind", "name")
        if not isinstance(ref.get(key), str) or not ref.get(key)
    ]
    other = ref.get("namespace")
    if other and namespace and other != namespace:
        errors.append(
            invalid(f"{field}.namespace", other, f"must be the MachineHealthCheck's namespace {namespace!r}")
        )
    return errors


def validate_machinehealthcheck_create(obj: Mapping[str, Any]) -> Result:
    """Errors and warnings for a new MachineHealthCheck (the wire form)."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return [required("spec")] if spec is None else [invalid("spec", spec, "must be an object")], []
    namespace = str(_mapping(obj.get("metadata")).get("namespace") or "")
    errors, warnings = selector_errors(spec)
    errors += unhealthy_condition_errors(spec)
    errors += node_startup_timeout_errors(spec)
    errors += max_unhealthy_errors(spec)
    errors += remediation_template_errors(spec, namespace)
    return errors, warnings


def validate_machinehealthcheck_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Result:
    """Errors and warnings for an update; an unchanged spec is always accepted (ratcheting)."""
    if isinstance(old.get("spec"), Mapping) and new.get("spec") == old.get("spec"):
        return [], []
    return validate_machinehealthcheck_create(new)


# ------------------------------------------------------------------------------ webhook adapter


class AdmissionRequestLike(Protocol):
    """The parts of ``runtime.webhook.AdmissionRequest`` the validator reads."""

    @property
    def name(self) -> str: ...


class MachineHealthCheckValidator:
    """``CustomValidator`` for MachineHealthCheck; refusals are 422 Invalid. A MachineHealthCheck
    out of the operator's scope is accepted without a look (see the module docstring)."""

    async def validate_create(self, obj: JSON, request: AdmissionRequestLike) -> list[str]:
        if not in_health_check_scope(obj):
            return []
        return _verdict(_name(obj, request), *validate_machinehealthcheck_create(obj))

    async def validate_update(self, old: JSON, new: JSON, request: AdmissionRequestLike) -> list[str]:
        if not in_health_check_scope(new):
            return []
        return _verdict(_name(new, request), *validate_machinehealthcheck_update(old, new))

    async def validate_delete(self, obj: JSON, request: AdmissionRequestLike) -> list[str]:
        return []


def _verdict(name: str, errors: list[FieldError], warnings: list[str]) -> list[str]:
    if errors:
        from runtime.webhook import Denied

        raise Denied(invalid_message(MACHINEHEALTHCHECK_GROUP_KIND, name, errors), 422, warnings=warnings)
    return warnings


def _name(obj: Mapping[str, Any], request: AdmissionRequestLike) -> str:
    name = _mapping(obj.get("metadata")).get("name")
    return name if isinstance(name, str) and name else request.name
