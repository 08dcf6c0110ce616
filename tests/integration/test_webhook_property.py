"""Property: whatever is POSTed, the webhook answers an AdmissionReview or a 4xx that says why, and lives on.

The server serves a test Widget validator/defaulter and the real ControlPlane validator and
defaulter (on the paths ``cpo run`` uses), the validator looking ControlPlanes up in a small store
that holds well-formed and malformed ones. Generated bodies include AdmissionReviews of generated
ControlPlanes (any replica count or type, strategies, failure domains, selectors, malformed ones
too) and of ``autoscaling/v1`` Scales for ``controlplanes/scale``. The ControlPlane webhooks must
never answer with a 5xx, nor with ``allowed: false`` and code 500 (the server's answer when a
validator raises something other than ``Denied``): every refusal is a ``Denied`` with a message.

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

from runtime.jsoncodec import JSON
from runtime.webhook import (
    OPERATIONS,
    AdmissionRequest,
    AdmissionResponse,
    WebhookServer,
    WebhookServerOptions,
    allowed,
    mutate_path,
    review_for,
    validate_path,
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
from webhooks.controlplane_admission import ControlPlaneDefaulter, ControlPlaneValidator

T = TypeVar("T")
MAX_BODY = 16 * 1024
EXAMPLES = 2400

CP_GROUP, CP_VERSION, CP_KIND = "controlplane.cpo.dev", "v1alpha1", "ControlPlane"
CP_VALIDATE = validate_path(CP_GROUP, CP_VERSION, CP_KIND)
CP_MUTATE = mutate_path(CP_GROUP, CP_VERSION, CP_KIND)
CP_PATHS = (CP_VALIDATE, CP_MUTATE)
_TEMPLATE = {"spec": {"providerSpec": {"value": {}}}}
# What the validator's lookup finds for a scale request, by name ("missing" is not there).
STORED: dict[str, Any] = {
    "stacked": {"spec": {"replicas": 3, "template": _TEMPLATE}},
    "external": {"spec": {"replicas": 3, "etcd": {"external": True}, "template": _TEMPLATE}},
    "surge0": {"spec": {"replicas": 3, "strategy": {"rollingUpdate": {"maxSurge": 0}}}},
    "bad-spec": {"spec": 7},
    "bad-etcd": {"spec": {"etcd": ["external"], "strategy": "fast"}},
    "bad-surge": {"spec": {"strategy": {"type": 3, "rollingUpdate": {"maxSurge": "50%"}}}},
    "no-spec": {"metadata": {"name": "no-spec"}},
}
STORED_NAMES = [*STORED, "missing"]


async def stored_controlplane(namespace: str, name: str) -> Any:
    return STORED.get(name)


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
    server.register_validator(CP_GROUP, CP_VERSION, CP_KIND, ControlPlaneValidator(stored_controlplane))
    server.register_defaulter(CP_GROUP, CP_VERSION, CP_KIND, ControlPlaneDefaulter())
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
paths = st.sampled_from([VALIDATE, MUTATE, "/echo", *CP_PATHS])


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


# --- ControlPlanes and Scales ----------------------------------------------------------------------

replica_values = st.one_of(
    st.integers(-3, 12),
    st.integers(),
    st.sampled_from([None, "3", "4", 3.0, 2.5, True, False, [], {}, [3]]),
)
label_values = st.sampled_from(["master", "worker", "", "a" * 64, "bad value!", 3, None])
label_keys = st.sampled_from(
    ["machine.openshift.io/cluster-api-machine-role", "role", "a/b/c", "", "-bad", "x" * 70]
)
label_maps = st.one_of(st.dictionaries(label_keys, label_values, max_size=3), json_values)
selector_requirements = st.fixed_dictionaries(
    {},
    optional={
        "key": st.one_of(label_keys, json_values),
        "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Bogus", "", 1]),
        "values": st.one_of(st.lists(label_values, max_size=3), json_values),
    },
)
selectors = st.one_of(
    st.none(),
    st.just({"matchLabels": {"machine.openshift.io/cluster-api-machine-role": "master"}}),
    st.fixed_dictionaries(
        {},
        optional={
            "matchLabels": label_maps,
            "matchExpressions": st.one_of(st.lists(selector_requirements, max_size=3), json_values),
        },
    ),
    json_values,
)
strategies = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["RollingUpdate", "OnDelete", "Recreate", "", 1, None]),
            "rollingUpdate": st.one_of(
                st.fixed_dictionaries(
                    {},
                    optional={"maxSurge": st.one_of(st.integers(-1, 3), st.sampled_from(["1", "50%", None]))},
                ),
                json_values,
            ),
        },
    ),
    json_values,
)
failure_domains = st.one_of(
    st.none(),
    st.lists(
        st.one_of(
            st.fixed_dictionaries(
                {
                    "name": st.one_of(
                        st.sampled_from(["us-east-1a", "us-east-1b", "Bad_Name", "", "a" * 70]), json_values
                    )
                },
                optional={"providerSpec": json_objects},
            ),
            json_values,
        ),
        max_size=4,
    ),
    json_values,
)
templates = st.one_of(
    st.just(_TEMPLATE),
    st.fixed_dictionaries(
        {},
        optional={
            "metadata": st.one_of(st.fixed_dictionaries({}, optional={"labels": label_maps}), json_values),
            "spec": st.one_of(st.just(_TEMPLATE["spec"]), json_values),
        },
    ),
    json_values,
)
cp_specs = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "replicas": replica_values,
            "selector": selectors,
            "template": templates,
            "failureDomains": failure_domains,
            "strategy": strategies,
            "etcd": st.one_of(
                st.fixed_dictionaries({}, optional={"external": st.one_of(st.booleans(), json_values)}),
                json_values,
            ),
            "enableAutorepair": st.one_of(st.booleans(), json_values),
            "paused": st.booleans(),
        },
    ),
    json_values,
)


@st.composite
def controlplanes(draw: st.DrawFn) -> JSON:
    obj: JSON = {
        "apiVersion": f"{CP_GROUP}/{CP_VERSION}",
        "kind": CP_KIND,
        "metadata": draw(
            st.one_of(
                st.fixed_dictionaries(
                    {"name": st.sampled_from(STORED_NAMES)},
                    optional={"namespace": st.just("ns"), "labels": label_maps, "finalizers": json_values},
                ),
                json_values,
            )
        ),
    }
    if draw(st.integers(0, 9)):  # now and then a ControlPlane without a spec at all
        obj["spec"] = draw(cp_specs)
    return obj


def cp_request(operation: str, obj: Any, old: Any, name: str, uid: str, sub_resource: str = "") -> JSON:
    scale = sub_resource == "scale"
    req: JSON = {
        "uid": uid,
        "kind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}
        if scale
        else {"group": CP_GROUP, "version": CP_VERSION, "kind": CP_KIND},
        "resource": {"group": CP_GROUP, "version": CP_VERSION, "resource": "controlplanes"},
        "operation": operation,
        "name": name,
        "namespace": "ns",
        "object": obj,
        "oldObject": old,
        "userInfo": {"username": "tester"},
        "dryRun": False,
    }
    if sub_resource:
        req["subResource"] = sub_resource
    return req


@st.composite
def cp_reviews(draw: st.DrawFn) -> Body:
    """Well-formed reviews of generated ControlPlanes (create, update with an old one, delete)."""
    operation = draw(st.sampled_from(["CREATE", "UPDATE", "DELETE", "CREATE", "UPDATE"]))
    obj = draw(controlplanes())
    old = draw(controlplanes()) if operation != "CREATE" else None
    if operation == "UPDATE" and draw(st.booleans()):
        old = json.loads(json.dumps(obj))  # unchanged spec: a metadata-only update
        old["metadata"] = {"name": "stacked"}
    uid = draw(st.uuids()).hex
    name = draw(st.sampled_from(STORED_NAMES))
    req = cp_request(operation, None if operation == "DELETE" else obj, old, name, uid)
    return Body("cp", draw(st.sampled_from(CP_PATHS)), json.dumps(review_for(req)).encode(), uid=uid)


@st.composite
def scales(draw: st.DrawFn, name: str) -> JSON:
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": draw(st.one_of(st.just({"name": name, "namespace": "ns"}), st.just({}), json_values)),
        "spec": draw(
            st.one_of(st.fixed_dictionaries({}, optional={"replicas": replica_values}), json_values)
        ),
        "status": {"replicas": 3, "selector": "machine.openshift.io/cluster-api-machine-role=master"},
    }


@st.composite
def cp_scale_reviews(draw: st.DrawFn) -> Body:
    """``kubectl scale``: UPDATE of an autoscaling/v1 Scale on controlplanes/scale, for stored,
    malformed and missing ControlPlanes."""
    name = draw(st.sampled_from(STORED_NAMES))
    operation = draw(st.sampled_from(["UPDATE", "UPDATE", "UPDATE", "CREATE"]))
    uid = draw(st.uuids()).hex
    req = cp_request(operation, draw(scales(name)), draw(scales(name)), name, uid, sub_resource="scale")
    return Body("cp-scale", draw(st.sampled_from(CP_PATHS)), json.dumps(review_for(req)).encode(), uid=uid)


@st.composite
def cp_broken_reviews(draw: st.DrawFn) -> Body:
    """A ControlPlane review with one envelope or request field dropped or replaced."""
    review = review_for(cp_request("UPDATE", draw(controlplanes()), draw(controlplanes()), "stacked", "b"))
    target: dict[str, Any] = review if draw(st.booleans()) else review["request"]
    key = draw(st.sampled_from(sorted(target)))
    if draw(st.booleans()):
        del target[key]
    else:
        target[key] = draw(json_values)
    return Body("cp-broken", draw(st.sampled_from(CP_PATHS)), json.dumps(review).encode())


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
    valid_reviews(),
    broken_reviews(),
    random_bytes,
    random_json,
    json_with_nan,
    wrong_content_type,
    too_large,
    cp_reviews(),
    cp_scale_reviews(),
    cp_broken_reviews(),
    cp_reviews(),
    cp_scale_reviews(),
)

EXPECTED_STATUS = {
    "valid": {200},
    "broken": {200, 400},  # dropping an optional field (name, dryRun, …) leaves a valid review
    "bytes": {400},
    "json": {400},
    "nan": {400},
    "content-type": {400},
    "too-large": {413},
    "cp": {200},
    "cp-scale": {200},
    "cp-broken": {200, 400},
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
        if body.path in CP_PATHS:
            # 500 would be a validator or defaulter that crashed; 504 one that hung.
            assert response["allowed"] or response["status"]["code"] in (400, 403, 422), (body, raw)
    else:
        assert answer["kind"] == "Status" and answer["status"] == "Failure" and answer["code"] == status
        assert isinstance(answer["message"], str) and answer["message"]


def test_every_body_gets_a_review_or_a_4xx_and_the_server_lives_on(harness: Harness) -> None:
    seen: dict[str, int] = {}
    outcomes: dict[tuple[str, str], int] = {}

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
        if body.category in ("cp", "cp-scale") and body.path == CP_VALIDATE and status == 200:
            verdict = "allowed" if answer["response"]["allowed"] else "denied"
            outcomes[(body.category, verdict)] = outcomes.get((body.category, verdict), 0) + 1

    answer_is_well_formed()
    print("posted bodies per category:", seen, "ControlPlane outcomes:", outcomes)
    assert sum(seen.values()) >= 2000, seen
    assert set(seen) == set(EXPECTED_STATUS), seen
    assert seen["cp"] + seen["cp-scale"] >= 500, seen
    # The generators reach both verdicts on both kinds (hundreds of each in practice).
    for category in ("cp", "cp-scale"):
        assert outcomes.get((category, "allowed"), 0) > 0 and outcomes.get((category, "denied"), 0) > 0

    status, answer, raw = harness.post(
        VALIDATE, json.dumps(review_for(request(obj=widget(replicas=3)))).encode(), "application/json"
    )
    assert status == 200 and answer["response"]["allowed"] is True, raw
    # ... and the ControlPlane webhooks still give their verdicts, the scale one using the lookup.
    assert_controlplane_webhooks_answer(harness)


def cp_verdict(harness: Harness, path: str, req: JSON) -> JSON:
    status, answer, raw = harness.post(path, json.dumps(review_for(req)).encode(), "application/json")
    assert status == 200, raw
    response: JSON = answer["response"]
    return response


def assert_controlplane_webhooks_answer(harness: Harness) -> None:
    odd = "must be an odd number (1, 3, 5, 7) for a stacked etcd control plane"
    even = {
        "apiVersion": f"{CP_GROUP}/{CP_VERSION}",
        "kind": CP_KIND,
        "metadata": {"name": "stacked"},
        "spec": {"replicas": 4, "template": _TEMPLATE},
    }
    refused = cp_verdict(harness, CP_VALIDATE, cp_request("CREATE", even, None, "stacked", "c1"))
    assert not refused["allowed"] and refused["status"]["code"] == 422
    assert f"spec.replicas: Invalid value: 4: {odd}" in refused["status"]["message"], refused

    def scale_to(name: str, replicas: int) -> JSON:
        new = {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"replicas": replicas},
        }
        old = {**new, "spec": {"replicas": 3}}
        return cp_verdict(harness, CP_VALIDATE, cp_request("UPDATE", new, old, name, "s1", "scale"))

    assert odd in scale_to("stacked", 4)["status"]["message"]
    assert scale_to("external", 4)["allowed"] is True  # found through the lookup: external etcd
    assert odd in scale_to("bad-spec", 4)["status"]["message"]  # malformed stored object: stacked rules

    bare = {"apiVersion": f"{CP_GROUP}/{CP_VERSION}", "kind": CP_KIND, "metadata": {"name": "bare"}}
    defaulted = cp_verdict(harness, CP_MUTATE, cp_request("CREATE", bare, None, "bare", "m1"))
    (added,) = json.loads(base64.b64decode(defaulted["patch"]))
    assert added["op"] == "add" and added["path"] == "/spec", added
    master = {"machine.openshift.io/cluster-api-machine-role": "master"}
    assert added["value"] == {
        "replicas": 1,
        "state": "Active",
        "selector": {"matchLabels": master},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
        "enableAutorepair": True,
    }
