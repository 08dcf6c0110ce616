"""The operator's memory with thousands of worker Nodes and Machines in the cluster, against none.

Not part of the test run. ``cpo run`` caches only control-plane Machines and Nodes (server-side
label selectors, shared by every controller), so worker objects must cost it nothing. This starts
``cpo dev-apiserver`` with the project's CRDs, then ``cpo run --no-webhooks`` twice in its own
process: once on an empty cluster, once after ``--workers`` worker Nodes and as many worker
Machines were created (plus 3 control-plane Machines and Nodes each time, their Nodes labelled
as kubeadm, OpenShift 4 and older clusters label them: both of the operator's Node scopes hold
some). It reads each
operator's RSS (``/proc/<pid>/status``) once ``/readyz`` passes and the process has idled for
``--settle`` seconds. Run::

    .venv/bin/python -m bench.operator_rss [--workers 5000]

Target: the RSS with the workers present stays within 10 % of the RSS without them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp

from runtime.client import JSON, Client

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "openshift-machine-api"
MACHINE_API = "machine.openshift.io/v1beta1"
ROLE = "machine.openshift.io/cluster-api-machine-role"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def apiserver(workdir: Path) -> AsyncIterator[Path]:
    kubeconfig = workdir / "kubeconfig"
    log = (workdir / "apiserver.log").open("wb")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cli",
        "dev-apiserver",
        "--kubeconfig-out",
        str(kubeconfig),
        "--crd",
        str(ROOT / "config" / "crd"),
        "--crd",
        str(ROOT / "config" / "machine-api"),
        stdout=log,
        stderr=log,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        deadline = time.monotonic() + 60
        while not kubeconfig.exists():
            if time.monotonic() > deadline or proc.returncode is not None:
                raise SystemExit(f"the API server did not start; see {workdir / 'apiserver.log'}")
            await asyncio.sleep(0.1)  # allow-sleep: poll for the kubeconfig the server writes when ready
        yield kubeconfig
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        log.close()


def machine(name: str, role: str) -> JSON:
    return {
        "apiVersion": MACHINE_API,
        "kind": "Machine",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {ROLE: role}},
        "spec": {
            "providerSpec": {"value": {"kind": "AWSMachineProviderConfig", "instanceType": "m6i.xlarge"}}
        },
    }


CONTROL_PLANE_ROLES = (
    ("node-role.kubernetes.io/control-plane",),  # kubeadm since 1.24
    ("node-role.kubernetes.io/master", "node-role.kubernetes.io/control-plane"),  # OpenShift 4
    ("node-role.kubernetes.io/master",),  # older clusters
)
"""How the control-plane Nodes are labelled, one style each: the operator watches both role labels."""


def node(name: str, master: bool, index: int = 0) -> JSON:
    labels = {"kubernetes.io/hostname": name}
    roles = (
        CONTROL_PLANE_ROLES[index % len(CONTROL_PLANE_ROLES)]
        if master
        else ("node-role.kubernetes.io/worker",)
    )
    labels.update(dict.fromkeys(roles, ""))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"machine.openshift.io/machine": f"{NAMESPACE}/{name}"},
        },
    }


async def create_all(client: Client, objects: list[JSON], concurrency: int = 16) -> None:
    queue: asyncio.Queue[JSON] = asyncio.Queue()
    for obj in objects:
        queue.put_nowait(obj)

    async def worker() -> None:
        while not queue.empty():
            await client.create(queue.get_nowait())

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def rss_of(pid: int) -> int:
    """Resident set size of ``pid`` in bytes (``VmRSS``)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise SystemExit(f"no VmRSS in /proc/{pid}/status")


async def operator_rss(kubeconfig: Path, workdir: Path, settle: float, label: str) -> int:
    port = _free_port()
    log = (workdir / f"operator-{label}.log").open("wb")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cli",
        "run",
        "--kubeconfig",
        str(kubeconfig),
        "--no-webhooks",
        "--no-leader-elect",
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        f"127.0.0.1:{port}",
        "--log-level",
        "WARNING",
        stdout=log,
        stderr=log,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        deadline = time.monotonic() + 120
        async with aiohttp.ClientSession() as http:
            while True:
                with contextlib.suppress(aiohttp.ClientError):
                    async with http.get(f"http://127.0.0.1:{port}/readyz") as response:
                        if response.status == 200:
                            break
                if time.monotonic() > deadline or proc.returncode is not None:
                    raise SystemExit(f"the operator did not get ready; see {workdir}/operator-{label}.log")
                await asyncio.sleep(0.2)  # allow-sleep: poll /readyz
        await asyncio.sleep(settle)  # allow-sleep: let the process reach its steady state
        return rss_of(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        log.close()


async def main_async(workers: int, settle: float) -> None:
    with tempfile.TemporaryDirectory(prefix="cpo-rss-") as folder:
        workdir = Path(folder)
        async with apiserver(workdir) as kubeconfig, await Client.from_kubeconfig(str(kubeconfig)) as client:
            await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
            masters = [f"master-{i}" for i in range(3)]
            await create_all(
                client,
                [machine(n, "master") for n in masters] + [node(n, True, i) for i, n in enumerate(masters)],
            )
            empty = await operator_rss(kubeconfig, workdir, settle, "empty")
            started = time.monotonic()
            names = [f"worker-{i:05d}" for i in range(workers)]
            await create_all(client, [machine(n, "worker") for n in names] + [node(n, False) for n in names])
            created = time.monotonic() - started
            stored = len((await client.list(MACHINE_API, "Machine", NAMESPACE))["items"])
            stored_nodes = len((await client.list("v1", "Node"))["items"])
            loaded = await operator_rss(kubeconfig, workdir, settle, "workers")
    growth = (loaded - empty) / empty
    print(f"created {workers} worker Machines and {workers} worker Nodes in {created:.1f} s")
    print(f"the API server holds {stored} Machines and {stored_nodes} Nodes")
    print(f"operator RSS, control plane only:        {empty / 2**20:7.1f} MiB")
    print(f"operator RSS, with {workers} workers each:  {loaded / 2**20:7.1f} MiB ({growth:+.1%})")
    print(f"target ≤ +10 %: {'met' if growth <= 0.10 else 'MISSED'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workers", type=int, default=5000, help="worker Nodes and worker Machines each")
    parser.add_argument(
        "--settle", type=float, default=5.0, help="seconds the operator idles before RSS is read"
    )
    args = parser.parse_args()
    asyncio.run(main_async(args.workers, args.settle))


if __name__ == "__main__":
    main()
