"""Which Nodes are control-plane Nodes: the one rule the operator's cache and every controller use.

Clusters label control-plane Nodes differently. kubeadm labels them
``node-role.kubernetes.io/control-plane`` only (since Kubernetes 1.24, when it stopped adding
``node-role.kubernetes.io/master``); OpenShift 4 labels its masters with both, and older releases
(OpenShift 3, kubeadm before 1.20) with ``node-role.kubernetes.io/master`` only. So a Node is a
control-plane Node when **any** of a set of label selectors matches its labels; by default the set
is those two labels (each selector ``key`` means "has the label", whatever its value). ``cpo run
--control-plane-node-selector`` replaces the set for clusters with other conventions.

The operator's cache holds exactly these Nodes (one informer per selector, read as one: see
:mod:`runtime.cache.multiscope`), so thousands of worker Nodes cost it nothing, and a controller
that judges a Node it was handed asks :func:`is_control_plane_node` with the same selectors.

>>> from api.nodes import is_control_plane_node
>>> is_control_plane_node({"metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}}})
True
>>> is_control_plane_node({"metadata": {"labels": {"node-role.kubernetes.io/worker": ""}}})
False
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any, Final

from runtime.labels import Selector, parse_selector

LABEL_CONTROL_PLANE: Final = "node-role.kubernetes.io/control-plane"
"""kubeadm's (and OpenShift 4's) control-plane role label."""

LABEL_MASTER: Final = "node-role.kubernetes.io/master"
"""OpenShift's (and kubeadm's before 1.20) control-plane role label."""

DEFAULT_CONTROL_PLANE_NODE_SELECTORS: Final[tuple[str, ...]] = (LABEL_CONTROL_PLANE, LABEL_MASTER)
"""A Node with either role label is a control-plane Node."""


def control_plane_node_selectors(selectors: Iterable[str] | None = None) -> tuple[str, ...]:
    """The selectors that tell control-plane Nodes, checked: ``None`` gives the default.

    Raises ``ValueError`` for an empty set, a selector that does not parse, or one that matches
    every Node (an empty selector): that would cache every Node of the cluster.
    """
    if selectors is None:
        return DEFAULT_CONTROL_PLANE_NODE_SELECTORS
    if isinstance(selectors, str):
        raise ValueError(f"control-plane Node selectors: give a list, not the string {selectors!r}")
    chosen: list[str] = []
    for text in selectors:
        try:
            parsed = parse_selector(text)
        except ValueError as err:
            raise ValueError(f"control-plane Node selector {text!r}: {err}") from None
        if parsed.empty:
            raise ValueError(
                "a control-plane Node selector must select something: an empty one matches every Node "
                "(and would cache them all)"
            )
        if str(parsed) not in chosen:
            chosen.append(str(parsed))
    if not chosen:
        raise ValueError("name at least one control-plane Node selector")
    return tuple(chosen)


def is_control_plane_node(
    node: Mapping[str, Any], selectors: Iterable[str] = DEFAULT_CONTROL_PLANE_NODE_SELECTORS
) -> bool:
    """Whether ``node`` is a control-plane Node: one of ``selectors`` matches its labels."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    return any(_parsed(selector).matches(labels) for selector in selectors)


@functools.lru_cache(maxsize=64)
def _parsed(selector: str) -> Selector:
    return parse_selector(selector)
