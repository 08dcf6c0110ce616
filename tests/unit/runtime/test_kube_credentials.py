"""runtime.client loads credentials without importing kubernetes_asyncio's generated client.

Each check runs in a fresh interpreter: in this one, the test fixtures have already imported the
full client. The credentials are checked end to end against an embedded API server, which tells
who it authenticated (SelfSubjectReview).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from apiserver.server import EmbeddedAPIServer
from runtime.envtest.kubeconfig import build_kubeconfig

REPO = Path(__file__).resolve().parents[3]

# Shared by the child scripts: how many modules of the generated client are loaded.
COUNT_MODULES = """
import sys

def generated_modules():
    return {
        "models": sum(m.startswith("kubernetes_asyncio.client.models.") for m in sys.modules),
        "api": sum(m.startswith("kubernetes_asyncio.client.api.") for m in sys.modules),
    }
"""

CREDENTIALS_CHILD = (
    COUNT_MODULES
    + """
import asyncio, json, os

import runtime.client
from runtime import _kube_credentials
from runtime.client import Client

setup = json.loads(sys.argv[1])
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}

async def whoami(client):
    async with client:
        review = await client.create(REVIEW)
        return review["status"]["userInfo"]["username"]

async def main():
    users = {}
    for name, kubeconfig in setup["kubeconfigs"].items():
        users[name] = await whoami(await Client.from_kubeconfig(kubeconfig))
    # In a pod these are the service account's files; point the loader at ours.
    from kubernetes_asyncio.config import incluster_config
    incluster_config.SERVICE_TOKEN_FILENAME = setup["in_cluster"]["token_file"]
    incluster_config.SERVICE_CERT_FILENAME = setup["in_cluster"]["ca_file"]
    os.environ["KUBERNETES_SERVICE_HOST"] = setup["in_cluster"]["host"]
    os.environ["KUBERNETES_SERVICE_PORT"] = setup["in_cluster"]["port"]
    users["in-cluster"] = await whoami(await Client.in_cluster())
    after_credentials = generated_modules()
    pydantic_loaded = "pydantic" in sys.modules

    # Everything else in the process still gets the whole kubernetes_asyncio.
    import kubernetes_asyncio
    from kubernetes_asyncio import config
    from kubernetes_asyncio.client import ApiClient, CoreV1Api, V1Namespace, V1Pod
    star = {}
    exec("from kubernetes_asyncio.client import *", star)

    full = {
        "subpackages": sorted(
            name
            for name in ("client", "config", "dynamic", "stream", "utils", "watch")
            if isinstance(getattr(kubernetes_asyncio, name), type(kubernetes_asyncio))
        ),
        "version": kubernetes_asyncio.__version__ == kubernetes_asyncio.client.__version__,
        "watch": kubernetes_asyncio.watch.Watch.__name__,
        "models_v1_pod": kubernetes_asyncio.client.models.V1Pod is V1Pod,
        "star_import": "AppsV1Api" in star,
        "dir": "CoreV1Api" in dir(kubernetes_asyncio.client),
    }
    configuration = kubernetes_asyncio.client.Configuration()
    await config.load_kube_config_from_dict(setup["kubeconfigs"]["token"], client_configuration=configuration)
    async with ApiClient(configuration) as api:
        # The generated API and deserialisation by model name (ApiClient looks the class up on
        # kubernetes_asyncio.client.models).
        namespace = await CoreV1Api(api).read_namespace("default")
        full["read_namespace"] = [type(namespace).__name__, namespace.metadata.name]
    full["generated_modules"] = generated_modules()
    print(json.dumps({
        "deferred": _kube_credentials.deferred,
        "users": users,
        "after_credentials": after_credentials,
        "pydantic_loaded": pydantic_loaded,
        "full": full,
    }))

asyncio.run(main())
"""
)


async def run_child(script: str, *args: str) -> Any:
    """Run ``script`` in a fresh interpreter with this repository first on the path; its JSON output."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        *args,
        env=env,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode == 0, stderr.decode()
    return json.loads(stdout.decode().strip().splitlines()[-1])


@pytest_asyncio.fixture
async def server() -> AsyncIterator[EmbeddedAPIServer]:
    async with EmbeddedAPIServer() as embedded:
        yield embedded


async def test_kubeconfigs_and_in_cluster_load_without_the_generated_client(
    server: EmbeddedAPIServer, tmp_path: Path
) -> None:
    server.add_token("token-secret", "token-user", ["system:masters"])
    server.add_token("exec-secret", "exec-user", ["system:masters"])
    server.add_token("pod-secret", "system:serviceaccount:ns:operator", ["system:masters"])
    cert_path, key_path = server.ca.client_cert("cert-user", ["system:masters"]).write(tmp_path)
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(server.ca_pem)
    token_file = tmp_path / "token"
    token_file.write_text("pod-secret")

    token = build_kubeconfig(server.url, server.ca_pem, token="token-secret")
    client_cert = build_kubeconfig(server.url, server.ca_pem, token="unused")
    client_cert["users"][0]["user"] = {"client-certificate": str(cert_path), "client-key": str(key_path)}
    plugin = build_kubeconfig(server.url, server.ca_pem, token="unused")
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential"}
    plugin_code = (
        "import json, os; credential = json.loads(os.environ['CREDENTIAL']);"
        " credential['status'] = {'token': os.environ['TOKEN']}; print(json.dumps(credential))"
    )
    plugin["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": ["-c", plugin_code],
            "env": [
                {"name": "TOKEN", "value": "exec-secret"},
                {"name": "CREDENTIAL", "value": json.dumps(credential)},
            ],
            "interactiveMode": "Never",
        }
    }
    host, _, port = server.url.removeprefix("https://").rpartition(":")
    setup = {
        "kubeconfigs": {"token": token, "client-cert": client_cert, "exec": plugin},
        "in_cluster": {"host": host, "port": port, "token_file": str(token_file), "ca_file": str(ca_file)},
    }

    result = await run_child(CREDENTIALS_CHILD, json.dumps(setup))

    assert result["deferred"] is True
    assert result["users"] == {
        "token": "token-user",
        "client-cert": "cert-user",
        "exec": "exec-user",
        "in-cluster": "system:serviceaccount:ns:operator",
    }
    # Four clients built and used, and not one generated API or model module loaded.
    assert result["after_credentials"] == {"models": 0, "api": 0}
    # Nor pydantic (~5 MiB): runtime.client imports it for type checking only.
    assert result["pydantic_loaded"] is False
    full = result["full"]
    assert full["subpackages"] == ["client", "config", "dynamic", "stream", "utils", "watch"]
    assert full["version"] and full["models_v1_pod"] and full["star_import"] and full["dir"]
    assert full["watch"] == "Watch"
    assert full["read_namespace"] == ["V1Namespace", "default"]
    # Afterwards the whole generated client is there (hundreds of models, dozens of APIs).
    assert full["generated_modules"]["models"] > 500
    assert full["generated_modules"]["api"] > 50


IMPORT_ORDER_CHILD = (
    COUNT_MODULES
    + """
import asyncio, json

first = sys.argv[1]
if first == "kubernetes_asyncio":
    import kubernetes_asyncio
elif first == "kubernetes_asyncio.client":
    from kubernetes_asyncio.client import ApiClient
import runtime.client
from runtime import _kube_credentials
before_envtest = generated_modules()
# The test environment uses ApiClient, ApiException and the kubeconfig loader from kubernetes_asyncio.
from runtime.envtest import Environment
from runtime.envtest import environment
after_envtest = generated_modules()

from kubernetes_asyncio.client import ApiClient, ApiException, V1ObjectMeta

async def deserialise():
    async with ApiClient() as api:
        class Response:
            data = json.dumps({"metadata": {"name": "x", "labels": {"a": "b"}}})
        pod = api.deserialize(Response(), "V1Pod")
        return [type(pod).__name__, type(pod.metadata) is V1ObjectMeta, pod.metadata.labels]

print(json.dumps({
    "deferred": _kube_credentials.deferred,
    "before_envtest": before_envtest,
    "after_envtest": after_envtest,
    "same_exception": environment.ApiException is ApiException,
    "pod": asyncio.run(deserialise()),
}))
"""
)


@pytest.mark.parametrize("first", ["runtime.client", "kubernetes_asyncio", "kubernetes_asyncio.client"])
async def test_any_import_order_gives_working_clients(first: str) -> None:
    result = await run_child(IMPORT_ORDER_CHILD, first)

    assert result["same_exception"] is True
    assert result["pod"] == ["V1Pod", True, {"a": "b"}]
    if first == "runtime.client":
        assert result["deferred"] is True
        # The test environment needs nothing of the generated client either.
        assert result["before_envtest"] == {"models": 0, "api": 0}
        assert result["after_envtest"] == {"models": 0, "api": 0}
    else:
        # kubernetes_asyncio was imported whole before the runtime: it is used as it is.
        assert result["deferred"] is False
        assert result["before_envtest"]["models"] > 500


THREADS_CHILD = """
import json, sys, threading

import runtime.client

client = sys.modules["kubernetes_asyncio.client"]
# Half ask the client package, half its models package: two deferred __init__s, one inside the other.
models = client.models
lookups = [(client, "CoreV1Api"), (models, "V1Pod"), (client, "V1ConfigMap"), (models, "V1Node")] * 4
barrier = threading.Barrier(len(lookups))
found, errors = {}, []

def look_up(index, package, name):
    barrier.wait()
    try:
        found[index] = id(getattr(package, name))
    except Exception as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=look_up, args=(i, *lookup)) for i, lookup in enumerate(lookups)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
expected = {i: id(getattr(package, name)) for i, (package, name) in enumerate(lookups)}
print(json.dumps({"errors": errors, "same": found == expected}))
"""


async def test_threads_asking_for_the_full_client_at_once_all_get_it() -> None:
    """The deferred __init__ runs once; threads arriving while it runs wait for it, not fail."""
    result = await run_child(THREADS_CHILD)

    assert result == {"errors": [], "same": True}


def test_the_deferral_is_the_only_kubernetes_asyncio_import_of_the_runtime_client() -> None:
    """runtime/client/ gets kubernetes_asyncio's names through the deferring module only."""
    source = "\n".join(path.read_text() for path in sorted((REPO / "runtime" / "client").glob("*.py")))
    imports = [
        line.strip()
        for line in source.splitlines()
        if line.lstrip().startswith(("import ", "from ")) and "kubernetes_asyncio" in line
    ]
    assert imports == [], textwrap.dedent(
        f"""\
        runtime/client/ imports kubernetes_asyncio directly: {imports}.
        Import its names from runtime._kube_credentials, which keeps the generated client unloaded."""
    )
