"""`cpo run` as a real process against the API server: probes, admission, metrics, Lease, SIGTERM.

The operator is started exactly as the Deployment starts it (``python -m cli run``), with
serving certificates in a temporary folder and every port picked by the kernel (read back from
its JSON log lines). The API server then calls it through a webhook configuration whose paths are
the ones ``config/webhook/manifests.yaml`` ships.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest_asyncio
import yaml
from prometheus_client.parser import text_string_to_metric_families

from runtime.client import Client
from runtime.errors import APIError, NotFound
from tests.support.webhooks import ServingCerts, webhook_configuration

ROOT = Path(__file__).resolve().parents[2]
GROUP, VERSION, KIND = "controlplane.cpo.dev", "v1alpha1", "ControlPlane"
CP = f"{GROUP}/{VERSION}"
LEASE = "controlplane-operator.cpo.dev"
ODD = "must be an odd number (1, 3, 5, 7) for a stacked etcd control plane"
START_WITHIN = 60.0  # a cold interpreter importing everything on a loaded 2-core machine


def shipped_webhook_paths() -> dict[str, str]:
    """``{"ValidatingWebhookConfiguration": path, "MutatingWebhookConfiguration": path}`` from config/."""
    docs = yaml.safe_load_all((ROOT / "config" / "webhook" / "manifests.yaml").read_text())
    return {d["kind"]: d["webhooks"][0]["clientConfig"]["service"]["path"] for d in docs if d}


@dataclass
class OperatorProcess:
    proc: asyncio.subprocess.Process
    lines: list[dict[str, Any]] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)

    async def read_logs(self) -> None:
        assert self.proc.stderr is not None
        async for line in self.proc.stderr:
            text = line.decode(errors="replace").rstrip("\n")
            self.raw.append(text)
            with contextlib.suppress(ValueError):
                self.lines.append(json.loads(text))

    async def port_from_log(self, pattern: str) -> int:
        """The port in the first log message matching ``pattern`` (a regex with one group)."""
        deadline = time.monotonic() + START_WITHIN
        while time.monotonic() < deadline:
            for line in self.lines:
                found = re.search(pattern, str(line.get("msg", "")))
                if found:
                    return int(found.group(1))
            if self.proc.returncode is not None:
                break
            await asyncio.sleep(0.05)  # allow-sleep: polling the log lines with a deadline
        raise AssertionError(f"no log line matches {pattern!r}; logs:\n" + "\n".join(self.raw))


def child_environment() -> dict[str, str]:
    """This environment, minus what would make the child think it runs in a pod; our tree first."""
    child = {k: v for k, v in os.environ.items() if k not in ("KUBERNETES_SERVICE_HOST", "KUBECONFIG")}
    child["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), child.get("PYTHONPATH", "")) if p)
    return child


def cpo_run_argv(kubeconfig: Path, cert_dir: Path, lease_namespace: str | None = None) -> list[str]:
    """``python -m cli run`` on loopback with kernel-picked ports (read back from the JSON logs);
    leader election on, in ``lease_namespace``, when one is given."""
    argv = [
        sys.executable,
        "-m",
        "cli",
        "run",
        "--kubeconfig",
        str(kubeconfig),
        "--metrics-bind-address",
        "127.0.0.1:0",
        "--metrics-secure=false",  # scraped over plain HTTP; the secure server has its own test
        "--health-probe-bind-address",
        "127.0.0.1:0",
        "--webhook-host",
        "127.0.0.1",
        "--webhook-port",
        "0",
        "--webhook-cert-dir",
        str(cert_dir),
    ]
    if lease_namespace is not None:
        argv += ["--leader-elect", "--leader-election-namespace", lease_namespace]
    return [*argv, "--log-format", "json"]


@pytest_asyncio.fixture(loop_scope="session")
async def operator(
    env: Any, kubeconfig_path: Path, namespace: str, tmp_path: Path
) -> AsyncIterator[tuple[OperatorProcess, ServingCerts]]:
    await env.install_crds([ROOT / "config" / "crd"])
    certs = ServingCerts(tmp_path / "certs")
    certs.write()
    proc = await asyncio.create_subprocess_exec(
        *cpo_run_argv(kubeconfig_path, certs.directory, namespace),
        cwd=tmp_path,
        env=child_environment(),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    process = OperatorProcess(proc)
    reader = asyncio.create_task(process.read_logs())
    try:
        yield process, certs
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await reader


async def wait_ready(session: aiohttp.ClientSession, url: str, process: OperatorProcess) -> None:
    deadline = time.monotonic() + START_WITHIN
    last = ""
    while time.monotonic() < deadline:
        assert process.proc.returncode is None, "\n".join(process.raw)
        with contextlib.suppress(aiohttp.ClientError):
            async with session.get(url) as response:
                last = f"{response.status} {await response.text()}"
                if response.status == 200:
                    return
        await asyncio.sleep(0.1)  # allow-sleep: polling /readyz with a deadline
    raise AssertionError(f"/readyz never answered 200 (last: {last}); logs:\n" + "\n".join(process.raw))


def controlplane(name: str, namespace: str, replicas: int, external: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": replicas, "template": {"spec": {"providerSpec": {"value": {}}}}}
    if external:
        spec["etcd"] = {"external": True}
    return {"apiVersion": CP, "kind": KIND, "metadata": {"name": name, "namespace": namespace}, "spec": spec}


async def scale_when_cached(client: Client, name: str, namespace: str, replicas: int) -> None:
    """Scale; retried while the refusal may only mean the operator's cache has not seen ``name`` yet."""
    deadline = time.monotonic() + 10
    while True:
        try:
            await client.update_scale(CP, KIND, name, replicas, namespace)
            return
        except APIError:
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.1)  # allow-sleep: polling until the informer has the new object


async def test_cpo_run_serves_admission_metrics_probes_and_exits_0_on_sigterm(
    operator: tuple[OperatorProcess, ServingCerts], client: Client, namespace: str
) -> None:
    process, certs = operator
    metrics_port = await process.port_from_log(r"serving metrics on port (\d+)")
    probe_port = await process.port_from_log(r"serving health probes on port (\d+)")
    webhook_port = await process.port_from_log(r"webhook server listening on \S+ port (\d+)")
    async with aiohttp.ClientSession() as session:
        await wait_ready(session, f"http://127.0.0.1:{probe_port}/readyz", process)
        async with session.get(f"http://127.0.0.1:{probe_port}/readyz?verbose=1") as response:
            verbose = await response.text()
        assert "webhook ok" in verbose and "caches-synced ok" in verbose, verbose

        # Leader election is on (as in a cluster): the Lease names this process as holder.
        lease = await client.get("coordination.k8s.io/v1", "Lease", LEASE, namespace)
        assert lease["spec"]["holderIdentity"], lease

        paths = shipped_webhook_paths()
        created = []
        for kind, resources in (
            ("ValidatingWebhookConfiguration", ["controlplanes", "controlplanes/scale"]),
            ("MutatingWebhookConfiguration", ["controlplanes"]),
        ):
            url = f"https://127.0.0.1:{webhook_port}{paths[kind]}"
            name = f"{kind[:1].lower()}cpo-run.{namespace}.cpo.dev"
            created.append(
                await client.create(
                    webhook_configuration(
                        kind,
                        name,
                        url,
                        certs.ca.cert_pem,
                        group=GROUP,
                        version=VERSION,
                        resources=resources,
                        namespace=namespace,
                        timeout_seconds=10,
                    )
                )
            )
        try:
            try:
                await client.create(controlplane("even", namespace, 4))
                raise AssertionError("an even replica count was accepted")
            except APIError as err:
                assert f"spec.replicas: Invalid value: 4: {ODD}" in err.message, err.message
                assert "denied the request" in err.message
            assert not await _exists(client, "even", namespace)

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
        finally:
            for obj in created:
                await client.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])

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
    process.proc.send_signal(signal.SIGTERM)
    code = await asyncio.wait_for(process.proc.wait(), timeout=10)
    assert code == 0, "\n".join(process.raw)
    assert time.monotonic() - started < 10
    assert any(line.get("msg") == "manager stopped" for line in process.lines), process.raw
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
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cli",
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
        env=child_environment(),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        _, stderr = await asyncio.wait_for(proc.communicate(), timeout=START_WITHIN)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 1, stderr.decode()
    assert f"Put tls.crt and tls.key into {empty}" in stderr.decode(), stderr.decode()
