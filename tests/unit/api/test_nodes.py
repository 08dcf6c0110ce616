"""Which Nodes are control-plane Nodes (api/nodes.py): either role label by default, or the
selectors an operator is given; selectors that would select every Node are refused."""

from __future__ import annotations

import pytest

from api.nodes import (
    DEFAULT_CONTROL_PLANE_NODE_SELECTORS,
    LABEL_CONTROL_PLANE,
    LABEL_MASTER,
    control_plane_node_selectors,
    is_control_plane_node,
)


def node(**labels: str) -> dict[str, object]:
    return {"metadata": {"name": "n", "labels": labels}}


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({LABEL_CONTROL_PLANE: ""}, True),
        ({LABEL_MASTER: ""}, True),
        ({LABEL_MASTER: "", LABEL_CONTROL_PLANE: ""}, True),
        ({LABEL_MASTER: "true"}, True),
        ({"node-role.kubernetes.io/worker": ""}, False),
        ({}, False),
    ],
    ids=[
        "kubeadm labels control-plane Nodes control-plane only",
        "older clusters label them master only",
        "OpenShift 4 labels them both",
        "any value of the role label counts",
        "a worker Node is not one",
        "a Node without labels is not one",
    ],
)
def test_either_role_label_makes_a_control_plane_node(labels: dict[str, str], expected: bool) -> None:
    assert is_control_plane_node(node(**labels)) is expected


def test_configured_selectors_replace_the_role_labels() -> None:
    selectors = control_plane_node_selectors(["example.com/role=cp", "example.com/role=cp", "tier in (a,b)"])
    assert selectors == ("example.com/role=cp", "tier in (a,b)")
    assert is_control_plane_node(node(**{"example.com/role": "cp"}), selectors)
    assert not is_control_plane_node(node(**{LABEL_MASTER: ""}), selectors)
    assert control_plane_node_selectors(None) == DEFAULT_CONTROL_PLANE_NODE_SELECTORS


@pytest.mark.parametrize(
    ("selectors", "message"),
    [
        ([], "name at least one"),
        ([""], "matches every Node"),
        (["a in ()"], "control-plane Node selector 'a in \\(\\)'"),
        ("node-role.kubernetes.io/master", "give a list, not the string"),
    ],
)
def test_selectors_that_select_nothing_or_everything_are_refused(selectors: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        control_plane_node_selectors(selectors)  # type: ignore[arg-type]
