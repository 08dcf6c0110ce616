"""The operator's cache scope and its control-plane Node selectors (controllers/operator.py):
Nodes are cached by the role labels, one scope each, never all of them; ``cpo run
--control-plane-node-selector`` replaces the labels. Its start line names the event loop the
process runs on (hack/image reads it to check that the image runs on uvloop, rather than assuming
it)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import runtime.log
from api.nodes import LABEL_CONTROL_PLANE, LABEL_MASTER
from cli.__main__ import build_parser
from controllers.cache_scope import operator_cache_options
from controllers.operator import OperatorOptions, run_operator
from runtime.eventloop import LoopKind, run

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


def start_line(caplog: pytest.LogCaptureFixture) -> str:
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("starting controlplane")]
    assert lines, [r.getMessage() for r in caplog.records]
    return lines[0]


LOOPS: list[LoopKind] = ["asyncio", "uvloop"]


@pytest.mark.parametrize("loop", LOOPS)
def test_the_start_line_names_the_running_event_loop(
    loop: LoopKind, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A kubeconfig that does not exist: the start line is logged, then the start fails (exit 1).
    options = OperatorOptions(
        kubeconfig=str(tmp_path / "missing-kubeconfig"),
        leader_election=False,
        webhooks=False,
        metrics_bind_address="0",
        health_probe_bind_address="0",
        log_format="console",
    )
    # configure_logging replaces the root logger's handlers; caplog's handler is put back on it.
    real_configure = runtime.log.configure_logging

    def configure_and_capture(**kwargs: str) -> None:
        real_configure(**kwargs)
        logging.getLogger().addHandler(caplog.handler)

    monkeypatch.setattr(runtime.log, "configure_logging", configure_and_capture)
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        assert run(run_operator(options), loop=loop) == 1
    finally:
        # The root logger as the test found it: later tests in this process read its handlers.
        root.handlers[:] = handlers
        root.setLevel(level)
    assert f"on the {loop} event loop" in start_line(caplog)


def test_cpo_run_passes_the_remediation_bound_to_the_controlplane_controller() -> None:
    args = build_parser().parse_args(
        [
            "run",
            "--remediation-backoff-initial=4",
            "--remediation-backoff-factor=3",
            "--remediation-backoff-max=40",
            "--remediation-max-retry=2",
        ]
    )
    options = OperatorOptions(
        kubeconfig="kc",
        remediation_backoff_initial=args.remediation_backoff_initial,
        remediation_backoff_factor=args.remediation_backoff_factor,
        remediation_backoff_max=args.remediation_backoff_max,
        remediation_max_retry=args.remediation_max_retry,
    )
    backoff = options.with_defaults().remediation_backoff
    assert backoff is not None
    assert (backoff.initial, backoff.factor, backoff.cap, backoff.max_retry) == (4.0, 3.0, 40.0, 2)
    unset = build_parser().parse_args(["run"])
    assert unset.remediation_backoff_initial is None and unset.remediation_max_retry is None
    default = OperatorOptions(kubeconfig="kc").with_defaults().remediation_backoff
    assert default is not None and (default.initial, default.max_retry) == (30.0, 5)
    with pytest.raises(ValueError, match="remediation_backoff_factor"):
        OperatorOptions(kubeconfig="kc", remediation_backoff_factor=0.5).with_defaults()
