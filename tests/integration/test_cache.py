"""The informer cache against a real API server (whichever ``env`` back end runs).

Faults are injected the way networks and servers produce them: a TCP proxy between the informer
and the server is cut, refuses connections or stalls; a 410 comes from asking the server for a
resourceVersion older than its history. Waiting is always a poll with a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from runtime.cache import (
    INDEX_NAMESPACE,
    INDEX_OWNER_UID,
    JSON,
    ByNamespace,
    ByObject,
    Cache,
    CachedClient,
    CacheNotStarted,
    CacheOptions,
    Informer,
    InformerOptions,
    MultiScopeInformer,
    ResourceEventHandlerFuncs,
    object_key,
)
from runtime.client import Client
from runtime.envtest import Environment
from runtime.errors import NotFound
from tests.support.crds import GROUP, VERSION, widget
from tests.support.poll import eventually
from tests.support.tcpproxy import TCPProxy, proxied_kubeconfig, server_address

WIDGET_API = f"{GROUP}/{VERSION}"

# Millisecond backoff so fault tests recover fast; the long timeouts stay out of the way.
FAST = InformerOptions(backoff_initial=0.02, backoff_max=0.2, page_size=7)


pytestmark = pytest.mark.usefixtures("widgets_installed")


@pytest_asyncio.fixture(loop_scope="session")
async def proxy(env: Environment) -> AsyncIterator[TCPProxy]:
    host, port, _ = server_address(env.kubeconfig)
    p = TCPProxy(host, port)
    await p.start()
    yield p
    await p.stop()


@pytest_asyncio.fixture(loop_scope="session")
async def proxied_client(env: Environment, proxy: TCPProxy, widgets_installed: None) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(proxied_kubeconfig(env.kubeconfig, proxy.port)) as c:
        yield c


class Recorder:
    """A handler that rebuilds the state from events and notes every event that makes no sense."""

    def __init__(self) -> None:
        self.state: dict[str, JSON] = {}
        self.problems: list[str] = []
        self.events: list[tuple[str, str]] = []

    def on_add(self, obj: JSON, is_in_initial_list: bool) -> None:
        key = object_key(obj)
        self.events.append(("add", key))
        if key in self.state:
            self.problems.append(f"add of known {key}")
        self.state[key] = obj

    def on_update(self, old: JSON, new: JSON) -> None:
        key = object_key(new)
        self.events.append(("update", key))
        known = self.state.get(key)
        if known is None:
            self.problems.append(f"update of unknown {key}")
        elif known["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]:
            self.problems.append(f"update of {key}: old is not the last state seen")
        self.state[key] = new

    def on_delete(self, obj: JSON) -> None:
        key = object_key(obj)
        self.events.append(("delete", key))
        if self.state.pop(key, None) is None:
            self.problems.append(f"delete of unknown (phantom) {key}")

    def versions(self) -> dict[str, str]:
        return {key: obj["metadata"]["resourceVersion"] for key, obj in self.state.items()}


@contextlib.asynccontextmanager
async def running(runnable: Informer | Cache) -> AsyncIterator[asyncio.Event]:
    stop = asyncio.Event()
    task = asyncio.create_task(runnable.start(stop))
    try:
        yield stop
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


async def server_versions(client: Client, namespace: str) -> dict[str, str]:
    listing = await client.list(WIDGET_API, "Widget", namespace)
    return {object_key(o): o["metadata"]["resourceVersion"] for o in listing["items"]}


def labelled(name: str, namespace: str, **labels: str) -> JSON:
    obj = widget(name, namespace, replicas=2)
    obj["metadata"]["labels"] = labels
    return obj


def informer_versions(informer: Informer) -> dict[str, str]:
    return {object_key(o): o["metadata"]["resourceVersion"] for o in informer.list()}


async def burst(client: Client, namespace: str, start: int, count: int) -> None:
    """Creates, updates and deletes, some of objects from earlier bursts."""
    for i in range(start, start + count):
        await client.create(widget(f"w-{i}", namespace, replicas=1))
    for i in range(start, start + count, 2):
        await client.patch(WIDGET_API, "Widget", f"w-{i}", {"spec": {"replicas": 2}}, namespace)
    for i in range(max(0, start - count), start + count, 3):
        with contextlib.suppress(NotFound):
            await client.delete(WIDGET_API, "Widget", f"w-{i}", namespace)


async def assert_converges(client: Client, informer: Informer, recorder: Recorder, namespace: str) -> None:
    expected = await server_versions(client, namespace)
    await eventually(
        lambda: informer_versions(informer) == expected,
        timeout=20.0,
        message="the informer to reach the server's state",
    )
    assert recorder.versions() == expected
    assert recorder.problems == []
    # The handlers' objects are the cache's: same content, not just the same versions.
    for key, obj in recorder.state.items():
        assert informer.get_by_key(key) == obj


# ------------------------------------------------------------------------------ the headline tests


async def test_informer_ends_at_server_state_after_a_forced_disconnect(
    client: Client, proxied_client: Client, proxy: TCPProxy, namespace: str
) -> None:
    await burst(client, namespace, 0, 10)  # something to list (in several pages of 7)
    informer = Informer(proxied_client, WIDGET_API, "Widget", namespace=namespace, options=FAST)
    recorder = Recorder()
    informer.add_event_handler(recorder)
    async with running(informer):
        await asyncio.wait_for(informer.wait_for_sync(), 10)
        await burst(client, namespace, 10, 10)
        proxy.refuse = True
        proxy.cut()  # mid-burst: the watch breaks, reconnects fail for a while
        await burst(client, namespace, 20, 10)
        proxy.refuse = False
        await burst(client, namespace, 30, 10)
        await assert_converges(client, informer, recorder, namespace)
    # Resumed from the last seen version: the missed events came by watch, not by a relist.
    assert informer.reflector.lists == 1
    assert informer.reflector.watches >= 2


async def test_informer_ends_at_server_state_after_410_gone(
    client: Client, proxied_client: Client, proxy: TCPProxy, namespace: str
) -> None:
    await burst(client, namespace, 0, 10)
    informer = Informer(proxied_client, WIDGET_API, "Widget", namespace=namespace, options=FAST)
    recorder = Recorder()
    informer.add_event_handler(recorder)
    async with running(informer):
        await asyncio.wait_for(informer.wait_for_sync(), 10)
        await burst(client, namespace, 10, 10)
        proxy.refuse = True
        watches = informer.reflector.watches
        proxy.cut()
        # Once a new watch was attempted the old stream is gone and cannot move the version again.
        await eventually(
            lambda: informer.reflector.watches > watches, timeout=20.0, message="a reconnect attempt"
        )
        # Resume from a version older than any server's history: the server answers 410 Expired.
        informer.reflector._last_rv = "1"
        await burst(client, namespace, 20, 10)  # deletes objects the informer knows: relist must notice
        proxy.refuse = False
        await burst(client, namespace, 30, 5)
        await assert_converges(client, informer, recorder, namespace)
    assert informer.reflector.lists == 2  # the 410 forced exactly one relist
    assert ("delete", f"{namespace}/w-13") in recorder.events  # deleted while away: from the relist diff


# ------------------------------------------------------------------------------ watch liveness


async def test_bookmarks_advance_the_resume_version(client: Client, namespace: str) -> None:
    # Scoped to a label nobody has: the only thing that can move the version is a bookmark, which
    # servers send about 2 s before a watch's timeout (here ~1 s into each 3 s watch; kube-apiserver
    # anywhere up to ~2.2 s), if the resource was written since the watch began.
    options = InformerOptions(watch_timeout_min=3, watch_timeout_max=3)
    informer = Informer(
        client, WIDGET_API, "Widget", namespace=namespace, label_selector="none=here", options=options
    )
    recorder = Recorder()
    informer.add_event_handler(recorder)
    loop = asyncio.get_running_loop()
    written: list[int] = []
    next_write = 0.0

    async def bookmarked_past_a_write() -> bool:
        # A write made after a watch's bookmark was due is reported by no bookmark of that watch,
        # nor of the next (it began after the write), so write every second until one is.
        nonlocal next_write
        if written and int(informer.reflector.last_sync_resource_version) >= written[0]:
            return True
        if loop.time() >= next_write:
            other = await client.create(widget(f"unwatched-{len(written)}", namespace))
            written.append(int(other["metadata"]["resourceVersion"]))
            next_write = loop.time() + 1
        return False

    async with running(informer):
        await asyncio.wait_for(informer.wait_for_sync(), 10)
        await eventually(
            bookmarked_past_a_write, timeout=20.0, message="a bookmark past an unwatched object's version"
        )
    assert recorder.events == []
    assert informer.reflector.lists == 1


async def test_a_stalled_watch_is_dropped_after_the_inactivity_timeout(
    client: Client, proxied_client: Client, proxy: TCPProxy, namespace: str
) -> None:
    options = InformerOptions(inactivity_timeout=0.5, backoff_initial=0.02, backoff_max=0.1)
    informer = Informer(proxied_client, WIDGET_API, "Widget", namespace=namespace, options=options)
    async with running(informer):
        await asyncio.wait_for(informer.wait_for_sync(), 10)
        proxy.stall()  # the open watch stays open but goes silent
        await client.create(widget("after-stall", namespace))
        await eventually(
            lambda: informer.get_by_key(f"{namespace}/after-stall") is not None,
            timeout=10,
            message="the informer to recover",
        )
    assert informer.reflector.lists == 1


async def test_very_short_watches_are_backed_off(client: Client, namespace: str) -> None:
    delays: list[float] = []

    async def recording_sleep(delay: float) -> None:
        delays.append(delay)
        await asyncio.sleep(delay)  # allow-sleep: the backoff under test, a few ms

    # Watches of 1 s with no event are "very short" under a 5 s threshold. (Nothing is written
    # here, and a watch of 2 s or less gets no bookmark anyway, so none makes them not very short.)
    options = InformerOptions(
        watch_timeout_min=1,
        watch_timeout_max=1,
        short_watch=5,
        backoff_initial=0.01,
        backoff_max=0.05,
        random=lambda: 0.0,
        sleep=recording_sleep,
    )
    informer = Informer(
        client, WIDGET_API, "Widget", namespace=namespace, label_selector="none=here", options=options
    )
    async with running(informer):
        await eventually(lambda: len(delays) >= 3, timeout=15, message="three backoffs")
    assert delays[:3] == [0.01, 0.02, 0.04]
    assert informer.reflector.lists == 1  # a short watch resumes; it does not relist


# ------------------------------------------------------------------------------ indexes and handlers


async def test_indexers_follow_add_update_and_delete(client: Client, namespace: str) -> None:
    owner_a = await client.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner-a", "namespace": namespace}}
    )
    owner_b = await client.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner-b", "namespace": namespace}}
    )

    def owned_by(owner: JSON) -> list[JSON]:
        return [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
            }
        ]

    informer = Informer(client, WIDGET_API, "Widget", namespace=namespace, options=FAST)
    informer.add_indexers({"size": lambda obj: [obj["spec"]["size"]]})
    with pytest.raises(ValueError, match="already exists"):
        informer.add_indexers({"size": lambda obj: []})
    uid_a, uid_b = owner_a["metadata"]["uid"], owner_b["metadata"]["uid"]

    def names(index: str, value: str) -> list[str]:
        return [o["metadata"]["name"] for o in informer.by_index(index, value)]

    async with running(informer):
        await asyncio.wait_for(informer.wait_for_sync(), 10)
        one = widget("one", namespace, size="small")
        one["metadata"]["ownerReferences"] = owned_by(owner_a)
        await client.create(one)
        await client.create(widget("two", namespace, size="large"))
        await eventually(lambda: len(informer) == 2, timeout=20.0, message="two widgets")
        assert names("size", "small") == ["one"]
        assert names("size", "large") == ["two"]
        assert names(INDEX_OWNER_UID, uid_a) == ["one"]
        assert names(INDEX_NAMESPACE, namespace) == ["one", "two"]

        # Move "one" to other index values: it must leave the old ones.
        await client.patch(
            WIDGET_API,
            "Widget",
            "one",
            {"spec": {"size": "large"}, "metadata": {"ownerReferences": owned_by(owner_b)}},
            namespace,
        )
        await eventually(
            lambda: names("size", "large") == ["one", "two"], timeout=20.0, message="one to move to large"
        )
        assert names("size", "small") == []
        assert names(INDEX_OWNER_UID, uid_a) == []
        assert names(INDEX_OWNER_UID, uid_b) == ["one"]

        await client.delete(WIDGET_API, "Widget", "two", namespace)
        await eventually(
            lambda: names("size", "large") == ["one"], timeout=20.0, message="two to leave the index"
        )
        assert names(INDEX_NAMESPACE, namespace) == ["one"]
        # A custom indexer added to a running informer indexes what is already there.
        informer.add_indexers({"replicas": lambda obj: [str(obj["spec"]["replicas"])]})
        assert names("replicas", "1") == ["one"]
        with pytest.raises(ValueError, match="no index 'nope'"):
            informer.by_index("nope", "x")


async def test_late_handlers_get_a_replay_and_a_raising_handler_stops_nothing(
    client: Client, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    await client.create(widget("a", namespace))
    await client.create(widget("b", namespace))
    informer = Informer(client, WIDGET_API, "Widget", namespace=namespace, options=FAST)
    calls = 0

    def explode(*_: Any) -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("handler bug")

    informer.add_event_handler(
        ResourceEventHandlerFuncs(on_add=explode, on_update=explode, on_delete=explode)
    )
    async with running(informer):
        await asyncio.wait_for(informer.wait_for_sync(), 10)
        late: list[tuple[str, bool]] = []
        registration = informer.add_event_handler(
            ResourceEventHandlerFuncs(
                on_add=lambda obj, initial: late.append((obj["metadata"]["name"], initial))
            )
        )
        assert late == [("a", True), ("b", True)]  # replayed at once, as initial-list adds
        assert registration.has_synced()
        recorder = Recorder()
        informer.add_event_handler(recorder)
        await client.create(widget("c", namespace))
        await client.patch(WIDGET_API, "Widget", "a", {"spec": {"replicas": 3}}, namespace)
        await client.delete(WIDGET_API, "Widget", "b", namespace)
        await eventually(
            lambda: len(recorder.events) == 5, timeout=20.0, message="the events after the raising handler"
        )
        assert recorder.events[2:] == [
            ("add", f"{namespace}/c"),
            ("update", f"{namespace}/a"),
            ("delete", f"{namespace}/b"),
        ]
        assert late[2:] == [("c", False)]
        informer.remove_event_handler(registration)
        await client.create(widget("d", namespace))
        await eventually(lambda: ("add", f"{namespace}/d") in recorder.events, timeout=20.0, message="d")
        assert ("d", False) not in late
    assert calls == 2 + 4  # two initial adds, then add/update/delete/add: each raised, none stopped us
    assert "handler bug" in caplog.text


# ------------------------------------------------------------------------------ the cache


async def test_cache_scopes_by_label_and_namespace(client: Client, namespace: str, env: Environment) -> None:
    other_ns = namespace[:50] + "-other"
    await env.create_namespace(other_ns)
    options = CacheOptions(
        namespace=namespace,
        by_object={
            (WIDGET_API, "Widget"): ByObject(label_selector={"team": "red"}),
            ("v1", "ConfigMap"): ByObject(field_selector="metadata.name=picked"),
        },
        informer=FAST,
    )
    cache = Cache(client, options)
    await client.create(labelled("red", namespace, team="red"))
    await client.create(labelled("blue", namespace, team="blue"))
    await client.create(labelled("red-elsewhere", other_ns, team="red"))
    informer = cache.informer_for(WIDGET_API, "Widget")
    recorder = Recorder()
    informer.add_event_handler(recorder)
    async with running(cache):
        await cache.wait_for_cache_sync()
        assert informer.list_keys() == [f"{namespace}/red"]
        # Relabelling moves an object into and out of scope: an add, then a delete.
        await client.patch(WIDGET_API, "Widget", "blue", {"metadata": {"labels": {"team": "red"}}}, namespace)
        await eventually(
            lambda: f"{namespace}/blue" in recorder.state, timeout=20.0, message="blue to enter the scope"
        )
        await client.patch(
            WIDGET_API, "Widget", "red", {"metadata": {"labels": {"team": "green"}}}, namespace
        )
        await eventually(
            lambda: f"{namespace}/red" not in recorder.state, timeout=20.0, message="red to leave the scope"
        )
        assert recorder.problems == []
        for name in ("picked", "passed-over"):
            await client.create(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}
            )
        await cache.get(
            "v1", "ConfigMap", "picked", namespace
        )  # starts the ConfigMap informer, waits for sync
        assert cache.informer_for("v1", "ConfigMap").list_keys() == [f"{namespace}/picked"]
        with pytest.raises(ValueError, match="namespace"):
            await cache.list(WIDGET_API, "Widget", namespace=other_ns)
        with pytest.raises(ValueError, match="namespace"):
            await cache.get(WIDGET_API, "Widget", "red-elsewhere", other_ns)


async def test_two_scopes_of_one_kind_read_and_watched_as_one(client: Client, namespace: str) -> None:
    """Widgets labelled ``master`` or ``control-plane`` (two selectors, one informer each): one
    list, one get, one stream of events; a relabel from one scope to the other is an update,
    leaving both a delete, and an object in both is deleted once."""
    scopes = ByObject(label_selectors=["master", "control-plane"])
    cache = Cache(
        client, CacheOptions(namespace=namespace, by_object={(WIDGET_API, "Widget"): scopes}, informer=FAST)
    )
    for name, labels in (
        ("m", ("master",)),
        ("cp", ("control-plane",)),
        ("both", ("master", "control-plane")),
    ):
        await client.create(labelled(name, namespace, **dict.fromkeys(labels, "")))
    await client.create(labelled("worker", namespace, worker=""))
    informer = cache.informer_for(WIDGET_API, "Widget")
    assert isinstance(informer, MultiScopeInformer) and len(informer.informers) == 2
    recorder = Recorder()
    informer.add_event_handler(recorder)
    key = f"{namespace}/".__add__
    async with running(cache):
        await cache.wait_for_cache_sync()
        assert sorted(recorder.state) == [key("both"), key("cp"), key("m")]
        reader = CachedClient(client, cache)
        listed = await reader.list(WIDGET_API, "Widget", namespace, label_selector="master")
        assert sorted(w["metadata"]["name"] for w in listed["items"]) == ["both", "m"]
        assert (await cache.get(WIDGET_API, "Widget", "both", namespace))["metadata"]["name"] == "both"
        with pytest.raises(NotFound):
            await cache.get(WIDGET_API, "Widget", "worker", namespace)

        # From one scope to the other in one write: an update, never a delete.
        moved = {"metadata": {"labels": {"master": None, "control-plane": ""}}}
        await client.patch(WIDGET_API, "Widget", "m", moved, namespace)
        await eventually(
            lambda: "control-plane" in recorder.state[key("m")]["metadata"]["labels"],
            timeout=20.0,
            message="m's relabel seen as an update",
        )
        # Out of one of its two scopes: still in the union.
        await client.patch(
            WIDGET_API, "Widget", "both", {"metadata": {"labels": {"master": None}}}, namespace
        )
        await eventually(
            lambda: "master" not in recorder.state[key("both")]["metadata"]["labels"],
            timeout=20.0,
            message="both's relabel seen as an update",
        )
        # Out of every scope, and deleted while in both: a delete each.
        await client.patch(
            WIDGET_API, "Widget", "cp", {"metadata": {"labels": {"control-plane": None}}}, namespace
        )
        await client.patch(WIDGET_API, "Widget", "m", {"metadata": {"labels": {"master": ""}}}, namespace)
        await client.delete(WIDGET_API, "Widget", "m", namespace=namespace)
        await eventually(
            lambda: sorted(recorder.state) == [key("both")], timeout=20.0, message="cp and m to leave"
        )
        listed = await reader.list(WIDGET_API, "Widget", namespace)
        assert [w["metadata"]["name"] for w in listed["items"]] == ["both"]
    assert recorder.problems == []
    deletes = [k for event, k in recorder.events if event == "delete"]
    assert sorted(deletes) == [key("cp"), key("m")], recorder.events


async def test_namespaces_each_with_their_own_selector(
    client: Client, namespace: str, env: Environment
) -> None:
    """controller-runtime's ByObject.Namespaces: each namespace cached with its own selector."""
    other_ns = namespace[:50] + "-scoped"
    await env.create_namespace(other_ns)
    scopes = ByObject(
        namespaces={
            namespace: ByNamespace(label_selector={"team": "red"}),
            other_ns: ByNamespace(label_selector=""),
        }
    )
    cache = Cache(client, CacheOptions(by_object={(WIDGET_API, "Widget"): scopes}, informer=FAST))
    await client.create(labelled("red", namespace, team="red"))
    await client.create(labelled("blue", namespace, team="blue"))
    await client.create(labelled("any", other_ns, team="blue"))
    cache.informer_for(WIDGET_API, "Widget")
    async with running(cache):
        await cache.wait_for_cache_sync()
        listed = await cache.list(WIDGET_API, "Widget")
        assert sorted(object_key(w) for w in listed) == sorted([f"{other_ns}/any", f"{namespace}/red"])
        assert [
            w["metadata"]["name"] for w in await cache.list(WIDGET_API, "Widget", namespace=other_ns)
        ] == ["any"]
        with pytest.raises(ValueError, match="namespace"):
            await cache.list(WIDGET_API, "Widget", namespace="default")


async def test_cache_reads_are_private_copies(client: Client, namespace: str) -> None:
    cache = Cache(client, CacheOptions(informer=FAST))
    with pytest.raises(CacheNotStarted):
        await cache.get(WIDGET_API, "Widget", "x", namespace)
    created = await client.create(labelled("copy", namespace, k="v"))
    async with running(cache):
        await cache.wait_for_cache_sync()  # the informer made by the failed get above
        got = await cache.get(WIDGET_API, "Widget", "copy", namespace)
        assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        assert "managedFields" not in got["metadata"]  # the default transform
        assert got["kind"] == "Widget" and got["apiVersion"] == WIDGET_API
        got["spec"]["replicas"] = 99
        listed = await cache.list(WIDGET_API, "Widget", namespace=namespace, label_selector="k=v")
        assert [o["spec"]["replicas"] for o in listed] == [2]
        listed[0]["metadata"]["labels"].clear()
        again = await cache.get(WIDGET_API, "Widget", "copy", namespace)
        assert again["spec"]["replicas"] == 2 and again["metadata"]["labels"] == {"k": "v"}
        assert await cache.list(WIDGET_API, "Widget", namespace=namespace, label_selector={"k": "w"}) == []
        with pytest.raises(NotFound):
            await cache.get(WIDGET_API, "Widget", "missing", namespace)


async def test_cached_client_reads_from_the_cache_and_writes_to_the_server(
    client: Client, namespace: str
) -> None:
    cache = Cache(client, CacheOptions(informer=FAST))
    cached = CachedClient(client, cache)
    async with running(cache):
        # The ConfigMap informer is created by the first read, while the cache runs: it starts at once.
        created = await cached.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cfg", "namespace": namespace},
                "data": {"a": "1"},
            }
        )

        async def visible() -> bool:
            listing = await cached.list("v1", "ConfigMap", namespace)
            return any(o["metadata"]["uid"] == created["metadata"]["uid"] for o in listing["items"])

        await eventually(visible, timeout=20.0, message="the created ConfigMap in the cache")
        await cached.patch("v1", "ConfigMap", "cfg", {"data": {"a": "2"}}, namespace)

        async def patched() -> bool:
            return bool((await cached.get("v1", "ConfigMap", "cfg", namespace))["data"] == {"a": "2"})

        await eventually(patched, timeout=20.0, message="the patch in the cache")
        with pytest.raises(ValueError, match="field selectors"):
            await cached.list("v1", "ConfigMap", namespace, field_selector="metadata.name=cfg")
        await cached.delete("v1", "ConfigMap", "cfg", namespace)

        async def gone() -> bool:
            try:
                await cached.get("v1", "ConfigMap", "cfg", namespace)
            except NotFound:
                return True
            return False

        await eventually(gone, timeout=20.0, message="the delete in the cache")
