"""kubectl's typed commands on built-in kinds: they send protobuf bodies, as every Go client does.

``kubectl create namespace|configmap|secret|serviceaccount|service|poddisruptionbudget`` and
``kubectl auth whoami`` POST ``application/vnd.kubernetes.protobuf``; ``kubectl run``, ``label``,
``annotate``, ``edit`` and ``delete`` send JSON bodies and patches. Each result is read back with
``kubectl get -o json``, the way a person would check it. The typed commands also ask for protobuf
answers first, and get them, as from kube-apiserver; ``get -o yaml``, ``get`` (a Table) and
``get --watch`` ask for JSON.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_kubectl import Kubectl

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.kubectl]

# An EDITOR for `kubectl edit`: replaces the text given in the environment in the file it is handed.
EDITOR_SCRIPT = """\
import os, pathlib, sys
path = pathlib.Path(sys.argv[-1])
path.write_text(path.read_text().replace(os.environ["EDIT_FROM"], os.environ["EDIT_TO"]))
"""


async def get_json(k: Kubectl, *args: str) -> Any:
    return json.loads(await k.run("get", *args, "-o", "json"))


async def test_create_commands_that_send_protobuf(env: Any, namespace: str) -> None:
    k = Kubectl(env.kubeconfig_path, namespace)

    created = f"{namespace}-created"
    assert await k.run("create", "namespace", created) == f"namespace/{created} created\n"
    ns = await get_json(k, "namespace", created)
    assert ns["metadata"]["name"] == created
    assert ns["spec"] == {"finalizers": ["kubernetes"]}
    assert ns["status"] == {"phase": "Active"}

    await k.run("create", "configmap", "settings", "--from-literal=mode=fast", "--from-literal=size=3")
    cm = await get_json(k, "configmap", "settings")
    assert cm["data"] == {"mode": "fast", "size": "3"}
    assert cm["metadata"]["namespace"] == namespace

    await k.run("create", "secret", "generic", "creds", "--from-literal=user=admin", "--from-literal=pw=p@ss")
    secret = await get_json(k, "secret", "creds")
    assert secret["type"] == "Opaque"
    assert {key: base64.b64decode(value).decode() for key, value in secret["data"].items()} == {
        "user": "admin",
        "pw": "p@ss",
    }

    await k.run("create", "serviceaccount", "robot")
    sa = await get_json(k, "serviceaccount", "robot")
    assert sa["metadata"]["name"] == "robot"

    await k.run("create", "service", "clusterip", "web", "--tcp=80:8080", "--tcp=443:8443")
    svc = await get_json(k, "service", "web")
    assert svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["selector"] == {"app": "web"}
    assert [(p["name"], p["port"], p["targetPort"], p["protocol"]) for p in svc["spec"]["ports"]] == [
        ("80-8080", 80, 8080, "TCP"),
        ("443-8443", 443, 8443, "TCP"),
    ]
    assert svc["spec"]["clusterIP"]

    await k.run("create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=50%")
    pdb = await get_json(k, "poddisruptionbudget", "web")
    assert pdb["spec"] == {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}

    whoami = await k.run("auth", "whoami", "-o", "json")
    assert json.loads(whoami)["status"]["userInfo"]["username"]

    await k.run("delete", "namespace", created, "--wait=false")  # not left behind on a shared cluster


async def test_run_label_annotate_edit_and_delete(env: Any, namespace: str, tmp_path: Path) -> None:
    k = Kubectl(env.kubeconfig_path, namespace)

    await k.run("run", "web", "--image=nginx:1.27", "--labels=app=web", "--env=MODE=fast", "--port=80")
    pod = await get_json(k, "pod", "web")
    (container,) = pod["spec"]["containers"]
    assert (container["name"], container["image"]) == ("web", "nginx:1.27")
    assert container["env"] == [{"name": "MODE", "value": "fast"}]
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert pod["metadata"]["labels"] == {"app": "web"}

    await k.run("create", "configmap", "settings", "--from-literal=mode=fast")
    await k.run("label", "configmap", "settings", "team=blue")
    await k.run("annotate", "configmap", "settings", "owner=ops")
    cm = await get_json(k, "configmap", "settings")
    assert cm["metadata"]["labels"] == {"team": "blue"}
    assert cm["metadata"]["annotations"] == {"owner": "ops"}

    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR_SCRIPT)
    edited = await k.run(
        "edit",
        "configmap",
        "settings",
        env={"EDITOR": f"{sys.executable} {editor}", "EDIT_FROM": "mode: fast", "EDIT_TO": "mode: slow"},
    )
    assert edited == "configmap/settings edited\n"
    assert (await get_json(k, "configmap", "settings"))["data"] == {"mode": "slow"}

    assert (
        await k.run("delete", "configmap", "settings")
        == f'configmap "settings" deleted from {namespace} namespace\n'
    )
    assert await k.run("delete", "pod", "web") == f'pod "web" deleted from {namespace} namespace\n'
    remaining = await k.run("get", "configmap,pod", "--ignore-not-found", "-o", "name")
    assert remaining == ""

    # A namespace keeps its "kubernetes" finalizer until a namespace controller (absent here, as
    # under a bare kube-apiserver) empties it, so kubectl is told not to wait for it to vanish.
    doomed = f"{namespace}-doomed"
    await k.run("create", "namespace", doomed)
    await k.run("delete", "namespace", doomed, "--wait=false")
    assert (await get_json(k, "namespace", doomed))["status"]["phase"] == "Terminating"


LEASE_YAML = """\
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: leader
spec:
  holderIdentity: me
  leaseDurationSeconds: 15
"""


async def test_yaml_all_namespace_table_and_watch_of_built_ins_after_a_protobuf_create(
    env: Any, namespace: str
) -> None:
    # `kubectl create configmap` asks for protobuf first and now gets it; `get -o yaml` asks for
    # JSON, `get` for a Table and `get -w` for a Table stream (all JSON): each must still read.
    k = Kubectl(env.kubeconfig_path, namespace)
    assert await k.run("create", "configmap", "cfg", "--from-literal=mode=fast") == "configmap/cfg created\n"
    as_yaml = yaml.safe_load(await k.run("get", "cm", "cfg", "-o", "yaml"))
    assert (as_yaml["kind"], as_yaml["data"]) == ("ConfigMap", {"mode": "fast"})

    await k.run("apply", "-f", "-", stdin=LEASE_YAML)
    rows = [line.split() for line in (await k.run("get", "leases", "-A")).splitlines()]
    assert rows[0][:3] == ["NAMESPACE", "NAME", "HOLDER"]
    assert [namespace, "leader", "me"] in [row[:3] for row in rows[1:]]

    watch = await asyncio.create_subprocess_exec(
        *k.base, "get", "cm", "--watch", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert watch.stdout is not None
    try:
        header = await asyncio.wait_for(watch.stdout.readline(), 30)
        assert header.split()[:2] == [b"NAME", b"DATA"], header
        first = await asyncio.wait_for(watch.stdout.readline(), 30)
        assert first.split()[:2] == [b"cfg", b"1"], first
        await k.run("create", "configmap", "later", "--from-literal=a=1", "--from-literal=b=2")
        added = await asyncio.wait_for(watch.stdout.readline(), 30)
        assert added.split()[:2] == [b"later", b"2"], added
    finally:
        watch.terminate()
        await watch.wait()
