"""The example operator in examples/configmap_mirror, run as its own process against the embedded server."""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from runtime.client import Client
from runtime.envtest import Environment
from runtime.errors import NotFound
from tests.support.poll import eventually
from tests.support.processes import ChildProcess, start_process

pytestmark = pytest.mark.asyncio(loop_scope="session")

ROOT = Path(__file__).resolve().parents[2]


@pytest_asyncio.fixture(loop_scope="session")
async def operator(env: Environment, tmp_path: Path) -> AsyncIterator[ChildProcess]:
    argv = [sys.executable, "-m", "examples.configmap_mirror", "--kubeconfig", str(env.kubeconfig_path)]
    process = await start_process(argv, log_path=tmp_path / "operator.log")
    try:
        yield process
    finally:
        await process.stop()
        print(process.log())


async def get_or_none(client: Client, name: str, namespace: str) -> dict[str, Any] | None:
    try:
        return await client.get("v1", "ConfigMap", name, namespace=namespace)
    except NotFound:
        return None


async def test_mirror_follows_its_source_and_is_put_back(
    client: Client, namespace: str, operator: ChildProcess
) -> None:
    def configmap(name: str, data: dict[str, str], labels: dict[str, str]) -> dict[str, Any]:
        meta = {"name": name, "namespace": namespace, "labels": labels}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}

    # The unlabelled one comes first both in creation order (the watch) and in name order (the
    # initial list, if the operator syncs late), so had it been enqueued, its copy would exist by
    # the time the labelled one's does.
    await client.create(configmap("a-plain", {"colour": "grey"}, {}))
    labels = {"mirror.example.com/enabled": "true"}
    source = await client.create(configmap("b-app", {"colour": "blue"}, labels))

    async def mirror_data() -> dict[str, str] | None:
        mirror = await get_or_none(client, "b-app-mirror", namespace)
        return None if mirror is None else mirror.get("data", {})

    mirror = await eventually(
        lambda: get_or_none(client, "b-app-mirror", namespace), timeout=30, message="b-app-mirror"
    )
    assert mirror["data"] == {"colour": "blue"}
    [owner] = mirror["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "ConfigMap",
        "b-app",
        source["metadata"]["uid"],
        True,
    )
    assert await get_or_none(client, "a-plain-mirror", namespace) is None

    # The source changes: the copy follows.
    await client.patch("v1", "ConfigMap", "b-app", {"data": {"colour": "green"}}, namespace=namespace)
    await eventually(
        lambda: _equals(mirror_data(), {"colour": "green"}),
        timeout=30,
        message="the copy to follow the source",
    )

    # Someone edits the copy: it is put back (an event on an owned object enqueues its owner).
    await client.patch("v1", "ConfigMap", "b-app-mirror", {"data": {"colour": "red"}}, namespace=namespace)
    await eventually(
        lambda: _equals(mirror_data(), {"colour": "green"}),
        timeout=30,
        message="the edited copy to be restored",
    )

    # Someone deletes the copy: it is created again.
    await client.delete("v1", "ConfigMap", "b-app-mirror", namespace=namespace)
    await eventually(
        lambda: _equals(mirror_data(), {"colour": "green"}),
        timeout=30,
        message="the deleted copy to come back",
    )

    # SIGTERM: the manager stops cleanly and the process exits 0.
    operator.send_signal(signal.SIGTERM)
    assert await operator.exited(within=30) == 0


async def _equals(value: Awaitable[Any], expected: Any) -> bool:
    return await value == expected
