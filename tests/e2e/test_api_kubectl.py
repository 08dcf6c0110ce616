"""kubectl on the generated CRDs: short name, columns, scale, and docstrings as `kubectl explain` text."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from api.controlplane import ControlPlaneSpec
from api.crdgen import field_schema
from tests.e2e.test_kubectl import Kubectl
from tests.support.controlplane import CONTROLPLANE_COLUMNS

pytestmark = pytest.mark.kubectl

ROOT = Path(__file__).resolve().parents[2]

SAMPLE = """\
apiVersion: controlplane.cpo.dev/v1alpha1
kind: ControlPlane
metadata:
  name: demo
spec:
  replicas: 3
  template:
    spec:
      providerSpec:
        value: {instanceType: local}
"""


@pytest_asyncio.fixture(loop_scope="session")
async def kubectl(env: Any, machine_crds: None, namespace: str) -> Kubectl:
    return Kubectl(env.kubeconfig_path, namespace)


async def explain(kubectl: Kubectl, field: str, deadline: float = 30.0) -> str:
    """``kubectl explain``, retried until the CRD's schema is published or ``deadline`` s pass.

    kube-apiserver publishes a new CRD's OpenAPI a few seconds after the CRD is Established
    (kubectl explain fails with "couldn't find resource" until then), so a script must wait for
    it; the embedded server publishes at once.
    """
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while True:
        try:
            return await kubectl.run("explain", field)
        except AssertionError:
            if loop.time() > end:
                raise
        await asyncio.sleep(0.5)  # allow-sleep: poll interval inside a deadline loop


async def test_explain_shows_the_field_docstrings(kubectl: Kubectl) -> None:
    out = await explain(kubectl, "cp.spec.replicas")
    assert "FIELD: replicas <integer>" in out
    words = " ".join(out.split())
    description = field_schema("replicas", ControlPlaneSpec.model_fields["replicas"], "spec.replicas")[
        "description"
    ]
    assert " ".join(description.split()) in words
    hooks = await explain(kubectl, "machines.spec.lifecycleHooks.preDrain")
    assert "owner\t<string> -required-" in hooks


async def test_short_name_columns_and_scale(kubectl: Kubectl) -> None:
    await kubectl.run("apply", "-f", "-", stdin=SAMPLE)
    table = (await kubectl.run("get", "cp")).splitlines()
    assert table[0].split() == CONTROLPLANE_COLUMNS
    assert table[1].split()[:2] == ["demo", "3"]
    await kubectl.run("scale", "cp/demo", "--replicas", "5")
    assert (await kubectl.run("get", "cp", "demo", "-o", "jsonpath={.spec.replicas}")).strip() == "5"
    # Defaults applied by the server's schema are visible to kubectl too.
    assert (await kubectl.run("get", "cp", "demo", "-o", "jsonpath={.spec.strategy.type}")) == "RollingUpdate"
