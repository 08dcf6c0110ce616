"""What each install of config/ holds: the operator's own objects, and only where they belong the
Machine API CRDs and the MachineHealthCheck webhook (the real build, `kubectl kustomize`)."""

from __future__ import annotations

from typing import Any

import pytest

from api.controlplane import GROUP as CONTROLPLANE_GROUP
from api.controlplane import MHC_SCOPE_SELECTOR
from controllers.controlplane.components import OPENSHIFT_LAYOUT
from controllers.operator import OperatorOptions
from tests.support.manifests import kustomize

MACHINE_API_CRDS = {"machines.machine.openshift.io", "machinehealthchecks.machine.openshift.io"}

pytestmark = pytest.mark.kubectl


def names(objects: list[dict[str, Any]], kind: str) -> set[str]:
    return {o["metadata"]["name"] for o in objects if o["kind"] == kind}


def webhooks(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        hook["name"]: hook
        for o in objects
        if o["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
        for hook in o["webhooks"]
    }


def manager_args(objects: list[dict[str, Any]]) -> list[str]:
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


def controllers_flag(objects: list[dict[str, Any]]) -> str | None:
    flags = [a.split("=", 1)[1] for a in manager_args(objects) if a.startswith("--controllers=")]
    return flags[-1] if flags else None


def judges_machinehealthchecks(objects: list[dict[str, Any]]) -> bool:
    return any(
        "machinehealthchecks" in rule["resources"]
        for hook in webhooks(objects).values()
        for rule in hook["rules"]
    )


def test_config_default_holds_no_crd_but_the_controlplane_one_and_no_machinehealthcheck_webhook() -> None:
    built = kustomize("default")
    crds = [o for o in built if o["kind"] == "CustomResourceDefinition"]
    assert [c["spec"]["group"] for c in crds] == [CONTROLPLANE_GROUP]
    assert not judges_machinehealthchecks(built)
    assert set(webhooks(built)) == {"mcontrolplane.cpo.dev", "vcontrolplane.cpo.dev"}


def test_the_openshift_install_runs_the_controlplane_controller_only_and_adds_nothing_else() -> None:
    built = kustomize("install/openshift")
    default = kustomize("default")
    assert {(o["kind"], o["metadata"]["name"]) for o in built} == {
        (o["kind"], o["metadata"]["name"]) for o in default
    }
    flag = controllers_flag(built)
    assert flag == "controlplane"
    assert OperatorOptions(kubeconfig="kc", controllers=flag).with_defaults().controllers == {"controlplane"}


def test_the_openshift_install_reads_the_components_where_openshift_keeps_them() -> None:
    built = kustomize("install/openshift")
    assert "--control-plane-components=openshift" in manager_args(built)
    readers = [o for o in built if o["metadata"]["name"] == "cpo-components-reader-role"]
    assert {o["metadata"]["namespace"] for o in readers} == set(OPENSHIFT_LAYOUT.scopes())
    assert all(o["kind"] == "Role" for o in readers)
    bound = {
        o["metadata"]["namespace"]
        for o in built
        if o["metadata"]["name"] == "cpo-components-reader-rolebinding"
    }
    assert bound == set(OPENSHIFT_LAYOUT.scopes())


def test_the_machine_api_install_adds_the_scoped_machinehealthcheck_webhook_and_no_crd() -> None:
    built = kustomize("install/machine-api")
    assert names(built, "CustomResourceDefinition") == {f"controlplanes.{CONTROLPLANE_GROUP}"}
    hook = webhooks(built)["vmachinehealthcheck.cpo.dev"]
    assert hook["objectSelector"] == MHC_SCOPE_SELECTOR
    assert controllers_flag(built) is None  # every controller


def test_the_standalone_install_adds_the_machine_api_crds_too() -> None:
    built = kustomize("install/standalone")
    assert (
        names(built, "CustomResourceDefinition") == {f"controlplanes.{CONTROLPLANE_GROUP}"} | MACHINE_API_CRDS
    )
    assert webhooks(built)["vmachinehealthcheck.cpo.dev"]["objectSelector"] == MHC_SCOPE_SELECTOR
    assert controllers_flag(built) is None
