"""The runtime's metrics carry controller-runtime's names, types, labels and buckets, and parse."""

from __future__ import annotations

import uuid

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from runtime import metrics

# Family name (as the parser reports it: counters without ``_total``) -> (type, label names).
EXPECTED_FAMILIES: dict[str, tuple[str, frozenset[str]]] = {
    "controller_runtime_reconcile": ("counter", frozenset({"controller", "result"})),
    "controller_runtime_reconcile_errors": ("counter", frozenset({"controller"})),
    "controller_runtime_terminal_reconcile_errors": ("counter", frozenset({"controller"})),
    "controller_runtime_reconcile_panics": ("counter", frozenset({"controller"})),
    "controller_runtime_reconcile_timeouts": ("counter", frozenset({"controller"})),
    "controller_runtime_reconcile_time_seconds": ("histogram", frozenset({"controller"})),
    "controller_runtime_max_concurrent_reconciles": ("gauge", frozenset({"controller"})),
    "controller_runtime_active_workers": ("gauge", frozenset({"controller"})),
    "workqueue_depth": ("gauge", frozenset({"name", "controller", "priority"})),
    "workqueue_adds": ("counter", frozenset({"name", "controller"})),
    "workqueue_queue_duration_seconds": ("histogram", frozenset({"name", "controller"})),
    "workqueue_work_duration_seconds": ("histogram", frozenset({"name", "controller"})),
    "workqueue_unfinished_work_seconds": ("gauge", frozenset({"name", "controller"})),
    "workqueue_longest_running_processor_seconds": ("gauge", frozenset({"name", "controller"})),
    "workqueue_retries": ("counter", frozenset({"name", "controller"})),
    "leader_election_master_status": ("gauge", frozenset({"name"})),
    "rest_client_requests": ("counter", frozenset({"code", "method", "host"})),
    "rest_client_request_duration_seconds": ("histogram", frozenset({"verb", "host"})),
    "controller_runtime_webhook_requests": ("counter", frozenset({"webhook", "code"})),
    "controller_runtime_webhook_latency_seconds": ("histogram", frozenset({"webhook"})),
    "controller_runtime_webhook_requests_in_flight": ("gauge", frozenset({"webhook"})),
    "controller_runtime_webhook_panics": ("counter", frozenset()),
}

WORKQUEUE_LE = [
    "1e-08",
    "1e-07",
    "1e-06",
    "9.999999999999999e-06",
    "9.999999999999999e-05",
    "0.001",
    "0.01",
    "0.1",
    "1.0",
    "10.0",
    "100.0",
    "1000.0",
    "+Inf",
]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def value(name: str, labels: dict[str, str] | None = None) -> float | None:
    return metrics.registry.get_sample_value(name, labels or {})


def bucket_bounds(samples: list[Sample], bucket_name: str, **labels: str) -> list[str]:
    return [
        s.labels["le"]
        for s in samples
        if s.name == bucket_name and all(s.labels.get(k) == v for k, v in labels.items())
    ]


def populate_every_family() -> dict[str, str]:
    names = {
        "controller": unique("ctrl"),
        "webhook": unique("/validate"),
        "lease": unique("lease"),
        "host": unique("host"),
    }
    controller = metrics.init_controller_metrics(names["controller"], max_concurrent=2)
    controller.observe_reconcile_time(0.2)
    queue = metrics.init_workqueue_metrics(names["controller"])
    queue.queue_duration.observe(0.5)
    metrics.init_webhook_metrics(names["webhook"])
    metrics.set_leader_status(names["lease"], True)
    metrics.rest_client_requests_total.labels("200", "GET", names["host"]).inc()
    metrics.rest_client_request_duration_seconds.labels("GET", names["host"]).observe(0.01)
    return names


def test_every_family_is_exposed_with_its_type_and_labels_and_parses() -> None:
    populate_every_family()
    text = metrics.generate_latest().decode()
    families = {family.name: family for family in text_string_to_metric_families(text)}
    for name, (kind, label_names) in EXPECTED_FAMILIES.items():
        assert name in families, f"{name} missing from the exposition"
        family = families[name]
        assert family.type == kind, name
        assert family.samples, f"{name} has no series"
        for sample in family.samples:
            assert set(sample.labels) - {"le"} == label_names, (name, sample)


def test_exposition_names_are_controller_runtimes() -> None:
    populate_every_family()
    text = metrics.generate_latest().decode()
    for line in (
        "# TYPE controller_runtime_reconcile_total counter",
        "# TYPE controller_runtime_reconcile_time_seconds histogram",
        "# TYPE workqueue_adds_total counter",
        "# TYPE workqueue_retries_total counter",
        "# TYPE rest_client_requests_total counter",
        "# TYPE controller_runtime_webhook_requests_total counter",
    ):
        assert line in text.splitlines()


def test_no_created_series_are_exposed() -> None:
    populate_every_family()
    text = metrics.generate_latest().decode()
    assert "_created" not in text


def test_process_and_python_metrics_are_exposed() -> None:
    families = {f.name for f in text_string_to_metric_families(metrics.generate_latest().decode())}
    assert {"process_cpu_seconds", "process_resident_memory_bytes", "process_open_fds"} <= families
    assert {"python_info", "python_gc_objects_collected"} <= families


def test_init_controller_metrics_starts_every_series_at_zero() -> None:
    name = unique("ctrl")
    controller = metrics.init_controller_metrics(name, max_concurrent=4)
    for result in ("success", "error", "requeue", "requeue_after"):
        assert value("controller_runtime_reconcile_total", {"controller": name, "result": result}) == 0.0
    for counter in (
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_terminal_reconcile_errors_total",
        "controller_runtime_reconcile_panics_total",
        "controller_runtime_reconcile_timeouts_total",
    ):
        assert value(counter, {"controller": name}) == 0.0, counter
    assert value("controller_runtime_active_workers", {"controller": name}) == 0.0
    assert value("controller_runtime_max_concurrent_reconciles", {"controller": name}) == 4.0
    # Like controller-runtime, no reconcile-time series until the first reconcile.
    assert value("controller_runtime_reconcile_time_seconds_count", {"controller": name}) is None

    controller.reconcile_total[metrics.RESULT_REQUEUE_AFTER].inc()
    controller.reconcile_errors.inc()
    controller.active_workers.inc()
    controller.observe_reconcile_time(0.3)
    controller.observe_reconcile_time(0.3)
    assert value("controller_runtime_reconcile_total", {"controller": name, "result": "requeue_after"}) == 1.0
    assert value("controller_runtime_reconcile_errors_total", {"controller": name}) == 1.0
    assert value("controller_runtime_active_workers", {"controller": name}) == 1.0
    assert value("controller_runtime_reconcile_time_seconds_count", {"controller": name}) == 2.0


def test_max_concurrent_reconciles_can_be_left_for_later() -> None:
    name = unique("ctrl")
    controller = metrics.init_controller_metrics(name)
    controller.max_concurrent_reconciles.set(7)
    assert value("controller_runtime_max_concurrent_reconciles", {"controller": name}) == 7.0


def test_histogram_buckets_match_controller_runtime() -> None:
    assert len(metrics.RECONCILE_TIME_BUCKETS) == 40
    assert metrics.RECONCILE_TIME_BUCKETS[:3] == (0.005, 0.01, 0.025)
    assert metrics.RECONCILE_TIME_BUCKETS[-3:] == (40.0, 50.0, 60.0)
    assert list(metrics.RECONCILE_TIME_BUCKETS) == sorted(set(metrics.RECONCILE_TIME_BUCKETS))
    assert len(metrics.WORKQUEUE_DURATION_BUCKETS) == 12
    assert metrics.REST_CLIENT_LATENCY_BUCKETS == (0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)

    names = populate_every_family()
    text = metrics.generate_latest().decode()
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
    controller = names["controller"]
    reconcile_le = bucket_bounds(
        samples, "controller_runtime_reconcile_time_seconds_bucket", controller=controller
    )
    assert len(reconcile_le) == 41 and reconcile_le[-1] == "+Inf"
    queue_le = bucket_bounds(samples, "workqueue_queue_duration_seconds_bucket", name=controller)
    assert queue_le == WORKQUEUE_LE
    work_le = bucket_bounds(samples, "workqueue_work_duration_seconds_bucket", name=controller)
    assert work_le == WORKQUEUE_LE
    webhook_le = bucket_bounds(
        samples, "controller_runtime_webhook_latency_seconds_bucket", webhook=names["webhook"]
    )
    assert webhook_le == WORKQUEUE_LE
    rest_le = bucket_bounds(samples, "rest_client_request_duration_seconds_bucket", host=names["host"])
    assert len(rest_le) == 13


def test_workqueue_series_use_the_name_in_both_labels_and_an_empty_priority() -> None:
    name = unique("ctrl")
    queue = metrics.init_workqueue_metrics(name)
    queue.depth.inc()
    assert value("workqueue_depth", {"name": name, "controller": name, "priority": ""}) == 1.0
    queue_name = unique("queue")
    metrics.init_workqueue_metrics(queue_name, controller=name).adds.inc()
    assert value("workqueue_adds_total", {"name": queue_name, "controller": name}) == 1.0


def test_webhook_metrics_start_200_and_500_at_zero_and_cache_other_codes() -> None:
    path = unique("/mutate")
    webhook = metrics.init_webhook_metrics(path)
    assert value("controller_runtime_webhook_requests_total", {"webhook": path, "code": "200"}) == 0.0
    assert value("controller_runtime_webhook_requests_total", {"webhook": path, "code": "500"}) == 0.0
    assert value("controller_runtime_webhook_requests_total", {"webhook": path, "code": "403"}) is None
    assert webhook.requests(403) is webhook.requests(403)
    webhook.requests(403).inc()
    webhook.requests(200).inc()
    webhook.latency.observe(0.002)
    assert value("controller_runtime_webhook_requests_total", {"webhook": path, "code": "403"}) == 1.0
    assert value("controller_runtime_webhook_requests_total", {"webhook": path, "code": "200"}) == 1.0
    assert value("controller_runtime_webhook_latency_seconds_count", {"webhook": path}) == 1.0


def test_leader_status_flips() -> None:
    lease = unique("lease")
    metrics.set_leader_status(lease, True)
    assert value("leader_election_master_status", {"name": lease}) == 1.0
    metrics.set_leader_status(lease, False)
    assert value("leader_election_master_status", {"name": lease}) == 0.0


def test_exponential_buckets_multiply_step_by_step_like_go() -> None:
    assert metrics.exponential_buckets(10e-9, 10, 12)[3] == 9.999999999999999e-06
    assert metrics.exponential_buckets(1, 2, 4) == (1, 2, 4, 8)
