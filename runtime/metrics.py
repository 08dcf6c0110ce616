"""Prometheus metrics of the runtime, with controller-runtime's names, types, labels and buckets.

Dashboards and alerts written for Go operators should work unchanged against ours, so every family
here mirrors **controller-runtime v0.23** (client-go v0.35 for the workqueue semantics): the same
metric name, type, label names and histogram buckets. Help texts are our own wording.

Everything registers into one :data:`registry` (controller-runtime's ``metrics.Registry``), never
into prometheus_client's global default registry, so an embedding program keeps its own metrics
apart. Render it with :func:`generate_latest`; serve it with :data:`CONTENT_TYPE_LATEST`.

Families
--------
The controller, leader-election, REST-client and process families are defined here; the work
queue, webhook and cert-watcher families beside their code (:mod:`runtime.workqueue.metrics`,
:mod:`runtime.webhook.metrics`, :mod:`runtime.certwatcher`), registered in the same registry
when that code is imported, and their names are also served by this module.

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
"""

from __future__ import annotations

import importlib
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

import prometheus_client
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

CONTROLLER_RUNTIME_VERSION: Final = "v0.23"
"""The controller-runtime release whose metric names, labels and buckets this module mirrors."""

CONTENT_TYPE_LATEST: Final = prometheus_client.CONTENT_TYPE_LATEST
"""The ``Content-Type`` of :func:`generate_latest`'s output (Prometheus text format 0.0.4)."""

registry: Final = CollectorRegistry(auto_describe=True)
"""The runtime's registry; every metric of this module and the process collectors live here."""

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

# --- event-loop metrics -------------------------------------------------------------------------
#
# The controller and workqueue families change several times per watch event. prometheus_client
# takes a lock and runs two checks per update, which added up to a large share of the runtime's
# CPU per event. Those families are only ever updated from the event loop's thread, so they keep plain
# floats instead and build their samples when scraped.


class LoopCounter:
    """A counter series updated from the event loop's thread only: a plain float, no lock."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        """Add ``amount`` (not negative)."""
        if amount < 0:
            raise ValueError(f"a counter only goes up; inc({amount}) is negative")
        self.value += amount


class LoopGauge:
    """A gauge series updated from the event loop's thread only."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount

    def dec(self, amount: float = 1.0) -> None:
        self.value -= amount

    def set(self, value: float) -> None:
        self.value = float(value)


class LoopHistogram:
    """A histogram series updated from the event loop's thread only (``le`` bounds inclusive)."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...] = ()) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # per bucket, not cumulative; the last is +Inf
        self.sum = 0.0

    def observe(self, amount: float) -> None:
        self.counts[bisect_left(self.bounds, amount)] += 1
        self.sum += amount


_go_float: Callable[[float], str] = floatToGoString  # how prometheus_client renders ``le``

_S = TypeVar("_S", LoopCounter, LoopGauge, LoopHistogram)


class LoopFamily(Collector, Generic[_S]):
    """A metric family of :class:`LoopCounter`, :class:`LoopGauge` or :class:`LoopHistogram` series.

    ``labels(*values)`` returns the series of those label values, created at zero on first use, as
    prometheus_client's ``labels`` does; the family renders them in the registry's exposition.
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        kind: type[_S],
        *,
        buckets: tuple[float, ...] = (),
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.kind: type[_S] = kind
        self.buckets = buckets
        self._le = [_go_float(bound) for bound in buckets] + ["+Inf"]
        self._series: dict[tuple[str, ...], _S] = {}
        if registry is not None:
            registry.register(self)

    def labels(self, *values: str) -> _S:
        """The series of ``values`` (one per label name, in order)."""
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, got {values!r}")
        key = tuple(str(value) for value in values)
        series = self._series.get(key)
        if series is None:
            made: Any = LoopHistogram(self.buckets) if self.kind is LoopHistogram else self.kind()
            series = self._series[key] = made
        return series

    def collect(self) -> Iterable[Metric]:
        labels = self.labelnames
        family: Metric
        if self.kind is LoopHistogram:
            histograms = HistogramMetricFamily(self.name, self.documentation, labels=labels)
            for key, series in list(self._series.items()):
                assert isinstance(series, LoopHistogram)
                cumulative = [float(count) for count in accumulate(series.counts)]
                histograms.add_metric(key, list(zip(self._le, cumulative, strict=True)), series.sum)
            family = histograms
        else:
            values = CounterMetricFamily if self.kind is LoopCounter else GaugeMetricFamily
            plain = values(self.name, self.documentation, labels=labels)
            for key, series in list(self._series.items()):
                assert not isinstance(series, LoopHistogram)
                plain.add_metric(key, series.value)
            family = plain
        yield family


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


# --- exposition ---------------------------------------------------------------------------------


class _WithoutCreatedSeries:
    """A view of a registry without prometheus_client's ``*_created`` samples.

    The Go client has no such series, so dropping them keeps our text output line-for-line
    comparable with a Go operator's and halves the series count of every counter and histogram.
    Done per scrape rather than through ``disable_created_metrics()``, which is process-global.
    """

    _TYPES_WITH_CREATED = frozenset({"counter", "histogram", "summary", "gaugehistogram"})

    def __init__(self, source: Collector) -> None:
        self._source = source

    def collect(self) -> Iterable[Metric]:
        return self._filtered(self._source.collect())

    def _filtered(self, families: Iterable[Metric]) -> Iterator[Metric]:
        for family in families:
            if family.type in self._TYPES_WITH_CREATED:
                created = family.name + "_created"
                family.samples = [sample for sample in family.samples if sample.name != created]
            yield family


def generate_latest(source: Collector = registry) -> bytes:
    """Render ``source`` (default: the runtime :data:`registry`) in the Prometheus text format."""
    return prometheus_client.generate_latest(_WithoutCreatedSeries(source))


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
    from .certwatcher import (
        certwatcher_read_certificate_errors_total as certwatcher_read_certificate_errors_total,
    )
    from .certwatcher import certwatcher_read_certificate_total as certwatcher_read_certificate_total
    from .webhook.metrics import WEBHOOK_LATENCY_BUCKETS as WEBHOOK_LATENCY_BUCKETS
    from .webhook.metrics import WebhookMetrics as WebhookMetrics
    from .webhook.metrics import init_webhook_metrics as init_webhook_metrics
    from .webhook.metrics import webhook_latency_seconds as webhook_latency_seconds
    from .webhook.metrics import webhook_panics_total as webhook_panics_total
    from .webhook.metrics import webhook_requests_in_flight as webhook_requests_in_flight
    from .webhook.metrics import webhook_requests_total as webhook_requests_total
    from .workqueue.metrics import WORKQUEUE_DURATION_BUCKETS as WORKQUEUE_DURATION_BUCKETS
    from .workqueue.metrics import WorkqueueMetrics as WorkqueueMetrics
    from .workqueue.metrics import init_workqueue_metrics as init_workqueue_metrics
    from .workqueue.metrics import workqueue_adds_total as workqueue_adds_total
    from .workqueue.metrics import workqueue_depth as workqueue_depth
    from .workqueue.metrics import (
        workqueue_longest_running_processor_seconds as workqueue_longest_running_processor_seconds,
    )
    from .workqueue.metrics import workqueue_queue_duration_seconds as workqueue_queue_duration_seconds
    from .workqueue.metrics import workqueue_retries_total as workqueue_retries_total
    from .workqueue.metrics import workqueue_unfinished_work_seconds as workqueue_unfinished_work_seconds
    from .workqueue.metrics import workqueue_work_duration_seconds as workqueue_work_duration_seconds
