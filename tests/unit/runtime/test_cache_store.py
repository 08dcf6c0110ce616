"""The informer's store rules without a server: relist diffs, watch events, options, backoff, selectors.

The reflector feeds an :class:`Informer` through ``replace`` (a list) and ``apply`` (a watch event);
these tests call the same two methods, so the diff rules are checked exactly, event by event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from kubernetes_asyncio.client import Configuration

from runtime import jsoncodec
from runtime.cache import (
    INDEX_OWNER_UID,
    JSON,
    ByObject,
    CacheOptions,
    Informer,
    InformerOptions,
    object_key,
)
from runtime.cache.reflector import _Backoff
from runtime.client import Client
from runtime.labels import as_selector, from_label_selector, parse_selector


@pytest_asyncio.fixture
async def offline_client() -> AsyncIterator[Client]:
    # Never contacted: the store methods under test do no I/O.
    async with Client(Configuration(host="http://127.0.0.1:9")) as client:
        yield client


def obj(name: str, rv: str, uid: str = "", namespace: str = "ns", **spec: Any) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "resourceVersion": rv,
            "uid": uid or f"uid-{name}",
            "managedFields": [{"manager": "kubectl"}],
        },
        "data": spec,
    }


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, ...]] = []

    def on_add(self, o: JSON, initial: bool) -> None:
        self.seen.append(("add", object_key(o), o["metadata"]["resourceVersion"], str(initial)))

    def on_update(self, old: JSON, new: JSON) -> None:
        self.seen.append(
            (
                "update",
                object_key(new),
                old["metadata"]["resourceVersion"],
                new["metadata"]["resourceVersion"],
            )
        )

    def on_delete(self, o: JSON) -> None:
        self.seen.append(("delete", object_key(o), o["metadata"]["resourceVersion"]))


async def test_relist_diff_emits_deletes_updates_and_adds(offline_client: Client) -> None:
    informer = Informer(offline_client, "v1", "ConfigMap")
    events = Events()
    informer.add_event_handler(events)
    informer.replace([obj("keep", "1"), obj("change", "2"), obj("vanish", "3"), obj("recreate", "4")], "4")
    assert informer.has_synced()
    assert [e[0] for e in events.seen] == ["add"] * 4 and all(e[3] == "True" for e in events.seen)
    events.seen.clear()

    informer.replace(
        [obj("keep", "1"), obj("change", "7"), obj("recreate", "8", uid="new-uid"), obj("new", "9")], "9"
    )
    assert events.seen == [
        ("delete", "ns/vanish", "3"),  # the last state the cache knew
        ("update", "ns/change", "2", "7"),
        ("delete", "ns/recreate", "4"),  # another uid under the same name: a delete, then an add
        ("add", "ns/recreate", "8", "False"),
        ("add", "ns/new", "9", "False"),
    ]
    assert informer.list_keys() == ["ns/change", "ns/keep", "ns/new", "ns/recreate"]
    assert "managedFields" not in informer.get_by_key("ns/keep")["metadata"]  # type: ignore[index]


async def test_watch_events_update_the_store_without_phantoms(offline_client: Client) -> None:
    informer = Informer(offline_client, "v1", "ConfigMap")
    events = Events()
    informer.add_event_handler(events)
    informer.replace([], "1")
    informer.apply("ADDED", obj("a", "2"))
    informer.apply("MODIFIED", obj("a", "3", x="1"))
    informer.apply("MODIFIED", obj("a", "3", x="1"))  # a repeat changes nothing
    informer.apply("DELETED", obj("never-seen", "4"))  # not known: no delete for it
    informer.apply("DELETED", obj("a", "5", x="1"))
    assert events.seen == [
        ("add", "ns/a", "2", "False"),
        ("update", "ns/a", "2", "3"),
        ("delete", "ns/a", "5"),
    ]
    assert len(informer) == 0


async def test_list_items_get_their_kind_and_a_custom_transform(offline_client: Client) -> None:
    def keep_name_only(o: JSON) -> JSON:
        return {
            "metadata": {"name": o["metadata"]["name"], "resourceVersion": o["metadata"]["resourceVersion"]}
        }

    informer = Informer(offline_client, "v1", "Node", transform=keep_name_only)
    item = obj("n1", "1", namespace="")
    del item["apiVersion"], item["kind"]  # as a real server lists built-ins
    informer.replace([item], "1")
    assert informer.get_by_key("n1") == {"metadata": {"name": "n1", "resourceVersion": "1"}}
    plain = Informer(offline_client, "v1", "Node")
    plain.replace([dict(item)], "1")
    assert plain.get_by_key("n1")["kind"] == "Node"  # type: ignore[index]


async def test_a_failing_indexer_is_logged_and_indexes_nothing(
    offline_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    informer = Informer(offline_client, "v1", "ConfigMap")
    informer.add_indexers({"x": lambda o: [o["data"]["x"]]})
    informer.replace([obj("with", "1", x="1"), obj("without", "2")], "2")
    assert [o["metadata"]["name"] for o in informer.by_index("x", "1")] == ["with"]
    assert len(informer) == 2
    assert "indexer 'x' failed on ns/without" in caplog.text
    assert informer.keys_by_index(INDEX_OWNER_UID, "nobody") == []


async def test_an_unreachable_server_is_retried_and_stopping_ends_the_wait(offline_client: Client) -> None:
    delays: list[float] = []
    retried = asyncio.Event()

    async def recording_sleep(delay: float) -> None:
        delays.append(delay)
        if len(delays) >= 3:
            retried.set()
        await asyncio.sleep(0)

    options = InformerOptions(backoff_initial=0.01, backoff_max=0.01, sleep=recording_sleep)
    informer = Informer(offline_client, "v1", "ConfigMap", options=options)
    stop = asyncio.Event()
    task = asyncio.create_task(informer.start(stop))
    waiter = asyncio.create_task(informer.wait_for_sync())
    # Connection refused, backed off, retried, three times over: the informer lives on.
    await asyncio.wait_for(retried.wait(), 10)
    stop.set()
    await asyncio.wait_for(task, 5)
    with pytest.raises(RuntimeError, match="stopped before it synced"):
        await asyncio.wait_for(waiter, 5)
    assert not informer.has_synced()


def test_backoff_doubles_to_the_cap_and_starts_over_after_a_quiet_period() -> None:
    now = [0.0]
    options = InformerOptions(clock=lambda: now[0], random=lambda: 0.0).with_defaults()
    backoff = _Backoff(options)
    delays = [backoff.next_delay() for _ in range(8)]
    assert delays == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    now[0] += 119.0 + 30.0  # not yet 120 s after the last wait ended
    assert backoff.next_delay() == 30.0
    now[0] += 30.0 + 120.0
    assert backoff.next_delay() == 0.8
    jittery = _Backoff(InformerOptions(clock=lambda: 0.0, random=lambda: 0.5).with_defaults())
    assert jittery.next_delay() == pytest.approx(1.2)  # 0.8 × (1 + 1.0 × 0.5)


def test_options_defaults_and_clear_errors() -> None:
    resolved = InformerOptions().with_defaults()
    assert (resolved.watch_timeout_min, resolved.watch_timeout_max) == (300.0, 600.0)
    assert (resolved.inactivity_timeout, resolved.short_watch, resolved.page_size) == (80.0, 1.0, 500)
    assert (resolved.backoff_initial, resolved.backoff_max, resolved.backoff_reset) == (0.8, 30.0, 120.0)
    with pytest.raises(ValueError, match="watch_timeout_min <= watch_timeout_max"):
        InformerOptions(watch_timeout_min=10, watch_timeout_max=5).with_defaults()
    with pytest.raises(ValueError, match="page_size must be at least 1"):
        InformerOptions(page_size=0).with_defaults()
    with pytest.raises(ValueError, match="inactivity_timeout must be positive"):
        InformerOptions(inactivity_timeout=0).with_defaults()
    with pytest.raises(ValueError, match="label_selector"):
        CacheOptions(label_selector="a in ()").with_defaults()
    with pytest.raises(ValueError, match=r"must be \(api_version, kind\)"):
        CacheOptions(by_object={"Widget": ByObject()}).with_defaults()  # type: ignore[dict-item]


def test_scope_per_kind_overrides_and_inherits() -> None:
    options = CacheOptions(
        namespace="prod",
        label_selector={"team": "red"},
        by_object={("v1", "Node"): ByObject(namespace="", label_selector="")},
    ).with_defaults()
    pods = options.scope_for("v1", "Pod")
    assert (pods.namespace, pods.label_selector) == ("prod", "team=red")
    nodes = options.scope_for("v1", "Node")
    assert (nodes.namespace, nodes.label_selector) == (None, None)


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("", {}, True),
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "c"}, False),
        ("a!=b", {}, True),
        ("a in (x, y)", {"a": "y"}, True),
        ("a notin (x,y)", {"a": "y"}, False),
        ("a notin (x,y)", {}, True),
        ("a", {"a": ""}, True),
        ("!a", {"a": ""}, False),
        ("n>3", {"n": "4"}, True),
        ("n<3", {"n": "x"}, False),
        ("example.com/role=master,zone in (a,b)", {"example.com/role": "master", "zone": "b"}, True),
        ("example.com/role=master,zone in (a,b)", {"example.com/role": "master", "zone": "c"}, False),
    ],
)
def test_label_selectors_match_as_the_server_does(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_selector(text).matches(labels) is expected


@pytest.mark.parametrize("text", ["a=b,", "a in ()", "-bad=x", "a=b c", "a=" + "x" * 64, "n>x"])
def test_bad_label_selectors_say_what_is_wrong(text: str) -> None:
    with pytest.raises(ValueError, match="label selector"):
        parse_selector(text)


def test_selector_forms_print_in_server_syntax() -> None:
    assert str(as_selector({"b": "2", "a": "1"})) == "a=1,b=2"
    assert str(parse_selector("z, a in (y,x), !c")) == "a in (x,y),!c,z"
    selector = from_label_selector(
        {
            "matchLabels": {"role": "master"},
            "matchExpressions": [
                {"key": "zone", "operator": "NotIn", "values": ["b"]},
                {"key": "gone", "operator": "DoesNotExist"},
            ],
        }
    )
    assert str(selector) == "!gone,role=master,zone notin (b)"
    assert selector.matches({"role": "master", "zone": "a"})
    with pytest.raises(ValueError, match="operator 'Near' is not one of In, NotIn"):
        from_label_selector({"matchExpressions": [{"key": "k", "operator": "Near"}]})
    with pytest.raises(TypeError):
        as_selector(3)  # type: ignore[arg-type]


def owned(name: str, rv: str, *owner_uids: str, namespace: str = "ns") -> JSON:
    o = obj(name, rv, namespace=namespace)
    o["metadata"]["ownerReferences"] = [{"uid": uid, "name": uid, "kind": "X"} for uid in owner_uids]
    return o


async def test_indexes_follow_updates_deletes_and_recreations(offline_client: Client) -> None:
    informer = Informer(offline_client, "v1", "ConfigMap")
    informer.add_indexers({"first-letter": lambda o: [o["metadata"]["name"][0]]})
    informer.replace(
        [owned("a", "1", "o1"), owned("b", "2"), owned("c", "3", "o1", "o2", namespace="other")], "3"
    )
    assert informer.keys_by_index(INDEX_OWNER_UID, "o1") == ["ns/a", "other/c"]
    assert informer.keys_by_index("namespace", "ns") == ["ns/a", "ns/b"]

    informer.apply("MODIFIED", owned("a", "4", "o2"))  # owner changed
    informer.apply("MODIFIED", owned("b", "5", "o1"))  # gained one
    informer.apply("MODIFIED", owned("c", "6", namespace="other"))  # lost both
    assert informer.keys_by_index(INDEX_OWNER_UID, "o1") == ["ns/b"]
    assert informer.keys_by_index(INDEX_OWNER_UID, "o2") == ["ns/a"]
    assert informer.keys_by_index("namespace", "other") == ["other/c"]

    informer.apply("DELETED", owned("b", "7", "o1"))
    assert informer.keys_by_index(INDEX_OWNER_UID, "o1") == []
    assert informer.keys_by_index("namespace", "ns") == ["ns/a"]
    assert informer.keys_by_index("first-letter", "b") == []

    recreated = owned("a", "8", "o3")
    recreated["metadata"]["uid"] = "another-uid"
    informer.replace([recreated, owned("c", "6", namespace="other")], "8")
    assert informer.keys_by_index(INDEX_OWNER_UID, "o2") == []
    assert informer.keys_by_index(INDEX_OWNER_UID, "o3") == ["ns/a"]
    assert informer.keys_by_index("first-letter", "a") == ["ns/a"]


class DeferredEvents(Events):
    """Takes the old state as a function, as the controller's sources do."""

    def __init__(self, read_old: bool) -> None:
        super().__init__()
        self.read_old = read_old
        self.olds: list[JSON] = []

    def on_update_deferred(self, load_old: Any, new: JSON) -> None:
        if self.read_old:
            self.olds += [load_old(), load_old()]
            self.on_update(self.olds[-1], new)


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every text the informer decodes, in order (its decoder still decodes)."""
    import runtime.cache.informer as cache_module

    texts: list[bytes] = []
    real_decode = cache_module._decode

    def counting_decode(text: bytes) -> Any:
        texts.append(text)
        return real_decode(text)

    monkeypatch.setattr(cache_module, "_decode", counting_decode)
    return texts


async def test_the_old_state_is_decoded_only_for_handlers_that_read_it(
    offline_client: Client, decoded: list[bytes]
) -> None:
    informer = Informer(offline_client, "v1", "ConfigMap")
    lazy = DeferredEvents(read_old=False)
    informer.add_event_handler(lazy)
    informer.replace([obj("a", "1")], "1")
    # A list holds its pages encoded and decodes each new object once to index and announce it.
    assert len(decoded) == 1
    decoded.clear()
    informer.apply("MODIFIED", obj("a", "2", x="1"))
    assert decoded == [] and len(informer) == 1

    reader = DeferredEvents(read_old=True)
    plain = Events()
    informer.add_event_handler(reader)
    informer.add_event_handler(plain)
    decoded.clear()
    reader.seen.clear()
    plain.seen.clear()
    informer.apply("MODIFIED", obj("a", "3", x="2"))
    assert len(decoded) == 1  # once, shared by every handler that reads it
    assert reader.seen == plain.seen == [("update", "ns/a", "2", "3")]
    assert reader.olds[0] is reader.olds[1]
    assert reader.olds[0]["data"] == {"x": "1"}


async def test_a_relist_decodes_only_what_changed(offline_client: Client, decoded: list[bytes]) -> None:
    informer = Informer(offline_client, "v1", "ConfigMap")
    events = Events()
    informer.add_event_handler(events)
    informer.replace([obj(f"o{i}", "1") for i in range(5)], "1")
    decoded.clear()
    events.seen.clear()
    informer.replace([obj(f"o{i}", "1") for i in range(4)] + [obj("o4", "2", x="1")], "2")
    assert events.seen == [("update", "ns/o4", "1", "2")]
    # The changed object's new and old states (this handler reads the old); the four unchanged
    # ones are never decoded.
    assert [jsoncodec.loads(t)["metadata"]["name"] for t in decoded] == ["o4", "o4"]


async def test_a_read_right_after_an_event_takes_its_object_only_when_nobody_kept_it(
    offline_client: Client, decoded: list[bytes]
) -> None:
    informer = Informer(offline_client, "v1", "ConfigMap")
    informer.replace([], "1")
    informer.apply("ADDED", obj("a", "2", x="1"))
    first = informer.get_by_key("ns/a")
    assert decoded == []  # the event's own object, which nothing else refers to
    assert first is not None and first["data"] == {"x": "1"} and "managedFields" not in first["metadata"]
    first["data"]["x"] = "changed by the reader"  # it owns it: the store is not affected
    again = informer.get_by_key("ns/a")
    assert len(decoded) == 1 and again is not None and again["data"] == {"x": "1"}

    class Keeper:
        """A handler that holds on to what it was given (read-only, as handlers must)."""

        def __init__(self) -> None:
            self.kept: list[JSON] = []

        def on_add(self, o: JSON, initial: bool) -> None:
            self.kept.append(o)

        def on_update(self, old: JSON, new: JSON) -> None:
            self.kept.append(new)

        def on_delete(self, o: JSON) -> None:
            pass

    keeper = Keeper()
    informer.add_event_handler(keeper)
    informer.apply("MODIFIED", obj("a", "3", x="2"))
    decoded.clear()
    read = informer.get_by_key("ns/a")
    assert len(decoded) == 1  # a handler kept the event's object: the reader gets its own copy
    assert read == keeper.kept[-1] and read is not keeper.kept[-1]


async def test_a_handler_reading_the_cache_during_an_event_sees_that_event(offline_client: Client) -> None:
    informer = Informer(offline_client, "v1", "ConfigMap")
    informer.replace([], "1")
    informer.apply("ADDED", obj("a", "2", x="1"))  # kept for a reader that never comes
    seen: list[str] = []

    class Reader:
        def on_add(self, o: JSON, initial: bool) -> None:
            pass

        def on_update(self, old: JSON, new: JSON) -> None:
            current = informer.get_by_key(object_key(new))
            assert current is not None and current is not new
            seen.append(current["metadata"]["resourceVersion"])

        def on_delete(self, o: JSON) -> None:
            seen.append("gone" if informer.get_by_key(object_key(o)) is None else "still there")

    informer.add_event_handler(Reader())
    informer.apply("MODIFIED", obj("a", "3", x="2"))
    informer.apply("DELETED", obj("a", "4", x="2"))
    assert seen == ["3", "gone"]
    assert informer.get_by_key("ns/a") is None


async def test_the_watch_silence_watchdog_rearms_once_per_period_and_fails_a_silent_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import runtime.client.watch as watch_module
    import runtime.client.watchstream as watchstream

    now = [100.0]
    monkeypatch.setattr(watch_module, "_monotonic", lambda: now[0])
    monkeypatch.setattr(watchstream, "_monotonic", lambda: now[0])

    class Content:
        total_bytes = 0

    content = Content()
    progress = watch_module._ReadProgress(content)  # type: ignore[arg-type]
    failures: list[BaseException] = []
    watchdog = watchstream.SilenceWatchdog(10.0, progress.last_activity, failures.append, "watch /x")
    try:
        # Chunks read at 101..109: the timer firing at 110 finds the last read at 109 and
        # sleeps for what is left of its period.
        for t in range(101, 110):
            now[0] = float(t)
            content.total_bytes += 5
            progress.read_bytes += 5
            progress.last_read = now[0]
        now[0] = 110.0
        watchdog._check()
        assert failures == [] and watchdog._handle is not None
        watchdog.cancel()
        # Bytes the reader has not taken yet are activity too.
        content.total_bytes += 7
        now[0] = 125.0
        watchdog._check()
        assert failures == [] and progress.last_read == 125.0
        watchdog.cancel()
        # Silence for a whole period after the last read: the stream fails, naming itself.
        progress.read_bytes = content.total_bytes
        now[0] = 135.0
        watchdog._check()
        [failure] = failures
        assert isinstance(failure, TimeoutError) and watchdog._handle is None
        assert str(failure) == "watch /x: no data for 10.0s"
    finally:
        watchdog.cancel()
