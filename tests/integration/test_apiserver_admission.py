"""Registered admission webhooks are called over TLS; their answers reach the client as kube words them."""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from runtime.envtest.certs import CertificateAuthority
from tests.support.crds import GROUP, PLURAL, VERSION, widget, widget_crd, widgets_path
from tests.support.kubehttp import KubeHTTP
from tests.support.webhooks import webhook_configuration

pytestmark = pytest.mark.asyncio(loop_scope="session")


class Webhook:
    """A real HTTPS admission webhook: odd replicas only, a warning above 7, a label added on create."""

    def __init__(self) -> None:
        self.ca = CertificateAuthority.new("test-webhook-ca")
        self.received: list[dict[str, Any]] = []
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._tmp = tempfile.TemporaryDirectory()

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/validate", self._validate)
        app.router.add_post("/mutate", self._mutate)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        cert, key = self.ca.serving_cert(["127.0.0.1"]).write(Path(self._tmp.name))
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(cert, key)
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=ctx)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        self._tmp.cleanup()

    async def _validate(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.received.append({"path": "/validate", "query": dict(request.query), "review": review})
        req = review["request"]
        obj = req["object"]
        replicas = obj["spec"]["replicas"]
        response: dict[str, Any] = {"uid": req["uid"], "allowed": replicas % 2 == 1}
        if replicas % 2 == 0:
            response["status"] = {"message": f"spec.replicas: Invalid value: {replicas}: must be odd"}
        elif replicas > 7:
            response["warnings"] = ["replicas above 7"]
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    async def _mutate(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.received.append({"path": "/mutate", "query": dict(request.query), "review": review})
        req = review["request"]
        ops = self.operations(req)
        response: dict[str, Any] = {"uid": req["uid"], "allowed": True}
        if ops:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    def operations(self, req: dict[str, Any]) -> list[dict[str, Any]]:
        """The JSON patch /mutate answers for this AdmissionRequest."""
        del req
        return [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]

    def configuration(
        self, kind: str, name: str, path: str, resources: list[str], namespace: str
    ) -> dict[str, Any]:
        return webhook_configuration(
            kind,
            name,
            f"https://127.0.0.1:{self.port}{path}",
            self.ca.cert_pem,
            group=GROUP,
            version=VERSION,
            resources=resources,
            namespace=namespace,
        )


@pytest_asyncio.fixture(loop_scope="session")
async def webhook(env: Any, namespace: str) -> AsyncIterator[tuple[Webhook, KubeHTTP]]:
    await env.install_crds([widget_crd()])
    hook = Webhook()
    await hook.start()
    async with KubeHTTP(env.kubeconfig) as kube:
        names = []
        for kind, path, resources in (
            ("ValidatingWebhookConfiguration", "/validate", [PLURAL, f"{PLURAL}/scale"]),
            ("MutatingWebhookConfiguration", "/mutate", [PLURAL]),
        ):
            name = f"{path.strip('/')}.{namespace}.test.cpo.dev"
            plural = kind.lower() + "s"
            reply = await kube.post(
                f"/apis/admissionregistration.k8s.io/v1/{plural}",
                hook.configuration(kind, name, path, resources, namespace),
            )
            assert reply.status == 201, reply.text
            names.append((plural, name))
        try:
            yield hook, kube
        finally:
            for plural, name in names:
                await kube.delete(f"/apis/admissionregistration.k8s.io/v1/{plural}/{name}")
            await hook.stop()


async def test_webhook_denial_mutation_and_warning(webhook: tuple[Webhook, KubeHTTP], namespace: str) -> None:
    hook, kube = webhook
    denied = await kube.post(widgets_path(namespace), widget("even", namespace, size="small", replicas=4))
    assert denied.status == 400, denied.text
    assert denied.body["message"] == (
        f'admission webhook "validate.{namespace}.test.cpo.dev" denied the request: '
        "spec.replicas: Invalid value: 4: must be odd"
    )
    assert "reason" not in denied.body

    created = await kube.post(widgets_path(namespace), widget("odd", namespace, size="small", replicas=9))
    assert created.status == 201, created.text
    assert created.body["metadata"]["labels"] == {"mutated": "yes"}
    assert any("replicas above 7" in w for w in created.warnings())

    validate_calls = [c for c in hook.received if c["path"] == "/validate"]
    review = validate_calls[-1]["review"]["request"]
    assert review["operation"] == "CREATE"
    assert review["resource"] == {"group": GROUP, "version": VERSION, "resource": PLURAL}
    assert review["object"]["metadata"]["labels"] == {"mutated": "yes"}
    assert validate_calls[-1]["query"] == {"timeout": "5s"}


async def test_webhook_sees_scale_subresource_updates(
    webhook: tuple[Webhook, KubeHTTP], namespace: str
) -> None:
    hook, kube = webhook
    created = await kube.post(widgets_path(namespace), widget("sc", namespace, size="small", replicas=3))
    assert created.status == 201, created.text
    denied = await kube.patch(widgets_path(namespace, "sc", "scale"), {"spec": {"replicas": 4}})
    assert denied.status == 400 and "must be odd" in denied.body["message"]
    review = hook.received[-1]["review"]["request"]
    assert review["subResource"] == "scale"
    assert review["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    ok = await kube.patch(widgets_path(namespace, "sc", "scale"), {"spec": {"replicas": 5}})
    assert ok.status == 200 and ok.body["spec"]["replicas"] == 5


class RepairingWebhook(Webhook):
    """A mutating webhook that clamps spec.replicas to the schema's maximum (9), copies the
    ``test.cpo.dev/size`` annotation, valid or not, into spec.size, and removes spec.size (which
    the schema requires and defaults) when the ``test.cpo.dev/drop-size`` annotation is set."""

    def operations(self, req: dict[str, Any]) -> list[dict[str, Any]]:
        obj = req["object"]
        ops: list[dict[str, Any]] = []
        if obj["spec"].get("replicas", 0) > 9:
            ops.append({"op": "replace", "path": "/spec/replicas", "value": 9})
        annotations = obj["metadata"].get("annotations") or {}
        forced = annotations.get("test.cpo.dev/size")
        if forced is not None:
            ops.append({"op": "replace", "path": "/spec/size", "value": forced})
        if "test.cpo.dev/drop-size" in annotations and "size" in obj["spec"]:
            ops.append({"op": "remove", "path": "/spec/size"})
        return ops


@contextlib.asynccontextmanager
async def only_mutating(
    env: Any, namespace: str, hook: Webhook, label: str, resources: list[str]
) -> AsyncIterator[KubeHTTP]:
    """``hook`` started and registered as the one mutating webhook for ``resources`` in ``namespace``."""
    await env.install_crds([widget_crd()])
    await hook.start()
    name = f"{label}.{namespace}.test.cpo.dev"
    path = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
    async with KubeHTTP(env.kubeconfig) as kube:
        config = hook.configuration("MutatingWebhookConfiguration", name, "/mutate", resources, namespace)
        reply = await kube.post(path, config)
        assert reply.status == 201, reply.text
        try:
            yield kube
        finally:
            await kube.delete(f"{path}/{name}")
            await hook.stop()


@pytest_asyncio.fixture(loop_scope="session")
async def repairing_webhook(env: Any, namespace: str) -> AsyncIterator[tuple[RepairingWebhook, KubeHTTP]]:
    hook = RepairingWebhook()
    async with only_mutating(env, namespace, hook, "repair", [PLURAL]) as kube:
        yield hook, kube


async def test_schema_validation_runs_on_what_mutating_webhooks_made(
    repairing_webhook: tuple[RepairingWebhook, KubeHTTP], namespace: str
) -> None:
    # kube-apiserver's order: mutating webhooks, then validation of their result, then
    # validating webhooks. An invalid request a webhook repairs is accepted; a valid one a
    # webhook breaks is refused with the schema's 422 and nothing is stored.
    hook, kube = repairing_webhook
    created = await kube.post(widgets_path(namespace), widget("rw", namespace, size="small", replicas=20))
    assert created.status == 201, created.text
    assert created.body["spec"]["replicas"] == 9
    path = widgets_path(namespace, "rw")
    too_many = dict(created.body, spec=dict(created.body["spec"], replicas=12))
    repaired = await kube.put(path, too_many)
    assert repaired.status == 200, repaired.text
    assert repaired.body["spec"]["replicas"] == 9
    seen = hook.received[-1]["review"]["request"]
    assert seen["operation"] == "UPDATE" and seen["object"]["spec"]["replicas"] == 12
    merged = await kube.patch(path, {"spec": {"replicas": 30}})
    assert merged.status == 200 and merged.body["spec"]["replicas"] == 9, merged.text

    broken = await kube.patch(path, {"metadata": {"annotations": {"test.cpo.dev/size": "huge"}}})
    assert broken.status == 422, broken.text
    assert broken.body["reason"] == "Invalid"
    assert [c["field"] for c in broken.body["details"]["causes"]] == ["spec.size"]
    assert hook.received[-1]["review"]["request"]["object"]["spec"]["size"] == "small"
    stored = await kube.get(path)
    assert stored.body["spec"]["size"] == "small"
    assert "annotations" not in stored.body["metadata"]
    assert stored.body["metadata"]["resourceVersion"] == merged.body["metadata"]["resourceVersion"]


async def test_defaults_are_applied_to_what_a_mutating_webhook_patched(
    repairing_webhook: tuple[RepairingWebhook, KubeHTTP], namespace: str
) -> None:
    # The webhook removes spec.size, which the schema requires: kube-apiserver defaults the patched
    # object again (size: large -> the default, small) before validating it, so no 422.
    hook, kube = repairing_webhook
    body = widget("dw", namespace, size="large")
    body["metadata"]["annotations"] = {"test.cpo.dev/drop-size": ""}
    created = await kube.post(widgets_path(namespace), body)
    assert created.status == 201, created.text
    assert created.body["spec"]["size"] == "small"
    path = widgets_path(namespace, "dw")
    updated = await kube.patch(path, {"spec": {"size": "large", "replicas": 3}})
    assert updated.status == 200, updated.text
    assert updated.body["spec"] == {"replicas": 3, "size": "small"}
    assert hook.received[-1]["review"]["request"]["object"]["spec"]["size"] == "large"


class OverreachingWebhook(Webhook):
    """A mutating webhook that writes where the endpoint does not let it: status on a create or a
    main-resource update, spec on a /status update."""

    def operations(self, req: dict[str, Any]) -> list[dict[str, Any]]:
        if req.get("subResource") == "status":
            return [{"op": "replace", "path": "/spec/size", "value": "large"}]
        return [{"op": "add", "path": "/status", "value": {"phase": "Hacked"}}]


@pytest_asyncio.fixture(loop_scope="session")
async def overreaching_webhook(
    env: Any, namespace: str
) -> AsyncIterator[tuple[OverreachingWebhook, KubeHTTP]]:
    hook = OverreachingWebhook()
    async with only_mutating(env, namespace, hook, "overreach", [PLURAL, f"{PLURAL}/status"]) as kube:
        yield hook, kube


async def test_the_endpoint_rules_apply_to_what_a_mutating_webhook_wrote(
    overreaching_webhook: tuple[OverreachingWebhook, KubeHTTP], namespace: str
) -> None:
    # The strategy (status only through /status, only status through it) runs after mutating
    # admission in kube-apiserver, so a webhook cannot write around it.
    hook, kube = overreaching_webhook
    created = await kube.post(widgets_path(namespace), widget("ow", namespace, size="small"))
    assert created.status == 201, created.text
    assert "status" not in created.body
    path = widgets_path(namespace, "ow")
    updated = await kube.patch(path, {"spec": {"replicas": 3}})
    assert updated.status == 200, updated.text
    assert "status" not in updated.body and updated.body["spec"]["replicas"] == 3
    status = await kube.patch(widgets_path(namespace, "ow", "status"), {"status": {"phase": "Ready"}})
    assert status.status == 200, status.text
    assert status.body["status"] == {"phase": "Ready"} and status.body["spec"]["size"] == "small"
    assert [c["review"]["request"].get("subResource") for c in hook.received] == [None, None, "status"]
    stored = await kube.get(path)
    assert stored.body["status"] == {"phase": "Ready"} and stored.body["spec"]["size"] == "small"
