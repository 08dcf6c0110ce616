"""The operator's cache scope and its control-plane Node selectors (controllers/operator.py):
Nodes are cached by the role labels, one scope each, never all of them; ``cpo run
--control-plane-node-selector`` replaces the labels."""

from __future__ import annotations

import pytest

from api.nodes import LABEL_CONTROL_PLANE, LABEL_MASTER
from cli.__main__ import build_parser
from controllers.operator import OperatorOptions, operator_cache_options

NODES = ("v1", "Node")


def test_nodes_are_cached_by_either_role_label_one_scope_each() -> None:
    scopes = operator_cache_options().with_defaults().scopes_for(*NODES)
    assert [(s.namespace, s.label_selector, s.field_selector) for s in scopes] == [
        (None, LABEL_CONTROL_PLANE, None),
        (None, LABEL_MASTER, None),
    ]


def test_cpo_run_takes_other_node_selectors_and_defaults_to_both_role_labels() -> None:
    args = build_parser().parse_args(
        ["run", "--control-plane-node-selector", "example.com/cp", "--control-plane-node-selector", "tier=cp"]
    )
    chosen = tuple(args.control_plane_node_selector)
    resolved = OperatorOptions(kubeconfig="kc", control_plane_node_selectors=chosen).with_defaults()
    assert resolved.control_plane_node_selectors == ("example.com/cp", "tier=cp")
    scopes = operator_cache_options(resolved.control_plane_node_selectors).with_defaults().scopes_for(*NODES)
    assert [s.label_selector for s in scopes] == ["example.com/cp", "tier=cp"]
    assert build_parser().parse_args(["run"]).control_plane_node_selector is None
    default = OperatorOptions(kubeconfig="kc").with_defaults()
    assert default.control_plane_node_selectors == (LABEL_CONTROL_PLANE, LABEL_MASTER)


def test_a_selector_of_every_node_is_refused() -> None:
    with pytest.raises(ValueError, match="matches every Node"):
        OperatorOptions(kubeconfig="kc", control_plane_node_selectors=("",)).with_defaults()
