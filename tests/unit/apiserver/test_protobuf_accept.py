"""Accept headers that ask for protobuf: JSON when JSON is listed, else a 406 naming what is produced."""

from __future__ import annotations

import pytest

from apiserver import tables
from apiserver.errors import StatusError
from apiserver.registry import ResourceType
from tests.unit.apiserver.resource_types import CONFIGMAPS, GADGETS

CONFIGMAP = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}}

# What client-go (and so kubectl's typed commands) sends since Kubernetes 1.31.
CLIENT_GO_ACCEPT = "application/vnd.kubernetes.protobuf,application/json"


def test_client_go_accept_header_gets_json() -> None:
    rep = tables.negotiate(CLIENT_GO_ACCEPT)
    assert rep.kind == tables.JSON_REPRESENTATION
    assert tables.render_object(rep, CONFIGMAPS, CONFIGMAP, {}) is None  # plain JSON


def message_of(rt: ResourceType, accept: str, *, watch: bool = False) -> str:
    rep = tables.negotiate(accept, watch=watch)
    with pytest.raises(StatusError) as caught:
        tables.render_object(rep, rt, CONFIGMAP, {})
    assert caught.value.code == 406
    assert caught.value.reason == "NotAcceptable"
    return caught.value.message


def test_protobuf_only_for_a_built_in_names_what_can_be_produced() -> None:
    assert message_of(CONFIGMAPS, "application/vnd.kubernetes.protobuf") == (
        "only the following media types are accepted: application/json, application/yaml"
    )


def test_protobuf_only_watch_of_a_built_in_names_the_json_stream() -> None:
    accept = "application/vnd.kubernetes.protobuf;stream=watch"
    assert message_of(CONFIGMAPS, accept, watch=True) == (
        "only the following media types are accepted: application/json;stream=watch"
    )


def test_protobuf_only_for_a_custom_resource_keeps_the_recorded_message() -> None:
    assert message_of(GADGETS, "application/vnd.kubernetes.protobuf") == (
        "only the following media types are accepted: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    )
