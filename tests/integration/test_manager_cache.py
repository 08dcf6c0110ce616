"""The manager with its default cache (``runtime.cache.Cache``): readiness waits for its sync."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from runtime.builder import ControllerBuilder
from runtime.cache import Cache, CacheOptions
from runtime.client import Client
from runtime.envtest import Environment
from runtime.manager import Manager, ManagerOptions
from runtime.reconcile import Request, Result, reconciler_func
from runtime.runnable import runnable_func
from tests.support.poll import eventually


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
        await eventually(lambda: len(seen_by_controller) >= 2, timeout=10, message="two reconciles seen")
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


async def test_two_managers_with_real_controllers_only_the_leader_reconciles(
    env: Environment, namespace: str
) -> None:
    """The issue's "two managers on one lease: only the leader reconciles", with builder-made
    controllers over each manager's own cache and client."""
    suffix = namespace[-6:]
    runs: list[tuple[Manager, asyncio.Event, asyncio.Task[None]]] = []
    reconciled: dict[str, list[str]] = {"a": [], "b": []}
    clients: list[Client] = []

    async def make(which: str) -> Manager:
        client = await Client.from_kubeconfig(env.kubeconfig)
        clients.append(client)
        manager = Manager(
            ManagerOptions(
                client=client,
                metrics_bind_address="0",
                health_probe_bind_address="0",
                leader_election=True,
                leader_election_id="controllers",
                leader_election_namespace=namespace,
                lease_duration=2,
                renew_deadline=1.2,
                retry_period=0.25,
                cache_options=CacheOptions(namespace=namespace),
            )
        )

        async def reconcile(request: Request) -> Result:
            reconciled[which].append(request.name)
            return Result()

        ControllerBuilder(manager).named(f"configmaps-{which}-{suffix}").for_("v1", "ConfigMap").complete(
            reconciler_func(reconcile)
        )
        return manager

    async def start(manager: Manager) -> None:
        stop = asyncio.Event()
        runs.append((manager, stop, asyncio.get_running_loop().create_task(manager.start(stop))))

    try:
        a = await make("a")
        b = await make("b")
        await start(a)
        await asyncio.wait_for(a.elected.wait(), 20)
        await start(b)
        await client_create(clients[0], namespace, "one")
        await eventually(lambda: "one" in reconciled["a"], timeout=10, message="the leader to reconcile")
        # B's cache (not its controller) runs while it waits for the lease: it sees the object…
        await eventually(
            lambda: b.cache.informer_for("v1", "ConfigMap").get_by_key(f"{namespace}/one") is not None,
            timeout=10,
            message="the follower's cache to hold the object",
        )
        # …and reconciles nothing.
        assert reconciled["b"] == []
        assert not b.elected.is_set()

        runs[0][1].set()  # clean stop of A
        await asyncio.wait_for(runs[0][2], 10)
        await asyncio.wait_for(b.elected.wait(), 5)
        await eventually(
            lambda: "one" in reconciled["b"], timeout=10, message="the new leader to reconcile what exists"
        )
        a_count = len(reconciled["a"])
        await client_create(clients[1], namespace, "two")
        await eventually(
            lambda: "two" in reconciled["b"], timeout=10, message="the new leader to reconcile a new object"
        )
        assert len(reconciled["a"]) == a_count, "the old leader reconciled after stopping"
    finally:
        for _, stop, _ in runs:
            stop.set()
        for _, _, task in runs:
            await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 10)
        for client in clients:
            await client.close()


async def client_create(client: Client, namespace: str, name: str) -> None:
    await client.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}
    )
