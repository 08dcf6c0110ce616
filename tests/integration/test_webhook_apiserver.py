"""The API server calls our webhook server over TLS through webhook configurations, as in a cluster."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from runtime.webhook import WebhookServer, WebhookServerOptions
from tests.integration.test_webhook_server import MUTATE, VALIDATE, WidgetDefaulter, WidgetValidator
from tests.support.crds import GROUP, PLURAL, VERSION, widget, widgets_path
from tests.support.kubehttp import KubeHTTP
from tests.support.webhooks import ServingCerts, running_webhook_server, webhook_configuration


@pytest_asyncio.fixture(loop_scope="session")
async def widget_webhooks(
    widgets_installed: None, kube_http: KubeHTTP, namespace: str, tmp_path: Path
) -> AsyncIterator[None]:
    """The API server calling this process's Widget validator and defaulter for ``namespace``."""
    certs = ServingCerts(tmp_path / "certs")
    certs.write()
    server = WebhookServer(WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=str(certs.directory)))
    server.register_validator(GROUP, VERSION, "Widget", WidgetValidator())
    server.register_defaulter(GROUP, VERSION, "Widget", WidgetDefaulter())
    async with running_webhook_server(server):
        created = []
        for kind, path, resources in (
            ("ValidatingWebhookConfiguration", VALIDATE, [PLURAL, f"{PLURAL}/scale"]),
            ("MutatingWebhookConfiguration", MUTATE, [PLURAL]),
        ):
            name = f"{path.strip('/').split('-')[0]}.{namespace}.test.cpo.dev"
            plural = f"/apis/admissionregistration.k8s.io/v1/{kind.lower()}s"
            url = f"https://127.0.0.1:{server.port}{path}"
            reply = await kube_http.post(
                plural,
                webhook_configuration(
                    kind,
                    name,
                    url,
                    certs.ca.cert_pem,
                    group=GROUP,
                    version=VERSION,
                    resources=resources,
                    namespace=namespace,
                ),
            )
            assert reply.status == 201, reply.text
            created.append(f"{plural}/{name}")
        try:
            yield
        finally:
            for path in created:
                await kube_http.delete(path)


pytestmark = pytest.mark.usefixtures("widget_webhooks")


async def test_the_api_server_gets_denials_defaults_and_warnings_from_our_server(
    kube_http: KubeHTTP, namespace: str
) -> None:
    denied = await kube_http.post(
        widgets_path(namespace), widget("even", namespace, size="small", replicas=4)
    )
    assert denied.status == 403, denied.text
    assert denied.body["message"] == (
        f'admission webhook "validate.{namespace}.test.cpo.dev" denied the request: '
        "spec.replicas: Invalid value: 4: must be odd"
    )
    assert denied.body["reason"] == "Forbidden"

    created = await kube_http.post(
        widgets_path(namespace), widget("nine", namespace, size="small", replicas=9)
    )
    assert created.status == 201, created.text
    assert created.body["metadata"]["labels"] == {"defaulted": "yes"}
    assert any("spec.replicas: 9 is above 7" in w for w in created.warnings())

    immutable = await kube_http.patch(widgets_path(namespace, "nine"), {"spec": {"size": "large"}})
    assert immutable.status == 422, immutable.text
    assert immutable.body["message"].endswith(
        "denied the request: spec.size: Invalid value: field is immutable"
    )
    # kube-apiserver records a validating webhook's warnings before it looks at `allowed`
    # (validating/dispatcher.go callHook: warning.AddWarning for each, then the rejection), and the
    # recorder writes them into the response headers at once, so they come with the denial too.
    assert immutable.warnings() == ['299 - "size is fixed"'], immutable.headers


async def test_scaling_through_the_scale_subresource_is_validated(
    kube_http: KubeHTTP, namespace: str
) -> None:
    created = await kube_http.post(widgets_path(namespace), widget("sc", namespace, size="small", replicas=3))
    assert created.status == 201, created.text
    denied = await kube_http.patch(widgets_path(namespace, "sc", "scale"), {"spec": {"replicas": 4}})
    assert denied.status == 403 and denied.body["message"].endswith(
        "spec.replicas: Invalid value: 4: must be odd"
    )
    scaled = await kube_http.patch(widgets_path(namespace, "sc", "scale"), {"spec": {"replicas": 5}})
    assert scaled.status == 200 and scaled.body["spec"]["replicas"] == 5
