"""The shipped manifests: samples are valid ControlPlanes, webhook configurations point at our paths."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

import runtime.webhook as webhook
from api import ControlPlane
from api.controlplane import GROUP, KIND, MHC_SCOPE_SELECTOR, VERSION
from runtime.client import Client
from webhooks.controlplane import default_controlplane, validate_controlplane_create

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
SAMPLES = sorted((CONFIG / "samples").glob("controlplane_*.yaml"))


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _kubebuilder_path(prefix: str) -> str:
    return f"/{prefix}-{GROUP.replace('.', '-')}-{VERSION}-{KIND.lower()}"


def test_there_are_samples() -> None:
    assert len(SAMPLES) >= 2


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_samples_parse_and_pass_the_admission_rules(path: Path) -> None:
    for doc in _documents(path):
        ControlPlane.from_dict(doc)
        defaulted = copy.deepcopy(doc)
        default_controlplane(defaulted)
        assert validate_controlplane_create(defaulted) == ([], [])


@pytest.mark.usefixtures("machine_crds")
@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
async def test_samples_are_accepted_by_the_api_server(client: Client, namespace: str, path: Path) -> None:
    for doc in _documents(path):
        doc["metadata"]["namespace"] = namespace
        created = await client.create(doc)
        assert created["spec"]["template"] == doc["spec"]["template"]


def test_webhook_configurations_name_our_paths_and_the_scale_subresource() -> None:
    by_kind = {d["kind"]: d for d in _documents(CONFIG / "webhook" / "manifests.yaml")}
    validating_hooks = {
        h["rules"][0]["resources"][0]: h for h in by_kind["ValidatingWebhookConfiguration"]["webhooks"]
    }
    # The MachineHealthCheck validator moved to the opt-in component config/machinehealthcheck,
    # scoped by an objectSelector to the MachineHealthChecks the operator checks.
    assert set(validating_hooks) == {"controlplanes"}
    validating = validating_hooks["controlplanes"]
    (mutating,) = by_kind["MutatingWebhookConfiguration"]["webhooks"]
    (mhc_configuration,) = _documents(CONFIG / "machinehealthcheck" / "manifests.yaml")
    (mhc,) = mhc_configuration["webhooks"]
    assert mhc["clientConfig"]["service"]["path"] == webhook.validate_path(
        "machine.openshift.io", "v1beta1", "MachineHealthCheck"
    )
    assert mhc["rules"][0]["resources"] == ["machinehealthchecks"]
    assert mhc["failurePolicy"] == "Fail" and mhc["sideEffects"] == "None"
    assert mhc["objectSelector"] == MHC_SCOPE_SELECTOR
    assert validating["clientConfig"]["service"]["path"] == _kubebuilder_path("validate")
    assert mutating["clientConfig"]["service"]["path"] == _kubebuilder_path("mutate")
    assert validating["rules"][0]["resources"] == ["controlplanes", "controlplanes/scale"]
    assert mutating["rules"][0]["resources"] == ["controlplanes"]
    for hook in (validating, mutating):
        assert hook["rules"][0]["apiGroups"] == [GROUP] and hook["rules"][0]["apiVersions"] == [VERSION]
        assert hook["failurePolicy"] == "Fail" and hook["sideEffects"] == "None"
    service = _documents(CONFIG / "webhook" / "service.yaml")[0]
    assert service["metadata"]["name"] == validating["clientConfig"]["service"]["name"]
    assert service["spec"]["ports"][0]["targetPort"] == 9443


def test_paths_agree_with_the_webhook_server() -> None:
    assert webhook.validate_path(GROUP, VERSION, KIND) == _kubebuilder_path("validate")
    assert webhook.mutate_path(GROUP, VERSION, KIND) == _kubebuilder_path("mutate")


@pytest.mark.usefixtures("machine_crds")
async def test_webhook_configurations_are_accepted_by_the_api_server(client: Client) -> None:
    for doc in [
        *_documents(CONFIG / "webhook" / "manifests.yaml"),
        *_documents(CONFIG / "machinehealthcheck" / "manifests.yaml"),
    ]:
        # Dry run: stored for real they would send every ControlPlane write to a Service that is not there.
        accepted = await client.create(doc, dry_run=True)
        assert accepted["webhooks"][0]["rules"] == doc["webhooks"][0]["rules"]
