"""Installing the project's CRDs for a test session without ever replacing a CRD the harness did
not create.

Against a cluster the tests did not start (``CPO_TEST_KUBECONFIG``) a CRD of the same name may
already be there: OpenShift's own ``machines.machine.openshift.io`` and
``machinehealthchecks.machine.openshift.io``, served and owned by the cluster-version operator.
Writing the project's schema over it would change what every Machine of that cluster keeps, and
its owner would fight the change. So every CRD the harness creates carries the label
:data:`HARNESS_LABEL`; :func:`install_own_crds` creates a missing CRD, updates one that carries the
label, and uses one without it as it is, provided it serves what the tests need (each version of
the project's CRD, under the same kind and plural, and Established). Otherwise it stops with
:class:`ForeignCRD`, naming the CRD and what is missing.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Final

from runtime.client import JSON, Client
from runtime.envtest import Environment, load_manifests
from runtime.envtest.manifests import ManifestSource
from runtime.errors import NotFound

HARNESS_LABEL: Final = "cpo.dev/test-harness"
"""Label (value ``"true"``) on every CRD the test harness created: the only CRDs it may update."""
CRD_API_VERSION: Final = "apiextensions.k8s.io/v1"


class ForeignCRD(RuntimeError):
    """A CRD of the same name exists, was not created by the harness, and does not serve what the
    tests need; the message says which CRD and why."""


def created_by_harness(crd: Mapping[str, Any]) -> bool:
    """Whether ``crd`` (as stored) carries :data:`HARNESS_LABEL`."""
    return ((crd.get("metadata") or {}).get("labels") or {}).get(HARNESS_LABEL) == "true"


def labelled(crd: Mapping[str, Any]) -> JSON:
    """A copy of ``crd`` with :data:`HARNESS_LABEL` set."""
    copied: JSON = copy.deepcopy(dict(crd))
    metadata = copied.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), HARNESS_LABEL: "true"}
    return copied


def foreign_crd_problem(wanted: Mapping[str, Any], existing: Mapping[str, Any]) -> str | None:
    """Why the tests cannot use ``existing`` (a CRD they did not create) in place of ``wanted``:
    None when it serves every version ``wanted`` serves, under the same kind and plural, and is
    Established."""
    spec, current = wanted["spec"], existing.get("spec") or {}
    names, current_names = spec["names"], current.get("names") or {}
    if (current.get("group"), current_names.get("kind"), current_names.get("plural")) != (
        spec["group"],
        names["kind"],
        names["plural"],
    ):
        return (
            f"it defines {current_names.get('kind')} ({current_names.get('plural')}) in group "
            f"{current.get('group')}, not {names['kind']} ({names['plural']}) in {spec['group']}"
        )
    served = {v.get("name") for v in current.get("versions") or () if v.get("served")}
    missing = [v["name"] for v in spec.get("versions") or () if v.get("served") and v["name"] not in served]
    if missing:
        serves = ", ".join(sorted(str(v) for v in served)) or "none"
        return f"it does not serve version(s) {', '.join(missing)} (it serves {serves})"
    conditions = (existing.get("status") or {}).get("conditions") or ()
    if not any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
        return "it is not Established"
    return None


async def install_own_crds(env: Environment, sources: Iterable[ManifestSource]) -> list[JSON]:
    """Install the CRDs of ``sources`` (objects, files or folders) the way the module docstring
    says; returns the CRDs created or updated (foreign ones used as they are are not in it).
    Raises :class:`ForeignCRD` before writing anything when a foreign CRD cannot be used."""
    documents = load_manifests(sources, kinds={"CustomResourceDefinition"})
    ours: list[JSON] = []
    async with await Client.from_kubeconfig(env.kubeconfig) as client:
        for crd in documents:
            name = crd["metadata"]["name"]
            try:
                existing = await client.get(CRD_API_VERSION, "CustomResourceDefinition", name)
            except NotFound:
                ours.append(labelled(crd))
                continue
            if created_by_harness(existing):
                ours.append(labelled(crd))
                continue
            problem = foreign_crd_problem(crd, existing)
            if problem is not None:
                raise ForeignCRD(
                    f"CRD {name} exists on this cluster and the test harness did not create it (no label "
                    f"{HARNESS_LABEL}=true), so it is never replaced; the tests cannot use it as it is: "
                    f"{problem}. Run them against a cluster whose {name} serves what "
                    f"{spec_summary(crd)} needs, or without that CRD"
                )
    return await env.install_crds(ours) if ours else []


def spec_summary(crd: Mapping[str, Any]) -> str:
    """``group/version Kind`` of each served version of ``crd``, for messages."""
    spec = crd["spec"]
    return ", ".join(
        f"{spec['group']}/{v['name']} {spec['names']['kind']}"
        for v in spec.get("versions") or ()
        if v.get("served")
    )
