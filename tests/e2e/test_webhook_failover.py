"""Admission survives the loss of the replica it was talking to: two `cpo run` behind one Service.

As the Deployment runs it (config/manager): two replicas, both serving the webhooks, leader
election deciding which one runs the controllers. The API server calls the validating webhook
through a Service (``clientConfig.service``, ``failurePolicy: Fail``, the shipped
``timeoutSeconds``); the embedded API server maps that Service to a :class:`ServiceProxy`, which
plays kube-proxy: new connections go to either replica, and to the other when one refuses. The
replica that answered is killed (SIGKILL: no graceful stop), and the next write is still judged by
the validator, well within the timeout.
"""

from __future__ import annotations

import base64
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
import yaml

from runtime.client import Client
from runtime.errors import APIError
from tests.e2e.test_operator_process import (
    CP,
    ODD,
    controlplane,
    shipped_webhook_paths,
)
from tests.support.processes import ChildProcess, cpo_run_argv, cpo_run_ports, running_process
from tests.support.tcpproxy import ServiceProxy
from tests.support.webhooks import ServingCerts

ROOT = Path(__file__).resolve().parents[2]
MASTER = {"machine.openshift.io/cluster-api-machine-role": "master"}
WEBHOOK = ROOT / "config" / "webhook"


def shipped_timeout() -> int:
    docs = [d for d in yaml.safe_load_all((WEBHOOK / "manifests.yaml").read_text()) if d]
    (timeout,) = {hook["timeoutSeconds"] for doc in docs for hook in doc["webhooks"]}
    return int(timeout)


@pytest_asyncio.fixture(loop_scope="session")
async def replicas(
    machine_crds: None, client: Client, kubeconfig_path: Path, namespace: str, tmp_path: Path
) -> AsyncIterator[tuple[list[tuple[ChildProcess, int]], ServingCerts]]:
    """Two `cpo run`: (process, webhook port) each, sharing the serving pair of the Service; three
    control-plane Machines (objects only) exist before they start, so each replica's cache holds
    them once it is ready."""
    for index in range(3):
        await client.create(
            {
                "apiVersion": "machine.openshift.io/v1beta1",
                "kind": "Machine",
                "metadata": {"name": f"master-{index}", "namespace": namespace, "labels": dict(MASTER)},
                "spec": {},
            }
        )
    service = yaml.safe_load((WEBHOOK / "service.yaml").read_text())["metadata"]["name"]
    certs = ServingCerts(tmp_path / "certs")
    certs.write(certs.ca.serving_cert(["127.0.0.1", f"{service}.{namespace}.svc"]))
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    async with contextlib.AsyncExitStack() as stack:
        started = [
            await stack.enter_async_context(
                running_process(
                    cpo_run_argv(kubeconfig_path, certs.directory, namespace),
                    log_path=log_dir / f"replica-{index}.log",
                    cwd=tmp_path,
                )
            )
            for index in range(2)
        ]
        ports = []
        async with aiohttp.ClientSession() as session:
            for process in started:
                served = await cpo_run_ports(process)
                await process.wait_ready(session, f"http://127.0.0.1:{served.probes}/readyz")
                ports.append(served.webhook)
        yield list(zip(started, ports, strict=True)), certs


async def test_admission_answers_through_the_other_replica_when_the_one_serving_is_killed(
    env: Any, replicas: tuple[list[tuple[ChildProcess, int]], ServingCerts], client: Client, namespace: str
) -> None:
    server: Any = getattr(env, "embedded_server", None)
    if server is None or not hasattr(server, "map_service"):
        pytest.skip("mapping a Service to local endpoints is a feature of the embedded API server")
    processes, certs = replicas
    service = yaml.safe_load((WEBHOOK / "service.yaml").read_text())
    (service_port,) = service["spec"]["ports"]
    name = service["metadata"]["name"]
    proxy = ServiceProxy([("127.0.0.1", port) for _, port in processes])
    await proxy.start()
    server.map_service(namespace, name, service_port["port"], "127.0.0.1", proxy.port)
    timeout = shipped_timeout()
    configuration = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": f"vcontrolplane-failover.{namespace}.cpo.dev"},
        "webhooks": [
            {
                "name": "vcontrolplane.cpo.dev",
                "clientConfig": {
                    "service": {
                        "namespace": namespace,
                        "name": name,
                        "port": service_port["port"],
                        "path": shipped_webhook_paths()["ValidatingWebhookConfiguration"],
                    },
                    "caBundle": base64.b64encode(certs.ca.cert_pem).decode(),
                },
                "rules": [
                    {
                        "apiGroups": [CP.split("/")[0]],
                        "apiVersions": [CP.split("/")[1]],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["controlplanes"],
                    }
                ],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "failurePolicy": "Fail",
                "timeoutSeconds": timeout,
            }
        ],
    }
    created = await client.create(configuration)
    try:

        async def refused_as_even(cp_name: str) -> float:
            started = time.monotonic()
            try:
                await client.create(controlplane(cp_name, namespace, 4))
                raise AssertionError(f"{cp_name}: an even replica count was admitted")
            except APIError as err:
                # The validator's verdict, not a failed call (which failurePolicy Fail also refuses).
                assert f"spec.replicas: Invalid value: 4: {ODD}" in err.message, err.message
            return time.monotonic() - started

        async def refused_over_three_machines(cp_name: str) -> None:
            # The adoption rule reads Machines from the answering replica's cache, leader or not.
            body = controlplane(cp_name, namespace, 1)
            body["spec"]["template"]["metadata"] = {"labels": dict(MASTER)}
            try:
                await client.create(body)
                raise AssertionError(f"{cp_name}: 1 replica over 3 existing Machines was admitted")
            except APIError as err:
                assert "spec.replicas: Invalid value: 1: 3 control-plane Machine(s)" in err.message, (
                    err.message
                )

        await refused_as_even("before")
        await refused_over_three_machines("adopt-before")
        serving = proxy.served_by[-1]
        victim = next(p for p, port in processes if port == serving[1])
        await victim.kill()

        took = await refused_as_even("after")
        assert took < timeout, f"admission took {took:.1f} s, past the webhook timeout of {timeout} s"
        assert proxy.served_by[-1] != serving, proxy.served_by
        # Every later call lands on the survivor: kube-proxy would have dropped the endpoint too.
        assert (await refused_as_even("later")) < timeout
        # The replica killed judged "adopt-before", the survivor judges this: both held the rule,
        # and at most one of them held the Lease.
        await refused_over_three_machines("adopt-after")
    finally:
        await client.delete(created["apiVersion"], created["kind"], created["metadata"]["name"])
        await proxy.stop()
