"""The runtime's metrics registry and its Prometheus text exposition.

Everything registers into :data:`registry` (controller-runtime's ``metrics.Registry``), never into
prometheus_client's global default registry, so an embedding program keeps its own metrics apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

import prometheus_client
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

CONTROLLER_RUNTIME_VERSION: Final = "v0.23"
"""The controller-runtime release whose metric names, labels and buckets :mod:`runtime.metrics` mirrors."""

CONTENT_TYPE_LATEST: Final = prometheus_client.CONTENT_TYPE_LATEST
"""The ``Content-Type`` of :func:`generate_latest`'s output (Prometheus text format 0.0.4)."""

registry: Final = CollectorRegistry(auto_describe=True)
"""The runtime's registry; every metric of :mod:`runtime.metrics` and the process collectors live here."""


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
