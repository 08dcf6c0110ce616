"""The manager with its default cache (``runtime.cache.Cache``): readiness waits for its sync."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest_asyncio

from runtime.cache import Cache, CacheOptions
from runtime.client import Client
from runtime.envtest import Environment
from runtime.manager import Manager, ManagerOptions
from runtime.runnable import runnable_func


@pytest_asyncio.fixture(loop_scope="session")
async def client(env: Environment) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(env.kubeconfig) as c:
        yield c


async def test_the_default_cache_is_started_and_synced_before_leader_runnables(
    client: Client, namespace: str
) -> None:
    await client.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "seen", "namespace": namespace}}
    )
    manager = Manager(
        ManagerOptions(
            client=client,
            metrics_bind_address="0",
            health_probe_bind_address="127.0.0.1:0",
            cache_options=CacheOptions(namespace=namespace),
        )
    )
    assert isinstance(manager.cache, Cache)
    assert manager.cache is manager.cache
    informer = manager.cache.informer_for("v1", "ConfigMap")
    seen_by_controller: list[Any] = []

    async def controller(stop: asyncio.Event) -> None:
        # Runs only after the caches synced: the object is already in the cache.
        seen_by_controller.append(informer.has_synced())
        seen_by_controller.append(await manager.cache.get("v1", "ConfigMap", "seen", namespace=namespace))
        await stop.wait()

    manager.add(runnable_func(controller))
    stop = asyncio.Event()
    task = asyncio.get_running_loop().create_task(manager.start(stop))
    try:
        await asyncio.wait_for(manager.elected.wait(), 20)
        assert manager.health_probe_port is not None
        url = f"http://127.0.0.1:{manager.health_probe_port}/readyz?verbose"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            assert (response.status, await response.text()) == (
                200,
                "[+]caches-synced ok\nhealthz check passed\n",
            )
        deadline = asyncio.get_running_loop().time() + 10
        while len(seen_by_controller) < 2:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.005)  # allow-sleep: poll interval of a deadline-bounded wait
        assert seen_by_controller[0] is True
        assert seen_by_controller[1]["metadata"]["name"] == "seen"
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


async def test_a_given_cache_is_used_and_run(client: Client, namespace: str) -> None:
    mine = Cache(client, CacheOptions(namespace=namespace))
    manager = Manager(
        ManagerOptions(client=client, metrics_bind_address="0", health_probe_bind_address="0", cache=mine)
    )
    assert manager.cache is mine
    informer = mine.informer_for("v1", "ConfigMap")
    stop = asyncio.Event()
    task = asyncio.get_running_loop().create_task(manager.start(stop))
    try:
        await asyncio.wait_for(manager.elected.wait(), 20)
        assert informer.has_synced()
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
