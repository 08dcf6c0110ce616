"""Beside another MachineHealthCheck controller: `cpo run` leaves MachineHealthChecks not its own alone.

One world, as on OpenShift: the Machine API CRDs with OpenShift's MachineHealthCheck schema (an
``unhealthyConditions`` entry may omit ``timeout``), two worker Machines (a providerSpec kind no
provider serves, the worker role label) and the worker MachineHealthCheck ``workers`` whose status
the machine-api-operator wrote; a ControlPlane over one master Machine. `cpo run` runs every
controller, its webhook configurations are the shipped ones (demo.world.webhook_configurations:
config/webhook and config/machinehealthcheck, pointed at the process). For 30 s the worker check's
``resourceVersion`` never moves while the ControlPlane's own check gets its status; then a change
the operator's rules refuse but OpenShift's schema accepts (an entry without ``timeout``) is
accepted, and still nothing writes the worker check. Takes about 45 s.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest_asyncio

from apiserver import EmbeddedServerOptions
from demo.world import webhook_configurations
from runtime.client import JSON, Client
from runtime.envtest import Environment, EnvironmentOptions
from runtime.envtest.manifests import load_manifests
from tests.support.poll import eventually, holds_for
from tests.support.processes import ChildProcess, cpo_run_argv, cpo_run_ports, running_process
from tests.support.webhooks import ServingCerts

ROOT = Path(__file__).resolve().parents[2]
MACHINE_API = "machine.openshift.io/v1beta1"
ROLE = "machine.openshift.io/cluster-api-machine-role"
NAMESPACE = "openshift-machine-api"
UNSERVED = {"kind": "UnservedProviderSpec", "instanceType": "m6i.xlarge"}
"""A providerSpec no provider of this world serves: nothing acts on these Machines but the test."""
HOLDS = 30.0
WITHIN = 60.0


def openshift_like_crds() -> list[JSON]:
    """The project's CRDs, with the MachineHealthCheck schema as OpenShift's generated CRD has it:
    no field of an ``unhealthyConditions`` entry required (openshift/api machine/v1beta1)."""
    crds = load_manifests(
        [ROOT / "config" / "crd", ROOT / "config" / "machine-api"], kinds={"CustomResourceDefinition"}
    )
    crds = copy.deepcopy(crds)
    for crd in crds:
        if crd["metadata"]["name"] == "machinehealthchecks.machine.openshift.io":
            for version in crd["spec"]["versions"]:
                spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
                spec["properties"]["unhealthyConditions"]["items"].pop("required", None)
    return crds


def machine(name: str, role: str) -> JSON:
    return {
        "apiVersion": MACHINE_API,
        "kind": "Machine",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {ROLE: role}},
        "spec": {"providerSpec": {"value": UNSERVED}},
    }


WORKER_CHECK: JSON = {
    "apiVersion": MACHINE_API,
    "kind": "MachineHealthCheck",
    "metadata": {"name": "workers", "namespace": NAMESPACE},
    "spec": {
        "selector": {"matchLabels": {ROLE: "worker"}},
        "unhealthyConditions": [{"type": "Ready", "status": "False", "timeout": "300s"}],
        "maxUnhealthy": "40%",
    },
}
MAO_STATUS = {"expectedMachines": 2, "currentHealthy": 2, "remediationsAllowed": 0}
"""The worker check's status as its own controller (the machine-api-operator) wrote it."""


async def world(client: Client) -> str:
    """The Machines, the worker check with its status; returns that check's resourceVersion."""
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    for name, role in (("master-0", "master"), ("worker-0", "worker"), ("worker-1", "worker")):
        await client.create(machine(name, role))
        await client.patch_status(MACHINE_API, "Machine", name, {"status": {"phase": "Running"}}, NAMESPACE)
    await client.create(WORKER_CHECK)
    written = await client.patch_status(
        MACHINE_API, "MachineHealthCheck", "workers", {"status": MAO_STATUS}, NAMESPACE
    )
    return str(written["metadata"]["resourceVersion"])


@pytest_asyncio.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[Client, ChildProcess, str]]:
    """The world, and `cpo run` (every controller, webhooks on) with the shipped webhooks registered."""
    options = EnvironmentOptions(backend="embedded", embedded=EmbeddedServerOptions())
    async with Environment(options) as env, await Client.from_kubeconfig(env.kubeconfig) as client:
        await env.install_crds(openshift_like_crds())
        version = await world(client)
        certs = ServingCerts(tmp_path / "certs")
        certs.write()
        argv = cpo_run_argv(env.kubeconfig_path, certs.directory)
        async with running_process(argv, log_path=tmp_path / "operator.log", cwd=tmp_path) as process:
            ports = await cpo_run_ports(process)
            async with aiohttp.ClientSession() as session:
                await process.wait_ready(session, f"http://127.0.0.1:{ports.probes}/readyz")
            for configuration in webhook_configurations(ports.webhook, certs.ca.cert_pem):
                await client.create(configuration)
            yield client, process, version


async def worker_check(client: Client) -> JSON:
    return await client.get(MACHINE_API, "MachineHealthCheck", "workers", NAMESPACE)


async def test_the_worker_check_is_neither_judged_nor_written_while_the_controlplanes_is_checked(
    cluster: tuple[Client, ChildProcess, str],
) -> None:
    client, process, version = cluster
    await client.create(
        {
            "apiVersion": "controlplane.cpo.dev/v1alpha1",
            "kind": "ControlPlane",
            "metadata": {"name": "cluster", "namespace": NAMESPACE},
            "spec": {"replicas": 1, "template": {"spec": {"providerSpec": {"value": UNSERVED}}}},
        }
    )

    async def own_check_status() -> Any:
        try:
            own = await client.get(MACHINE_API, "MachineHealthCheck", "cluster-mhc", NAMESPACE)
        except Exception:
            return None
        return (own.get("status") or {}).get("expectedMachines") == 1

    await eventually(own_check_status, timeout=WITHIN, message="the ControlPlane's MachineHealthCheck status")

    async def untouched() -> bool:
        found = await worker_check(client)
        return found["metadata"]["resourceVersion"] == version and found["status"] == MAO_STATUS

    await holds_for(
        untouched, duration=HOLDS, message="the worker MachineHealthCheck left as its owner wrote it"
    )

    current = await worker_check(client)
    no_timeout = {"type": "Ready", "status": "Unknown"}
    changed = await client.patch(
        MACHINE_API,
        "MachineHealthCheck",
        "workers",
        {
            "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
            "spec": {"unhealthyConditions": [*current["spec"]["unhealthyConditions"], no_timeout]},
        },
        NAMESPACE,
    )
    assert changed["spec"]["unhealthyConditions"][-1] == no_timeout
    version = changed["metadata"]["resourceVersion"]
    await holds_for(untouched, duration=5.0, message="the changed worker MachineHealthCheck not written")
    assert process.returncode is None, process.log_tail()
