"""/healthz-style endpoints over real HTTP, answered as controller-runtime's pkg/healthz does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestServer

from runtime.healthz import HealthHandler


async def ok(request: web.Request) -> None:
    return None


async def broken(request: web.Request) -> None:
    raise RuntimeError("etcd unreachable")


async def hangs(request: web.Request) -> None:
    await asyncio.get_running_loop().create_future()


@pytest_asyncio.fixture
async def serve() -> AsyncIterator[object]:
    servers: list[TestServer] = []

    async def start(handler: HealthHandler) -> str:
        app = web.Application()
        handler.add_routes(app)
        server = TestServer(app, host="127.0.0.1", port=0)
        await server.start_server()
        servers.append(server)
        return f"http://127.0.0.1:{server.port}"

    yield start
    for server in servers:
        await server.close()


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


async def test_no_checks_means_ping(serve) -> None:  # type: ignore[no-untyped-def]
    base = await serve(HealthHandler("healthz"))
    assert await get(base + "/healthz") == (200, "ok")
    assert await get(base + "/healthz?verbose") == (200, "[+]ping ok\nhealthz check passed\n")
    assert await get(base + "/healthz/ping") == (200, "ok")


async def test_failures_are_listed_sorted_and_reasons_withheld(serve) -> None:  # type: ignore[no-untyped-def]
    handler = HealthHandler("readyz")
    handler.add_check("zeta", ok)
    handler.add_check("etcd", broken)
    handler.add_check("alpha", ok)
    base = await serve(handler)
    assert await get(base + "/readyz") == (
        500,
        "[+]alpha ok\n[-]etcd failed: reason withheld\n[+]zeta ok\nhealthz check failed\n",
    )
    assert await get(base + "/readyz?exclude=etcd") == (200, "ok")
    assert await get(base + "/readyz?exclude=etcd&exclude=zeta&verbose") == (
        200,
        "[+]alpha ok\n[+]etcd excluded: ok\n[+]zeta excluded: ok\nhealthz check passed\n",
    )
    assert await get(base + "/readyz?exclude=unknown") == (
        500,
        "[+]alpha ok\n[-]etcd failed: reason withheld\n[+]zeta ok\n"
        'warn: some health checks cannot be excluded: no matches for "unknown"\n'
        "healthz check failed\n",
    )
    assert await get(base + "/readyz/etcd") == (500, "internal server error: etcd unreachable\n")
    assert await get(base + "/readyz/alpha") == (200, "ok")
    assert (await get(base + "/readyz/missing"))[0] == 404


async def test_a_hung_check_fails_instead_of_hanging_the_probe(serve) -> None:  # type: ignore[no-untyped-def]
    handler = HealthHandler("healthz", check_timeout=0.05)
    handler.add_check("stuck", hangs)
    base = await serve(handler)
    assert await get(base + "/healthz/stuck") == (500, "internal server error: timed out after 0.05s\n")


def test_bad_check_names_and_duplicates_are_refused() -> None:
    handler = HealthHandler("healthz")
    handler.add_check("a", ok)
    with pytest.raises(ValueError, match="already registered"):
        handler.add_check("a", ok)
    with pytest.raises(ValueError, match="URL path segment"):
        handler.add_check("a/b", ok)
