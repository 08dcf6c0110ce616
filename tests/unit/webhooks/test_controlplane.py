"""ControlPlane admission rules, one test per rule and message (pure functions, no server)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhooks.controlplane import (
    default_controlplane,
    scale_needs_controlplane,
    validate_controlplane_create,
    validate_controlplane_scale,
    validate_controlplane_update,
)
from webhooks.field import aggregate, duplicate, forbidden, invalid, invalid_message, not_supported, required

MASTER = {"machine.openshift.io/cluster-api-machine-role": "master"}
ODD = "must be an odd number (1, 3, 5, 7) for a stacked etcd control plane"


def cp(**spec: Any) -> dict[str, Any]:
    """A defaulted, valid ControlPlane with ``spec`` overrides (None deletes a key)."""
    body: dict[str, Any] = {
        "apiVersion": "controlplane.cpo.dev/v1alpha1",
        "kind": "ControlPlane",
        "metadata": {"name": "cluster", "namespace": "ns"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": dict(MASTER)},
            "template": {"metadata": {"labels": dict(MASTER)}, "spec": {"providerSpec": {"value": {}}}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "enableAutorepair": True,
        },
    }
    for key, value in spec.items():
        if value is None:
            body["spec"].pop(key, None)
        else:
            body["spec"][key] = value
    return body


def messages(obj: dict[str, Any]) -> list[str]:
    errors, _ = validate_controlplane_create(obj)
    return [str(e) for e in errors]


def scale(replicas: int | None) -> dict[str, Any]:
    spec = {} if replicas is None else {"replicas": replicas}
    return {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "cluster"}, "spec": spec}


# ---------------------------------------------------------------------------------- field errors


def test_field_error_forms_match_kube() -> None:
    assert str(invalid("spec.replicas", 4, "must be odd")) == "spec.replicas: Invalid value: 4: must be odd"
    assert str(invalid("a", "x", "d")) == 'a: Invalid value: "x": d'
    assert str(invalid("a", True, "d")) == "a: Invalid value: true: d"
    assert str(invalid("a", None, "d")) == "a: Invalid value: null: d"
    assert str(invalid("a", {"k": "v"}, "d")) == 'a: Invalid value: {"k":"v"}: d'
    assert str(required("spec.template")) == "spec.template: Required value"
    assert str(duplicate("f[1].name", "a")) == 'f[1].name: Duplicate value: "a"'
    assert str(not_supported("t", "X", ["A", "B"])) == 't: Unsupported value: "X": supported values: "A", "B"'
    assert str(forbidden("spec.x", "may not be set")) == "spec.x: Forbidden: may not be set"


def test_aggregate_joins_like_kube() -> None:
    a, b = invalid("a", 1, "x"), required("b")
    assert aggregate([a]) == "a: Invalid value: 1: x"
    assert aggregate([a, b, a]) == "[a: Invalid value: 1: x, b: Required value]"
    assert invalid_message("ControlPlane.controlplane.cpo.dev", "c", [a]) == (
        'ControlPlane.controlplane.cpo.dev "c" is invalid: a: Invalid value: 1: x'
    )


# ---------------------------------------------------------------------------------- replicas


@pytest.mark.parametrize("replicas", [1, 3, 5, 7])
def test_odd_replicas_are_valid(replicas: int) -> None:
    assert validate_controlplane_create(cp(replicas=replicas)) == ([], [])


@pytest.mark.parametrize("replicas", [2, 4, 6, 8])
def test_even_replicas_are_refused_for_stacked_etcd(replicas: int) -> None:
    assert messages(cp(replicas=replicas)) == [f"spec.replicas: Invalid value: {replicas}: {ODD}"]


def test_issue_example_message_exactly() -> None:
    assert messages(cp(replicas=4)) == [
        "spec.replicas: Invalid value: 4: must be an odd number (1, 3, 5, 7) for a stacked etcd control plane"
    ]


@pytest.mark.parametrize("replicas", [0, -1, -2])
def test_replicas_below_one_are_refused(replicas: int) -> None:
    assert messages(cp(replicas=replicas)) == [
        f"spec.replicas: Invalid value: {replicas}: must be at least 1 and odd (1, 3, 5, 7) for a stacked "
        "etcd control plane"
    ]
    assert messages(cp(replicas=replicas, etcd={"external": True})) == [
        f"spec.replicas: Invalid value: {replicas}: must be at least 1"
    ]


@pytest.mark.parametrize("replicas", [1, 2, 3, 4, 8])
def test_external_etcd_allows_any_positive_count(replicas: int) -> None:
    assert validate_controlplane_create(cp(replicas=replicas, etcd={"external": True})) == ([], [])


@pytest.mark.parametrize("value", ["3", 3.0, True, None])
def test_non_integer_replicas_are_refused(value: Any) -> None:
    body = cp()
    body["spec"]["replicas"] = value
    if value is None:
        assert messages(body) == ["spec.replicas: Invalid value: null: must be an integer"]
    else:
        assert messages(body)[0].startswith("spec.replicas: Invalid value: ")
        assert messages(body)[0].endswith(": must be an integer")


def test_absent_replicas_count_as_the_default_one() -> None:
    assert validate_controlplane_create(cp(replicas=None)) == ([], [])


@pytest.mark.parametrize("replicas", [9, 11])
def test_more_than_seven_passes_with_a_warning(replicas: int) -> None:
    errors, warnings = validate_controlplane_create(cp(replicas=replicas))
    assert errors == []
    assert warnings == [
        f"spec.replicas: {replicas} is more than the recommended 7 etcd members: every write must reach "
        f"{replicas // 2 + 1} of them, which slows etcd down; 3 or 5 is the usual choice"
    ]


def test_seven_has_no_warning_and_external_etcd_never_warns() -> None:
    assert validate_controlplane_create(cp(replicas=7)) == ([], [])
    assert validate_controlplane_create(cp(replicas=10, etcd={"external": True})) == ([], [])


# ---------------------------------------------------------------------------------- strategy


@pytest.mark.parametrize("surge", [2, -1, "1", 0.5])
def test_max_surge_must_be_zero_or_one(surge: Any) -> None:
    body = cp(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge}})
    from webhooks.field import format_value

    assert messages(body) == [
        f"spec.strategy.rollingUpdate.maxSurge: Unsupported value: {format_value(surge)}: "
        'supported values: "0", "1"'
    ]


def test_max_surge_zero_needs_three_replicas() -> None:
    body = cp(replicas=1, strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}})
    assert messages(body) == [
        "spec.strategy.rollingUpdate.maxSurge: Invalid value: 0: must be 1 when spec.replicas is less "
        "than 3 (spec.replicas is 1): with maxSurge 0 a machine is deleted before its replacement exists, "
        "which loses quorum below 3 members"
    ]
    for replicas in (3, 5):
        ok = cp(replicas=replicas, strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}})
        assert messages(ok) == []


def test_max_surge_zero_with_external_etcd_and_two_replicas_is_still_refused() -> None:
    body = cp(replicas=2, etcd={"external": True}, strategy={"rollingUpdate": {"maxSurge": 0}})
    assert [m.split(":")[0] for m in messages(body)] == ["spec.strategy.rollingUpdate.maxSurge"]


def test_on_delete_ignores_the_surge_replica_rule() -> None:
    body = cp(replicas=1, strategy={"type": "OnDelete", "rollingUpdate": {"maxSurge": 0}})
    assert messages(body) == []


def test_unknown_strategy_type_is_refused() -> None:
    assert messages(cp(strategy={"type": "Recreate"})) == [
        'spec.strategy.type: Unsupported value: "Recreate": supported values: "RollingUpdate", "OnDelete"'
    ]


def test_strategy_of_the_wrong_shape_is_refused_not_crashed() -> None:
    assert messages(cp(strategy="RollingUpdate")) == [
        'spec.strategy: Invalid value: "RollingUpdate": must be an object with type and rollingUpdate'
    ]
    assert messages(cp(strategy={"rollingUpdate": 1})) == [
        "spec.strategy.rollingUpdate: Invalid value: 1: must be an object with maxSurge"
    ]


# ---------------------------------------------------------------------------------- failure domains


def test_failure_domains_valid() -> None:
    assert (
        messages(cp(failureDomains=[{"name": "us-east-1a"}, {"name": "us-east-1b"}, {"name": "0zone"}])) == []
    )


def test_failure_domain_names_must_be_unique() -> None:
    body = cp(failureDomains=[{"name": "a"}, {"name": "b"}, {"name": "a"}])
    assert messages(body) == ['spec.failureDomains[2].name: Duplicate value: "a"']


@pytest.mark.parametrize("name", ["US-East", "us_east", "-a", "a-", "a.b", "zone 1"])
def test_failure_domain_names_must_be_dns1123_labels(name: str) -> None:
    assert messages(cp(failureDomains=[{"name": name}])) == [
        f'spec.failureDomains[0].name: Invalid value: "{name}": a lowercase RFC 1123 label must consist of '
        "lower case alphanumeric characters or '-', and must start and end with an alphanumeric character "
        "(e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    ]


def test_failure_domain_name_too_long_and_missing() -> None:
    long = "a" * 64
    assert messages(cp(failureDomains=[{"name": long}])) == [
        f'spec.failureDomains[0].name: Invalid value: "{long}": must be no more than 63 characters'
    ]
    assert messages(cp(failureDomains=[{"providerSpec": {}}, {"name": ""}])) == [
        "spec.failureDomains[0].name: Required value",
        "spec.failureDomains[1].name: Required value",
    ]


# ---------------------------------------------------------------------------------- selector


def test_template_labels_must_match_the_selector() -> None:
    body = cp(selector={"matchLabels": {**MASTER, "cluster": "a"}})
    body["spec"]["template"]["metadata"]["labels"] = {**MASTER, "cluster": "b"}
    assert messages(body) == [
        'spec.template.metadata.labels: Invalid value: {"cluster":"b","machine.openshift.io/cluster-api-'
        'machine-role":"master"}: must match spec.selector "cluster=a,machine.openshift.io/cluster-api-'
        'machine-role=master", or the machines created would not be owned by this control plane'
    ]


def test_template_labels_may_carry_more_than_the_selector() -> None:
    body = cp()
    body["spec"]["template"]["metadata"]["labels"] = {**MASTER, "extra": "x"}
    assert messages(body) == []


def test_match_expressions_are_evaluated() -> None:
    role = "machine.openshift.io/cluster-api-machine-role"
    selector = {
        "matchExpressions": [
            {"key": role, "operator": "In", "values": ["master"]},
            {"key": "zone", "operator": "Exists"},
        ]
    }
    assert messages(cp(selector=selector))[0].startswith("spec.template.metadata.labels: Invalid value:")
    body = cp(selector=selector)
    body["spec"]["template"]["metadata"]["labels"] = {**MASTER, "zone": "a"}
    assert messages(body) == []


# ------------------------------------------------------------- the operator sees what it manages

ADD_TO_SELECTOR = 'add matchLabels {"machine.openshift.io/cluster-api-machine-role": "master"}'
ADD_TO_TEMPLATE = 'add the label "machine.openshift.io/cluster-api-machine-role": "master"'
ROLE = "machine.openshift.io/cluster-api-machine-role"


@pytest.mark.parametrize(
    "selector",
    [
        {"matchLabels": MASTER},
        {"matchLabels": {**MASTER, "cluster": "a"}},
        {"matchExpressions": [{"key": ROLE, "operator": "In", "values": ["master"]}]},
        {"matchExpressions": [{"key": ROLE, "operator": "In", "values": ["master", "master"]}]},
        {
            "matchLabels": {"cluster": "a"},
            "matchExpressions": [{"key": ROLE, "operator": "In", "values": ["master"]}],
        },
    ],
    ids=["matchLabels", "matchLabels-and-more", "In-master", "In-master-twice", "mixed"],
)
def test_a_selector_that_requires_the_role_label_is_accepted(selector: dict[str, Any]) -> None:
    body = cp(selector=selector)
    body["spec"]["template"]["metadata"]["labels"] = {**MASTER, "cluster": "a"}
    assert messages(body) == []


@pytest.mark.parametrize(
    "selector",
    [
        {"matchLabels": {"app": "cp"}},
        {"matchLabels": {ROLE: "worker"}},
        {"matchExpressions": [{"key": ROLE, "operator": "Exists"}]},
        {"matchExpressions": [{"key": ROLE, "operator": "In", "values": ["master", "control-plane"]}]},
        {"matchExpressions": [{"key": ROLE, "operator": "NotIn", "values": ["worker"]}]},
    ],
    ids=["other-label", "other-role", "Exists", "In-two-roles", "NotIn"],
)
def test_a_selector_that_does_not_require_the_role_label_is_refused_saying_what_to_add(
    selector: dict[str, Any],
) -> None:
    body = cp(selector=selector)
    body["spec"]["template"]["metadata"]["labels"] = {**MASTER, "app": "cp"}
    found = messages(body)
    assert found[0].startswith("spec.selector: Invalid value: "), found
    assert found[0].endswith(
        "must require the control-plane role label, or the operator cannot see the Machines it creates: "
        + ADD_TO_SELECTOR
    ), found


def test_a_user_selector_without_the_role_label_is_refused_with_its_defaulted_template() -> None:
    # What a user sends: a selector of their own and no template labels (the defaulter copies them).
    body: dict[str, Any] = {
        "metadata": {"name": "cluster"},
        "spec": {"selector": {"matchLabels": {"app": "cp"}}, "template": {"spec": {"providerSpec": {}}}},
    }
    default_controlplane(body)
    errors, _ = validate_controlplane_create(body)
    assert invalid_message("ControlPlane.controlplane.cpo.dev", "cluster", errors) == (
        'ControlPlane.controlplane.cpo.dev "cluster" is invalid: ['
        'spec.selector: Invalid value: {"matchLabels":{"app":"cp"}}: must require the control-plane role '
        f"label, or the operator cannot see the Machines it creates: {ADD_TO_SELECTOR}, "
        'spec.template.metadata.labels: Invalid value: {"app":"cp"}: must carry the control-plane role '
        f"label, or the operator cannot see the Machines created from it: {ADD_TO_TEMPLATE}]"
    )


def test_template_labels_must_carry_the_role_label() -> None:
    selector = {"matchExpressions": [{"key": ROLE, "operator": "In", "values": ["master"]}]}
    body = cp(selector=selector)
    body["spec"]["template"]["metadata"]["labels"] = {"app": "cp"}
    assert messages(body) == [
        'spec.template.metadata.labels: Invalid value: {"app":"cp"}: must carry the control-plane role '
        f"label, or the operator cannot see the Machines created from it: {ADD_TO_TEMPLATE}"
    ]


def test_a_stored_selector_without_the_role_label_is_kept_through_updates_with_a_warning() -> None:
    # Stored before the rule existed: the selector cannot change, so edits pass with a warning.
    old = cp(selector={"matchLabels": {"app": "cp"}})
    old["spec"]["template"]["metadata"]["labels"] = {"app": "cp"}
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 5
    errors, warnings = validate_controlplane_update(old, new)
    assert errors == []
    assert len(warnings) == 1 and ADD_TO_SELECTOR in warnings[0], warnings
    # Other rules still hold, and a changed selector is still immutable.
    new["spec"]["replicas"] = 4
    errors, _ = validate_controlplane_update(old, new)
    assert [str(e) for e in errors] == [f"spec.replicas: Invalid value: 4: {ODD}"]
    changed = copy.deepcopy(old)
    changed["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    assert "field is immutable" in str(validate_controlplane_update(old, changed)[0][0])


def test_empty_or_malformed_selector_is_refused() -> None:
    assert messages(cp(selector={})) == [
        "spec.selector: Invalid value: {}: must not be empty: an empty selector would adopt every Machine "
        "in the namespace"
    ]
    bad = {"matchExpressions": [{"key": "k", "operator": "Near", "values": ["v"]}]}
    assert messages(cp(selector=bad)) == [
        'spec.selector: Invalid value: {"matchExpressions":[{"key":"k","operator":"Near","values":["v"]}]}: '
        "matchExpressions[0].operator 'Near' is not one of In, NotIn, Exists, DoesNotExist"
    ]
    assert messages(cp(selector=None)) == ["spec.selector: Required value"]


def test_missing_spec_or_template() -> None:
    assert validate_controlplane_create({"metadata": {"name": "x"}})[0] == [required("spec")]
    assert messages(cp(template=None)) == ["spec.template: Required value"]


def test_several_errors_are_all_reported() -> None:
    body = cp(replicas=4, strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3}},
              failureDomains=[{"name": "a"}, {"name": "a"}])  # fmt: skip
    errors, _ = validate_controlplane_create(body)
    assert aggregate(errors) == (
        f"[spec.replicas: Invalid value: 4: {ODD}, "
        'spec.strategy.rollingUpdate.maxSurge: Unsupported value: 3: supported values: "0", "1", '
        'spec.failureDomains[1].name: Duplicate value: "a"]'
    )


def test_etcd_external_must_be_boolean() -> None:
    assert messages(cp(etcd={"external": "yes"})) == [
        'spec.etcd.external: Invalid value: "yes": must be true or false'
    ]


# ---------------------------------------------------------------------------------- updates


def test_update_applies_the_create_rules() -> None:
    old = cp(replicas=3)
    errors, _ = validate_controlplane_update(old, cp(replicas=4))
    assert [str(e) for e in errors] == [f"spec.replicas: Invalid value: 4: {ODD}"]
    assert validate_controlplane_update(old, cp(replicas=5)) == ([], [])
    assert validate_controlplane_update(old, cp(replicas=9))[1] != []


def test_selector_is_immutable() -> None:
    old = cp()
    new = cp(selector={"matchLabels": {**MASTER, "cluster": "a"}})
    new["spec"]["template"]["metadata"]["labels"] = {**MASTER, "cluster": "a"}
    errors, _ = validate_controlplane_update(old, new)
    assert [str(e) for e in errors] == [
        'spec.selector: Invalid value: {"matchLabels":{"cluster":"a",'
        '"machine.openshift.io/cluster-api-machine-role":"master"}}: field is immutable'
    ]


def test_selector_written_differently_but_equal_is_not_a_change() -> None:
    old = cp()
    new = cp(selector={"matchLabels": dict(MASTER), "matchExpressions": []})
    assert validate_controlplane_update(old, new) == ([], [])
    absent = cp(selector=None)
    assert validate_controlplane_update(absent, cp(replicas=5))[0] == []


@pytest.mark.parametrize(("before", "after"), [(False, True), (True, False), (None, True)])
def test_etcd_external_is_immutable(before: bool | None, after: bool) -> None:
    old = cp(etcd=None if before is None else {"external": before})
    new = cp(etcd={"external": after})
    errors, _ = validate_controlplane_update(old, new)
    assert [str(e) for e in errors] == [
        f"spec.etcd.external: Invalid value: {'true' if after else 'false'}: field is immutable"
    ]


def test_absent_and_false_external_are_the_same() -> None:
    assert validate_controlplane_update(cp(etcd=None), cp(etcd={"external": False}, replicas=5)) == ([], [])


def test_update_that_keeps_the_spec_is_never_refused() -> None:
    # Stored before the webhook existed, with an even count: its finalizer must still come off.
    old = cp(replicas=4)
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = []
    new["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert validate_controlplane_update(old, new) == ([], [])


def test_immutable_and_rule_errors_together() -> None:
    errors, _ = validate_controlplane_update(cp(), cp(replicas=2, etcd={"external": True}))
    # External etcd would allow 2, but the change of etcd.external itself is refused.
    assert [str(e) for e in errors] == ["spec.etcd.external: Invalid value: true: field is immutable"]


# ---------------------------------------------------------------------------------- scale


@pytest.mark.parametrize("replicas", [1, 3, 5, 7])
def test_scale_to_odd_passes(replicas: int) -> None:
    assert validate_controlplane_scale(scale(replicas), cp()) == ([], [])


@pytest.mark.parametrize("replicas", [2, 4])
def test_scale_to_even_is_refused_for_stacked_etcd(replicas: int) -> None:
    errors, _ = validate_controlplane_scale(scale(replicas), cp())
    assert [str(e) for e in errors] == [f"spec.replicas: Invalid value: {replicas}: {ODD}"]
    # Unknown ControlPlane: the stacked rules apply.
    assert [str(e) for e in validate_controlplane_scale(scale(replicas), None)[0]] == [
        f"spec.replicas: Invalid value: {replicas}: {ODD}"
    ]


def test_scale_to_even_passes_for_external_etcd() -> None:
    assert validate_controlplane_scale(scale(4), cp(etcd={"external": True})) == ([], [])


def test_scale_to_zero_is_refused() -> None:
    # kubectl scale --replicas 0 sends a Scale whose spec omits replicas (Go drops a zero int32).
    errors, _ = validate_controlplane_scale(scale(None), cp())
    assert [str(e) for e in errors] == [
        "spec.replicas: Invalid value: 0: must be at least 1 and odd (1, 3, 5, 7) "
        "for a stacked etcd control plane"
    ]


def test_scale_below_three_with_max_surge_zero_is_refused() -> None:
    zero = cp(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}})
    errors, _ = validate_controlplane_scale(scale(1), zero)
    assert [str(e).split(": Invalid value: ")[0] for e in errors] == ["spec.strategy.rollingUpdate.maxSurge"]
    assert validate_controlplane_scale(scale(3), zero) == ([], [])


def test_scale_above_seven_warns() -> None:
    errors, warnings = validate_controlplane_scale(scale(9), cp())
    assert (
        errors == []
        and warnings
        and warnings[0].startswith("spec.replicas: 9 is more than the recommended 7")
    )


def test_scale_that_keeps_the_count_is_accepted() -> None:
    assert validate_controlplane_scale(scale(4), cp(), old_scale=scale(4)) == ([], [])


@pytest.mark.parametrize(("replicas", "needed"), [(None, False), (1, True), (2, True), (3, False), (4, True),
                                                   (5, False), (9, False)])  # fmt: skip
def test_controlplane_is_looked_up_only_when_it_matters(replicas: int | None, needed: bool) -> None:
    assert scale_needs_controlplane(scale(replicas)) is needed


# ---------------------------------------------------------------------------------- defaulting


def test_defaults_fill_an_empty_spec() -> None:
    body: dict[str, Any] = {"metadata": {"name": "x"}, "spec": {"template": {"spec": {"providerSpec": {}}}}}
    default_controlplane(body)
    assert body["spec"] == {
        "replicas": 1,
        "state": "Active",
        "selector": {"matchLabels": MASTER},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
        "enableAutorepair": True,
        "template": {"metadata": {"labels": MASTER}, "spec": {"providerSpec": {}}},
    }
    assert validate_controlplane_create(body) == ([], [])


def test_defaults_keep_what_is_set() -> None:
    body = cp(replicas=5, enableAutorepair=False, selector={"matchLabels": {"role": "cp"}}, state="Inactive",
              strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}})  # fmt: skip
    body["spec"]["template"]["metadata"]["labels"] = {"role": "cp", "x": "y"}
    before = copy.deepcopy(body)
    default_controlplane(body)
    assert body == before


def test_defaults_complete_partial_strategy_and_labels() -> None:
    body = cp(strategy={"rollingUpdate": {}}, selector={"matchLabels": {"role": "cp"}})
    body["spec"]["template"]["metadata"] = {"annotations": {"a": "b"}}
    default_controlplane(body)
    assert body["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}
    assert body["spec"]["template"]["metadata"] == {"annotations": {"a": "b"}, "labels": {"role": "cp"}}


def test_on_delete_gets_no_rolling_update_block() -> None:
    body = cp(strategy={"type": "OnDelete"})
    default_controlplane(body)
    assert body["spec"]["strategy"] == {"type": "OnDelete"}


def test_defaulting_never_crashes_on_bad_shapes() -> None:
    for spec in (
        "x",
        3,
        [],
        {"strategy": "x", "template": "y", "selector": 5},
        {"strategy": {"rollingUpdate": 7}},
    ):
        body: dict[str, Any] = {"spec": copy.deepcopy(spec)}
        default_controlplane(body)  # must not raise
        validate_controlplane_create(body)  # and the validator reports instead of raising
    missing: dict[str, Any] = {}
    default_controlplane(missing)
    assert missing["spec"]["replicas"] == 1
