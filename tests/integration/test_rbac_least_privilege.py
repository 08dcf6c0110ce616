"""``config/rbac/role.yaml`` grants exactly what the controllers use: nothing missing, nothing unused.

The controllers run their integration scenarios (the tests of their own modules, reused as they
are) under the operator's service account, bound to ``config/rbac/role.yaml`` and the leader
election Role and nothing else, with the embedded API server enforcing RBAC for that identity
(a missing grant fails the scenario with 403, as in a cluster) and recording every (verb, group,
resource, subresource, namespace) it used. The scenario's own steps (creating Machines, breaking
Nodes, running the local provider) keep the admin identity; only the controllers' manager is
switched, by replacing the scenario module's "run the controller" helper with one that hands it
the service account's client.

Adding a controller's scenario is one :data:`SCENARIOS` entry: the test module, the scenario test,
and the name of the helper that starts the controller with a client as its first argument. Each
scenario gets fixtures of its own (``kube``, ``namespace``, ``provider_state_dir``, ``tmp_path``).
Grants no scenario reaches are listed in :data:`NOT_REACHED` with the reason they are needed.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import pytest_asyncio
import yaml

from apiserver.rbac import NON_RESOURCE, Access
from runtime.client import Client
from runtime.envtest import Environment, unique_namespace_name
from runtime.errors import AlreadyExists
from runtime.manager import Manager, ManagerOptions
from tests.integration import test_etcdquorum_controller, test_machinehealthcheck
from tests.support.localmachine import kill_recorded, track_state_dir

ROOT = Path(__file__).resolve().parents[2]
RBAC = ROOT / "config" / "rbac"

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Scenario:
    module: ModuleType
    test: str
    """A test function of ``module``; its fixtures are the integration conftest's."""
    runs_controller: str
    """The module-level helper of ``module`` that starts the controller, its client first."""


SCENARIOS = {
    "machinehealthcheck-remediates": Scenario(
        test_machinehealthcheck,
        "test_a_node_notready_past_the_timeout_gets_a_machine_with_a_controller_owner_deleted",
        "running_mhc_controller",
    ),
    "machinehealthcheck-marks-for-owner": Scenario(
        test_machinehealthcheck,
        "test_a_controlplane_owned_machine_is_marked_for_its_owner_never_deleted",
        "running_mhc_controller",
    ),
    "etcdquorum-lifecycle": Scenario(
        test_etcdquorum_controller,
        "test_scale_out_deletion_wait_replacement_repair_and_escape_hatch",
        "running_quorum_controller",
    ),
    "etcdquorum-external-etcd-tls": Scenario(
        test_etcdquorum_controller,
        "test_etcd_named_by_endpoints_is_reached_with_the_client_certificate_of_the_secret",
        "running_quorum_controller",
    ),
}

Grant = tuple[str, str, str]
"""(verb, API group, resource or resource/subresource) as a Role rule names it."""

_CONTROLPLANE = "the ControlPlane controller (its scenario joins SCENARIOS when it is merged) "
_STATUS_BY_UPDATE = (
    "granted with patch so a status may be written with update_status (a whole-status replace); "
    "the merged controllers patch status, the ControlPlane controller's use decides whether it stays"
)
NOT_REACHED: dict[Grant, str] = {
    ("create", "machine.openshift.io", "machines"): _CONTROLPLANE
    + "creates scale-out and replacement Machines",
    ("update", "machine.openshift.io", "machines"): _CONTROLPLANE + "adopts Machines (ownerReferences)",
    ("get", "machine.openshift.io", "machines/status"): _STATUS_BY_UPDATE,
    ("update", "machine.openshift.io", "machines/status"): _STATUS_BY_UPDATE,
    ("get", "machine.openshift.io", "machinehealthchecks"): _CONTROLPLANE
    + "reads its own MachineHealthCheck",
    ("create", "machine.openshift.io", "machinehealthchecks"): _CONTROLPLANE
    + "creates its MachineHealthCheck",
    ("update", "machine.openshift.io", "machinehealthchecks"): _CONTROLPLANE
    + "keeps its MachineHealthCheck in sync",
    ("patch", "machine.openshift.io", "machinehealthchecks"): _CONTROLPLANE
    + "keeps its MachineHealthCheck in sync",
    ("delete", "machine.openshift.io", "machinehealthchecks"): _CONTROLPLANE
    + "deletes its MachineHealthCheck",
    ("get", "machine.openshift.io", "machinehealthchecks/status"): _STATUS_BY_UPDATE,
    ("update", "machine.openshift.io", "machinehealthchecks/status"): _STATUS_BY_UPDATE,
    ("get", "controlplane.cpo.dev", "controlplanes"): _CONTROLPLANE
    + "reads a ControlPlane fresh after a conflict",
    ("update", "controlplane.cpo.dev", "controlplanes"): _CONTROLPLANE + "adds and removes its finalizer",
    ("patch", "controlplane.cpo.dev", "controlplanes"): _CONTROLPLANE + "adds and removes its finalizer",
    ("get", "controlplane.cpo.dev", "controlplanes/status"): _STATUS_BY_UPDATE,
    ("update", "controlplane.cpo.dev", "controlplanes/status"): _STATUS_BY_UPDATE,
    ("update", "controlplane.cpo.dev", "controlplanes/finalizers"): (
        _CONTROLPLANE + "sets blockOwnerDeletion on the Machines it owns "
        "(OwnerReferencesPermissionEnforcement checks this verb)"
    ),
    ("patch", "", "events"): (
        "an Event repeated within the recorder's aggregation window is patched (count, lastTimestamp) "
        "instead of created again; no scenario repeats one"
    ),
}
"""Grants of role.yaml no scenario uses, each with the path that needs it."""

REACHED_BY_TIMING: dict[Grant, str] = {
    ("get", "", "nodes"): (
        "the MachineHealthCheck asks the API server for a Machine's Node the cache does not hold "
        "before calling it missing: a Node labelled with neither control-plane role label, or one "
        "created a moment before its watch event reached the cache; whether a scenario hits the "
        "second depends on the order of two watch events"
    ),
}
"""Grants a scenario uses in some runs and not in others: exempt from both checks below."""


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def grants(role: dict[str, Any]) -> set[Grant]:
    return {
        (verb, group, resource)
        for rule in role["rules"]
        for verb in rule["verbs"]
        for group in rule.get("apiGroups", [])
        for resource in rule.get("resources", [])
    }


def as_grant(access: Access) -> Grant:
    resource = f"{access.resource}/{access.subresource}" if access.subresource else access.resource
    return access.verb, access.group, resource


@dataclass
class Operator:
    """The operator's service account in a namespace, bound like config/rbac binds it."""

    client: Client
    username: str
    namespace: str


@pytest_asyncio.fixture(loop_scope="session")
async def operator_identity(env: Environment, kube: Client, namespace: str) -> AsyncIterator[Operator]:
    server: Any = getattr(env, "embedded_server", None)
    if server is None or not hasattr(server, "enforce_rbac"):
        pytest.skip("RBAC recording is a feature of the embedded API server")
    account = documents(RBAC / "service_account.yaml")[0]
    name = account["metadata"]["name"]
    await kube.create({**account, "metadata": {"name": name, "namespace": namespace}})
    created: list[tuple[str, str, str, str | None]] = []
    for path in (
        "role.yaml",
        "role_binding.yaml",
        "leader_election_role.yaml",
        "leader_election_role_binding.yaml",
    ):
        for obj in documents(RBAC / path):
            obj = copy.deepcopy(obj)
            meta = obj["metadata"]
            if "namespace" in meta:
                meta["namespace"] = namespace
            if obj["kind"] == "ClusterRoleBinding":
                meta["name"] = f"{meta['name']}-{namespace}"
            for subject in obj.get("subjects", []):
                subject["namespace"] = namespace
            try:
                await kube.create(obj)
            except AlreadyExists:
                assert obj["kind"] == "ClusterRole", obj  # the same role.yaml, from another test
                continue
            if obj["kind"] != "ClusterRole":
                created.append((obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")))
    token = server.service_account_token(namespace, name)
    username = f"system:serviceaccount:{namespace}:{name}"
    kubeconfig = copy.deepcopy(env.kubeconfig)
    kubeconfig["users"][0]["user"] = {"token": token}
    server.enforce_rbac(username)
    async with await Client.from_kubeconfig(kubeconfig) as client:
        yield Operator(client, username, namespace)
    for api_version, kind, obj_name, obj_namespace in created:
        with contextlib.suppress(Exception):
            await kube.delete(api_version, kind, obj_name, obj_namespace)


async def leader_election_round(client: Client, namespace: str) -> None:
    """What every replica of ``cpo run`` does with the Lease: acquire it, hold it, release it."""
    import asyncio

    manager = Manager(
        ManagerOptions(
            client=client,
            metrics_bind_address="0",
            health_probe_bind_address="0",
            leader_election=True,
            leader_election_id="controlplane-operator.cpo.dev",
            leader_election_namespace=namespace,
            lease_duration=2,
            renew_deadline=1.5,
            retry_period=0.2,
        )
    )
    stop = asyncio.Event()
    task = asyncio.create_task(manager.start(stop))
    await asyncio.wait_for(manager.elected.wait(), timeout=10)
    stop.set()
    await task


async def test_role_yaml_grants_exactly_what_the_controllers_use(
    env: Environment,
    operator_identity: Operator,
    monkeypatch: pytest.MonkeyPatch,
    kube: Client,
    tmp_path: Path,
) -> None:
    server: Any = env.embedded_server
    recorder = server.record_access(operator_identity.username)
    for label, scenario in SCENARIOS.items():
        original: Callable[..., Any] = getattr(scenario.module, scenario.runs_controller)

        def as_operator(
            client: Client, *args: Any, _run: Callable[..., Any] = original, **kwargs: Any
        ) -> Any:
            del client  # the scenario's admin client: the controller gets the operator's instead
            return _run(operator_identity.client, *args, **kwargs)

        monkeypatch.setattr(scenario.module, scenario.runs_controller, as_operator)
        test = getattr(scenario.module, scenario.test)
        # Each scenario gets fixtures of its own (a namespace, folders), as when it runs as a test.
        scenario_namespace = unique_namespace_name(label)
        await env.create_namespace(scenario_namespace, labels={"cpo.dev/test": "true"})
        scenario_tmp = tmp_path / label
        scenario_tmp.mkdir()
        state_dir = track_state_dir(scenario_tmp / "machines")
        available = {
            "kube": kube,
            "namespace": scenario_namespace,
            "provider_state_dir": state_dir,
            "tmp_path": scenario_tmp,
        }
        try:
            await test(**{name: available[name] for name in inspect.signature(test).parameters})
        except Exception as err:
            raise AssertionError(f"scenario {label} failed under role.yaml: {err}") from err
        finally:
            await kill_recorded(state_dir)
            if not env.owns_cluster:
                await env.delete_namespace(scenario_namespace)
    await leader_election_round(operator_identity.client, operator_identity.namespace)

    used = {a for a in recorder.used if a.group != NON_RESOURCE}
    lease = {a for a in used if (a.group, a.resource) == ("coordination.k8s.io", "leases")}
    assert {a.namespace for a in lease} == {operator_identity.namespace}, lease
    cluster_role = documents(RBAC / "role.yaml")[0]
    (lease_role,) = documents(RBAC / "leader_election_role.yaml")
    granted = grants(cluster_role)
    used_by_controllers = {as_grant(a) for a in used - lease}
    missing = used_by_controllers - granted
    assert not missing, f"role.yaml lacks {sorted(missing)}"
    unused = granted - used_by_controllers - set(NOT_REACHED) - set(REACHED_BY_TIMING)
    assert not unused, f"role.yaml grants what no scenario uses: {sorted(unused)} (or list it in NOT_REACHED)"
    stale = set(NOT_REACHED) & used_by_controllers
    assert not stale, f"NOT_REACHED lists grants a scenario now uses: {sorted(stale)}"
    assert {as_grant(a) for a in lease} == grants(lease_role)
