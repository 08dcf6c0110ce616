"""The operator on a cluster that labels control-plane Nodes as kubeadm does (since Kubernetes
1.24): ``node-role.kubernetes.io/control-plane`` only, no ``node-role.kubernetes.io/master``.

One world, one scenario, watched whole by a quorum monitor: bootstrap 3, scale to 5, a killed
member remediated through the ControlPlane's own MachineHealthCheck (short timeouts), then one
spec change that is both a rolling update and a scale to 3 (the outdated Machines go first, the
rest are replaced one at a time). Every step needs the operator to see the Nodes: the preflight
wants a Ready Node per Machine, the health check a Node whose Ready condition it can time.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from api.controlplane import API_VERSION as CP_API_VERSION
from demo.monitor import QuorumMonitor
from runtime.client import JSON, Client
from tests.support.controlplane import (
    MachineCount,
    controlplane,
    first_client_url,
    machines_of,
    running_controlplane,
    settled,
)
from tests.support.localmachine import provider_options, set_fault
from tests.support.poll import eventually

pytestmark = pytest.mark.slow

MASTER = "node-role.kubernetes.io/master"
CONTROL_PLANE = "node-role.kubernetes.io/control-plane"

SECONDS_HEALTH_CHECK = {
    "unhealthyConditions": [
        {"type": "Ready", "status": "Unknown", "timeout": "2s"},
        {"type": "Ready", "status": "False", "timeout": "2s"},
    ],
    "nodeStartupTimeout": "60s",
}
"""The owned MachineHealthCheck's conditions, in seconds instead of OpenShift's minutes."""

NEW_TEMPLATE = {
    "metadata": {
        "labels": {"machine.openshift.io/cluster-api-machine-role": "master"},
        "annotations": {"cpo.dev/revision": "2"},
    },
    "spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "revision": "2"}}},
}
"""A new providerSpec (every Machine is replaced) and a new annotation (written in place)."""


async def nodes_of(kube: Client, machines: list[JSON]) -> list[JSON]:
    names = {((m.get("status") or {}).get("nodeRef") or {}).get("name") for m in machines}
    return [node for node in (await kube.list("v1", "Node"))["items"] if node["metadata"]["name"] in names]


async def remediated(kube: Client, name: str, namespace: str, victim: str) -> None:
    async def named() -> bool:
        cp = await kube.get(CP_API_VERSION, "ControlPlane", name, namespace)
        return bool(((cp.get("status") or {}).get("lastRemediation") or {}).get("machine") == victim)

    await eventually(named, timeout=60, message=f"lastRemediation names {victim}")


async def test_scaling_remediation_and_rollout_with_control_plane_labelled_nodes_only(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"cp{secrets.token_hex(3)}"
    provider = provider_options(provider_state_dir, node_role_labels="control-plane")
    async with running_controlplane(kube, namespace, provider, hooks=True, health_checks=True):
        await kube.create(controlplane(name, namespace, replicas=3, healthCheck=SECONDS_HEALTH_CHECK))
        async with QuorumMonitor([await first_client_url(kube, namespace)]) as monitor:
            await settled(kube, name, namespace, 3, within=90)
            machines = await machines_of(kube, namespace)
            labels = [node["metadata"].get("labels") or {} for node in await nodes_of(kube, machines)]
            assert len(labels) == 3 and all(CONTROL_PLANE in ls and MASTER not in ls for ls in labels), labels

            await kube.patch(CP_API_VERSION, "ControlPlane", name, {"spec": {"replicas": 5}}, namespace)
            await settled(kube, name, namespace, 5, within=90)
            assert monitor.peak("voters") <= 6 and monitor.peak("learners") <= 1

            victim = (await machines_of(kube, namespace))[0]["metadata"]["name"]
            killed = monitor.mark()
            await set_fault(kube, victim, namespace, "kill")
            await remediated(kube, name, namespace, victim)
            await settled(kube, name, namespace, 5, within=90)
            assert victim not in {m["metadata"]["name"] for m in await machines_of(kube, namespace)}
            assert monitor.low("voters", since=killed) >= 4 and monitor.peak("voters", since=killed) <= 6

            before = {m["metadata"]["name"] for m in await machines_of(kube, namespace)}
            rolled = monitor.mark()
            spec = {"replicas": 3, "template": NEW_TEMPLATE}
            async with MachineCount(kube, namespace) as count:
                await kube.patch(CP_API_VERSION, "ControlPlane", name, {"spec": spec}, namespace)
                await settled(kube, name, namespace, 3, within=150)
            assert count.peak <= 5 and count.deleting_peak <= 1, count.history
            after = await machines_of(kube, namespace)
            assert not before & {m["metadata"]["name"] for m in after}, "every Machine was replaced"
            assert all(m["spec"]["providerSpec"]["value"]["revision"] == "2" for m in after)
            assert all(m["metadata"]["annotations"]["cpo.dev/revision"] == "2" for m in after)
            assert monitor.low("voters", since=rolled) >= 3 and monitor.peak("voters", since=rolled) <= 6
            monitor.assert_never_lost_quorum()
