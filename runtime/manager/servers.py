"""The manager's HTTP servers: Prometheus ``/metrics`` and the ``/healthz``/``/readyz`` probes."""

from __future__ import annotations

from aiohttp import web

from .. import metrics
from ..healthz import HealthHandler


class _HTTPServer:
    """An aiohttp application on one address; ``port`` is the bound port once started."""

    def __init__(self, name: str, app: web.Application, bind: tuple[str | None, int]) -> None:
        self.name = name
        self.app = app
        self.bind = bind
        self.port: int | None = None
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.bind[0], self.bind[1], reuse_address=True)
        try:
            await site.start()
        except OSError as err:
            await runner.cleanup()
            raise OSError(
                err.errno, f"{self.name} server cannot listen on {self.bind}: {err.strerror}"
            ) from err
        self._runner = runner
        addresses = runner.addresses
        self.port = int(addresses[0][1]) if addresses else self.bind[1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


async def _serve_metrics(request: web.Request) -> web.Response:
    body = metrics.generate_latest()
    return web.Response(body=body, headers={"Content-Type": metrics.CONTENT_TYPE_LATEST})


def metrics_app() -> web.Application:
    """``GET /metrics``: the runtime registry in the Prometheus text format."""
    app = web.Application()
    app.router.add_get("/metrics", _serve_metrics)
    return app


def probes_app(healthz: HealthHandler, readyz: HealthHandler) -> web.Application:
    """``/healthz`` and ``/readyz`` with their per-check sub-paths."""
    app = web.Application()
    healthz.add_routes(app)
    readyz.add_routes(app)
    return app
