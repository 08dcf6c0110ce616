"""Prometheus metrics of the runtime, with controller-runtime's names, types, labels and buckets.

Dashboards and alerts written for Go operators should work unchanged against ours, so every family
here mirrors **controller-runtime v0.23** (client-go v0.35 for the workqueue semantics): the same
metric name, type, label names and histogram buckets. Help texts are our own wording.

Everything registers into one :data:`registry` (controller-runtime's ``metrics.Registry``), never
into prometheus_client's global default registry, so an embedding program keeps its own metrics
apart. Render it with :func:`generate_latest`; serve it with :data:`CONTENT_TYPE_LATEST`.

Families
--------
The controller, leader-election, REST-client and process families are defined here
(:mod:`runtime.metrics.families`); the work queue, webhook and cert-watcher families beside their
code (:mod:`runtime.workqueue.metrics`, :mod:`runtime.webhook.metrics`, :mod:`runtime.certwatcher`),
registered in the same registry when that code is imported, and their names are also served by
this module.

Controller (``controller`` label; see :func:`init_controller_metrics`):
``controller_runtime_reconcile_total{controller,result}``, ``…_reconcile_errors_total``,
``…_terminal_reconcile_errors_total``, ``…_reconcile_panics_total``,
``…_reconcile_timeouts_total``, ``…_reconcile_time_seconds`` (40 buckets, 5 ms … 60 s),
``…_max_concurrent_reconciles``, ``…_active_workers``.

Workqueue (``name`` and ``controller`` labels, both the controller's name; see
:func:`runtime.workqueue.init_workqueue_metrics`): ``workqueue_depth`` (plus ``priority``,
always ``""`` for our classic queue, as controller-runtime ≥ v0.21 labels it), ``workqueue_adds_total``,
``workqueue_queue_duration_seconds`` and ``workqueue_work_duration_seconds`` (12 exponential
buckets 1e-8 … 1e3 s), ``workqueue_unfinished_work_seconds``,
``workqueue_longest_running_processor_seconds``, ``workqueue_retries_total``.

Leader election: ``leader_election_master_status{name}``.

REST client: ``rest_client_requests_total{code,method,host}`` and
``rest_client_request_duration_seconds{verb,host}``.

Webhooks (``webhook`` = the served path; see :func:`runtime.webhook.init_webhook_metrics`):
``controller_runtime_webhook_requests_total{webhook,code}``,
``controller_runtime_webhook_latency_seconds{webhook}`` (the v0.23 exponential buckets),
``controller_runtime_webhook_requests_in_flight{webhook}``,
``controller_runtime_webhook_panics_total``.

Cert watcher (no labels): ``certwatcher_read_certificate_total``,
``certwatcher_read_certificate_errors_total``.

Process: ``process_*`` (CPU, memory, file descriptors, start time), ``python_info`` and
``python_gc_*`` — the Python counterparts of Go's process and runtime collectors.

Performance
-----------
A prometheus_client ``labels(...)`` lookup costs more than the update it precedes, so the
``init_*`` helpers look every child up once and hand back objects holding them. Callers keep
those objects for their lifetime instead of calling ``labels`` per event.

The controller and workqueue families change a dozen times per watch event, always from the
event loop's thread, so they are :class:`LoopFamily` collectors of plain-float series
(:class:`LoopCounter`, :class:`LoopGauge`, :class:`LoopHistogram`: no lock, no checks, several
times cheaper per update than prometheus_client's; ``docs/performance.md``) that render the same
exposition. Update them from the event loop only; the other families are prometheus_client's own
and thread-safe.

Modules
-------
* :mod:`runtime.metrics.exposition` — the :data:`registry` and its text exposition
  (:func:`generate_latest`).
* :mod:`runtime.metrics.loop` — the lock-free event-loop series (:class:`LoopFamily` and its
  :class:`LoopCounter`, :class:`LoopGauge`, :class:`LoopHistogram`).
* :mod:`runtime.metrics.families` — the runtime's own families (controller, leader election, REST
  client, process), their buckets, and the cached children of one controller
  (:class:`ControllerMetrics`).

This package exports all of them, and serves the subsystems' families by name as well.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

from .exposition import CONTENT_TYPE_LATEST, CONTROLLER_RUNTIME_VERSION, generate_latest, registry
from .families import (
    RECONCILE_RESULTS,
    RECONCILE_TIME_BUCKETS,
    REST_CLIENT_LATENCY_BUCKETS,
    RESULT_ERROR,
    RESULT_REQUEUE,
    RESULT_REQUEUE_AFTER,
    RESULT_SUCCESS,
    ControllerMetrics,
    active_workers,
    exponential_buckets,
    init_controller_metrics,
    leader_election_master_status,
    max_concurrent_reconciles,
    reconcile_errors_total,
    reconcile_panics_total,
    reconcile_time_seconds,
    reconcile_timeouts_total,
    reconcile_total,
    rest_client_request_duration_seconds,
    rest_client_requests_total,
    set_leader_status,
    terminal_reconcile_errors_total,
)
from .loop import LoopCounter, LoopFamily, LoopGauge, LoopHistogram

# --- families of the subsystems -----------------------------------------------------------------
#
# The workqueue, webhook and cert-watcher families are defined beside the code that updates them,
# registered in this module's registry. Their names are also served here, resolved on first use,
# so that reading them through this module does not make every import of it load those subsystems.

_DEFINED_IN: Final = {
    **dict.fromkeys(
        (
            "WORKQUEUE_DURATION_BUCKETS",
            "WorkqueueMetrics",
            "init_workqueue_metrics",
            "workqueue_adds_total",
            "workqueue_depth",
            "workqueue_longest_running_processor_seconds",
            "workqueue_queue_duration_seconds",
            "workqueue_retries_total",
            "workqueue_unfinished_work_seconds",
            "workqueue_work_duration_seconds",
        ),
        "runtime.workqueue.metrics",
    ),
    **dict.fromkeys(
        (
            "WEBHOOK_LATENCY_BUCKETS",
            "WebhookMetrics",
            "init_webhook_metrics",
            "webhook_latency_seconds",
            "webhook_panics_total",
            "webhook_requests_in_flight",
            "webhook_requests_total",
        ),
        "runtime.webhook.metrics",
    ),
    **dict.fromkeys(
        ("certwatcher_read_certificate_errors_total", "certwatcher_read_certificate_total"),
        "runtime.certwatcher",
    ),
}


def __getattr__(name: str) -> Any:
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


if TYPE_CHECKING:
    from ..certwatcher import (
        certwatcher_read_certificate_errors_total as certwatcher_read_certificate_errors_total,
    )
    from ..certwatcher import certwatcher_read_certificate_total as certwatcher_read_certificate_total
    from ..webhook.metrics import WEBHOOK_LATENCY_BUCKETS as WEBHOOK_LATENCY_BUCKETS
    from ..webhook.metrics import WebhookMetrics as WebhookMetrics
    from ..webhook.metrics import init_webhook_metrics as init_webhook_metrics
    from ..webhook.metrics import webhook_latency_seconds as webhook_latency_seconds
    from ..webhook.metrics import webhook_panics_total as webhook_panics_total
    from ..webhook.metrics import webhook_requests_in_flight as webhook_requests_in_flight
    from ..webhook.metrics import webhook_requests_total as webhook_requests_total
    from ..workqueue.metrics import WORKQUEUE_DURATION_BUCKETS as WORKQUEUE_DURATION_BUCKETS
    from ..workqueue.metrics import WorkqueueMetrics as WorkqueueMetrics
    from ..workqueue.metrics import init_workqueue_metrics as init_workqueue_metrics
    from ..workqueue.metrics import workqueue_adds_total as workqueue_adds_total
    from ..workqueue.metrics import workqueue_depth as workqueue_depth
    from ..workqueue.metrics import (
        workqueue_longest_running_processor_seconds as workqueue_longest_running_processor_seconds,
    )
    from ..workqueue.metrics import workqueue_queue_duration_seconds as workqueue_queue_duration_seconds
    from ..workqueue.metrics import workqueue_retries_total as workqueue_retries_total
    from ..workqueue.metrics import workqueue_unfinished_work_seconds as workqueue_unfinished_work_seconds
    from ..workqueue.metrics import workqueue_work_duration_seconds as workqueue_work_duration_seconds


__all__ = [
    "CONTENT_TYPE_LATEST",
    "CONTROLLER_RUNTIME_VERSION",
    "RECONCILE_RESULTS",
    "RECONCILE_TIME_BUCKETS",
    "REST_CLIENT_LATENCY_BUCKETS",
    "RESULT_ERROR",
    "RESULT_REQUEUE",
    "RESULT_REQUEUE_AFTER",
    "RESULT_SUCCESS",
    "ControllerMetrics",
    "LoopCounter",
    "LoopFamily",
    "LoopGauge",
    "LoopHistogram",
    "active_workers",
    "exponential_buckets",
    "generate_latest",
    "init_controller_metrics",
    "leader_election_master_status",
    "max_concurrent_reconciles",
    "reconcile_errors_total",
    "reconcile_panics_total",
    "reconcile_time_seconds",
    "reconcile_timeouts_total",
    "reconcile_total",
    "registry",
    "rest_client_request_duration_seconds",
    "rest_client_requests_total",
    "set_leader_status",
    "terminal_reconcile_errors_total",
]
