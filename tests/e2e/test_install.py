"""The README's three installs, tried as a new user would, each on a cluster of its own.

Each case starts a fresh embedded API server holding what that kind of cluster has: cert-manager's
and the Prometheus Operator's kinds (stand-in CRDs, tests/support/standin_crds.py) everywhere; the
Machine API CRDs on OpenShift and on a cluster with a Machine API; OpenShift's ClusterOperators
``machine-api`` and ``etcd`` on OpenShift. Then, as the README says: ``cpo install-check`` names
the case and the command, and that one command (``kubectl apply -k config/install/<case>``)
succeeds and creates every object of its build, and only the CRDs and webhooks that belong there.
The platform's Machine API CRDs keep their ``resourceVersion`` (nothing wrote them). No kubelet
runs the Deployment: what is checked is what the API server stores.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from apiserver import EmbeddedServerOptions
from controllers.controlplane.components import OPENSHIFT_LAYOUT
from runtime.client import Client
from runtime.envtest import Environment, EnvironmentOptions
from tests.support.manifests import kustomize
from tests.support.processes import child_environment, cpo
from tests.support.standin_crds import cluster_operator_crd, prerequisite_crds

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = Path(sys.executable).parent / "kubectl"
MACHINE_API_CRDS = {"machines.machine.openshift.io", "machinehealthchecks.machine.openshift.io"}
OPERATOR_CRD = "controlplanes.controlplane.cpo.dev"
CONTROLPLANE_WEBHOOKS = {"cpo-mutating-webhook-configuration", "cpo-validating-webhook-configuration"}
MHC_WEBHOOK = "cpo-machinehealthcheck-validating-webhook-configuration"
CASES = {
    # case: (Machine API CRDs there before, OpenShift's operators there, webhook configurations)
    "openshift": (True, True, CONTROLPLANE_WEBHOOKS),
    "machine-api": (True, False, CONTROLPLANE_WEBHOOKS | {MHC_WEBHOOK}),
    "standalone": (False, False, CONTROLPLANE_WEBHOOKS | {MHC_WEBHOOK}),
}

pytestmark = pytest.mark.kubectl


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=ROOT, env=child_environment(), capture_output=True, text=True, timeout=120
    )


async def prepare(env: Environment, client: Client, machine_api: bool, openshift: bool) -> dict[str, str]:
    """The cluster before the install; returns the resourceVersions of its Machine API CRDs."""
    await env.install_crds(prerequisite_crds())
    versions: dict[str, str] = {}
    if machine_api:
        for crd in await env.install_crds([ROOT / "config" / "machine-api"]):
            # Read once Established: the server's own status writes are done by then.
            name = crd["metadata"]["name"]
            established = await client.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
            versions[name] = established["metadata"]["resourceVersion"]
    if openshift:
        await env.install_crds([cluster_operator_crd()])
        # OpenShift's operators keep the control-plane static pods in namespaces of their own.
        for namespace in OPENSHIFT_LAYOUT.scopes():
            await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        for name in ("machine-api", "etcd"):
            await client.create(
                {
                    "apiVersion": "config.openshift.io/v1",
                    "kind": "ClusterOperator",
                    "metadata": {"name": name},
                }
            )
    return versions


async def stored(client: Client, obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return await client.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))


@pytest.mark.parametrize(
    "case",
    list(CASES),
    ids=[
        "on openshift the operator's own objects only and the platform's crds untouched",
        "beside a machine api its crds untouched and the scoped mhc webhook added",
        "on an empty cluster the machine api crds installed too",
    ],
)
async def test_the_readme_install_for_each_kind_of_cluster(case: str) -> None:
    machine_api, openshift, webhook_names = CASES[case]
    command = f"kubectl apply -k config/install/{case}"
    options = EnvironmentOptions(backend="embedded", embedded=EmbeddedServerOptions())
    async with Environment(options) as env, await Client.from_kubeconfig(env.kubeconfig) as client:
        before = await prepare(env, client, machine_api, openshift)
        kubeconfig = str(env.kubeconfig_path)

        check = run(cpo("install-check", "--kubeconfig", kubeconfig))
        assert check.returncode == 0, check.stdout + check.stderr
        assert check.stdout.startswith(f"case: {case}\ninstall: {command}\n"), check.stdout

        applied = run([str(KUBECTL), "--kubeconfig", kubeconfig, *command.split()[1:]])
        assert applied.returncode == 0, applied.stderr

        for obj in kustomize(f"install/{case}"):
            found = await stored(client, obj)
            assert found["metadata"]["uid"], obj["metadata"]
        crds = {
            c["metadata"]["name"]: c
            for c in (await client.list("apiextensions.k8s.io/v1", "CustomResourceDefinition"))["items"]
        }
        expected = {c["metadata"]["name"] for c in prerequisite_crds()} | {OPERATOR_CRD} | MACHINE_API_CRDS
        if openshift:
            expected.add(cluster_operator_crd()["metadata"]["name"])
        assert set(crds) == expected
        for name, version in before.items():
            assert crds[name]["metadata"]["resourceVersion"] == version, f"{name} was written"
        configurations = {
            c["metadata"]["name"]
            for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
            for c in (await client.list("admissionregistration.k8s.io/v1", kind))["items"]
        }
        assert configurations == webhook_names
        deployment = await client.get("apps/v1", "Deployment", "cpo-controller-manager", "cpo-system")
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        assert ("--controllers=controlplane" in args) is openshift, args
        assert ("--control-plane-components=openshift" in args) is openshift, args
    for doc in ("README.md", "docs/operations.md"):
        assert command in (ROOT / doc).read_text(), f"{doc} does not give `{command}`"
