"""The embedded API server counts its requests in ``apiserver_request_total`` and serves them on /metrics.

The family and labels are kube-apiserver's (verb, dry_run, group, version, resource, subresource,
scope, component, code): a benchmark reads it to tell which writes reach the server while nothing
should change. The server is started here, not taken from the session, because the counts belong
to one server.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator

import aiohttp
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families

from apiserver import EmbeddedAPIServer, EmbeddedServerOptions


@pytest_asyncio.fixture
async def server() -> AsyncIterator[EmbeddedAPIServer]:
    async with EmbeddedAPIServer(EmbeddedServerOptions()) as started:
        yield started


def _session(server: EmbeddedAPIServer, token: str | None) -> aiohttp.ClientSession:
    context = ssl.create_default_context(cadata=server.ca_pem.decode())
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return aiohttp.ClientSession(
        base_url=server.url, headers=headers, connector=aiohttp.TCPConnector(ssl=context)
    )


async def _counts(http: aiohttp.ClientSession) -> dict[tuple[str, ...], float]:
    async with http.get("/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = await response.text()
    found: dict[tuple[str, ...], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "apiserver_request_total":
                labels = sample.labels
                assert labels["component"] == "apiserver"
                key = (
                    labels["verb"], labels["group"], labels["version"], labels["resource"],
                    labels["subresource"], labels["scope"], labels["code"], labels["dry_run"],
                )  # fmt: skip
                found[key] = sample.value
    return found


async def test_requests_are_counted_by_verb_resource_scope_and_code(server: EmbeddedAPIServer) -> None:
    ns_path = "/api/v1/namespaces/metrics-test/configmaps"
    async with _session(server, server.admin_token) as http:
        async with http.post("/api/v1/namespaces", json={"metadata": {"name": "metrics-test"}}) as response:
            assert response.status == 201
        async with http.post(ns_path, json={"metadata": {"name": "one"}, "data": {"a": "1"}}) as response:
            assert response.status == 201
        for _ in range(2):
            async with http.patch(
                f"{ns_path}/one",
                json={"data": {"a": "2"}},
                headers={"Content-Type": "application/merge-patch+json"},
            ) as response:
                assert response.status == 200
        async with http.get(f"{ns_path}/missing") as response:
            assert response.status == 404
        async with http.get(ns_path) as response:
            assert response.status == 200
        async with http.get("/api/v1/configmaps") as response:
            assert response.status == 200
        async with http.post(f"{ns_path}?dryRun=All", json={"metadata": {"name": "two"}}) as response:
            assert response.status == 201
        async with http.delete(f"{ns_path}/one") as response:
            assert response.status == 200
        counts = await _counts(http)

    assert counts[("POST", "", "v1", "namespaces", "", "cluster", "201", "")] == 1
    assert counts[("POST", "", "v1", "configmaps", "", "namespace", "201", "")] == 1
    assert counts[("PATCH", "", "v1", "configmaps", "", "resource", "200", "")] == 2
    assert counts[("GET", "", "v1", "configmaps", "", "resource", "404", "")] == 1
    assert counts[("LIST", "", "v1", "configmaps", "", "namespace", "200", "")] == 1
    assert counts[("LIST", "", "v1", "configmaps", "", "cluster", "200", "")] == 1
    assert counts[("POST", "", "v1", "configmaps", "", "namespace", "201", "All")] == 1
    assert counts[("DELETE", "", "v1", "configmaps", "", "resource", "200", "")] == 1
    # Six writes, the dry run included (kube-apiserver counts it under dry_run="All").
    assert server.request_counters.writes() == 6


async def test_metrics_need_credentials(server: EmbeddedAPIServer) -> None:
    async with _session(server, None) as http, http.get("/metrics") as response:
        assert response.status == 403
