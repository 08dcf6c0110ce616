"""Liveness and readiness endpoints (``/healthz``, ``/readyz``) built from named async checks.

A *checker* is ``async def check(request) -> None`` that raises when unhealthy. A
:class:`HealthHandler` holds named checkers and answers like controller-runtime's
``pkg/healthz`` (so kubelet probes and humans see the same thing as with a Go operator):

=================================  =================================================================
``GET /readyz``                    200 ``ok`` when every check passes; else 500 listing each check
                                   (``[+]name ok`` / ``[-]name failed: reason withheld``) and
                                   ``healthz check failed`` (controller-runtime's words, on
                                   ``/readyz`` too)
``GET /readyz?verbose``            the per-check list even when healthy, then ``healthz check passed``
``GET /readyz?exclude=a&exclude=b`` skips those checks (listed as ``[+]a excluded: ok``; unknown
                                   names get a ``warn:`` line)
``GET /readyz/<name>``             only that check: 200 ``ok``, 500 ``internal server error: <why>``,
                                   404 for an unknown name
=================================  =================================================================

With no checks registered, the endpoint reports a built-in ``ping`` check that always passes.
Checks run concurrently, each bounded by ``check_timeout`` seconds (a hung check is a failure, not
a hung probe).

Example:

>>> import asyncio
>>> from aiohttp import web
>>> from aiohttp.test_utils import TestClient, TestServer
>>> from runtime.healthz import HealthHandler
>>> synced = asyncio.Event()
>>> async def caches_synced(request: web.Request) -> None:
...     if not synced.is_set():
...         raise RuntimeError("caches not synced")
>>> ready = HealthHandler("readyz")
>>> ready.add_check("informers", caches_synced)
>>> app = web.Application()
>>> ready.add_routes(app)  # GET /readyz and /readyz/{name}
>>> async def probe_before_and_after_sync() -> None:
...     async with TestClient(TestServer(app)) as client:
...         before = await client.get("/readyz")
...         print(before.status, (await before.text()).strip())
...         synced.set()
...         after = await client.get("/readyz")
...         print(after.status, await after.text())
>>> asyncio.run(probe_before_and_after_sync())
500 [-]informers failed: reason withheld
healthz check failed
200 ok
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Final

from aiohttp import web

Checker = Callable[[web.Request], Awaitable[None]]
"""``async (request) -> None``; raising means unhealthy, the message says why."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
PING: Final = "ping"
DEFAULT_CHECK_TIMEOUT: Final = 10.0

_log = logging.getLogger(__name__)


async def ping(request: web.Request) -> None:
    """A check that always passes: the server answers, so the process is alive."""


class HealthHandler:
    """Named checks behind one endpoint (``/<name>`` and ``/<name>/<check>``)."""

    def __init__(self, name: str, *, check_timeout: float = DEFAULT_CHECK_TIMEOUT) -> None:
        self.name = name
        self.check_timeout = check_timeout
        self.checks: dict[str, Checker] = {}

    def add_check(self, name: str, check: Checker) -> None:
        """Register ``check`` as ``name``; names are URL path segments and must be unique."""
        if not _NAME.match(name):
            raise ValueError(
                f"{self.name} check name {name!r}: use letters, digits, '.', '_' or '-' "
                "(it becomes a URL path segment)"
            )
        if name in self.checks:
            raise ValueError(f"{self.name} check {name!r} is already registered; pick another name")
        if not callable(check):
            raise TypeError(f"{self.name} check {name!r}: expected an async function (request) -> None")
        self.checks[name] = check

    def add_routes(self, app: web.Application, prefix: str = "") -> None:
        """Serve ``GET <prefix>/<name>`` and ``GET <prefix>/<name>/{check}`` from ``app``."""
        base = f"{prefix}/{self.name}"
        app.router.add_get(base, self.serve_aggregated)
        app.router.add_get(base + "/", self.serve_aggregated)
        app.router.add_get(base + "/{check}", self.serve_one)

    async def _run(self, check: Checker, request: web.Request) -> str | None:
        """None when healthy, else why not."""
        try:
            async with asyncio.timeout(self.check_timeout):
                await check(request)
        except TimeoutError:
            return f"timed out after {self.check_timeout:g}s"
        except Exception as err:
            return str(err) or type(err).__name__
        return None

    async def serve_aggregated(self, request: web.Request) -> web.Response:
        excluded = set(request.query.getall("exclude", []))
        checks = self.checks or {PING: ping}
        names = sorted(checks)
        unknown = sorted(excluded - checks.keys())
        if unknown:
            _log.info("cannot exclude %s check(s) %s: no such check", self.name, unknown)
        run = [name for name in names if name not in excluded]
        results = await asyncio.gather(*(self._run(checks[name], request) for name in run))
        failures = {name: why for name, why in zip(run, results, strict=True) if why is not None}
        if not failures and "verbose" not in request.query:
            return _text("ok", 200)
        lines = []
        for name in names:
            if name in excluded:
                lines.append(f"[+]{name} excluded: ok\n")
            elif name in failures:
                # The reason stays out of this unauthenticated aggregate; /<endpoint>/<check> has it.
                lines.append(f"[-]{name} failed: reason withheld\n")
            else:
                lines.append(f"[+]{name} ok\n")
        if unknown:
            quoted = ",".join(f'"{name}"' for name in unknown)
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}\n")
        if failures:
            _log.info("%s check failed: %s", self.name, failures)
            # "healthz check …" for every endpoint, readyz included, exactly as controller-runtime says.
            return _text("".join(lines) + "healthz check failed\n", 500)
        return _text("".join(lines) + "healthz check passed\n", 200)

    async def serve_one(self, request: web.Request) -> web.Response:
        name = request.match_info["check"]
        check = self.checks.get(name) or (ping if name == PING and not self.checks else None)
        if check is None:
            return _text("404 page not found\n", 404)
        why = await self._run(check, request)
        if why is not None:
            _log.info("%s check %s failed: %s", self.name, name, why)
            return _text(f"internal server error: {why}\n", 500)
        return _text("ok", 200)


def _text(body: str, status: int) -> web.Response:
    response = web.Response(text=body, status=status, content_type="text/plain", charset="utf-8")
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response
