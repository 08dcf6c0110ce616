"""Admission rules for a ControlPlane's ``spec.selector``: the operator sees what it manages.

The selector is well formed and not empty (an empty one would adopt every Machine in the
namespace), and ``spec.template.metadata.labels`` match it, or the Machines created would not be
owned by their ControlPlane.

The operator sees what it manages
---------------------------------
The operator's informers cache only Machines labelled
``machine.openshift.io/cluster-api-machine-role: master``. A ControlPlane whose selector could
match Machines without that label would never see the Machines it created, and would create one
more every expectation timeout. So the selector must *require* the label (``matchLabels`` with
it, or an ``In`` expression whose only value is ``master``: :func:`selector_requires_role`), and
the template's labels must carry it. OpenShift's ControlPlaneMachineSet puts the rule on the
template's labels only, plus selector-matches-template; we also require it of the selector, since
a selector that merely matches the template could still select Machines outside the cache.

A ControlPlane stored before this rule keeps its selector (it is immutable: compared in the form
:func:`normalized_selector` gives it): :func:`ratchet_role_errors` turns its role errors on later
updates into a warning to recreate it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.controlplane import DEFAULT_SELECTOR_LABELS, MASTER_ROLE_LABEL
from api.selector import selector_matches, selector_problems, selector_string

from .field import FieldError, invalid, required

MASTER_ROLE = DEFAULT_SELECTOR_LABELS[MASTER_ROLE_LABEL]
_ADD_ROLE = f'add matchLabels {{"{MASTER_ROLE_LABEL}": "{MASTER_ROLE}"}}'
_ADD_ROLE_LABEL = f'add the label "{MASTER_ROLE_LABEL}": "{MASTER_ROLE}"'


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


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


def normalized_selector(spec: Mapping[str, Any]) -> Any:
    """``spec.selector`` in the form compared for immutability (absent is the default selector;
    missing ``matchLabels``/``matchExpressions`` are empty)."""
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


def ratchet_role_errors(
    old_spec: Mapping[str, Any], new_spec: Mapping[str, Any], errors: list[FieldError], warnings: list[str]
) -> tuple[list[FieldError], list[str]]:
    """A selector stored before the role rule existed cannot be changed (it is immutable), so
    its role errors would refuse every later edit: they become a warning saying what to do."""
    selector = old_spec.get("selector")
    if not isinstance(selector, Mapping) or selector_requires_role(selector):
        return errors, warnings
    if normalized_selector(old_spec) != normalized_selector(new_spec):
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
