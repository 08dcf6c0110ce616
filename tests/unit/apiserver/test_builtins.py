"""Built-in types: decoding, defaults, validation wording, key order, field selectors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apiserver import builtins as b
from apiserver import objectmeta as om
from apiserver.registry import ResourceType
from tests.support.reference import transcript_dir

REFERENCE = transcript_dir()


def case(name: str) -> Any:
    return json.loads((REFERENCE / f"{name}.json").read_text())


def rt(group: str, resource: str) -> ResourceType:
    return next(t for t in b.builtin_types() if (t.group, t.resource) == (group, resource))


def test_microtime_needs_exactly_six_digits_and_offsets_become_utc() -> None:
    lease = rt("coordination.k8s.io", "leases")
    ok, _ = b.decode_builtin(lease, {"spec": {"renewTime": "2026-11-22T06:31:00.000000+02:00"}})
    assert ok["spec"]["renewTime"] == "2026-11-22T04:31:00.000000Z"
    for value, elem, layout_elem in (
        ("2026-11-22T04:30:00.123Z", ".123Z", ".000000"),
        ("2026-11-22T04:31:00Z", "Z", ".000000"),
        ("2026-11-22T04:31:00.123456789Z", "789Z", "Z07:00"),
        ("yesterday", "yesterday", "2006"),
    ):
        with pytest.raises(b.DecodeError) as err:
            b.decode_builtin(lease, {"spec": {"renewTime": value}})
        assert err.value.message == (
            f'parsing time "{value}" as "2006-01-02T15:04:05.000000Z07:00": '
            f'cannot parse "{elem}" as "{layout_elem}"'
        )


def test_lease_400_wording_and_unknown_fields() -> None:
    lease = rt("coordination.k8s.io", "leases")
    recorded = case("17-lease-create-microtime-3digits")["response"]["body"]["message"]
    with pytest.raises(b.DecodeError) as err:
        b.decode_builtin(lease, case("17-lease-create-microtime-3digits")["request"]["body"])
    assert b.decode_error_message(lease, err.value.message) == recorded
    body = case("17-lease-unknown-field")["request"]["body"]
    decoded, warnings = b.decode_builtin(lease, body)
    assert warnings == ['unknown field "spec.bogus"'] and decoded["spec"] == {"leaseDurationSeconds": 15}
    with pytest.raises(b.DecodeError) as strict:
        b.decode_builtin(lease, body, strict=True)
    assert (
        b.decode_error_message(lease, strict.value.message)
        == case("17-lease-unknown-field-strict")["response"]["body"]["message"]
    )


def test_lease_duration_validation() -> None:
    recorded = case("17-lease-invalid-duration")["response"]["body"]["details"]["causes"]
    errors = rt("coordination.k8s.io", "leases").validate({"spec": {"leaseDurationSeconds": 0}}, {})  # type: ignore[misc]
    assert [e.cause() for e in errors] == recorded


def test_core_event_zero_fields_and_key_order() -> None:
    events = rt("", "events")
    request = case("18-core-event-create")["request"]["body"]
    decoded, _ = b.decode_builtin(events, request)
    response = case("18-core-event-create")["response"]["body"]
    expected = {k: v for k, v in response.items() if k != "metadata"}
    got = {k: v for k, v in decoded.items() if k != "metadata"}
    assert got == expected and list(got) == list(expected)
    assert b.field_selector_fields(events, response)["involvedObject.kind"] == "Gadget"


def test_events_conversion_both_ways() -> None:
    core = case("18-core-event-create")["response"]["body"]
    via_v1 = case("18-core-event-get-via-events-v1")["response"]["body"]
    assert b.convert_event(core, "events.k8s.io/v1") == via_v1
    created = case("18-events-v1-create")["response"]["body"]
    via_core = case("18-events-v1-get-via-core")["response"]["body"]
    assert b.convert_event(created, "v1") == via_core


def test_events_v1_validation_uses_core_field_names() -> None:
    events_v1 = rt("events.k8s.io", "events")
    bad, _ = b.decode_builtin(events_v1, case("18-events-v1-create-minimal-invalid")["request"]["body"])
    bad["metadata"]["namespace"] = "ref"
    recorded = case("18-events-v1-create-minimal-invalid")["response"]["body"]["details"]["causes"]
    assert [e.cause() for e in events_v1.validate(bad, None)] == recorded  # type: ignore[misc]
    old = case("18-events-v1-create")["response"]["body"]
    new = dict(old, note="changed note", reason="Changed")
    recorded = case("18-events-v1-update-immutable")["response"]["body"]["details"]["causes"]
    assert [e.cause() for e in events_v1.validate(new, old)] == recorded  # type: ignore[misc]
    ns_mismatch = case("18-core-event-create-ns-mismatch")
    obj = dict(ns_mismatch["request"]["body"], metadata={"name": "mm.core", "namespace": "ref"})
    core_validate = rt("", "events").validate
    assert core_validate is not None
    expected_causes = ns_mismatch["response"]["body"]["details"]["causes"]
    assert [e.cause() for e in core_validate(obj, None)] == expected_causes


def test_namespace_defaults_and_managed_fields() -> None:
    namespaces = rt("", "namespaces")
    decoded, _ = b.decode_builtin(namespaces, case("03-namespace-create")["request"]["body"])
    assert namespaces.default is not None
    namespaces.default(decoded)
    entries = om.update_managed_fields(
        None,
        None,
        decoded,
        manager="reftool",
        api_version="v1",
        time="2026-11-22T04:17:36Z",
        rules=b.field_rules(namespaces),
    )
    b.prepare_for_create(namespaces, decoded)
    response = case("03-namespace-create")["response"]["body"]
    assert entries == response["metadata"]["managedFields"]
    assert decoded["spec"] == response["spec"] and decoded["status"] == response["status"]


def test_webhook_configuration_defaults_and_errors() -> None:
    mutating = rt("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
    created = case("16-mutatingwebhookconfiguration-create")
    decoded, _ = b.decode_builtin(mutating, created["request"]["body"])
    assert mutating.default is not None
    mutating.default(decoded)
    decoded = b.order_builtin(mutating, decoded)
    assert decoded["webhooks"] == created["response"]["body"]["webhooks"]
    assert json.dumps(decoded["webhooks"]) == json.dumps(created["response"]["body"]["webhooks"])
    fields = om.managed_fields_set(decoded, rules=b.field_rules(mutating))
    assert fields == created["response"]["body"]["metadata"]["managedFields"][0]["fieldsV1"]
    validating = rt("admissionregistration.k8s.io", "validatingwebhookconfigurations")
    bad = case("16-webhookconfig-invalid")
    errors = validating.validate(bad["request"]["body"], None)  # type: ignore[misc]
    assert [e.cause() for e in errors] == bad["response"]["body"]["details"]["causes"]


def test_crd_name_mismatch_and_create_status() -> None:
    crds = rt("apiextensions.k8s.io", "customresourcedefinitions")
    bad = case("22-crd-create-name-mismatch")
    errors = crds.validate(bad["request"]["body"], None)  # type: ignore[misc]
    assert [e.cause() for e in errors] == bad["response"]["body"]["details"]["causes"]
    created = case("02-crd-create")
    decoded, _ = b.decode_builtin(crds, created["request"]["body"])
    assert crds.default is not None
    crds.default(decoded)
    b.prepare_for_create(crds, decoded)
    decoded = b.order_builtin(crds, b.decode_builtin(crds, decoded)[0])
    assert json.dumps(decoded["spec"]) == json.dumps(created["response"]["body"]["spec"])
    assert decoded["status"] == created["response"]["body"]["status"]


def test_initial_objects_and_field_selectors() -> None:
    objects = b.initial_objects("2026-01-01T00:00:00Z")
    names = sorted(o["metadata"]["name"] for t, o in objects if t.resource == "namespaces")
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    pods = rt("", "pods")
    assert "spec.nodeName" in b.supported_field_selectors(pods)
    assert b.supported_field_selectors(rt("", "nodes")) == ["metadata.name", "spec.unschedulable"]
    assert b.name_rule(rt("", "namespaces")) == "label" and b.name_rule(rt("", "services")) == "dns1035"
    assert rt("", "pods").merge_keys["spec.containers"] == "name"


def test_pod_defaults_and_status() -> None:
    pods = rt("", "pods")
    pod, _ = b.decode_builtin(
        pods, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "image": "a:1"}]}}
    )
    assert pods.default is not None
    pods.default(pod)
    b.prepare_for_create(pods, pod)
    container = pod["spec"]["containers"][0]
    assert (
        container["imagePullPolicy"] == "IfNotPresent"
        and container["terminationMessagePath"] == "/dev/termination-log"
    )
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert len(pod["spec"]["tolerations"]) == 2


@pytest.mark.parametrize(
    "name",
    [
        "17-lease-merge-patch-invalid-time-422",
        "17-lease-merge-patch-microtime-no-fraction-422",
        "17-lease-patch-renew-9digits",
    ],
)
def test_merge_patch_that_cannot_be_decoded_is_the_recorded_422(name: str) -> None:
    lease = rt("coordination.k8s.io", "leases")
    recorded = case(name)
    body = recorded["response"]["body"]
    cause = body["details"]["causes"][0]["message"]
    patched = json.loads(json.loads(cause[len("Invalid value: ") : cause.index('}}": ') + 3]))
    current = {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "metadata": patched["metadata"]}
    current["spec"] = {**patched["spec"], "renewTime": "2026-11-22T04:30:00.000000Z"}
    patch_doc = recorded["request"]["body"]
    with pytest.raises(b.DecodeError) as failure:
        b.decode_builtin(lease, {**current, "spec": {**current["spec"], **patch_doc["spec"]}})
    err = b.patch_decode_error(lease, current, "merge", patch_doc, {}, failure.value.message)
    assert err.status() == body


def test_json_patch_decode_error_sorts_only_containers_on_the_operation_path() -> None:
    lease = rt("coordination.k8s.io", "leases")
    patched = {
        "kind": "Lease",
        "apiVersion": "coordination.k8s.io/v1",
        "metadata": {"name": "x", "namespace": "n"},
    }
    patched["spec"] = {"renewTime": "bad", "holderIdentity": "h"}
    ops = [{"op": "replace", "path": "/spec/renewTime", "value": "bad"}]
    err = b.patch_decode_error(lease, patched, "json", ops, patched, "boom")
    assert err.code == 422 and err.details == {"causes": [err.details["causes"][0]]}  # type: ignore[index]
    assert (
        '{\\"apiVersion\\":\\"coordination.k8s.io/v1\\",\\"kind\\":\\"Lease\\",\\"metadata\\":{\\"name\\"'
        in err.message
    )
    assert '\\"spec\\":{\\"holderIdentity\\":\\"h\\",\\"renewTime\\":\\"bad\\"}' in err.message


def test_strategic_patch_decode_error_quotes_the_patch_as_a_go_map() -> None:
    patch_doc = {"spec": {"renewTime": "x", "leaseDurationSeconds": 15, "holderIdentity": None}}
    err = b.strategic_patch_decode_error(patch_doc, 'parsing time "x"')
    value = "map[spec:map[holderIdentity:<nil> leaseDurationSeconds:15 renewTime:x]]"
    assert err.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f' "" is invalid: patch: Invalid value: "{value}": parsing time "x"',
        "reason": "Invalid",
        "details": {
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": f'Invalid value: "{value}": parsing time "x"',
                    "field": "patch",
                }
            ]
        },
        "code": 422,
    }


def test_self_subject_review_reports_the_caller() -> None:
    cert = case("15-cert-selfsubjectreview")["response"]["body"]
    token = case("15-token-selfsubjectreview")["response"]["body"]
    got = b.self_subject_review(
        "admin-token", ["system:masters", "system:authenticated"], "admin-token-uid", None, now="t"
    )
    assert got == {**token, "metadata": {"creationTimestamp": "t"}}
    extra = cert["status"]["userInfo"]["extra"]
    got = b.self_subject_review("admin", ["system:masters", "system:authenticated"], "", extra, now="t")
    assert json.dumps(got) == json.dumps({**cert, "metadata": {"creationTimestamp": "t"}})


def test_apiserver_identity_lease_is_in_kube_system() -> None:
    leases = [o for t, o in b.initial_objects("2026-01-01T00:00:00Z") if t.resource == "leases"]
    assert len(leases) == 1
    lease = leases[0]
    name = lease["metadata"]["name"]
    assert lease["metadata"]["namespace"] == "kube-system" and len(name) == len("apiserver-") + 26
    assert lease["spec"]["holderIdentity"].startswith(name + "_")
    assert lease["spec"]["renewTime"] == "2026-01-01T00:00:00.000000Z"
    again = b.apiserver_identity_lease("2026-01-01T00:00:00Z", hostname="vm")
    assert again["metadata"]["name"] == b.apiserver_identity_lease("x", hostname="vm")["metadata"]["name"]


def test_events_of_both_apis_share_one_store_and_read_in_either_shape() -> None:
    core_rt, v1_rt = rt("", "events"), rt("events.k8s.io", "events")
    assert v1_rt.key == core_rt.key == ("", "events")
    assert (v1_rt.qualified.group, v1_rt.qualified.kind) == ("", "Event")
    written_v1 = case("18-events-v1-create")["response"]["body"]
    via_core = case("18-events-v1-get-via-core")["response"]["body"]
    assert json.dumps(b.order_builtin(core_rt, written_v1)) == json.dumps(via_core)
    written_core = case("18-core-event-create")["response"]["body"]
    via_v1 = case("18-core-event-get-via-events-v1")["response"]["body"]
    assert json.dumps(b.order_builtin(v1_rt, written_core)) == json.dumps(via_v1)
    assert b.served_form(core_rt, written_core) is written_core
    assert b.storage_form(v1_rt, written_v1)["involvedObject"]["name"] == "g1"
    assert b.field_selector_fields(core_rt, written_v1)["involvedObject.name"] == "g1"
    assert b.field_selector_fields(v1_rt, written_core)["regarding.name"] == "g1"
