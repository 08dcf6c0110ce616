"""ControlPlane admission end to end: the API server calls our webhook server over TLS, kubectl shows it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

import runtime.webhook as webhook
import tests.support.webhooks as support
from runtime.client import JSON, Client
from tests.e2e.test_kubectl import Kubectl
from webhooks.adoption import machines_from_reader
from webhooks.controlplane_admission import ControlPlaneDefaulter, ControlPlaneValidator, getter_from_reader

# Every test runs with the ControlPlane webhooks of this process registered (controlplane_webhooks).
pytestmark = [
    pytest.mark.asyncio(loop_scope="session"),
    pytest.mark.kubectl,
    pytest.mark.usefixtures("controlplane_webhooks"),
]

ROOT = Path(__file__).resolve().parents[2]
GROUP, VERSION, KIND = "controlplane.cpo.dev", "v1alpha1", "ControlPlane"
CP = (f"{GROUP}/{VERSION}", KIND)
ODD = "must be an odd number (1, 3, 5, 7) for a stacked etcd control plane"


def _yaml(name: str, replicas: int, external: bool = False) -> str:
    etcd = "\n  etcd:\n    external: true" if external else ""
    return f"""\
apiVersion: {GROUP}/{VERSION}
kind: {KIND}
metadata:
  name: {name}
spec:
  replicas: {replicas}{etcd}
  template:
    spec:
      providerSpec:
        value:
          instanceType: m6i.xlarge
"""


@pytest_asyncio.fixture(loop_scope="session")
async def controlplane_webhooks(
    machine_crds: None, client: Client, namespace: str, tmp_path: Path
) -> AsyncIterator[None]:
    """The ControlPlane CRD installed and the API server calling this process's ControlPlane
    validating and defaulting webhooks, for as long as the test runs."""
    certs = support.ServingCerts(tmp_path / "certs")
    certs.write()
    server = webhook.WebhookServer(
        webhook.WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=str(certs.directory))
    )
    validator = ControlPlaneValidator(getter_from_reader(client), machines_from_reader(client))
    server.register_validator(GROUP, VERSION, KIND, validator)
    server.register_defaulter(GROUP, VERSION, KIND, ControlPlaneDefaulter())
    paths = {
        "ValidatingWebhookConfiguration": webhook.validate_path(GROUP, VERSION, KIND),
        "MutatingWebhookConfiguration": webhook.mutate_path(GROUP, VERSION, KIND),
    }
    async with support.running_webhook_server(server):
        configurations = support.controlplane_webhook_configurations(
            f"https://127.0.0.1:{server.port}", certs.ca.cert_pem, namespace, paths=paths, name="controlplane"
        )
        async with support.registered_webhooks(client, *configurations):
            yield


async def test_even_replicas_refused_on_create_update_and_scale(
    client: Client, kubeconfig_path: Path, namespace: str
) -> None:
    kubectl = Kubectl(kubeconfig_path, namespace)
    out = await kubectl.run("apply", "-f", "-", stdin=_yaml("even", 4), check=False)
    assert f"spec.replicas: Invalid value: 4: {ODD}" in out, out
    assert "denied the request" in out

    await kubectl.run("apply", "-f", "-", stdin=_yaml("cluster", 3))
    out = await kubectl.run(
        "patch", "cp", "cluster", "--type", "merge", "-p", '{"spec":{"replicas":2}}', check=False
    )
    assert f"spec.replicas: Invalid value: 2: {ODD}" in out, out

    out = await kubectl.run("scale", "cp/cluster", "--replicas", "4", check=False)
    assert f'Scale.autoscaling "cluster" is invalid: spec.replicas: Invalid value: 4: {ODD}' in out, out
    assert (await client.get(*CP, "cluster", namespace))["spec"]["replicas"] == 3

    out = await kubectl.run("scale", "cp/cluster", "--replicas", "5")
    assert "scaled" in out
    assert (await client.get(*CP, "cluster", namespace))["spec"]["replicas"] == 5


async def test_defaults_appear_on_a_created_object(client: Client, namespace: str) -> None:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": "bare", "namespace": namespace},
        "spec": {"template": {"spec": {"providerSpec": {"value": {}}}}},
    }
    created = await client.create(body)
    spec = created["spec"]
    assert spec["replicas"] == 1 and spec["enableAutorepair"] is True and spec["state"] == "Active"
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}
    master = {"machine.openshift.io/cluster-api-machine-role": "master"}
    assert spec["selector"] == {"matchLabels": master}
    # Only the webhook defaults the template labels (the schema cannot copy from the selector).
    assert spec["template"]["metadata"]["labels"] == master


async def test_above_seven_passes_with_a_warning_kubectl_shows(
    client: Client, kubeconfig_path: Path, namespace: str
) -> None:
    kubectl = Kubectl(kubeconfig_path, namespace)
    out = await kubectl.run("apply", "-f", "-", stdin=_yaml("big", 9), check=False)
    assert "Warning: spec.replicas: 9 is more than the recommended 7 etcd members" in out, out
    assert (await client.get(*CP, "big", namespace))["spec"]["replicas"] == 9


async def test_external_etcd_scales_to_even_counts(
    client: Client, kubeconfig_path: Path, namespace: str
) -> None:
    kubectl = Kubectl(kubeconfig_path, namespace)
    await kubectl.run("apply", "-f", "-", stdin=_yaml("ext", 3, external=True))
    await kubectl.run("scale", "cp/ext", "--replicas", "4")
    assert (await client.get(*CP, "ext", namespace))["spec"]["replicas"] == 4
    out = await kubectl.run(
        "patch", "cp", "ext", "--type", "merge", "-p", '{"spec":{"etcd":{"external":false}}}', check=False
    )
    assert "spec.etcd.external: Invalid value: false: field is immutable" in out, out


async def test_a_controlplane_over_existing_machines_must_match_them_or_start_inactive(
    client: Client, kubeconfig_path: Path, namespace: str
) -> None:
    """Issue 26, case 4, as kubectl shows it (the world with running Machines and real etcd is in
    tests/integration/test_controlplane_basic.py): three control-plane Machines exist, so a
    ControlPlane without replicas (1) is refused with both numbers and what to do; created
    Inactive it is accepted; it is activated only with replicas 3, and never goes back."""
    kubectl = Kubectl(kubeconfig_path, namespace)
    await _master_machines(client, namespace, 3)
    without_replicas = _yaml("cluster", 1).replace("  replicas: 1\n", "")
    out = await kubectl.run("apply", "-f", "-", stdin=without_replicas, check=False)
    assert (
        "spec.replicas: Invalid value: 1: 3 control-plane Machine(s) matching spec.selector exist and "
        "spec.replicas is 1: an Active ControlPlane would delete 2 of them; set spec.replicas to 3 to "
        "adopt them as they are, or create the ControlPlane with spec.state Inactive to see first what "
        "it would do"
    ) in " ".join(out.split()), out

    await kubectl.run(
        "apply", "-f", "-", stdin=without_replicas.replace("\nspec:\n", "\nspec:\n  state: Inactive\n", 1)
    )
    header, row = (await kubectl.run("get", "cp", "cluster")).splitlines()[:2]
    assert row[header.index("STATE") :].split()[0] == "Inactive", (header, row)

    patch = ["patch", "cp", "cluster", "--type", "merge", "-p"]
    out = await kubectl.run(*patch, '{"spec":{"state":"Active"}}', check=False)
    assert "set spec.replicas to 3 to adopt them as they are, or keep spec.state Inactive" in out, out
    await kubectl.run(*patch, '{"spec":{"state":"Active","replicas":3}}')
    # Later scale changes are the user's to make: not compared with the Machines.
    await kubectl.run("scale", "cp/cluster", "--replicas", "5")
    out = await kubectl.run(*patch, '{"spec":{"state":"Inactive"}}', check=False)
    assert "spec.state: Forbidden: cannot go back to Inactive once Active" in out, out
    spec = (await client.get(*CP, "cluster", namespace))["spec"]
    assert (spec["state"], spec["replicas"]) == ("Active", 5)


async def _master_machines(client: Client, namespace: str, count: int, owner: JSON | None = None) -> None:
    master = {"machine.openshift.io/cluster-api-machine-role": "master"}
    refs = (
        [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
        if owner is not None
        else []
    )
    for index in range(count):
        metadata = {"name": f"master-{index}", "namespace": namespace, "labels": master}
        if refs:
            metadata["ownerReferences"] = refs
        await client.create(
            {
                "apiVersion": "machine.openshift.io/v1beta1",
                "kind": "Machine",
                "metadata": metadata,
                "spec": {},
            }
        )


async def test_a_controlplane_over_machines_another_controller_controls_is_refused(
    client: Client, kubeconfig_path: Path, namespace: str
) -> None:
    """Three control-plane Machines controlled by something else (a ConfigMap stands in for a
    MachineSet or another ControlPlane): replicas 3 matches their number, but an Active
    ControlPlane would never adopt them and would create three of its own beside them, so kubectl
    is refused with the Machines, their controller and what to do; Inactive is accepted."""
    kubectl = Kubectl(kubeconfig_path, namespace)
    other = await client.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": namespace}}
    )
    await _master_machines(client, namespace, 3, owner=other)
    out = await kubectl.run("apply", "-f", "-", stdin=_yaml("cluster", 3), check=False)
    assert (
        "spec.selector: Forbidden: Machine(s) master-0, master-1, master-2 matching spec.selector are "
        "controlled by ConfigMap other: an Active ControlPlane never adopts them and would create 3 "
        "Machine(s) of its own beside them"
    ) in " ".join(out.split()), out
    await kubectl.run(
        "apply", "-f", "-", stdin=_yaml("cluster", 3).replace("\nspec:\n", "\nspec:\n  state: Inactive\n", 1)
    )
    assert (await client.get(*CP, "cluster", namespace))["spec"]["state"] == "Inactive"


async def test_over_two_stacked_machines_the_refusal_advises_an_odd_count(
    client: Client, kubeconfig_path: Path, namespace: str
) -> None:
    """Two control-plane Machines and stacked etcd: replicas 2 would be refused as even, so the
    refusal of replicas 3 does not advise it; it says to make the count odd while Inactive."""
    kubectl = Kubectl(kubeconfig_path, namespace)
    await _master_machines(client, namespace, 2)
    out = " ".join((await kubectl.run("apply", "-f", "-", stdin=_yaml("cluster", 3), check=False)).split())
    assert "2 control-plane Machine(s) matching spec.selector exist and spec.replicas is 3" in out, out
    assert "set spec.replicas to 2" not in out, out
    assert (
        "an even number of stacked etcd members cannot be adopted as it is (spec.replicas must be odd): "
        "make the count odd while the ControlPlane is Inactive"
    ) in out, out
