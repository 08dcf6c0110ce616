"""The admission webhook server over real TLS: answers, refusals, bad bodies, metrics, cert reload."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import jsonpatch
import pytest
import pytest_asyncio
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from runtime.certwatcher import CertificateError, CertWatcher
from runtime.jsoncodec import JSON
from runtime.metrics import registry
from runtime.webhook import (
    AdmissionRequest,
    AdmissionResponse,
    Denied,
    WebhookServer,
    WebhookServerOptions,
    allowed,
    mutate_path,
    review_for,
    validate_path,
)
from tests.support.poll import eventually
from tests.support.webhooks import ServingCerts, post, running_webhook_server

GROUP, VERSION, KIND = "test.cpo.dev", "v1", "Widget"
VALIDATE = "/validate-test-cpo-dev-v1-widget"
MUTATE = "/mutate-test-cpo-dev-v1-widget"


class WidgetValidator:
    """Odd replicas only; a warning above 7; spec.size immutable; ``spec.explode`` raises a bug."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    async def validate_create(self, obj: JSON, request: AdmissionRequest) -> list[str]:
        spec = obj.get("spec", {})
        if spec.get("explode"):
            raise KeyError("boom")
        if spec.get("wrongReturn"):
            return "not a list"  # type: ignore[return-value]
        replicas = spec.get("replicas", 1)
        if replicas % 2 == 0:
            raise Denied(f"spec.replicas: Invalid value: {replicas}: must be odd")
        return [f"spec.replicas: {replicas} is above 7"] if replicas > 7 else []

    async def validate_update(self, old: JSON, new: JSON, request: AdmissionRequest) -> list[str]:
        if old["spec"].get("size") != new["spec"].get("size"):
            raise Denied("spec.size: Invalid value: field is immutable", code=422, warnings=["size is fixed"])
        return await self.validate_create(new, request)

    async def validate_delete(self, obj: JSON, request: AdmissionRequest) -> list[str]:
        self.deleted.append(obj["metadata"]["name"])
        return ["deleting a widget"]


class WidgetDefaulter:
    async def default(self, obj: JSON, request: AdmissionRequest) -> None:
        obj.setdefault("spec", {}).setdefault("replicas", 1)
        obj["metadata"].setdefault("labels", {})["defaulted"] = "yes"


def widget(name: str = "w", **spec: Any) -> JSON:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"size": "small", **spec},
    }


def request(
    operation: str = "CREATE", obj: JSON | None = None, old: JSON | None = None, uid: str = "uid-1"
) -> JSON:
    return {
        "uid": uid,
        "kind": {"group": GROUP, "version": VERSION, "kind": KIND},
        "resource": {"group": GROUP, "version": VERSION, "resource": "widgets"},
        "operation": operation,
        "name": "w",
        "namespace": "ns",
        "object": obj,
        "oldObject": old,
        "userInfo": {"username": "tester"},
        "dryRun": False,
    }


class WebhookClient:
    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = base

    async def review(self, path: str, req: JSON) -> JSON:
        status, body, raw = await post(self.session, self.base + path, json.dumps(review_for(req)).encode())
        assert status == 200, raw
        assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
        assert body["response"]["uid"] == req["uid"]
        response: JSON = body["response"]
        return response

    async def raw(self, path: str, body: bytes, content_type: str = "application/json") -> tuple[int, Any]:
        status, decoded, _ = await post(self.session, self.base + path, body, content_type)
        return status, decoded


@pytest.fixture
def certs(tmp_path: Path) -> ServingCerts:
    serving = ServingCerts(tmp_path / "certs")
    serving.write()
    return serving


class Hanging:
    """A raw handler that never answers by itself (for the request timeout)."""

    def __init__(self) -> None:
        self.never = asyncio.Event()

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        await self.never.wait()
        return allowed()


async def raises_its_own_timeout(request: AdmissionRequest) -> AdmissionResponse:
    raise TimeoutError("the backend did not answer")


@pytest_asyncio.fixture
async def server(certs: ServingCerts) -> AsyncIterator[WebhookServer]:
    options = WebhookServerOptions(
        host="127.0.0.1",
        port=0,
        cert_dir=str(certs.directory),
        max_body_bytes=64 * 1024,
        request_timeout=1.0,
        cert_poll_interval=0.05,
    )
    webhook = WebhookServer(options)
    webhook.register_validator(GROUP, VERSION, KIND, WidgetValidator())
    webhook.register_defaulter(GROUP, VERSION, KIND, WidgetDefaulter())
    webhook.register("/hang", Hanging())
    webhook.register("/own-timeout", raises_its_own_timeout)
    async with running_webhook_server(webhook) as running:
        yield running


@pytest_asyncio.fixture
async def webhook_client(server: WebhookServer, certs: ServingCerts) -> AsyncIterator[WebhookClient]:
    connector = aiohttp.TCPConnector(ssl=certs.client_context())
    async with aiohttp.ClientSession(connector=connector) as session:
        yield WebhookClient(session, f"https://127.0.0.1:{server.port}")


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    return registry.get_sample_value(name, labels or {}) or 0.0


# --- paths ----------------------------------------------------------------------------------------


def test_paths_follow_the_kubebuilder_convention() -> None:
    assert validate_path(GROUP, VERSION, KIND) == VALIDATE
    assert mutate_path(GROUP, VERSION, KIND) == MUTATE
    assert validate_path("controlplane.cpo.dev", "v1alpha1", "ControlPlane") == (
        "/validate-controlplane-cpo-dev-v1alpha1-controlplane"
    )
    assert validate_path("", "v1", "Pod") == "/validate--v1-pod"
    webhook = WebhookServer(WebhookServerOptions(cert_dir="/nonexistent"))
    webhook.register_validator(GROUP, VERSION, KIND, WidgetValidator())
    webhook.register_defaulter(GROUP, VERSION, KIND, WidgetDefaulter())
    assert webhook.paths == [VALIDATE, MUTATE]
    with pytest.raises(ValueError, match="already registered at /validate-test-cpo-dev-v1-widget"):
        webhook.register_validator(GROUP, VERSION, KIND, WidgetValidator())
    with pytest.raises(ValueError, match="must start with '/'"):
        webhook.register("validate", WidgetDefaulter())  # type: ignore[arg-type]


def test_options_defaults_and_bad_values() -> None:
    resolved = WebhookServerOptions().with_defaults()
    assert (resolved.host, resolved.port) == ("", 9443)
    assert resolved.cert_dir == "/tmp/k8s-webhook-server/serving-certs"
    assert (resolved.cert_name, resolved.key_name) == ("tls.crt", "tls.key")
    assert resolved.max_body_bytes == 7 * 1024 * 1024
    assert resolved.request_timeout == 30.0
    assert resolved.cert_poll_interval == 5.0
    with pytest.raises(ValueError, match="port 70000 is out of range"):
        WebhookServerOptions(port=70000).with_defaults()
    with pytest.raises(ValueError, match="request_timeout must be positive"):
        WebhookServerOptions(request_timeout=0).with_defaults()


# --- answers ----------------------------------------------------------------------------------------


async def test_validator_allows_denies_and_warns(webhook_client: WebhookClient) -> None:
    ok = await webhook_client.review(VALIDATE, request(obj=widget(replicas=3)))
    assert ok["allowed"] is True and ok["status"]["code"] == 200
    assert "warnings" not in ok and "patch" not in ok

    warned = await webhook_client.review(VALIDATE, request(obj=widget(replicas=9), uid="uid-2"))
    assert warned["allowed"] is True
    assert warned["warnings"] == ["spec.replicas: 9 is above 7"]

    refused = await webhook_client.review(VALIDATE, request(obj=widget(replicas=4), uid="uid-3"))
    assert refused["allowed"] is False
    assert refused["status"] == {
        "code": 403,
        "reason": "Forbidden",
        "message": "spec.replicas: Invalid value: 4: must be odd",
    }

    immutable = await webhook_client.review(
        VALIDATE, request("UPDATE", obj=widget(size="large"), old=widget(size="small"), uid="uid-4")
    )
    assert immutable["allowed"] is False
    assert immutable["status"]["code"] == 422 and immutable["status"]["reason"] == "Invalid"
    assert immutable["warnings"] == ["size is fixed"]

    update = await webhook_client.review(
        VALIDATE, request("UPDATE", obj=widget(replicas=5), old=widget(), uid="u5")
    )
    assert update["allowed"] is True

    delete = await webhook_client.review(VALIDATE, request("DELETE", old=widget("gone"), uid="uid-6"))
    assert delete["allowed"] is True and delete["warnings"] == ["deleting a widget"]


async def test_validator_refuses_reviews_it_cannot_judge(webhook_client: WebhookClient) -> None:
    no_object = await webhook_client.review(VALIDATE, request("CREATE", obj=None))
    assert no_object["allowed"] is False and no_object["status"]["code"] == 400
    assert "request.object is missing" in no_object["status"]["message"]
    no_old = await webhook_client.review(VALIDATE, request("UPDATE", obj=widget(), old=None))
    assert no_old["allowed"] is False and "oldObject" in no_old["status"]["message"]
    connect = await webhook_client.review(VALIDATE, request("CONNECT", obj={}))
    assert connect["allowed"] is False and "unknown operation 'CONNECT'" in connect["status"]["message"]


async def test_defaulter_answers_with_a_json_patch(webhook_client: WebhookClient) -> None:
    original = widget()
    answer = await webhook_client.review(MUTATE, request(obj=original))
    assert answer["allowed"] is True and answer["patchType"] == "JSONPatch"
    operations = json.loads(base64.b64decode(answer["patch"]))
    patched = jsonpatch.apply_patch(original, operations)
    assert patched["spec"]["replicas"] == 1
    assert patched["metadata"]["labels"] == {"defaulted": "yes"}
    assert {k: v for k, v in patched.items() if k != "metadata"} == {
        **{k: v for k, v in original.items() if k != "metadata"},
        "spec": {"size": "small", "replicas": 1},
    }

    already = widget(replicas=3)
    already["metadata"]["labels"] = {"defaulted": "yes"}
    unchanged = await webhook_client.review(MUTATE, request(obj=already))
    assert unchanged["allowed"] is True and "patch" not in unchanged and "patchType" not in unchanged

    delete = await webhook_client.review(MUTATE, request("DELETE", old=widget()))
    assert delete["allowed"] is True and "patch" not in delete


async def test_a_failing_handler_is_an_error_answer_not_a_dead_server(webhook_client: WebhookClient) -> None:
    panics = sample("controller_runtime_webhook_panics_total")
    failed = await webhook_client.review(VALIDATE, request(obj=widget(explode=True)))
    assert failed["allowed"] is False
    assert failed["status"]["code"] == 500
    assert failed["status"]["message"] == "internal error: KeyError: 'boom'"
    wrong = await webhook_client.review(VALIDATE, request(obj=widget(wrongReturn=True)))
    assert wrong["allowed"] is False and "must return a list of warning strings" in wrong["status"]["message"]
    # the defaulter's bug (metadata is not an object here) is answered the same way
    broken = await webhook_client.review(MUTATE, request(obj={"metadata": "x"}))
    assert broken["allowed"] is False and broken["status"]["code"] == 500
    # a TimeoutError of the handler's own is its failure, not the server's deadline
    own = await webhook_client.review("/own-timeout", request(obj=widget()))
    assert own["allowed"] is False and own["status"]["code"] == 500
    assert own["status"]["message"] == "internal error: TimeoutError: the backend did not answer"
    assert sample("controller_runtime_webhook_panics_total") == panics + 4
    assert (await webhook_client.review(VALIDATE, request(obj=widget(replicas=1))))["allowed"] is True


async def test_a_handler_past_the_request_timeout_is_refused_with_504(webhook_client: WebhookClient) -> None:
    started = time.monotonic()
    answer = await webhook_client.review("/hang", request(obj=widget()))
    assert answer["allowed"] is False and answer["status"]["code"] == 504
    assert "did not answer within 1 s" in answer["status"]["message"]
    assert time.monotonic() - started < 5


BAD_BODIES = [
    (b'{"apiVersion": "admission.k8s.io/v1"}', "text/plain", 400, "must be sent as application/json"),
    (b"", "application/json", 400, "the request body is empty"),
    (b"{not json", "application/json", 400, "not valid JSON"),
    (b"\xff\xfe\x00", "application/json", 400, "not valid JSON"),
    (b"[" * 50_000, "application/json", 400, "not valid JSON"),
    (b'{"x": NaN}', "application/json", 400, "NaN is not valid JSON"),
    (b"[1, 2]", "application/json", 400, "is a JSON array, not an AdmissionReview"),
    (b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}', "application/json", 400,
     "admissionReviewVersions"),
    (b'{"apiVersion": "admission.k8s.io/v1", "kind": "Pod"}', "application/json", 400,
     "expected 'AdmissionReview'"),
    (b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}', "application/json", 400,
     "request is missing"),
]  # fmt: skip


def _review_with(**changes: Any) -> bytes:
    req = request(obj=widget())
    for key, value in changes.items():
        if value is ...:
            del req[key]
        else:
            req[key] = value
    return json.dumps(review_for(req)).encode()


BAD_REQUESTS = [
    (_review_with(uid=...), "request.uid is missing"),
    (_review_with(uid=""), "request.uid is empty"),
    (_review_with(uid=7), "request.uid must be string, got number"),
    (_review_with(operation="PATCH"), "request.operation is 'PATCH'"),
    (_review_with(kind=...), "request.kind is missing"),
    (_review_with(kind={"group": 1}), "request.kind.group must be a string"),
    (_review_with(resource=[]), "request.resource must be object, got array"),
    (_review_with(object=[1]), "request.object must be object, got array"),
    (_review_with(dryRun="yes"), "request.dryRun must be boolean, got string"),
    (_review_with(name=False), "request.name must be string, got boolean"),
]


@pytest.mark.parametrize(("body", "content_type", "code", "text"), BAD_BODIES)
async def test_malformed_bodies_get_400_saying_why(
    webhook_client: WebhookClient, body: bytes, content_type: str, code: int, text: str
) -> None:
    bad_before = sample("controller_runtime_webhook_requests_total", {"webhook": VALIDATE, "code": "400"})
    status, answer = await webhook_client.raw(VALIDATE, body, content_type)
    assert status == code
    assert answer["kind"] == "Status" and answer["status"] == "Failure" and answer["code"] == code
    assert answer["reason"] == "BadRequest"
    assert text in answer["message"]
    bad_after = sample("controller_runtime_webhook_requests_total", {"webhook": VALIDATE, "code": "400"})
    assert bad_after == bad_before + 1


@pytest.mark.parametrize(("body", "text"), BAD_REQUESTS)
async def test_mistyped_requests_get_400_saying_which_field(
    webhook_client: WebhookClient, body: bytes, text: str
) -> None:
    status, answer = await webhook_client.raw(MUTATE, body)
    assert status == 400
    assert text in answer["message"]


async def test_too_large_unknown_path_and_wrong_method(
    webhook_client: WebhookClient, server: WebhookServer
) -> None:
    big = json.dumps(review_for(request(obj=widget(extra="x" * 70_000)))).encode()
    status, answer = await webhook_client.raw(VALIDATE, big)
    assert status == 413 and answer["reason"] == "RequestEntityTooLarge"
    assert "larger than the limit of 65536 bytes" in answer["message"]

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: the limit holds while reading
        for _ in range(20):
            yield b"x" * 8192

    url = webhook_client.base + VALIDATE
    async with webhook_client.session.post(
        url, data=chunks(), headers={"Content-Type": "application/json"}
    ) as r:
        assert r.status == 413

    status, answer = await webhook_client.raw("/nowhere", b"{}")
    assert status == 404 and "no webhook is registered at /nowhere" in answer["message"]
    async with webhook_client.session.get(url) as r:
        assert r.status == 405 and "POST" in (await r.json())["message"]
    assert (await webhook_client.review(VALIDATE, request(obj=widget())))["allowed"] is True


async def test_metrics_count_requests_by_code_and_time_them(webhook_client: WebhookClient) -> None:
    labels = {"webhook": VALIDATE}
    ok_before = sample("controller_runtime_webhook_requests_total", {**labels, "code": "200"})
    latency_before = sample("controller_runtime_webhook_latency_seconds_count", labels)
    for uid in ("a", "b", "c"):
        await webhook_client.review(VALIDATE, request(obj=widget(), uid=uid))
    await webhook_client.raw(VALIDATE, b"nope")
    assert sample("controller_runtime_webhook_requests_total", {**labels, "code": "200"}) == ok_before + 3
    assert sample("controller_runtime_webhook_latency_seconds_count", labels) == latency_before + 4
    assert sample("controller_runtime_webhook_requests_in_flight", labels) == 0
    assert sample("controller_runtime_webhook_requests_total", {"webhook": "/hang", "code": "500"}) == 0


# --- lifecycle ---------------------------------------------------------------------------------------


async def test_started_checker_and_port(certs: ServingCerts) -> None:
    webhook = WebhookServer(WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=str(certs.directory)))
    check = webhook.started_checker()
    assert webhook.need_leader_election() is False
    with pytest.raises(RuntimeError, match="has not started"):
        await check(None)
    async with running_webhook_server(webhook):
        assert isinstance(webhook.port, int) and webhook.port > 0
        await check(None)
    with pytest.raises(RuntimeError, match="has not started"):
        await check(None)


async def test_listening_on_every_interface_by_default(certs: ServingCerts) -> None:
    webhook = WebhookServer(WebhookServerOptions(port=0, cert_dir=str(certs.directory)))
    async with running_webhook_server(webhook):
        await webhook.started_checker()(None)
        _, writer = await asyncio.open_connection("127.0.0.1", webhook.port, ssl=certs.client_context())
        writer.close()


async def test_start_fails_clearly_without_certificates(tmp_path: Path) -> None:
    webhook = WebhookServer(WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=str(tmp_path / "none")))
    with pytest.raises(CertificateError, match=r"none/tls\.crt.*set cert_dir"):
        await webhook.start(asyncio.Event())


async def test_start_fails_clearly_when_the_port_is_taken(certs: ServingCerts, server: WebhookServer) -> None:
    clash = WebhookServer(
        WebhookServerOptions(host="127.0.0.1", port=server.port, cert_dir=str(certs.directory))
    )
    with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1 port {server.port}"):
        await clash.start(asyncio.Event())


# --- certificate reload -----------------------------------------------------------------------------


def der(pem: bytes) -> bytes:
    return x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)


async def served_certificate(port: int, server_hostname: str | None = None) -> bytes:
    """The certificate a new TLS connection gets (not verified: we only look at it)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname=server_hostname)
    try:
        certificate = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        assert isinstance(certificate, bytes)
        return certificate
    finally:
        writer.close()


async def test_a_new_serving_certificate_reaches_new_connections(
    server: WebhookServer, certs: ServingCerts
) -> None:
    port = server.port
    assert port is not None
    first = certs.pair
    assert await served_certificate(port) == der(first.cert_pem)
    loads = sample("certwatcher_read_certificate_total")

    second = certs.write(certs.ca.serving_cert(["127.0.0.1"]))

    async def rotated() -> bool:
        # with SNI (a host name) and without it (an IP address, as the API server dials a URL with an IP)
        named = await served_certificate(port, "localhost")
        plain = await served_certificate(port)
        return named == plain == der(second.cert_pem)

    started = time.monotonic()
    await eventually(
        rotated,
        timeout=10.0,
        message="new connections are served the rotated certificate, with and without SNI",
    )
    assert time.monotonic() - started < 10
    assert sample("certwatcher_read_certificate_total") >= loads + 1


async def test_a_new_ca_is_trusted_by_new_connections(server: WebhookServer, certs: ServingCerts) -> None:
    fresh = ServingCerts(certs.directory, "rotated-ca")
    trusting_new_ca = fresh.client_context()

    async def handshake_with_new_ca() -> bool:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=trusting_new_ca)
        except ssl.SSLCertVerificationError:
            return False
        writer.close()
        return True

    assert not await handshake_with_new_ca()
    fresh.write()
    await eventually(handshake_with_new_ca, timeout=10.0, message="a handshake with the new CA succeeds")
    connector = aiohttp.TCPConnector(ssl=trusting_new_ca)
    async with aiohttp.ClientSession(connector=connector) as session:
        webhook_client = WebhookClient(session, f"https://127.0.0.1:{server.port}")
        assert (await webhook_client.review(VALIDATE, request(obj=widget())))["allowed"] is True


async def test_a_half_written_or_invalid_pair_keeps_the_old_one(
    server: WebhookServer, certs: ServingCerts
) -> None:
    port = server.port
    assert port is not None
    old = certs.pair
    new = certs.ca.serving_cert(["127.0.0.1"])
    cert_file = certs.directory / "tls.crt"
    key_file = certs.directory / "tls.key"

    async def rejected_since(errors: float) -> bool:
        return sample("certwatcher_read_certificate_errors_total") > errors

    # the new certificate arrives before its key: the pair does not match
    errors = sample("certwatcher_read_certificate_errors_total")
    cert_file.write_bytes(new.cert_pem)
    await eventually(lambda: rejected_since(errors), timeout=10.0, message="rejected_since(errors)")
    assert await served_certificate(port) == der(old.cert_pem)

    # a truncated certificate
    errors = sample("certwatcher_read_certificate_errors_total")
    cert_file.write_bytes(new.cert_pem[:100])
    await eventually(lambda: rejected_since(errors), timeout=10.0, message="rejected_since(errors)")
    assert await served_certificate(port) == der(old.cert_pem)

    # the complete pair is taken
    cert_file.write_bytes(new.cert_pem)
    key_file.write_bytes(new.key_pem)

    async def serves_new() -> bool:
        return await served_certificate(port) == der(new.cert_pem)

    await eventually(serves_new, timeout=10.0, message="the new certificate is served")


def test_certwatcher_reads_only_changed_content(certs: ServingCerts) -> None:
    watcher = CertWatcher(certs.directory / "tls.crt", certs.directory / "tls.key", poll_interval=1)
    watcher.read_certificate()
    first = watcher.current_context
    assert watcher.poll_once() is False  # same bytes: nothing reloaded
    assert watcher.current_context is first
    certs.write(certs.ca.serving_cert(["127.0.0.1"]))
    assert watcher.poll_once() is True
    assert watcher.current_context is not first
    (certs.directory / "tls.key").unlink()  # a symlink swap in progress: not an error, just not yet
    assert watcher.poll_once() is False
    missing = CertWatcher(certs.directory / "nope.crt", certs.directory / "tls.key")
    with pytest.raises(CertificateError, match=r"nope\.crt"):
        missing.read_certificate()


async def test_a_body_that_does_not_arrive_in_time_gets_408(
    server: WebhookServer, certs: ServingCerts
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=certs.client_context())
    head = (
        f"POST {VALIDATE} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 100\r\n\r\n"
    )
    writer.write(head.encode() + b'{"apiVersion"')  # 13 of the 100 promised bytes, then nothing
    await writer.drain()
    answer = b""
    async with asyncio.timeout(10):
        while b"did not arrive within 1 s" not in answer:
            chunk = await reader.read(4096)
            assert chunk, answer
            answer += chunk
    writer.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer
