"""The work queue's metric families: controller-runtime's ``workqueue_*``, in the runtime's registry.

Every queue with a name exports them, with both the ``name`` and ``controller`` labels set to the
controller's name; they are lock-free event-loop series (:class:`runtime.metrics.loop.LoopFamily`),
since a queue updates them several times per item.
"""

from __future__ import annotations

from typing import Final

from ..metrics import LoopCounter, LoopFamily, LoopGauge, LoopHistogram, exponential_buckets, registry

WORKQUEUE_DURATION_BUCKETS: Final = exponential_buckets(10e-9, 10, 12)
"""workqueue_{queue,work}_duration_seconds: 12 bounds, 10 ns … 1000 s."""


workqueue_depth: Final = LoopFamily(
    "workqueue_depth",
    "Items waiting in the workqueue, per queue and priority.",
    ["name", "controller", "priority"],
    LoopGauge,
    registry=registry,
)
workqueue_adds_total: Final = LoopFamily(
    "workqueue_adds_total",
    "Adds the workqueue accepted (an add of an item already waiting is not counted).",
    ["name", "controller"],
    LoopCounter,
    registry=registry,
)
workqueue_queue_duration_seconds: Final = LoopFamily(
    "workqueue_queue_duration_seconds",
    "Seconds an item waited in the workqueue, from its first add until a worker took it.",
    ["name", "controller"],
    LoopHistogram,
    buckets=WORKQUEUE_DURATION_BUCKETS,
    registry=registry,
)
workqueue_work_duration_seconds: Final = LoopFamily(
    "workqueue_work_duration_seconds",
    "Seconds a worker spent on an item, from taking it until marking it done.",
    ["name", "controller"],
    LoopHistogram,
    buckets=WORKQUEUE_DURATION_BUCKETS,
    registry=registry,
)
workqueue_unfinished_work_seconds: Final = LoopFamily(
    "workqueue_unfinished_work_seconds",
    "Summed age of the items workers hold and have not finished; steady growth means stuck workers.",
    ["name", "controller"],
    LoopGauge,
    registry=registry,
)
workqueue_longest_running_processor_seconds: Final = LoopFamily(
    "workqueue_longest_running_processor_seconds",
    "Age of the oldest item a worker holds and has not finished.",
    ["name", "controller"],
    LoopGauge,
    registry=registry,
)
workqueue_retries_total: Final = LoopFamily(
    "workqueue_retries_total",
    "Delayed and rate-limited adds the workqueue received.",
    ["name", "controller"],
    LoopCounter,
    registry=registry,
)


class WorkqueueMetrics:
    """One workqueue's label children, looked up once."""

    __slots__ = (
        "adds",
        "depth",
        "longest_running_processor_seconds",
        "queue_duration",
        "retries",
        "unfinished_work_seconds",
        "work_duration",
    )

    def __init__(self, name: str, controller: str) -> None:
        self.depth: LoopGauge = workqueue_depth.labels(name, controller, "")
        self.adds: LoopCounter = workqueue_adds_total.labels(name, controller)
        self.queue_duration: LoopHistogram = workqueue_queue_duration_seconds.labels(name, controller)
        self.work_duration: LoopHistogram = workqueue_work_duration_seconds.labels(name, controller)
        self.unfinished_work_seconds: LoopGauge = workqueue_unfinished_work_seconds.labels(name, controller)
        self.longest_running_processor_seconds: LoopGauge = (
            workqueue_longest_running_processor_seconds.labels(name, controller)
        )
        self.retries: LoopCounter = workqueue_retries_total.labels(name, controller)


def init_workqueue_metrics(name: str, controller: str | None = None) -> WorkqueueMetrics:
    """Create the series of the workqueue ``name`` and return its cached children.

    ``controller`` defaults to ``name``: controller-runtime names a controller's queue after the
    controller and puts that one string in both labels.
    """
    return WorkqueueMetrics(name, name if controller is None else controller)
