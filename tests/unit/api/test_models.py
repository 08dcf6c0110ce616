"""The API models: wire names, defaults, and exact round trips of objects a real cluster writes."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from api import (
    ControlPlane,
    ControlPlaneMachineTemplate,
    ControlPlaneSpec,
    Machine,
    MachineHealthCheck,
    ObjectMeta,
)
from api.controlplane import DEFAULT_SELECTOR_LABELS, FailureDomain, Remediation, RollingUpdate, Strategy
from api.machine import LifecycleHook, LifecycleHooks
from api.meta import LabelSelector, parse_duration
from api.selector import selector_matches, selector_problems, selector_string

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "openshift"


def _fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


# ------------------------------------------------------------------------------ round trips


def test_openshift_machine_round_trips_exactly() -> None:
    raw = _fixture("machine-aws-master.json")
    machine = Machine.from_dict(copy.deepcopy(raw))
    assert machine.to_dict() == raw


def test_machine_fields_read_with_openshift_names() -> None:
    machine = Machine.from_dict(_fixture("machine-aws-master.json"))
    assert machine.spec.provider_id == "aws:///us-east-1a/i-0a1b2c3d4e5f67890"
    assert machine.spec.lifecycle_hooks is not None
    assert machine.spec.lifecycle_hooks.pre_drain == [
        LifecycleHook(name="EtcdQuorumOperator", owner="clusteroperator/etcd")
    ]
    assert machine.status is not None and machine.status.phase == "Running"
    assert (
        machine.status.node_ref is not None and machine.status.node_ref.name == "ip-10-0-141-12.ec2.internal"
    )
    assert [a.type for a in machine.status.addresses or []] == ["InternalIP", "InternalDNS", "Hostname"]
    assert machine.status.last_updated == datetime(2026, 3, 14, 9, 31, 55, tzinfo=UTC)
    assert machine.metadata.owner_references and machine.metadata.owner_references[0].controller is True
    value = machine.spec.provider_spec.value if machine.spec.provider_spec else None
    assert value is not None and value["metadata"] == {"creationTimestamp": None}


def test_unknown_fields_are_kept_where_a_cluster_may_write_them() -> None:
    raw = _fixture("machine-aws-master.json")
    machine = Machine.from_dict(raw)
    assert machine.spec.model_extra == {"authoritativeAPI": "MachineAPI"}
    assert machine.status is not None and machine.status.model_extra is not None
    assert machine.status.model_extra["xCpoUnknownFutureField"] == {"nested": [1, "two", {"three": None}]}
    assert machine.metadata.model_extra is not None and "managedFields" in machine.metadata.model_extra


def test_machine_changed_in_python_writes_only_the_change() -> None:
    raw = _fixture("machine-aws-master.json")
    machine = Machine.from_dict(raw)
    assert machine.spec.lifecycle_hooks is not None
    machine.spec.lifecycle_hooks.pre_drain = []
    out = machine.to_dict()
    assert out["spec"]["lifecycleHooks"] == {
        "preDrain": [],
        "preTerminate": [{"name": "example.com/BackupVolumes", "owner": "backup-operator"}],
    }
    out["spec"]["lifecycleHooks"]["preDrain"] = raw["spec"]["lifecycleHooks"]["preDrain"]
    assert out == raw


def test_openshift_machinehealthcheck_round_trips_exactly() -> None:
    raw = _fixture("machinehealthcheck-masters.json")
    mhc = MachineHealthCheck.from_dict(copy.deepcopy(raw))
    assert mhc.to_dict() == raw
    assert mhc.spec.max_unhealthy == 1 and mhc.spec.node_startup_timeout == "25m"
    assert [c.timeout for c in mhc.spec.unhealthy_conditions] == ["300s", "5m30s", "1.5h"]
    assert mhc.status is not None and mhc.status.remediations_allowed == 1


def test_max_unhealthy_is_int_or_string_and_keeps_its_type() -> None:
    raw = _fixture("machinehealthcheck-masters.json")
    for value in (0, 2, "40%", "100%"):
        raw["spec"]["maxUnhealthy"] = value
        dumped = MachineHealthCheck.from_dict(raw).to_dict()["spec"]["maxUnhealthy"]
        assert dumped == value and type(dumped) is type(value)
    raw["spec"]["maxUnhealthy"] = "101%"
    with pytest.raises(ValidationError, match="maxUnhealthy"):
        MachineHealthCheck.from_dict(raw)


def test_mhc_needs_at_least_one_unhealthy_condition() -> None:
    raw = _fixture("machinehealthcheck-masters.json")
    raw["spec"]["unhealthyConditions"] = []
    with pytest.raises(ValidationError, match="unhealthyConditions"):
        MachineHealthCheck.from_dict(raw)


def test_bad_lifecycle_hook_name_is_refused_with_the_field_named() -> None:
    with pytest.raises(ValidationError, match="name"):
        LifecycleHooks.from_dict({"preDrain": [{"name": "a b", "owner": "someone"}]})


# ----------------------------------------------------------------------------- ControlPlane


def _cp(**spec: Any) -> ControlPlane:
    return ControlPlane(
        metadata=ObjectMeta(name="cluster", namespace="ns"),
        spec=ControlPlaneSpec(template=ControlPlaneMachineTemplate.for_provider_spec({"a": 1}), **spec),
    )


def test_controlplane_defaults_read_in_python_but_stay_off_the_wire() -> None:
    cp = _cp()
    assert cp.spec.replicas == 1
    assert cp.spec.enable_autorepair is True and cp.spec.paused is False
    assert cp.spec.selector.match_labels == DEFAULT_SELECTOR_LABELS
    assert cp.spec.strategy == Strategy(type="RollingUpdate", rolling_update=RollingUpdate(max_surge=1))
    assert cp.to_dict() == {
        "apiVersion": "controlplane.cpo.dev/v1alpha1",
        "kind": "ControlPlane",
        "metadata": {"name": "cluster", "namespace": "ns"},
        "spec": {
            "template": {
                "metadata": {"labels": {"machine.openshift.io/cluster-api-machine-role": "master"}},
                "spec": {"providerSpec": {"value": {"a": 1}}},
            }
        },
    }


def test_controlplane_snake_case_in_python_camel_case_on_the_wire() -> None:
    cp = _cp(
        replicas=3,
        enable_autorepair=False,
        rollout_after=datetime(2026, 5, 1, 12, 0, tzinfo=UTC),
        strategy=Strategy(type="RollingUpdate", rolling_update=RollingUpdate(max_surge=0)),
        failure_domains=[FailureDomain(name="us-east-1a")],
        remediation=Remediation(max_retry=3, retry_period="10m"),
    )
    spec = cp.to_dict()["spec"]
    assert spec["replicas"] == 3 and spec["enableAutorepair"] is False
    assert spec["rolloutAfter"] == "2026-05-01T12:00:00Z"
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}}
    assert spec["failureDomains"] == [{"name": "us-east-1a"}]
    assert spec["remediation"] == {"maxRetry": 3, "retryPeriod": "10m"}
    again = ControlPlane.from_dict(cp.to_dict())
    assert again.to_dict() == cp.to_dict()
    # Either name constructs a model.
    assert (
        ControlPlaneSpec.model_validate(
            {"template": spec["template"], "enable_autorepair": False}
        ).enable_autorepair
        is False
    )


def test_controlplane_with_status_round_trips() -> None:
    raw = _cp(replicas=3).to_dict()
    raw["metadata"].update(
        {"uid": "u1", "resourceVersion": "7", "generation": 2, "creationTimestamp": "2026-01-02T03:04:05Z"}
    )
    raw["status"] = {
        "replicas": 3,
        "updatedReplicas": 2,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "unavailableReplicas": 0,
        "selector": "machine.openshift.io/cluster-api-machine-role=master",
        "observedGeneration": 2,
        "phase": "Updating",
        "conditions": [
            {
                "type": "EtcdClusterHealthy",
                "status": "True",
                "observedGeneration": 2,
                "lastTransitionTime": "2026-01-02T03:05:00Z",
                "reason": "MembersHealthy",
                "message": "3 voting members, no alarms",
            }
        ],
        "lastRemediation": {"machine": "m-1", "timestamp": "2026-01-02T03:06:00Z", "retryCount": 1},
    }
    assert ControlPlane.from_dict(raw).to_dict() == raw


def test_controlplane_refuses_values_the_schema_refuses() -> None:
    template = ControlPlaneMachineTemplate.for_provider_spec({})
    with pytest.raises(ValidationError, match="replicas"):
        ControlPlaneSpec(template=template, replicas=0)
    with pytest.raises(ValidationError, match=r"max_surge|maxSurge"):
        RollingUpdate(max_surge=2)
    with pytest.raises(ValidationError, match="type"):
        Strategy.model_validate({"type": "Recreate"})
    with pytest.raises(ValidationError, match="name"):
        FailureDomain(name="US_East")
    with pytest.raises(ValidationError, match="phase"):
        ControlPlane.from_dict({**_cp().to_dict(), "status": {"phase": "Sleeping"}})


def test_naive_datetimes_are_taken_as_utc_and_written_with_z() -> None:
    cp = _cp(rollout_after=datetime(2026, 5, 1, 12, 0))
    assert cp.spec.rollout_after is not None and cp.spec.rollout_after.tzinfo is UTC
    assert cp.to_dict()["spec"]["rolloutAfter"] == "2026-05-01T12:00:00Z"
    offset = ControlPlaneSpec.model_validate(
        {"template": {"spec": {"providerSpec": {}}}, "rolloutAfter": "2026-05-01T14:00:00+02:00"}
    )
    assert offset.to_dict()["rolloutAfter"] == "2026-05-01T12:00:00Z"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", timedelta(0)),
        ("300s", timedelta(seconds=300)),
        ("1.5h", timedelta(minutes=90)),
        ("2h45m", timedelta(hours=2, minutes=45)),
        ("250ms", timedelta(milliseconds=250)),
    ],
)
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "5", "1d", "h1", "1h 2m", "-1s"])
def test_parse_duration_refuses_with_the_accepted_form(text: str) -> None:
    with pytest.raises(ValueError, match="use decimal numbers with a unit"):
        parse_duration(text)


# --------------------------------------------------------------------------------- selectors


def test_selector_matching_and_string_form() -> None:
    sel = {
        "matchLabels": {"role": "master"},
        "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["b", "a"]},
            {"key": "tier", "operator": "NotIn", "values": ["x"]},
            {"key": "cluster", "operator": "Exists"},
            {"key": "legacy", "operator": "DoesNotExist"},
        ],
    }
    good = {"role": "master", "zone": "a", "cluster": "c1"}
    assert selector_matches(sel, good)
    assert not selector_matches(sel, {**good, "role": "worker"})
    assert not selector_matches(sel, {**good, "zone": "c"})
    assert not selector_matches(sel, {**good, "tier": "x"})
    assert not selector_matches(sel, {k: v for k, v in good.items() if k != "cluster"})
    assert not selector_matches(sel, {**good, "legacy": "1"})
    assert selector_string(sel) == "cluster,!legacy,role=master,tier notin (x),zone in (a,b)"
    assert selector_string(LabelSelector(match_labels={"b": "2", "a": "1"})) == "a=1,b=2"
    assert selector_matches({}, {"anything": "x"}) and selector_string({}) == ""


def test_malformed_selector_matches_nothing_and_says_why() -> None:
    bad = {
        "matchExpressions": [
            {"key": "zone", "operator": "In"},
            {"key": "k", "operator": "Near", "values": ["1"]},
        ]
    }
    assert not selector_matches(bad, {"zone": "a", "k": "1"})
    assert selector_problems(bad) == [
        "matchExpressions[0].values must be non-empty for operator In",
        "matchExpressions[1].operator 'Near' is not one of In, NotIn, Exists, DoesNotExist",
    ]


def test_expression_values_must_be_a_list_of_strings() -> None:
    bad = {"matchExpressions": [{"key": "zone", "operator": "In", "values": "abc"}]}
    assert selector_problems(bad) == ["matchExpressions[0].values must be a list of strings"]
    assert not selector_matches(bad, {"zone": "a"})
