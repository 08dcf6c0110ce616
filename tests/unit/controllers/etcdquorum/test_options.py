"""The etcd-quorum-hook controller's options (controllers/etcdquorum/options.py): defaults and checks."""

from __future__ import annotations

import pytest


def test_options_defaults_and_checks() -> None:
    from controllers.etcdquorum import EtcdQuorumOptions

    resolved = EtcdQuorumOptions().with_defaults()
    assert (resolved.resync_period, resolved.busy_period, resolved.abandoned_learner_grace) == (
        15.0,
        1.0,
        300.0,
    )
    assert (resolved.wait_event_after, resolved.etcd_timeout, resolved.member_change_interval) == (
        60.0,
        3.0,
        2.0,
    )
    assert EtcdQuorumOptions(abandoned_learner_grace=0, member_change_interval=0).with_defaults()
    for bad in ({"busy_period": 0}, {"etcd_timeout": -1}, {"wait_event_after": -1}):
        with pytest.raises(ValueError, match="positive seconds"):
            EtcdQuorumOptions(**bad).with_defaults()  # type: ignore[arg-type]
