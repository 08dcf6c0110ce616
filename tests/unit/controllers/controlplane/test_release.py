"""A ControlPlane's release of its Machines (controllers/controlplane/release.py): only the configured
etcd guard hook goes, and the release waits for deletions that still carry it."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.controlplane.release import guarded_deletions, hooks_after_release
from controllers.etcdquorum.rules import DEFAULT_HOOK, Hook

OURS = {"name": "EtcdQuorumOperator", "owner": "clusteroperator/etcd"}


CUSTOM = Hook("GuardEtcd", "team/etcd")


@pytest.mark.parametrize(
    ("hooks", "guard", "kept"),
    [
        ([OURS], DEFAULT_HOOK, []),
        ([], DEFAULT_HOOK, []),
        # Another name, or our name with another owner: never ours to remove.
        ([{"name": "Backup", "owner": "x"}, OURS], DEFAULT_HOOK, [{"name": "Backup", "owner": "x"}]),
        (
            [{"name": OURS["name"], "owner": "someone/else"}],
            DEFAULT_HOOK,
            [{"name": OURS["name"], "owner": "someone/else"}],
        ),
        # The configured hook of the etcd-quorum-hook controller, not the default one.
        ([OURS, {"name": "GuardEtcd", "owner": "team/etcd"}], CUSTOM, [OURS]),
    ],
    ids=[
        "our hook is removed",
        "no hook stays no hook",
        "another hook is kept while ours goes",
        "our name with another owner is never ours to remove",
        "the configured hook goes and the default one stays",
    ],
)
def test_a_release_removes_only_the_configured_etcd_guard_hook(
    hooks: list[dict[str, str]], guard: Hook, kept: list[dict[str, str]]
) -> None:
    assert hooks_after_release(hooks, guard) == kept


def test_a_release_waits_for_deleting_machines_that_still_carry_the_guard_hook() -> None:
    def machine(name: str, deleting: bool, hooks: list[dict[str, str]]) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": name}
        if deleting:
            metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return {"metadata": metadata, "spec": {"lifecycleHooks": {"preDrain": hooks}}}

    machines = [
        machine("running-hooked", False, [OURS]),
        machine("deleting-hooked", True, [OURS]),
        machine("deleting-other-hook", True, [{"name": "Backup", "owner": "x"}]),
        machine("deleting-bare", True, []),
    ]
    assert guarded_deletions(machines, DEFAULT_HOOK) == ["deleting-hooked"]
    assert guarded_deletions(machines, CUSTOM) == []
