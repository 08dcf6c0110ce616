"""Several scopes of one kind: how the options resolve, and the merged informer's rules, event by event.

Each scope's informer is fed as its reflector feeds it (``replace`` for a list, ``apply`` for a
watch event); the server's answer to "is it still in a scope?" is scripted per test. The same
rules against the embedded API server: tests/integration/test_cache.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from kubernetes_asyncio.client import Configuration

from runtime.cache import (
    INDEX_NAMESPACE,
    JSON,
    ByNamespace,
    ByObject,
    CacheOptions,
    InformerOptions,
    MultiScopeInformer,
    object_key,
)
from runtime.client import Client
from tests.support.poll import eventually

MASTER = "node-role.kubernetes.io/master"
CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
NODES = ("v1", "Node")


@pytest_asyncio.fixture
async def offline_client() -> AsyncIterator[Client]:
    # Never contacted: the server's answers are scripted (held_on_server).
    async with Client(Configuration(host="http://127.0.0.1:9")) as client:
        yield client


def node(name: str, rv: str, *labels: str, uid: str = "") -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "resourceVersion": rv,
            "uid": uid or f"uid-{name}",
            "labels": dict.fromkeys(labels, ""),
        },
    }


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, ...]] = []

    def on_add(self, o: JSON, initial: bool) -> None:
        self.seen.append(("add", object_key(o), o["metadata"]["resourceVersion"]))

    def on_update(self, old: JSON, new: JSON) -> None:
        rvs = (old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"])
        self.seen.append(("update", object_key(new), *rvs))

    def on_delete(self, o: JSON) -> None:
        self.seen.append(("delete", object_key(o), o["metadata"]["resourceVersion"]))


class Server:
    """The scripted answer to "does some scope match this key on the server now?"."""

    def __init__(self) -> None:
        self.held: dict[str, bool] = {}
        self.asked: list[str] = []

    async def __call__(self, key: str) -> bool:
        self.asked.append(key)
        return self.held.get(key, False)


async def no_wait(_: float) -> None:
    await asyncio.sleep(0)  # allow-sleep: a backoff that waits for nothing, only yields


def merged(client: Client, server: Server) -> tuple[MultiScopeInformer, Events]:
    options = CacheOptions(
        by_object={NODES: ByObject(label_selectors=[MASTER, CONTROL_PLANE])},
        informer=InformerOptions(sleep=no_wait),
    ).with_defaults()
    informer = MultiScopeInformer(
        client, *NODES, options.scopes_for(*NODES), options.informer, held_on_server=server
    )
    for scope in informer.informers:
        scope.replace([], "1")
    events = Events()
    informer.add_event_handler(events)
    return informer, events


# ------------------------------------------------------------------------------------ options


def test_a_union_of_label_selectors_is_one_scope_each_in_the_namespace_it_inherits() -> None:
    options = CacheOptions(
        namespace="prod", by_object={NODES: ByObject(label_selectors=[MASTER, {"role": "cp"}])}
    ).with_defaults()
    scopes = options.scopes_for(*NODES)
    assert [(s.namespace, s.label_selector) for s in scopes] == [("prod", MASTER), ("prod", "role=cp")]
    with pytest.raises(ValueError, match="cached in 2 scopes: use scopes_for"):
        options.scope_for(*NODES)


def test_namespaces_each_take_their_own_selectors_or_the_kinds() -> None:
    by = ByObject(
        label_selector="team=red",
        field_selector="status.phase=Running",
        namespaces={"a": ByNamespace(), "b": ByNamespace(label_selectors=["x", "y"], field_selector="")},
    )
    scopes = (
        CacheOptions(namespace="ignored", by_object={("v1", "Pod"): by})
        .with_defaults()
        .scopes_for("v1", "Pod")
    )
    assert [(s.namespace, s.label_selector, s.field_selector) for s in scopes] == [
        ("a", "team=red", "status.phase=Running"),
        ("b", "x", None),
        ("b", "y", None),
    ]


def test_a_scope_another_one_covers_is_dropped_and_equal_scopes_count_once() -> None:
    by = ByObject(label_selectors=[MASTER, "", MASTER])
    (scope,) = CacheOptions(by_object={NODES: by}).with_defaults().scopes_for(*NODES)
    assert (scope.namespace, scope.label_selector) == (None, None)
    # An all-namespaces scope without a selector covers every namespace's scope.
    by = ByObject(namespaces={"a": ByNamespace(label_selector="x"), "": ByNamespace(label_selector="")})
    (scope,) = CacheOptions(by_object={("v1", "Pod"): by}).with_defaults().scopes_for("v1", "Pod")
    assert (scope.namespace, scope.label_selector) == (None, None)


@pytest.mark.parametrize(
    ("by", "message"),
    [
        (
            ByObject(label_selector="a", label_selectors=["b"]),
            "set label_selector or label_selectors, not both",
        ),
        (ByObject(label_selectors=[]), "give a list of at least one selector"),
        (ByObject(label_selectors="a,b"), "give a list of at least one selector"),
        (ByObject(label_selectors=["a", "b in ()"]), r"label_selectors\[1\]"),
        (ByObject(namespace="a", namespaces={"b": ByNamespace()}), "set namespace or namespaces, not both"),
        (ByObject(namespaces={}), "name at least one namespace"),
        (ByObject(namespaces={"a": "x"}), "must be a ByNamespace"),  # type: ignore[dict-item]
    ],
    ids=[
        "one selector and a list of them",
        "an empty list",
        "a string where a list is wanted",
        "a bad selector in the list",
        "one namespace and a map of them",
        "an empty map of namespaces",
        "a namespace without a ByNamespace",
    ],
)
def test_bad_scopes_are_refused_when_the_options_resolve(by: ByObject, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CacheOptions(by_object={NODES: by}).with_defaults()


# ------------------------------------------------------------------------------------ merged reads


async def test_an_object_in_two_scopes_is_one_object_read_from_its_owner(offline_client: Client) -> None:
    informer, events = merged(offline_client, Server())
    master, control_plane = informer.informers
    master.apply("ADDED", node("a", "2", MASTER, CONTROL_PLANE))
    control_plane.apply("ADDED", node("a", "2", MASTER, CONTROL_PLANE))
    control_plane.apply("ADDED", node("b", "3", CONTROL_PLANE))
    assert events.seen == [("add", "a", "2"), ("add", "b", "3")]
    assert informer.list_keys() == ["a", "b"] and len(informer) == 2
    # The scope that saw it second is ahead for a moment: reads keep to the owner's copy.
    control_plane.apply("MODIFIED", node("a", "4", MASTER, CONTROL_PLANE))
    assert (informer.get_by_key("a") or {})["metadata"]["resourceVersion"] == "2"
    assert events.seen[2:] == []
    master.apply("MODIFIED", node("a", "4", MASTER, CONTROL_PLANE))
    assert events.seen[2:] == [("update", "a", "2", "4")]
    assert [n["metadata"]["name"] for n in informer.by_index(INDEX_NAMESPACE, "")] == ["a", "b"]


async def test_a_late_handler_gets_each_object_once(offline_client: Client) -> None:
    informer, _ = merged(offline_client, Server())
    for scope in informer.informers:
        scope.apply("ADDED", node("a", "2", MASTER, CONTROL_PLANE))
    late = Events()
    informer.add_event_handler(late)
    assert late.seen == [("add", "a", "2")]


async def test_a_move_whose_add_comes_first_is_an_update(offline_client: Client) -> None:
    server = Server()
    informer, events = merged(offline_client, server)
    master, control_plane = informer.informers
    master.apply("ADDED", node("a", "2", MASTER))
    control_plane.apply("ADDED", node("a", "3", CONTROL_PLANE))  # relabelled: in the other scope
    assert events.seen == [("add", "a", "2")], "the owner's stream has not said anything yet"
    master.apply("DELETED", node("a", "3", MASTER))  # and out of this one (old state, new version)
    # The old state is the one handlers saw: its content and its version.
    assert events.seen[1:] == [("update", "a", "2", "3")]
    assert (informer.get_by_key("a") or {})["metadata"]["labels"] == {CONTROL_PLANE: ""}
    assert server.asked == [], "another scope held it: nothing to ask"
    control_plane.apply("MODIFIED", node("a", "4", CONTROL_PLANE))
    assert events.seen[2:] == [("update", "a", "3", "4")]


async def test_a_move_whose_delete_comes_first_is_an_update_never_a_delete(offline_client: Client) -> None:
    server = Server()
    informer, events = merged(offline_client, server)
    master, control_plane = informer.informers
    master.apply("ADDED", node("a", "2", MASTER))
    server.held["a"] = True  # the server already shows it with the other label
    master.apply("DELETED", node("a", "3", MASTER))
    assert informer.get_by_key("a") is None and informer.list_keys() == []
    await eventually(lambda: server.asked, timeout=5, message="the server asked")
    control_plane.apply("ADDED", node("a", "3", CONTROL_PLANE))
    assert events.seen == [("add", "a", "2"), ("update", "a", "2", "3")]
    assert (informer.get_by_key("a") or {})["metadata"]["labels"] == {CONTROL_PLANE: ""}


async def test_an_object_that_leaves_every_scope_is_deleted_once_the_server_says_so(
    offline_client: Client,
) -> None:
    server = Server()
    informer, events = merged(offline_client, server)
    master, control_plane = informer.informers
    for scope in (master, control_plane):
        scope.apply("ADDED", node("a", "2", MASTER, CONTROL_PLANE))
    master.apply("DELETED", node("a", "3", MASTER, CONTROL_PLANE))
    assert events.seen == [("add", "a", "2")], "the other scope still holds it: no event"
    assert (informer.get_by_key("a") or {})["metadata"]["resourceVersion"] == "2"
    control_plane.apply("DELETED", node("a", "3", MASTER, CONTROL_PLANE))
    await eventually(lambda: len(events.seen) == 2, timeout=5, message="the delete")
    assert events.seen[1:] == [("delete", "a", "3")]
    assert server.asked == ["a"] and informer.list_keys() == []


async def test_a_relist_that_drops_an_object_leaves_the_union_through_the_same_rule(
    offline_client: Client,
) -> None:
    server = Server()
    informer, events = merged(offline_client, server)
    master, _ = informer.informers
    master.replace([node("a", "2", MASTER), node("b", "2", MASTER)], "2")
    master.replace([node("b", "2", MASTER)], "5")
    await eventually(lambda: len(events.seen) == 3, timeout=5, message="the delete")
    assert events.seen == [("add", "a", "2"), ("add", "b", "2"), ("delete", "a", "2")]


async def test_an_object_recreated_while_between_scopes_is_a_delete_then_an_add(
    offline_client: Client,
) -> None:
    server = Server()
    informer, events = merged(offline_client, server)
    master, control_plane = informer.informers
    server.held["a"] = True
    master.apply("ADDED", node("a", "2", MASTER))
    master.apply("DELETED", node("a", "3", MASTER))
    control_plane.apply("ADDED", node("a", "5", CONTROL_PLANE, uid="another"))
    assert events.seen == [("add", "a", "2"), ("delete", "a", "3"), ("add", "a", "5")]


async def test_events_of_a_scope_that_does_not_own_the_object_reach_no_handler(
    offline_client: Client,
) -> None:
    informer, events = merged(offline_client, Server())
    master, control_plane = informer.informers
    master.apply("ADDED", node("a", "2", MASTER, CONTROL_PLANE))
    control_plane.apply("ADDED", node("a", "2", MASTER, CONTROL_PLANE))
    control_plane.apply("MODIFIED", node("a", "3", MASTER, CONTROL_PLANE))
    control_plane.apply("DELETED", node("a", "4", CONTROL_PLANE))
    assert events.seen == [("add", "a", "2")]
    # Its owner carries on: its own events are the handlers'.
    master.apply("MODIFIED", node("a", "3", MASTER, CONTROL_PLANE))
    assert events.seen[1:] == [("update", "a", "2", "3")]


def test_driven_by_hand_outside_a_loop_a_leave_is_a_delete_at_once() -> None:
    options = CacheOptions(
        by_object={NODES: ByObject(label_selectors=[MASTER, CONTROL_PLANE])}
    ).with_defaults()
    client: Any = None  # never used: no loop, no server question
    informer = MultiScopeInformer(client, *NODES, options.scopes_for(*NODES), options.informer)
    events = Events()
    informer.add_event_handler(events)
    master = informer.informers[0]
    master.apply("ADDED", node("a", "2", MASTER))
    master.apply("DELETED", node("a", "3", MASTER))
    assert events.seen == [("add", "a", "2"), ("delete", "a", "3")]
