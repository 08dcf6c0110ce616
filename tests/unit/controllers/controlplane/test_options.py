"""The ControlPlane controller's options (controllers/controlplane/options.py): defaults, checks and
the etcd guard hook a release removes."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.controlplane.options import ControlPlaneOptions
from controllers.controlplane.remediation import RetryBackoff
from controllers.etcdquorum.rules import DEFAULT_HOOK, Hook

CUSTOM = Hook("GuardEtcd", "team/etcd")


def test_options_defaults_and_checks() -> None:
    resolved = ControlPlaneOptions().with_defaults()
    assert (resolved.preflight_backoff_initial, resolved.preflight_backoff_max) == (2.0, 60.0)
    assert (resolved.wait_period, resolved.resync_period) == (5.0, 60.0)
    with pytest.raises(ValueError, match="wait_period"):
        ControlPlaneOptions(wait_period=0).with_defaults()
    with pytest.raises(ValueError, match="preflight_backoff_max"):
        ControlPlaneOptions(preflight_backoff_initial=10, preflight_backoff_max=1).with_defaults()


def test_the_release_removes_the_default_hook_unless_told_the_configured_one() -> None:
    assert ControlPlaneOptions().with_defaults().etcd_guard_hook == DEFAULT_HOOK
    assert ControlPlaneOptions(etcd_guard_hook=CUSTOM).with_defaults().etcd_guard_hook == CUSTOM


def test_the_remediation_retries_are_bounded_by_default_and_the_bound_is_an_option() -> None:
    backoff = ControlPlaneOptions().with_defaults().remediation_backoff
    assert (backoff.initial, backoff.factor, backoff.cap, backoff.max_retry) == (30.0, 2.0, 600.0, 5)
    small = ControlPlaneOptions(
        remediation_backoff_initial=4,
        remediation_backoff_factor=1.5,
        remediation_backoff_max=12,
        remediation_max_retry=0,
    ).with_defaults()
    assert small.remediation_backoff == RetryBackoff(initial=4.0, factor=1.5, cap=12.0, max_retry=0)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"remediation_backoff_initial": 0}, "remediation_backoff_initial"),
        ({"remediation_backoff_factor": 0.5}, "remediation_backoff_factor"),
        ({"remediation_backoff_initial": 60, "remediation_backoff_max": 30}, "remediation_backoff_max"),
        ({"remediation_max_retry": -1}, "remediation_max_retry"),
    ],
    ids=["a zero first wait", "a shrinking factor", "a cap below the first wait", "a negative count"],
)
def test_a_remediation_bound_that_cannot_work_is_refused_naming_the_option(
    fields: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError, match=named):
        ControlPlaneOptions(**fields).with_defaults()
