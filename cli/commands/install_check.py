"""``cpo install-check``: which of the three installs a cluster needs, read before installing.

The operator installs in one of three ways (``config/install/``, docs/operations.md "Install"),
and the wrong one does harm: applying the Machine API CRDs over a platform's replaces its schema,
and running the ``machinehealthcheck`` and ``etcd-quorum-hook`` controllers beside OpenShift's
machine-api-operator and cluster-etcd-operator makes two writers of the same objects. The check
reads, and writes nothing:

* the Machine API: the CRDs ``machines.machine.openshift.io`` and
  ``machinehealthchecks.machine.openshift.io``;
* OpenShift's operators: the ClusterOperators (``config.openshift.io/v1``) ``machine-api`` and
  ``etcd``, which the cluster-version operator creates for machine-api-operator and
  cluster-etcd-operator;
* the prerequisites of ``config/default``: cert-manager (``certificates`` and ``issuers`` of
  ``cert-manager.io``) and the Prometheus Operator (``servicemonitors`` and ``prometheusrules`` of
  ``monitoring.coreos.com``).

The decision (:func:`decide`, a pure function):

====================================================  ==========================================
what the cluster has                                  install
====================================================  ==========================================
Machine API CRDs and an OpenShift ClusterOperator     ``config/install/openshift``
Machine API CRDs, none of OpenShift's operators       ``config/install/machine-api``
no Machine API CRD                                    ``config/install/standalone``
one Machine API CRD without the other                 none: the Machine API is half installed
====================================================  ==========================================

Exit status: 0 when an install fits and its prerequisites are there; 1 when the API server cannot
be read; 2 when no install fits or a prerequisite is missing (the output says which).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

MACHINE_API_CRDS: Final = ("machines.machine.openshift.io", "machinehealthchecks.machine.openshift.io")
CLUSTER_OPERATOR_CRD: Final = "clusteroperators.config.openshift.io"
OPENSHIFT_OPERATORS: Final = ("machine-api", "etcd")
"""The ClusterOperators whose presence makes a cluster OpenShift for this check."""
PREREQUISITES: Final = {
    "cert-manager": ("certificates.cert-manager.io", "issuers.cert-manager.io"),
    "the Prometheus Operator": (
        "servicemonitors.monitoring.coreos.com",
        "prometheusrules.monitoring.coreos.com",
    ),
}
"""What ``config/default`` needs installed first (``config/certmanager``, ``config/prometheus``)."""


@dataclass(frozen=True)
class ClusterFacts:
    """What the check read from the cluster."""

    crds: frozenset[str]
    """Names of every CustomResourceDefinition."""
    cluster_operators: frozenset[str]
    """Those of :data:`OPENSHIFT_OPERATORS` that exist as ClusterOperators."""


@dataclass(frozen=True)
class Verdict:
    """Which install fits, and what the user reads."""

    case: str | None
    """``openshift``, ``machine-api``, ``standalone``; None when none fits."""
    lines: tuple[str, ...]
    missing: tuple[str, ...]
    """Prerequisites (by name) not installed."""

    @property
    def command(self) -> str | None:
        return None if self.case is None else f"kubectl apply -k config/install/{self.case}"

    @property
    def exit_code(self) -> int:
        return 0 if self.case is not None and not self.missing else 2


def decide(facts: ClusterFacts) -> Verdict:
    """The install for a cluster with these facts (see the module docstring's table)."""
    present = [name for name in MACHINE_API_CRDS if name in facts.crds]
    operators = sorted(facts.cluster_operators)
    lines: list[str] = []
    case: str | None
    if len(present) == len(MACHINE_API_CRDS) and operators:
        case = "openshift"
        lines.append(
            f"OpenShift: Machine API CRDs present, ClusterOperator {', '.join(operators)} present; "
            "the operator runs its controlplane controller only and installs no CRD but its own"
        )
    elif len(present) == len(MACHINE_API_CRDS):
        case = "machine-api"
        lines.append(
            "a Machine API without OpenShift's operators: its CRDs are kept as they are; the operator "
            "runs every controller and the webhook for MachineHealthChecks labelled "
            "controlplane.cpo.dev/machinehealthcheck=true"
        )
    elif not present:
        case = "standalone"
        lines.append("no Machine API: the project's Machine API CRDs are installed with the operator")
    else:
        case = None
        missing_crd = next(name for name in MACHINE_API_CRDS if name not in facts.crds)
        lines.append(
            f"half a Machine API: {present[0]} is installed but {missing_crd} is not; install the "
            "Machine API whole (or remove it) first, since installing either CRD here would "
            "replace the owner's"
        )
    missing = tuple(
        name for name, crds in PREREQUISITES.items() if not all(crd in facts.crds for crd in crds)
    )
    for name in missing:
        lines.append(f"missing: {name} (its CRDs {', '.join(PREREQUISITES[name])}); install it first")
    return Verdict(case=case, lines=tuple(lines), missing=missing)


def render(verdict: Verdict) -> str:
    """The text ``cpo install-check`` prints: ``case:`` and ``install:`` lines, then the reasons."""
    out = [f"case: {verdict.case or 'none'}"]
    if verdict.command is not None:
        out.append(f"install: {verdict.command}")
    out.extend(f"  {line}" for line in verdict.lines)
    return "\n".join(out) + "\n"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        default=None,
        help="kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config, else the pod's service account)",
    )
    parser.add_argument("--context", default=None, help="kubeconfig context (default: its current one)")


def run(args: argparse.Namespace) -> int:
    """Read the cluster, print the verdict; the exit status of the module docstring."""
    try:
        facts = asyncio.run(read_facts(args.kubeconfig, args.context))
    except Exception as err:  # credentials, network, TLS: the user's to fix, say what
        print(f"cpo install-check: cannot read the cluster: {err}", file=sys.stderr)
        return 1
    verdict = decide(facts)
    sys.stdout.write(render(verdict))
    return verdict.exit_code


async def read_facts(kubeconfig: str | None, context: str | None) -> ClusterFacts:
    """The CRD names and OpenShift's ClusterOperators, read with the user's credentials."""
    from cli.explain import kubeconfig_path
    from runtime.client import Client
    from runtime.errors import NotFound

    path = kubeconfig_path(kubeconfig)
    client = await (Client.in_cluster() if path is None else Client.from_kubeconfig(path, context=context))
    async with client:
        crds = await client.list("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        names = frozenset(str(item["metadata"]["name"]) for item in crds["items"])
        operators: set[str] = set()
        if CLUSTER_OPERATOR_CRD in names:
            for name in OPENSHIFT_OPERATORS:
                try:
                    await client.get("config.openshift.io/v1", "ClusterOperator", name)
                except NotFound:
                    continue
                operators.add(name)
        return ClusterFacts(crds=names, cluster_operators=frozenset(operators))


def facts_of(crds: Iterable[str], cluster_operators: Iterable[str] = ()) -> ClusterFacts:
    """Facts built by hand (tests, examples)."""
    return ClusterFacts(crds=frozenset(crds), cluster_operators=frozenset(cluster_operators))
