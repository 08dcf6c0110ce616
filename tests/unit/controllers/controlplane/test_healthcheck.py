"""The ControlPlane controller's small helpers: the owned MachineHealthCheck, the remediation
hand-off, Machine names, new Machines, the expectations of our own writes, and when a status is
written (etcd endpoints and member owners: tests/unit/controllers/test_etcd_membership.py)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from api.controlplane import ControlPlane
from api.failuredomains import FAILURE_DOMAIN_LABEL
from controllers.controlplane.expectations import Expectations
from controllers.controlplane.healthcheck import desired_mhc
from controllers.controlplane.machines import (
    MachineInfo,
    controller_ref,
    machine_name,
    marked_for_remediation,
)
from controllers.controlplane.options import ControlPlaneOptions
from controllers.controlplane.placement import (
    SPEC_HASH_ANNOTATION,
    new_machine,
    template_hash,
)
from controllers.controlplane.release import guarded_deletions, hooks_after_release
from controllers.controlplane.status import status_unchanged
from controllers.etcdquorum.rules import DEFAULT_HOOK, Hook

CP: dict[str, Any] = {
    "apiVersion": "controlplane.cpo.dev/v1alpha1",
    "kind": "ControlPlane",
    "metadata": {"name": "cluster", "namespace": "ns", "uid": "u-1"},
    "spec": {"template": {"spec": {"providerSpec": {"value": {}}}}},
}


def spec_with(**fields: Any) -> Any:
    return ControlPlane.from_dict({**CP, "spec": {**CP["spec"], **fields}}).spec


@pytest.mark.parametrize(("replicas", "max_unhealthy"), [(1, 0), (2, 0), (3, 1), (5, 2), (7, 3)])
def test_the_mhc_tolerates_as_many_unhealthy_machines_as_etcd_can_lose(
    replicas: int, max_unhealthy: int
) -> None:
    assert desired_mhc(CP, spec_with(replicas=replicas))["spec"]["maxUnhealthy"] == max_unhealthy


def running(name: str, **fields: Any) -> MachineInfo:
    defaults: dict[str, Any] = {
        "phase": "Running",
        "node_ready": True,
        "etcd_voter": True,
        "etcd_healthy": True,
    }
    return MachineInfo(name=name, created=datetime(2026, 1, 1, tzinfo=UTC), **{**defaults, **fields})


DEAD = running("dead", node_ready=False, etcd_healthy=False)
GOING = running("going", deleting=True)
NEW = running("new", phase="Provisioning", node_ready=False, etcd_voter=False)


@pytest.mark.parametrize(
    ("replicas", "machines", "max_unhealthy"),
    [
        (3, [running("a"), running("b"), running("c")], 1),
        # A replacement's old Machine, held by the hook, is no failure.
        (3, [running("a"), running("b"), DEAD, GOING], 2),
        # Nor is the new Machine that replaces a user's deletion.
        (3, [running("a"), DEAD, GOING, NEW], 3),
        # Scaled to 1 while 3 members are there, one of them dead.
        (1, [running("a"), running("b"), DEAD], 1),
        (1, [running("a"), DEAD, GOING], 2),
        (5, [running("a"), running("b"), running("c"), DEAD, GOING], 3),
    ],
)
def test_the_mhc_budget_counts_the_members_there_and_no_transition_as_a_failure(
    replicas: int, machines: list[MachineInfo], max_unhealthy: int
) -> None:
    mhc = desired_mhc(CP, spec_with(replicas=replicas), machines)
    assert mhc["spec"]["maxUnhealthy"] == max_unhealthy


def test_the_mhc_takes_openshift_defaults_and_the_controlplane_settings() -> None:
    mhc = desired_mhc(CP, spec_with())
    assert mhc["metadata"]["name"] == "cluster-mhc" and mhc["metadata"]["ownerReferences"] == [
        controller_ref(CP)
    ]
    assert mhc["spec"]["unhealthyConditions"] == [
        {"type": "Ready", "status": "False", "timeout": "5m0s"},
        {"type": "Ready", "status": "Unknown", "timeout": "5m0s"},
    ]
    assert mhc["spec"]["nodeStartupTimeout"] == "10m"
    assert mhc["spec"]["selector"] == {
        "matchLabels": {"machine.openshift.io/cluster-api-machine-role": "master"}
    }
    demo = desired_mhc(
        CP,
        spec_with(
            healthCheck={
                "unhealthyConditions": [{"type": "Ready", "status": "Unknown", "timeout": "5s"}],
                "nodeStartupTimeout": "30s",
            }
        ),
    )
    assert demo["spec"]["unhealthyConditions"] == [{"type": "Ready", "status": "Unknown", "timeout": "5s"}]
    assert demo["spec"]["nodeStartupTimeout"] == "30s"


def conditions(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": t, "status": s} for t, s in pairs]}}


@pytest.mark.parametrize(
    ("machine", "marked"),
    [
        (conditions(("HealthCheckSucceeded", "False"), ("OwnerRemediated", "False")), True),
        (conditions(("HealthCheckSucceeded", "False")), False),
        (conditions(("HealthCheckSucceeded", "True"), ("OwnerRemediated", "False")), False),
        (conditions(("HealthCheckSucceeded", "False"), ("OwnerRemediated", "True")), False),
        ({}, False),
    ],
)
def test_marked_for_remediation_needs_both_conditions(machine: dict[str, Any], marked: bool) -> None:
    assert marked_for_remediation(machine) is marked


def test_machine_names_are_the_controlplane_name_and_five_random_characters() -> None:
    names = {machine_name("cluster") for _ in range(50)}
    assert all(re.fullmatch(r"cluster-[a-z0-9]{5}", name) for name in names)
    assert len(names) > 45


def machine(name: str, **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": name, "annotations": extra.pop("annotations", {})},
        "status": {},
    }
    obj["status"].update(extra)
    return obj


def test_options_defaults_and_checks() -> None:
    resolved = ControlPlaneOptions().with_defaults()
    assert (resolved.preflight_backoff_initial, resolved.preflight_backoff_max) == (2.0, 60.0)
    assert (resolved.wait_period, resolved.resync_period) == (5.0, 60.0)
    with pytest.raises(ValueError, match="wait_period"):
        ControlPlaneOptions(wait_period=0).with_defaults()
    with pytest.raises(ValueError, match="preflight_backoff_max"):
        ControlPlaneOptions(preflight_backoff_initial=10, preflight_backoff_max=1).with_defaults()


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


def test_a_new_machine_carries_its_domain_hash_and_controller() -> None:
    spec = spec_with(failureDomains=[{"name": "a", "providerSpec": {"value": {"zone": "a"}}}])
    machine = new_machine(spec, "a", name="cluster-x1y2z", owner=CP)
    assert machine["metadata"]["name"] == "cluster-x1y2z" and machine["metadata"]["namespace"] == "ns"
    assert machine["metadata"]["labels"][FAILURE_DOMAIN_LABEL] == "a"
    assert machine["metadata"]["annotations"][SPEC_HASH_ANNOTATION] == template_hash(spec, "a")
    assert machine["metadata"]["ownerReferences"] == [controller_ref(CP)]
    assert machine["spec"]["providerSpec"] == {"value": {"zone": "a"}}
    assert FAILURE_DOMAIN_LABEL not in new_machine(spec, None, name="n", owner=CP)["metadata"]["labels"]


@pytest.mark.parametrize(
    ("current", "status", "unchanged"),
    [
        ({"replicas": 3, "phase": "Running"}, {"replicas": 3, "failureReason": None}, True),
        ({"replicas": 3}, {"replicas": 5}, False),
        ({"replicas": 3, "failureReason": "MachineFailed"}, {"replicas": 3, "failureReason": None}, False),
        ({}, {"phase": "Running"}, False),
    ],
)
def test_a_status_is_written_only_when_it_changes(
    current: dict[str, Any], status: dict[str, Any], unchanged: bool
) -> None:
    assert status_unchanged(current, status) is unchanged


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


def test_the_release_removes_the_default_hook_unless_told_the_configured_one() -> None:
    assert ControlPlaneOptions().with_defaults().etcd_guard_hook == DEFAULT_HOOK
    assert ControlPlaneOptions(etcd_guard_hook=CUSTOM).with_defaults().etcd_guard_hook == CUSTOM
