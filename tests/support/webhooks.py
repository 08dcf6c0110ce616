"""Run a real :class:`runtime.webhook.WebhookServer` over TLS in tests, and talk to it.

``running_webhook_server`` starts the server as its runnable would be started (``start(stop)`` in
a task), waits until the TLS listener accepts connections and stops it afterwards.
``ServingCerts`` is a throw-away CA that writes serving pairs into the server's ``cert_dir``.
``webhook_configuration`` and ``controlplane_webhook_configurations`` build webhook configurations
that make the API server call a server of the test; ``registered_webhooks`` keeps them for a block.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from runtime.client import JSON, Client
from runtime.envtest.certs import CertificateAuthority, CertPair
from runtime.webhook import WebhookServer


class ServingCerts:
    """A CA whose serving certificates for 127.0.0.1 go into ``directory`` as tls.crt / tls.key."""

    def __init__(self, directory: Path, name: str = "webhook-test-ca") -> None:
        self.directory = directory
        self.ca = CertificateAuthority.new(name)
        self.pair = self.ca.serving_cert(["127.0.0.1", "localhost"])

    def write(self, pair: CertPair | None = None) -> CertPair:
        self.pair = pair or self.pair
        self.pair.write(self.directory)
        return self.pair

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.ca.cert_pem.decode())
        return context


@asynccontextmanager
async def running_webhook_server(
    server: WebhookServer, start_within: float = 10.0
) -> AsyncIterator[WebhookServer]:
    stop = asyncio.Event()
    task = asyncio.create_task(server.start(stop), name="test-webhook-server")
    started = asyncio.create_task(server.wait_started())
    done, _ = await asyncio.wait({task, started}, timeout=start_within, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        started.cancel()
        task.result()  # raises the start error
        raise AssertionError("webhook server returned before it was stopped")
    if started not in done:
        started.cancel()
        stop.set()
        await task
        raise TimeoutError(f"webhook server did not start within {start_within} s")
    try:
        yield server
    finally:
        stop.set()
        await task


async def post(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    content_type: str = "application/json",
) -> tuple[int, Any, bytes]:
    """POST ``body``; the status, the decoded JSON (None if not JSON) and the raw answer."""
    async with session.post(url, data=body, headers={"Content-Type": content_type}) as response:
        raw = await response.read()
        try:
            decoded = await response.json(content_type=None)
        except ValueError:
            decoded = None
        return response.status, decoded, raw


def webhook_configuration(
    kind: str,
    name: str,
    url: str,
    ca_pem: bytes,
    *,
    group: str,
    version: str,
    resources: list[str],
    namespace: str,
    timeout_seconds: int = 5,
) -> dict[str, Any]:
    """A Validating/MutatingWebhookConfiguration (``kind``) calling ``url`` for CREATE and UPDATE.

    Scoped to one test namespace, so other tests' objects never depend on this test's server.
    """
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": name,
                "clientConfig": {"url": url, "caBundle": base64.b64encode(ca_pem).decode()},
                "rules": [
                    {
                        "apiGroups": [group],
                        "apiVersions": [version],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": resources,
                    }
                ],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "failurePolicy": "Fail",
                "timeoutSeconds": timeout_seconds,
            }
        ],
    }


CONTROLPLANE_WEBHOOK_RESOURCES = {
    "ValidatingWebhookConfiguration": ["controlplanes", "controlplanes/scale"],
    "MutatingWebhookConfiguration": ["controlplanes"],
}
"""What the ControlPlane's webhooks are called for: the validator checks scale requests too."""


def controlplane_webhook_configurations(
    base_url: str,
    ca_pem: bytes,
    namespace: str,
    *,
    paths: Mapping[str, str],
    name: str,
    timeout_seconds: int = 5,
) -> list[JSON]:
    """The ControlPlane's validating and mutating webhook configurations, calling ``base_url`` plus
    ``paths[kind]`` for ControlPlanes of ``namespace``, named ``{v|m}NAME.NAMESPACE.cpo.dev``."""
    return [
        webhook_configuration(
            kind,
            f"{kind[:1].lower()}{name}.{namespace}.cpo.dev",
            f"{base_url}{paths[kind]}",
            ca_pem,
            group="controlplane.cpo.dev",
            version="v1alpha1",
            resources=resources,
            namespace=namespace,
            timeout_seconds=timeout_seconds,
        )
        for kind, resources in CONTROLPLANE_WEBHOOK_RESOURCES.items()
    ]


@asynccontextmanager
async def registered_webhooks(client: Client, *configurations: JSON) -> AsyncIterator[list[JSON]]:
    """``configurations`` created for the length of the block, then deleted (cluster-scoped objects
    outlive the test namespace)."""
    created: list[JSON] = []
    try:
        for configuration in configurations:
            created.append(await client.create(configuration))
        yield created
    finally:
        for obj in created:
            await client.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])
