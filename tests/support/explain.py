"""``cpo explain`` as a test runs it: once (:func:`explain_json`), or ``--watch -o json`` with the
documents it printed, one per change (:class:`ExplainWatch`).

A watch, not a poll of the command: a plan state that lasts a moment (a learner catching up, a
member being removed) is printed when the ControlPlane's status says it, however brief, so a test
can assert it was shown without timing luck.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from runtime.client import JSON

CPO = Path(sys.executable).parent / "cpo"
"""This environment's ``cpo`` (the worktree's code)."""


class ExplainWatch:
    """Runs ``cpo explain --watch -o json`` on one ControlPlane while the block lasts."""

    def __init__(self, kubeconfig: Path, namespace: str, name: str) -> None:
        self.args = [str(CPO), "explain", "--watch", "-o", "json", "--kubeconfig", str(kubeconfig)]
        self.args += ["-n", namespace, name]
        self.documents: list[JSON] = []
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ExplainWatch:
        self._process = await asyncio.create_subprocess_exec(
            *self.args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ},
        )
        self._reader = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        async for line in self._process.stdout:
            if line.strip():
                self.documents.append(json.loads(line))

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._process is not None and self._process.returncode is None:
            self._process.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(self._process.wait(), 10)
            except TimeoutError:
                self._process.kill()
                await self._process.wait()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reader, 5)

    def plans(self) -> list[tuple[str, str]]:
        """``(reason, message)`` of each distinct plan shown, in order."""
        shown: list[tuple[str, str]] = []
        for document in self.documents:
            progressing = (document.get("plan") or {}).get("progressing") or {}
            plan = (str(progressing.get("reason") or ""), str(progressing.get("message") or ""))
            if not shown or shown[-1] != plan:
                shown.append(plan)
        return shown

    def first(self, reason: str, *words: str) -> JSON | None:
        """The first document whose plan has ``reason`` and a message holding every one of ``words``."""
        for document in self.documents:
            progressing: Any = (document.get("plan") or {}).get("progressing") or {}
            message = str(progressing.get("message") or "")
            if progressing.get("reason") == reason and all(word in message for word in words):
                return document
        return None

    @property
    def last(self) -> JSON | None:
        return self.documents[-1] if self.documents else None


async def explain_json(kubeconfig: Path, namespace: str, name: str) -> str:
    """``cpo explain -o json`` of one ControlPlane, as a user runs it once: its output."""
    process = await asyncio.create_subprocess_exec(
        str(CPO),
        "explain",
        "-o",
        "json",
        "--kubeconfig",
        str(kubeconfig),
        "-n",
        namespace,
        name,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    return out.decode()
