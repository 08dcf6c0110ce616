"""LocalMachineOptions defaults and errors; the provider's pure helpers; the CLI's bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.__main__ import build_parser, main
from providers.localmachine import LocalMachineOptions, is_local_machine
from providers.localmachine.etcd_process import EtcdProcessOptions
from providers.localmachine.reconciler import _InvalidConfiguration, _set_condition, failure_domain
from runtime.controller import ControllerOptions


def test_defaults_are_resolved_in_one_place(tmp_path: Path) -> None:
    resolved = LocalMachineOptions(state_dir=tmp_path).with_defaults()
    assert resolved.state_dir == tmp_path
    assert resolved.heartbeat_period == 10.0
    assert resolved.health_timeout == 2.0
    assert resolved.stop_grace_period == 10.0
    assert resolved.etcd.stop_grace_period == 10.0
    assert (resolved.join_backoff_initial, resolved.join_backoff_max) == (0.5, 10.0)
    # Members outlive a provider crash: the restarted provider re-attaches.
    assert resolved.etcd.die_with_parent is False
    assert resolved.controller.max_concurrent_reconciles == 4
    assert resolved.node_role_labels == "both"


def test_short_heartbeats_shorten_the_health_timeout_and_explicit_choices_win(tmp_path: Path) -> None:
    resolved = LocalMachineOptions(
        state_dir=str(tmp_path),
        heartbeat_period=0.4,
        stop_grace_period=1,
        etcd=EtcdProcessOptions(die_with_parent=True),
        controller=ControllerOptions(max_concurrent_reconciles=1),
    ).with_defaults()
    assert resolved.health_timeout == pytest.approx(0.2)
    assert resolved.etcd.stop_grace_period == 1.0
    assert resolved.etcd.die_with_parent is True
    assert resolved.controller.max_concurrent_reconciles == 1


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"state_dir": None}, "state_dir is required"),
        ({"heartbeat_period": 0}, "heartbeat_period must be positive"),
        ({"health_timeout": -1}, "health_timeout must be positive"),
        ({"stop_grace_period": -1}, "stop_grace_period must be ≥ 0"),
        ({"join_backoff_initial": 5, "join_backoff_max": 1}, "at most join_backoff_max"),
        ({"controller": ControllerOptions(max_concurrent_reconciles=0)}, "max_concurrent_reconciles"),
        ({"node_role_labels": "worker"}, "node_role_labels 'worker': use one of both, control-plane, master"),
    ],
)
def test_bad_options_say_what_to_change(tmp_path: Path, overrides: dict[str, object], message: str) -> None:
    options = LocalMachineOptions(state_dir=tmp_path)
    for field, value in overrides.items():
        setattr(options, field, value)
    with pytest.raises(ValueError, match=message):
        options.with_defaults()


def test_nodes_can_be_labelled_as_kubeadm_labels_them(tmp_path: Path) -> None:
    resolved = LocalMachineOptions(state_dir=tmp_path, node_role_labels="control-plane").with_defaults()
    assert resolved.node_role_labels == "control-plane"


def test_only_local_machine_provider_specs_are_served() -> None:
    assert is_local_machine({"spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec"}}}})
    assert not is_local_machine({"spec": {"providerSpec": {"value": {"kind": "AWSMachineProviderConfig"}}}})
    assert not is_local_machine({"spec": {"providerSpec": {"value": "LocalMachineProviderSpec"}}})
    assert not is_local_machine({"spec": {}})
    assert not is_local_machine({})


def test_the_failure_domain_comes_from_the_provider_spec_and_must_be_a_label_value() -> None:
    def spec(**value: object) -> dict[str, object]:
        return {"spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", **value}}}}

    assert failure_domain(spec(failureDomain="zone-a")) == "zone-a"
    assert failure_domain(spec(zone="us-east-1b")) == "us-east-1b"
    assert failure_domain(spec(failureDomain="a", zone="b")) == "a"
    assert failure_domain(spec()) is None
    for bad in ("not a label!", 3, "x" * 64):
        with pytest.raises(_InvalidConfiguration, match="cannot be a Node label value"):
            failure_domain(spec(failureDomain=bad))


def test_a_condition_keeps_its_transition_time_while_its_status_stays() -> None:
    conditions, changed = _set_condition(None, "Drainable", "False", "HookPresent", "blocked by A")
    assert changed and conditions[0]["status"] == "False" and "severity" not in conditions[0]
    first_transition = conditions[0]["lastTransitionTime"]
    same, changed = _set_condition(conditions, "Drainable", "False", "HookPresent", "blocked by A")
    assert not changed and same == conditions
    reworded, changed = _set_condition(
        [{**conditions[0], "lastTransitionTime": "2020-01-01T00:00:00Z"}],
        "Drainable",
        "False",
        "HookPresent",
        "blocked by B",
    )
    assert changed and reworded[0]["lastTransitionTime"] == "2020-01-01T00:00:00Z"
    flipped, changed = _set_condition(reworded, "Drainable", "True", "Drained", "no hooks")
    assert changed and flipped[0]["lastTransitionTime"] != "2020-01-01T00:00:00Z"
    assert first_transition


def test_the_cli_refuses_a_missing_state_dir(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["localmachine"])
    assert exit_info.value.code == 2
    assert "--state-dir" in capsys.readouterr().err


def test_the_cli_reports_bad_options_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["localmachine", "--state-dir", str(tmp_path), "--heartbeat-period", "0"]) == 2
    err = capsys.readouterr().err
    assert "heartbeat_period must be positive" in err and "Traceback" not in err


def test_static_pods_are_kept_by_default_with_kubelets_back_off(tmp_path: Path) -> None:
    resolved = LocalMachineOptions(state_dir=tmp_path).with_defaults()
    assert resolved.static_pods is True
    assert (resolved.crash_loop_backoff_initial, resolved.crash_loop_backoff_max) == (10.0, 300.0)
    off = LocalMachineOptions(
        state_dir=tmp_path, static_pods=False, crash_loop_backoff_initial=1
    ).with_defaults()
    assert off.static_pods is False and off.crash_loop_backoff_initial == 1.0


def test_a_crash_loop_back_off_must_be_positive_and_within_its_cap(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="crash_loop_backoff_initial"):
        LocalMachineOptions(state_dir=tmp_path, crash_loop_backoff_initial=400).with_defaults()


def test_the_cli_turns_static_pods_off(tmp_path: Path) -> None:
    parse = build_parser().parse_args
    assert parse(["localmachine", "--state-dir", str(tmp_path)]).static_pods is True
    assert parse(["localmachine", "--state-dir", str(tmp_path), "--no-static-pods"]).static_pods is False
