"""The ControlPlane controller's options (controllers/controlplane/options.py): defaults, checks and
the etcd guard hook a release removes."""

from __future__ import annotations

import pytest

from controllers.controlplane.options import ControlPlaneOptions
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
