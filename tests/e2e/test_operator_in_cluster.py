"""`cpo run` as the pod runs it: HOME unwritable, the manifests' paths served, every alerted metric exported.

The image runs as UID 65532 on a read-only root filesystem with ``HOME`` pointing nowhere writable
(Dockerfile, config/manager/manager.yaml). Without a container engine the closest proof is the
process itself: here it runs with ``HOME`` a read-only folder (checked to be still empty afterwards,
which also catches a write when the tests run as root) and ``PYTHONDONTWRITEBYTECODE`` as in the
image. The paths probed and scraped are read from the kustomize build, and the metric names from
config/prometheus/alerts.yaml and config/grafana/, so this fails when either side moves.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families

from runtime.envtest import unique_namespace_name
from tests.support.manifests import kustomize
from tests.support.monitoring import series_labels, used_metric_names
from tests.support.processes import (
    ChildProcess,
    child_environment,
    cpo,
    cpo_run_argv,
    cpo_run_ports,
    running_process,
)
from tests.support.webhooks import ServingCerts

ROOT = Path(__file__).resolve().parents[2]

PENDING_FAMILIES: frozenset[str] = frozenset()
"""Families the rules or dashboard name that no controller exports yet (none: every one is)."""
"""Families the alerts and dashboard use that a controller not yet registered in ``cpo run`` will
export. Remove each name here when its controller joins ``setup_controllers``: the test below
fails for a name listed here that ``cpo run`` already exports, and for a name neither exported
nor listed."""


def read_only_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    return home


def pod_environment(home: Path) -> dict[str, str]:
    """The test's environment as the image sets it: HOME unwritable, no bytecode written."""
    env = child_environment()
    for name in list(env):
        if name.startswith("XDG_"):
            del env[name]  # so nothing falls back to a writable per-user folder
    env.update(HOME=str(home), PYTHONDONTWRITEBYTECODE="1")
    return env


@dataclass
class Running:
    process: ChildProcess
    home: Path
    metrics_port: int
    probe_port: int


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def running(
    env: Any, machine_crds: None, kubeconfig_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Running]:
    """One `cpo run` for the module: leader election on, webhooks on, HOME read-only."""
    tmp_path = tmp_path_factory.mktemp("in-cluster")
    namespace = unique_namespace_name("in-cluster")
    await env.create_namespace(namespace, labels={"cpo.dev/test": "true"})
    certs = ServingCerts(tmp_path / "certs")
    certs.write()
    home = read_only_home(tmp_path)
    argv = cpo_run_argv(kubeconfig_path, certs.directory, namespace)
    try:
        async with running_process(
            argv, log_path=tmp_path / "operator.log", cwd=home, env=pod_environment(home), stop_grace=15
        ) as process:
            metrics_port, probe_port, _ = await cpo_run_ports(process)
            yield Running(process, home, metrics_port, probe_port)
    finally:
        if not env.owns_cluster:
            await env.delete_namespace(namespace)


async def scrape(running: Running, path: str) -> str:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{running.metrics_port}{path}") as response,
    ):
        assert response.status == 200, await response.text()
        return await response.text()


def exported_names(text: str) -> set[str]:
    """Every name a query may use for the families in ``text``: family, sample and suffixed names."""
    names = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
        suffixes = {
            "counter": ("_total", "_created"),
            "histogram": ("_bucket", "_sum", "_count", "_created"),
            "summary": ("_sum", "_count", "_created"),
        }.get(family.type, ())
        names.update(family.name + suffix for suffix in suffixes)
    return names


async def test_cpo_run_with_home_unwritable_serves_the_probe_and_metrics_paths_of_the_manifests(
    running: Running,
) -> None:
    built = kustomize("default")
    (deployment,) = [d for d in built if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    (monitor,) = [d for d in built if d["kind"] == "ServiceMonitor"]
    async with aiohttp.ClientSession() as session:
        await running.process.wait_ready(session, f"http://127.0.0.1:{running.probe_port}/readyz")
        for probe in ("livenessProbe", "readinessProbe"):
            path = container[probe]["httpGet"]["path"]
            async with session.get(f"http://127.0.0.1:{running.probe_port}{path}") as response:
                assert response.status == 200, (probe, path, await response.text())
    for endpoint in monitor["spec"]["endpoints"]:
        assert "# TYPE" in await scrape(running, endpoint["path"])
    assert running.process.returncode is None, running.process.log()
    assert os.listdir(running.home) == [], "cpo run wrote into HOME"


async def test_every_metric_the_alerts_and_dashboard_use_is_exported_by_cpo_run(running: Running) -> None:
    exported = exported_names(await scrape(running, "/metrics"))
    used = used_metric_names()
    assert used, "no metric names found in the alerts and dashboard"
    unknown = {name: sorted(where) for name, where in used.items() if name not in exported | PENDING_FAMILIES}
    assert not unknown, f"used but exported by no family of `cpo run` (nor pending): {unknown}"
    arrived = sorted(PENDING_FAMILIES & exported)
    assert not arrived, f"now exported by `cpo run`: remove {arrived} from PENDING_FAMILIES"
    unused = sorted(PENDING_FAMILIES - set(used))
    assert not unused, f"pending families no alert or panel uses: {unused}"


def test_cpo_run_help_needs_no_writable_home(tmp_path: Path) -> None:
    home = read_only_home(tmp_path)
    done = subprocess.run(
        cpo("run", "--help"),
        cwd=home,
        env=pod_environment(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "--metrics-bind-address" in done.stdout and "--webhook-cert-dir" in done.stdout
    assert os.listdir(home) == []


async def test_the_series_the_dashboard_test_feeds_are_labelled_as_cpo_run_labels_them(
    running: Running,
) -> None:
    """tests/unit/test_monitoring.py evaluates the dashboard over SERIES; here SERIES meets reality.

    Compared for every family that has samples in a fresh ``cpo run`` (histograms and the domain
    families appear only once something happened, and are left to their own tests).
    """
    real: dict[str, set[frozenset[str]]] = {}
    for family in text_string_to_metric_families(await scrape(running, "/metrics")):
        for sample in family.samples:
            real.setdefault(sample.name, set()).add(frozenset(sample.labels) - {"le"})
    checked = set()
    for name, label_sets in series_labels().items():
        if name in real:
            assert label_sets <= real[name], f"{name}: fed {label_sets}, exported {real[name]}"
            checked.add(name)
    assert {
        "controller_runtime_reconcile_total",
        "workqueue_depth",
        "leader_election_master_status",
    } <= checked
