"""A ControlPlane's release of its Machines (controllers/controlplane/release.py): only the
operator's own hook goes, decided by identity (:func:`hook_at_release`), and the release waits
only for deletions that still carry that hook."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.controlplane.release import (
    HookIdentity,
    guarded_deletions,
    hook_at_release,
    hooks_after_release,
)
from controllers.etcdquorum.rules import DEFAULT_HOOK, Hook

DEFAULT = {"name": "EtcdQuorumOperator", "owner": "clusteroperator/etcd"}
"""The default identity, which is also cluster-etcd-operator's hook."""
OWN = Hook("cpo.dev/EtcdQuorum", "cpo/etcd")
OWN_WIRE = {"name": OWN.name, "owner": OWN.owner}

DEFAULT_WITH_CONTROLLER = HookIdentity(DEFAULT_HOOK, hook_controller_runs=True)
DEFAULT_WITHOUT_CONTROLLER = HookIdentity(DEFAULT_HOOK, hook_controller_runs=False)
OWN_WITH_CONTROLLER = HookIdentity(OWN, hook_controller_runs=True)
OWN_WITHOUT_CONTROLLER = HookIdentity(OWN, hook_controller_runs=False)
DEFAULT_NAME_OWN_OWNER = HookIdentity(Hook("EtcdQuorumOperator", "cpo/etcd"), hook_controller_runs=False)


@pytest.mark.parametrize(
    ("hook", "identity", "removed"),
    [
        (DEFAULT, DEFAULT_WITH_CONTROLLER, True),
        (DEFAULT, DEFAULT_WITHOUT_CONTROLLER, False),
        (OWN_WIRE, OWN_WITH_CONTROLLER, True),
        (OWN_WIRE, OWN_WITHOUT_CONTROLLER, True),
        (DEFAULT, OWN_WITH_CONTROLLER, False),
        (DEFAULT, OWN_WITHOUT_CONTROLLER, False),
        ({"name": OWN.name, "owner": "someone/else"}, OWN_WITH_CONTROLLER, False),
        ({"name": "EtcdQuorumOperator", "owner": "someone/else"}, DEFAULT_WITH_CONTROLLER, False),
        ({"name": "Backup", "owner": "x"}, DEFAULT_WITH_CONTROLLER, False),
        ({"name": "EtcdQuorumOperator", "owner": "cpo/etcd"}, DEFAULT_NAME_OWN_OWNER, False),
    ],
    ids=[
        "the default hook goes while our etcd-quorum-hook controller runs",
        "the default hook stays while our etcd-quorum-hook controller is off, being the etcd operator's too",
        "a hook under a name of our own goes while our hook controller runs",
        "a hook under a name of our own goes even when the hook controller runs in another process",
        "the etcd operator's hook stays beside our own-named one",
        "the etcd operator's hook stays when our own-named controller is off",
        "our own name with another owner is never ours to remove",
        "the default name with another owner is never ours to remove",
        "a hook of another name stays",
        "the default name with an owner of ours stays while our hook controller is off, names being the key",
    ],
)
def test_a_release_removes_a_hook_only_when_its_identity_is_the_operators_own(
    hook: dict[str, str], identity: HookIdentity, removed: bool
) -> None:
    verdict = hook_at_release(hook, identity)
    assert verdict.remove is removed
    assert hook["name"] in verdict.why and ("removed" if removed else "kept") in verdict.why


def test_a_released_machine_keeps_every_hook_but_the_operators_own_in_order() -> None:
    hooks = [{"name": "Backup", "owner": "x"}, DEFAULT, OWN_WIRE]
    assert hooks_after_release(hooks, OWN_WITH_CONTROLLER) == [{"name": "Backup", "owner": "x"}, DEFAULT]
    assert hooks_after_release(hooks, DEFAULT_WITHOUT_CONTROLLER) == hooks
    assert hooks_after_release(hooks, DEFAULT_WITH_CONTROLLER) == [{"name": "Backup", "owner": "x"}, OWN_WIRE]


def _machine(name: str, deleting: bool, hooks: list[dict[str, str]]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": metadata, "spec": {"lifecycleHooks": {"preDrain": hooks}}}


MACHINES = [
    _machine("running-default", False, [DEFAULT]),
    _machine("deleting-default", True, [DEFAULT]),
    _machine("deleting-own", True, [OWN_WIRE]),
    _machine("deleting-other-hook", True, [{"name": "Backup", "owner": "x"}]),
    _machine("deleting-bare", True, []),
]


@pytest.mark.parametrize(
    ("identity", "waits_for"),
    [
        (DEFAULT_WITH_CONTROLLER, ["deleting-default"]),
        (DEFAULT_WITHOUT_CONTROLLER, []),
        (OWN_WITH_CONTROLLER, ["deleting-own"]),
        (OWN_WITHOUT_CONTROLLER, ["deleting-own"]),
    ],
    ids=[
        "the release waits for a deletion our running hook controller holds",
        "the release never waits on the default hook while our hook controller is off",
        "the release waits for a deletion held by our own-named hook, never the etcd operator's",
        "the release waits for our own-named hook whichever process runs its controller",
    ],
)
def test_a_release_waits_only_for_deletions_held_by_the_operators_own_hook(
    identity: HookIdentity, waits_for: list[str]
) -> None:
    assert guarded_deletions(MACHINES, identity) == waits_for
