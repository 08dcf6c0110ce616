"""`cpo run`'s secured /metrics: HTTPS, and only identities the API server says may get /metrics.

The operator runs as a process with its defaults (``--metrics-secure``), the certificate of
``--metrics-cert-dir``; the scrapers are service accounts whose tokens come from the TokenRequest
API (``kubectl create token``): the ServiceMonitor's identity, bound to ``cpo-metrics-reader``
as ``config/prometheus/metrics_reader_binding.yaml`` binds it, and one without that binding.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest_asyncio
import yaml

from runtime.client import Client
from runtime.errors import AlreadyExists
from tests.support.kubehttp import KubeHTTP
from tests.support.poll import eventually
from tests.support.processes import (
    METRICS_PORT_LOG,
    START_WITHIN,
    ChildProcess,
    cpo_run_argv,
    running_process,
)
from tests.support.webhooks import ServingCerts

ROOT = Path(__file__).resolve().parents[2]


def manifest(path: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((ROOT / "config" / path).read_text())
    return doc


async def service_account_token(kube: KubeHTTP, namespace: str, name: str) -> str:
    """What ``kubectl create token <name> -n <namespace>`` does."""
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
    created = await kube.post(f"/api/v1/namespaces/{namespace}/serviceaccounts", sa)
    assert created.status in (201, 409), created.text
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    minted = await kube.post(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", request)
    assert minted.status == 201, minted.text
    return str(minted.body["status"]["token"])


@pytest_asyncio.fixture(loop_scope="session")
async def secure_operator(
    machine_crds: None, kubeconfig_path: Path, tmp_path: Path
) -> AsyncIterator[tuple[ChildProcess, int, ServingCerts]]:
    certs = ServingCerts(tmp_path / "certs")
    certs.write()
    argv = [a for a in cpo_run_argv(kubeconfig_path, certs.directory) if a != "--metrics-secure=false"]
    argv += ["--metrics-cert-dir", str(certs.directory)]  # the webhook's pair serves 127.0.0.1 too
    async with running_process(argv, log_path=tmp_path / "operator.log", cwd=tmp_path) as process:
        port = await process.port_from_log(METRICS_PORT_LOG)
        yield process, port, certs


async def test_metrics_answer_401_without_a_token_403_without_the_role_200_to_the_service_monitor(
    env: Any, secure_operator: tuple[ChildProcess, int, ServingCerts], namespace: str
) -> None:
    process, port, certs = secure_operator
    binding = manifest("prometheus/metrics_reader_binding.yaml")
    (subject,) = binding["subjects"]
    async with KubeHTTP(env.kubeconfig) as kube, await Client.from_kubeconfig(env.kubeconfig) as client:
        reader = manifest("rbac/metrics_reader_role.yaml")
        created_reader = True
        try:
            await client.create(reader)
        except AlreadyExists:
            created_reader = False  # another test's, the same file
        # The ServiceMonitor's identity: the binding of config/, its subject moved to this test's namespace.
        binding["metadata"]["name"] = f"{binding['metadata']['name']}-{namespace}"
        binding["subjects"] = [{**subject, "namespace": namespace}]
        await client.create(binding)
        try:
            monitor_token = await service_account_token(kube, namespace, subject["name"])
            other_token = await service_account_token(kube, namespace, "not-prometheus")

            verified = certs.client_context()  # the server presents the --metrics-cert-dir pair
            url = f"https://127.0.0.1:{port}/metrics"
            async with aiohttp.ClientSession() as session:

                async def scrape(token: str | None) -> tuple[int, str]:
                    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
                    async with session.get(url, headers=headers, ssl=verified) as response:
                        return response.status, await response.text()

                async def first_answer() -> tuple[int, str]:
                    assert process.returncode is None, process.log()
                    return await scrape(None)

                status, _ = await eventually(
                    first_answer, timeout=START_WITHIN, message="metrics server answering"
                )
                assert status == 401
                assert (await scrape("not-a-token"))[0] == 401
                assert (await scrape(other_token))[0] == 403
                status, text = await scrape(monitor_token)
                assert status == 200, text
                assert "controller_runtime_reconcile_total" in text
                assert (await scrape(monitor_token))[0] == 200  # cached: no second review needed
                # Plain HTTP on the HTTPS port is refused, and a client that checks the certificate
                # against another CA does not get in either.
                try:
                    async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
                        assert response.status == 400
                except aiohttp.ClientError:
                    pass
                other_ca = ssl.create_default_context(
                    cadata=ServingCerts(Path("unused")).ca.cert_pem.decode()
                )
                try:
                    async with session.get(url, ssl=other_ca) as response:
                        raise AssertionError(f"a TLS client of another CA got {response.status}")
                except aiohttp.ClientConnectorCertificateError:
                    pass
        finally:
            await client.delete(
                "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", binding["metadata"]["name"]
            )
            if created_reader:
                await client.delete("rbac.authorization.k8s.io/v1", "ClusterRole", reader["metadata"]["name"])
