"""Admission webhook calls against a real HTTPS webhook, compared with kube-apiserver's recorded behaviour.

The expected request bodies and client-visible errors are excerpts of the ``16-*`` transcripts in
``tests/testdata/kube-apiserver`` (raw values; the request uid is generated per call).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from apiserver.admission import (
    Admission,
    AdmissionAttributes,
    default_webhook_configuration,
    operation_options,
    select_webhooks,
    validate_webhook_configuration,
)
from apiserver.errors import Qualified, StatusError, Warnings, invalid_object
from apiserver.registry import Registry, ResourceType, ScaleSpec
from runtime.envtest.certs import CertificateAuthority
from runtime.jsoncodec import JSON

# ------------------------------------------------------------------------------ transcript excerpts

# 16-wh-create-allowed-mutated: webhook_calls[0].received.request (mutate) and [1] (validate).
MUTATE_RECEIVED = json.loads(
    '{"uid": "29dc4c14-b081-492f-bf74-64e83771a8b2", "kind": {"group": "ref.example.dev", "version": "v1", '
    '"kind": "Gadget"}, "resource": {"group": "ref.example.dev", "version": "v1", "resource": "gadgets"}, '
    '"requestKind": {"group": "ref.example.dev", "version": "v1", "kind": "Gadget"}, "requestResource": '
    '{"group": "ref.example.dev", "version": "v1", "resource": "gadgets"}, '
    '"name": "wh1", "namespace": "ref", '
    '"operation": "CREATE", "userInfo": {"username": "admin", "groups": ["system:masters", '
    '"system:authenticated"], "extra": {"authentication.kubernetes.io/credential-id": '
    '["X509SHA256=d8127cb4b3c22e7a4a99541c9a089d3d033757be91f7704515faff28b20a282d"]}}, "object": '
    '{"apiVersion": "ref.example.dev/v1", "kind": "Gadget", "metadata": {"managedFields": [{"apiVersion": '
    '"ref.example.dev/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {".": {}, "f:replicas": {}, '
    '"f:size": {}}}, "manager": "reftool", "operation": "Update", "time": "2026-11-22T04:24:28Z"}], "name": '
    '"wh1", "namespace": "ref"}, "spec": {"replicas": 3, "size": "small"}}, "oldObject": null, "dryRun": '
    'false, "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}}'
)
MUTATE_CONTENT_LENGTH = 1132
VALIDATE_RECEIVED = json.loads(
    '{"uid": "7b909b1a-8baa-4ce0-9882-2dfabf1c6855", "kind": {"group": "ref.example.dev", "version": "v1", '
    '"kind": "Gadget"}, "resource": {"group": "ref.example.dev", "version": "v1", "resource": "gadgets"}, '
    '"requestKind": {"group": "ref.example.dev", "version": "v1", "kind": "Gadget"}, "requestResource": '
    '{"group": "ref.example.dev", "version": "v1", "resource": "gadgets"}, '
    '"name": "wh1", "namespace": "ref", '
    '"operation": "CREATE", "userInfo": {"username": "admin", "groups": ["system:masters", '
    '"system:authenticated"], "extra": {"authentication.kubernetes.io/credential-id": '
    '["X509SHA256=d8127cb4b3c22e7a4a99541c9a089d3d033757be91f7704515faff28b20a282d"]}}, "object": '
    '{"apiVersion": "ref.example.dev/v1", "kind": "Gadget", "metadata": {"creationTimestamp": '
    '"2026-11-22T04:24:28Z", "generation": 1, "labels": {"mutated": "yes"}, "managedFields": [{"apiVersion": '
    '"ref.example.dev/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {".": {}, "f:replicas": {}, '
    '"f:size": {}}}, "manager": "reftool", "operation": "Update", "time": "2026-11-22T04:24:28Z"}], "name": '
    '"wh1", "namespace": "ref", "uid": "fc57074b-484e-4a5a-a799-b1bee9348802"}, "spec": {"replicas": 3, '
    '"size": "small"}}, "oldObject": null, "dryRun": false, "options": {"kind": "CreateOptions", '
    '"apiVersion": "meta.k8s.io/v1"}}'
)
VALIDATE_CONTENT_LENGTH = 1262
# The mutating webhook's reply: add /metadata/labels {"mutated": "yes"}.
MUTATE_PATCH = (
    "W3sib3AiOiAiYWRkIiwgInBhdGgiOiAiL21ldGFkYXRhL2xhYmVscyIsICJ2YWx1ZSI6IHsibXV0YXRlZCI6ICJ5ZXMifX1d"
)

# 16-wh-scale-patch-denied: webhook_calls[0].received.request and the client's response.
SCALE_RECEIVED = json.loads(
    '{"uid": "93669b74-7139-4b39-808a-77643f618bee", "kind": {"group": "autoscaling", '
    '"version": "v1", "kind": '
    '"Scale"}, "resource": {"group": "ref.example.dev", '
    '"version": "v1", "resource": "gadgets"}, "subResource": '
    '"scale", "requestKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "requestResource": '
    '{"group": "ref.example.dev", "version": "v1", "resource": "gadgets"}, "requestSubResource": "scale", '
    '"name": "wh1", "namespace": "ref", "operation": "UPDATE", "userInfo": {"username": "admin", "groups": '
    '["system:masters", "system:authenticated"], "extra": {"authentication.kubernetes.io/credential-id": '
    '["X509SHA256=d8127cb4b3c22e7a4a99541c9a089d3d033757be91f7704515faff28b20a282d"]}}, "object": {"kind": '
    '"Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "wh1", "namespace": "ref", "uid": '
    '"fc57074b-484e-4a5a-a799-b1bee9348802", "resourceVersion": "385", "creationTimestamp": '
    '"2026-11-22T04:24:28Z"}, "spec": {"replicas": 2}, "status": {"replicas": 0}}, "oldObject": {"kind": '
    '"Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "wh1", "namespace": "ref", "uid": '
    '"fc57074b-484e-4a5a-a799-b1bee9348802", "resourceVersion": "385", "creationTimestamp": '
    '"2026-11-22T04:24:28Z"}, "spec": {"replicas": 3}, "status": {"replicas": 0}}, "dryRun": false, '
    '"options": {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}}'
)
SCALE_CONTENT_LENGTH = 1325
SCALE_DENIED_STATUS = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": 'admission webhook "validate.ref.example.dev" denied the request: '
    "spec.replicas: Invalid value: 2: must be odd",
    "code": 400,
}

# 16-wh-create-denied-code403: client response.
DENIED_403_STATUS = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": 'admission webhook "validate.ref.example.dev" denied the request: '
    "spec.replicas: Invalid value: 6: must be odd",
    "reason": "Forbidden",
    "code": 403,
}


def _call_failure_status(message: str) -> JSON:
    """The 500 the client gets when a webhook cannot be called (16-wh-down-*, 16-wh-create-slow-timeout)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }


# 16-mutatingwebhookconfiguration-create / 16-validatingwebhookconfiguration-create (caBundle shortened).
MUTATING_CONFIG_POSTED: JSON = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "MutatingWebhookConfiguration",
    "metadata": {"name": "mutate.ref.example.dev"},
    "webhooks": [
        {
            "name": "mutate.ref.example.dev",
            "clientConfig": {"url": "https://127.0.0.1:9443/mutate", "caBundle": "Q0E="},
            "rules": [
                {
                    "apiGroups": ["ref.example.dev"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["gadgets"],
                }
            ],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "failurePolicy": "Fail",
        }
    ],
}
MUTATING_WEBHOOKS_STORED: list[JSON] = [
    {
        "name": "mutate.ref.example.dev",
        "clientConfig": {"url": "https://127.0.0.1:9443/mutate", "caBundle": "Q0E="},
        "rules": [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": ["ref.example.dev"],
                "apiVersions": ["v1"],
                "resources": ["gadgets"],
                "scope": "*",
            }
        ],
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "namespaceSelector": {},
        "objectSelector": {},
        "sideEffects": "None",
        "timeoutSeconds": 10,
        "admissionReviewVersions": ["v1"],
        "reinvocationPolicy": "Never",
    }
]
VALIDATING_CONFIG_POSTED: JSON = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingWebhookConfiguration",
    "metadata": {"name": "validate.ref.example.dev"},
    "webhooks": [
        {
            "name": "validate.ref.example.dev",
            "clientConfig": {"url": "https://127.0.0.1:9443/validate", "caBundle": "Q0E="},
            "rules": [
                {
                    "apiGroups": ["ref.example.dev"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["gadgets", "gadgets/scale"],
                }
            ],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "failurePolicy": "Fail",
            "timeoutSeconds": 2,
        }
    ],
}
VALIDATING_WEBHOOKS_STORED: list[JSON] = [
    {
        "name": "validate.ref.example.dev",
        "clientConfig": {"url": "https://127.0.0.1:9443/validate", "caBundle": "Q0E="},
        "rules": [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": ["ref.example.dev"],
                "apiVersions": ["v1"],
                "resources": ["gadgets", "gadgets/scale"],
                "scope": "*",
            }
        ],
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "namespaceSelector": {},
        "objectSelector": {},
        "sideEffects": "None",
        "timeoutSeconds": 2,
        "admissionReviewVersions": ["v1"],
    }
]

# 16-webhookconfig-invalid: request body and response.
INVALID_CONFIG_POSTED: JSON = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingWebhookConfiguration",
    "metadata": {"name": "bad.ref.example.dev"},
    "webhooks": [
        {
            "name": "nodots",
            "clientConfig": {"url": "http://127.0.0.1:9443/validate"},
            "rules": [
                {
                    "apiGroups": ["ref.example.dev"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["gadgets"],
                }
            ],
        }
    ],
}
INVALID_CONFIG_STATUS = json.loads(
    r"""{"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message":
    "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"bad.ref.example.dev\" is invalid: [webhooks[0].name: Invalid value: \"nodots\": should be a domain with at least three segments separated by dots, webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun, webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path], webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1]",
    "reason": "Invalid", "details": {"name": "bad.ref.example.dev", "group": "admissionregistration.k8s.io",
    "kind": "ValidatingWebhookConfiguration", "causes": [
    {"reason": "FieldValueInvalid", "message": "Invalid value: \"nodots\": should be a domain with at least three segments separated by dots", "field": "webhooks[0].name"},
    {"reason": "FieldValueRequired", "message": "Required value: must specify one of None, NoneOnDryRun", "field": "webhooks[0].sideEffects"},
    {"reason": "FieldValueInvalid", "message": "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]", "field": "webhooks[0].clientConfig.url"},
    {"reason": "FieldValueRequired", "message": "Required value: must specify one of v1, v1beta1", "field": "webhooks[0].admissionReviewVersions"}]},
    "code": 422}"""  # noqa: E501
)

# ----------------------------------------------------------------------------------- test webhook

Reply = Callable[[JSON], Awaitable[web.StreamResponse | JSON] | web.StreamResponse | JSON]


@dataclass
class ReceivedCall:
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    @property
    def request(self) -> JSON:
        review = json.loads(self.body)
        assert review["kind"] == "AdmissionReview"
        return dict(review["request"])


@dataclass
class FakeWebhook:
    """An HTTPS admission webhook on 127.0.0.1 whose answers each test scripts per path."""

    port: int
    ca_bundle: str
    calls: list[ReceivedCall] = field(default_factory=list)
    replies: dict[str, Reply] = field(default_factory=dict)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.calls.append(ReceivedCall(request.path, request.query_string, dict(request.headers), body))
        reply = self.replies.get(request.path, allow)(json.loads(body))
        if asyncio.iscoroutine(reply):
            reply = await reply
        if isinstance(reply, web.StreamResponse):
            return reply
        return web.json_response(reply)

    def calls_to(self, path: str) -> list[ReceivedCall]:
        return [call for call in self.calls if call.path == path]


def answer(review: JSON, **response: Any) -> JSON:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], **response},
    }


def allow(review: JSON) -> JSON:
    return answer(review, allowed=True)


def json_patch(*operations: JSON) -> str:
    return base64.b64encode(json.dumps(list(operations)).encode()).decode()


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority.new()


@pytest.fixture
async def webhook(ca: CertificateAuthority, tmp_path: Path) -> AsyncIterator[FakeWebhook]:
    cert_path, key_path = ca.serving_cert(["127.0.0.1", "localhost", "hook.ns.svc"]).write(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    fake = FakeWebhook(port=0, ca_bundle=base64.b64encode(ca.cert_pem).decode())
    app = web.Application()
    app.router.add_post("/{tail:.*}", fake.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    fake.port = runner.addresses[0][1]
    yield fake
    fake.release.set()
    await runner.cleanup()


@pytest.fixture
async def admission() -> AsyncIterator[Admission]:
    client = Admission()
    yield client
    await client.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def config(kind: str, name: str, *webhooks: JSON) -> JSON:
    obj: JSON = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [copy.deepcopy(w) for w in webhooks],
    }
    default_webhook_configuration(obj, kind.startswith("Mutating"))
    assert validate_webhook_configuration(obj, kind.startswith("Mutating")) == []
    return obj


def hook(name: str, url: str, ca_bundle: str = "", **overrides: Any) -> JSON:
    client: JSON = {"url": url}
    if ca_bundle:
        client["caBundle"] = ca_bundle
    spec: JSON = {
        "name": name,
        "clientConfig": client,
        "rules": [
            {
                "apiGroups": ["ref.example.dev"],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["gadgets", "gadgets/scale"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    spec.update(overrides)
    return spec


def mutating(name: str, *webhooks: JSON) -> JSON:
    return config("MutatingWebhookConfiguration", name, *webhooks)


def validating(name: str, *webhooks: JSON) -> JSON:
    return config("ValidatingWebhookConfiguration", name, *webhooks)


def gadget_attrs(request: JSON | None = None, **overrides: Any) -> AdmissionAttributes:
    """Attributes for a create of a Gadget, taken from a recorded AdmissionReview request."""
    request = request or MUTATE_RECEIVED
    attrs = AdmissionAttributes(
        operation=request["operation"],
        group=request["requestKind"]["group"],
        version=request["requestKind"]["version"],
        kind=request["requestKind"]["kind"],
        resource_group=request["requestResource"]["group"],
        resource_version=request["requestResource"]["version"],
        resource=request["requestResource"]["resource"],
        sub_resource=request.get("requestSubResource", ""),
        name=request.get("name", ""),
        namespace=request.get("namespace", ""),
        object=copy.deepcopy(request["object"]),
        old_object=copy.deepcopy(request["oldObject"]),
        options=copy.deepcopy(request["options"]),
        dry_run=request["dryRun"],
        user_info=copy.deepcopy(request["userInfo"]),
        namespace_labels={},
    )
    for key, value in overrides.items():
        setattr(attrs, key, value)
    return attrs


def with_uid(expected: JSON, call: ReceivedCall) -> JSON:
    return {**expected, "uid": call.request["uid"]}


async def status_of(awaitable: Awaitable[Any]) -> JSON:
    with pytest.raises(StatusError) as caught:
        await awaitable
    return caught.value.status()


# ---------------------------------------------------------------------------- the recorded flows


async def test_create_reviews_are_byte_for_byte_what_kube_apiserver_sent(
    webhook: FakeWebhook, admission: Admission
) -> None:
    mutate_config = mutating(
        "mutate.ref.example.dev", hook("mutate.ref.example.dev", webhook.url("/mutate"), webhook.ca_bundle)
    )
    validate_config = validating(
        "validate.ref.example.dev",
        hook("validate.ref.example.dev", webhook.url("/validate"), webhook.ca_bundle, timeoutSeconds=2),
    )
    webhook.replies["/mutate"] = lambda review: answer(
        review, allowed=True, patchType="JSONPatch", patch=MUTATE_PATCH
    )

    mutated, warnings = await admission.mutate(gadget_attrs(), [mutate_config])

    assert warnings == []
    assert mutated is not None and mutated["metadata"]["labels"] == {"mutated": "yes"}
    (mutate_call,) = webhook.calls_to("/mutate")
    assert mutate_call.request == with_uid(MUTATE_RECEIVED, mutate_call)
    assert len(mutate_call.body) == MUTATE_CONTENT_LENGTH and mutate_call.body.endswith(b"}\n")
    assert mutate_call.query == "timeout=10s"
    assert mutate_call.headers["User-Agent"] == "kube-apiserver-admission"
    assert mutate_call.headers["Accept"] == "application/json, */*"
    assert mutate_call.headers["Content-Type"] == "application/json"

    # The server then stamps uid/creationTimestamp/generation and runs validation on that object.
    stored = copy.deepcopy(mutated)
    stored["metadata"] = {
        "creationTimestamp": "2026-11-22T04:24:28Z",
        "generation": 1,
        **mutated["metadata"],
        "uid": "fc57074b-484e-4a5a-a799-b1bee9348802",
    }
    assert await admission.validate(gadget_attrs(object=stored), [validate_config]) == []
    (validate_call,) = webhook.calls_to("/validate")
    assert validate_call.request == with_uid(VALIDATE_RECEIVED, validate_call)
    assert len(validate_call.body) == VALIDATE_CONTENT_LENGTH
    assert validate_call.query == "timeout=2s"


async def test_scale_update_is_sent_as_scale_and_a_codeless_denial_is_400_without_reason(
    webhook: FakeWebhook, admission: Admission
) -> None:
    validate_config = validating(
        "validate.ref.example.dev",
        hook("validate.ref.example.dev", webhook.url("/validate"), webhook.ca_bundle, timeoutSeconds=2),
    )
    webhook.replies["/validate"] = lambda review: answer(
        review, allowed=False, status={"message": "spec.replicas: Invalid value: 2: must be odd"}
    )

    assert (
        await status_of(admission.validate(gadget_attrs(SCALE_RECEIVED), [validate_config]))
        == SCALE_DENIED_STATUS
    )
    (call,) = webhook.calls
    assert call.request == with_uid(SCALE_RECEIVED, call)
    assert len(call.body) == SCALE_CONTENT_LENGTH


def _reversed_keys(value: Any) -> Any:
    """``value`` with every object's keys in reverse order: an order no encoder would choose."""
    if isinstance(value, dict):
        return {key: _reversed_keys(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(item) for item in value]
    return value


def _key_paths(value: Any, prefix: str = "") -> list[str]:
    """Every key of a decoded JSON document, depth first, in document order."""
    paths: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            paths.append(f"{prefix}.{key}")
            paths.extend(_key_paths(item, f"{prefix}.{key}"))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            paths.extend(_key_paths(item, f"{prefix}[{i}]"))
    return paths


async def test_objects_go_out_in_the_real_servers_key_order_whatever_order_they_come_in(
    webhook: FakeWebhook, admission: Admission
) -> None:
    # A custom resource is a nested map to the real server: every level sorted (16-wh-create-*);
    # a Scale is a Go struct: struct order (16-wh-scale-*).
    validate_config = validating(
        "validate.ref.example.dev", hook("validate.ref.example.dev", webhook.url("/v"), webhook.ca_bundle)
    )
    for recorded in (MUTATE_RECEIVED, SCALE_RECEIVED):
        scrambled = gadget_attrs(
            recorded,
            object=_reversed_keys(recorded["object"]),
            old_object=_reversed_keys(recorded["oldObject"]),
        )
        await admission.validate(scrambled, [validate_config])
        sent = webhook.calls[-1].request
        for key in ("object", "oldObject"):
            assert _key_paths(sent[key]) == _key_paths(recorded[key])


async def test_built_in_objects_go_out_in_struct_order(webhook: FakeWebhook, admission: Admission) -> None:
    every_resource = [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]
    validate_config = validating(
        "validate.ref.example.dev",
        hook("validate.ref.example.dev", webhook.url("/v"), webhook.ca_bundle, rules=every_resource),
    )
    config_map = {
        "data": {"b": "2", "a": "1"},
        "metadata": {"uid": "u", "namespace": "ref", "name": "cm"},
        "apiVersion": "v1",
        "kind": "ConfigMap",
    }
    attrs = _attrs(
        group="",
        version="v1",
        kind="ConfigMap",
        resource_group="",
        resource_version="v1",
        resource="configmaps",
        namespace="ref",
        object=config_map,
    )
    await admission.validate(attrs, [validate_config])
    sent = webhook.calls[-1].request["object"]
    assert list(sent) == ["kind", "apiVersion", "metadata", "data"]
    assert list(sent["metadata"]) == ["name", "namespace", "uid"]


async def test_an_unchanged_object_comes_back_as_the_callers_own(
    webhook: FakeWebhook, admission: Admission
) -> None:
    # Callers hold references into the object (its metadata); an allow without a patch must not
    # silently swap it for a copy.
    mutate_config = mutating(
        "mutate.ref.example.dev", hook("mutate.ref.example.dev", webhook.url("/m"), webhook.ca_bundle)
    )
    attrs = gadget_attrs()
    mutated, _ = await admission.mutate(attrs, [mutate_config])
    assert len(webhook.calls) == 1
    assert mutated is attrs.object

    webhook.replies["/m"] = lambda review: answer(
        review,
        allowed=True,
        patchType="JSONPatch",
        patch=json_patch({"op": "add", "path": "/metadata/labels", "value": {"m": "1"}}),
    )
    mutated, _ = await admission.mutate(attrs, [mutate_config])
    assert mutated is not attrs.object and mutated is not None
    assert mutated["metadata"]["labels"] == {"m": "1"}
    assert attrs.object is not None and "labels" not in attrs.object["metadata"]


async def test_a_webhook_status_code_and_reason_pass_through(
    webhook: FakeWebhook, admission: Admission
) -> None:
    validate_config = validating(
        "v.ref.example.dev", hook("validate.ref.example.dev", webhook.url("/v"), webhook.ca_bundle)
    )
    webhook.replies["/v"] = lambda review: answer(
        review,
        allowed=False,
        status={
            "code": 403,
            "reason": "Forbidden",
            "message": "spec.replicas: Invalid value: 6: must be odd",
        },
    )
    assert await status_of(admission.validate(gadget_attrs(), [validate_config])) == DENIED_403_STATUS


@pytest.mark.parametrize(
    ("status", "expected_message", "expected_code", "expected_reason"),
    [
        (None, 'admission webhook "v.ref.example.dev" denied the request without explanation', 400, None),
        (
            {"reason": "NotAcceptable"},
            'admission webhook "v.ref.example.dev" denied the request: NotAcceptable',
            400,
            "NotAcceptable",
        ),
        (
            {"code": 200, "message": "no"},
            'admission webhook "v.ref.example.dev" denied the request: no',
            400,
            None,
        ),
        (
            {"code": 409, "message": "taken"},
            'admission webhook "v.ref.example.dev" denied the request: taken',
            409,
            None,
        ),
    ],
)
async def test_denials_without_a_message_or_with_a_low_code(
    webhook: FakeWebhook,
    admission: Admission,
    status: JSON | None,
    expected_message: str,
    expected_code: int,
    expected_reason: str | None,
) -> None:
    validate_config = validating("v", hook("v.ref.example.dev", webhook.url("/v"), webhook.ca_bundle))
    webhook.replies["/v"] = lambda review: answer(
        review, allowed=False, **({"status": status} if status else {})
    )
    with pytest.raises(StatusError) as caught:
        await admission.validate(gadget_attrs(), [validate_config])
    assert (caught.value.message, caught.value.code, caught.value.reason) == (
        expected_message,
        expected_code,
        expected_reason,
    )


async def test_mutating_denial_stops_the_chain(webhook: FakeWebhook, admission: Admission) -> None:
    first = mutating("a", hook("deny.ref.example.dev", webhook.url("/deny"), webhook.ca_bundle))
    second = mutating("b", hook("never.ref.example.dev", webhook.url("/never"), webhook.ca_bundle))
    webhook.replies["/deny"] = lambda review: answer(review, allowed=False, status={"message": "nope"})
    status = await status_of(admission.mutate(gadget_attrs(), [second, first]))
    assert status["message"] == 'admission webhook "deny.ref.example.dev" denied the request: nope'
    assert status["code"] == 400 and [c.path for c in webhook.calls] == ["/deny"]


async def test_warnings_are_returned_and_recorded(webhook: FakeWebhook, admission: Admission) -> None:
    validate_config = validating("v", hook("validate.ref.example.dev", webhook.url("/v"), webhook.ca_bundle))
    webhook.replies["/v"] = lambda review: answer(review, allowed=True, warnings=["replicas above 7"])
    sink = Warnings()
    assert await admission.validate(gadget_attrs(), [validate_config], warnings=sink) == ["replicas above 7"]
    assert sink.headers() == ['299 - "replicas above 7"']  # 16-wh-create-warning's Warning header


async def test_warnings_of_a_denying_webhook_still_reach_the_sink(
    webhook: FakeWebhook, admission: Admission
) -> None:
    mutate_config = mutating("m", hook("m.ref.example.dev", webhook.url("/m"), webhook.ca_bundle))
    webhook.replies["/m"] = lambda review: answer(review, allowed=False, warnings=["careful"])
    sink = Warnings()
    with pytest.raises(StatusError):
        await admission.mutate(gadget_attrs(), [mutate_config], warnings=sink)
    assert sink.messages == ["careful"]


async def test_generate_name_create_sends_no_name(webhook: FakeWebhook, admission: Admission) -> None:
    mutate_config = mutating("m", hook("mutate.ref.example.dev", webhook.url("/mutate"), webhook.ca_bundle))
    obj = {
        "apiVersion": "ref.example.dev/v1",
        "kind": "Gadget",
        "metadata": {"generateName": "whgen-", "namespace": "ref"},
    }
    await admission.mutate(gadget_attrs(name="", object=obj), [mutate_config])
    request = webhook.calls[0].request
    # 16-wh-create-generatename: requestResource is followed directly by namespace.
    assert list(request)[4:7] == ["requestResource", "namespace", "operation"]


async def test_dry_run_is_flagged_and_side_effect_webhooks_refuse_it(
    webhook: FakeWebhook, admission: Admission
) -> None:
    dry = gadget_attrs(dry_run=True, options=operation_options("CREATE", dry_run=["All"]))
    ok = mutating("m", hook("m.ref.example.dev", webhook.url("/m"), webhook.ca_bundle))
    await admission.mutate(dry, [ok])
    request = webhook.calls[0].request
    assert request["dryRun"] is True
    assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"]}

    # sideEffects Some/Unknown can only exist in objects stored through v1beta1; they never see dry runs.
    legacy = mutating("m", hook("m.ref.example.dev", webhook.url("/m"), webhook.ca_bundle))
    legacy["webhooks"][0]["sideEffects"] = "Some"
    status = await status_of(admission.mutate(dry, [legacy]))
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'admission webhook "m.ref.example.dev" does not support dry run',
        "reason": "BadRequest",
        "code": 400,
    }
    assert len(webhook.calls) == 1


# ------------------------------------------------------------------------------ failures and Ignore


async def test_down_webhooks_fail_with_connection_refused_mutating_first(admission: Admission) -> None:
    port = free_port()
    mutate_config = mutating(
        "mutate.ref.example.dev", hook("mutate.ref.example.dev", f"https://127.0.0.1:{port}/mutate")
    )
    validate_config = validating(
        "validate.ref.example.dev",
        hook("validate.ref.example.dev", f"https://127.0.0.1:{port}/validate", timeoutSeconds=2),
    )
    # 16-wh-down-create-both: the mutating webhook is the one reported.
    assert await status_of(admission.mutate(gadget_attrs(), [mutate_config])) == _call_failure_status(
        'failed calling webhook "mutate.ref.example.dev": failed to call webhook: '
        f'Post "https://127.0.0.1:{port}/mutate?timeout=10s": '
        f"dial tcp 127.0.0.1:{port}: connect: connection refused"
    )
    # 16-wh-down-create-validating and 16-wh-down-scale.
    assert await status_of(
        admission.validate(gadget_attrs(SCALE_RECEIVED), [validate_config])
    ) == _call_failure_status(
        'failed calling webhook "validate.ref.example.dev": failed to call webhook: '
        f'Post "https://127.0.0.1:{port}/validate?timeout=2s": '
        f"dial tcp 127.0.0.1:{port}: connect: connection refused"
    )


async def test_failure_policy_ignore_lets_the_request_through(admission: Admission) -> None:
    port = free_port()
    mutate_config = mutating(
        "m", hook("m.ref.example.dev", f"https://127.0.0.1:{port}/m", failurePolicy="Ignore")
    )
    validate_config = validating(
        "v", hook("v.ref.example.dev", f"https://127.0.0.1:{port}/v", failurePolicy="Ignore")
    )
    attrs = gadget_attrs()
    mutated, warnings = await admission.mutate(attrs, [mutate_config])
    assert mutated == attrs.object and warnings == []
    assert await admission.validate(attrs, [validate_config]) == []


async def test_ignore_does_not_cover_denials(webhook: FakeWebhook, admission: Admission) -> None:
    validate_config = validating(
        "v", hook("v.ref.example.dev", webhook.url("/v"), webhook.ca_bundle, failurePolicy="Ignore")
    )
    webhook.replies["/v"] = lambda review: answer(review, allowed=False, status={"message": "no"})
    with pytest.raises(StatusError) as caught:
        await admission.validate(gadget_attrs(), [validate_config])
    assert caught.value.code == 400


async def test_a_slow_webhook_times_out_with_context_deadline_exceeded(
    webhook: FakeWebhook, admission: Admission
) -> None:
    async def never_answers(review: JSON) -> JSON:
        await webhook.release.wait()
        return allow(review)

    webhook.replies["/validate"] = never_answers
    validate_config = validating(
        "validate.ref.example.dev",
        hook("validate.ref.example.dev", webhook.url("/validate"), webhook.ca_bundle, timeoutSeconds=1),
    )
    started = asyncio.get_running_loop().time()
    status = await status_of(admission.validate(gadget_attrs(), [validate_config]))
    assert asyncio.get_running_loop().time() - started < 5
    # 16-wh-create-slow-timeout, with timeoutSeconds 1 instead of 2.
    assert status == _call_failure_status(
        'failed calling webhook "validate.ref.example.dev": failed to call webhook: '
        f'Post "https://127.0.0.1:{webhook.port}/validate?timeout=1s": context deadline exceeded'
    )
    assert webhook.calls[0].query == "timeout=1s"


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (
            lambda review: {"response": {"uid": review["request"]["uid"], "allowed": True}},
            "received invalid webhook response: expected webhook response of admission.k8s.io/v1, "
            "Kind=AdmissionReview, got /, Kind=",
        ),
        (
            lambda review: answer({"request": {"uid": "other"}}, allowed=True),
            'received invalid webhook response: expected response.uid="{uid}", got "other"',
        ),
        (
            lambda review: {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
            "received invalid webhook response: webhook response was absent",
        ),
        (
            lambda review: web.Response(status=500, text="boom"),
            "failed to call webhook: an error on the server "
            '("boom") has prevented the request from succeeding',
        ),
        (
            lambda review: web.Response(status=404, text="404 page not found"),
            "failed to call webhook: the server could not find the requested resource",
        ),
        (
            lambda review: web.json_response(
                {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "custom"}, status=503
            ),
            "failed to call webhook: custom",
        ),
        (
            lambda review: web.Response(status=200, body=b"", content_type="application/json"),
            "failed to call webhook: 0-length response with "
            "status code: 200 and content type: application/json",
        ),
        (
            lambda review: answer(review, allowed=True, patchType="JSONPatch", patch=json_patch()),
            "received invalid webhook response: validating webhook may not return response.patch",
        ),
    ],
)
async def test_unusable_answers_are_call_failures(
    webhook: FakeWebhook, admission: Admission, reply: Reply, reason: str
) -> None:
    webhook.replies["/v"] = reply
    validate_config = validating("v", hook("v.ref.example.dev", webhook.url("/v"), webhook.ca_bundle))
    status = await status_of(admission.validate(gadget_attrs(), [validate_config]))
    expected = 'failed calling webhook "v.ref.example.dev": ' + reason.replace(
        "{uid}", webhook.calls[0].request["uid"]
    )
    assert status == _call_failure_status(expected)
    # The same answers are waved through when the webhook's failurePolicy is Ignore.
    validate_config["webhooks"][0]["failurePolicy"] = "Ignore"
    assert await admission.validate(gadget_attrs(), [validate_config]) == []


async def test_a_foreign_ca_is_an_unknown_authority(webhook: FakeWebhook, admission: Admission) -> None:
    other = base64.b64encode(CertificateAuthority.new("other").cert_pem).decode()
    validate_config = validating("v", hook("v.ref.example.dev", webhook.url("/v"), other))
    status = await status_of(admission.validate(gadget_attrs(), [validate_config]))
    assert status["message"].endswith(
        f'Post "https://127.0.0.1:{webhook.port}/v?timeout=10s": '
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    )
    assert webhook.calls == []


# ------------------------------------------------------------------------------------ mutation


async def test_reinvocation_if_needed_reruns_an_earlier_webhook_once(
    webhook: FakeWebhook, admission: Admission
) -> None:
    def add_label(key: str) -> Reply:
        def reply(review: JSON) -> JSON:
            labels = review["request"]["object"]["metadata"].get("labels")
            if labels is None:
                patch = json_patch({"op": "add", "path": "/metadata/labels", "value": {key: "1"}})
            elif key not in labels:
                patch = json_patch({"op": "add", "path": f"/metadata/labels/{key}", "value": "1"})
            else:
                return allow(review)
            return answer(review, allowed=True, patchType="JSONPatch", patch=patch)

        return reply

    webhook.replies["/a"] = add_label("a")
    webhook.replies["/b"] = add_label("b")
    first = mutating(
        "1-first",
        hook("a.ref.example.dev", webhook.url("/a"), webhook.ca_bundle, reinvocationPolicy="IfNeeded"),
    )
    second = mutating("2-second", hook("b.ref.example.dev", webhook.url("/b"), webhook.ca_bundle))

    mutated, _ = await admission.mutate(gadget_attrs(), [second, first])
    assert mutated is not None and mutated["metadata"]["labels"] == {"a": "1", "b": "1"}
    assert [call.path for call in webhook.calls] == ["/a", "/b", "/a"]
    assert webhook.calls[2].request["object"]["metadata"]["labels"] == {"a": "1", "b": "1"}

    webhook.calls.clear()
    first["webhooks"][0]["reinvocationPolicy"] = "Never"
    await admission.mutate(gadget_attrs(), [second, first])
    assert [call.path for call in webhook.calls] == ["/a", "/b"]


async def test_a_patch_that_does_not_apply_is_an_internal_error(
    webhook: FakeWebhook, admission: Admission
) -> None:
    mutate_config = mutating(
        "m", hook("m.ref.example.dev", webhook.url("/m"), webhook.ca_bundle, failurePolicy="Ignore")
    )
    webhook.replies["/m"] = lambda review: answer(
        review,
        allowed=True,
        patchType="JSONPatch",
        patch=json_patch({"op": "add", "path": "/metadata/labels/x", "value": "y"}),
    )
    # Not a call failure, so failurePolicy Ignore does not apply.
    status = await status_of(admission.mutate(gadget_attrs(), [mutate_config]))
    message = 'add operation does not apply: doc is missing path: "/metadata/labels/x": missing value'
    assert status == _call_failure_status(message)


async def test_a_patch_on_delete_is_refused(webhook: FakeWebhook, admission: Admission) -> None:
    webhook.replies["/m"] = lambda review: answer(
        review, allowed=True, patchType="JSONPatch", patch=json_patch({"op": "remove", "path": "/spec"})
    )
    rule = {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["DELETE"], "resources": ["*"]}
    mutate_config = mutating(
        "m", hook("m.ref.example.dev", webhook.url("/m"), webhook.ca_bundle, rules=[rule])
    )
    old = MUTATE_RECEIVED["object"]
    attrs = gadget_attrs(
        operation="DELETE",
        object=None,
        old_object=old,
        options=operation_options("DELETE", delete_options={}),
    )
    status = await status_of(admission.mutate(attrs, [mutate_config]))
    assert status["code"] == 500
    assert status["message"] == (
        'Internal error occurred: admission webhook "m.ref.example.dev" attempted to modify the object, '
        "which is not supported for this operation"
    )
    request = webhook.calls[0].request
    assert request["object"] is None and request["oldObject"] == old
    assert request["options"] == {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}


async def test_service_webhooks_use_the_resolver_and_the_service_name_for_tls(
    webhook: FakeWebhook, admission: Admission
) -> None:
    service_hook = hook("svc.ref.example.dev", "unused", webhook.ca_bundle)
    service_hook["clientConfig"] = {
        "service": {"namespace": "ns", "name": "hook", "path": "/validate"},
        "caBundle": webhook.ca_bundle,
    }
    validate_config = validating("v", service_hook)
    resolved: list[tuple[str, str, int]] = []

    def resolve(namespace: str, name: str, port: int) -> tuple[str, int]:
        resolved.append((namespace, name, port))
        return "127.0.0.1", webhook.port

    client = Admission(resolve)
    try:
        assert await client.validate(gadget_attrs(), [validate_config]) == []
    finally:
        await client.close()
    assert resolved == [("ns", "hook", 443)]
    assert webhook.calls[0].headers["Host"] == "hook.ns.svc:443" and webhook.calls[0].path == "/validate"

    # Without a resolver (no cluster networking) the service is not found.
    status = await status_of(admission.validate(gadget_attrs(), [validate_config]))
    assert status["message"] == (
        'Internal error occurred: failed calling webhook "svc.ref.example.dev": failed to call webhook: '
        'Post "https://hook.ns.svc:443/validate?timeout=10s": service "hook" not found'
    )

    # A certificate without the service name fails verification with Go's wording.
    validate_config["webhooks"][0]["clientConfig"]["service"]["name"] = "elsewhere"
    client = Admission(resolve)
    try:
        status = await status_of(client.validate(gadget_attrs(), [validate_config]))
    finally:
        await client.close()
    assert status["message"].endswith(
        'Post "https://elsewhere.ns.svc:443/validate?timeout=10s": tls: failed to verify certificate: '
        "x509: certificate is valid for localhost, hook.ns.svc, not elsewhere.ns.svc"
    )


async def test_validating_webhooks_run_concurrently_and_the_first_error_wins(
    webhook: FakeWebhook, admission: Admission
) -> None:
    both_in_flight = asyncio.Event()
    in_flight = 0

    async def slow_deny(review: JSON) -> JSON:
        nonlocal in_flight
        in_flight += 1
        if in_flight == 2:
            both_in_flight.set()
        await both_in_flight.wait()  # only returns if the other call is running at the same time
        await asyncio.sleep(0.2)
        return answer(review, allowed=False, status={"message": "slow"})

    async def fast_deny(review: JSON) -> JSON:
        nonlocal in_flight
        in_flight += 1
        if in_flight == 2:
            both_in_flight.set()
        await both_in_flight.wait()
        return answer(review, allowed=False, status={"message": "fast"})

    webhook.replies["/slow"] = slow_deny
    webhook.replies["/fast"] = fast_deny
    configs = [
        validating(
            "a", hook("slow.ref.example.dev", webhook.url("/slow"), webhook.ca_bundle, timeoutSeconds=2)
        ),
        validating(
            "b", hook("fast.ref.example.dev", webhook.url("/fast"), webhook.ca_bundle, timeoutSeconds=2)
        ),
    ]
    with pytest.raises(StatusError) as caught:
        await admission.validate(gadget_attrs(), configs)
    assert caught.value.message == 'admission webhook "fast.ref.example.dev" denied the request: fast'
    assert len(webhook.calls) == 2


async def test_v1beta1_reviews_are_used_when_the_webhook_only_speaks_v1beta1(
    webhook: FakeWebhook, admission: Admission
) -> None:
    def reply(review: JSON) -> JSON:
        assert review["apiVersion"] == "admission.k8s.io/v1beta1"
        # v1beta1 answers were never checked for kind or uid.
        return {
            "response": {
                "allowed": True,
                "patch": json_patch({"op": "add", "path": "/spec/extra", "value": 1}),
            }
        }

    webhook.replies["/m"] = reply
    mutate_config = mutating(
        "m",
        hook(
            "m.ref.example.dev",
            webhook.url("/m"),
            webhook.ca_bundle,
            admissionReviewVersions=["v1beta1", "v1"],
        ),
    )
    mutated, _ = await admission.mutate(gadget_attrs(), [mutate_config])
    assert mutated is not None and mutated["spec"]["extra"] == 1


# --------------------------------------------------------------------------------------- matching


def _attrs(**overrides: Any) -> AdmissionAttributes:
    base = AdmissionAttributes(
        operation="CREATE",
        group="ref.example.dev",
        version="v1",
        kind="Gadget",
        resource_group="ref.example.dev",
        resource_version="v1",
        resource="gadgets",
        namespace="ref",
        name="g",
        object={
            "apiVersion": "ref.example.dev/v1",
            "kind": "Gadget",
            "metadata": {"name": "g", "labels": {"tier": "web"}},
        },
        namespace_labels={"env": "prod"},
    )
    for key, value in overrides.items():
        setattr(base, key, value)
    return base


def _matches(attrs: AdmissionAttributes, registry: Registry | None = None, **webhook: Any) -> bool:
    rule = {
        "apiGroups": ["ref.example.dev"],
        "apiVersions": ["v1"],
        "operations": ["*"],
        "resources": ["gadgets"],
    }
    rule.update(webhook.pop("rule", {}))
    spec = hook("h.ref.example.dev", "https://127.0.0.1:1/h", rules=[rule], **webhook)
    return bool(select_webhooks(attrs, [validating("c", spec)], mutating=False, registry=registry))


@pytest.mark.parametrize(
    ("rule", "sub_resource", "expected"),
    [
        ({"resources": ["gadgets"]}, "", True),
        ({"resources": ["gadgets"]}, "status", False),  # 16-wh-status-update-not-called
        ({"resources": ["gadgets/scale"]}, "scale", True),
        ({"resources": ["gadgets/scale"]}, "", False),
        ({"resources": ["*/scale"]}, "scale", True),
        ({"resources": ["gadgets/*"]}, "status", True),
        ({"resources": ["*"]}, "", True),
        ({"resources": ["*"]}, "scale", False),
        ({"resources": ["*/*"]}, "scale", True),
        ({"resources": ["widgets"]}, "", False),
        ({"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["gadgets"]}, "", True),
        ({"apiVersions": ["v2"]}, "", False),
        ({"operations": ["UPDATE", "DELETE"]}, "", False),
        ({"scope": "Namespaced"}, "", True),
        ({"scope": "Cluster"}, "", False),
    ],
)
def test_rules(rule: JSON, sub_resource: str, expected: bool) -> None:
    assert _matches(_attrs(sub_resource=sub_resource), rule=rule) is expected


def test_scope_treats_namespaces_as_cluster_scoped() -> None:
    namespace = _attrs(
        group="",
        kind="Namespace",
        resource_group="",
        resource="namespaces",
        namespace="ref",
        object={"metadata": {"name": "ref", "labels": {"env": "dev"}}},
    )
    rule = {"apiGroups": [""], "resources": ["namespaces"]}
    assert _matches(namespace, rule={**rule, "scope": "Cluster"})
    assert not _matches(namespace, rule={**rule, "scope": "Namespaced"})
    # Creating a namespace matches namespaceSelector against the namespace's own labels.
    selector = {"matchLabels": {"env": "dev"}}
    assert _matches(namespace, rule=rule, namespaceSelector=selector)


def test_namespace_and_object_selectors() -> None:
    attrs = _attrs()
    assert _matches(attrs, namespaceSelector={"matchLabels": {"env": "prod"}})
    assert not _matches(attrs, namespaceSelector={"matchLabels": {"env": "dev"}})
    assert _matches(
        attrs, namespaceSelector={"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}
    )
    assert not _matches(
        attrs, namespaceSelector={"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}
    )
    assert _matches(attrs, objectSelector={"matchLabels": {"tier": "web"}})
    assert not _matches(
        attrs, objectSelector={"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["web"]}]}
    )
    # The old object counts too (a label being removed still matches).
    relabelled = _attrs(
        operation="UPDATE",
        object={"metadata": {"labels": {}}},
        old_object={"metadata": {"labels": {"tier": "web"}}},
    )
    assert _matches(relabelled, objectSelector={"matchLabels": {"tier": "web"}})
    # Cluster-scoped resources ignore the namespaceSelector.
    assert _matches(
        _attrs(namespace="", namespace_labels=None), namespaceSelector={"matchLabels": {"env": "dev"}}
    )


def test_a_missing_namespace_is_404_only_for_webhooks_whose_rules_match() -> None:
    attrs = _attrs(namespace_labels=None)
    with pytest.raises(StatusError) as caught:
        _matches(attrs, namespaceSelector={"matchLabels": {"env": "prod"}})
    assert caught.value.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'namespaces "ref" not found',
        "reason": "NotFound",
        "details": {"name": "ref", "kind": "namespaces"},
        "code": 404,
    }
    assert not _matches(
        attrs, namespaceSelector={"matchLabels": {"env": "prod"}}, rule={"resources": ["widgets"]}
    )


def test_configurations_are_called_in_name_order() -> None:
    configs = [
        mutating("zeta", hook("z.ref.example.dev", "https://127.0.0.1:1/z")),
        mutating(
            "alpha",
            hook("a1.ref.example.dev", "https://127.0.0.1:1/a"),
            hook("a2.ref.example.dev", "https://127.0.0.1:1/b"),
        ),
    ]
    names = [i.name for i in select_webhooks(_attrs(), configs, mutating=True)]
    assert names == ["a1.ref.example.dev", "a2.ref.example.dev", "z.ref.example.dev"]


def test_match_policy_equivalent_finds_other_versions() -> None:
    registry = Registry()
    for version in ("v1", "v2"):
        registry.add(
            ResourceType(
                group="ref.example.dev",
                version=version,
                resource="gadgets",
                kind="Gadget",
                singular="gadget",
                namespaced=True,
                has_status=True,
                scale=ScaleSpec(".spec.replicas", ".status.replicas"),
            )
        )
    rule = {"apiVersions": ["v2"], "resources": ["gadgets", "gadgets/scale"]}
    assert not _matches(_attrs(), registry, rule=rule, matchPolicy="Exact")
    (invocation,) = select_webhooks(
        _attrs(),
        [
            validating(
                "c",
                hook(
                    "h.ref.example.dev",
                    "https://x:1/h",
                    rules=[{**rule, "apiGroups": ["ref.example.dev"], "operations": ["*"]}],
                ),
            )
        ],
        mutating=False,
        registry=registry,
    )
    assert invocation.resource == ("ref.example.dev", "v2", "gadgets")
    assert invocation.kind == ("ref.example.dev", "v2", "Gadget")
    scale = _attrs(group="autoscaling", version="v1", kind="Scale", sub_resource="scale")
    assert _matches(scale, registry, rule=rule)


async def test_equivalent_match_sends_the_object_in_the_matched_version(
    webhook: FakeWebhook, admission: Admission
) -> None:
    registry = Registry()
    for version in ("v1", "v2"):
        registry.add(ResourceType("ref.example.dev", version, "gadgets", "Gadget", "gadget", namespaced=True))
    client = Admission(registry=registry)
    rule = {
        "apiGroups": ["ref.example.dev"],
        "apiVersions": ["v2"],
        "operations": ["CREATE"],
        "resources": ["gadgets"],
    }
    webhook.replies["/m"] = lambda review: answer(
        review,
        allowed=True,
        patchType="JSONPatch",
        patch=json_patch(
            {"op": "add", "path": "/spec/seen", "value": review["request"]["object"]["apiVersion"]}
        ),
    )
    try:
        mutated, _ = await client.mutate(
            gadget_attrs(),
            [mutating("m", hook("m.ref.example.dev", webhook.url("/m"), webhook.ca_bundle, rules=[rule]))],
        )
    finally:
        await client.close()
    request = webhook.calls[0].request
    assert request["kind"] == {"group": "ref.example.dev", "version": "v2", "kind": "Gadget"}
    assert request["requestKind"] == {"group": "ref.example.dev", "version": "v1", "kind": "Gadget"}
    assert mutated is not None and mutated["apiVersion"] == "ref.example.dev/v1"
    assert mutated["spec"]["seen"] == "ref.example.dev/v2"


# ---------------------------------------------------------------------- configuration objects


def test_defaults_match_what_the_real_server_stored() -> None:
    for posted, stored, is_mutating in (
        (MUTATING_CONFIG_POSTED, MUTATING_WEBHOOKS_STORED, True),
        (VALIDATING_CONFIG_POSTED, VALIDATING_WEBHOOKS_STORED, False),
    ):
        obj = copy.deepcopy(posted)
        default_webhook_configuration(obj, is_mutating)
        assert obj["webhooks"] == stored
        # Key order is part of the answer (built-ins serialise in Go struct order).
        assert [list(w) for w in obj["webhooks"]] == [list(w) for w in stored]
        assert [list(r) for r in obj["webhooks"][0]["rules"]] == [list(r) for r in stored[0]["rules"]]
        assert validate_webhook_configuration(obj, is_mutating) == []


def test_service_port_defaults_to_443() -> None:
    obj = {"webhooks": [{"name": "a.b.c", "clientConfig": {"service": {"name": "s", "namespace": "n"}}}]}
    default_webhook_configuration(obj, False)
    assert obj["webhooks"][0]["clientConfig"] == {"service": {"namespace": "n", "name": "s", "port": 443}}


def test_invalid_configuration_matches_the_recorded_422() -> None:
    obj = copy.deepcopy(INVALID_CONFIG_POSTED)
    default_webhook_configuration(obj, False)
    errors = validate_webhook_configuration(obj, False)
    kind = Qualified(
        "admissionregistration.k8s.io", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration"
    )
    assert invalid_object(kind, "bad.ref.example.dev", errors).status() == INVALID_CONFIG_STATUS


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"timeoutSeconds": 31},
            "webhooks[0].timeoutSeconds: Invalid value: 31: "
            "the timeout value must be between 1 and 30 seconds",
        ),
        (
            {"failurePolicy": "Maybe"},
            'webhooks[0].failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore"',
        ),
        (
            {"clientConfig": {}},
            "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
        ),
        (
            {"clientConfig": {"url": "https://h/p?q=1"}},
            'webhooks[0].clientConfig.url: Invalid value: "q=1": '
            "query parameters are not permitted in the URL",
        ),
        (
            {"admissionReviewVersions": ["v2"]},
            "webhooks[0].admissionReviewVersions: Invalid value: "
            '[]string{"v2"}: must include at least one of v1, v1beta1',
        ),
        (
            {
                "rules": [
                    {
                        "apiGroups": ["*", "x"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["a"],
                    }
                ]
            },
            'webhooks[0].rules[0].apiGroups: Invalid value: []string{"*", "x"}: '
            "if '*' is present, must not specify other API groups",
        ),
        (
            {
                "rules": [
                    {"apiGroups": ["x"], "apiVersions": ["v1"], "operations": ["PATCH"], "resources": ["a"]}
                ]
            },
            'webhooks[0].rules[0].operations[0]: Unsupported value: "PATCH": '
            'supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"',
        ),
        (
            {
                "rules": [
                    {"apiGroups": ["x"], "apiVersions": ["v1"], "operations": ["*"], "resources": ["*", "a"]}
                ]
            },
            'webhooks[0].rules[0].resources: Invalid value: []string{"*", "a"}: if '
            "'*' is present, must not specify other resources without subresources",
        ),
        (
            {"namespaceSelector": {"matchExpressions": [{"key": "k", "operator": "In"}]}},
            "webhooks[0].namespaceSelector.matchExpressions[0].values: Required "
            "value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            {"clientConfig": {"service": {"name": "s", "namespace": "n", "path": "noslash"}}},
            "webhooks[0].clientConfig.service.path: Invalid value: \"noslash\": must start with a '/'",
        ),
    ],
)
def test_webhook_validation_messages(change: JSON, expected: str) -> None:
    obj = validating("c", hook("a.b.c", "https://h/p"))
    obj["webhooks"][0].update(change)
    default_webhook_configuration(obj, False)
    assert [str(e) for e in validate_webhook_configuration(obj, False)] == [expected]


def test_duplicate_webhook_names_are_rejected() -> None:
    obj = {"webhooks": [hook("a.b.c", "https://h/p"), hook("a.b.c", "https://h/q")]}
    default_webhook_configuration(obj, False)
    assert [str(e) for e in validate_webhook_configuration(obj, False)] == [
        'webhooks[1].name: Duplicate value: "a.b.c"'
    ]


def test_operation_options() -> None:
    assert operation_options("UPDATE", field_manager="fm-x", field_validation="Strict") == {
        "kind": "UpdateOptions",
        "apiVersion": "meta.k8s.io/v1",
        "fieldManager": "fm-x",
        "fieldValidation": "Strict",
    }
    assert operation_options(
        "DELETE", delete_options={"propagationPolicy": "Background", "apiVersion": "v1"}
    ) == {
        "kind": "DeleteOptions",
        "apiVersion": "meta.k8s.io/v1",
        "propagationPolicy": "Background",
    }
    assert operation_options("CONNECT") is None


async def test_resolver_errors_are_reported_where_the_dial_error_would_be() -> None:
    def resolve(namespace: str, name: str, port: int) -> tuple[str, int]:
        raise LookupError(f'no endpoints available for service "{name}"')

    service_hook = hook("svc.ref.example.dev", "unused")
    service_hook["clientConfig"] = {"service": {"namespace": "ns", "name": "hook", "port": 8443}}
    client = Admission(resolve)
    try:
        status = await status_of(client.validate(gadget_attrs(), [validating("v", service_hook)]))
    finally:
        await client.close()
    assert status["message"] == (
        'Internal error occurred: failed calling webhook "svc.ref.example.dev": failed to call webhook: '
        'Post "https://hook.ns.svc:8443/?timeout=10s": no endpoints available for service "hook"'
    )
