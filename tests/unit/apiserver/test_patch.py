"""PATCH bodies: decoding, JSON patch, merge patch and strategic merge patch.

Expected Status bodies and results are excerpts of the ``09-gadget-patch-*`` and
``17-lease-strategic-patch`` transcripts in ``tests/testdata/kube-apiserver``; the strategic
merge cases follow apimachinery's documented list semantics.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.errors import StatusError
from apiserver.patch import (
    decode_patch,
    decode_patch_document,
    json_patch,
    merge_patch,
    patch_kind,
    strategic_merge_patch,
)

GENERIC_422 = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server rejected our request due to an error in our request",
    "reason": "Invalid",
    "details": {},
    "code": 422,
}


def failure(message: str, code: int = 400, reason: str | None = "BadRequest") -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    body["message"] = message
    if reason:
        body["reason"] = reason
    body["code"] = code
    return body


def status_of(call: Any, *args: Any, **kwargs: Any) -> Any:
    with pytest.raises(StatusError) as caught:
        call(*args, **kwargs)
    return caught.value.status()


# The Gadget g1 as it was before 09-gadget-patch-json-patch (spec.size "large").
G1: dict[str, Any] = {
    "apiVersion": "ref.example.dev/v1",
    "kind": "Gadget",
    "metadata": {
        "name": "g1",
        "namespace": "ref",
        "labels": {"a": "b", "bump": "1"},
        "resourceVersion": "255",
    },
    "spec": {"config": {"new": "v"}, "name": "abc", "port": 8080, "replicas": 3, "size": "large"},
}

# ------------------------------------------------------------------------------ media types

CR_415 = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
)


@pytest.mark.parametrize(
    "content_type",
    [None, "application/json", "application/strategic-merge-patch+json"],
)
def test_custom_resources_accept_only_three_patch_types(content_type: str | None) -> None:
    # 09-gadget-patch-no-content-type, -content-type-json, -strategic-415
    assert status_of(patch_kind, content_type, strategic=False) == failure(
        CR_415, 415, "UnsupportedMediaType"
    )


def test_patch_kinds() -> None:
    assert patch_kind("application/merge-patch+json; charset=utf-8", strategic=False) == "merge"
    assert patch_kind("application/json-patch+json", strategic=False) == "json"
    assert patch_kind("application/apply-patch+yaml", strategic=False) == "apply"
    assert patch_kind("application/strategic-merge-patch+json", strategic=True) == "strategic"
    assert status_of(patch_kind, "text/plain", strategic=True)["message"].endswith(
        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, "
        "application/apply-patch+yaml"
    )


# ------------------------------------------------------------------------------ decoding


def test_truncated_merge_patch() -> None:  # 09-gadget-patch-merge-invalid-json
    assert status_of(decode_patch, "merge", b'{"spec": {"replicas": 3,') == failure(
        "error decoding patch: unexpected end of JSON input"
    )


def test_json_patch_that_is_an_object() -> None:  # 09-gadget-patch-json-patch-invalid-json
    assert status_of(decode_patch, "json", b'{"op":"replace"}') == failure(
        "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
    )


def test_json_patch_operation_member_types() -> None:
    assert status_of(decode_patch, "json", b'[{"op": 5, "path": "/a"}]') == failure(
        "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op "
        "of type string"
    )
    assert status_of(decode_patch, "json", b'["add"]') == failure(
        "error decoding patch: json: cannot unmarshal string into Go value of type handlers.jsonPatchOp"
    )


def test_json_patch_strict_problems() -> None:
    decoded = decode_patch_document(
        "json", b'[{"op": "add", "op": "add", "path": "/a", "value": 1, "extra": 2}]'
    )
    assert decoded.problems == ['json patch duplicate field "[0].op"', 'json patch unknown field "[0].extra"']


def test_merge_patch_that_is_not_an_object() -> None:
    assert status_of(decode_patch, "merge", b"[1]") == failure(
        "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"
    )
    assert decode_patch_document("merge", b'{"a": 1, "a": 2}').problems == ['duplicate field "a"']


def test_strategic_patch_errors_have_no_prefix() -> None:
    assert status_of(decode_patch, "strategic", b'{"spec":') == failure("unexpected end of JSON input")
    assert status_of(decode_patch, "strategic", b'"x"') == failure(
        "json: cannot unmarshal string into Go value of type map[string]interface {}"
    )


def test_null_patches_change_nothing() -> None:
    assert decode_patch("merge", b"null") == {}
    assert decode_patch("strategic", b"null") == {}
    assert decode_patch("json", b"null") == []


def test_apply_patch_is_yaml() -> None:
    assert decode_patch("apply", b"apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b\n") == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "data": {"a": "b"},
    }
    assert status_of(decode_patch, "apply", b"- a\n") == failure(
        "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
        "array into Go value of type map[string]interface {}"
    )


def test_ignore_mode_skips_the_strict_predecode() -> None:
    assert status_of(decode_patch_document, "json", b"{}", field_validation="Ignore") == failure(
        "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
    )


# ------------------------------------------------------------------------------ merge patch


def test_merge_patch_sets_and_deletes() -> None:  # 09-gadget-patch-merge-spec
    before = copy.deepcopy(G1)
    before["spec"]["config"] = {"x": {"y": 1}}
    before["spec"]["replicas"] = 1
    result = merge_patch(before, {"spec": {"replicas": 3, "config": {"x": None, "new": "v"}}})
    assert result["spec"] == {
        "config": {"new": "v"},
        "name": "abc",
        "port": 8080,
        "replicas": 3,
        "size": "large",
    }
    assert before["spec"]["config"] == {"x": {"y": 1}}, "the target must not be mutated"


def test_merge_patch_removing_finalizers() -> None:  # 12-remove-finalizer
    result = merge_patch({"metadata": {"name": "g", "finalizers": ["x"]}}, {"metadata": {"finalizers": None}})
    assert result == {"metadata": {"name": "g"}}


def test_merge_patch_prunes_nulls_in_new_values_but_not_in_arrays() -> None:
    result = merge_patch({"a": 1}, {"b": {"c": None, "d": [None, {"e": None}]}})
    assert result == {"a": 1, "b": {"d": [None, {}]}}


def test_merge_patch_non_object_replaces() -> None:
    assert merge_patch({"a": {"b": 1}}, {"a": [1]}) == {"a": [1]}
    assert merge_patch({"a": "s"}, {"a": {"b": 1, "c": None}}) == {"a": {"b": 1}}
    assert merge_patch({"a": 1}, [1, 2]) == [1, 2]


# ------------------------------------------------------------------------------ JSON patch


def test_json_patch_replace_and_add() -> None:  # 09-gadget-patch-json-patch
    before = copy.deepcopy(G1)
    ops = [
        {"op": "replace", "path": "/spec/size", "value": "small"},
        {"op": "add", "path": "/metadata/labels/jp", "value": "yes"},
    ]
    result = json_patch(before, ops)
    assert result["spec"]["size"] == "small"
    assert result["metadata"]["labels"] == {"a": "b", "bump": "1", "jp": "yes"}
    assert before == G1, "the target must not be mutated"


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "test", "path": "/spec/size", "value": "small"}],  # 09-gadget-patch-json-patch-test-fail
        [{"op": "replace", "path": "/spec/missing/deep", "value": 1}],  # 09-gadget-patch-json-patch-bad-path
        [{"op": "remove", "path": "/metadata/labels/nosuch"}],  # 09-gadget-patch-json-patch-remove-missing
        [{"op": "frobnicate", "path": "/a"}],
        [{"path": "/a"}],
        [None],
        [{"op": "test", "path": "/spec/port", "value": True}],
    ],
)
def test_failing_json_patch_is_the_generic_422(ops: list[Any]) -> None:
    assert status_of(json_patch, G1, ops) == GENERIC_422


def test_too_many_json_patch_operations() -> None:
    ops = [{"op": "test", "path": "/kind", "value": "Gadget"}] * 10001
    assert status_of(json_patch, G1, ops) == failure(
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001",
        413,
        "RequestEntityTooLarge",
    )


# ------------------------------------------------------------------------------ strategic merge patch

POD_KEYS = {
    "metadata.finalizers": "",
    "metadata.ownerReferences": "uid",
    "spec.containers": "name",
    "spec.containers[].ports": "containerPort",
    "spec.containers[].env": "name",
    "status.conditions": "type",
}


def pod(**spec: Any) -> dict[str, Any]:
    return {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}, "spec": spec}


def test_lease_strategic_patch_merges_maps() -> None:  # 17-lease-strategic-patch
    lease = {
        "kind": "Lease",
        "apiVersion": "coordination.k8s.io/v1",
        "metadata": {"name": "ref-lock", "namespace": "ref"},
        "spec": {
            "holderIdentity": "node-b_5678",
            "leaseDurationSeconds": 15,
            "renewTime": "2026-11-22T04:30:06.000001Z",
        },
    }
    result = strategic_merge_patch(lease, {"spec": {"leaseTransitions": 1}}, {})
    assert result["spec"] == {
        "holderIdentity": "node-b_5678",
        "leaseDurationSeconds": 15,
        "renewTime": "2026-11-22T04:30:06.000001Z",
        "leaseTransitions": 1,
    }
    assert "leaseTransitions" not in lease["spec"], "the target must not be mutated"


def test_keyed_list_merges_items_by_key() -> None:
    before = pod(containers=[{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1", "args": ["x"]}])
    result = strategic_merge_patch(
        before, {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}, POD_KEYS
    )
    assert result["spec"]["containers"] == [
        {"name": "a", "image": "a:1"},
        {"name": "b", "image": "b:2", "args": ["x"]},
    ]


def test_new_keyed_item_goes_before_the_live_items() -> None:
    # Without $setElementOrder, items the live list does not know are placed first, as upstream does.
    before = pod(containers=[{"name": "a"}, {"name": "b"}])
    result = strategic_merge_patch(
        before, {"spec": {"containers": [{"name": "c", "image": "c", "x": None}]}}, POD_KEYS
    )
    assert result["spec"]["containers"] == [{"name": "c", "image": "c"}, {"name": "a"}, {"name": "b"}]


def test_set_element_order_decides_the_order() -> None:
    before = pod(containers=[{"name": "a"}, {"name": "b"}])
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            "containers": [{"name": "c", "image": "c"}],
        }
    }
    result = strategic_merge_patch(before, patch, POD_KEYS)
    assert result["spec"] == {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c", "image": "c"}]}


def test_nested_keyed_lists_use_item_paths() -> None:
    before = pod(
        containers=[{"name": "a", "ports": [{"containerPort": 80, "name": "http"}], "args": ["1", "2"]}]
    )
    patch = {
        "spec": {
            "containers": [{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}], "args": ["3"]}]
        }
    }
    container = strategic_merge_patch(before, patch, POD_KEYS)["spec"]["containers"][0]
    assert container["ports"] == [{"containerPort": 80, "name": "http", "protocol": "TCP"}]
    assert container["args"] == ["3"], "a list without a merge key is replaced"


def test_delete_directive_in_keyed_list() -> None:
    before = pod(containers=[{"name": "a"}, {"name": "b"}, {"name": "c"}])
    patch = {"spec": {"containers": [{"name": "b", "$patch": "delete"}]}}
    assert strategic_merge_patch(before, patch, POD_KEYS)["spec"]["containers"] == [
        {"name": "a"},
        {"name": "c"},
    ]


def test_replace_directive_in_keyed_list() -> None:
    before = pod(containers=[{"name": "a", "image": "1"}, {"name": "b"}])
    patch = {"spec": {"containers": [{"name": "z", "image": "2"}, {"$patch": "replace"}]}}
    assert strategic_merge_patch(before, patch, POD_KEYS)["spec"]["containers"] == [
        {"name": "z", "image": "2"}
    ]


def test_map_directives_replace_and_delete() -> None:
    before = {"metadata": {"labels": {"a": "1", "b": "2"}, "annotations": {"x": "y"}}}
    patch = {"metadata": {"labels": {"c": "3", "$patch": "replace"}, "annotations": {"$patch": "delete"}}}
    assert strategic_merge_patch(before, patch, {}) == {"metadata": {"labels": {"c": "3"}, "annotations": {}}}


def test_primitive_set_merge_and_delete_from_primitive_list() -> None:
    before = {"metadata": {"finalizers": ["a", "b"]}}
    merged = strategic_merge_patch(before, {"metadata": {"finalizers": ["b", "c"]}}, POD_KEYS)
    assert merged["metadata"]["finalizers"] == ["a", "b", "c"]
    removed = strategic_merge_patch(
        before, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}, POD_KEYS
    )
    assert removed["metadata"]["finalizers"] == ["b"]


def test_scalars_compare_with_go_types() -> None:
    before = {"metadata": {"finalizers": [1, 2]}}
    # Live-only items are slotted before the first patch item the live list has after them, so
    # 3 (unknown to the live list) follows 1 and 2 comes last, as upstream orders it.
    merged = strategic_merge_patch(before, {"metadata": {"finalizers": [1, 3]}}, POD_KEYS)
    assert merged["metadata"]["finalizers"] == [1, 3, 2]
    with pytest.raises(StatusError) as caught:
        strategic_merge_patch(before, {"metadata": {"finalizers": [1.0]}}, POD_KEYS)
    assert caught.value.status() == failure("list element types are not identical: [[1 2] [1]]", 500, None)


def test_retain_keys_clears_other_fields() -> None:
    before = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert strategic_merge_patch(before, patch, {}) == {"spec": {"strategy": {"type": "Recreate"}}}


def test_null_deletes_and_unkeyed_lists_replace() -> None:
    before = {"spec": {"a": 1, "b": [1, 2], "c": {"d": 1}}}
    result = strategic_merge_patch(before, {"spec": {"a": None, "b": [3], "missing": None}}, {})
    assert result == {"spec": {"b": [3], "c": {"d": 1}}}


def test_conditions_merge_by_type() -> None:
    before = {
        "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Synced", "status": "True"}]}
    }
    patch = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    result = strategic_merge_patch(before, patch, POD_KEYS)
    assert result["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "Synced", "status": "True"},
    ]


@pytest.mark.parametrize(
    ("patch", "status"),
    [
        (
            {"metadata": {"$retainKeys": "name"}},
            failure("invalid patch format of retainKeys"),
        ),
        (
            {"metadata": {"$retainKeys": ["name"], "labels": {}}},
            failure("invalid patch format of retainKeys"),
        ),
        (
            {"metadata": {"$deleteFromPrimitiveListX/finalizers": ["a"]}},
            failure("invalid patch format of primitive list"),
        ),
        (
            {"spec": {"containers": [{"image": "x"}]}},
            failure("map: map[image:x] does not contain declared merge key: name", 500, None),
        ),
        (
            {"spec": {"containers": [{"name": "a", "$patch": "merge"}]}},
            failure("merging lists cannot yet be specified in the patch", 500, None),
        ),
        (
            {"spec": {"$patch": "frob"}},
            failure("unknown patch type: frob in map: map[$patch:frob]", 500, None),
        ),
        (
            {"spec": {"$setElementOrder/containers": "a"}},
            failure("expected a []interface {}, but received a string", 500, None),
        ),
    ],
)
def test_malformed_strategic_patches(patch: dict[str, Any], status: dict[str, Any]) -> None:
    before = pod(containers=[{"name": "a"}])
    assert status_of(strategic_merge_patch, before, patch, POD_KEYS) == status


def test_list_of_lists_is_the_generic_422() -> None:
    # Only detected when the first element seen is a list (live items come first).
    assert (
        status_of(strategic_merge_patch, pod(containers=[]), {"spec": {"containers": [["a"]]}}, POD_KEYS)
        == GENERIC_422
    )
    assert status_of(
        strategic_merge_patch, pod(containers=[{"name": "a"}]), {"spec": {"containers": [["a"]]}}, POD_KEYS
    ) == failure("list element types are not identical: [[map[name:a]] [[a]]]", 500, None)


def test_strategic_patch_does_not_mutate_inputs() -> None:
    before = pod(containers=[{"name": "a", "env": [{"name": "X", "value": "1"}]}])
    patch = {"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]}}
    saved_before, saved_patch = copy.deepcopy(before), copy.deepcopy(patch)
    result = strategic_merge_patch(before, patch, POD_KEYS)
    assert result["spec"]["containers"][0]["env"] == [
        {"name": "Y", "value": "2"},
        {"name": "X", "value": "1"},
    ]
    assert before == saved_before and patch == saved_patch
