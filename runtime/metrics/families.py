"""The runtime's own metric families — controller, leader election, REST client, process — with
controller-runtime's names, types, labels and buckets, and the cached children of one controller.

The list of every family and why they mirror controller-runtime is in :mod:`runtime.metrics`.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Gauge, GCCollector, Histogram, PlatformCollector, ProcessCollector

from .exposition import registry
from .loop import LoopCounter, LoopFamily, LoopGauge, LoopHistogram

# Values of the ``result`` label of controller_runtime_reconcile_total.
RESULT_SUCCESS: Final = "success"
RESULT_ERROR: Final = "error"
RESULT_REQUEUE: Final = "requeue"
RESULT_REQUEUE_AFTER: Final = "requeue_after"
RECONCILE_RESULTS: Final = (RESULT_SUCCESS, RESULT_ERROR, RESULT_REQUEUE, RESULT_REQUEUE_AFTER)


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """``count`` bucket bounds from ``start``, each ``factor`` times the previous one.

    Multiplies step by step like Prometheus' Go client, so the bounds are the very same floats and
    render as the same ``le`` strings (``9.999999999999999e-06`` included).
    """
    bounds: list[float] = []
    bound = start
    for _ in range(count):
        bounds.append(bound)
        bound *= factor
    return tuple(bounds)


RECONCILE_TIME_BUCKETS: Final = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    *(1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0),
    *(15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0),
)
"""controller_runtime_reconcile_time_seconds: 40 bounds, 5 ms … 60 s."""

REST_CLIENT_LATENCY_BUCKETS: Final = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
"""rest_client_request_duration_seconds."""


# --- controller ---------------------------------------------------------------------------------

reconcile_total: Final = LoopFamily(
    "controller_runtime_reconcile_total",
    "Reconciliations per controller and outcome (success, error, requeue, requeue_after).",
    ["controller", "result"],
    LoopCounter,
    registry=registry,
)
reconcile_errors_total: Final = LoopFamily(
    "controller_runtime_reconcile_errors_total",
    "Reconciliations per controller that returned an error, terminal ones included.",
    ["controller"],
    LoopCounter,
    registry=registry,
)
terminal_reconcile_errors_total: Final = LoopFamily(
    "controller_runtime_terminal_reconcile_errors_total",
    "Reconciliations per controller that returned a terminal (not retried) error.",
    ["controller"],
    LoopCounter,
    registry=registry,
)
reconcile_panics_total: Final = LoopFamily(
    "controller_runtime_reconcile_panics_total",
    "Reconciliations per controller that raised an unexpected exception.",
    ["controller"],
    LoopCounter,
    registry=registry,
)
reconcile_timeouts_total: Final = LoopFamily(
    "controller_runtime_reconcile_timeouts_total",
    "Reconciliations per controller cut short by the controller's reconciliation timeout.",
    ["controller"],
    LoopCounter,
    registry=registry,
)
reconcile_time_seconds: Final = LoopFamily(
    "controller_runtime_reconcile_time_seconds",
    "Seconds per reconciliation per controller, queue bookkeeping included.",
    ["controller"],
    LoopHistogram,
    buckets=RECONCILE_TIME_BUCKETS,
    registry=registry,
)
max_concurrent_reconciles: Final = LoopFamily(
    "controller_runtime_max_concurrent_reconciles",
    "Configured number of workers per controller.",
    ["controller"],
    LoopGauge,
    registry=registry,
)
active_workers: Final = LoopFamily(
    "controller_runtime_active_workers",
    "Workers per controller busy with a reconciliation right now.",
    ["controller"],
    LoopGauge,
    registry=registry,
)

# --- leader election ----------------------------------------------------------------------------

leader_election_master_status: Final = Gauge(
    "leader_election_master_status",
    "1 while this process holds the lease named by 'name', 0 otherwise. Group by name.",
    ["name"],
    registry=registry,
)

# --- REST client --------------------------------------------------------------------------------

rest_client_requests_total: Final = Counter(
    "rest_client_requests_total",
    "HTTP requests to the API server by status code, method and host.",
    ["code", "method", "host"],
    registry=registry,
)
rest_client_request_duration_seconds: Final = Histogram(
    "rest_client_request_duration_seconds",
    "Seconds per HTTP request to the API server, by verb and host.",
    ["verb", "host"],
    buckets=REST_CLIENT_LATENCY_BUCKETS,
    registry=registry,
)

# --- process ------------------------------------------------------------------------------------

ProcessCollector(registry=registry)
PlatformCollector(registry=registry)
GCCollector(registry=registry)


# --- cached children ----------------------------------------------------------------------------


class ControllerMetrics:
    """One controller's label children, looked up once; every series starts at zero.

    ``reconcile_time_seconds`` is created on its first observation, as in controller-runtime, so
    a controller that never reconciled exports no empty histogram.
    """

    __slots__ = (
        "_reconcile_time",
        "active_workers",
        "controller",
        "max_concurrent_reconciles",
        "reconcile_errors",
        "reconcile_panics",
        "reconcile_timeouts",
        "reconcile_total",
        "terminal_reconcile_errors",
    )

    def __init__(self, controller: str, max_concurrent: int | None) -> None:
        self.controller = controller
        # Touching a child creates its series at 0, which is all "initialise" means here.
        self.reconcile_total: dict[str, LoopCounter] = {
            result: reconcile_total.labels(controller, result) for result in RECONCILE_RESULTS
        }
        self.reconcile_errors: LoopCounter = reconcile_errors_total.labels(controller)
        self.terminal_reconcile_errors: LoopCounter = terminal_reconcile_errors_total.labels(controller)
        self.reconcile_panics: LoopCounter = reconcile_panics_total.labels(controller)
        self.reconcile_timeouts: LoopCounter = reconcile_timeouts_total.labels(controller)
        self.active_workers: LoopGauge = active_workers.labels(controller)
        self.active_workers.set(0)
        self.max_concurrent_reconciles: LoopGauge = max_concurrent_reconciles.labels(controller)
        if max_concurrent is not None:
            self.max_concurrent_reconciles.set(max_concurrent)
        self._reconcile_time: LoopHistogram | None = None

    def observe_reconcile_time(self, seconds: float) -> None:
        """Record one reconciliation's duration."""
        child = self._reconcile_time
        if child is None:
            child = self._reconcile_time = reconcile_time_seconds.labels(self.controller)
        child.observe(seconds)


def init_controller_metrics(controller: str, *, max_concurrent: int | None = None) -> ControllerMetrics:
    """Create ``controller``'s series at zero (all four results) and return its cached children.

    ``max_concurrent`` sets ``controller_runtime_max_concurrent_reconciles``; controller-runtime
    sets it when the controller starts, so a caller may leave it for later.
    """
    return ControllerMetrics(controller, max_concurrent)


def set_leader_status(lease_name: str, is_leader: bool) -> None:
    """Report whether this process holds the lease ``lease_name``."""
    leader_election_master_status.labels(lease_name).set(1.0 if is_leader else 0.0)
