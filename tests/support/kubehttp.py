"""A thin HTTPS client built from a kubeconfig dict, for tests that speak the Kubernetes REST API directly.

Tests of the API server's behaviour must run unchanged against the embedded server, real
kube-apiserver binaries and an existing cluster, so they talk plain HTTP with whatever credential
the kubeconfig carries (bearer token or client certificate) instead of reaching into the server.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from runtime.jsoncodec import JSON


@dataclass
class Reply:
    """An answer: ``body`` is the parsed JSON (None for anything else, protobuf among it),
    ``content`` the bytes as sent and ``text`` those bytes as text."""

    status: int
    headers: Any
    body: Any
    text: str
    content: bytes = b""

    def warnings(self) -> list[str]:
        return list(self.headers.getall("Warning", []))


class KubeHTTP:
    """Requests against the cluster a kubeconfig points at."""

    def __init__(self, kubeconfig: JSON) -> None:
        ctx_name = kubeconfig["current-context"]
        context = next(c["context"] for c in kubeconfig["contexts"] if c["name"] == ctx_name)
        cluster = next(c["cluster"] for c in kubeconfig["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in kubeconfig["users"] if u["name"] == context["user"])
        self.server = cluster["server"].rstrip("/")
        self._tmp = tempfile.TemporaryDirectory(prefix="kubehttp-")
        ssl_ctx = ssl.create_default_context()
        if "certificate-authority-data" in cluster:
            ssl_ctx.load_verify_locations(
                cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
            )
        elif "certificate-authority" in cluster:
            ssl_ctx.load_verify_locations(cafile=cluster["certificate-authority"])
        self.headers: dict[str, str] = {}
        if user.get("token"):
            self.headers["Authorization"] = f"Bearer {user['token']}"
        cert = user.get("client-certificate-data")
        if cert:
            cert_path = Path(self._tmp.name) / "client.crt"
            key_path = Path(self._tmp.name) / "client.key"
            cert_path.write_bytes(base64.b64decode(cert))
            key_path.write_bytes(base64.b64decode(user["client-key-data"]))
            ssl_ctx.load_cert_chain(cert_path, key_path)
        elif user.get("client-certificate"):
            ssl_ctx.load_cert_chain(user["client-certificate"], user["client-key"])
        self._ssl = ssl_ctx
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> KubeHTTP:
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self._ssl))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
        self._tmp.cleanup()

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        raw: bytes | None = None,
        content_type: str | None = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        assert self._session is not None
        all_headers = dict(self.headers)
        all_headers.update(headers or {})
        data: bytes | None = raw
        if body is not None:
            data = json.dumps(body).encode()
            all_headers.setdefault("Content-Type", content_type or "application/json")
        elif content_type:
            all_headers["Content-Type"] = content_type
        async with self._session.request(
            method, self.server + path, data=data, params=params, headers=all_headers
        ) as resp:
            content = await resp.read()
            text = content.decode("utf-8", "replace")
            try:
                parsed = json.loads(text) if text else None
            except json.JSONDecodeError:
                parsed = None
            return Reply(resp.status, resp.headers, parsed, text, content)

    async def get(self, path: str, **kw: Any) -> Reply:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> Reply:
        return await self.request("POST", path, body=body, **kw)

    async def put(self, path: str, body: Any, **kw: Any) -> Reply:
        return await self.request("PUT", path, body=body, **kw)

    async def patch(self, path: str, body: Any, patch_type: str = "merge", **kw: Any) -> Reply:
        ct = {
            "merge": "application/merge-patch+json",
            "json": "application/json-patch+json",
            "strategic": "application/strategic-merge-patch+json",
        }[patch_type]
        return await self.request("PATCH", path, body=body, content_type=ct, **kw)

    async def delete(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return await self.request("DELETE", path, body=body, **kw)

    async def watch(
        self, path: str, params: dict[str, str], *, opened: asyncio.Event | None = None
    ) -> AsyncIterator[JSON]:
        """Yield decoded watch events until the server ends the stream; ``opened`` is set once the
        server has answered 200 (the watch is then established)."""
        assert self._session is not None
        query = dict(params, watch="1")
        async with self._session.get(self.server + path, params=query, headers=self.headers) as resp:
            assert resp.status == 200, await resp.text()
            if opened is not None:
                opened.set()
            async for line in resp.content:
                if line.strip():
                    yield json.loads(line)
