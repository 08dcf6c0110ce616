"""The alerts and dashboard under ``config/`` are valid PromQL, fire when documented, link their runbooks.

Checked with Prometheus's own ``promtool``: ``check rules`` parses every expression and template;
``test rules`` evaluates the alerts over the series in tests/testdata/prometheus/alerts_test.yaml,
and every dashboard query over the series of a healthy cluster (``SERIES``), which must leave none
empty. That every metric they name is exported by ``cpo run``, and that ``SERIES`` is labelled as
``cpo run`` labels its series, is checked against a running process in
tests/e2e/test_operator_in_cluster.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.monitoring import (
    ALERT_TESTS,
    SERIES,
    alert_rules,
    dashboard,
    dashboard_queries,
    metric_names,
    panel_titles,
    promtool,
    rule_file,
    runbook_anchors,
)

ALERTS = {
    "CPOEtcdQuorumAtRisk": "5m",
    "CPOEtcdPlannedVoterDipTooLong": "1m",
    "CPOEtcdHookWaitStuck": "30m",
    "CPOEtcdMemberWithoutMachine": "15m",
    "CPOControlPlaneNotAvailable": "15m",
    "CPOControlPlaneDegraded": "15m",
    "CPOControlPlanePreflightFailing": "15m",
    "CPOControlPlaneComponentsUnhealthy": "20m",
    "MachineHealthCheckUnterminatedShortCircuit": "30m",
    "CPOReconcileErrors": "15m",
    "CPONoLeader": "5m",
}


def run_promtool(*args: str, cwd: Path) -> str:
    done = subprocess.run([promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"promtool {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_promtool_accepts_every_alert_expression_and_annotation_template(tmp_path: Path) -> None:
    (tmp_path / "alerts.yaml").write_text(rule_file())
    out = run_promtool("check", "rules", "alerts.yaml", cwd=tmp_path)
    assert f"SUCCESS: {len(ALERTS)} rules found" in out, out


def test_each_alert_fires_when_documented_and_not_before(tmp_path: Path) -> None:
    """promtool feeds the series minute by minute and compares the firing alerts at each check."""
    (tmp_path / "alerts.rules.yaml").write_text(rule_file(annotations=False))
    shutil.copy(ALERT_TESTS, tmp_path / ALERT_TESTS.name)
    out = run_promtool("test", "rules", ALERT_TESTS.name, cwd=tmp_path)
    assert "SUCCESS" in out, out


def test_every_alert_has_a_case_where_it_fires_and_one_where_it_does_not() -> None:
    cases = yaml.safe_load(ALERT_TESTS.read_text())["tests"]
    fires, silent = set(), set()
    for case in cases:
        for check in case["alert_rule_test"]:
            (fires if check["exp_alerts"] else silent).add(check["alertname"])
    assert fires == silent == set(ALERTS)


def test_the_alerts_are_the_documented_ones_with_severity_summary_description_and_runbook() -> None:
    rules = alert_rules()
    assert {rule["alert"]: rule["for"] for rule in rules} == ALERTS
    anchors = runbook_anchors()
    for rule in rules:
        assert rule["labels"]["severity"] in ("warning", "critical"), rule
        annotations = rule["annotations"]
        assert annotations["summary"].strip() and annotations["description"].strip(), rule
        assert annotations["runbook_url"] == f"docs/runbooks.md#{rule['alert'].lower()}", rule
        assert rule["alert"].lower() in anchors, f"docs/runbooks.md has no section {rule['alert']}"


def test_machine_api_operator_short_circuit_alert_is_unchanged() -> None:
    """Same name, expression and duration as the machine-api-operator ships, so routing keeps working."""
    (rule,) = [r for r in alert_rules() if r["alert"] == "MachineHealthCheckUnterminatedShortCircuit"]
    assert rule["expr"].strip() == "mapi_machinehealthcheck_short_circuit == 1"
    assert rule["for"] == "30m" and rule["labels"] == {"severity": "warning"}


def test_promtool_accepts_every_dashboard_query(tmp_path: Path) -> None:
    """Each query, as Grafana sends it, becomes a recording rule: promtool parses it as PromQL."""
    queries = dashboard_queries()
    rules = [{"record": f"dashboard:query_{i}", "expr": expr} for i, expr in enumerate(queries.values())]
    (tmp_path / "dashboard.yaml").write_text(yaml.safe_dump({"groups": [{"name": "d", "rules": rules}]}))
    out = run_promtool("check", "rules", "dashboard.yaml", cwd=tmp_path)
    assert f"SUCCESS: {len(rules)} rules found" in out, out


def dashboard_rules(queries: dict[str, str]) -> list[dict[str, object]]:
    """Each query recorded, then an alert naming it that fires while the recorded result is empty."""
    rules: list[dict[str, object]] = []
    for i, (where, expr) in enumerate(queries.items()):
        rules.append({"record": f"dashboard:query_{i}", "expr": expr})
        rules.append(
            {
                "alert": "DashboardQueryEmpty",
                "expr": f"absent(dashboard:query_{i})",
                "labels": {"query": where},
            }
        )
    return rules


def test_every_dashboard_query_returns_data_from_the_operators_series(tmp_path: Path) -> None:
    """Evaluated by promtool over SERIES (a healthy cluster): no query comes back empty.

    A wrong metric name, label or matcher, a rate over a gauge's name, a quantile over a histogram
    without ``le``: each leaves its query empty and fires ``DashboardQueryEmpty`` naming the panel.
    The same queries over no series at all must all fire, or the check would prove nothing.
    """
    queries = dashboard_queries()
    rules = dashboard_rules(queries)
    (tmp_path / "dashboard.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]})
    )
    every = [{"exp_labels": {"query": where}} for where in queries]
    cases = {
        "rule_files": ["dashboard.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "name": "a healthy cluster's series",
                "interval": "1m",
                "input_series": [{"series": k, "values": v} for k, v in SERIES.items()],
                "alert_rule_test": [
                    {"eval_time": "10m", "alertname": "DashboardQueryEmpty", "exp_alerts": []}
                ],
            },
            {
                "name": "no series",
                "interval": "1m",
                "input_series": [{"series": 'up{job="other"}', "values": "1x30"}],
                "alert_rule_test": [
                    {"eval_time": "10m", "alertname": "DashboardQueryEmpty", "exp_alerts": every}
                ],
            },
        ],
    }
    (tmp_path / "dashboard_test.yaml").write_text(yaml.safe_dump(cases))
    out = run_promtool("test", "rules", "dashboard_test.yaml", cwd=tmp_path)
    assert "SUCCESS" in out, out


def test_dashboard_has_the_panels_an_sre_opens_first() -> None:
    titles = set(panel_titles())
    for title in (
        "etcd voters and learners",
        "etcd healthy voters and quorum margin",
        "Machines by state",
        "Operations",
        "Preflight failures",
        "MachineHealthCheck short-circuit",
        "Reconciles by result",
        "Reconcile errors",
        "Reconcile latency",
        "Workqueue depth",
        "Webhook latency",
    ):
        assert title in titles, (title, sorted(titles))
    board = dashboard()
    for panel in board["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
            assert panel.get("description"), panel["title"]
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))


def test_dashboard_queries_use_every_panel_metric_family() -> None:
    """Every domain family has a panel: an SRE never has to write a query for one."""
    used = set().union(*(metric_names(q) for q in dashboard_queries().values()))
    for family in (
        "cpo_etcd_members",
        "cpo_etcd_healthy_voters",
        "cpo_etcd_quorum_margin",
        "cpo_etcd_hook_waits",
        "cpo_etcd_learner_promotions_total",
        "cpo_etcd_member_removals_total",
        "cpo_controlplane_replicas",
        "cpo_controlplane_operations_total",
        "cpo_controlplane_preflight_failures_total",
        "mapi_machinehealthcheck_short_circuit",
        "mapi_machinehealthcheck_nodes_covered",
        "mapi_machinehealthcheck_remediation_success_total",
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds_bucket",
        "workqueue_depth",
        "leader_election_master_status",
        "controller_runtime_webhook_latency_seconds_bucket",
    ):
        assert family in used, family


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("up", {"up"}),
        ('sum by (controller, le) (rate(a_bucket{x="y", le!="+Inf"}[5m]))', {"a_bucket"}),
        ("histogram_quantile(0.99, sum(rate(b_bucket[1m])) by (le))", {"b_bucket"}),
        ('max(c) < 1 or absent(c{name="n"})', {"c"}),
        ("a / on (x) group_left (y) b > bool 1e3", {"a", "b"}),
        ('label_replace(d, "dst", "$1", "src", "(.*)") offset 5m', {"d"}),
        ('min by (cp) (e) <= 0 and on (cp) max without (state) (f{state="desired"}) > 1', {"e", "f"}),
        ("sum(rate(g[5m:1m]))", {"g"}),
    ],
)
def test_metric_names_finds_every_selected_metric_and_nothing_else(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_runbook_anchors_follow_the_headings() -> None:
    anchors = runbook_anchors()
    assert anchors, "docs/runbooks.md has no headings"
    assert all(re.fullmatch(r"[a-z0-9_\-]+", anchor) for anchor in anchors), anchors
