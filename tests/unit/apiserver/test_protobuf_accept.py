"""Accept headers that ask for protobuf: the first type the server can serve wins, as in kube.

kube-apiserver 1.32 answers client-go's ``application/vnd.kubernetes.protobuf,application/json``
in protobuf for built-ins and in JSON for custom resources (measured; see
``tests/testdata/kube-apiserver/FACTS.md``). Errors negotiate without conversions and in protobuf
whatever the resource (``13-get-protobuf-only``: a custom resource's 406 is protobuf).
"""

from __future__ import annotations

import pytest

from apiserver import tables
from apiserver.errors import StatusError
from apiserver.registry import ResourceType
from apiserver.tables import serves_protobuf
from tests.unit.apiserver.resource_types import CONFIGMAPS, CRDS, GADGETS

CONFIGMAP = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}}
PROTOBUF = "application/vnd.kubernetes.protobuf"

# What client-go (and so kubectl's typed commands) sends since Kubernetes 1.31.
CLIENT_GO_ACCEPT = "application/vnd.kubernetes.protobuf,application/json"


def negotiate(rt: ResourceType, accept: str, *, watch: bool = False) -> tables.Representation:
    return tables.negotiate(accept, watch=watch, protobuf=serves_protobuf(rt))


def test_protobuf_is_served_for_built_ins_with_a_table_only() -> None:
    assert serves_protobuf(CONFIGMAPS)
    assert not serves_protobuf(GADGETS)  # custom resources have no protobuf encoding
    assert not serves_protobuf(CRDS)  # a built-in without a table here


def test_client_go_accept_header_gets_protobuf_for_a_built_in() -> None:
    rep = negotiate(CONFIGMAPS, CLIENT_GO_ACCEPT)
    assert (rep.kind, rep.media_type) == (tables.PROTOBUF_REPRESENTATION, PROTOBUF)
    # The object itself, not a Table: the server writes it (render_object has nothing to render).
    assert tables.render_object(rep, CONFIGMAPS, CONFIGMAP, {}) is None


def test_client_go_accept_header_gets_json_for_a_custom_resource() -> None:
    rep = negotiate(GADGETS, CLIENT_GO_ACCEPT)
    assert (rep.kind, rep.media_type) == (tables.JSON_REPRESENTATION, "application/json")


@pytest.mark.parametrize(
    ("accept", "kind"),
    [
        ("application/json,application/vnd.kubernetes.protobuf", "json"),
        ("application/vnd.kubernetes.protobuf;q=0.5,application/json", "json"),
        ("application/yaml,application/vnd.kubernetes.protobuf", "yaml"),
        ("*/*", "json"),
        ("application/*", "json"),
        ("application/vnd.kubernetes.protobuf", "protobuf"),
        ("application/vnd.kubernetes.protobuf;q=0, */*", "json"),
        # Tables and PartialObjectMetadata are never protobuf here: the JSON clause after them wins.
        (
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,"
            "application/json;as=Table;v=v1;g=meta.k8s.io",
            "table",
        ),
        (
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
            "partial-object-metadata-list",
        ),
    ],
)
def test_negotiation_for_a_built_in(accept: str, kind: str) -> None:
    assert negotiate(CONFIGMAPS, accept).kind == kind


def test_watch_negotiates_the_protobuf_stream() -> None:
    for accept in (CLIENT_GO_ACCEPT, "application/vnd.kubernetes.protobuf;stream=watch"):
        assert negotiate(CONFIGMAPS, accept, watch=True).kind == tables.PROTOBUF_REPRESENTATION
    assert negotiate(GADGETS, CLIENT_GO_ACCEPT, watch=True).kind == tables.JSON_REPRESENTATION


def message_of(rt: ResourceType, accept: str, *, watch: bool = False) -> str:
    rep = negotiate(rt, accept, watch=watch)
    with pytest.raises(StatusError) as caught:
        tables.render_object(rep, rt, CONFIGMAP, {})
    assert caught.value.code == 406
    assert caught.value.reason == "NotAcceptable"
    return caught.value.message


def test_not_acceptable_for_a_built_in_lists_protobuf_as_kube_does() -> None:
    assert message_of(CONFIGMAPS, "text/html") == (
        "only the following media types are accepted: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    )
    assert message_of(CONFIGMAPS, "application/yaml;stream=watch", watch=True) == (
        "only the following media types are accepted: "
        "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    )


def test_protobuf_only_for_a_built_in_without_a_table_names_what_can_be_produced() -> None:
    assert message_of(CRDS, PROTOBUF) == (
        "only the following media types are accepted: application/json, application/yaml"
    )
    assert message_of(CRDS, "application/vnd.kubernetes.protobuf;stream=watch", watch=True) == (
        "only the following media types are accepted: application/json;stream=watch"
    )


def test_protobuf_only_for_a_custom_resource_keeps_the_recorded_message() -> None:
    assert message_of(GADGETS, PROTOBUF) == (
        "only the following media types are accepted: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    )


@pytest.mark.parametrize(
    ("accept", "media_type"),
    [
        ("", "application/json"),
        (CLIENT_GO_ACCEPT, PROTOBUF),
        (PROTOBUF, PROTOBUF),  # 13-get-protobuf-only: the 406 itself is protobuf
        ("application/vnd.kubernetes.protobuf;stream=watch", PROTOBUF),
        ("application/json,application/vnd.kubernetes.protobuf", "application/json"),
        ("*/*", "application/json"),
        ("text/html", "application/json"),
        ("application/vnd.kubernetes.protobuf;q=0,application/json", "application/json"),
        # kubectl's Table request: no conversion for a Status, so its plain JSON clause decides.
        (
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,"
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            "application/json",
        ),
    ],
)
def test_error_media_type(accept: str, media_type: str) -> None:
    assert tables.error_media_type(accept) == media_type
