"""The alerts and dashboard under ``config/``, read for tests: their PromQL, and the metric names in it.

``config/prometheus/alerts.yaml`` is a PrometheusRule: :func:`alert_rules` returns its groups in
the plain rule-file form ``promtool`` reads. ``config/grafana/controlplane-operator.json`` is a
Grafana dashboard: :func:`dashboard_queries` returns every panel query and template-variable
query with Grafana's variables replaced by what Grafana would put there, so that the result is
PromQL ``promtool`` can check. :func:`metric_names` lists the metric names one expression selects.
:func:`promtool` finds the ``promtool`` binary (Debian's ``prometheus`` package; ``.ci/run`` installs
it) and fails the calling test when it is missing: these checks never skip.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "config" / "prometheus" / "alerts.yaml"
DASHBOARD = ROOT / "config" / "grafana" / "controlplane-operator.json"
ALERT_TESTS = ROOT / "tests" / "testdata" / "prometheus" / "alerts_test.yaml"
RUNBOOKS = ROOT / "docs" / "runbooks.md"

# What Grafana substitutes for its variables before sending a query (the ControlPlane selector's
# "All" value is its allValue, ".*").
GRAFANA_VARIABLES = {
    "$__rate_interval": "5m",
    "$__interval": "1m",
    "$__range": "1h",
    "$controlplane": ".*",
}

_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless"}
    | {"offset", "atan2", "inf", "nan"}
)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"(?<![\w.:])[A-Za-z_:][A-Za-z0-9_:]*")


def promtool() -> str:
    """The path of ``promtool``; fails the test (never skips) when it is not installed."""
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool is not installed: `apt-get install prometheus` (.ci/run installs it)")
    return found


def prometheus_rule() -> dict[str, Any]:
    rule: dict[str, Any] = yaml.safe_load(ALERTS.read_text())
    return rule


def alert_rules() -> list[dict[str, Any]]:
    """Every alerting rule of the PrometheusRule, in file order."""
    return [rule for group in prometheus_rule()["spec"]["groups"] for rule in group["rules"]]


def rule_file(*, annotations: bool = True) -> str:
    """The PrometheusRule's groups as a Prometheus rule file (``groups:``), for ``promtool``."""
    groups = prometheus_rule()["spec"]["groups"]
    if not annotations:
        groups = [
            {**group, "rules": [{k: v for k, v in r.items() if k != "annotations"} for r in group["rules"]]}
            for group in groups
        ]
    return yaml.safe_dump({"groups": groups}, sort_keys=False)


def dashboard() -> dict[str, Any]:
    board: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return board


def _panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for panel in board["panels"]:
        found.append(panel)
        found.extend(panel.get("panels", ()))  # the panels of a collapsed row
    return found


def substitute(query: str) -> str:
    """``query`` with the dashboard's variables replaced by values Grafana would send."""
    for name, value in sorted(GRAFANA_VARIABLES.items(), key=lambda item: -len(item[0])):
        query = query.replace(name, value)
    if "$" in query.replace("$1", ""):
        raise AssertionError(f"a dashboard variable without a substitute: {query}")
    return query


def dashboard_queries() -> dict[str, str]:
    """``{where: PromQL}`` for every panel target and every query variable of the dashboard.

    A variable's ``label_values(<selector>, <label>)`` contributes its selector.
    """
    board = dashboard()
    queries = {}
    for panel in _panels(board):
        for target in panel.get("targets", ()):
            queries[f"panel {panel['title']!r} target {target['refId']}"] = substitute(target["expr"])
    for variable in board.get("templating", {}).get("list", ()):
        if variable.get("type") != "query":
            continue
        query = variable["query"]
        text = query["query"] if isinstance(query, dict) else query
        found = re.fullmatch(r"\s*label_values\((.+),\s*\w+\s*\)\s*", text)
        queries[f"variable {variable['name']!r}"] = substitute(found.group(1) if found else text)
    return queries


def panel_titles() -> list[str]:
    return [panel["title"] for panel in _panels(dashboard()) if panel.get("type") != "row"]


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` selects: identifiers that are not functions, keywords or labels.

    PromQL (already accepted by promtool) names a metric only as a bare identifier outside label
    matchers ``{...}``, grouping lists ``by (...)``, strings and ranges ``[...]``; functions and
    aggregations are identifiers followed by ``(`` once a grouping clause is taken out.
    """
    text = _STRING.sub('""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = _GROUPING.sub(" ", text)
    names = set()
    for found in _IDENTIFIER.finditer(text):
        word = found.group()
        if word.lower() in _KEYWORDS or text[found.end() :].lstrip().startswith("("):
            continue
        names.add(word)
    return names


def used_metric_names() -> dict[str, set[str]]:
    """``{metric name: where it is used}`` over every alert expression and dashboard query."""
    used: dict[str, set[str]] = {}
    expressions = {f"alert {rule['alert']}": rule["expr"] for rule in alert_rules()}
    expressions.update(dashboard_queries())
    for where, expr in expressions.items():
        for name in metric_names(expr):
            used.setdefault(name, set()).add(where)
    return used


def runbook_anchors() -> set[str]:
    """The anchors of docs/runbooks.md's sections (GitHub's: the heading, lower case, dashes)."""
    anchors = set()
    for line in RUNBOOKS.read_text().splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", heading).replace(" ", "-"))
    return anchors


TARGET_LABELS = frozenset({"pod"})
"""Labels of :data:`SERIES` that Prometheus adds from the scrape target, not ``cpo run``."""

_VALIDATE = "/validate-controlplane-cpo-dev-v1alpha1-controlplane"
_COUNTER = "0+1x30"
_BUCKETS = {"0.01": "0+2x30", "0.1": "0+6x30", "1": "0+9x30", "+Inf": "0+10x30"}


def _histogram(name: str, labels: str) -> dict[str, str]:
    return {f'{name}_bucket{{{labels},le="{le}"}}': values for le, values in _BUCKETS.items()}


SERIES: dict[str, str] = {
    # etcd-quorum-hook controller (label sets as its families are specified)
    'cpo_etcd_members{controlplane="cp",role="voter"}': "3x30",
    'cpo_etcd_members{controlplane="cp",role="learner"}': "1x30",
    'cpo_etcd_healthy_voters{controlplane="cp"}': "3x30",
    'cpo_etcd_quorum_margin{controlplane="cp"}': "1x30",
    'cpo_etcd_hook_waits{controlplane="cp",reason="WaitingForReplacement"}': "1x30",
    'cpo_etcd_learner_promotions_total{controlplane="cp"}': _COUNTER,
    'cpo_etcd_member_removals_total{controlplane="cp"}': _COUNTER,
    # ControlPlane controller
    **{
        f'cpo_controlplane_replicas{{controlplane="cp",state="{state}"}}': "3x30"
        for state in ("desired", "current", "updated", "ready", "available")
    },
    'cpo_controlplane_operations_total{controlplane="cp",operation="create"}': _COUNTER,
    'cpo_controlplane_preflight_failures_total{controlplane="cp",check="EtcdHealthy"}': _COUNTER,
    # MachineHealthCheck controller
    'mapi_machinehealthcheck_short_circuit{name="cp-mhc",namespace="ns"}': "0x30",
    'mapi_machinehealthcheck_nodes_covered{name="cp-mhc",namespace="ns"}': "3x30",
    'mapi_machinehealthcheck_remediation_success_total{name="cp-mhc",namespace="ns"}': _COUNTER,
    # the runtime
    'controller_runtime_reconcile_total{controller="controlplane",result="success"}': "0+10x30",
    'controller_runtime_reconcile_errors_total{controller="controlplane"}': _COUNTER,
    'controller_runtime_reconcile_panics_total{controller="controlplane"}': "0x30",
    **_histogram("controller_runtime_reconcile_time_seconds", 'controller="controlplane"'),
    'workqueue_depth{name="controlplane",controller="controlplane",priority=""}': "2x30",
    **_histogram("workqueue_queue_duration_seconds", 'name="controlplane",controller="controlplane"'),
    'leader_election_master_status{name="controlplane-operator.cpo.dev",pod="cpo-a"}': "1x30",
    'leader_election_master_status{name="controlplane-operator.cpo.dev",pod="cpo-b"}': "0x30",
    **_histogram("controller_runtime_webhook_latency_seconds", f'webhook="{_VALIDATE}"'),
    f'controller_runtime_webhook_requests_total{{webhook="{_VALIDATE}",code="200"}}': _COUNTER,
}
"""A small healthy cluster's series, minute by minute, under every name the dashboard queries.

Fed to ``promtool test rules`` to show each query returns data (a wrong name, label or matcher
returns none); their label names are checked against what ``cpo run`` exports in
tests/e2e/test_operator_in_cluster.py."""


def series_labels() -> dict[str, set[frozenset[str]]]:
    """``{metric name: the label-name sets}`` of :data:`SERIES`, target labels left out."""
    found: dict[str, set[frozenset[str]]] = {}
    for series in SERIES:
        name, _, rest = series.partition("{")
        labels = frozenset(re.findall(r'(\w+)="', rest)) - {"le"} - TARGET_LABELS
        found.setdefault(name, set()).add(labels)
    return found
