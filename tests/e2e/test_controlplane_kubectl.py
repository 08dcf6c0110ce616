"""``kubectl get cp`` and ``kubectl describe cp`` show what the ControlPlane controller reports."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from runtime.client import Client
from tests.e2e.test_kubectl import Kubectl
from tests.support.controlplane import CONTROLPLANE_COLUMNS, controlplane, get_cp, running_controlplane
from tests.support.localmachine import provider_options
from tests.support.poll import eventually

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.kubectl, pytest.mark.slow]


async def test_kubectl_get_and_describe_a_controlplane(
    env: Any, kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"cp{secrets.token_hex(3)}"
    k = Kubectl(env.kubeconfig_path, namespace)
    async with running_controlplane(kube, namespace, provider_options(provider_state_dir)):
        await kube.create(controlplane(name, namespace, replicas=1, domains=["zone-a"]))

        async def running() -> bool:
            cp = await get_cp(kube, name, namespace)
            return ((cp or {}).get("status") or {}).get("phase") == "Running"

        await eventually(running, timeout=30, message="ControlPlane Running")
        table = await k.run("get", "cp", name)
        header, row = table.splitlines()[:2]
        assert header.split() == CONTROLPLANE_COLUMNS
        assert row.split()[:9] == [name, "1", "1", "1", "1", "1", "0", "Active", "Running"]

        # Available says what it judged: the stacked etcd's quorum, and the Machines that serve.
        conditions = {
            c["type"]: c for c in ((await get_cp(kube, name, namespace)) or {})["status"]["conditions"]
        }
        available = conditions["Available"]
        assert available["status"] == "True", available
        assert available["message"] == "etcd has quorum (1 of 1 voter(s) healthy); 1 Machine(s) serve", (
            available
        )
        assert conditions["Degraded"]["status"] == "False", conditions["Degraded"]

        # The scale subresource carries status.selector, as `kubectl scale` and an HPA need.
        raw = await k.run(
            "get",
            "--raw",
            f"/apis/controlplane.cpo.dev/v1alpha1/namespaces/{namespace}/controlplanes/{name}/scale",
        )
        scale = json.loads(raw)
        assert scale["spec"]["replicas"] == 1 and scale["status"]["replicas"] == 1
        assert scale["status"]["selector"] == "machine.openshift.io/cluster-api-machine-role=master"
        assert "scaled" in await k.run("scale", "cp", name, "--replicas=1")

        described = await k.run("describe", "cp", name)
        for text in ("Conditions:", "Available", "Progressing", "MachinesReady", "Events:", "MachineCreated"):
            assert text in described, f"{text!r} missing from kubectl describe:\n{described}"
