"""``kubectl get cp`` and ``kubectl describe cp`` show what the ControlPlane controller reports."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from runtime.client import Client
from tests.e2e.test_kubectl import Kubectl
from tests.support.controlplane import controlplane, get_cp, running_controlplane
from tests.support.localmachine import CRD_DIR, kill_recorded, provider_options, track_state_dir
from tests.support.poll import eventually

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.kubectl, pytest.mark.slow]


@pytest_asyncio.fixture(loop_scope="session")
async def kube(env: Any) -> AsyncIterator[Client]:
    await env.install_crds([CRD_DIR])
    async with await Client.from_kubeconfig(env.kubeconfig) as client:
        yield client


@pytest_asyncio.fixture(loop_scope="session")
async def state_dir(tmp_path: Path) -> AsyncIterator[Path]:
    path = track_state_dir(tmp_path / "machines")
    try:
        yield path
    finally:
        await kill_recorded(path)


async def test_kubectl_get_and_describe_a_controlplane(
    env: Any, kube: Client, namespace: str, state_dir: Path
) -> None:
    name = f"cp{secrets.token_hex(3)}"
    k = Kubectl(env.kubeconfig_path, namespace)
    async with running_controlplane(kube, namespace, provider_options(state_dir)):
        await kube.create(controlplane(name, namespace, replicas=1, domains=["zone-a"]))

        async def running() -> bool:
            cp = await get_cp(kube, name, namespace)
            return ((cp or {}).get("status") or {}).get("phase") == "Running"

        await eventually(running, timeout=30, message="ControlPlane Running")
        table = await k.run("get", "cp", name)
        header, row = table.splitlines()[:2]
        assert header.split() == ["NAME", "DESIRED", "READY", "UPDATED", "AVAILABLE", "PHASE", "AGE"]
        assert row.split()[:6] == [name, "1", "1", "1", "1", "Running"]

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
