"""The MachineHealthCheck metrics, under the machine-api-operator's names, types and labels.

Alerts and dashboards written for OpenShift's machine-api-operator keep working against this
operator, e.g. the shipped alert ``MachineHealthCheckUnterminatedShortCircuit``
(``mapi_machinehealthcheck_short_circuit == 1`` for 30 minutes):

====================================================  =======  ===================  ==========================
name                                                  type     labels               value
====================================================  =======  ===================  ==========================
``mapi_machinehealthcheck_nodes_covered``             gauge    ``name, namespace``  Machines the MHC selects
``mapi_machinehealthcheck_remediation_success_total`` counter  ``name, namespace``  remediations started
``mapi_machinehealthcheck_short_circuit``             gauge    ``name, namespace``  1 while short-circuited
====================================================  =======  ===================  ==========================

A remediation counts as started when this controller deleted the Machine, marked a
ControlPlane-owned Machine for its owner, or created an external remediation request.
Every series of a MachineHealthCheck is removed when the MachineHealthCheck goes
(:func:`forget`), so no stale ``short_circuit 1`` keeps an alert firing.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Gauge

from runtime import metrics

LABELS: Final = ("name", "namespace")

nodes_covered: Final = Gauge(
    "mapi_machinehealthcheck_nodes_covered",
    "Number of nodes covered by MachineHealthChecks",
    LABELS,
    registry=metrics.registry,
)
remediation_success_total: Final = Counter(
    "mapi_machinehealthcheck_remediation_success_total",
    "Number of successful remediations performed by MachineHealthChecks",
    LABELS,
    registry=metrics.registry,
)
short_circuit: Final = Gauge(
    "mapi_machinehealthcheck_short_circuit",
    "Short circuit status for MachineHealthCheck (0=no, 1=yes)",
    LABELS,
    registry=metrics.registry,
)


def observe(name: str, namespace: str, *, covered: int, short_circuited: bool) -> None:
    """Record what one reconcile of ``namespace/name`` saw; creates the counter series at 0."""
    nodes_covered.labels(name, namespace).set(covered)
    short_circuit.labels(name, namespace).set(1.0 if short_circuited else 0.0)
    remediation_success_total.labels(name, namespace)  # present from the first reconcile on


def remediation_started(name: str, namespace: str) -> None:
    """Count one remediation started by ``namespace/name``."""
    remediation_success_total.labels(name, namespace).inc()


def forget(name: str, namespace: str) -> None:
    """Remove every series of a MachineHealthCheck that no longer exists."""
    for family in (nodes_covered, remediation_success_total, short_circuit):
        try:
            family.remove(name, namespace)
        except KeyError:
            pass  # never observed in this process
