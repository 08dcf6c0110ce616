"""``cpo dev-apiserver`` negotiates answers as kube-apiserver does, seen from outside the process.

client-go sends ``Accept: application/vnd.kubernetes.protobuf,application/json``. kube-apiserver
serves the first type it supports (measured on 1.32, ``tests/testdata/kube-apiserver/FACTS.md``):
protobuf for a ConfigMap, JSON for a custom resource. The answers are read with the ``protobuf``
package (:mod:`tests.support.protobuf_messages`), independently of the server's own codec.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
import yaml

from tests.support.crds import GROUP, PLURAL, VERSION, widget, widget_crd
from tests.support.kubehttp import KubeHTTP
from tests.support.protobuf_messages import K8S, unwrap

REPO = Path(__file__).resolve().parents[2]
CPO = Path(sys.executable).parent / "cpo"
CLIENT_GO_ACCEPT = {"Accept": "application/vnd.kubernetes.protobuf,application/json"}
PROTOBUF = "application/vnd.kubernetes.protobuf"
NAMESPACE = "default"


@pytest_asyncio.fixture
async def kube(tmp_path: Path) -> AsyncIterator[KubeHTTP]:
    """A client of a ``cpo dev-apiserver`` subprocess serving the Widget CRD."""
    kubeconfig = tmp_path / "dev.kubeconfig"
    crd_file = tmp_path / "crd.yaml"
    crd_file.write_text(yaml.safe_dump(widget_crd()))
    command = [str(CPO)] if CPO.exists() else [sys.executable, "-m", "cli"]
    server = await asyncio.create_subprocess_exec(
        *command,
        "dev-apiserver",
        "--kubeconfig-out",
        str(kubeconfig),
        "--crd",
        str(crd_file),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while not kubeconfig.exists():
            assert server.returncode is None, f"cpo dev-apiserver exited early: {await server.communicate()}"
            assert loop.time() < deadline, "no kubeconfig after 30s"
            await asyncio.sleep(0.05)  # allow-sleep: poll interval inside a deadline loop
        async with KubeHTTP(yaml.safe_load(kubeconfig.read_text())) as client:
            yield client
    finally:
        if server.returncode is None:
            server.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(server.communicate(), 30)
    assert server.returncode == 0, stderr.decode()


async def test_client_go_accept_gets_protobuf_for_a_configmap_and_json_for_a_custom_resource(
    kube: KubeHTTP,
) -> None:
    configmaps = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
    created = await kube.post(
        configmaps, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pb"}, "data": {"k": "v"}}
    )
    assert created.status == 201, created.text

    got = await kube.get(f"{configmaps}/pb", headers=CLIENT_GO_ACCEPT)
    assert got.status == 200
    assert got.headers["Content-Type"] == PROTOBUF
    api_version, kind, raw = unwrap(got.content)
    assert (api_version, kind) == ("v1", "ConfigMap")
    cm = K8S["ConfigMap"].FromString(raw)
    assert (cm.metadata.name, dict(cm.data)) == ("pb", {"k": "v"})
    assert cm.metadata.resourceVersion == created.body["metadata"]["resourceVersion"]

    listed = await kube.get(configmaps, headers=CLIENT_GO_ACCEPT)
    assert listed.headers["Content-Type"] == PROTOBUF
    api_version, kind, raw = unwrap(listed.content)
    assert (api_version, kind) == ("v1", "ConfigMapList")
    assert [item.metadata.name for item in K8S["ConfigMapList"].FromString(raw).items] == ["pb"]

    missing = await kube.get(f"{configmaps}/absent", headers=CLIENT_GO_ACCEPT)
    assert (missing.status, missing.headers["Content-Type"]) == (404, PROTOBUF)
    status = K8S["Status"].FromString(unwrap(missing.content)[2])
    assert (status.reason, status.code) == ("NotFound", 404)

    widgets = f"/apis/{GROUP}/{VERSION}/namespaces/{NAMESPACE}/{PLURAL}"
    made = await kube.post(widgets, widget("w", NAMESPACE, size="small"))
    assert made.status == 201, made.text
    custom = await kube.get(f"{widgets}/w", headers=CLIENT_GO_ACCEPT)
    assert custom.status == 200
    assert custom.headers["Content-Type"] == "application/json"
    assert custom.body["metadata"]["name"] == "w"


async def test_client_go_accept_gets_a_protobuf_watch_stream_for_configmaps(kube: KubeHTTP) -> None:
    configmaps = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
    first = await kube.post(configmaps, {"metadata": {"name": "w1"}})
    second = await kube.post(configmaps, {"metadata": {"name": "w2"}, "data": {"n": "2"}})
    assert first.status == second.status == 201
    params = {
        "watch": "1",
        "resourceVersion": first.body["metadata"]["resourceVersion"],
        "timeoutSeconds": "1",
    }
    stream = await kube.get(configmaps, params=params, headers=CLIENT_GO_ACCEPT)
    assert stream.status == 200
    assert stream.headers["Content-Type"] == "application/vnd.kubernetes.protobuf;stream=watch"
    frames = []
    data = stream.content
    while data:
        length = int.from_bytes(data[:4], "big")
        frames.append(K8S["WatchEvent"].FromString(data[4 : 4 + length]))
        data = data[4 + length :]
    assert [event.type for event in frames] == ["ADDED"]
    api_version, kind, raw = unwrap(frames[0].object.raw)
    assert (api_version, kind) == ("v1", "ConfigMap")
    cm = K8S["ConfigMap"].FromString(raw)
    assert (cm.metadata.name, dict(cm.data)) == ("w2", {"n": "2"})
