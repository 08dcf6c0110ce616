"""ObjectMeta rules and managedFields bookkeeping compared with the recorded transcripts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apiserver import objectmeta as om
from apiserver.errors import FieldError, StatusError, aggregate
from tests.support.reference import transcript_dir

REFERENCE = transcript_dir()


def case(name: str) -> Any:
    return json.loads((REFERENCE / f"{name}.json").read_text())


def gadget_rules() -> om.FieldRules:
    crd = case("02-crd-create")["request"]["body"]
    return om.rules_from_schema(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def causes(errors: list[FieldError]) -> list[dict[str, str]]:
    return [e.cause() for e in errors]


def test_bad_subdomain_name_message() -> None:
    recorded = case("03-gadget-create-bad-name")["response"]["body"]["details"]["causes"]
    errors = om.validate_object_meta_create({"name": "Bad_Name", "namespace": "ref"}, namespaced=True)
    assert causes(errors) == recorded


def test_namespace_label_rule_message() -> None:
    recorded = case("19-namespace-create-invalid-name")["response"]["body"]["details"]["causes"]
    errors = om.validate_object_meta_create({"name": "Bad.Name"}, namespaced=False, name_rule="label")
    assert causes(errors) == recorded
    assert om.validate_name("Bad.Name", "Namespace") == [recorded[0]["message"].split(": ", 2)[2]]


def test_label_key_and_value_messages() -> None:
    recorded = case("08-gadget-create-metadata-invalid-labels")["response"]["body"]
    meta = {"name": "badlabels", "namespace": "ref", "labels": {"bad key!": "v", "ok": "bad value!"}}
    errors = om.validate_object_meta_create(meta, namespaced=True)
    assert causes(errors) == recorded["details"]["causes"]
    assert recorded["message"].endswith(aggregate(errors))


def test_missing_name_and_finalizer_added_while_terminating_twice() -> None:
    no_name = case("03-gadget-create-no-name")["response"]["body"]["details"]["causes"]
    assert causes(om.validate_object_meta_create({"namespace": "ref"}, namespaced=True)) == no_name
    recorded = case("12-add-finalizer-while-terminating")["response"]["body"]
    old = {
        "name": "g-fin",
        "namespace": "ref",
        "resourceVersion": "5",
        "deletionTimestamp": "2026-11-22T04:18:50Z",
        "finalizers": ["ref.example.dev/hold"],
    }
    new = dict(old, finalizers=["ref.example.dev/hold", "ref.example.dev/new"])
    errors = om.validate_object_meta_update({"metadata": new}, {"metadata": old}, namespaced=True)
    assert causes(errors) == recorded["details"]["causes"]
    assert recorded["message"].endswith(aggregate(errors))


def test_generate_name_alphabet_and_truncation() -> None:
    name = om.generate_name("gen-")
    assert name.startswith("gen-") and len(name) == 9
    assert all(c in om.NAME_ALPHABET for c in name[4:])
    long = om.generate_name("x" * 80)
    assert len(long) == 63 and long.startswith("x" * 58)


def test_manager_from_user_agent() -> None:
    assert om.manager_from_user_agent("reftool/1.0 (linux/amd64) ref-recorder") == "reftool"
    assert om.manager_from_user_agent(None) == "unknown"
    assert om.manager_from_user_agent("") == "unknown"


def test_field_set_round_trip() -> None:
    doc: dict[str, Any] = {
        "f:spec": {".": {}, "f:a": {}, "f:b": {".": {}, "f:c": {}}},
        "f:metadata": {"f:labels": {"f:x": {}}},
    }
    assert om.encode_fields(om.decode_fields(doc)) == om._sort_tree(doc)


def test_create_managed_fields_match_transcripts() -> None:
    rules = gadget_rules()
    for name in ("03-gadget-create-defaulted", "04-gadget-create-generatename"):
        obj = case(name)["response"]["body"]
        expected = obj["metadata"]["managedFields"][0]["fieldsV1"]
        assert om.managed_fields_set(obj, rules=rules) == expected
    nospec = case("03-gadget-create-no-spec")["response"]["body"]
    entries = om.update_managed_fields(
        None, None, nospec, manager="reftool", api_version="ref.example.dev/v1", time="t", rules=rules
    )
    assert entries is None


def test_merge_patch_moves_and_removes_fields() -> None:
    rules = gadget_rules()
    before = case("03-gadget-create-defaulted")["response"]["body"]
    old = json.loads(json.dumps(before))
    new = json.loads(json.dumps(before))
    new["metadata"]["labels"]["bump"] = "1"
    new["spec"]["replicas"] = 3
    new["spec"]["config"] = {"new": "v"}
    entries = om.update_managed_fields(
        old["metadata"]["managedFields"],
        old,
        new,
        manager="reftool",
        api_version="ref.example.dev/v1",
        time="2026-11-22T04:18:13Z",
        rules=rules,
    )
    expected = case("09-gadget-patch-merge-spec")["response"]["body"]["metadata"]["managedFields"]
    assert entries is not None
    assert [e["fieldsV1"] for e in entries] == [e["fieldsV1"] for e in expected]


def test_status_update_claims_label_and_keeps_other_entries() -> None:
    rules = gadget_rules()
    request = case("10-gadget-put-status-changing-spec-and-labels")["request"]["body"]
    stored = json.loads(json.dumps(request))
    del stored["metadata"]["labels"]["via-status"]
    stored["spec"]["replicas"] = 5
    stored["status"] = {"replicas": 2, "selector": "a=b"}
    entries = om.update_managed_fields(
        stored["metadata"]["managedFields"],
        stored,
        request,
        manager="reftool",
        api_version="ref.example.dev/v1",
        subresource="status",
        time="2026-11-22T04:18:26Z",
        rules=rules,
    )
    later = case("11-gadget-get-after-scale")["response"]["body"]["metadata"]["managedFields"]
    assert entries is not None
    assert entries[-1]["fieldsV1"] == later[-1]["fieldsV1"]
    assert entries[0]["manager"] == "applier"


def test_noop_update_keeps_time_and_scale_writes_no_time() -> None:
    old = {"metadata": {"name": "a"}, "spec": {"replicas": 1}}
    first = om.update_managed_fields(
        None, None, old, manager="m", api_version="v1", time="2026-11-22T04:00:00Z"
    )
    assert first is not None and first[0]["time"] == "2026-11-22T04:00:00Z"
    same = om.update_managed_fields(
        first, old, dict(old), manager="m", api_version="v1", time="2026-11-22T05:00:00Z"
    )
    assert same == first
    scaled = om.update_managed_fields(
        first,
        old,
        {"metadata": {"name": "a"}, "spec": {"replicas": 4}},
        manager="m",
        api_version="v1",
        subresource="scale",
        time=None,
    )
    assert scaled is not None and "time" not in scaled[0] and scaled[0]["subresource"] == "scale"
    assert scaled[1]["fieldsV1"] == {"f:spec": {}}


def test_apply_conflict_then_force() -> None:
    rules = gadget_rules()
    live = case("09-gadget-patch-merge-spec")["response"]["body"]
    config = {
        "apiVersion": "ref.example.dev/v1",
        "kind": "Gadget",
        "metadata": {"name": "g1"},
        "spec": {"replicas": 5},
    }
    merged = json.loads(json.dumps(live))
    merged["spec"]["replicas"] = 5
    recorded = case("09-gadget-patch-apply-yaml")["response"]["body"]
    with pytest.raises(StatusError) as err:
        om.apply_managed_fields(
            live["metadata"]["managedFields"],
            live,
            merged,
            config,
            manager="applier",
            api_version="ref.example.dev/v1",
            time="t",
            rules=rules,
        )
    assert err.value.status() == recorded
    entries, _ = om.apply_managed_fields(
        live["metadata"]["managedFields"],
        live,
        merged,
        config,
        manager="applier",
        api_version="ref.example.dev/v1",
        time="t",
        force=True,
        rules=rules,
    )
    assert entries is not None
    assert entries[0]["operation"] == "Apply" and entries[0]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in entries[1]["fieldsV1"]["f:spec"]
