"""The expectations of the ControlPlane controller's own writes
(controllers/controlplane/expectations.py): held until the cache shows them, or until they expire."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from controllers.controlplane.expectations import Expectations
from controllers.controlplane.machines import (
    MachineInfo,
)


def running(name: str, **fields: Any) -> MachineInfo:
    defaults: dict[str, Any] = {
        "phase": "Running",
        "node_ready": True,
        "etcd_voter": True,
        "etcd_healthy": True,
    }
    return MachineInfo(name=name, created=datetime(2026, 1, 1, tzinfo=UTC), **{**defaults, **fields})


def test_an_expectation_holds_until_the_cache_shows_our_create_or_delete() -> None:
    expectations = Expectations()
    key = ("ns", "cluster")
    assert expectations.caught_up(key, [])
    expectations.expect(key, "create", "new")
    assert not expectations.caught_up(key, [running("old")])
    assert expectations.caught_up(key, [running("old"), running("new")])
    assert expectations.caught_up(key, [running("old")])  # met once, forgotten
    expectations.expect(key, "delete", "old")
    assert not expectations.caught_up(key, [running("old")])
    assert expectations.caught_up(key, [running("old", deleting=True)])
    expectations.expect(key, "delete", "old")
    assert expectations.caught_up(key, [])
    assert expectations.caught_up(("ns", "other"), [])


def test_an_expectation_the_cache_never_meets_expires() -> None:
    expectations = Expectations(timeout=0.0)
    expectations.expect(("ns", "cluster"), "create", "never-seen")
    assert expectations.caught_up(("ns", "cluster"), [])
