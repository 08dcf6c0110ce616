"""Label selectors of the API types: matching and the canonical string form.

The rules live in :mod:`runtime.labels` (the same language the API server and the cache speak);
this module accepts the typed :class:`api.meta.LabelSelector` as well as the wire dict:

>>> from api.selector import selector_matches, selector_string
>>> sel = {"matchLabels": {"role": "master"}, "matchExpressions": [{"key": "zone", "operator": "Exists"}]}
>>> selector_matches(sel, {"role": "master", "zone": "a"})
True
>>> selector_string(sel)
'role=master,zone'

``selector_string`` is what ``status.selector`` holds for the ``scale`` subresource and what a
``labelSelector`` query parameter takes. :func:`selector_problems` reports a malformed selector in
words a user can act on instead of raising.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime.labels import from_label_selector, label_selector_problems

from .meta import LabelSelector


def _wire(selector: Mapping[str, Any] | LabelSelector | None) -> Mapping[str, Any]:
    if selector is None:
        return {}
    if isinstance(selector, LabelSelector):
        return selector.model_dump(by_alias=True, exclude_none=True)
    return selector


def selector_problems(selector: Mapping[str, Any] | LabelSelector | None) -> list[str]:
    """What is wrong with a selector (empty when it is well formed), one sentence per problem."""
    return label_selector_problems(_wire(selector))


def selector_matches(
    selector: Mapping[str, Any] | LabelSelector | None, labels: Mapping[str, str] | None
) -> bool:
    """Whether ``labels`` satisfy the selector; an empty selector matches everything.

    A malformed selector matches nothing (the API server refuses to evaluate it), so a bad
    selector never makes a controller adopt objects it should not.
    """
    sel = _wire(selector)
    if label_selector_problems(sel):
        return False
    return from_label_selector(sel).matches(labels)


def selector_string(selector: Mapping[str, Any] | LabelSelector | None) -> str:
    """The selector in ``labelSelector`` query syntax, requirements sorted by key like kube prints them.

    Raises :class:`ValueError` for a malformed selector (check :func:`selector_problems` first).
    """
    return str(from_label_selector(_wire(selector)))
