"""Our own creates and deletes, remembered until the cache shows them.

Without this, a reconcile right after a create could read a cache that does not show the new
Machine yet, count one Machine short and create a second one: two membership changes at once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Final, Literal

from controllers.controlplane.machines import MachineInfo

EXPECTATION_TIMEOUT: Final = 30.0
"""Seconds to wait for the cache to show our own create or delete before deciding anyway."""

Key = tuple[str, str]
"""A ControlPlane's ``(namespace, name)``."""


class Expectations:
    """The last create or delete per ControlPlane that the cache has not shown yet."""

    def __init__(self, timeout: float = EXPECTATION_TIMEOUT) -> None:
        self.timeout = timeout
        self._expected: dict[Key, tuple[str, str, float]] = {}

    def expect(self, key: Key, operation: Literal["create", "delete"], name: str) -> None:
        """Remember that Machine ``name`` was just created or deleted for ``key``."""
        self._expected[key] = (operation, name, time.monotonic() + self.timeout)

    def caught_up(self, key: Key, machines: Sequence[MachineInfo]) -> bool:
        """Whether the cache shows our last create or delete (else we would decide on stale facts
        and, say, create a second Machine before the first is visible). After the timeout the
        answer is yes anyway: a lost event must not stop the controller for good."""
        expected = self._expected.get(key)
        if expected is None:
            return True
        operation, name, deadline = expected
        by_name = {info.name: info for info in machines}
        gone = name not in by_name or by_name[name].deleting
        seen = (name in by_name) if operation == "create" else gone
        if seen or time.monotonic() > deadline:
            del self._expected[key]
            return True
        return False
