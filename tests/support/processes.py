"""Child processes of the tests: ``cpo run``, ``cpo localmachine`` or any ``python -m`` module of
this tree, started the way a Deployment starts them, their output kept in a log file, stopped for sure.

:func:`start_process` starts one and returns a :class:`ChildProcess`; :func:`running_process` is
the same as a context manager that stops it when the block ends (SIGKILL, or SIGTERM first when a
grace period is given). The child writes straight into its log file (no pipe the test must keep
draining); :meth:`ChildProcess.log_lines` parses the JSON lines of ``--log-format json``, and
:meth:`ChildProcess.port_from_log` / :meth:`ChildProcess.wait_ready` wait for a server in it to
listen and to be ready, failing with the log when it never is or when the process exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import aiohttp

from tests.support.poll import eventually

REPO = Path(__file__).resolve().parents[2]

START_WITHIN = 60.0
"""Deadline for a cold interpreter importing everything on a loaded 2-core machine to serve."""

LOG_TAIL = 5000
"""How much of the end of a log a failure message quotes."""


def child_environment(**overrides: str) -> dict[str, str]:
    """This environment minus what would make the child think it runs in a pod (or use another
    cluster), with this tree first on ``PYTHONPATH`` so the child runs the code under test."""
    child = {k: v for k, v in os.environ.items() if k not in ("KUBERNETES_SERVICE_HOST", "KUBECONFIG")}
    child["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), child.get("PYTHONPATH", "")) if p)
    child.update(overrides)
    return child


def cpo(*args: str) -> list[str]:
    """The argv of ``cpo ARGS`` from this tree (as the image runs it: ``python -m cli``)."""
    return [sys.executable, "-m", "cli", *args]


def cpo_run_controllers_only(kubeconfig: Path, *flags: str) -> list[str]:
    """``cpo run`` with its controllers only: no webhooks, no metrics or probe server, JSON logs;
    ``flags`` added (``--controllers=...``, ``--etcd-hook-name ...``)."""
    return cpo(
        "run",
        "--kubeconfig",
        str(kubeconfig),
        "--no-webhooks",
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
        "--log-format",
        "json",
        *flags,
    )


def cpo_run_argv(kubeconfig: Path, cert_dir: Path, lease_namespace: str | None = None) -> list[str]:
    """``cpo run`` on loopback with kernel-picked ports (read back from the JSON logs), webhooks
    served from ``cert_dir``; leader election on, in ``lease_namespace``, when one is given."""
    argv = cpo(
        "run",
        "--kubeconfig",
        str(kubeconfig),
        "--metrics-bind-address",
        "127.0.0.1:0",
        "--metrics-secure=false",  # scraped over plain HTTP; the secure server has its own test
        "--health-probe-bind-address",
        "127.0.0.1:0",
        "--webhook-host",
        "127.0.0.1",
        "--webhook-port",
        "0",
        "--webhook-cert-dir",
        str(cert_dir),
    )
    if lease_namespace is not None:
        argv += ["--leader-elect", "--leader-election-namespace", lease_namespace]
    return [*argv, "--log-format", "json"]


class CpoRunPorts(NamedTuple):
    """The ports a ``cpo run`` started with :func:`cpo_run_argv` serves on 127.0.0.1."""

    metrics: int
    probes: int
    webhook: int


METRICS_PORT_LOG = r"serving metrics on port (\d+)"
PROBES_PORT_LOG = r"serving health probes on port (\d+)"
WEBHOOK_PORT_LOG = r"webhook server listening on \S+ port (\d+)"


async def cpo_run_ports(process: ChildProcess) -> CpoRunPorts:
    """The kernel-picked ports of a ``cpo run`` (:func:`cpo_run_argv`), read from its JSON log."""
    return CpoRunPorts(
        metrics=await process.port_from_log(METRICS_PORT_LOG),
        probes=await process.port_from_log(PROBES_PORT_LOG),
        webhook=await process.port_from_log(WEBHOOK_PORT_LOG),
    )


@dataclass
class ChildProcess:
    """A started child; stdout and stderr both go to ``log_path`` (appended to)."""

    process: asyncio.subprocess.Process
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self) -> str:
        return self.log()[-LOG_TAIL:]

    def log_lines(self) -> list[dict[str, Any]]:
        """The log's JSON objects, one a line; other lines are skipped."""
        lines = []
        for text in self.log().splitlines():
            with contextlib.suppress(ValueError):
                parsed = json.loads(text)
                if isinstance(parsed, dict):
                    lines.append(parsed)
        return lines

    def send_signal(self, number: int) -> None:
        if self.process.returncode is None:
            self.process.send_signal(number)

    async def kill(self) -> None:
        """SIGKILL, as a node failure or an OOM kill would: no cleanup runs."""
        if self.process.returncode is None:
            self.process.kill()
        await self.process.wait()

    async def stop(self, grace: float | None = None) -> None:
        """SIGTERM and up to ``grace`` seconds to exit, then SIGKILL; with no grace, SIGKILL at once."""
        if grace is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), timeout=grace)
        await self.kill()

    async def exited(self, within: float) -> int:
        """The exit code, once the process has exited; fails (with the log) after ``within`` seconds."""
        try:
            return await asyncio.wait_for(self.process.wait(), timeout=within)
        except TimeoutError:
            raise AssertionError(
                f"pid {self.pid} still running after {within:g} s; log:\n{self.log_tail()}"
            ) from None

    def _assert_running(self) -> None:
        if self.process.returncode is not None:
            raise AssertionError(
                f"pid {self.pid} exited with {self.process.returncode}; log:\n{self.log_tail()}"
            )

    async def port_from_log(self, pattern: str, within: float = START_WITHIN) -> int:
        """The port in the first log message matching ``pattern`` (a regex with one group)."""

        def port() -> int | None:
            for line in self.log_lines():
                found = re.search(pattern, str(line.get("msg", "")))
                if found:
                    return int(found.group(1))
            self._assert_running()
            return None

        try:
            number: int = await eventually(port, timeout=within, message=f"a log line matching {pattern!r}")
        except AssertionError as error:
            raise AssertionError(f"{error}; log:\n{self.log_tail()}") from error
        return number

    async def wait_ready(
        self, session: aiohttp.ClientSession, url: str, within: float = START_WITHIN
    ) -> None:
        """Poll ``url`` (a readiness probe) until it answers 200 while the process keeps running."""

        async def ready() -> str | None:
            self._assert_running()
            async with session.get(url) as response:
                answer = f"{response.status} {await response.text()}"
            return answer if response.status == 200 else None

        try:
            await eventually(ready, timeout=within, message=f"{url} answering 200")
        except AssertionError as error:
            raise AssertionError(f"{error}; log:\n{self.log_tail()}") from error


async def start_process(
    argv: Sequence[str], *, log_path: Path, cwd: Path = REPO, env: dict[str, str] | None = None
) -> ChildProcess:
    """Start ``argv`` in ``cwd`` with ``env`` (default :func:`child_environment`), no stdin,
    stdout and stderr appended to ``log_path`` (several processes in turn may share one log)."""
    with log_path.open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=child_environment() if env is None else env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    return ChildProcess(process, log_path)


@contextlib.asynccontextmanager
async def running_process(
    argv: Sequence[str],
    *,
    log_path: Path,
    cwd: Path = REPO,
    env: dict[str, str] | None = None,
    stop_grace: float | None = None,
) -> AsyncIterator[ChildProcess]:
    """:func:`start_process` for the length of the block; then :meth:`ChildProcess.stop` with
    ``stop_grace`` if it is still running."""
    child = await start_process(argv, log_path=log_path, cwd=cwd, env=env)
    try:
        yield child
    finally:
        await child.stop(stop_grace)
