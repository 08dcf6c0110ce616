"""Label selectors as the API server evaluates them: matching and the canonical string form.

Works on the wire form (a ``metav1.LabelSelector`` dict) or on :class:`api.meta.LabelSelector`::

    from api.selector import selector_matches, selector_string

    sel = {"matchLabels": {"role": "master"}, "matchExpressions": [{"key": "zone", "operator": "Exists"}]}
    selector_matches(sel, {"role": "master", "zone": "a"})   # True
    selector_string(sel)                                      # 'role=master,zone'

``selector_string`` is what ``status.selector`` holds for the ``scale`` subresource and what a
``labelSelector`` query parameter takes. :func:`selector_problems` reports a malformed selector in
words a user can act on instead of raising.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .meta import LabelSelector

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _wire(selector: Mapping[str, Any] | LabelSelector | None) -> Mapping[str, Any]:
    if selector is None:
        return {}
    if isinstance(selector, LabelSelector):
        return selector.model_dump(by_alias=True, exclude_none=True)
    return selector


def selector_problems(selector: Mapping[str, Any] | LabelSelector | None) -> list[str]:
    """What is wrong with a selector (empty when it is well formed), one sentence per problem."""
    sel = _wire(selector)
    problems: list[str] = []
    labels = sel.get("matchLabels")
    if labels is not None and not (
        isinstance(labels, Mapping) and all(isinstance(v, str) for v in labels.values())
    ):
        problems.append("matchLabels must map label keys to string values")
    expressions = sel.get("matchExpressions")
    if expressions is None:
        return problems
    if not isinstance(expressions, list):
        return [*problems, "matchExpressions must be a list"]
    for index, expr in enumerate(expressions):
        where = f"matchExpressions[{index}]"
        if not isinstance(expr, Mapping):
            problems.append(f"{where} must be an object with key, operator and values")
            continue
        operator, values = expr.get("operator"), expr.get("values") or []
        if not isinstance(expr.get("key"), str) or not expr.get("key"):
            problems.append(f"{where}.key is required")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            problems.append(f"{where}.values must be a list of strings")
            continue
        if operator not in _OPERATORS:
            problems.append(f"{where}.operator {operator!r} is not one of {', '.join(_OPERATORS)}")
        elif operator in ("In", "NotIn") and not values:
            problems.append(f"{where}.values must be non-empty for operator {operator}")
        elif operator in ("Exists", "DoesNotExist") and values:
            problems.append(f"{where}.values must be empty for operator {operator}")
    return problems


def selector_matches(
    selector: Mapping[str, Any] | LabelSelector | None, labels: Mapping[str, str] | None
) -> bool:
    """Whether ``labels`` satisfy the selector; an empty selector matches everything.

    A malformed selector matches nothing (the API server refuses to evaluate it), so a bad
    selector never makes a controller adopt objects it should not.
    """
    sel = _wire(selector)
    if selector_problems(sel):
        return False
    have = labels or {}
    for key, value in (sel.get("matchLabels") or {}).items():
        if have.get(key) != value:
            return False
    for expr in sel.get("matchExpressions") or []:
        key, operator, values = expr["key"], expr["operator"], expr.get("values") or []
        present = key in have
        if operator == "In" and not (present and have[key] in values):
            return False
        if operator == "NotIn" and present and have[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def selector_string(selector: Mapping[str, Any] | LabelSelector | None) -> str:
    """The selector in ``labelSelector`` query syntax, requirements sorted by key like kube prints them."""
    sel = _wire(selector)
    parts: list[tuple[str, str]] = []
    for key, value in (sel.get("matchLabels") or {}).items():
        parts.append((key, f"{key}={value}"))
    for expr in sel.get("matchExpressions") or []:
        key, operator = expr.get("key", ""), expr.get("operator")
        values = ",".join(sorted(expr.get("values") or []))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(str(operator), key)
        parts.append((key, text))
    return ",".join(text for _, text in sorted(parts, key=lambda part: part[0]))
