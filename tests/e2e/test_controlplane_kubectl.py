"""``kubectl get cp``, ``kubectl describe cp`` and ``cpo explain`` (also as ``kubectl cpo explain``,
and live under a pseudo-terminal) show what the ControlPlane controller reports; the operator's
per-Machine conditions appear, and a settled ControlPlane costs no API write."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any

import pytest

from api.controlplane import API_VERSION as CP_API_VERSION
from api.machine import API_VERSION as MACHINE_API_VERSION
from runtime.client import Client
from tests.e2e.test_kubectl import Kubectl, _kubectl
from tests.support.controlplane import (
    CONTROLPLANE_COLUMNS,
    controlplane,
    get_cp,
    machines_of,
    running_controlplane,
)
from tests.support.localmachine import provider_options
from tests.support.poll import eventually
from tests.support.terminal import Terminal

BIN = Path(sys.executable).parent
"""The environment's scripts: ``cpo`` and ``kubectl-cpo`` of this worktree."""

EXPLAIN_KEYS = {"version", "kind", "controlPlane", "conditions", "machines", "etcd", "remediation", "plan"}
MACHINE_KEYS = {
    "name",
    "failureDomain",
    "phase",
    "node",
    "nodeReady",
    "etcd",
    "hooks",
    "upToDate",
    "components",
    "healthCheck",
    "deleting",
    "deletionTimestamp",
}

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.kubectl, pytest.mark.slow]


async def test_kubectl_get_and_describe_a_controlplane(
    env: Any, kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"cp{secrets.token_hex(3)}"
    k = Kubectl(env.kubeconfig_path, namespace)
    provider = provider_options(provider_state_dir)
    async with running_controlplane(kube, namespace, provider, hooks=True, health_checks=True):
        await kube.create(controlplane(name, namespace, replicas=1, domains=["zone-a"]))

        async def running() -> bool:
            cp = await get_cp(kube, name, namespace)
            return ((cp or {}).get("status") or {}).get("phase") == "Running"

        await eventually(running, timeout=30, message="ControlPlane Running")
        await machine_conditions_written(kube, name, namespace)
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

        await explain_shows_the_controlplane(env.kubeconfig_path, kube, name, namespace)


MACHINE_CONDITIONS = {
    "EtcdMemberHealthy": ("True", "Leader"),
    "UpToDate": ("True", "UpToDate"),
    "EtcdQuorumHookHolding": ("False", "Guarding"),
}
"""What the operator writes on the one Machine of a settled 1-replica ControlPlane."""


async def machine_conditions_written(kube: Client, name: str, namespace: str) -> None:
    """The operator's conditions appear on the Machines, and the health check counts them healthy.
    (That a settled control plane then writes nothing for 30 s is checked in the rolloutAfter
    test of tests/integration/test_controlplane_scaling.py, over 3 Machines.)"""

    async def conditions_written() -> bool:
        machines = await machines_of(kube, namespace)
        check = await kube.get(MACHINE_API_VERSION, "MachineHealthCheck", f"{name}-mhc", namespace)
        found = [
            {
                c["type"]: (c["status"], c.get("reason"))
                for c in (m.get("status") or {}).get("conditions") or ()
            }
            for m in machines
        ]
        return (
            bool(found)
            and all(
                all(conditions.get(t) == wanted for t, wanted in MACHINE_CONDITIONS.items())
                for conditions in found
            )
            and (check.get("status") or {}).get("currentHealthy") == 1
        )

    await eventually(conditions_written, timeout=30, message=f"Machine conditions {MACHINE_CONDITIONS}")


async def cpo(*args: str, env: dict[str, str] | None = None, program: str = "cpo") -> str:
    proc = await asyncio.create_subprocess_exec(
        str(BIN / program) if program == "cpo" else program,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **(env or {})},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, f"{program} {' '.join(args)} failed ({proc.returncode}): {err.decode()}"
    return out.decode()


async def explain_shows_the_controlplane(kubeconfig: Path, kube: Client, name: str, namespace: str) -> None:
    """``cpo explain`` on a settled ControlPlane: the table, the document, the plugin, the live view."""
    machines = sorted(m["metadata"]["name"] for m in await machines_of(kube, namespace))
    assert machines, "the ControlPlane has Machines"
    where = ["--kubeconfig", str(kubeconfig), "-n", namespace, name]

    screen = await cpo("explain", *where, env={"COLUMNS": "200"})
    for text in (f"ControlPlane {namespace}/{name}", "state Active", "phase Running", *machines):
        assert text in screen, f"{text!r} missing from cpo explain:\n{screen}"
    assert "plan: UpToDate" in screen, screen

    document = json.loads(await cpo("explain", *where, "-o", "json"))
    assert set(document) == EXPLAIN_KEYS, document.keys()
    assert document["controlPlane"]["name"] == name and document["controlPlane"]["state"] == "Active"
    assert sorted(m["name"] for m in document["machines"]) == machines
    for entry in document["machines"]:
        assert set(entry) == MACHINE_KEYS, entry.keys()
        assert entry["nodeReady"] == "True" and entry["failureDomain"] == "zone-a", entry
        # The operator's own Machine conditions, read by reason: the one member leads.
        assert (entry["etcd"]["role"], entry["etcd"]["healthy"], entry["etcd"]["reason"]) == (
            "leader",
            True,
            "Leader",
        ), entry["etcd"]
        assert (entry["upToDate"]["status"], entry["upToDate"]["reason"]) == ("True", "UpToDate"), entry
        holding = entry["hooks"]["etcdQuorumHookHolding"]
        assert (holding["status"], holding["reason"]) == ("False", "Guarding"), entry["hooks"]
        assert entry["hooks"]["etcdQuorumHook"] is True, entry["hooks"]
    assert {c["type"] for c in document["conditions"]} >= {"Available", "Progressing"}
    assert document["plan"]["progressing"]["reason"] == "UpToDate", document["plan"]
    etcd = document["etcd"]
    assert (etcd["known"], etcd["voters"], etcd["quorum"], etcd["leaderMachine"]) == (
        True,
        1,
        1,
        machines[0],
    ), etcd
    assert document["remediation"]["healthCheck"]["name"] == f"{name}-mhc", document["remediation"]

    # kubectl finds `kubectl-cpo` on PATH; its own flags may not precede the plugin's name.
    plugin = await cpo(
        "cpo", "explain", "-n", namespace, name, program=_kubectl(), env={"KUBECONFIG": str(kubeconfig)}
    )
    assert f"ControlPlane {namespace}/{name}" in plugin and all(m in plugin for m in machines), plugin

    # --watch in a terminal: the first frame, a redraw after a change, Ctrl-C ends it with 0.
    with Terminal([str(BIN / "cpo"), "explain", "--watch", *where]) as term:
        first = term.wait_for(f"ControlPlane {namespace}/{name}", timeout=30)
        term.wait_for(machines[0], timeout=10, after=first)
        assert "PAUSED" not in term.text
        await kube.patch(CP_API_VERSION, "ControlPlane", name, {"spec": {"paused": True}}, namespace)
        await asyncio.to_thread(term.wait_for, "PAUSED", timeout=15, after=first)
        term.type(b"\x03")
        assert await asyncio.to_thread(term.wait_exit, timeout=15) == 0, term.text
