"""`cpo run` as a real process against the API server: probes, admission, metrics, Lease, SIGTERM.

The operator is started exactly as the Deployment starts it (``python -m cli run``), with
serving certificates in a temporary folder and every port picked by the kernel (read back from
its JSON log lines). The API server then calls it through a webhook configuration whose paths are
the ones ``config/webhook/manifests.yaml`` ships.
"""

from __future__ import annotations

import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest_asyncio
import yaml
from prometheus_client.parser import text_string_to_metric_families

from runtime.client import Client
from runtime.errors import APIError, NotFound
from tests.e2e.test_kubectl import Kubectl
from tests.support.poll import eventually
from tests.support.processes import (
    START_WITHIN,
    ChildProcess,
    cpo,
    cpo_run_argv,
    cpo_run_ports,
    running_process,
)
from tests.support.webhooks import ServingCerts, controlplane_webhook_configurations, registered_webhooks

ROOT = Path(__file__).resolve().parents[2]
GROUP, VERSION, KIND = "controlplane.cpo.dev", "v1alpha1", "ControlPlane"
CP = f"{GROUP}/{VERSION}"
LEASE = "controlplane-operator.cpo.dev"
ODD = "must be an odd number (1, 3, 5, 7) for a stacked etcd control plane"
ADD_ROLE_LABEL = 'add matchLabels {"machine.openshift.io/cluster-api-machine-role": "master"}'

# A ControlPlane selecting its Machines by a label of its own, as a user might write it: the
# operator caches only control-plane Machines, so it would never see the ones it creates.
WITHOUT_ROLE_LABEL_YAML = f"""\
apiVersion: {GROUP}/{VERSION}
kind: {KIND}
metadata:
  name: no-role
spec:
  replicas: 3
  selector:
    matchLabels:
      app: my-control-plane
  template:
    spec:
      providerSpec:
        value: {{}}
"""


def shipped_webhook_paths() -> dict[str, str]:
    """``{"ValidatingWebhookConfiguration": path, "MutatingWebhookConfiguration": path}`` from config/."""
    docs = yaml.safe_load_all((ROOT / "config" / "webhook" / "manifests.yaml").read_text())
    return {d["kind"]: d["webhooks"][0]["clientConfig"]["service"]["path"] for d in docs if d}


@pytest_asyncio.fixture(loop_scope="session")
async def operator(
    machine_crds: None, kubeconfig_path: Path, namespace: str, tmp_path: Path
) -> AsyncIterator[tuple[ChildProcess, ServingCerts]]:
    certs = ServingCerts(tmp_path / "certs")
    certs.write()
    argv = cpo_run_argv(kubeconfig_path, certs.directory, namespace)
    async with running_process(argv, log_path=tmp_path / "operator.log", cwd=tmp_path) as process:
        yield process, certs


def controlplane(name: str, namespace: str, replicas: int, external: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": replicas, "template": {"spec": {"providerSpec": {"value": {}}}}}
    if external:
        spec["etcd"] = {"external": True}
    return {"apiVersion": CP, "kind": KIND, "metadata": {"name": name, "namespace": namespace}, "spec": spec}


async def scale_when_cached(client: Client, name: str, namespace: str, replicas: int) -> None:
    """Scale; retried while the refusal may only mean the operator's cache has not seen ``name`` yet."""

    async def scaled() -> bool:
        await client.update_scale(CP, KIND, name, replicas, namespace)
        return True

    await eventually(scaled, timeout=10, message=f"{name} scaled to {replicas}")


async def test_cpo_run_serves_admission_metrics_probes_and_exits_0_on_sigterm(
    operator: tuple[ChildProcess, ServingCerts], client: Client, namespace: str, kubeconfig_path: Path
) -> None:
    process, certs = operator
    metrics_port, probe_port, webhook_port = await cpo_run_ports(process)
    async with aiohttp.ClientSession() as session:
        await process.wait_ready(session, f"http://127.0.0.1:{probe_port}/readyz")
        async with session.get(f"http://127.0.0.1:{probe_port}/readyz?verbose=1") as response:
            verbose = await response.text()
        assert "webhook ok" in verbose and "caches-synced ok" in verbose, verbose

        # Leader election is on (as in a cluster): the Lease names this process as holder.
        lease = await client.get("coordination.k8s.io/v1", "Lease", LEASE, namespace)
        assert lease["spec"]["holderIdentity"], lease

        paths = shipped_webhook_paths()
        configurations = controlplane_webhook_configurations(
            f"https://127.0.0.1:{webhook_port}",
            certs.ca.cert_pem,
            namespace,
            paths=paths,
            name="cpo-run",
            timeout_seconds=10,
        )
        async with registered_webhooks(client, *configurations):
            try:
                await client.create(controlplane("even", namespace, 4))
                raise AssertionError("an even replica count was accepted")
            except APIError as err:
                assert f"spec.replicas: Invalid value: 4: {ODD}" in err.message, err.message
                assert "denied the request" in err.message
            assert not await _exists(client, "even", namespace)

            # kubectl shows why a selector without the control-plane role label is refused, and
            # what to add to it and to the template's labels.
            kubectl = Kubectl(kubeconfig_path, namespace)
            out = await kubectl.run("apply", "-f", "-", stdin=WITHOUT_ROLE_LABEL_YAML, check=False)
            assert "denied the request" in out, out
            assert (
                'spec.selector: Invalid value: {"matchLabels":{"app":"my-control-plane"}}: must require the '
                "control-plane role label, or the operator cannot see the Machines it creates: "
                + ADD_ROLE_LABEL
            ) in out, out
            assert (
                'spec.template.metadata.labels: Invalid value: {"app":"my-control-plane"}: must carry the '
                "control-plane role label"
            ) in out, out
            assert not await _exists(client, "no-role", namespace)

            defaulted = await client.create(
                {**controlplane("odd", namespace, 3), "spec": {"template": {"spec": {"providerSpec": {}}}}}
            )
            assert defaulted["spec"]["replicas"] == 1, defaulted  # from the schema or the defaulter
            assert defaulted["spec"]["template"]["metadata"]["labels"] == {
                "machine.openshift.io/cluster-api-machine-role": "master"
            }, defaulted  # only the mutating webhook copies the selector into the template

            # The scale check reads the ControlPlane through the operator's cache: external etcd
            # may scale to 4, stacked etcd may not.
            await client.create(controlplane("ext", namespace, 3, external=True))
            await scale_when_cached(client, "ext", namespace, 4)
            try:
                await client.update_scale(CP, KIND, "odd", 2, namespace)
                raise AssertionError("scaling a stacked control plane to 2 was accepted")
            except APIError as err:
                assert f"spec.replicas: Invalid value: 2: {ODD}" in err.message, err.message

        async with session.get(f"http://127.0.0.1:{metrics_port}/metrics") as response:
            assert response.status == 200
            text = await response.text()
    requests = {
        sample.labels["code"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "controller_runtime_webhook_requests_total"
        and sample.labels.get("webhook") == paths["ValidatingWebhookConfiguration"]
    }
    assert requests.get("200", 0) >= 4, requests  # even, odd, ext, ext/scale, odd/scale

    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    code = await process.exited(within=10)
    assert code == 0, process.log()
    assert time.monotonic() - started < 10
    assert any(line.get("msg") == "manager stopped" for line in process.log_lines()), process.log()
    # A clean stop releases the Lease so a successor need not wait out its duration.
    lease = await client.get("coordination.k8s.io/v1", "Lease", LEASE, namespace)
    assert not lease["spec"].get("holderIdentity"), lease


async def _exists(client: Client, name: str, namespace: str) -> bool:
    try:
        await client.get(CP, KIND, name, namespace)
    except NotFound:
        return False
    return True


async def test_cpo_run_without_a_serving_certificate_exits_1_saying_where_to_put_it(
    env: Any, kubeconfig_path: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "no-certs"
    empty.mkdir()
    argv = cpo(
        "run",
        "--kubeconfig",
        str(kubeconfig_path),
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
        "--webhook-host",
        "127.0.0.1",
        "--webhook-port",
        "0",
        "--webhook-cert-dir",
        str(empty),
        "--log-format",
        "json",
    )
    async with running_process(argv, log_path=tmp_path / "operator.log") as process:
        code = await process.exited(within=START_WITHIN)
    assert code == 1, process.log()
    assert f"Put tls.crt and tls.key into {empty}" in process.log(), process.log()
