"""The runtime client against a real API server (whichever ``env`` back end runs), plus its retry
loop against a tiny local server that throttles on purpose."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any, Literal, Self

import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration
from pydantic import BaseModel, ConfigDict, Field

import runtime.client.transport as client_module
from runtime import metrics
from runtime.client import Client, ClientOptions, ObjectList
from runtime.envtest import Environment
from runtime.errors import (
    AlreadyExists,
    Conflict,
    Gone,
    Invalid,
    NoKindMatch,
    NotFound,
    ServiceUnavailable,
    TooManyRequests,
    Unauthorized,
)
from tests.support.crds import GROUP, VERSION, widget
from tests.support.poll import eventually

WIDGET_API = f"{GROUP}/{VERSION}"


pytestmark = pytest.mark.usefixtures("widgets_installed")


@pytest.fixture
def client_options() -> ClientOptions:
    """The ``client`` fixture's options here: a field manager of its own, which the tests look for."""
    return ClientOptions(field_manager="client-tests")


def config_map(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


class Meta(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    name: str
    namespace: str | None = None
    resource_version: str | None = Field(default=None, alias="resourceVersion")


class ConfigMapModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    api_version: str = Field(default="v1", alias="apiVersion")
    kind: str = "ConfigMap"
    metadata: Meta
    data: dict[str, str] | None = None


# ------------------------------------------------------------------------------------ CRUD


async def test_config_map_crud_round_trip(client: Client, namespace: str) -> None:
    created = await client.create(config_map("cfg", namespace, a="1"))
    assert created["metadata"]["uid"]
    fetched = await client.get("v1", "ConfigMap", "cfg", namespace)
    assert fetched["data"] == {"a": "1"}

    fetched["data"]["b"] = "2"
    updated = await client.update(fetched)
    assert updated["data"] == {"a": "1", "b": "2"}
    assert updated["metadata"]["resourceVersion"] != fetched["metadata"]["resourceVersion"]

    await client.create(config_map("other", namespace, c="3"))
    listing = await client.list("v1", "ConfigMap", namespace)
    names = {item["metadata"]["name"] for item in listing["items"]}
    assert {"cfg", "other"} <= names
    assert listing["metadata"]["resourceVersion"]

    await client.delete("v1", "ConfigMap", "cfg", namespace)
    with pytest.raises(NotFound) as caught:
        await client.get("v1", "ConfigMap", "cfg", namespace)
    assert caught.value.status == 404
    assert caught.value.name == "cfg"


async def test_list_selectors_and_pages(client: Client, namespace: str) -> None:
    for index in range(3):
        obj = config_map(f"page-{index}", namespace)
        obj["metadata"]["labels"] = {"tier": "even" if index % 2 == 0 else "odd"}
        await client.create(obj)
    even = await client.list("v1", "ConfigMap", namespace, label_selector="tier=even")
    assert sorted(i["metadata"]["name"] for i in even["items"]) == ["page-0", "page-2"]
    by_name = await client.list("v1", "ConfigMap", namespace, field_selector="metadata.name=page-1")
    assert [i["metadata"]["name"] for i in by_name["items"]] == ["page-1"]

    seen: list[str] = []
    token: str | None = None
    while True:
        page = await client.list(
            "v1", "ConfigMap", namespace, label_selector="tier", limit=2, continue_=token
        )
        assert len(page["items"]) <= 2
        seen += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
    assert sorted(seen) == ["page-0", "page-1", "page-2"]


async def test_pydantic_models_in_and_out(client: Client, namespace: str) -> None:
    model = ConfigMapModel(metadata=Meta(name="typed", namespace=namespace), data={"k": "v"})
    created = await client.create(model)
    assert isinstance(created, ConfigMapModel)
    assert created.metadata.resource_version

    fetched = await client.get("v1", "ConfigMap", "typed", namespace, model=ConfigMapModel)
    assert fetched.data == {"k": "v"}
    fetched.data = {"k": "w"}
    updated = await client.update(fetched)
    assert isinstance(updated, ConfigMapModel) and updated.data == {"k": "w"}

    listing = await client.list("v1", "ConfigMap", namespace, model=ConfigMapModel)
    assert isinstance(listing, ObjectList)
    assert [item.metadata.name for item in listing.items if item.metadata.name == "typed"] == ["typed"]
    assert listing.resource_version


async def test_scope_decides_whether_a_namespace_is_used(client: Client, namespace: str) -> None:
    ns = await client.get("v1", "Namespace", namespace)
    assert ns["metadata"]["name"] == namespace
    # A namespace given for a cluster-scoped kind is ignored, as controller-runtime does.
    assert (await client.get("v1", "Namespace", namespace, "elsewhere"))["metadata"]["name"] == namespace
    with pytest.raises(ValueError, match="namespaced"):
        await client.get("v1", "ConfigMap", "cfg")


# ------------------------------------------------------------------------------------ errors


async def test_typed_errors(client: Client, namespace: str) -> None:
    first = await client.create(config_map("dup", namespace))
    with pytest.raises(AlreadyExists) as exists:
        await client.create(config_map("dup", namespace))
    assert exists.value.status == 409 and exists.value.reason == "AlreadyExists"
    assert not isinstance(exists.value, Conflict)

    await client.patch("v1", "ConfigMap", "dup", {"data": {"x": "1"}}, namespace)
    stale = dict(first, data={"x": "2"})
    with pytest.raises(Conflict) as conflict:
        await client.update(stale)
    assert conflict.value.status == 409

    with pytest.raises(Invalid) as invalid:
        await client.create(widget("bad", namespace, replicas=42))
    assert invalid.value.status == 422
    fields = [cause.get("field") for cause in invalid.value.causes]
    assert "spec.replicas" in fields

    with pytest.raises(NotFound):
        await client.delete("v1", "ConfigMap", "missing", namespace)

    first_again = await client.get("v1", "ConfigMap", "dup", namespace)
    with pytest.raises(Conflict):
        await client.delete(
            "v1", "ConfigMap", "dup", namespace, preconditions={"uid": "00000000-0000-0000-0000-000000000000"}
        )
    await client.delete(
        "v1", "ConfigMap", "dup", namespace, preconditions={"uid": first_again["metadata"]["uid"]}
    )


async def test_unknown_kind_raises_no_kind_match(client: Client) -> None:
    with pytest.raises(NoKindMatch):
        await client.get("v1", "NoSuchKind", "x", "default")
    with pytest.raises(NoKindMatch):
        await client.get("nosuch.example.com/v1", "Thing", "x", "default")


# ------------------------------------------------------------------------------------ CRD, subresources


async def test_widget_crud_status_and_scale(client: Client, namespace: str) -> None:
    created = await client.create(widget("w1", namespace, replicas=2))
    assert created["spec"] == {"replicas": 2, "size": "small"}  # defaults applied

    created["status"] = {"replicas": 2, "phase": "Ready", "selector": "app=w1"}
    created["spec"]["replicas"] = 5
    after_status = await client.update_status(created)
    assert after_status["status"]["phase"] == "Ready"
    assert after_status["spec"]["replicas"] == 2  # the status endpoint ignores spec

    patched = await client.patch_status(
        WIDGET_API, "Widget", "w1", {"status": {"phase": "Degraded"}}, namespace
    )
    assert patched["status"]["phase"] == "Degraded"

    scale = await client.get_scale(WIDGET_API, "Widget", "w1", namespace)
    assert scale["kind"] == "Scale"
    assert scale["spec"]["replicas"] == 2
    assert scale["status"]["replicas"] == 2

    scale["spec"]["replicas"] = 4
    await client.update_scale(WIDGET_API, "Widget", "w1", scale, namespace)
    assert (await client.get(WIDGET_API, "Widget", "w1", namespace))["spec"]["replicas"] == 4

    await client.update_scale(WIDGET_API, "Widget", "w1", 6, namespace)
    assert (await client.get(WIDGET_API, "Widget", "w1", namespace))["spec"]["replicas"] == 6

    await client.patch(WIDGET_API, "Widget", "w1", {"spec": {"replicas": 1}}, namespace, subresource="scale")
    assert (await client.get(WIDGET_API, "Widget", "w1", namespace))["spec"]["replicas"] == 1

    # Nothing runs the garbage collector's foreground step here, so the finalizer it adds stays.
    answer = await client.delete(WIDGET_API, "Widget", "w1", namespace, propagation_policy="Foreground")
    assert "foregroundDeletion" in answer["metadata"]["finalizers"]
    assert answer["metadata"]["deletionTimestamp"]
    await client.patch(WIDGET_API, "Widget", "w1", {"metadata": {"finalizers": None}}, namespace)
    await _wait_until_gone(client, namespace, "w1")


async def _wait_until_gone(client: Client, namespace: str, name: str) -> None:
    async def gone() -> bool:
        try:
            await client.get(WIDGET_API, "Widget", name, namespace)
        except NotFound:
            return True
        return False

    await eventually(gone, timeout=10, message=f"widget {name} gone")


# ------------------------------------------------------------------------------------ patches


async def test_every_patch_type(client: Client, namespace: str) -> None:
    await client.create(config_map("p", namespace, a="1"))

    merged = await client.patch("v1", "ConfigMap", "p", {"data": {"b": "2", "a": None}}, namespace)
    assert merged["data"] == {"b": "2"}

    ops = [{"op": "add", "path": "/data/c", "value": "3"}, {"op": "remove", "path": "/data/b"}]
    jsoned = await client.patch("v1", "ConfigMap", "p", ops, namespace, patch_type="json")
    assert jsoned["data"] == {"c": "3"}

    strategic = await client.patch(
        "v1", "ConfigMap", "p", {"metadata": {"labels": {"s": "1"}}}, namespace, patch_type="strategic"
    )
    assert strategic["metadata"]["labels"] == {"s": "1"}

    applied = await client.patch(
        "v1",
        "ConfigMap",
        "p",
        config_map("p", namespace, d="4"),
        namespace,
        patch_type="apply",
        force=True,
    )
    assert applied["data"]["d"] == "4"
    managers = {entry["manager"] for entry in applied["metadata"]["managedFields"]}
    assert "client-tests" in managers

    widget_applied = await client.patch(
        WIDGET_API,
        "Widget",
        "applied",
        widget("applied", namespace, replicas=3),
        namespace,
        patch_type="apply",
        field_manager="other-manager",
    )
    assert widget_applied["spec"]["replicas"] == 3


# ------------------------------------------------------------------------------------ watch


async def test_watch_streams_added_modified_deleted(client: Client, namespace: str) -> None:
    start = (await client.list("v1", "ConfigMap", namespace))["metadata"]["resourceVersion"]
    events: list[tuple[str, str]] = []

    async def consume() -> None:
        async for event in client.watch(
            "v1", "ConfigMap", namespace, resource_version=start, timeout_seconds=30
        ):
            if event["type"] == "BOOKMARK":
                continue
            events.append((event["type"], event["object"]["metadata"]["name"]))
            if event["type"] == "DELETED":
                return

    consumer = asyncio.create_task(consume())
    await client.create(config_map("watched", namespace, a="1"))
    await client.patch("v1", "ConfigMap", "watched", {"data": {"a": "2"}}, namespace)
    await client.delete("v1", "ConfigMap", "watched", namespace)
    await asyncio.wait_for(consumer, 20)
    assert events == [("ADDED", "watched"), ("MODIFIED", "watched"), ("DELETED", "watched")]


async def test_watch_of_a_missing_namespace_kind_raises_typed_error(client: Client) -> None:
    with pytest.raises(NoKindMatch):
        async for _ in client.watch("v1", "Nope", "default", timeout_seconds=1):
            pass


# ------------------------------------------------------------------------------------ metrics


async def test_requests_are_counted_and_timed(client: Client, namespace: str) -> None:
    await client.list("v1", "ConfigMap", namespace)  # discovery's own requests happen first
    labels = {"code": "404", "method": "GET", "host": client.host}
    before = metrics.registry.get_sample_value("rest_client_requests_total", labels) or 0.0
    timed = {"verb": "GET", "host": client.host}
    timed_before = (
        metrics.registry.get_sample_value("rest_client_request_duration_seconds_count", timed) or 0.0
    )
    with pytest.raises(NotFound):
        await client.get("v1", "ConfigMap", "absent", namespace)
    assert metrics.registry.get_sample_value("rest_client_requests_total", labels) == before + 1
    timed_after = metrics.registry.get_sample_value("rest_client_request_duration_seconds_count", timed)
    assert timed_after == timed_before + 1


# ------------------------------------------------------------------------------------ retries (local)


class ThrottlingServer:
    """Serves discovery for v1 ConfigMaps; GETs of the object answer ``failures`` errors first."""

    def __init__(self, failures: list[tuple[int, str | None]]) -> None:
        self.failures = list(failures)
        self.object_requests = 0
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def discovery(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "kind": "APIResourceList",
                "groupVersion": "v1",
                "resources": [
                    {"name": "configmaps", "namespaced": True, "kind": "ConfigMap", "verbs": ["get"]}
                ],
            }
        )

    async def config_map(self, request: web.Request) -> web.Response:
        self.object_requests += 1
        if self.failures:
            status, retry_after = self.failures.pop(0)
            headers = {"Retry-After": retry_after} if retry_after is not None else {}
            reason = "TooManyRequests" if status == 429 else "ServiceUnavailable"
            body = {
                "kind": "Status",
                "status": "Failure",
                "reason": reason,
                "code": status,
                "message": "slow down",
            }
            return web.json_response(body, status=status, headers=headers)
        return web.json_response(config_map(request.match_info["name"], "ns", ok="yes"))

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/api/v1/namespaces/ns/configmaps/{name}", self.config_map)

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/api/v1", self.discovery)
        self.add_routes(app)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


@contextlib.asynccontextmanager
async def local_client(url: str, **options: Any) -> AsyncIterator[Client]:
    configuration = Configuration(host=url)
    async with await Client.from_configuration(configuration, ClientOptions(**options)) as c:
        yield c


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    recorded: list[float] = []

    async def record(delay: float) -> None:
        recorded.append(delay)

    monkeypatch.setattr(client_module, "_sleep", record)
    return recorded


async def test_429_is_retried_after_retry_after(sleeps: list[float]) -> None:
    async with ThrottlingServer([(429, "2")]) as server, local_client(server.url) as c:
        labels = {"code": "429", "method": "GET", "host": c.host}
        before = metrics.registry.get_sample_value("rest_client_requests_total", labels) or 0.0
        obj = await c.get("v1", "ConfigMap", "x", "ns")
        assert obj["data"] == {"ok": "yes"}
        assert server.object_requests == 2
        assert sleeps == [2.0]
        assert metrics.registry.get_sample_value("rest_client_requests_total", labels) == before + 1


async def test_503_without_retry_after_backs_off_and_the_wait_is_capped(sleeps: list[float]) -> None:
    async with (
        ThrottlingServer([(503, None), (429, "600")]) as server,
        local_client(server.url, max_retry_wait=5) as c,
    ):
        await c.get("v1", "ConfigMap", "x", "ns")
        assert server.object_requests == 3
        assert sleeps == [0.5, 5.0]


async def test_retries_are_bounded(sleeps: list[float]) -> None:
    async with ThrottlingServer([(429, "1")] * 5) as server, local_client(server.url, retries=2) as c:
        with pytest.raises(TooManyRequests) as caught:
            await c.get("v1", "ConfigMap", "x", "ns")
        assert caught.value.retry_after == 1.0
        assert server.object_requests == 3
        assert sleeps == [1.0, 1.0]

    async with ThrottlingServer([(503, None)]) as server, local_client(server.url, retries=0) as c:
        with pytest.raises(ServiceUnavailable):
            await c.get("v1", "ConfigMap", "x", "ns")


async def test_client_side_qps_limits_a_burst() -> None:
    async with ThrottlingServer([]) as server, local_client(server.url, qps=50, burst=1) as c:
        loop = asyncio.get_running_loop()
        await c.get("v1", "ConfigMap", "x", "ns")  # spends the burst token (plus discovery's)
        started = loop.time()
        for _ in range(3):
            await c.get("v1", "ConfigMap", "x", "ns")
        assert loop.time() - started >= 3 / 50 * 0.9


async def test_kubeconfig_file_path_works_like_the_dict(env: Environment, namespace: str) -> None:
    async with await Client.from_kubeconfig(env.kubeconfig_path) as from_file:
        assert (await from_file.get("v1", "Namespace", namespace))["metadata"]["name"] == namespace


# ------------------------------------------------------------------------------------ watch framing


class WatchStreamServer(ThrottlingServer):
    """Serves a ConfigMap watch written in the shapes a real server's stream arrives in: many
    events in one write (a backlog), and one event cut across two writes."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        super().__init__([])
        self.events = events

    async def watch(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        lines = [json.dumps(event).encode() + b"\n" for event in self.events]
        backlog, cut, rest = lines[:-2], lines[-2], lines[-1]
        await response.write(b"".join(backlog))
        await response.write(cut[:17])
        await asyncio.sleep(0.05)  # allow-sleep: the client must see the first half of the line alone
        await response.write(cut[17:] + rest)
        await response.write_eof()
        return response

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/api/v1/namespaces/ns/configmaps", self.watch)


async def test_watch_decodes_every_event_of_a_backlog_and_of_a_line_cut_across_reads() -> None:
    sent = [
        {"type": "MODIFIED", "object": config_map(f"cm-{i}", "ns", seq=str(i), pad="é" * 300)}
        for i in range(300)
    ]
    async with WatchStreamServer(sent) as server, local_client(server.url) as c:
        received = [event async for event in c.watch("v1", "ConfigMap", "ns", timeout_seconds=5)]
    assert received == sent


class AcceptRecordingServer(ThrottlingServer):
    """Records the Accept header of every request: discovery, GET, LIST, watch and POST."""

    def __init__(self) -> None:
        super().__init__([])
        self.accepts: list[tuple[str, str, str | None]] = []

    @web.middleware
    async def record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.accepts.append((request.method, request.path, request.headers.get("Accept")))
        response: web.StreamResponse = await handler(request)
        return response

    async def collection(self, request: web.Request) -> web.StreamResponse:
        if request.method == "POST":
            return web.json_response(await request.json(), status=201)
        if request.query.get("watch") in ("1", "true"):
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            await response.prepare(request)
            event = {"type": "ADDED", "object": config_map("w", "ns")}
            await response.write(json.dumps(event).encode() + b"\n")
            await response.write_eof()
            return response
        listed = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}}
        return web.json_response({**listed, "items": [config_map("x", "ns")]})

    def add_routes(self, app: web.Application) -> None:
        app.middlewares.append(self.record)
        super().add_routes(app)
        app.router.add_route("*", "/api/v1/namespaces/ns/configmaps", self.collection)


async def test_the_client_asks_for_json_only() -> None:
    # The client decodes JSON only, and servers answer protobuf to clients that prefer it (as
    # kube-apiserver does for client-go's "application/vnd.kubernetes.protobuf,application/json"):
    # every request must ask for JSON and nothing else.
    async with AcceptRecordingServer() as server, local_client(server.url) as c:
        await c.get("v1", "ConfigMap", "x", "ns")
        await c.list("v1", "ConfigMap", "ns")
        await c.create(config_map("new", "ns"))
        assert [e["type"] async for e in c.watch("v1", "ConfigMap", "ns", timeout_seconds=5)] == ["ADDED"]
    paths = {(method, path) for method, path, _ in server.accepts}
    assert {
        ("GET", "/api/v1"),
        ("GET", "/api/v1/namespaces/ns/configmaps/x"),
        ("GET", "/api/v1/namespaces/ns/configmaps"),
        ("POST", "/api/v1/namespaces/ns/configmaps"),
    } <= paths
    assert {accept for _, _, accept in server.accepts} == {"application/json"}


# ------------------------------------------------------------------------------------ pushed watch


class _Enough(Exception):
    """Raised by a test's consumer to end a pushed watch."""


async def test_watch_events_pushes_added_modified_deleted_over_tls(client: Client, namespace: str) -> None:
    # The API server's own TLS endpoint, credentials and discovery; the consumer ends the stream by
    # raising, and that exception is what the call raises.
    start = (await client.list("v1", "ConfigMap", namespace))["metadata"]["resourceVersion"]
    events: list[tuple[str, str]] = []

    def on_event(event: dict[str, Any]) -> None:
        if event["type"] == "BOOKMARK":
            return
        events.append((event["type"], event["object"]["metadata"]["name"]))
        if event["type"] == "DELETED":
            raise _Enough()

    async def consume() -> None:
        with pytest.raises(_Enough):
            await client.watch_events(
                "v1", "ConfigMap", namespace, on_event=on_event, resource_version=start, timeout_seconds=30
            )

    consumer = asyncio.create_task(consume())
    await client.create(config_map("pushed", namespace, a="1"))
    await client.patch("v1", "ConfigMap", "pushed", {"data": {"a": "2"}}, namespace)
    await client.delete("v1", "ConfigMap", "pushed", namespace)
    await asyncio.wait_for(consumer, 20)
    assert events == [("ADDED", "pushed"), ("MODIFIED", "pushed"), ("DELETED", "pushed")]


def test_watch_events_works_on_uvloop(env: Environment) -> None:
    # The image runs on uvloop, whose TLS transports are not asyncio.Transport subclasses: the
    # reader must work on them too (a whole ADDED event over TLS, then the stream's end).
    import uvloop

    async def main() -> list[str]:
        async with await Client.from_kubeconfig(env.kubeconfig) as c:
            name = "uvloop-watch"
            with contextlib.suppress(NotFound):
                await c.delete("v1", "ConfigMap", name, "default")
            start = (await c.list("v1", "ConfigMap", "default"))["metadata"]["resourceVersion"]
            await c.create(config_map(name, "default"))
            seen: list[str] = []

            def on_event(event: dict[str, Any]) -> None:
                if event["type"] != "BOOKMARK" and event["object"]["metadata"]["name"] == name:
                    seen.append(event["type"])
                    raise _Enough()

            with pytest.raises(_Enough):
                await c.watch_events(
                    "v1",
                    "ConfigMap",
                    "default",
                    on_event=on_event,
                    resource_version=start,
                    timeout_seconds=10,
                )
            await c.delete("v1", "ConfigMap", name, "default")
            return seen

    # A loop of its own, in this thread: the session's loop is asyncio's.
    assert uvloop.run(main()) == ["ADDED"]


async def test_watch_events_of_a_missing_kind_raises_typed_error(client: Client) -> None:
    with pytest.raises(NoKindMatch):
        await client.watch_events("v1", "Nope", "default", on_event=lambda _: None, timeout_seconds=1)


async def test_watch_events_decodes_every_event_of_a_backlog_and_of_a_line_cut_across_reads() -> None:
    sent = [
        {"type": "MODIFIED", "object": config_map(f"cm-{i}", "ns", seq=str(i), pad="é" * 300)}
        for i in range(300)
    ]
    received: list[dict[str, Any]] = []
    async with WatchStreamServer(sent) as server, local_client(server.url) as c:
        count = await c.watch_events("v1", "ConfigMap", "ns", on_event=received.append, timeout_seconds=5)
    assert received == sent
    assert count == len(sent)


class WatchAnswerServer(ThrottlingServer):
    """A ConfigMap watch whose answer the test picks: errors first (``failures``), then a stream
    written as ``writes`` (bytes each), then ``tail``: ``end`` (the final chunk), ``cut`` (the
    connection aborted mid-body), ``silent`` (held open, nothing sent, until the server stops) or
    ``heartbeat`` (a blank line every 10 ms until a write finds the client gone)."""

    def __init__(
        self,
        failures: list[tuple[int, str | None]],
        writes: list[bytes],
        tail: Literal["end", "cut", "silent", "heartbeat"] = "end",
    ) -> None:
        super().__init__(failures)
        self.writes = writes
        self.tail = tail
        self.watch_requests = 0
        self.stream_left = asyncio.Event()
        self._release = asyncio.Event()

    async def __aexit__(self, *exc: object) -> None:
        self._release.set()
        await super().__aexit__(*exc)

    async def watch(self, request: web.Request) -> web.StreamResponse:
        self.watch_requests += 1
        if self.failures:
            status, retry_after = self.failures.pop(0)
            headers = {"Retry-After": retry_after} if retry_after is not None else {}
            reasons = {401: "Unauthorized", 410: "Expired", 429: "TooManyRequests", 503: "ServiceUnavailable"}
            body = {
                "kind": "Status",
                "status": "Failure",
                "reason": reasons.get(status, "InternalError"),
                "code": status,
                "message": f"answered {status}",
            }
            return web.json_response(body, status=status, headers=headers)
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        try:
            for data in self.writes:
                await response.write(data)
            if self.tail == "cut":
                assert request.transport is not None
                request.transport.abort()  # no final chunk: the answer ends mid-body
            elif self.tail == "silent":
                await self._release.wait()
            elif self.tail == "heartbeat":
                with contextlib.suppress(ConnectionError):
                    for _ in range(3000):  # 30 s at most
                        await response.write(b"\n")
                        await asyncio.sleep(0.01)  # allow-sleep: the heartbeat's period
            else:
                await response.write_eof()
            return response
        finally:
            self.stream_left.set()

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/api/v1/namespaces/ns/configmaps", self.watch)


def _line(name: str) -> bytes:
    return json.dumps({"type": "ADDED", "object": config_map(name, "ns")}).encode() + b"\n"


async def test_watch_events_retries_429_and_raises_the_typed_error_of_a_final_answer(
    sleeps: list[float],
) -> None:
    async with WatchAnswerServer([(429, "2")], [_line("a")]) as server, local_client(server.url) as c:
        labels = {"code": "429", "method": "GET", "host": c.host}
        before = metrics.registry.get_sample_value("rest_client_requests_total", labels) or 0.0
        names: list[str] = []
        await c.watch_events(
            "v1", "ConfigMap", "ns", on_event=lambda e: names.append(e["object"]["metadata"]["name"])
        )
        assert names == ["a"]
        assert server.watch_requests == 2 and sleeps == [2.0]
        assert metrics.registry.get_sample_value("rest_client_requests_total", labels) == before + 1

    async with WatchAnswerServer([(410, None)], []) as server, local_client(server.url) as c:
        with pytest.raises(Gone) as caught:
            await c.watch_events("v1", "ConfigMap", "ns", on_event=lambda _: None)
        assert caught.value.reason == "Expired" and "answered 410" in str(caught.value)


async def test_a_watch_answered_401_is_not_resent_when_the_credentials_cannot_be_refreshed(
    sleeps: list[float],
) -> None:
    # A client built from a Configuration has no kubeconfig to reload: the 401 is the answer.
    async with WatchAnswerServer([(401, None)], [_line("a")]) as server, local_client(server.url) as c:
        with pytest.raises(Unauthorized):
            await c.watch_events("v1", "ConfigMap", "ns", on_event=lambda _: None)
        assert server.watch_requests == 1 and sleeps == []


async def test_watch_events_raises_connection_reset_when_the_stream_is_cut() -> None:
    async with (
        WatchAnswerServer([], [_line("a"), b'{"type": "ADD'], "cut") as server,
        local_client(server.url) as c,
    ):
        names: list[str] = []
        with pytest.raises(ConnectionResetError, match="closed before the answer ended"):
            await c.watch_events(
                "v1", "ConfigMap", "ns", on_event=lambda e: names.append(e["object"]["metadata"]["name"])
            )
        assert names == ["a"]


async def test_a_consumer_exception_ends_the_stream_at_once_and_closes_the_connection() -> None:
    # Three events in one read; the consumer fails on the second: the third is not delivered, the
    # call raises without waiting for the server (which would keep the stream open), and the
    # server sees its client go.
    async with (
        WatchAnswerServer([], [_line("a") + _line("b") + _line("c")], "heartbeat") as server,
        local_client(server.url) as c,
    ):
        names: list[str] = []

        def on_event(event: dict[str, Any]) -> None:
            names.append(event["object"]["metadata"]["name"])
            if names[-1] == "b":
                raise _Enough()

        with pytest.raises(_Enough):
            await asyncio.wait_for(c.watch_events("v1", "ConfigMap", "ns", on_event=on_event), 10)
        assert names == ["a", "b"]
        await asyncio.wait_for(server.stream_left.wait(), 10)


async def test_watch_events_fails_a_silent_stream_after_the_inactivity_timeout() -> None:
    async with (
        WatchAnswerServer([], [_line("a")], "silent") as server,
        local_client(server.url) as c,
    ):
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(TimeoutError, match=r"no data for 0\.3s"):
            await asyncio.wait_for(
                c.watch_events("v1", "ConfigMap", "ns", on_event=lambda _: None, inactivity_timeout=0.3), 10
            )
        assert loop.time() - started >= 0.3
