"""Metric series for the event loop's thread only: plain floats, no lock, rendered when scraped.

The controller and workqueue families change several times per watch event. prometheus_client
takes a lock and runs two checks per update, which added up to a large share of the runtime's
CPU per event. Those families are only ever updated from the event loop's thread, so they keep
plain floats instead (:class:`LoopCounter`, :class:`LoopGauge`, :class:`LoopHistogram`) and a
:class:`LoopFamily` builds their samples, in prometheus_client's exposition, when scraped.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate
from typing import Any, Generic, TypeVar

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


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
