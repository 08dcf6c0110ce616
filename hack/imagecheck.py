"""The operator's image, run as config/manager/manager.yaml's pod runs it, and checked.

``hack/image`` builds the image and then runs ``python -m hack.imagecheck IMAGE``. Each container
runs the way the kubelet would run the Deployment's pod: its user, a read-only root with no tmpfs
added by the engine and only the pod's writable mounts (its ``emptyDir`` volumes), no
capabilities, no new privileges, the service account's token, CA and namespace at their in-cluster
path, the webhook certificate where the Deployment mounts it, and ``KUBERNETES_SERVICE_HOST`` /
``_PORT`` naming ``cpo dev-apiserver --enforce-rbac`` on this machine, where config/rbac is applied
and the token is one of config/rbac's ServiceAccount. The only departure: each container gets
ports of its own (the engine shares the host's network, so two containers cannot both have 8443).
``cpo localmachine`` runs on the host as the machine provider.

The checks, reported in this order (each failure says what is wrong):

a. the image holds the product only: no apiserver/, providers/, demo/, bench/, tests, compiler,
   pip (module, command or wheel);
b. the container starts as the pod runs it (user, read-only root, no capabilities, no new
   privileges, only the pod's writable paths, the mounted files) and /healthz, /readyz answer 200;
c. its event loop is uvloop (its start line says which loop the process runs on) and it exits 0
   on SIGTERM within the Deployment's terminationGracePeriodSeconds;
d. /metrics answers 401 without a token, 403 to a ServiceAccount without the metrics-reader
   binding, 200 to config/prometheus's scraper;
e. the validating webhook, registered by URL at the container's port, refuses ``replicas: 4``
   through kubectl;
f. a ControlPlane of 3 bootstraps to 3 voters, scales to 5 and back to 3 (demo.tour's steps), and
   the quorum monitor never sees quorum lost;
g. two containers with ``--leader-elect``: after SIGTERM of the leader the other leads within 2 s;
   after SIGKILL within the lease duration + the retry period + 2 s.

``--inject`` breaks one thing on purpose, to see the check that should catch it fail:
``unbound-token`` (the operator's token is of a ServiceAccount without bindings),
``webhook-port-closed`` (the webhooks are registered at a port where nothing listens),
``writable-tmpfs`` (the engine's default tmpfs on /run, /var/tmp, /tmp: paths the pod has not).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
import signal
import ssl
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from demo.monitor import quorum_losses
from demo.observer import Observer
from demo.tour import StepFailed, Tour
from demo.world import CRD_DIRS, KubectlError, kubectl, webhook_configurations
from providers.localmachine.etcd_process import recorded_processes
from runtime.envtest.certs import CertificateAuthority
from runtime.leaderelection import DEFAULT_RETRY_PERIOD
from runtime.localproc import free_port

REPO = Path(__file__).resolve().parents[1]
SERVICE_ACCOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
CHECK_NAMESPACE = "cpo-image-check"
"""Where the check's ControlPlanes live (the provider serves only this namespace)."""
UNBOUND = "cpo-image-check-unbound"
"""A ServiceAccount no binding names."""
INJECTIONS = ("unbound-token", "webhook-port-closed", "writable-tmpfs")
READY_WITHIN = 90.0
POLL = 0.05

CHECKS: dict[str, str] = {
    "a": "the image holds the product only",
    "b": "the container starts as the pod runs it; /healthz and /readyz answer 200",
    "c": "the event loop is uvloop; SIGTERM ends the container with 0 within the grace period",
    "d": "/metrics: 401 without a token, 403 without the reader binding, 200 with it",
    "e": "the validating webhook refuses replicas: 4 through kubectl",
    "f": "3 voters, scale to 5 and back to 3, quorum never lost",
    "g": "leader election: SIGTERM hand-over within 2 s, SIGKILL within lease + retry + 2 s",
}

# Run inside the image (python3 -c): what it holds that is not the product.
CONTENTS_PROBE = r"""
import importlib.util, json, os, sys
found, dependency_tests = [], []
for module in ("pip", "apiserver", "providers", "demo", "bench", "tests", "examples", "setuptools", "wheel"):
    if importlib.util.find_spec(module) is not None:
        found.append(f"importable module {module}")
PROJECT_TOOLS = ("apiserver", "providers", "demo", "bench")
COMPILERS = {"gcc", "cc", "c++", "g++", "clang", "tcc", "cpp", "as", "ld"}
SKIP = ("/proc", "/sys", "/dev")
for top, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in SKIP]
    for d in dirs:
        path = os.path.join(top, d)
        if top.endswith("site-packages") and d in ("tests", "test", *PROJECT_TOOLS):
            found.append(f"folder {path}")
        elif "site-packages" in top and d in ("tests", "test"):
            dependency_tests.append(path.split("site-packages/")[1])
        if d.startswith(("pip-", "setuptools-", "wheel-")) and d.endswith(".dist-info"):
            found.append(f"installed {path}")
    for f in files:
        path = os.path.join(top, f)
        if f.endswith(".whl"):
            found.append(f"wheel {path}")
        elif top.endswith("/bin") and (f in COMPILERS or f.startswith(("gcc-", "x86_64-linux-gnu-gcc"))
                                       or f in ("pip", "pip3") or f.startswith("pip3.")):
            found.append(f"program {path}")
print(json.dumps({"found": found, "dependency_tests": dependency_tests}))
"""

# Run inside the running container (podman exec python3 -c): how its process 1 runs.
PROCESS_PROBE = r"""
import json, os, sys
status = {}
for line in open("/proc/1/status"):
    key, _, value = line.partition(":")
    status[key] = value.strip()
environ = dict(item.split("=", 1) for item in open("/proc/1/environ").read().split("\0") if "=" in item)
mounts = []
for line in open("/proc/1/mountinfo"):
    left, _, right = line.partition(" - ")
    fields = left.split()
    mounts.append([fields[4], "rw" in fields[5].split(","), right.split()[0]])
listing = {}
for folder in sys.argv[1:]:
    try:
        listing[folder] = sorted(os.listdir(folder))
    except OSError as err:
        listing[folder] = str(err)
home = environ.get("HOME", "")
home_writable = False
try:
    os.makedirs(os.path.join(home, "probe"))
    home_writable = True
except OSError:
    pass
print(json.dumps({"uid": status["Uid"].split()[0], "gid": status["Gid"].split()[0],
                  "capeff": status["CapEff"], "nnp": status["NoNewPrivs"], "mounts": mounts,
                  "listing": listing, "home": home, "home_writable": home_writable}))
"""

ENGINE_FILESYSTEMS = frozenset({"proc", "devpts", "mqueue", "sysfs", "cgroup", "cgroup2"})
ENGINE_WRITABLE = frozenset({"/dev", "/dev/shm", "/sys/fs/cgroup"})
"""Writable mounts every container has, in a pod too (the kubelet's runtime adds the same)."""


# ----------------------------------------------------------------------------------- results


@dataclass
class Results:
    """Each check's outcome, printed as it is decided (and again in order at the end)."""

    outcomes: dict[str, tuple[bool, str]] = field(default_factory=dict)

    def record(self, key: str, ok: bool, detail: str) -> None:
        if key in self.outcomes and not self.outcomes[key][0]:
            return  # a check that failed stays failed (c has two halves)
        if key in self.outcomes and ok:
            detail = f"{self.outcomes[key][1]}; {detail}"
        self.outcomes[key] = (ok, detail)

    def summary(self) -> list[str]:
        lines = []
        for key, title in CHECKS.items():
            ok, detail = self.outcomes.get(key, (False, "not run"))
            lines.append(f"{'PASS' if ok else 'FAIL'}  {key}. {title}\n        {detail}")
        return lines

    @property
    def ok(self) -> bool:
        return all(self.outcomes.get(key, (False, ""))[0] for key in CHECKS)


class CheckFailed(Exception):
    """A check's failure; the message says what is wrong."""


# ----------------------------------------------------------------------------------- the pod


@dataclass(frozen=True)
class PodSpec:
    """What config/manager/manager.yaml says about how the container runs."""

    namespace: str
    service_account: str
    user: int
    group: int
    args: list[str]
    cert_mount: str
    writable_mounts: list[str]
    grace: int

    @classmethod
    def read(cls) -> PodSpec:
        docs = list(yaml.safe_load_all((REPO / "config" / "manager" / "manager.yaml").read_text()))
        (deployment,) = [d for d in docs if d and d["kind"] == "Deployment"]
        pod = deployment["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = container["volumeMounts"]
        (cert,) = [m["mountPath"] for m in mounts if "secret" in volumes[m["name"]]]
        writable = [m["mountPath"] for m in mounts if "emptyDir" in volumes[m["name"]]]
        return cls(
            namespace=deployment["metadata"]["namespace"],
            service_account=pod["serviceAccountName"],
            user=int(pod["securityContext"]["runAsUser"]),
            group=int(pod["securityContext"]["runAsGroup"]),
            args=list(container["args"]),
            cert_mount=cert,
            writable_mounts=writable,
            grace=int(pod["terminationGracePeriodSeconds"]),
        )


@dataclass(frozen=True)
class Ports:
    metrics: int
    probes: int
    webhook: int

    @classmethod
    def free(cls) -> Ports:
        return cls(free_port(), free_port(), free_port())


def operator_args(pod: PodSpec, ports: Ports) -> list[str]:
    """The Deployment's args with this container's ports."""
    replaced = {
        "--metrics-bind-address=": f":{ports.metrics}",
        "--health-probe-bind-address=": f":{ports.probes}",
        "--webhook-port=": str(ports.webhook),
    }
    args, seen = [], set()
    for arg in pod.args:
        for prefix, value in replaced.items():
            if arg.startswith(prefix):
                arg = prefix + value
                seen.add(prefix)
        args.append(arg)
    missing = sorted(set(replaced) - seen)
    if missing:
        raise CheckFailed(f"the Deployment's args no longer set {missing}: update hack/imagecheck.py")
    return args


async def run(*argv: str, stdin: str | None = None, limit: float = 300) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode() if stdin else None), limit)
    return process.returncode or 0, out.decode(), err.decode()


async def podman(*args: str) -> str:
    code, out, err = await run("podman", *args)
    if code != 0:
        raise CheckFailed(f"podman {' '.join(args[:2])} failed ({code}): {err.strip() or out.strip()}")
    return out


@dataclass
class Container:
    """One container of the image, run as the pod runs it."""

    name: str
    ports: Ports

    async def logs(self) -> str:
        _, out, err = await run("podman", "logs", self.name)
        return out + err

    async def log_tail(self, lines: int = 6) -> str:
        return "\n          ".join((await self.logs()).strip().splitlines()[-lines:])

    async def complaints(self) -> str:
        """The operator's first warnings and errors (what a failed start is about), else its log's end."""
        found: list[str] = []
        for line in (await self.logs()).splitlines():
            line = re.sub(r'"ts": "[^"]*", ', "", line)  # without the timestamp, so repeats fold
            if ('"level": "error"' in line or '"level": "warning"' in line) and line not in found:
                found.append(line)
        if not found:
            return f"the operator's log ends:\n          {await self.log_tail()}"
        lines = "\n          ".join(line[:300] for line in found[:3])
        return f"the operator's warnings and errors ({len(found)} distinct) begin:\n          {lines}"

    async def running(self) -> bool:
        code, out, _ = await run("podman", "inspect", "--format", "{{.State.Running}}", self.name)
        return code == 0 and out.strip() == "true"

    async def remove(self) -> None:
        await run("podman", "rm", "--force", "--time", "0", self.name)


# ----------------------------------------------------------------------------------- the world


@dataclass
class World:
    """The API server and the provider on the host, the files the pods mount, the containers."""

    image: str
    inject: str | None
    directory: Path
    pod: PodSpec = field(default_factory=PodSpec.read)
    processes: list[asyncio.subprocess.Process] = field(default_factory=list)
    containers: list[Container] = field(default_factory=list)
    kubeconfig: Path = Path()
    api_port: int = 0
    ca_pem: bytes = b""
    webhook_ca: CertificateAuthority | None = None

    @property
    def state_dir(self) -> Path:
        return self.directory / "machines"

    async def kubectl(self, *args: str, stdin: str | None = None) -> str:
        return await kubectl(self.kubeconfig, *args, input_text=stdin)

    async def apply(self, *docs: dict[str, Any]) -> None:
        await self.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))

    async def spawn(self, name: str, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        for variable in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
            env.pop(variable, None)
        log = (self.directory / f"{name}.log").open("wb")
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "cli", *args, stdout=log, stderr=log, env=env, cwd=self.directory
        )
        self.processes.append(process)

    async def start(self) -> None:
        """``cpo dev-apiserver --enforce-rbac`` with the CRDs, config/rbac applied, then the provider."""
        self.kubeconfig = self.directory / "admin.kubeconfig"
        await self.spawn(
            "apiserver", "dev-apiserver", "--enforce-rbac", "--kubeconfig-out", str(self.kubeconfig),
            *(arg for folder in CRD_DIRS for arg in ("--crd", str(folder))),
        )  # fmt: skip
        await until(lambda: _true(self.kubeconfig.exists()), 60, "cpo dev-apiserver wrote no kubeconfig")
        config = yaml.safe_load(self.kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.api_port = int(cluster["server"].rsplit(":", 1)[1])
        self.ca_pem = base64.b64decode(cluster["certificate-authority-data"])
        manager_docs = yaml.safe_load_all((REPO / "config" / "manager" / "manager.yaml").read_text())
        namespaces = [d for d in manager_docs if d and d["kind"] == "Namespace"]
        rbac = yaml.safe_load((REPO / "config" / "rbac" / "kustomization.yaml").read_text())
        rbac_docs = [
            yaml.safe_load((REPO / "config" / "rbac" / name).read_text()) for name in rbac["resources"]
        ]
        prometheus = REPO / "config" / "prometheus" / "metrics_reader_binding.yaml"
        await self.apply(*namespaces, *rbac_docs, yaml.safe_load(prometheus.read_text()))
        for namespace in (CHECK_NAMESPACE, "monitoring"):
            with contextlib.suppress(KubectlError):
                await self.kubectl("create", "namespace", namespace)
        await self.kubectl("create", "serviceaccount", UNBOUND, "-n", self.pod.namespace)
        await self.kubectl("create", "serviceaccount", UNBOUND, "-n", "monitoring")
        await self.spawn(
            "localmachine", "localmachine", "--state-dir", str(self.state_dir),
            "--kubeconfig", str(self.kubeconfig), "--namespace", CHECK_NAMESPACE,
            "--heartbeat-period", "0.5", "--stop-grace-period", "3", "--join-backoff-max", "1",
        )  # fmt: skip
        await self._write_pod_files()

    async def _write_pod_files(self) -> None:
        """The service account's files and the webhook's pair, readable as the kubelet writes them
        (a Secret volume's defaultMode 420, 0644)."""
        account = UNBOUND if self.inject == "unbound-token" else self.pod.service_account
        token = (await self.kubectl("create", "token", account, "-n", self.pod.namespace)).strip()
        files = self.directory / "serviceaccount"
        files.mkdir()
        (files / "token").write_text(token)
        (files / "ca.crt").write_bytes(self.ca_pem)
        (files / "namespace").write_text(self.pod.namespace)
        self.webhook_ca = CertificateAuthority.new("cpo-image-check-webhook-ca")
        self.webhook_ca.serving_cert(["127.0.0.1", "localhost"]).write(self.directory / "webhook-certs")
        for folder in (files, self.directory / "webhook-certs"):
            folder.chmod(0o755)
            for path in folder.iterdir():
                path.chmod(0o644)

    async def start_container(self, name: str) -> Container:
        """A container of the image as the Deployment's pod, on ports of its own."""
        container = Container(name, Ports.free())
        writable = "true" if self.inject == "writable-tmpfs" else "false"
        mounts = [
            arg for path in self.pod.writable_mounts for arg in ("--mount", f"type=tmpfs,destination={path}")
        ]
        await podman(
            "run", "--detach", "--name", name, "--hostname", name, "--network", "host",
            "--user", f"{self.pod.user}:{self.pod.group}",
            "--read-only", f"--read-only-tmpfs={writable}",
            "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
            *mounts,
            "--volume", f"{self.directory / 'serviceaccount'}:{SERVICE_ACCOUNT_PATH}:ro",
            "--volume", f"{self.directory / 'webhook-certs'}:{self.pod.cert_mount}:ro",
            "--env", "KUBERNETES_SERVICE_HOST=127.0.0.1",
            "--env", f"KUBERNETES_SERVICE_PORT={self.api_port}",
            self.image, *operator_args(self.pod, container.ports),
        )  # fmt: skip
        self.containers.append(container)
        return container

    async def stop(self) -> None:
        for container in self.containers:
            await container.remove()
        for process in reversed(self.processes):
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(process.wait(), 20)
                except TimeoutError:
                    process.kill()
        for member in recorded_processes(self.state_dir):
            member.signal(signal.SIGKILL)

    async def lease_holder(self, client: Any) -> str:
        lease = await client.get(
            "coordination.k8s.io/v1", "Lease", "controlplane-operator.cpo.dev", self.pod.namespace
        )
        return str(lease["spec"].get("holderIdentity") or "")


async def _true(value: bool) -> bool:
    return value


async def until(condition: Callable[[], Awaitable[bool]], within: float, failure: str) -> float:
    """Poll ``condition`` until it holds; seconds it took. Raises CheckFailed(failure) at the deadline."""
    started = time.monotonic()
    while not await condition():
        if time.monotonic() - started > within:
            raise CheckFailed(failure)
        await asyncio.sleep(POLL)
    return time.monotonic() - started


async def get(url: str, token: str | None = None) -> tuple[int, str]:
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # the metrics server's certificate is self-signed
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session,
            session.get(url, headers=headers, ssl=insecure if url.startswith("https") else False) as response,
        ):
            return response.status, await response.text()
    except (aiohttp.ClientError, TimeoutError) as err:
        return 0, f"{type(err).__name__}: {err}"


# ----------------------------------------------------------------------------------- the checks


async def check_contents(image: str) -> str:
    out = await podman(
        "run", "--rm", "--network", "none", "--entrypoint", "python3", image, "-c", CONTENTS_PROBE
    )
    probe = json.loads(out.strip().splitlines()[-1])
    found = probe["found"]
    if found:
        raise CheckFailed("not the product: " + "; ".join(found[:12]) + (" ..." if len(found) > 12 else ""))
    record = await podman(
        "run", "--rm", "--network", "none", "--entrypoint", "python3", image, "-c",
        "import importlib.metadata as m; print('\\n'.join(map(str, m.files('controlplane-operator') or [])))",
    )  # fmt: skip
    tops = sorted({line.split("/")[0] for line in record.split() if "/" in line and ".dist-info" not in line})
    extra = [top for top in tops if top in ("apiserver", "providers", "demo", "bench", "tests", "examples")]
    if extra:
        raise CheckFailed(f"the installed controlplane-operator holds {extra}")
    kept = (
        f"; a dependency's own tests: {', '.join(probe['dependency_tests'])}"
        if probe["dependency_tests"]
        else ""
    )
    product = ", ".join(t for t in tops if not t.startswith(".."))
    return f"controlplane-operator installs {product}; no pip, compiler, wheel or project tests{kept}"


async def check_started(world: World, container: Container) -> str:
    probes = f"http://127.0.0.1:{container.ports.probes}"
    last = (0, "")

    async def ready() -> bool:
        nonlocal last
        if not await container.running():
            raise CheckFailed(
                f"the container exited before it was ready; its log:\n          {await container.log_tail()}"
            )
        last = await get(f"{probes}/readyz")
        return last[0] == 200

    try:
        took = await until(ready, READY_WITHIN, "")
    except CheckFailed as err:
        if str(err):
            raise
        raise CheckFailed(
            f"/readyz answered {last[0] or 'nothing'} for {READY_WITHIN:g} s "
            f"({' '.join(last[1].split())[:200]}); "
            f"{await container.complaints()}"
        ) from None
    healthz = await get(f"{probes}/healthz")
    if healthz[0] != 200:
        raise CheckFailed(f"/healthz answered {healthz[0]}: {healthz[1][:200]}")
    sa, certs = SERVICE_ACCOUNT_PATH, world.pod.cert_mount
    out = await podman("exec", container.name, "python3", "-c", PROCESS_PROBE, sa, certs)
    facts = json.loads(out.strip().splitlines()[-1])
    wrong = []
    if (facts["uid"], facts["gid"]) != (str(world.pod.user), str(world.pod.group)):
        wrong.append(f"runs as {facts['uid']}:{facts['gid']}, the pod as {world.pod.user}:{world.pod.group}")
    if int(facts["capeff"], 16) != 0:
        wrong.append(f"has capabilities {facts['capeff']}")
    if facts["nnp"] != "1":
        wrong.append("may gain new privileges (NoNewPrivs 0)")
    root = [rw for point, rw, _ in facts["mounts"] if point == "/"]
    if root != [False]:
        wrong.append("its root filesystem is writable")
    extra = [
        f"{point} ({fstype})"
        for point, rw, fstype in facts["mounts"]
        if rw
        and point not in world.pod.writable_mounts
        and point not in ENGINE_WRITABLE
        and fstype not in ENGINE_FILESYSTEMS
        and not point.startswith("/proc/")
    ]
    if extra:
        wrong.append(f"writable paths the pod does not have: {', '.join(extra)}")
    if facts["home_writable"]:
        wrong.append(f"HOME ({facts['home']}) is writable")
    if facts["listing"][sa] != ["ca.crt", "namespace", "token"]:
        wrong.append(f"{sa} holds {facts['listing'][sa]}")
    if facts["listing"][certs] != ["tls.crt", "tls.key"]:
        wrong.append(f"{certs} holds {facts['listing'][certs]}")
    if wrong:
        raise CheckFailed("; ".join(wrong))
    return (
        f"ready in {took:.1f} s as {facts['uid']}:{facts['gid']}, CapEff 0, NoNewPrivs 1, root read-only, "
        f"writable only {', '.join(world.pod.writable_mounts)} (and the engine's /dev, /proc), "
        f"HOME={facts['home']} not writable"
    )


async def check_loop(container: Container) -> str:
    logs = await container.logs()
    for line in logs.splitlines():
        if "starting controlplane-operator on the" in line:
            if "on the uvloop event loop" in line:
                return "the running process says: uvloop"
            raise CheckFailed(f"the process runs on another loop than uvloop: {line.strip()[:300]}")
    raise CheckFailed("the operator's start line (naming its event loop) is not in its log")


async def check_metrics(world: World, container: Container) -> str:
    binding = yaml.safe_load((REPO / "config" / "prometheus" / "metrics_reader_binding.yaml").read_text())
    (scraper,) = binding["subjects"]
    with contextlib.suppress(KubectlError):
        await world.kubectl("create", "serviceaccount", scraper["name"], "-n", scraper["namespace"])
    bound = (await world.kubectl("create", "token", scraper["name"], "-n", scraper["namespace"])).strip()
    unbound = (await world.kubectl("create", "token", UNBOUND, "-n", "monitoring")).strip()
    url = f"https://127.0.0.1:{container.ports.metrics}/metrics"
    wrong, seen = [], []
    for who, token, expected in (
        ("without a token", None, 401),
        (f"as monitoring/{UNBOUND} (no binding)", unbound, 403),
        (f"as {scraper['namespace']}/{scraper['name']} (config/prometheus's binding)", bound, 200),
    ):
        status, body = await get(url, token)
        seen.append(str(status))
        if status != expected:
            wrong.append(f"{who}: {status or 'no answer'} (expected {expected}) {body.strip()[:160]}")
    if wrong:
        raise CheckFailed("; ".join(wrong))
    return f"answers {'/'.join(seen)}"


async def check_webhook(world: World, container: Container, tour: Tour) -> str:
    assert world.webhook_ca is not None
    port = free_port() if world.inject == "webhook-port-closed" else container.ports.webhook
    await world.apply(*webhook_configurations(port, world.webhook_ca.cert_pem))
    manifest = tour.manifest()
    manifest["spec"]["replicas"] = 4
    try:
        await world.kubectl("create", "-f", "-", stdin=yaml.safe_dump(manifest))
    except KubectlError as err:
        message = str(err)
        if "denied the request" in message and "vcontrolplane.cpo.dev" in message:
            return f"kubectl: {message.strip()[:200]}"
        if "failed calling webhook" in message:
            raise CheckFailed(
                f"the API server could not call the webhook at port {port}: {message[:300]}"
            ) from None
        raise CheckFailed(f"refused, but not by the validating webhook: {message[:300]}") from None
    await world.kubectl("delete", "controlplane", manifest["metadata"]["name"], "-n", CHECK_NAMESPACE)
    raise CheckFailed("a ControlPlane of replicas: 4 was admitted")


async def check_scaling(tour: Tour, observer: Observer) -> str:
    async with observer:
        started = time.monotonic()
        try:
            await tour.run(("bootstrap", "scale-out", "scale-in"))
        except StepFailed as err:
            raise CheckFailed(f"step {tour.records[-1].name}: {err}") from None
        took = time.monotonic() - started
    monitor = observer.monitor
    if monitor is None or not monitor.samples:
        raise CheckFailed("the quorum monitor took no sample")
    losses = quorum_losses(monitor.samples)
    if losses:
        raise CheckFailed(f"quorum lost {len(losses)} time(s) (samples {losses})")
    steps = ", ".join(f"{r.name} {r.duration:.0f} s" for r in tour.records if r.duration is not None)
    return f"{steps} ({took:.0f} s); {len(monitor.samples)} quorum samples, never lost"


async def check_leader_election(world: World, results: Results, first: Container, client: Any) -> str:
    """A second container; SIGTERM the leader (also check c's exit), restart it, SIGKILL the other."""
    second = await world.start_container("cpo-image-check-2")
    await check_started_quietly(second)

    async def holder_is(container: Container) -> bool:
        return (await world.lease_holder(client)).startswith(f"{container.name}_")

    await until(lambda: holder_is(first), 30, f"{first.name} does not hold the Lease")
    # SIGTERM of the leader: the other leads within 2 s; the container exits 0 within the grace period.
    started = time.monotonic()
    await podman("kill", "--signal", "TERM", first.name)
    try:
        await until(lambda: holder_is(second), 10, "")
        handover = time.monotonic() - started  # from the signal, not from the first poll
    except CheckFailed:
        handover = -1.0
    code = await exited(first, world.pod.grace - (time.monotonic() - started))
    stopped = time.monotonic() - started
    if code == 0:
        results.record("c", True, f"SIGTERM: exit 0 after {stopped:.1f} s (grace {world.pod.grace} s)")
    else:
        results.record("c", False, f"SIGTERM: exit {code} after {stopped:.1f} s (grace {world.pod.grace} s)")
    if handover < 0:
        raise CheckFailed(f"after SIGTERM of the leader, {second.name} did not lead within 10 s")
    if handover > 2:
        raise CheckFailed(f"after SIGTERM of the leader, {second.name} led after {handover:.2f} s (> 2 s)")
    # SIGKILL of the leader: the other takes the Lease once it expired.
    await first.remove()
    world.containers.remove(first)
    third = await world.start_container("cpo-image-check-3")
    await check_started_quietly(third)
    lease = await client.get(
        "coordination.k8s.io/v1", "Lease", "controlplane-operator.cpo.dev", world.pod.namespace
    )
    bound = float(lease["spec"]["leaseDurationSeconds"]) + DEFAULT_RETRY_PERIOD + 2
    started = time.monotonic()
    await podman("kill", "--signal", "KILL", second.name)
    try:
        await until(lambda: holder_is(third), bound + 10, "")
    except CheckFailed:
        raise CheckFailed(
            f"after SIGKILL of the leader, {third.name} did not lead within {bound + 10:g} s"
        ) from None
    takeover = time.monotonic() - started
    if takeover > bound:
        raise CheckFailed(
            f"after SIGKILL of the leader, {third.name} led after {takeover:.1f} s (> {bound:g} s)"
        )
    return (
        f"SIGTERM: the other led after {handover:.2f} s; SIGKILL: after {takeover:.1f} s (bound {bound:g} s)"
    )


async def check_started_quietly(container: Container) -> None:
    async def ready() -> bool:
        return (await get(f"http://127.0.0.1:{container.ports.probes}/readyz"))[0] == 200

    try:
        await until(ready, READY_WITHIN, "")
    except CheckFailed:
        raise CheckFailed(f"{container.name} not ready: {await container.log_tail()}") from None


async def exited(container: Container, within: float) -> int | str:
    try:
        code, out, _ = await run("podman", "wait", container.name, limit=max(within, 0.1))
    except TimeoutError:
        return f"none (still running after {within:.0f} s)"
    return int(out.strip()) if code == 0 and out.strip().lstrip("-").isdigit() else f"unknown ({out.strip()})"


# ----------------------------------------------------------------------------------- main


async def attempt(results: Results, key: str, check: Awaitable[str]) -> bool:
    started = time.monotonic()
    try:
        results.record(key, True, await check)
    except CheckFailed as err:
        results.record(key, False, str(err))
    except (KubectlError, OSError, TimeoutError, aiohttp.ClientError) as err:
        results.record(key, False, f"{type(err).__name__}: {err}")
    ok = results.outcomes[key][0]
    print(f"  {key}. {'PASS' if ok else 'FAIL'} ({time.monotonic() - started:.0f} s)", flush=True)
    return ok


async def main_async(image: str, inject: str | None, keep: Path | None) -> int:
    from runtime.client import Client

    results = Results()
    size = int((await podman("image", "inspect", "--format", "{{.Size}}", image)).strip())
    print(f"image {image}: {size / 1e6:.0f} MB", flush=True)
    if inject:
        print(f"injected fault: {inject}", flush=True)
    await attempt(results, "a", check_contents(image))
    directory = Path(tempfile.mkdtemp(prefix="cpo-image-check-"))
    world = World(image, inject, directory)
    for name in ("cpo-image-check-1", "cpo-image-check-2", "cpo-image-check-3"):
        await run("podman", "rm", "--force", "--time", "0", name)
    try:
        print("starting cpo dev-apiserver --enforce-rbac and cpo localmachine on this machine", flush=True)
        await world.start()
        first = await world.start_container("cpo-image-check-1")
        if not await attempt(results, "b", check_started(world, first)):
            for key in "cdefg":
                results.record(key, False, "not run: the container did not start as the pod (b)")
            return report(results)
        await attempt(results, "c", check_loop(first))
        await attempt(results, "d", check_metrics(world, first))
        async with await Client.from_kubeconfig(str(world.kubeconfig)) as client:
            observer = Observer(client, CHECK_NAMESPACE)
            tour = Tour(world.kubeconfig, CHECK_NAMESPACE, observer, replicas=3, fast=True, step_budget=240)
            await attempt(results, "e", check_webhook(world, first, tour))
            await attempt(results, "f", check_scaling(tour, observer))
            await attempt(results, "g", check_leader_election(world, results, first, client))
        if "c" in results.outcomes and "SIGTERM" not in results.outcomes["c"][1]:
            results.record("c", False, "the SIGTERM half did not run (see g)")
        return report(results)
    finally:
        await world.stop()
        keep_logs(directory, keep)


def keep_logs(directory: Path, keep: Path | None) -> None:
    """Copy the host processes' logs to ``keep`` (when given), then remove the world's folder."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        for log in directory.glob("*.log"):
            (keep / log.name).write_bytes(log.read_bytes())
    shutil.rmtree(directory, ignore_errors=True)


def report(results: Results) -> int:
    print("\n".join(results.summary()), flush=True)
    passed = sum(ok for ok, _ in results.outcomes.values())
    print(f"{passed} of {len(CHECKS)} checks passed", flush=True)
    return 0 if results.ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hack.imagecheck", description=__doc__.split("\n\n")[0])
    parser.add_argument("image", help="the image to check, e.g. localhost/controlplane-operator:dev")
    parser.add_argument(
        "--inject", choices=INJECTIONS, help="break one thing on purpose (see the module's doc)"
    )
    parser.add_argument("--keep-logs", type=Path, metavar="DIR", help="copy the host processes' logs here")
    args = parser.parse_args(argv)
    return asyncio.run(main_async(args.image, args.inject, args.keep_logs))


if __name__ == "__main__":
    sys.exit(main())
