"""MachineHealthCheck admission rules, one test per rule and message (pure functions, no server)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from api.controlplane import MHC_SCOPE_LABEL
from runtime.webhook import Denied
from webhooks.machinehealthcheck import (
    MachineHealthCheckValidator,
    validate_machinehealthcheck_create,
    validate_machinehealthcheck_update,
)

READY_FALSE = {"type": "Ready", "status": "False", "timeout": "300s"}


def mhc(**spec: Any) -> dict[str, Any]:
    """A valid MachineHealthCheck with ``spec`` overrides (None deletes a key)."""
    body: dict[str, Any] = {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineHealthCheck",
        "metadata": {"name": "masters", "namespace": "ns", "labels": {MHC_SCOPE_LABEL: "true"}},
        "spec": {
            "selector": {"matchLabels": {"machine.openshift.io/cluster-api-machine-role": "master"}},
            "unhealthyConditions": [dict(READY_FALSE)],
            "maxUnhealthy": 1,
            "nodeStartupTimeout": "25m",
        },
    }
    for key, value in spec.items():
        if value is None:
            body["spec"].pop(key, None)
        else:
            body["spec"][key] = value
    return body


def messages(obj: dict[str, Any]) -> list[str]:
    errors, _ = validate_machinehealthcheck_create(obj)
    return [str(e) for e in errors]


def test_a_valid_machinehealthcheck_passes_without_warnings() -> None:
    assert validate_machinehealthcheck_create(mhc()) == ([], [])
    assert messages(mhc(maxUnhealthy=None, nodeStartupTimeout=None)) == []


def test_selector_must_parse_and_empty_warns() -> None:
    bad = {"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}
    (message,) = messages(mhc(selector=bad))
    assert message.startswith("spec.selector: Invalid value: ") and "Near" in message
    errors, warnings = validate_machinehealthcheck_create(mhc(selector={}))
    assert errors == [] and warnings == [
        "spec.selector is empty: every Machine of the namespace is checked and may be remediated"
    ]


def test_at_least_one_unhealthy_condition() -> None:
    for empty in (None, []):
        (message,) = messages(mhc(unhealthyConditions=empty))
        assert message.startswith("spec.unhealthyConditions: Required value: at least one Node condition")


def test_unhealthy_condition_fields() -> None:
    assert messages(mhc(unhealthyConditions=[{"type": "Ready", "status": "Maybe", "timeout": "5x"}])) == [
        'spec.unhealthyConditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", '
        '"Unknown"',
        'spec.unhealthyConditions[0].timeout: Invalid value: "5x": must be a duration such as "300s" or "5m"',
    ]
    assert messages(mhc(unhealthyConditions=[READY_FALSE, {"status": "True"}])) == [
        "spec.unhealthyConditions[1].type: Required value: the Node condition type, e.g. Ready",
        "spec.unhealthyConditions[1].timeout: Required value: how long the condition must hold, e.g. 300s",
    ]


@pytest.mark.parametrize("value", ["0", "30s", "1h30m", "10m"])
def test_node_startup_timeout_accepts_durations_and_zero(value: str) -> None:
    assert messages(mhc(nodeStartupTimeout=value)) == []


def test_node_startup_timeout_must_parse() -> None:
    assert messages(mhc(nodeStartupTimeout="ten minutes")) == [
        'spec.nodeStartupTimeout: Invalid value: "ten minutes": must be a duration such as "300s" or "5m", '
        'or "0" to disable'
    ]


@pytest.mark.parametrize("value", [0, 2, "2", "0%", "40%", "100%"])
def test_max_unhealthy_valid(value: Any) -> None:
    assert messages(mhc(maxUnhealthy=value)) == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-2, "spec.maxUnhealthy: Invalid value: -2: must be 0 or more"),
        (
            "foo%50",
            'spec.maxUnhealthy: Invalid value: "foo%50": must be a count (e.g. 2) or a percentage from 0% '
            'to 100% (e.g. "40%")',
        ),
        ("150%", 'spec.maxUnhealthy: Invalid value: "150%": a percentage must be at most 100%'),
        (
            True,
            "spec.maxUnhealthy: Invalid value: true: must be a count (e.g. 2) or a percentage from 0% to "
            '100% (e.g. "40%")',
        ),
    ],
)
def test_max_unhealthy_invalid(value: Any, message: str) -> None:
    assert messages(mhc(maxUnhealthy=value)) == [message]


def test_remediation_template_reference() -> None:
    ok = {"apiVersion": "x.io/v1", "kind": "FooRemediationTemplate", "name": "t"}
    assert messages(mhc(remediationTemplate=ok)) == []
    assert messages(mhc(remediationTemplate={"kind": "FooRemediationTemplate"})) == [
        "spec.remediationTemplate.apiVersion: Required value",
        "spec.remediationTemplate.name: Required value",
    ]
    assert messages(mhc(remediationTemplate={**ok, "namespace": "other"})) == [
        'spec.remediationTemplate.namespace: Invalid value: "other": must be the MachineHealthCheck\'s '
        "namespace 'ns'"
    ]


def test_update_with_an_unchanged_spec_is_accepted_even_if_invalid() -> None:
    stored = mhc(maxUnhealthy="foo%50")
    relabelled = mhc(maxUnhealthy="foo%50")
    relabelled["metadata"]["labels"] = {"a": "b"}
    assert validate_machinehealthcheck_update(stored, relabelled) == ([], [])
    errors, _ = validate_machinehealthcheck_update(stored, mhc(maxUnhealthy="bar"))
    assert errors


class _Request:
    name = "masters"


def test_the_validator_denies_with_kube_invalid_message() -> None:
    validator = MachineHealthCheckValidator()
    with pytest.raises(Denied) as denied:
        asyncio.run(validator.validate_create(mhc(unhealthyConditions=[]), _Request()))
    assert denied.value.code == 422
    assert denied.value.message.startswith(
        'MachineHealthCheck.machine.openshift.io "masters" is invalid: '
        "spec.unhealthyConditions: Required value"
    )
    assert asyncio.run(validator.validate_create(mhc(selector={}), _Request())) == [
        "spec.selector is empty: every Machine of the namespace is checked and may be remediated"
    ]


def unlabelled(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "labels"}}


def test_a_machinehealthcheck_out_of_scope_is_accepted_unjudged() -> None:
    validator = MachineHealthCheckValidator()
    no_timeout = mhc(unhealthyConditions=[{"type": "Ready", "status": "False"}])
    with pytest.raises(Denied):
        asyncio.run(validator.validate_create(no_timeout, _Request()))
    worker = unlabelled(no_timeout)
    assert asyncio.run(validator.validate_create(worker, _Request())) == []
    assert asyncio.run(validator.validate_update(unlabelled(mhc()), worker, _Request())) == []
    # Taking the label off hands the check to someone else: the new form is no longer judged.
    assert asyncio.run(validator.validate_update(mhc(), worker, _Request())) == []
    # Putting it on with a new spec makes the operator responsible: the new form is judged.
    with pytest.raises(Denied):
        asyncio.run(validator.validate_update(unlabelled(mhc()), no_timeout, _Request()))
