"""What `kubectl apply -k config/default` creates is locked down and highly available; so is the image.

Read from the real build (`kubectl kustomize config/default`, the kubectl the test extra installs),
not from the files one by one, so a patch or a missing kustomization entry is seen as a cluster would
see it. That the probe and metrics paths are served, and that `cpo run` needs no writable HOME, is
shown on a running process in tests/e2e/test_operator_in_cluster.py.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest

from controllers.operator import (
    DEFAULT_HEALTH_PROBE_BIND_ADDRESS,
    DEFAULT_METRICS_BIND_ADDRESS,
    DEFAULT_WEBHOOK_PORT,
)
from tests.support.manifests import kustomize

ROOT = Path(__file__).resolve().parents[2]
POD_LABELS = {"app.kubernetes.io/name": "controlplane-operator", "control-plane": "controller-manager"}
WEBHOOK_TIMEOUT_SECONDS = 5
"""The chosen admission timeout; config/webhook/manifests.yaml says why."""
IMAGE_UID = 65532

pytestmark = pytest.mark.kubectl


@functools.cache
def built() -> tuple[dict[str, Any], ...]:
    return tuple(kustomize("default"))


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [d for d in built() if d["kind"] == kind]


def the(kind: str) -> dict[str, Any]:
    (found,) = of_kind(kind)
    return found


def pod_templates() -> list[tuple[str, dict[str, Any]]]:
    """``(workload name, pod spec)`` of every workload the build creates."""
    kinds = ("Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet")
    return [(d["metadata"]["name"], d["spec"]["template"]["spec"]) for d in built() if d["kind"] in kinds]


def manager() -> dict[str, Any]:
    (container,) = the("Deployment")["spec"]["template"]["spec"]["containers"]
    return dict(container)


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


# --- security -------------------------------------------------------------------------------------


def test_every_container_runs_non_root_read_only_without_privilege_or_capabilities() -> None:
    templates = pod_templates()
    assert templates
    for workload, pod in templates:
        assert pod["securityContext"]["runAsNonRoot"] is True, workload
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, workload
        assert pod.get("automountServiceAccountToken", True), workload  # the manager needs its token
        for container in pod["containers"] + pod.get("initContainers", []):
            where = f"{workload}/{container['name']}"
            security = container["securityContext"]
            assert security["runAsNonRoot"] is True, where
            assert security["readOnlyRootFilesystem"] is True, where
            assert security["allowPrivilegeEscalation"] is False, where
            assert security["capabilities"] == {"drop": ["ALL"]}, where
            assert not security.get("privileged"), where


def test_pod_runs_as_the_image_user_with_only_tmp_and_the_certificate_writable_or_mounted() -> None:
    pod = the("Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == IMAGE_UID
    mounts = {m["mountPath"]: m for m in manager()["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert set(mounts) == {"/tmp", "/tmp/k8s-webhook-server/serving-certs"}
    assert mounts["/tmp/k8s-webhook-server/serving-certs"]["readOnly"] is True
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
    assert not any("hostPath" in v for v in volumes.values())


# --- ports and probes -----------------------------------------------------------------------------


def test_ports_and_probes_agree_with_the_cpo_run_flag_defaults() -> None:
    """The Deployment's args spell the defaults out; both must be the ports the containers declare."""
    container = manager()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {
        "webhook-server": DEFAULT_WEBHOOK_PORT,
        "metrics": port_of(DEFAULT_METRICS_BIND_ADDRESS),
        "health": port_of(DEFAULT_HEALTH_PROBE_BIND_ADDRESS),
    }
    args = dict(a.removeprefix("--").split("=", 1) for a in container["args"] if "=" in a)
    assert port_of(args["metrics-bind-address"]) == ports["metrics"]
    assert port_of(args["health-probe-bind-address"]) == ports["health"]
    assert int(args["webhook-port"]) == ports["webhook-server"]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path, probe
        assert get["port"] in (ports["health"], "health"), probe

    services = {s["metadata"]["name"]: s for s in of_kind("Service")}
    by_target = {p["targetPort"]: p for s in services.values() for p in s["spec"]["ports"]}
    assert set(by_target) == {ports["webhook-server"], ports["metrics"]}


# --- availability ---------------------------------------------------------------------------------


def test_two_replicas_spread_over_nodes_and_rolled_out_surge_first() -> None:
    deployment = the("Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    constraints = {c["topologyKey"]: c for c in spec["template"]["spec"]["topologySpreadConstraints"]}
    by_node = constraints["kubernetes.io/hostname"]
    assert by_node["maxSkew"] == 1 and by_node["whenUnsatisfiable"] == "DoNotSchedule"
    assert by_node["labelSelector"]["matchLabels"] == POD_LABELS == spec["template"]["metadata"]["labels"]
    assert by_node["matchLabelKeys"] == ["pod-template-hash"]


def test_disruption_budget_keeps_one_replica_of_the_manager() -> None:
    budget = the("PodDisruptionBudget")
    deployment = the("Deployment")
    assert budget["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert budget["spec"] == {"minAvailable": 1, "selector": {"matchLabels": POD_LABELS}}
    assert budget["spec"]["minAvailable"] < deployment["spec"]["replicas"]  # a drain can evict one


def test_webhooks_fail_closed_with_the_chosen_timeout() -> None:
    # Read from the standalone install: config/default holds the two ControlPlane webhooks, the
    # MachineHealthCheck one is in the opt-in component that install adds.
    hooks = [
        hook
        for configuration in kustomize("install/standalone")
        if configuration["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
        for hook in configuration["webhooks"]
    ]
    assert len(hooks) >= 3
    for hook in hooks:
        assert hook["failurePolicy"] == "Fail", hook["name"]
        assert hook["timeoutSeconds"] == WEBHOOK_TIMEOUT_SECONDS, hook["name"]
        assert hook["sideEffects"] == "None", hook["name"]


def test_network_policy_admits_the_webhook_and_metrics_ports_only() -> None:
    policy = the("NetworkPolicy")
    assert policy["metadata"]["namespace"] == the("Deployment")["metadata"]["namespace"]
    spec = policy["spec"]
    assert spec["podSelector"] == {"matchLabels": POD_LABELS}
    assert spec["policyTypes"] == ["Ingress"]
    container_ports = {p["name"]: p["containerPort"] for p in manager()["ports"]}
    admitted = set()
    for rule in spec["ingress"]:
        assert set(rule) == {"ports"}, rule  # any source: the API server and Prometheus live anywhere
        for port in rule["ports"]:
            assert port["protocol"] == "TCP"
            admitted.add(container_ports.get(port["port"], port["port"]))
    assert admitted == {container_ports["webhook-server"], container_ports["metrics"]}


# --- the image --------------------------------------------------------------------------------------


def dockerfile_stages() -> list[list[str]]:
    """The Dockerfile's instructions (continuation lines joined), split into stages; each FROM with
    the default of the build argument it names (``ARG``s before the first FROM)."""
    joined = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [" ".join(line.split()) for line in joined.splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]
    defaults: dict[str, str] = {}
    stages: list[list[str]] = []
    for instruction in instructions:
        if not stages and instruction.startswith("ARG "):
            name, _, value = instruction.removeprefix("ARG ").partition("=")
            defaults[name] = value
            continue
        if instruction.startswith("FROM "):
            for name, value in defaults.items():
                instruction = instruction.replace(f"${{{name}}}", value)
            stages.append([])
        stages[-1].append(instruction)
    return stages


def test_dockerfile_bases_are_build_arguments_defaulting_to_the_official_images() -> None:
    """hack/image builds on Debian bases made with debootstrap (no registry); the defaults stay."""
    text = (ROOT / "Dockerfile").read_text()
    assert "ARG BUILD_IMAGE=python:3.11-bookworm" in text
    assert "ARG RUNTIME_IMAGE=python:3.11-slim-bookworm" in text
    assert "FROM ${BUILD_IMAGE} AS build" in text and "FROM ${RUNTIME_IMAGE}" in text
    # The steps are the official images' (`python`, `pip`, a pip to uninstall): hack/image shapes
    # its Debian bases like them, instead of the Dockerfile bending to Debian's.
    script = (ROOT / "hack" / "image").read_text()
    build_base = re.search(r'make_base "\$BUILD_BASE" (\S+)', script)
    runtime_base = re.search(r'make_base "\$RUNTIME_BASE" (\S+) (\S+)', script)
    needed = {"python-is-python3", "python3-pip", "python3-venv"}
    assert build_base and needed <= set(build_base[1].split(","))
    assert runtime_base and "python-is-python3" in runtime_base[1].split(",")
    shape = script[script.index(f"{runtime_base[2]}() {{") :]
    assert "EXTERNALLY-MANAGED" in shape and "pip install" in shape, "a pip that pip can uninstall"


def test_dockerfile_builds_wheels_then_a_slim_runtime_without_compiler_or_pip() -> None:
    build, runtime = dockerfile_stages()
    assert build[0].startswith("FROM python:3.11") and build[0].endswith(" AS build")
    assert any(i.startswith("RUN ") and " pip wheel " in i.replace("/pip ", " pip ") for i in build)
    copied = {i.split()[1] for i in build if i.startswith("COPY ")}
    for package in ("runtime", "api", "controllers", "webhooks", "cli", "pyproject.toml"):
        assert package in copied, copied

    base = runtime[0].split()[1]
    assert base.startswith("python:3.11-slim"), base
    assert base.removeprefix("python:3.11-slim") == build[0].split()[1].removeprefix("python:3.11"), (
        "both stages must be the same Python build: the environment's interpreter link points into it"
    )
    uninstall = next(i for i in runtime if "pip uninstall" in i)
    assert {"pip", "setuptools", "wheel"} <= set(uninstall.replace(";", " ").split())
    after = runtime[runtime.index(uninstall) + 1 :]
    assert not any(i.startswith("RUN ") for i in after), "nothing may run once pip is gone"
    assert [i for i in runtime if i.startswith("COPY ")] == ["COPY --from=build /opt/cpo /opt/cpo"]
    assert not any(word in " ".join(runtime) for word in ("gcc", "build-essential", "apt-get install"))

    user = [i for i in runtime if i.startswith("USER ")][-1].split()[1]
    assert user == f"{IMAGE_UID}:{IMAGE_UID}"
    env = " ".join(i for i in runtime if i.startswith("ENV "))
    assert "PATH=/opt/cpo/bin:" in env and "PYTHONDONTWRITEBYTECODE=1" in env
    assert runtime[-1] == 'ENTRYPOINT ["cpo", "run"]'
    exposed = {int(p) for i in runtime if i.startswith("EXPOSE ") for p in i.split()[1:]}
    assert exposed == {p["containerPort"] for p in manager()["ports"]}


def test_dockerignore_keeps_development_tools_out_of_the_image() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {"tests", "apiserver", "providers", "bench", ".venv"} <= ignored
