"""Alternate representations (Table, PartialObjectMetadata, YAML) against kube-apiserver's transcripts.

The Gadget type is built by hand from the CRD of ``02-crd-create``; objects come from the recorded
answers, and every rendered document is compared as JSON *text* so that key order counts too.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml

from apiserver import tables
from apiserver.errors import StatusError
from apiserver.registry import ResourceType, ScaleSpec
from runtime.goformat import go_float
from runtime.jsoncodec import JSON
from tests.support.reference import transcript_dir

REFERENCE = transcript_dir()

KUBECTL_TABLE = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,"
    "application/json"
)
NOW = datetime(2026, 11, 22, 5, 0, 0, tzinfo=UTC)


def transcript(name: str) -> JSON:
    loaded: JSON = json.loads((REFERENCE / f"{name}.json").read_text())
    return loaded


def text(doc: Any) -> str:
    """Order-sensitive form for comparisons (dict equality would ignore key order)."""
    return json.dumps(doc)


def gadget_type(printer_columns: list[JSON] | None = None) -> ResourceType:
    """gadgets.ref.example.dev/v1 as 02-crd-create declares it."""
    return ResourceType(
        group="ref.example.dev",
        version="v1",
        resource="gadgets",
        kind="Gadget",
        singular="gadget",
        namespaced=True,
        list_kind="GadgetList",
        has_status=True,
        scale=ScaleSpec(".spec.replicas", ".status.replicas", ".status.selector"),
        printer_columns=(
            [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}]
            if printer_columns is None
            else printer_columns
        ),
    )


def builtin_type(group: str, resource: str, kind: str, *, namespaced: bool = True) -> ResourceType:
    return ResourceType(
        group=group,
        version="v1",
        resource=resource,
        kind=kind,
        singular=kind.lower(),
        namespaced=namespaced,
        builtin=True,
    )


def gadget(
    name: str, *, created: str = "2026-11-22T04:19:17Z", spec: JSON | None = None, **meta: Any
) -> JSON:
    return {
        "apiVersion": "ref.example.dev/v1",
        "kind": "Gadget",
        "metadata": {"creationTimestamp": created, "name": name, "namespace": "ref", **meta},
        "spec": spec if spec is not None else {"replicas": 1, "size": "small"},
    }


def all_gadgets() -> JSON:
    """The five gadgets of 13-list-all, at the list resourceVersion 13-list-as-table was answered with."""
    listed: JSON = transcript("13-list-all")["response"]["body"]
    listed["metadata"] = {"continue": "", "resourceVersion": "306"}
    return listed


def only_label(listed: JSON, key: str, value: str) -> JSON:
    items = [i for i in listed["items"] if i["metadata"].get("labels", {}).get(key) == value]
    return {**listed, "items": items}


# ------------------------------------------------------------------------------------ transcripts


def test_get_as_table_matches_transcript() -> None:
    case = transcript("13-get-as-table")
    obj = transcript("13-get-accept-wildcard")["response"]["body"]
    rep = tables.negotiate(case["request"]["headers"]["Accept"])

    rendered = tables.render_object(rep, gadget_type(), obj, case["request"]["query"], now=NOW)

    assert rendered is not None
    assert rendered.content_type == "application/json"
    assert text(json.loads(rendered.body)) == text(case["response"]["body"])
    assert text(tables.table_for_object(gadget_type(), obj, {})) == text(case["response"]["body"])


def test_list_as_table_matches_transcript() -> None:
    case = transcript("13-list-as-table")

    doc = tables.table_for_list(gadget_type(), all_gadgets(), case["request"]["query"], now=NOW)

    assert text(doc) == text(case["response"]["body"])


def test_list_as_table_with_include_object_matches_transcript() -> None:
    case = transcript("13-list-as-table-includeObject")
    listed = only_label(all_gadgets(), "a", "x")
    rep = tables.negotiate(case["request"]["headers"]["Accept"])

    rendered = tables.render_list(rep, gadget_type(), listed, case["request"]["query"], now=NOW)

    assert rendered is not None
    assert text(json.loads(rendered.body)) == text(case["response"]["body"])


def test_list_partial_object_metadata_matches_transcript() -> None:
    case = transcript("13-list-partial-metadata")
    listed = only_label(all_gadgets(), "a", "x")
    rep = tables.negotiate(case["request"]["headers"]["Accept"])
    assert rep.kind == tables.PARTIAL_OBJECT_METADATA_LIST

    rendered = tables.render_list(rep, gadget_type(), listed, case["request"]["query"])

    assert rendered is not None
    assert text(json.loads(rendered.body)) == text(case["response"]["body"])


def test_list_yaml_matches_transcript_byte_for_byte() -> None:
    case = transcript("13-list-yaml")
    listed = only_label(all_gadgets(), "a", "x")
    listed["metadata"] = {"resourceVersion": "306"}  # CR lists gain continue: "" on the wire
    rep = tables.negotiate(case["request"]["headers"]["Accept"])

    rendered = tables.render_list(rep, gadget_type(), listed, {})

    assert rendered is not None
    assert rendered.content_type == case["response"]["headers"]["Content-Type"]
    assert rendered.body.decode() == case["response"]["body"]


def _gadget_from_partial(partial: JSON, spec: JSON) -> JSON:
    return {
        "apiVersion": "ref.example.dev/v1",
        "kind": "Gadget",
        "metadata": partial["metadata"],
        "spec": spec,
    }


def test_watch_as_table_sends_column_definitions_only_first() -> None:
    case = transcript("22-watch-as-table")
    events = case["response"]["events"]
    objects = [
        _gadget_from_partial(events[0]["object"]["rows"][0]["object"], {"replicas": 4, "size": "small"}),
        _gadget_from_partial(events[1]["object"]["rows"][0]["object"], {"replicas": 1, "size": "small"}),
    ]
    rep = tables.negotiate(case["request"]["headers"]["Accept"], watch=True)
    renderer = tables.WatchEventRenderer(rep, gadget_type(), case["request"]["query"], now=NOW)

    out = [
        {"type": e["type"], "object": renderer.render(e["type"], o)}
        for e, o in zip(events, objects, strict=True)
    ]

    assert renderer.alternate
    assert text(out) == text(events)
    # The server's own entry point gives the same documents.
    assert text(tables.table_for_watch_event(gadget_type(), objects[1], {}, include_columns=False)) == text(
        events[1]["object"]
    )


def test_watch_as_partial_object_metadata_matches_transcript() -> None:
    case = transcript("22-watch-as-partialobjectmetadata")
    events = case["response"]["events"]
    rep = tables.negotiate(case["request"]["headers"]["Accept"], watch=True)
    renderer = tables.WatchEventRenderer(rep, gadget_type(), case["request"]["query"])

    out = [
        {
            "type": e["type"],
            "object": renderer.render(e["type"], _gadget_from_partial(e["object"], {"replicas": 4})),
        }
        for e in events
    ]

    assert text(out) == text(events)


def test_protobuf_only_is_not_acceptable_with_the_recorded_message() -> None:
    case = transcript("13-get-protobuf-only")
    rep = tables.negotiate(case["request"]["headers"]["Accept"])
    assert rep.kind == tables.NOT_ACCEPTABLE

    with pytest.raises(StatusError) as caught:
        tables.render_object(rep, gadget_type(), gadget("g1"), {})

    status = caught.value.status()
    assert caught.value.code == case["response"]["status"] == 406
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "only the following media types are accepted: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf",
        "reason": "NotAcceptable",
        "code": 406,
    }
    # The recorded (protobuf) body carries the very same message and reason.
    raw = base64.b64decode(case["response"]["body"]["<binary-base64>"])
    assert status["message"].encode() in raw
    assert b"NotAcceptable" in raw


# ------------------------------------------------------------------------------------ negotiation


@pytest.mark.parametrize(
    ("accept", "kind", "media_type", "group_version"),
    [
        ("", "json", "application/json", ""),
        ("*/*", "json", "application/json", ""),
        ("application/*", "json", "application/json", ""),
        ("application/yaml", "yaml", "application/yaml", ""),
        ("application/yaml, application/json", "yaml", "application/yaml", ""),
        ("application/yaml;q=0.5, application/json", "json", "application/json", ""),
        ("application/json;q=0.1, application/yaml;q=0.9", "yaml", "application/yaml", ""),
        ("*/*;q=0.8, application/yaml", "yaml", "application/yaml", ""),
        (KUBECTL_TABLE, "table", "application/json", "meta.k8s.io/v1"),
        (
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
            "table",
            "application/json",
            "meta.k8s.io/v1beta1",
        ),
        ("application/yaml;as=Table;v=v1;g=meta.k8s.io", "table", "application/yaml", "meta.k8s.io/v1"),
        # kubectl >= 1.33 puts protobuf first; Tables are not written in protobuf here, so the JSON
        # clause wins.
        (
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io",
            "table",
            "application/json",
            "meta.k8s.io/v1",
        ),
        (
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
            "partial-object-metadata-list",
            "application/json",
            "meta.k8s.io/v1",
        ),
        (
            "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
            "partial-object-metadata",
            "application/json",
            "meta.k8s.io/v1",
        ),
        # A conversion the server does not know, or without group/version, is skipped, not an error.
        ("application/json;as=Table, application/json", "json", "application/json", ""),
        ("application/json;as=Table;v=v2;g=meta.k8s.io, application/yaml", "yaml", "application/yaml", ""),
        ("application/json;as=Deployment;v=v1;g=apps, application/json", "json", "application/json", ""),
        ("application/json;stream=watch", "json", "application/json", ""),
        ("application/json;stream=other, application/yaml", "yaml", "application/yaml", ""),
        ("application/json;charset=utf-8", "json", "application/json", ""),
        ("application/vnd.kubernetes.protobuf", "not-acceptable", "", ""),
        ("text/html", "not-acceptable", "", ""),
        ("application/json;q=0", "not-acceptable", "", ""),
        ("application/json;q=0, */*", "yaml", "application/yaml", ""),
        ("application/yaml;stream=watch", "not-acceptable", "", ""),
    ],
)
def test_negotiate(accept: str, kind: str, media_type: str, group_version: str) -> None:
    rep = tables.negotiate(accept)

    assert (rep.kind, rep.media_type, rep.group_version) == (kind, media_type, group_version)
    assert tables.wants_table(accept) == (kind == "table")


def test_negotiate_for_a_watch_refuses_yaml_like_kube_without_falling_back() -> None:
    assert tables.negotiate("application/yaml, application/json", watch=True).kind == tables.NOT_ACCEPTABLE
    assert tables.negotiate("application/json", watch=True).kind == tables.JSON_REPRESENTATION
    assert tables.negotiate(KUBECTL_TABLE, watch=True).kind == tables.TABLE

    error = tables.not_acceptable_error(watch=True)

    assert error.code == 406
    assert error.message == (
        "only the following media types are accepted: "
        "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    )


def test_partial_object_metadata_shape_mismatch_is_406() -> None:
    single = tables.negotiate("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io")
    listed = tables.negotiate("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io")
    lease = builtin_type("coordination.k8s.io", "leases", "Lease")

    with pytest.raises(StatusError) as on_list:
        tables.render_list(single, gadget_type(), {"items": []}, {})
    with pytest.raises(StatusError) as on_object:
        tables.render_object(listed, lease, {"metadata": {"name": "x"}}, {})

    assert (on_list.value.code, on_list.value.reason) == (406, "NotAcceptable")
    assert on_list.value.message == (
        "you requested PartialObjectMetadata, but the requested object is a list "
        "(*unstructured.UnstructuredList)"
    )
    assert on_object.value.message == (
        "you requested PartialObjectMetadataList, but the requested object is not a list "
        "(*coordination.Lease)"
    )


def test_plain_json_is_left_to_the_caller() -> None:
    rep = tables.negotiate("application/json")

    assert tables.render_object(rep, gadget_type(), gadget("a"), {}) is None
    assert tables.render_list(rep, gadget_type(), {"items": []}, {}) is None


# ------------------------------------------------------------------------------------ tables


def test_include_object_none_and_object_and_bad_value() -> None:
    listed: JSON = {
        "kind": "GadgetList",
        "apiVersion": "ref.example.dev/v1",
        "metadata": {"resourceVersion": "9"},
        "items": [gadget("b", spec={"size": "small", "replicas": 2}), gadget("a")],
    }

    none = tables.table_for_list(gadget_type(), listed, {"includeObject": "None"}, now=NOW)
    whole = tables.table_for_list(gadget_type(), listed, {"includeObject": "Object"}, now=NOW)

    assert [r["object"] for r in none["rows"]] == [None, None]
    assert [r["cells"] for r in none["rows"]] == [["b", 2], ["a", 1]]
    assert list(whole["rows"][0]["object"]) == ["apiVersion", "kind", "metadata", "spec"]
    assert list(whole["rows"][0]["object"]["spec"]) == ["replicas", "size"]  # custom resources sort keys
    with pytest.raises(StatusError) as caught:
        tables.table_for_list(gadget_type(), listed, {"includeObject": "Everything"})
    assert caught.value.code == 400
    assert caught.value.reason == "BadRequest"
    assert caught.value.message == (
        'Unable to convert to Table as requested: includeObject: Unsupported value: "Everything": '
        'supported values: "Metadata", "None", "Object"'
    )


def test_table_list_metadata_carries_continue_and_remaining_count() -> None:
    listed = {"metadata": {"resourceVersion": "7", "continue": "tok", "remainingItemCount": 3}, "items": []}

    doc = tables.table_for_list(gadget_type(), listed, {})

    assert doc["metadata"] == {"resourceVersion": "7", "continue": "tok", "remainingItemCount": 3}
    assert doc["rows"] == []


def test_custom_resource_without_printer_columns_gets_name_and_age() -> None:
    rt = gadget_type(printer_columns=[])
    obj = gadget("g", created=(NOW - timedelta(days=2, hours=3, minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ"))

    doc = tables.table_for_object(rt, obj, {}, now=NOW)

    assert [(c["name"], c["type"], c["format"]) for c in doc["columnDefinitions"]] == [
        ("Name", "string", "name"),
        ("Age", "date", ""),
    ]
    assert doc["columnDefinitions"][1]["description"].startswith("CreationTimestamp is a timestamp")
    assert doc["rows"][0]["cells"] == ["g", "2d3h"]


def test_printer_columns_types_paths_and_missing_values() -> None:
    columns: list[JSON] = [
        {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
        {"name": "Reason", "type": "string", "jsonPath": ".status.conditions[?(@.type=='Ready')].reason"},
        {"name": "First", "type": "string", "jsonPath": ".spec.hosts[0]"},
        {"name": "Last", "type": "string", "jsonPath": ".spec.hosts[-1]", "priority": 1},
        {"name": "Config", "type": "string", "jsonPath": ".spec.config"},
        {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "format": "float"},
        {"name": "Whole", "type": "number", "jsonPath": ".spec.whole"},
        {"name": "Count", "type": "integer", "jsonPath": ".spec.count"},
        {"name": "On", "type": "boolean", "jsonPath": ".spec.enabled", "description": "Switched on."},
        {"name": "Since", "type": "date", "jsonPath": ".status.since"},
        {"name": "App", "type": "string", "jsonPath": ".metadata.labels.app\\.kubernetes\\.io/name"},
        {"name": "Missing", "type": "integer", "jsonPath": ".spec.nothing.here"},
        {"name": "Wrong", "type": "integer", "jsonPath": ".spec.hosts[0]"},
        {"name": "Quoted", "type": "string", "jsonPath": ".spec['hosts'][1]"},
    ]
    obj = gadget(
        "g",
        labels={"app.kubernetes.io/name": "web"},
        spec={
            "hosts": ["a.example", "b.example", "c.example"],
            "config": {"z": 1, "a": "<x>"},
            "ratio": 0.25,
            "whole": 3.0,
            "count": 7.9,
            "enabled": True,
        },
    )
    obj["status"] = {
        "since": "2026-11-22T04:57:00Z",
        "conditions": [
            {"type": "Synced", "status": "False"},
            {"type": "Ready", "status": "True", "reason": "AllGood"},
        ],
    }

    doc = tables.table_for_object(gadget_type(columns), obj, {}, now=NOW)

    assert doc["rows"][0]["cells"] == [
        "g",
        "True",
        "AllGood",
        "a.example",
        "c.example",
        '{"a":"\\u003cx\\u003e","z":1}',
        0.25,
        3,
        7,
        True,
        "3m",
        "web",
        None,
        None,
        "b.example",
    ]
    definitions = doc["columnDefinitions"]
    assert definitions[4]["priority"] == 1
    assert definitions[6]["format"] == "float"
    assert definitions[9]["description"] == "Switched on."
    assert definitions[1]["description"] == (
        "Custom resource definition column (in JSONPath format): "
        '.status.conditions[?(@.type=="Ready")].status'
    )


def test_string_column_prints_go_values() -> None:
    columns = [
        {"name": n, "type": "string", "jsonPath": f".spec.{n}"} for n in ("i", "f", "big", "b", "n", "l")
    ]
    obj = gadget("g", spec={"i": 5, "f": 2.5, "big": 1234567.0, "b": False, "n": None, "l": [1, "x"]})

    cells = tables.table_for_object(gadget_type(columns), obj, {})["rows"][0]["cells"]

    assert cells[1:] == ["5", "2.5", "1.234567e+06", "false", "<no value>", '[1,"x"]']


def test_watch_renderer_counts_bookmarks_and_passes_errors_through() -> None:
    rep = tables.negotiate(KUBECTL_TABLE, watch=True)
    renderer = tables.WatchEventRenderer(rep, gadget_type(), {})
    bookmark = {"apiVersion": "ref.example.dev/v1", "kind": "Gadget", "metadata": {"resourceVersion": "12"}}
    error = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 410}

    first = renderer.render("BOOKMARK", bookmark)
    passed = renderer.render("ERROR", error)
    second = renderer.render("ADDED", gadget("x", resourceVersion="13"))

    assert first["columnDefinitions"] is not None
    assert first["metadata"] == {"resourceVersion": "12"}
    assert first["rows"][0]["cells"] == ["", None]
    assert first["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": "12", "creationTimestamp": None},
    }
    assert passed is error
    assert second["columnDefinitions"] is None


def test_watch_renderer_rewrites_the_watch_list_blueprint_for_metadata_watches() -> None:
    rep = tables.negotiate("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", watch=True)
    renderer = tables.WatchEventRenderer(rep, gadget_type(), {})
    gadget_list = base64.b64encode(
        b'{"apiVersion":"ref.example.dev/v1","items":[],"kind":"GadgetList"}\n'
    ).decode()
    end = {
        "apiVersion": "ref.example.dev/v1",
        "kind": "Gadget",
        "metadata": {
            "annotations": {
                "k8s.io/initial-events-end": "true",
                tables.INITIAL_EVENTS_BLUEPRINT_ANNOTATION: gadget_list,
            },
            "resourceVersion": "40",
        },
    }

    out = renderer.render("BOOKMARK", end)

    annotations = out["metadata"]["annotations"]
    assert base64.b64decode(annotations[tables.INITIAL_EVENTS_BLUEPRINT_ANNOTATION]) == (
        b'{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":null}\n'
    )
    assert annotations["k8s.io/initial-events-end"] == "true"
    assert list(out["metadata"]) == ["resourceVersion", "creationTimestamp", "annotations"]


def test_watch_renderer_for_plain_json_returns_the_object() -> None:
    renderer = tables.WatchEventRenderer(tables.negotiate("application/json", watch=True), gadget_type(), {})
    obj = gadget("x")

    assert renderer.render("ADDED", obj) is obj
    assert not renderer.alternate


def test_watch_renderer_rejects_bad_table_options_before_streaming() -> None:
    with pytest.raises(StatusError) as caught:
        tables.WatchEventRenderer(
            tables.negotiate(KUBECTL_TABLE, watch=True), gadget_type(), {"includeObject": "x"}
        )

    assert caught.value.code == 400


# ------------------------------------------------------------------------------------ PartialObjectMetadata


def test_partial_object_metadata_uses_object_meta_order_and_drops_zero_values() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "uid": "u",
            "name": "cm",
            "finalizers": ["f"],
            "generation": 0,
            "labels": {"z": "1", "a": "2"},
            "annotations": {},
            "deletionGracePeriodSeconds": 0,
            "ownerReferences": [
                {"uid": "o", "name": "owner", "kind": "Pod", "apiVersion": "v1", "controller": True}
            ],
            "managedFields": [
                {
                    "subresource": "",
                    "fieldsV1": {"f:data": {"f:b": {}, ".": {}}},
                    "manager": "m",
                    "operation": "Apply",
                }
            ],
            "namespace": "ns",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "data": {"k": "v"},
    }

    partial = tables.partial_object_metadata(obj, group_version="meta.k8s.io/v1beta1")

    assert text(partial) == text(
        {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1beta1",
            "metadata": {
                "name": "cm",
                "namespace": "ns",
                "uid": "u",
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "deletionGracePeriodSeconds": 0,
                "labels": {"a": "2", "z": "1"},
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": "o", "controller": True}
                ],
                "finalizers": ["f"],
                "managedFields": [
                    {"manager": "m", "operation": "Apply", "fieldsV1": {"f:data": {".": {}, "f:b": {}}}}
                ],
            },
        }
    )


def test_empty_partial_object_metadata_list_has_null_items() -> None:
    doc = tables.partial_object_metadata_list(
        {"metadata": {"resourceVersion": "5", "continue": ""}, "items": []}
    )

    assert text(doc) == text(
        {
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "5"},
            "items": None,
        }
    )


# ------------------------------------------------------------------------------------ built-in types


def test_namespace_table() -> None:
    rt = builtin_type("", "namespaces", "Namespace", namespaced=False)
    ns = {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {"name": "ref", "resourceVersion": "3", "creationTimestamp": "2026-11-22T04:59:55Z"},
        "status": {"phase": "Active"},
    }

    doc = tables.table_for_list(rt, {"metadata": {"resourceVersion": "4"}, "items": [ns]}, {}, now=NOW)

    assert [c["name"] for c in doc["columnDefinitions"]] == ["Name", "Status", "Age"]
    assert doc["columnDefinitions"][2]["type"] == "string"
    assert doc["rows"][0]["cells"] == ["ref", "Active", "5s"]


def test_node_table() -> None:
    rt = builtin_type("", "nodes", "Node", namespaced=False)
    node = {
        "metadata": {
            "name": "n1",
            "creationTimestamp": "2026-11-21T05:00:00Z",
            "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "etcd", "x": "y"},
        },
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True"},
            ],
            "nodeInfo": {"kubeletVersion": "v1.32.0"},
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
        },
    }

    doc = tables.table_for_object(rt, node, {}, now=NOW)

    assert [c["name"] for c in doc["columnDefinitions"]][:5] == ["Name", "Status", "Roles", "Age", "Version"]
    assert doc["rows"][0]["cells"] == [
        "n1",
        "Ready,SchedulingDisabled",
        "control-plane,etcd",
        "24h",
        "v1.32.0",
        "10.0.0.1",
        "<none>",
        "<unknown>",
        "<unknown>",
        "<unknown>",
    ]
    bare = tables.table_for_object(rt, {"metadata": {"name": "n2"}}, {}, now=NOW)
    assert bare["rows"][0]["cells"][:4] == ["n2", "Unknown", "<none>", "<unknown>"]


def test_lease_and_configmap_tables() -> None:
    lease_rt = builtin_type("coordination.k8s.io", "leases", "Lease")
    cm_rt = builtin_type("", "configmaps", "ConfigMap")
    lease = {
        "metadata": {"name": "l", "creationTimestamp": "2026-11-22T04:00:00Z"},
        "spec": {"holderIdentity": "me"},
    }
    config_map = {
        "metadata": {"name": "c", "creationTimestamp": "2026-11-22T04:55:30Z"},
        "data": {"a": "1", "b": "2"},
        "binaryData": {"c": "AA=="},
    }

    lease_doc = tables.table_for_object(lease_rt, lease, {}, now=NOW)
    cm_doc = tables.table_for_object(cm_rt, config_map, {}, now=NOW)

    assert [c["name"] for c in lease_doc["columnDefinitions"]] == ["Name", "Holder", "Age"]
    assert lease_doc["rows"][0]["cells"] == ["l", "me", "60m"]
    assert [c["name"] for c in cm_doc["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert cm_doc["rows"][0]["cells"] == ["c", 3, "4m30s"]


def test_event_tables_for_core_and_events_api() -> None:
    core = {
        "metadata": {"name": "e1.abc", "creationTimestamp": "2026-11-22T04:00:00Z"},
        "involvedObject": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{web}"},
        "reason": "Pulled",
        "message": "Image pulled",
        "type": "Normal",
        "source": {"component": "kubelet", "host": "n1"},
        "firstTimestamp": "2026-11-22T04:50:00Z",
        "lastTimestamp": "2026-11-22T04:59:00Z",
        "count": 4,
    }
    modern = {
        "metadata": {"name": "e2.abc"},
        "regarding": {"kind": "Node", "name": "n1"},
        "reason": "Rebooted",
        "note": "node rebooted",
        "type": "Warning",
        "eventTime": "2026-11-22T04:58:00.000000Z",
        "reportingController": "kubelet",
        "reportingInstance": "n1",
        "deprecatedSource": {},
    }

    core_row = tables.table_for_object(builtin_type("", "events", "Event"), core, {}, now=NOW)
    modern_row = tables.table_for_object(
        builtin_type("events.k8s.io", "events", "Event"), modern, {}, now=NOW
    )

    names = [c["name"] for c in core_row["columnDefinitions"] if c["priority"] == 0]
    assert names == ["Last Seen", "Type", "Reason", "Object", "Message"]
    assert core_row["rows"][0]["cells"] == [
        "60s",
        "Normal",
        "Pulled",
        "pod/web-0",
        "spec.containers{web}",
        "kubelet, n1",
        "Image pulled",
        "10m",
        4,
        "e1.abc",
    ]
    assert modern_row["rows"][0]["cells"] == [
        "2m",
        "Warning",
        "Rebooted",
        "node/n1",
        "",
        "kubelet, n1",
        "node rebooted",
        "2m",
        1,
        "e2.abc",
    ]


def test_types_without_a_printer_use_the_generic_columns() -> None:
    rt = builtin_type(
        "apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False
    )
    crd = {"metadata": {"name": "gadgets.ref.example.dev", "creationTimestamp": "2026-11-22T04:17:30Z"}}

    one = tables.table_for_object(rt, crd, {}, now=NOW)
    empty = tables.table_for_list(rt, {"metadata": {"resourceVersion": "1"}, "items": []}, {}, now=NOW)

    assert [(c["name"], c["type"]) for c in one["columnDefinitions"]] == [
        ("Name", "string"),
        ("Created At", "date"),
    ]
    assert one["rows"][0]["cells"] == ["gadgets.ref.example.dev", "2026-11-22T04:17:30Z"]
    assert empty["rows"] is None  # kube's generic convertor leaves an empty list's rows nil


def test_builtin_row_object_in_struct_order() -> None:
    rt = builtin_type("", "configmaps", "ConfigMap")
    cm = {"data": {"a": "b"}, "metadata": {"name": "c"}, "apiVersion": "v1", "kind": "ConfigMap"}

    doc = tables.table_for_object(rt, cm, {"includeObject": "Object"}, now=NOW)

    assert list(doc["rows"][0]["object"]) == ["kind", "apiVersion", "metadata", "data"]


# ------------------------------------------------------------------------------------ helpers


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (-5, "<invalid>"),
        (-1.5, "0s"),
        (0, "0s"),
        (5, "5s"),
        (119, "119s"),
        (120, "2m"),
        (200, "3m20s"),
        (45 * 60, "45m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (2 * 3600 + 5 * 60 + 59 + 3600, "3h5m"),
        (10 * 3600, "10h"),
        (47 * 3600, "47h"),
        (2 * 86400 + 3 * 3600, "2d3h"),
        (5 * 86400, "5d"),
        (30 * 86400, "30d"),
        (3 * 365 * 86400 + 20 * 86400, "3y20d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration(seconds: float, expected: str) -> None:
    assert tables.human_duration(timedelta(seconds=seconds)) == expected


def test_age_of_unset_or_bad_timestamps() -> None:
    assert tables.age(None, NOW) == "<unknown>"
    assert tables.age("2026-11-22T07:00:00+02:00", NOW) == "0s"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (2.5, "2.5"),
        (100.0, "100"),
        (123456.0, "123456"),
        (1e6, "1e+06"),
        (1234567.5, "1.2345675e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-3.25e-10, "-3.25e-10"),
        (1e21, "1e+21"),
    ],
)
def test_go_format_float(value: float, expected: str) -> None:
    assert go_float(value) == expected


def test_jsonpath_features() -> None:
    data = {
        "items": [{"name": "a", "n": 1, "tags": {"x": 1}}, {"name": "b", "n": 3}, {"name": "c", "n": 2}],
        "deep": {"inner": {"name": "d"}},
    }

    def find(expression: str) -> list[Any]:
        return tables.JSONPath.parse(expression).find(data)

    assert find("{.items[*].name}") == ["a", "b", "c"]
    assert find(".items[1:].name") == ["b", "c"]
    assert find(".items[0,2].n") == [1, 2]
    assert find(".items[?(@.n > 1)].name") == ["b", "c"]
    assert find(".items[?(@.n<=2)].name") == ["a", "c"]
    assert find(".items[?(@.name != 'a')].n") == [3, 2]
    assert find(".items[?(@.tags)].name") == ["a"]
    assert find("..name") == ["d", "a", "b", "c"]
    assert find(".items[7].name") == []
    assert tables.JSONPath.parse('.items[?(@.n=="1")].name').first(data) == (False, None)
    with pytest.raises(tables.JSONPathError):
        tables.JSONPath.parse(".items[abc]")


def test_yaml_quotes_and_orders_like_go_yaml() -> None:
    doc = {
        "a10": 1,
        "a9": 2,
        "rv": "302",
        "yes_word": "y",
        "stamp": "2026-11-22T04:19:17Z",
        "date": "2024-1-2",
        "version": "1.2.3",
        "octal": "0777",
        "sexagesimal": "12:30",
        "empty": "",
        "multi": "one\ntwo\n",
        "colon": "a: b",
        "float": 2.5,
        "integral": 3.0,
        "big": 1234567.5,
        "none": None,
        "list": [],
        "map": {},
        ".": {},
        "f:x": {"n": "no"},
    }

    out = tables.to_yaml(doc)

    assert out == (
        ".: {}\n"
        "a9: 2\n"
        "a10: 1\n"
        "big: 1.2345675e+06\n"
        "colon: 'a: b'\n"
        'date: "2024-1-2"\n'
        'empty: ""\n'
        "f:x:\n"
        '  "n": "no"\n'
        "float: 2.5\n"
        "integral: 3\n"
        "list: []\n"
        "map: {}\n"
        "multi: |\n"
        "  one\n"
        "  two\n"
        "none: null\n"
        'octal: "0777"\n'
        'rv: "302"\n'
        'sexagesimal: "12:30"\n'
        'stamp: "2026-11-22T04:19:17Z"\n'
        "version: 1.2.3\n"
        'yes_word: "y"\n'
    )
    # What is written reads back as the same JSON values.
    assert yaml.safe_load(out)["rv"] == "302"
    assert yaml.safe_load(out)["multi"] == "one\ntwo\n"


def test_yaml_for_a_builtin_list_drops_item_types_and_empty_continue() -> None:
    rt = builtin_type("", "configmaps", "ConfigMap")
    listed = {
        "kind": "ConfigMapList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "8", "continue": ""},
        "items": [{"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c"}, "data": {"k": "v"}}],
    }

    rendered = tables.render_list(tables.negotiate("application/yaml"), rt, listed, {})

    assert rendered is not None
    assert rendered.body.decode() == (
        "apiVersion: v1\n"
        "items:\n"
        "- data:\n"
        "    k: v\n"
        "  metadata:\n"
        "    name: c\n"
        "kind: ConfigMapList\n"
        "metadata:\n"
        '  resourceVersion: "8"\n'
    )


def test_table_as_yaml() -> None:
    rep = tables.negotiate("application/yaml;as=Table;v=v1;g=meta.k8s.io")

    rendered = tables.render_object(rep, gadget_type(), gadget("g", resourceVersion="5"), {}, now=NOW)

    assert rendered is not None
    assert rendered.content_type == "application/yaml"
    loaded = yaml.safe_load(rendered.body)
    assert loaded["kind"] == "Table"
    assert loaded["rows"][0]["cells"] == ["g", 1]
