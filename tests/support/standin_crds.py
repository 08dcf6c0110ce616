"""Minimal CRDs standing in for other projects' kinds, so that an install can be applied to the
embedded API server as to a cluster that has them: cert-manager's ``Certificate`` and ``Issuer``,
the Prometheus Operator's ``ServiceMonitor`` and ``PrometheusRule``, OpenShift's
``ClusterOperator``. Only names and scope are theirs; every schema keeps any field (written here,
not copied: these tests check what is created, not how those projects validate it)."""

from __future__ import annotations

from typing import Any


def standin_crd(
    group: str, kind: str, plural: str, *, namespaced: bool = True, version: str = "v1"
) -> dict[str, Any]:
    """A served, stored CRD for ``kind`` whose objects may hold anything."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
            "scope": "Namespaced" if namespaced else "Cluster",
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def prerequisite_crds() -> list[dict[str, Any]]:
    """What ``config/default`` needs installed first: cert-manager's and the Prometheus Operator's kinds."""
    return [
        standin_crd("cert-manager.io", "Certificate", "certificates"),
        standin_crd("cert-manager.io", "Issuer", "issuers"),
        standin_crd("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
        standin_crd("monitoring.coreos.com", "PrometheusRule", "prometheusrules"),
    ]


def cluster_operator_crd() -> dict[str, Any]:
    """OpenShift's ``ClusterOperator`` (``config.openshift.io/v1``, cluster-scoped)."""
    return standin_crd("config.openshift.io", "ClusterOperator", "clusteroperators", namespaced=False)
