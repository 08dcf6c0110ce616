"""The CRD structural-schema engine against kube-apiserver's recorded answers.

Each transcript test replays what the real server did with a request body (prune, default,
validate, scale checks) and compares the whole 422 Status, built by ``errors.invalid_object``, with
the one recorded in ``tests/testdata/kube-apiserver``. The Gadget CRD is the body of
``02-crd-create.json``. Tests below the transcript ones pin behaviour the transcripts do not show.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

import pytest

from apiserver import schema
from apiserver.errors import Qualified, invalid_object
from apiserver.registry import ResourceType, ScaleSpec
from runtime.goformat import go_float
from runtime.jsoncodec import JSON
from tests.support.reference import transcript_dir

REFERENCE = transcript_dir()

CRD_KIND = Qualified("apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition")


@cache
def _transcript(name: str) -> JSON:
    data: JSON = json.loads((REFERENCE / f"{name}.json").read_text())
    return data


def transcript(name: str) -> JSON:
    return copy.deepcopy(_transcript(name))


def request_body(name: str) -> JSON:
    body = transcript(name)["request"]["body"]
    # Bodies the recorder sent verbatim (duplicate keys, 2.0) are stored as strings.
    decoded: JSON = json.loads(body) if isinstance(body, str) else body
    return decoded


def gadget_crd() -> JSON:
    return request_body("02-crd-create")


def gadget_type() -> ResourceType:
    return schema.crd_to_resource_types(gadget_crd())[0]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386, enough to replay the recorded merge patches."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def decode_custom_resource(rt: ResourceType, obj: JSON) -> list[str]:
    """What the server does to a decoded custom resource before validation; returns pruned paths."""
    assert rt.schema is not None
    pruned = schema.prune(rt.schema, obj)
    schema.apply_defaults(rt.schema, obj)
    return pruned


def status_for(rt: ResourceType, obj: JSON, *, old: JSON | None = None, status: bool = False) -> JSON | None:
    assert rt.schema is not None
    errors = schema.validate(rt.schema, obj, root_is_status=status, old=old)
    errors += schema.scale_accessor_errors(rt.scale, obj, include_spec=not status)
    if not errors:
        return None
    return invalid_object(rt.qualified, obj["metadata"]["name"], errors).status()


# ------------------------------------------------------------------------------------------ creates


@pytest.mark.parametrize(
    "name",
    [
        "08-gadget-create-invalid-all",
        "08-gadget-create-replicas-2.0",
        "08-gadget-create-replicas-float",
        "08-gadget-create-spec-not-object",
        "08-gadget-create-wrong-types",
    ],
)
def test_invalid_creates_give_the_recorded_422(name: str) -> None:
    rt = gadget_type()
    obj = request_body(name)
    decode_custom_resource(rt, obj)
    assert status_for(rt, obj) == transcript(name)["response"]["body"]


def test_wrong_types_cause_order_and_reasons() -> None:
    # Type errors of the scalar fields, size's enum error right after its type error, spec.config
    # (an object) after them, and the scale accessor last.
    rt = gadget_type()
    obj = request_body("08-gadget-create-wrong-types")
    decode_custom_resource(rt, obj)
    causes = status_for(rt, obj)["details"]["causes"]  # type: ignore[index]
    assert [(c["reason"], c["field"]) for c in causes] == [
        ("FieldValueTypeInvalid", "spec.name"),
        ("FieldValueTypeInvalid", "spec.port"),
        ("FieldValueTypeInvalid", "spec.replicas"),
        ("FieldValueTypeInvalid", "spec.size"),
        ("FieldValueNotSupported", "spec.size"),
        ("FieldValueTypeInvalid", "spec.config"),
        ("FieldValueInvalid", ".spec.replicas"),
    ]
    assert (
        causes[1]["message"]
        == 'Invalid value: "number": spec.port in body must be of type integer,string: "number"'
    )


@pytest.mark.parametrize(
    "name",
    [
        "03-gadget-create-defaulted",
        "03-gadget-create-dryrun",
        "03-gadget-create-empty-spec",
        "03-gadget-create-fieldmanager",
        "03-gadget-create-no-spec",
        "03-gadget-create-size-null",
        "03-gadget-create-duplicate-field-warn",
        "03-gadget-create-unknown-field-warn",
        "08-gadget-create-missing-size-no-default-path",
    ],
)
def test_accepted_creates_store_the_recorded_spec(name: str) -> None:
    rt = gadget_type()
    obj = request_body(name)
    decode_custom_resource(rt, obj)
    assert status_for(rt, obj) is None
    response = transcript(name)["response"]["body"]
    assert obj.get("spec") == response.get("spec")
    assert "spec" in obj or "spec" not in response


def test_size_null_is_defaulted_not_rejected() -> None:
    rt = gadget_type()
    obj = request_body("03-gadget-create-size-null")
    assert obj["spec"]["size"] is None
    decode_custom_resource(rt, obj)
    assert obj["spec"] == {"size": "small", "replicas": 2, "port": "http"}


def test_unknown_fields_are_pruned_and_reported_like_the_warning_headers() -> None:
    rt = gadget_type()
    recorded = transcript("03-gadget-create-unknown-field-warn")
    obj = request_body("03-gadget-create-unknown-field-warn")
    pruned = decode_custom_resource(rt, obj)
    headers = [f"299 - {json.dumps(schema.unknown_field_message(p))}" for p in pruned]
    assert headers == recorded["response"]["headers"]["Warning"]
    assert "extraTop" not in obj
    assert obj["spec"]["config"] == {"free": "form"}  # preserve-unknown-fields keeps free-form content


def test_strict_field_validation_message_lists_pruned_paths() -> None:
    rt = gadget_type()
    recorded = transcript("03-gadget-create-unknown-field-strict")
    pruned = decode_custom_resource(rt, request_body("03-gadget-create-unknown-field-strict"))
    detail = ", ".join(schema.unknown_field_message(p) for p in pruned)
    message = f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
    message += f"strict decoding error: {detail}"
    assert message == recorded["response"]["body"]["message"]


# --------------------------------------------------------------------------------- updates/patches


def stored_g1() -> JSON:
    """g1 as stored when the status and scale cases ran (the body of the /status PUT, status valid)."""
    obj = request_body("10-gadget-put-status-invalid")
    obj["status"] = {"replicas": 5, "selector": "app=g1"}
    return obj


def test_status_put_errors_drop_the_status_prefix_in_the_message() -> None:
    rt = gadget_type()
    obj = request_body("10-gadget-put-status-invalid")
    decode_custom_resource(rt, obj)
    got = status_for(rt, obj, old=stored_g1(), status=True)
    assert got == transcript("10-gadget-put-status-invalid")["response"]["body"]


def test_status_validation_ignores_spec_and_the_spec_replicas_accessor() -> None:
    rt = gadget_type()
    obj = stored_g1()
    obj["spec"]["replicas"] = "many"
    assert status_for(rt, obj, old=stored_g1(), status=True) is None
    assert status_for(rt, obj, old=stored_g1()) is not None


@pytest.mark.parametrize("name", ["11-gadget-patch-scale-negative", "11-gadget-patch-scale-zero"])
def test_scale_patches_validate_the_resulting_custom_resource(name: str) -> None:
    rt = gadget_type()
    old = stored_g1()
    replicas = request_body(name)["spec"]["replicas"]
    obj = merge_patch(old, {"spec": {"replicas": replicas}})
    assert status_for(rt, obj, old=old) == transcript(name)["response"]["body"]


def test_merge_patch_to_invalid_value() -> None:
    rt = gadget_type()
    old = stored_g1()
    obj = merge_patch(old, request_body("09-gadget-patch-merge-invalid-value"))
    decode_custom_resource(rt, obj)
    assert (
        status_for(rt, obj, old=old) == transcript("09-gadget-patch-merge-invalid-value")["response"]["body"]
    )


def test_int_or_string_rejects_a_boolean_and_keeps_a_string() -> None:
    rt = gadget_type()
    string_answer = transcript("22-patch-port-string")["response"]["body"]
    old = merge_patch(string_answer, {"spec": {"port": 8080}})
    as_bool = merge_patch(old, request_body("22-patch-port-bool"))
    decode_custom_resource(rt, as_bool)
    assert status_for(rt, as_bool, old=old) == transcript("22-patch-port-bool")["response"]["body"]
    as_string = merge_patch(old, request_body("22-patch-port-string"))
    decode_custom_resource(rt, as_string)
    assert status_for(rt, as_string, old=old) is None
    assert as_string["spec"] == string_answer["spec"]


# --------------------------------------------------------------------------------------------- CRDs


@pytest.mark.parametrize("name", ["22-crd-create-name-mismatch", "22-crd-create-nonstructural"])
def test_invalid_crds_give_the_recorded_422(name: str) -> None:
    body = request_body(name)
    errors = schema.validate_crd(body)
    assert (
        invalid_object(CRD_KIND, body["metadata"]["name"], errors).status()
        == transcript(name)["response"]["body"]
    )


def test_gadget_crd_is_valid_and_defaults_like_the_create_response() -> None:
    crd = gadget_crd()
    assert schema.validate_crd(crd) == []
    created = transcript("02-crd-create")["response"]["body"]
    defaulted = schema.default_crd(crd)
    # Same keys in the same (Go struct) order: the spec is written back exactly as recorded.
    assert json.dumps(defaulted["spec"]) == json.dumps(created["spec"])
    assert json.dumps(schema.crd_initial_status(crd)) == json.dumps(created["status"])


def test_established_status_matches_the_recorded_get() -> None:
    established = transcript("02-crd-get-established")["response"]["body"]
    crd = transcript("02-crd-create")["response"]["body"]
    now = established["status"]["conditions"][0]["lastTransitionTime"]
    assert json.dumps(schema.crd_established_status(crd, now)) == json.dumps(established["status"])


def test_established_status_keeps_earlier_transition_times() -> None:
    crd = transcript("02-crd-get-established")["response"]["body"]
    status = schema.crd_established_status(crd, "2030-01-01T00:00:00Z")
    assert [c["lastTransitionTime"] for c in status["conditions"]] == [
        c["lastTransitionTime"] for c in crd["status"]["conditions"]
    ]


def test_resource_types_match_discovery() -> None:
    (rt,) = schema.crd_to_resource_types(gadget_crd())
    (gadgets, _status, _scale) = transcript("01-get-apis-ref-v1")["response"]["body"]["resources"]
    assert (rt.group, rt.version, rt.resource, rt.singular, rt.kind, rt.list_kind) == (
        "ref.example.dev",
        "v1",
        gadgets["name"],
        gadgets["singularName"],
        gadgets["kind"],
        "GadgetList",
    )
    assert rt.namespaced is gadgets["namespaced"] is True
    assert rt.storage_version_hash == gadgets["storageVersionHash"]
    assert rt.has_status
    assert rt.scale == ScaleSpec(".spec.replicas", ".status.replicas", ".status.selector")
    assert rt.printer_columns == [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}]
    assert rt.schema == gadget_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_resource_types_only_for_served_versions_in_priority_order() -> None:
    crd = gadget_crd()
    v1 = crd["spec"]["versions"][0]
    crd["spec"]["versions"] = [
        {**v1, "name": "v1alpha1", "storage": False},
        {**v1, "name": "v1beta1", "storage": False, "served": False},
        {**v1, "name": "v2beta1", "storage": False},
        v1,
    ]
    types = schema.crd_to_resource_types(crd)
    assert [rt.version for rt in types] == ["v1", "v2beta1", "v1alpha1"]
    assert {rt.storage_version_hash for rt in types} == {
        schema.storage_version_hash("ref.example.dev", "v1", "Gadget")
    }


def test_crd_defaults_fill_singular_list_kind_and_conversion() -> None:
    crd = request_body("22-crd-create-name-mismatch")
    spec = schema.default_crd(crd)["spec"]
    assert spec["names"] == {
        "plural": "things",
        "singular": "thing",
        "kind": "Thing",
        "listKind": "ThingList",
    }
    assert spec["conversion"] == {"strategy": "None"}


def test_crd_without_storage_version() -> None:
    crd = gadget_crd()
    crd["spec"]["versions"][0]["storage"] = False
    messages = [str(e) for e in schema.validate_crd(crd)]
    assert "must have exactly one version marked as storage version" in messages[0]
    assert (
        messages[1]
        == "status.storedVersions: Invalid value: []string(nil): must have at least one stored version"
    )


def test_crd_spec_field_errors() -> None:
    crd = gadget_crd()
    crd["metadata"]["name"] = "gadgets.ref"
    crd["spec"]["group"] = "ref"
    crd["spec"]["scope"] = "Global"
    crd["spec"]["names"]["shortNames"] = ["G"]
    version = crd["spec"]["versions"][0]
    version["subresources"]["scale"]["specReplicasPath"] = ".status.replicas"
    version["additionalPrinterColumns"].append({"name": "", "type": "float", "jsonPath": "spec.x"})
    assert [str(e) for e in schema.validate_crd(crd)] == [
        'spec.group: Invalid value: "ref": should be a domain with at least one dot',
        'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
        'spec.names.shortNames[0]: Invalid value: "G": a DNS-1035 label must consist of lower case '
        "alphanumeric characters or '-', start with an alphabetic character, and end with an "
        "alphanumeric character (e.g. 'my-name',  or 'abc-123', "
        "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        'spec.subresources.scale.specReplicasPath: Invalid value: ".status.replicas": '
        "should be a json path under .spec",
        "spec.additionalPrinterColumns[1].name: Required value",
        'spec.additionalPrinterColumns[1].type: Invalid value: "float": '
        "must be one of boolean,date,integer,number,string",
        'spec.additionalPrinterColumns[1].JSONPath: Invalid value: "spec.x": '
        "must be a simple json path starting with .",
    ]


def test_crd_schema_errors_use_per_version_paths_when_versions_differ() -> None:
    crd = gadget_crd()
    v1 = crd["spec"]["versions"][0]
    v2 = copy.deepcopy(v1)
    v2.update(name="v2", storage=False)
    v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"]["default"] = 0
    v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["tags"] = {
        "type": "array",
        "uniqueItems": True,
    }
    crd["spec"]["versions"].append(v2)
    assert [str(e) for e in schema.validate_crd(crd)] == [
        "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[tags].items: "
        "Required value: must be specified",
        "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[tags].uniqueItems: Forbidden: "
        "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
    ]
    del v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["tags"]
    assert [str(e) for e in schema.validate_crd(crd)] == [
        "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[replicas].default: "
        "Invalid value: 0:  in body should be greater than or equal to 1",
    ]


def test_crd_schema_restrictions() -> None:
    crd = gadget_crd()
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    root["properties"]["metadata"] = {"type": "object", "properties": {"labels": {"type": "object"}}}
    root["properties"]["spec"]["properties"]["config"]["x-kubernetes-preserve-unknown-fields"] = False
    root["properties"]["spec"]["properties"]["extra"] = {"type": "object", "default": {"a": 1}}
    messages = [str(e) for e in schema.validate_crd(crd)]
    assert messages[0] == (
        "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything "
        "other than name and generateName, but metadata is implicitly specified"
    )
    assert (
        "spec.validation.openAPIV3Schema.properties[spec].properties[config]."
        "x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
    ) in messages
    root["properties"]["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 20}},
    }
    root["properties"]["spec"]["properties"]["config"]["x-kubernetes-preserve-unknown-fields"] = True
    assert [str(e) for e in schema.validate_crd(crd)] == [
        "spec.validation.openAPIV3Schema.properties[spec].properties[extra].default: "
        "Invalid value: map[string]interface {}{}: must not have unknown fields"
    ]


def test_crd_status_subresource_restricts_the_root_schema() -> None:
    crd = gadget_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["nullable"] = True
    messages = [str(e) for e in schema.validate_crd(crd)]
    assert messages[0].startswith("spec.validation.openAPIV3Schema: Invalid value: ")
    assert messages[0].endswith(
        "only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength "
        "MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs "
        "Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema "
        "if the status subresource is enabled"
    )
    assert (
        messages[1]
        == "spec.validation.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root"
    )


def test_crd_in_protected_group_needs_approval() -> None:
    crd = gadget_crd()
    crd["spec"]["group"] = "ref.k8s.io"
    crd["metadata"]["name"] = "gadgets.ref.k8s.io"
    assert [str(e) for e in schema.validate_crd(crd)] == [
        "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have "
        'approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111'
    ]
    crd["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, testing only"}
    assert schema.validate_crd(crd) == []


def test_crd_update_immutable_fields() -> None:
    old = transcript("02-crd-get-established")["response"]["body"]
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    new["spec"]["names"]["plural"] = "widgets"
    assert [str(e) for e in schema.validate_crd(new, old=old)] == [
        'spec.scope: Invalid value: "Cluster": field is immutable',
        'spec.names.plural: Invalid value: "widgets": field is immutable',
    ]
    # Before the CRD is established, scope and kind may still change.
    old["status"] = schema.crd_initial_status(old)
    assert [e.field for e in schema.validate_crd(new, old=old)] == ["spec.names.plural"]


def test_validate_crd_survives_garbage() -> None:
    errors = schema.validate_crd({"metadata": {"name": "x"}, "spec": {"versions": "nope", "names": 5}})
    assert [e.field for e in errors] == [
        "metadata.name",
        "spec.group",
        "spec.scope",
        "spec.versions",
        "spec.names.plural",
        "spec.names.singular",
        "spec.names.kind",
        "spec.names.listKind",
        "status.storedVersions",
    ]


# ------------------------------------------------------------------------------- engine behaviour

WIDE_SCHEMA: JSON = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}}},
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
                "raw": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}},
                },
                "embedded": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object"}},
                },
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "minItems": 1},
                "ratio": {"type": "number", "multipleOf": 0.5, "exclusiveMaximum": True, "maximum": 10},
                "when": {"type": "string", "format": "date-time"},
                "note": {"type": "string", "nullable": True, "minLength": 2},
                "mode": {"type": "string", "default": "auto"},
                "limits": {
                    "type": "object",
                    "default": {"cpu": 1},
                    "properties": {"cpu": {"type": "integer"}, "mem": {"type": "integer", "default": 2}},
                },
            },
        }
    },
}


def test_prune_follows_preserve_unknown_additional_properties_embedded_and_lists() -> None:
    obj: JSON = {
        "apiVersion": "x/v1",
        "metadata": {"name": "a", "anything": 1},
        "spec": {
            "items": [{"n": 1, "x": 1}, {"n": 2}],
            "labels": {"a": "b", "c": {"deep": 1}},
            "raw": {"free": 1, "known": {"a": "s", "zap": 2}},
            "embedded": {"apiVersion": "v1", "kind": "K", "metadata": {"junk": 1}, "spec": {}, "bogus": 1},
        },
        "zzz": 1,
    }
    assert schema.prune(WIDE_SCHEMA, obj) == [
        "spec.embedded.bogus",
        "spec.items[0].x",
        "spec.labels.c.deep",
        "spec.raw.known.zap",
        "zzz",
    ]
    # The root's metadata is left alone: coercing it is the object-meta code's business.
    assert obj["metadata"] == {"name": "a", "anything": 1}
    assert obj["spec"]["raw"] == {"free": 1, "known": {"a": "s"}}
    assert obj["spec"]["labels"] == {"a": "b", "c": {}}
    assert obj["spec"]["embedded"] == {"apiVersion": "v1", "kind": "K", "metadata": {"junk": 1}, "spec": {}}


def test_defaults_fill_absent_keys_and_non_nullable_nulls_only() -> None:
    obj: JSON = {"spec": {"note": None, "tags": None, "items": [{"n": 1}]}}
    schema.apply_defaults(WIDE_SCHEMA, obj)
    # note is nullable: kept; tags is neither nullable nor defaulted: dropped; mode/limits defaulted,
    # and the default of limits is itself defaulted below.
    assert obj == {
        "spec": {"note": None, "items": [{"n": 1}], "mode": "auto", "limits": {"cpu": 1, "mem": 2}},
    }
    again: JSON = {"spec": {"mode": None, "limits": {"cpu": 4}}}
    schema.apply_defaults(WIDE_SCHEMA, again)
    assert again == {"spec": {"mode": "auto", "limits": {"cpu": 4, "mem": 2}}}
    assert WIDE_SCHEMA["properties"]["spec"]["properties"]["limits"]["default"] == {"cpu": 1}  # not aliased


def test_validation_messages_for_the_other_keywords() -> None:
    obj = {
        "spec": {
            "items": [{"n": 7}],
            "labels": {"a": "abcd", "b": 1},
            "tags": [],
            "ratio": 10.25,
            "when": "yesterday",
            "note": "x",
        }
    }
    assert [str(e) for e in schema.validate(WIDE_SCHEMA, obj)] == [
        'spec.note: Invalid value: "x": spec.note in body should be at least 2 chars long',
        "spec.ratio: Invalid value: 10.25: spec.ratio in body should be a multiple of 0.5",
        "spec.ratio: Invalid value: 10.25: spec.ratio in body should be less than 10",
        'spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"',
        "spec.items[0].n: Invalid value: 7: spec.items[0].n in body should be less than or equal to 5",
        "spec.labels.a: Too long: may not be longer than 3",
        'spec.labels.b: Invalid value: "integer": spec.labels.b in body must be of type string: "integer"',
        "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
    ]
    obj = {"spec": {"tags": ["a", "b", "c"], "when": "2024-02-29T23:59:59.5+01:00", "note": None}}
    assert [str(e) for e in schema.validate(WIDE_SCHEMA, obj)] == [
        "spec.tags: Too many: 3: must have at most 2 items"
    ]


def test_null_is_a_type_error_unless_nullable() -> None:
    obj = {"spec": {"note": None, "mode": None}}
    assert [str(e) for e in schema.validate(WIDE_SCHEMA, obj)] == [
        'spec.mode: Invalid value: "null": spec.mode in body must be of type string: "null"'
    ]


def test_required_and_enum_quirks() -> None:
    sch: JSON = {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "spec": {
                "type": "object",
                "required": ["level"],
                "properties": {
                    "level": {"type": "integer", "enum": [1, 2]},
                    "shape": {"type": "object", "enum": [{"a": 1}]},
                },
            }
        },
    }
    assert [str(e) for e in schema.validate(sch, {})] == ["spec: Required value"]
    assert [str(e) for e in schema.validate(sch, {"spec": {"level": 3, "shape": {"a": 1.0}}})] == [
        'spec.level: Unsupported value: 3: supported values: "1", "2"',
        'spec.shape: Unsupported value: map[string]interface {}{"a":1}: supported values: "{\\"a\\":1}"',
    ]
    # An integral float passes an integer enum entry, as Go's conversion makes it.
    assert schema.validate(sch, {"spec": {"level": 2.0, "shape": {"a": 1}}}) == []


def test_ratcheting_ignores_errors_in_unchanged_values() -> None:
    sch: JSON = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "a": {"type": "string", "maxLength": 2},
                    "b": {"type": "integer", "minimum": 5},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "port": {"type": "integer", "maximum": 10},
                            },
                        },
                    },
                },
            }
        },
    }
    old = {"spec": {"a": "long", "b": 1, "ports": [{"name": "x", "port": 99}, {"name": "y", "port": 1}]}}
    new = {"spec": {"a": "long", "b": 2, "ports": [{"name": "y", "port": 50}, {"name": "x", "port": 99}]}}
    assert [e.field for e in schema.validate(sch, new)] == [
        "spec.a",
        "spec.b",
        "spec.ports[0].port",
        "spec.ports[1].port",
    ]
    assert [e.field for e in schema.validate(sch, new, old=old)] == ["spec.b", "spec.ports[0].port"]
    assert schema.validate(sch, old, old=copy.deepcopy(old)) == []


def test_list_type_set_and_map_duplicates() -> None:
    sch: JSON = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "default": "main"},
                                "port": {"type": "integer"},
                            },
                        },
                    },
                },
            }
        },
    }
    obj = {
        "spec": {
            "tags": ["a", "b", "a", "a", "b"],
            "ports": [{"port": 1}, {"name": "main", "port": 2}, {"name": "x"}, {"name": "x"}],
        }
    }
    assert [str(e) for e in schema.list_type_errors(sch, obj)] == [
        'spec.ports[1]: Duplicate value: map[string]interface {}{"name":"main"}',
        'spec.ports[3]: Duplicate value: map[string]interface {}{"name":"x"}',
        'spec.tags[2]: Duplicate value: "a"',
        'spec.tags[4]: Duplicate value: "b"',
    ]
    assert schema.list_type_errors(sch, {"spec": {"tags": ["a", "b"], "ports": [{"name": "x"}]}}) == []


def test_junctors() -> None:
    sch: JSON = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"v": {"type": "string", "anyOf": [{"pattern": "^a"}, {"maxLength": 1}]}},
            }
        },
    }
    errors = schema.validate(sch, {"spec": {"v": "zz"}})
    assert str(errors[0]) == 'Invalid value: "": spec.v must validate at least one schema (anyOf)'
    assert schema.validate(sch, {"spec": {"v": "abc"}}) == []


def test_scale_accessor_errors() -> None:
    scale = ScaleSpec(".spec.replicas", ".status.replicas", ".status.selector")

    def messages(obj: JSON, *, include_spec: bool = True) -> list[str]:
        return [str(e) for e in schema.scale_accessor_errors(scale, obj, include_spec=include_spec)]

    assert messages({"spec": {"replicas": True}}) == [
        ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: "
        "true is of the type bool, expected int64"
    ]
    assert messages({"spec": {"replicas": 1e6}, "status": {"selector": 5}}) == [
        ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: "
        "1e+06 is of the type float64, expected int64",
        '.status.selector: Invalid value: "": .status.selector accessor error: '
        "5 is of the type int64, expected string",
    ]
    assert messages({"spec": {"replicas": 2**31}, "status": {"replicas": [1, "a"]}}) == [
        ".spec.replicas: Invalid value: 2147483648: should be less than or equal to 2147483647",
        ".status.replicas: Invalid value: 0: .status.replicas accessor error: [1 a] is of the type "
        "[]interface {}, expected int64",
    ]
    assert messages({"spec": {"replicas": -1}}, include_spec=False) == []
    assert messages({"spec": None}) == []
    assert schema.scale_accessor_errors(None, {"spec": {"replicas": "x"}}) == []


@pytest.mark.parametrize(
    ("value", "as_v", "as_json"),
    [
        (2.0, "2", "2"),
        (2.5, "2.5", "2.5"),
        (100000.0, "100000", "100000"),
        (1e6, "1e+06", "1000000"),
        (1.5e-7, "1.5e-07", "1.5e-7"),
        (1e-5, "1e-05", "0.00001"),
        (1e21, "1e+21", "1e+21"),
        (-3.25, "-3.25", "-3.25"),
    ],
)
def test_go_float_formatting(value: float, as_v: str, as_json: str) -> None:
    assert go_float(value) == as_v
    assert schema.go_json(value) == as_json


def test_version_priority() -> None:
    names = ["v1alpha1", "v2", "v1beta2", "v1", "foo", "v1beta1", "v10"]
    assert sorted(names, key=schema.version_priority) == [
        "v10",
        "v2",
        "v1",
        "v1beta2",
        "v1beta1",
        "v1alpha1",
        "foo",
    ]
