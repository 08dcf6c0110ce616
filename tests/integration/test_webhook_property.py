"""Property: whatever is POSTed, the webhook answers an AdmissionReview or a 4xx that says why, and lives on.

Hypothesis drives a synchronous test, so the server and its client run on an event loop in a
background thread; each generated body is one real HTTPS request over a shared keep-alive session.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.webhook import (
    OPERATIONS,
    AdmissionRequest,
    AdmissionResponse,
    WebhookServer,
    WebhookServerOptions,
    allowed,
    review_for,
)
from tests.integration.test_webhook_server import (
    GROUP,
    KIND,
    MUTATE,
    VALIDATE,
    VERSION,
    WidgetDefaulter,
    WidgetValidator,
    request,
    widget,
)
from tests.support.webhooks import ServingCerts, post, running_webhook_server

T = TypeVar("T")
MAX_BODY = 16 * 1024
EXAMPLES = 2100


class LoopThread:
    """An event loop in a daemon thread; :meth:`run` executes a coroutine there and waits for it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="webhook-property-loop", daemon=True
        )
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


class Echo:
    """A raw handler that allows everything, echoing one warning."""

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        return allowed(warnings=[f"saw {request.operation}"])


@dataclass
class Harness:
    thread: LoopThread
    session: aiohttp.ClientSession
    base: str

    def post(self, path: str, body: bytes, content_type: str) -> tuple[int, Any, bytes]:
        return self.thread.run(post(self.session, self.base + path, body, content_type))


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    certs = ServingCerts(tmp_path / "certs")
    certs.write()
    server = WebhookServer(
        WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=str(certs.directory), max_body_bytes=MAX_BODY)
    )
    server.register_validator(GROUP, VERSION, KIND, WidgetValidator())
    server.register_defaulter(GROUP, VERSION, KIND, WidgetDefaulter())
    server.register("/echo", Echo())
    thread = LoopThread()
    entered = asyncio.Event()
    done = threading.Event()

    async def serve() -> None:
        async with running_webhook_server(server):
            entered.set()
            await asyncio.get_running_loop().run_in_executor(None, done.wait)

    serving = asyncio.run_coroutine_threadsafe(serve(), thread.loop)

    async def open_session() -> aiohttp.ClientSession:
        await entered.wait()
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=certs.client_context(), limit=4))

    session = thread.run(open_session())
    try:
        yield Harness(thread, session, f"https://127.0.0.1:{server.port}")
    finally:
        thread.run(session.close())
        done.set()
        serving.result(30)
        thread.close()


# --- generated bodies ------------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=10), json_values, max_size=5)
paths = st.sampled_from([VALIDATE, MUTATE, "/echo"])


@dataclass
class Body:
    category: str
    path: str
    data: bytes
    content_type: str = "application/json"
    uid: str | None = None


@st.composite
def valid_reviews(draw: st.DrawFn) -> Body:
    """Well-formed reviews of random objects (a widget, or anything at all)."""
    operation = draw(st.sampled_from(sorted(OPERATIONS)))
    spec = draw(
        st.fixed_dictionaries(
            {}, optional={"replicas": st.integers(0, 11), "size": st.sampled_from(["small", "large"])}
        )
    )
    obj = draw(st.one_of(st.builds(lambda s: widget(**s), st.just(spec)), json_objects))
    old = draw(st.one_of(st.none(), st.just(widget()), json_objects))
    uid = draw(st.text(min_size=1, max_size=36))
    req = request(operation, obj=None if operation == "DELETE" else obj, old=old, uid=uid)
    req["dryRun"] = draw(st.booleans())
    return Body("valid", draw(paths), json.dumps(review_for(req)).encode(), uid=uid)


@st.composite
def broken_reviews(draw: st.DrawFn) -> Body:
    """A valid review with one field of the envelope or request dropped or replaced by a random value."""
    review = review_for(request(obj=widget(), uid="broken"))
    where = draw(st.sampled_from(["top", "request"]))
    target: dict[str, Any] = review if where == "top" else review["request"]
    key = draw(st.sampled_from(sorted(target)))
    if draw(st.booleans()):
        del target[key]
    else:
        target[key] = draw(json_values)
    return Body("broken", draw(paths), json.dumps(review).encode())


random_bytes = st.builds(lambda p, b: Body("bytes", p, b), paths, st.binary(max_size=300))
random_json = st.builds(
    lambda p, v: Body("json", p, json.dumps(v).encode()), paths, st.one_of(json_values, json_objects)
)
json_with_nan = st.builds(
    lambda p, v: Body("nan", p, json.dumps({"apiVersion": "admission.k8s.io/v1", "x": v}).encode()),
    paths,
    st.sampled_from([float("nan"), float("inf"), float("-inf")]),
)
wrong_content_type = st.builds(
    lambda p, ct: Body("content-type", p, json.dumps(review_for(request(obj=widget()))).encode(), ct),
    paths,
    st.sampled_from(["text/plain", "application/x-www-form-urlencoded", "application/yaml", ""]),
)
too_large = st.builds(
    lambda p, n: Body("too-large", p, b'{"apiVersion": "' + b"x" * n + b'"}'),
    paths,
    st.integers(MAX_BODY, MAX_BODY + 4096),
)
bodies = st.one_of(
    valid_reviews(), broken_reviews(), random_bytes, random_json, json_with_nan, wrong_content_type, too_large
)

EXPECTED_STATUS = {
    "valid": {200},
    "broken": {200, 400},  # dropping an optional field (name, dryRun, …) leaves a valid review
    "bytes": {400},
    "json": {400},
    "nan": {400},
    "content-type": {400},
    "too-large": {413},
}


def check_answer(body: Body, status: int, answer: Any, raw: bytes) -> None:
    assert status < 500, (status, raw)
    assert status in EXPECTED_STATUS[body.category], (body, status, raw)
    assert isinstance(answer, dict), raw
    if status == 200:
        assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
        response = answer["response"]
        assert isinstance(response["uid"], str) and response["uid"]
        if body.uid is not None:
            assert response["uid"] == body.uid
        assert isinstance(response["allowed"], bool)
        assert isinstance(response["status"]["code"], int)
        if not response["allowed"]:
            assert response["status"]["code"] >= 400 and response["status"]["message"]
        if "patch" in response:
            assert response["patchType"] == "JSONPatch"
            assert isinstance(json.loads(base64.b64decode(response["patch"], validate=True)), list)
        assert all(isinstance(w, str) for w in response.get("warnings", []))
    else:
        assert answer["kind"] == "Status" and answer["status"] == "Failure" and answer["code"] == status
        assert isinstance(answer["message"], str) and answer["message"]


def test_every_body_gets_a_review_or_a_4xx_and_the_server_lives_on(harness: Harness) -> None:
    seen: dict[str, int] = {}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )
    @given(bodies)
    def answer_is_well_formed(body: Body) -> None:
        status, answer, raw = harness.post(body.path, body.data, body.content_type)
        seen[body.category] = seen.get(body.category, 0) + 1
        check_answer(body, status, answer, raw)

    answer_is_well_formed()
    print("posted bodies per category:", seen)
    assert sum(seen.values()) >= 2000, seen
    assert set(seen) == set(EXPECTED_STATUS), seen

    status, answer, raw = harness.post(
        VALIDATE, json.dumps(review_for(request(obj=widget(replicas=3)))).encode(), "application/json"
    )
    assert status == 200 and answer["response"]["allowed"] is True, raw
