"""The webhook server's metric families: controller-runtime's ``controller_runtime_webhook_*``.

Registered in the runtime's registry (:data:`runtime.metrics.registry`) with controller-runtime's
names, labels and buckets; the ``webhook`` label is the served path.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Gauge, Histogram

from ..metrics import exponential_buckets, registry

WEBHOOK_LATENCY_BUCKETS: Final = exponential_buckets(10e-9, 10, 12)
"""controller_runtime_webhook_latency_seconds since v0.23 (Prometheus' default buckets before)."""


webhook_requests_total: Final = Counter(
    "controller_runtime_webhook_requests_total",
    "Admission requests served per webhook path and HTTP status code.",
    ["webhook", "code"],
    registry=registry,
)
webhook_latency_seconds: Final = Histogram(
    "controller_runtime_webhook_latency_seconds",
    "Seconds to serve an admission request, per webhook path.",
    ["webhook"],
    buckets=WEBHOOK_LATENCY_BUCKETS,
    registry=registry,
)
webhook_requests_in_flight: Final = Gauge(
    "controller_runtime_webhook_requests_in_flight",
    "Admission requests being served right now, per webhook path.",
    ["webhook"],
    registry=registry,
)
webhook_panics_total: Final = Counter(
    "controller_runtime_webhook_panics_total",
    "Admission requests whose handler raised an unexpected exception.",
    registry=registry,
)


class WebhookMetrics:
    """One webhook path's label children; the 200 and 500 request counters start at zero."""

    __slots__ = ("_requests_by_code", "in_flight", "latency", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self.latency: Histogram = webhook_latency_seconds.labels(path)
        self.in_flight: Gauge = webhook_requests_in_flight.labels(path)
        self._requests_by_code: dict[int, Counter] = {
            code: webhook_requests_total.labels(path, str(code)) for code in (200, 500)
        }

    def requests(self, code: int) -> Counter:
        """The request counter for HTTP status ``code`` (cached after the first call)."""
        child = self._requests_by_code.get(code)
        if child is None:
            child = self._requests_by_code[code] = webhook_requests_total.labels(self.path, str(code))
        return child


def init_webhook_metrics(path: str) -> WebhookMetrics:
    """Create the series of the webhook served at ``path`` and return its cached children."""
    return WebhookMetrics(path)
