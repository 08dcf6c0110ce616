"""The MachineHealthCheck controller against real Machines: the local provider's etcd members and Nodes.

Each test runs the provider (in its own manager) and the ``machinehealthcheck`` controller in a
manager whose cache is scoped like ``cpo run``'s (control-plane Machines and Nodes only), then
breaks a Node with the provider's ``notready`` fault and watches what the controller does.
Timeouts are a few seconds, so every wait below is bounded by a deadline.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane import MHC_SCOPE_LABEL, MHC_SCOPE_VALUE
from api.machine import (
    API_VERSION,
    CONDITION_EXTERNAL_REMEDIATION_REQUEST_AVAILABLE,
    CONDITION_EXTERNAL_REMEDIATION_TEMPLATE_AVAILABLE,
    CONDITION_HEALTH_CHECK_SUCCEEDED,
    CONDITION_OWNER_REMEDIATED,
    CONDITION_REMEDIATION_ALLOWED,
    REASON_TOO_MANY_UNHEALTHY,
    REASON_UNHEALTHY_NODE,
    REASON_WAITING_FOR_REMEDIATION,
)
from controllers.cache_scope import MACHINE_ROLE_SELECTOR
from controllers.machinehealthcheck import (
    EVENT_MACHINE_DELETED,
    EVENT_REMEDIATION_RESTRICTED,
    EVENT_SKIPPED_NO_CONTROLLER,
    PAUSED_ANNOTATION,
    MachineHealthCheckOptions,
    setup_with_manager,
)
from controllers.machinehealthcheck.reconciler import MachineHealthCheckReconciler
from runtime.client import JSON, Client
from runtime.controller import ControllerOptions
from runtime.envtest import Environment
from runtime.events import EventRecorder
from runtime.manager import Manager
from runtime.metrics import registry
from runtime.reconcile import Request
from tests.support.localmachine import (
    HEARTBEAT,
    get_machine,
    machine,
    machine_condition,
    provider_options,
    ready_condition,
    running_provider,
    set_fault,
)
from tests.support.manager import running_manager
from tests.support.poll import eventually, holds_for

pytestmark = pytest.mark.slow

ROLE_KEY, ROLE_VALUE = MACHINE_ROLE_SELECTOR.split("=")
TIMEOUT = "2s"
"""How long a Node may be NotReady before it is unhealthy, in these tests."""
WITHIN = 30.0
"""Deadline of waits for a machine to start or for the controller to act (a loaded 2-core box)."""
QUIET = 3.0
"""How long a "nothing happens" observation lasts: longer than TIMEOUT plus a heartbeat."""

REMEDIATION_GROUP = "remediation.test.cpo.dev"
REMEDIATION_API_VERSION = f"{REMEDIATION_GROUP}/v1"


# ------------------------------------------------------------------------------------ helpers


@contextlib.asynccontextmanager
async def running_mhc_controller(client: Client, namespace: str) -> AsyncIterator[Manager]:
    """The ``machinehealthcheck`` controller in a manager scoped like ``cpo run``'s, in ``namespace``."""
    options = MachineHealthCheckOptions(controller=ControllerOptions(skip_name_validation=True))
    async with running_manager(
        client, namespace, lambda manager: setup_with_manager(manager, options)
    ) as manager:
        yield manager


@contextlib.asynccontextmanager
async def one_owned_machine(kube: Client, namespace: str, state_dir: Path, group: str) -> AsyncIterator[str]:
    """A running provider Machine labelled ``mhc-test: group`` with a controller owner (a
    ConfigMap), and the controller; yields the Machine's name (its Node has the same)."""
    name = f"{prefix()}-w0"
    owner = await make_owner(kube, namespace)
    async with running_provider(kube, namespace, provider_options(state_dir)):
        await start_machines(
            kube, namespace, control_plane_machine(name, namespace, owner, **{"mhc-test": group})
        )
        async with running_mhc_controller(kube, namespace):
            yield name


@contextlib.asynccontextmanager
async def one_owned_machine_checked(
    kube: Client, namespace: str, state_dir: Path, **check_spec: Any
) -> AsyncIterator[str]:
    """:func:`one_owned_machine` and the MachineHealthCheck ``workers`` over it (``check_spec``
    overrides its spec) reporting it healthy; yields the Machine's name."""
    async with one_owned_machine(kube, namespace, state_dir, "a") as name:
        await kube.create(health_check("workers", namespace, "a", **check_spec))
        await eventually(
            lambda: _status_is(kube, "workers", namespace, expectedMachines=1, currentHealthy=1),
            timeout=WITHIN,
            message="status: 1 expected, 1 healthy",
        )
        yield name


def control_plane_machine(name: str, namespace: str, owner: JSON | None, **labels: str) -> JSON:
    """A provider Machine with the control-plane role label (the operator sees no other)."""
    obj = machine(name, namespace)
    obj["metadata"]["labels"] = {ROLE_KEY: ROLE_VALUE, **labels}
    if owner is not None:
        obj["metadata"]["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    return obj


def health_check(name: str, namespace: str, group: str, **spec: Any) -> JSON:
    """A MachineHealthCheck over the Machines labelled ``mhc-test: group``, carrying the scope
    label that opts it in to this operator's controller (an unlabelled one is another's)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "MachineHealthCheck",
        "metadata": {"name": name, "namespace": namespace, "labels": {MHC_SCOPE_LABEL: MHC_SCOPE_VALUE}},
        "spec": {
            "selector": {"matchLabels": {"mhc-test": group}},
            "unhealthyConditions": [
                {"type": "Ready", "status": "False", "timeout": TIMEOUT},
                {"type": "Ready", "status": "Unknown", "timeout": TIMEOUT},
            ],
            "nodeStartupTimeout": "0",
            **spec,
        },
    }


async def make_owner(client: Client, namespace: str) -> JSON:
    """Any object can be a Machine's controller owner; a ConfigMap stands in for a MachineSet."""
    return await client.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": namespace}}
    )


async def start_machines(client: Client, namespace: str, *objs: JSON) -> None:
    for obj in objs:
        await client.create(obj)
    for obj in objs:
        name = obj["metadata"]["name"]
        await eventually(
            lambda name=name: _node_ready(client, name, "True"), timeout=WITHIN, message=f"{name} Ready"
        )


async def set_paused(client: Client, name: str, namespace: str, paused: bool) -> None:
    annotations = {PAUSED_ANNOTATION: "" if paused else None}
    await client.patch(
        API_VERSION, "MachineHealthCheck", name, {"metadata": {"annotations": annotations}}, namespace
    )


async def _node_ready(client: Client, name: str, status: str) -> bool:
    try:
        node = await client.get("v1", "Node", name)
    except Exception:
        return False
    return ready_condition(node).get("status") == status


async def deleting(client: Client, name: str, namespace: str) -> bool:
    obj = await get_machine(client, name, namespace)
    return obj is None or bool(obj["metadata"].get("deletionTimestamp"))


async def mhc_status(client: Client, name: str, namespace: str) -> JSON:
    return (await client.get(API_VERSION, "MachineHealthCheck", name, namespace)).get("status") or {}


async def events(client: Client, namespace: str, reason: str, involved: str) -> list[JSON]:
    items = (await client.list("v1", "Event", namespace))["items"]
    return [
        e
        for e in items
        if e.get("reason") == reason and (e.get("involvedObject") or {}).get("name") == involved
    ]


def metric(name: str, mhc: str, namespace: str) -> float | None:
    return registry.get_sample_value(name, {"name": mhc, "namespace": namespace})


def prefix() -> str:
    return f"mhc{secrets.token_hex(3)}"


@pytest_asyncio.fixture(loop_scope="session")
async def remediation_crds(env: Environment) -> None:
    """A remediation template kind and its request kind, as an external remediator ships them."""
    crds = []
    for kind in ("TestRemediationTemplate", "TestRemediation"):
        plural = kind.lower() + "s"
        crds.append(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{plural}.{REMEDIATION_GROUP}"},
                "spec": {
                    "group": REMEDIATION_GROUP,
                    "scope": "Namespaced",
                    "names": {
                        "kind": kind,
                        "plural": plural,
                        "singular": kind.lower(),
                        "listKind": kind + "List",
                    },
                    "versions": [
                        {
                            "name": "v1",
                            "served": True,
                            "storage": True,
                            "schema": {
                                "openAPIV3Schema": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                }
                            },
                        }
                    ],
                },
            }
        )
    await env.install_crds(crds)


# -------------------------------------------------------------------------------------- tests


async def test_a_node_notready_past_the_timeout_gets_a_machine_with_a_controller_owner_deleted(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    async with one_owned_machine_checked(kube, namespace, provider_state_dir) as name:
        assert not await deleting(kube, name, namespace)
        # Status is written only when it changes: a reconcile that finds nothing new (woken by
        # a Machine change that does not matter to its health) leaves the object alone.
        version = (await kube.get(API_VERSION, "MachineHealthCheck", "workers", namespace))["metadata"][
            "resourceVersion"
        ]
        await kube.patch(
            API_VERSION, "Machine", name, {"metadata": {"annotations": {"touched": "1"}}}, namespace
        )
        await holds_for(
            lambda: _resource_version_is(kube, "workers", namespace, version),
            duration=4 * HEARTBEAT,
            message="MachineHealthCheck not rewritten",
        )
        await set_fault(kube, name, namespace, "notready")
        await eventually(lambda: deleting(kube, name, namespace), timeout=WITHIN, message=f"{name} deleted")
        await eventually(
            lambda: events(kube, namespace, EVENT_MACHINE_DELETED, name),
            timeout=10,
            message="MachineDeleted",
        )
        await eventually(
            lambda: metric("mapi_machinehealthcheck_remediation_success_total", "workers", namespace) == 1,
            timeout=5,
            message="one remediation counted",
        )
        assert metric("mapi_machinehealthcheck_short_circuit", "workers", namespace) == 0
        await eventually(
            lambda: _gone(kube, name, namespace),
            timeout=WITHIN,
            message=f"{name} gone (provider finalizer)",
        )
        await eventually(
            lambda: metric("mapi_machinehealthcheck_nodes_covered", "workers", namespace) == 0,
            timeout=10,
            message="no node covered any more",
        )
        await kube.delete(API_VERSION, "MachineHealthCheck", "workers", namespace)
        await eventually(
            lambda: metric("mapi_machinehealthcheck_nodes_covered", "workers", namespace) is None,
            timeout=10,
            message="series removed with the MachineHealthCheck",
        )


async def test_a_matching_node_condition_without_a_transition_time_is_remediated_at_once(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    """A Node condition that matches an ``unhealthyConditions`` entry but carries no
    ``lastTransitionTime`` (a tool that sets conditions without one) is past the entry's timeout
    at once, as in the machine-api-operator; it is not counted from each pass's "now", which would
    put the deadline off for ever."""
    entry = {"type": "NetworkUnavailable", "status": "True", "timeout": "300s"}
    async with one_owned_machine_checked(
        kube, namespace, provider_state_dir, unhealthyConditions=[entry]
    ) as name:
        node = await kube.get("v1", "Node", name)
        conditions = list((node.get("status") or {}).get("conditions") or ())
        untimed = {"type": "NetworkUnavailable", "status": "True", "reason": "NoRouteCreated"}
        await kube.patch_status("v1", "Node", name, {"status": {"conditions": [*conditions, untimed]}})
        await eventually(lambda: deleting(kube, name, namespace), timeout=WITHIN, message=f"{name} deleted")


async def test_a_controlplane_owned_machine_is_marked_for_its_owner_never_deleted(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"{prefix()}-m0"
    owner = await kube.create(
        {
            "apiVersion": CP_API_VERSION,
            "kind": "ControlPlane",
            "metadata": {"name": "cluster", "namespace": namespace},
            "spec": {"replicas": 1, "template": {"spec": {"providerSpec": {"value": {}}}}},
        }
    )
    async with running_provider(kube, namespace, provider_options(provider_state_dir)):
        await start_machines(
            kube, namespace, control_plane_machine(name, namespace, owner, **{"mhc-test": "b"})
        )
        async with running_mhc_controller(kube, namespace):
            await kube.create(health_check("masters", namespace, "b"))
            await eventually(
                lambda: _status_is(kube, "masters", namespace, expectedMachines=1, currentHealthy=1),
                timeout=WITHIN,
                message="status: 1 healthy",
            )
            await set_fault(kube, name, namespace, "notready")

            async def marked() -> bool:
                obj = await get_machine(kube, name, namespace)
                check = machine_condition(obj, CONDITION_HEALTH_CHECK_SUCCEEDED)
                owner_cond = machine_condition(obj, CONDITION_OWNER_REMEDIATED)
                return (
                    check.get("status") == "False"
                    and check.get("reason") == REASON_UNHEALTHY_NODE
                    and owner_cond.get("status") == "False"
                    and owner_cond.get("reason") == REASON_WAITING_FOR_REMEDIATION
                )

            await eventually(marked, timeout=WITHIN, message=f"{name} marked")
            obj = await get_machine(kube, name, namespace)
            message = machine_condition(obj, CONDITION_HEALTH_CHECK_SUCCEEDED)["message"]
            assert "Ready=False since" in message and "longer than its timeout of 2s" in message, message
            await holds_for(
                lambda: _not(deleting(kube, name, namespace)), duration=QUIET, message=f"{name} not deleted"
            )
            assert metric("mapi_machinehealthcheck_remediation_success_total", "masters", namespace) == 1

            # Recovered before its owner acted: the mark is cleared, the owner has nothing to do.
            await set_fault(kube, name, namespace, None)

            async def cleared() -> bool:
                obj = await get_machine(kube, name, namespace)
                return machine_condition(obj, CONDITION_HEALTH_CHECK_SUCCEEDED).get(
                    "status"
                ) == "True" and not machine_condition(obj, CONDITION_OWNER_REMEDIATED)

            await eventually(cleared, timeout=WITHIN, message="mark cleared once healthy")
            assert not await deleting(kube, name, namespace)


async def test_too_many_unhealthy_short_circuits_until_they_heal(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    p = prefix()
    names = [f"{p}-m0", f"{p}-m1"]
    async with running_provider(kube, namespace, provider_options(provider_state_dir)):
        # No controller owner: were remediation allowed, each would get a SkippedNoController event.
        await start_machines(
            kube, namespace, *(control_plane_machine(n, namespace, None, **{"mhc-test": "c"}) for n in names)
        )
        async with running_mhc_controller(kube, namespace):
            await kube.create(health_check("pair", namespace, "c", maxUnhealthy=1))
            await eventually(
                lambda: _status_is(kube, "pair", namespace, currentHealthy=2, remediationsAllowed=1),
                timeout=WITHIN,
                message="status: 2 healthy, 1 remediation allowed",
            )
            # Both Nodes go NotReady while the check is paused, so it never sees one without the other.
            await set_paused(kube, "pair", namespace, True)
            for name in names:
                await set_fault(kube, name, namespace, "notready")
            for name in names:
                await eventually(
                    lambda name=name: _node_ready(kube, name, "False"),
                    timeout=WITHIN,
                    message=f"{name} NotReady",
                )
            await set_paused(kube, "pair", namespace, False)

            async def short_circuited() -> bool:
                status = await mhc_status(kube, "pair", namespace)
                allowed = _condition(status, CONDITION_REMEDIATION_ALLOWED)
                return (
                    allowed.get("status") == "False"
                    and allowed.get("reason") == REASON_TOO_MANY_UNHEALTHY
                    and status.get("remediationsAllowed") == 0
                    and status.get("currentHealthy") == 0
                )

            await eventually(short_circuited, timeout=WITHIN, message="short-circuited")
            status = await mhc_status(kube, "pair", namespace)
            assert _condition(status, CONDITION_REMEDIATION_ALLOWED)["message"] == (
                "Remediation is not allowed, the number of not started or unhealthy machines exceeds "
                "maxUnhealthy (total: 2, unhealthy: 2, maxUnhealthy: 1)"
            )
            assert metric("mapi_machinehealthcheck_short_circuit", "pair", namespace) == 1
            restricted = await eventually(
                lambda: events(kube, namespace, EVENT_REMEDIATION_RESTRICTED, "pair"),
                timeout=10,
                message="RemediationRestricted event",
            )
            assert restricted[0]["type"] == "Warning"
            assert "(total: 2, unhealthy: 2, maxUnhealthy: 1)" in restricted[0]["message"]

            async def nothing_remediated() -> bool:
                return all([not await events(kube, namespace, EVENT_SKIPPED_NO_CONTROLLER, n) for n in names])

            await holds_for(
                nothing_remediated, duration=QUIET, message="no remediation while short-circuited"
            )

            for name in names:
                await set_fault(kube, name, namespace, None)

            async def recovered() -> bool:
                status = await mhc_status(kube, "pair", namespace)
                return (
                    _condition(status, CONDITION_REMEDIATION_ALLOWED).get("status") == "True"
                    and status.get("currentHealthy") == 2
                    and metric("mapi_machinehealthcheck_short_circuit", "pair", namespace) == 0
                )

            await eventually(recovered, timeout=WITHIN, message="short-circuit lifted once healed")


async def test_a_paused_machinehealthcheck_keeps_its_status_but_remediates_nothing(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    async with one_owned_machine(kube, namespace, provider_state_dir, "d") as name:
        paused = health_check("paused", namespace, "d")
        paused["metadata"]["annotations"] = {PAUSED_ANNOTATION: ""}
        await kube.create(paused)
        await set_fault(kube, name, namespace, "notready")
        await eventually(
            lambda: _status_is(kube, "paused", namespace, expectedMachines=1, currentHealthy=0),
            timeout=WITHIN,
            message="status written while paused",
        )
        await holds_for(
            lambda: _not(deleting(kube, name, namespace)),
            duration=QUIET,
            message="not remediated while paused",
        )
        await set_paused(kube, "paused", namespace, False)
        await eventually(
            lambda: deleting(kube, name, namespace), timeout=WITHIN, message="deleted once unpaused"
        )


async def test_an_external_remediation_request_is_created_from_the_template_and_removed_once_healthy(
    kube: Client, namespace: str, provider_state_dir: Path, remediation_crds: None
) -> None:
    name = f"{prefix()}-w0"
    owner = await make_owner(kube, namespace)
    await kube.create(
        {
            "apiVersion": REMEDIATION_API_VERSION,
            "kind": "TestRemediationTemplate",
            "metadata": {"name": "reboot", "namespace": namespace},
            "spec": {"template": {"metadata": {"labels": {"how": "reboot"}}, "spec": {"strategy": "Reboot"}}},
        }
    )
    async with running_provider(kube, namespace, provider_options(provider_state_dir)):
        await start_machines(
            kube, namespace, control_plane_machine(name, namespace, owner, **{"mhc-test": "e"})
        )
        async with running_mhc_controller(kube, namespace):
            await kube.create(
                health_check(
                    "external",
                    namespace,
                    "e",
                    remediationTemplate={
                        "apiVersion": REMEDIATION_API_VERSION,
                        "kind": "TestRemediationTemplate",
                        "name": "reboot",
                    },
                )
            )
            await set_fault(kube, name, namespace, "notready")
            request = await eventually(
                lambda: _get(kube, REMEDIATION_API_VERSION, "TestRemediation", name, namespace),
                timeout=WITHIN,
                message="remediation request created",
            )
            machine_obj = await get_machine(kube, name, namespace)
            assert machine_obj is not None
            assert request["spec"] == {"strategy": "Reboot"}
            assert request["metadata"]["labels"] == {"how": "reboot"}
            assert request["metadata"]["ownerReferences"][0]["uid"] == machine_obj["metadata"]["uid"]
            status = await mhc_status(kube, "external", namespace)
            assert (
                _condition(status, CONDITION_EXTERNAL_REMEDIATION_TEMPLATE_AVAILABLE).get("status") == "True"
            )
            assert (
                _condition(status, CONDITION_EXTERNAL_REMEDIATION_REQUEST_AVAILABLE).get("status") == "True"
            )
            assert not machine_obj["metadata"].get("deletionTimestamp"), (
                "handed to the remediator, not deleted"
            )

            await set_fault(kube, name, namespace, None)
            await eventually(
                lambda: _not(_get(kube, REMEDIATION_API_VERSION, "TestRemediation", name, namespace)),
                timeout=WITHIN,
                message="remediation request removed once healthy",
            )
            assert not await deleting(kube, name, namespace)


# ------------------------------------------------------------------------------------ helpers


async def _status_is(client: Client, name: str, namespace: str, **expected: Any) -> bool:
    status = await mhc_status(client, name, namespace)
    return all(status.get(key) == value for key, value in expected.items())


def _condition(status: JSON, type_: str) -> JSON:
    for condition in status.get("conditions") or ():
        if condition.get("type") == type_:
            return dict(condition)
    return {}


async def _resource_version_is(client: Client, name: str, namespace: str, version: str) -> bool:
    obj = await client.get(API_VERSION, "MachineHealthCheck", name, namespace)
    return bool(obj["metadata"]["resourceVersion"] == version)


async def _not(value: Any) -> bool:
    return not await value


async def _gone(client: Client, name: str, namespace: str) -> bool:
    return await get_machine(client, name, namespace) is None


async def _get(client: Client, api_version: str, kind: str, name: str, namespace: str) -> JSON | None:
    try:
        return await client.get(api_version, kind, name, namespace)
    except Exception:
        return None


class _StaleHealthCheckReader:
    """What a pass reads when the cache has not yet seen the previous pass's status write: an
    older copy of the MachineHealthCheck; everything else as the API server has it now."""

    def __init__(self, client: Client, stale: JSON) -> None:
        self.client = client
        self.stale = stale

    async def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> JSON:
        if kind == "MachineHealthCheck":
            return self.stale
        return await self.client.get(api_version, kind, name, namespace)

    async def list(
        self, api_version: str, kind: str, *, namespace: str | None = None, **_: Any
    ) -> list[JSON]:
        listed = await self.client.list(api_version, kind, namespace)
        return list(listed.get("items") or ())


async def test_a_pass_working_from_a_stale_copy_still_writes_its_status(kube: Client, namespace: str) -> None:
    """Machine events close together start a pass before the cache holds the previous pass's
    status write. The status is computed whole from the Machines, and this controller is its only
    writer, so that pass's write is right: it must land (a merge patch without the optimistic
    lock, as machine-api-operator's), not fail with a conflict and retry with backoff."""
    name = f"{prefix()}-stale"
    await kube.create(control_plane_machine(name, namespace, None, **{"mhc-test": "stale"}))
    await kube.create(health_check("stale", namespace, "stale"))
    stale = await kube.get(API_VERSION, "MachineHealthCheck", "stale", namespace)
    # the previous pass's write, which the cache has not seen yet
    await kube.patch_status(
        API_VERSION, "MachineHealthCheck", "stale", {"status": {"expectedMachines": 0}}, namespace
    )
    reconciler = MachineHealthCheckReconciler(
        kube,
        _StaleHealthCheckReader(kube, stale),
        EventRecorder(kube, "test"),  # type: ignore[arg-type]
    )
    await reconciler.reconcile(Request(namespace=namespace, name="stale"))
    status = (await kube.get(API_VERSION, "MachineHealthCheck", "stale", namespace))["status"]
    assert status["expectedMachines"] == 1, status
