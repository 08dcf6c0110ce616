"""The expectations of the ControlPlane controller's own writes
(controllers/controlplane/expectations.py): held until the cache shows them, or until they expire."""

from __future__ import annotations

from controllers.controlplane.expectations import Expectations
from tests.support.machine_rows import cp_machine


def test_an_expectation_holds_until_the_cache_shows_our_create_or_delete() -> None:
    expectations = Expectations()
    key = ("ns", "cluster")
    assert expectations.caught_up(key, [])
    expectations.expect(key, "create", "new")
    assert not expectations.caught_up(key, [cp_machine("old")])
    assert expectations.caught_up(key, [cp_machine("old"), cp_machine("new")])
    assert expectations.caught_up(key, [cp_machine("old")])  # met once, forgotten
    expectations.expect(key, "delete", "old")
    assert not expectations.caught_up(key, [cp_machine("old")])
    assert expectations.caught_up(key, [cp_machine("old", deleting=True)])
    expectations.expect(key, "delete", "old")
    assert expectations.caught_up(key, [])
    assert expectations.caught_up(("ns", "other"), [])


def test_an_expectation_the_cache_never_meets_expires() -> None:
    expectations = Expectations(timeout=0.0)
    expectations.expect(("ns", "cluster"), "create", "never-seen")
    assert expectations.caught_up(("ns", "cluster"), [])
