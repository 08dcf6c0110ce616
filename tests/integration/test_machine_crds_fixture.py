"""The harness never replaces a CRD it did not create (tests/support/crd_install.py, behind the
``machine_crds`` fixture).

Each test starts an embedded API server of its own and creates there, before the harness runs, a
CRD of the same name as one of the project's that the harness did not create (no
``cpo.dev/test-harness`` label), as an existing OpenShift cluster has its own Machine API CRDs.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import yaml

from apiserver import EmbeddedServerOptions
from runtime.client import JSON, Client
from runtime.envtest import Environment, EnvironmentOptions
from tests.support.crd_install import HARNESS_LABEL, ForeignCRD, install_own_crds
from tests.support.localmachine import CRD_DIRS

CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
MACHINES = "machines.machine.openshift.io"
MHCS = "machinehealthchecks.machine.openshift.io"


@pytest_asyncio.fixture
async def fresh() -> AsyncIterator[tuple[Environment, Client]]:
    # Always an embedded server of its own, whatever back end the session uses: the foreign CRDs
    # these tests create must never reach a shared cluster.
    options = EnvironmentOptions(backend="embedded", embedded=EmbeddedServerOptions())
    async with Environment(options) as environment:
        client = await Client.from_kubeconfig(environment.kubeconfig)
        async with client:
            yield environment, client


def _project_crd(name: str) -> dict[str, Any]:
    for path in sorted(p for folder in CRD_DIRS for p in folder.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document and (document.get("metadata") or {}).get("name") == name:
                return dict(document)
    raise AssertionError(f"no CRD {name} in {CRD_DIRS}")


def _foreign(name: str, *, version: str = "v1beta1") -> JSON:
    """The project's CRD ``name`` as another writer would own it: no harness label, its own
    annotation, and a schema that keeps every field (so a replacement would show)."""
    crd = copy.deepcopy(_project_crd(name))
    crd["metadata"] = {"name": name, "annotations": {"example.com/owner": "cluster-version-operator"}}
    (only,) = crd["spec"]["versions"]
    only.update(
        name=version,
        schema={"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    )
    only.pop("additionalPrinterColumns", None)
    return crd


async def _established(environment: Environment, client: Client, crd: JSON) -> JSON:
    """``crd`` created and Established, as stored once the server wrote its status."""
    await environment.install_crds([crd])
    stored: JSON = await client.get(*CRD, crd["metadata"]["name"])
    return stored


async def test_a_foreign_crd_of_the_same_name_is_used_as_it_is(fresh: tuple[Environment, Client]) -> None:
    environment, client = fresh
    before = await _established(environment, client, _foreign(MACHINES))
    installed = await install_own_crds(environment, CRD_DIRS)
    assert MACHINES not in [c["metadata"]["name"] for c in installed]
    after = await client.get(*CRD, MACHINES)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["spec"] == before["spec"] and HARNESS_LABEL not in (after["metadata"].get("labels") or {})
    # The others were created, labelled as the harness's own, and may be updated on the next run.
    mhc = await client.get(*CRD, MHCS)
    assert mhc["metadata"]["labels"][HARNESS_LABEL] == "true"
    again = await install_own_crds(environment, CRD_DIRS)
    assert sorted(c["metadata"]["name"] for c in again) == sorted(c["metadata"]["name"] for c in installed)
    assert (await client.get(*CRD, MACHINES))["metadata"]["resourceVersion"] == before["metadata"][
        "resourceVersion"
    ]


async def test_a_foreign_crd_that_cannot_serve_the_tests_stops_them_naming_it_and_why(
    fresh: tuple[Environment, Client],
) -> None:
    environment, client = fresh
    before = await _established(environment, client, _foreign(MHCS, version="v1alpha1"))
    with pytest.raises(ForeignCRD) as stopped:
        await install_own_crds(environment, CRD_DIRS)
    message = str(stopped.value)
    assert MHCS in message and "did not create it" in message and "v1beta1" in message, message
    after = await client.get(*CRD, MHCS)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    # Nothing was written before stopping: not even the CRDs that were free.
    assert [c["metadata"]["name"] for c in (await client.list(*CRD))["items"]] == [MHCS]
