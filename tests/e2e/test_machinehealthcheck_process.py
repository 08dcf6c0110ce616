"""`cpo run` as a real process runs the MachineHealthCheck controller, webhook and metrics.

What an SRE migrating from the machine-api-operator checks first: the admission webhook refuses a
MachineHealthCheck the controller could not act on, a Failed Machine is remediated, a
short-circuited check shows in ``mapi_machinehealthcheck_short_circuit``, and ``/metrics`` carries
the three ``mapi_machinehealthcheck_*`` families with ``name`` and ``namespace`` labels (series of
a deleted MachineHealthCheck gone). No etcd is needed: a Machine in phase Failed is unhealthy.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest_asyncio
import yaml
from prometheus_client.parser import text_string_to_metric_families

from api.controlplane import MHC_SCOPE_LABEL, MHC_SCOPE_VALUE
from api.machine import API_VERSION
from controllers.cache_scope import MACHINE_ROLE_SELECTOR
from runtime.client import JSON, Client
from runtime.errors import APIError, NotFound
from tests.support.poll import eventually
from tests.support.processes import ChildProcess, cpo_run_argv, cpo_run_ports, running_process
from tests.support.webhooks import ServingCerts, webhook_configuration

ROOT = Path(__file__).resolve().parents[2]
ROLE_KEY, ROLE_VALUE = MACHINE_ROLE_SELECTOR.split("=")
FAMILIES = {
    "mapi_machinehealthcheck_nodes_covered": "gauge",
    "mapi_machinehealthcheck_remediation_success_total": "counter",
    "mapi_machinehealthcheck_short_circuit": "gauge",
}
WITHIN = 30.0


def shipped_mhc_webhook_path() -> str:
    """The path config/machinehealthcheck/manifests.yaml sends MachineHealthCheck admission to."""
    for doc in yaml.safe_load_all((ROOT / "config" / "machinehealthcheck" / "manifests.yaml").read_text()):
        for hook in (doc or {}).get("webhooks", ()):
            if "machinehealthchecks" in hook["rules"][0]["resources"]:
                return str(hook["clientConfig"]["service"]["path"])
    raise AssertionError("config/machinehealthcheck/manifests.yaml has no MachineHealthCheck webhook")


@pytest_asyncio.fixture(loop_scope="session")
async def operator(
    machine_crds: None, kubeconfig_path: Path, namespace: str, tmp_path: Path
) -> AsyncIterator[tuple[ChildProcess, ServingCerts]]:
    certs = ServingCerts(tmp_path / "certs")
    certs.write()
    argv = cpo_run_argv(kubeconfig_path, certs.directory)
    async with running_process(argv, log_path=tmp_path / "operator.log", cwd=tmp_path) as process:
        yield process, certs


def health_check(name: str, namespace: str, group: str, **spec: Any) -> JSON:
    """A MachineHealthCheck carrying the scope label: the operator judges and checks only those."""
    return {
        "apiVersion": API_VERSION,
        "kind": "MachineHealthCheck",
        "metadata": {"name": name, "namespace": namespace, "labels": {MHC_SCOPE_LABEL: MHC_SCOPE_VALUE}},
        "spec": {
            "selector": {"matchLabels": {"mhc-test": group}},
            "unhealthyConditions": [{"type": "Ready", "status": "False", "timeout": "300s"}],
            **spec,
        },
    }


async def failed_machine(client: Client, name: str, namespace: str, group: str, owner: JSON) -> None:
    """A control-plane Machine owned by ``owner`` whose provider gave up on it (phase Failed)."""
    await client.create(
        {
            "apiVersion": API_VERSION,
            "kind": "Machine",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {ROLE_KEY: ROLE_VALUE, "mhc-test": group},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "name": owner["metadata"]["name"],
                        "uid": owner["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {},
        }
    )
    await client.patch_status(
        API_VERSION, "Machine", name, {"status": {"phase": "Failed", "errorMessage": "test"}}, namespace
    )


async def scrape(session: aiohttp.ClientSession, port: int) -> dict[str, Any]:
    """``{family: (type, {(name, namespace): value})}`` of the mapi families on /metrics."""
    async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
        assert response.status == 200
        text = await response.text()
    found: dict[str, Any] = {}
    for family in text_string_to_metric_families(text):
        key = family.name + ("_total" if family.type == "counter" else "")
        if key in FAMILIES:
            series = {}
            for sample in family.samples:
                if sample.name == key:
                    assert set(sample.labels) == {"name", "namespace"}, sample
                    series[(sample.labels["name"], sample.labels["namespace"])] = sample.value
            found[key] = (family.type, series)
    return found


async def test_cpo_run_serves_the_machinehealthcheck_webhook_controller_and_mapi_metrics(
    operator: tuple[ChildProcess, ServingCerts], client: Client, namespace: str
) -> None:
    process, certs = operator
    metrics_port, probe_port, webhook_port = await cpo_run_ports(process)
    async with aiohttp.ClientSession() as session:
        await process.wait_ready(session, f"http://127.0.0.1:{probe_port}/readyz")
        hook = await client.create(
            webhook_configuration(
                "ValidatingWebhookConfiguration",
                f"vmhc.{namespace}.cpo.dev",
                f"https://127.0.0.1:{webhook_port}{shipped_mhc_webhook_path()}",
                certs.ca.cert_pem,
                group="machine.openshift.io",
                version="v1beta1",
                resources=["machinehealthchecks"],
                namespace=namespace,
                timeout_seconds=10,
            )
        )
        try:
            try:
                await client.create(health_check("bad", namespace, "x", maxUnhealthy="foo%50"))
                raise AssertionError("an invalid maxUnhealthy was accepted")
            except APIError as err:
                assert 'spec.maxUnhealthy: Invalid value: "foo%50"' in err.message, err.message

            owner = await client.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "owner", "namespace": namespace},
                }
            )
            await client.create(health_check("remediates", namespace, "a"))
            await client.create(health_check("blocked", namespace, "b", maxUnhealthy=0))
            await failed_machine(client, "a-0", namespace, "a", owner)
            await failed_machine(client, "b-0", namespace, "b", owner)

            async def remediated() -> bool:
                with contextlib.suppress(NotFound):
                    obj = await client.get(API_VERSION, "Machine", "a-0", namespace)
                    return bool(obj["metadata"].get("deletionTimestamp"))
                return True

            await eventually(remediated, timeout=WITHIN, message="the Failed Machine a-0 deleted")

            async def metrics_settled() -> dict[str, Any] | None:
                found = await scrape(session, metrics_port)
                if set(found) != set(FAMILIES):
                    return None
                series = {key: values for key, (_, values) in found.items()}
                ok = (
                    series["mapi_machinehealthcheck_remediation_success_total"].get(("remediates", namespace))
                    == 1
                    and series["mapi_machinehealthcheck_short_circuit"].get(("blocked", namespace)) == 1
                    and series["mapi_machinehealthcheck_short_circuit"].get(("remediates", namespace)) == 0
                    and series["mapi_machinehealthcheck_nodes_covered"].get(("blocked", namespace)) == 1
                )
                return found if ok else None

            found = await eventually(
                metrics_settled, timeout=WITHIN, message="mapi metrics of both MachineHealthChecks"
            )
            assert {key: kind for key, (kind, _) in found.items()} == FAMILIES
            assert (
                found["mapi_machinehealthcheck_remediation_success_total"][1].get(("blocked", namespace)) == 0
            )
            blocked = await client.get(API_VERSION, "Machine", "b-0", namespace)
            assert not blocked["metadata"].get("deletionTimestamp"), "short-circuited: not remediated"

            await client.delete(API_VERSION, "MachineHealthCheck", "blocked", namespace)

            async def series_removed() -> bool:
                found = await scrape(session, metrics_port)
                return all(("blocked", namespace) not in values for _, values in found.values())

            await eventually(
                series_removed, timeout=WITHIN, message="series of the deleted MachineHealthCheck removed"
            )
        finally:
            await client.delete(hook["apiVersion"], hook["kind"], hook["metadata"]["name"])

    process.send_signal(signal.SIGTERM)
    code = await process.exited(within=10)
    assert code == 0, process.log()
