"""The manager's secure metrics server: a self-signed certificate when none is given, the default
authentication/authorization filter, and a filter of one's own through ``metrics_filter_provider``."""

from __future__ import annotations

import asyncio
import ssl

import aiohttp
import pytest
from aiohttp import web

from runtime.client import Client
from runtime.envtest import Environment
from runtime.manager import Filter, Manager, ManagerOptions


def admin_token(env: Environment) -> str:
    (user,) = env.kubeconfig["users"]
    return str(user["user"]["token"])


async def scrape(port: int, token: str | None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"https://127.0.0.1:{port}/metrics", headers=headers, ssl=False) as response,
    ):
        return response.status


async def run_manager(options: ManagerOptions) -> tuple[Manager, asyncio.Event, asyncio.Task[None]]:
    manager = Manager(options)
    stop = asyncio.Event()
    task = asyncio.create_task(manager.start(stop))
    for _ in range(200):
        if manager.metrics_port:
            break
        await asyncio.sleep(0.02)
    assert manager.metrics_port
    return manager, stop, task


async def test_self_signed_https_with_token_and_access_reviews(env: Environment, client: Client) -> None:
    if "token" not in env.kubeconfig["users"][0]["user"]:
        pytest.skip("the environment's kubeconfig authenticates with a client certificate")
    manager, stop, task = await run_manager(
        ManagerOptions(
            client=client,
            metrics_bind_address="127.0.0.1:0",
            metrics_secure=True,
            health_probe_bind_address="0",
        )
    )
    try:
        port = manager.metrics_port
        assert port is not None
        assert await scrape(port, None) == 401
        assert await scrape(port, "made-up") == 401
        assert await scrape(port, admin_token(env)) == 200  # system:masters may get /metrics
        pem = await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", port))
        assert "BEGIN CERTIFICATE" in pem  # generated at start: no --metrics-cert-dir was given
    finally:
        stop.set()
        await task


async def test_metrics_filter_provider_replaces_the_reviews(client: Client) -> None:
    seen: list[str] = []

    def provider(given: Client) -> Filter:
        assert given is client

        async def only_teapots(request: web.Request) -> web.StreamResponse | None:
            seen.append(request.path)
            if request.headers.get("Authorization") == "Bearer teapot":
                return None
            return web.Response(status=418)

        return only_teapots

    manager, stop, task = await run_manager(
        ManagerOptions(
            client=client,
            metrics_bind_address="127.0.0.1:0",
            metrics_secure=True,
            metrics_filter_provider=provider,
            health_probe_bind_address="0",
        )
    )
    try:
        port = manager.metrics_port
        assert port is not None
        assert await scrape(port, None) == 418
        assert await scrape(port, "teapot") == 200
        assert seen == ["/metrics", "/metrics"]
    finally:
        stop.set()
        await task


def test_cert_dir_and_filter_need_secure() -> None:
    with pytest.raises(ValueError, match="metrics_secure"):
        ManagerOptions(metrics_cert_dir="/tmp/x").with_defaults()
    resolved = ManagerOptions(metrics_secure=True).with_defaults()
    assert resolved.metrics_filter_provider is not None and resolved.metrics_cert_dir is None
    assert ManagerOptions().with_defaults().metrics_filter_provider is None
