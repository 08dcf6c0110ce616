"""The provider's realistic mode in a manager of this process: addresses, names, TLS, restart, reuse.

Two Machines become two members, each on a loopback address of its own at 2379/2380, serving
TLS with client-certificate auth; Nodes and members are named after the address; nothing on a
Machine says where its member is. A provider restarted on the same state directory keeps its
block and re-attaches; the address of a deleted Machine is not handed out again at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from api.machine import API_VERSION
from controllers.etcd.client import EtcdClient
from providers.localmachine.etcd_process import recorded_processes
from providers.localmachine.realistic import DEFAULT_CLIENT_SECRET, EtcdPKI
from runtime.client import JSON, Client
from runtime.errors import NotFound
from tests.integration.conftest import etcd_options
from tests.support.etcd import promote_when_in_sync
from tests.support.localmachine import (
    get_machine,
    get_node,
    internal_ip,
    provider_options,
    running,
    running_provider,
)
from tests.support.localmachine import machine as machine_manifest
from tests.support.poll import eventually

pytestmark = pytest.mark.slow


async def mirror_pod(kube: Client, name: str) -> JSON | None:
    try:
        return await kube.get("v1", "Pod", name, "kube-system")
    except NotFound:
        return None


async def posted_mirror_pod(kube: Client, name: str) -> JSON | None:
    """The mirror Pod ``name`` once the provider posted its status."""
    found = await mirror_pod(kube, name)
    return found if ((found or {}).get("status") or {}).get("hostIP") else None


async def test_members_get_addresses_of_their_own_tls_and_cloud_names(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    options = provider_options(provider_state_dir, realistic=True, etcd=etcd_options())
    async with running_provider(kube, namespace, options):
        await kube.create(machine_manifest("m0", namespace))
        first = await running(kube, "m0", namespace)
        pki = EtcdPKI(provider_state_dir)
        client_options = pki.client_options(timeout=5)
        first_url = f"https://{internal_ip(first)}:2379"
        await kube.create(machine_manifest("m1", namespace))

        async def learner() -> int | None:
            async with EtcdClient([first_url], client_options) as etcd:
                members = await etcd.member_list()
            return next((m.id for m in members if m.is_learner), None)

        learner_id = await eventually(learner, timeout=60, message="m1 joined as a learner")
        async with EtcdClient([first_url], client_options) as etcd:
            await promote_when_in_sync(etcd, learner_id)
        second = await running(kube, "m1", namespace)

        addresses = [internal_ip(first), internal_ip(second)]
        assert addresses[0] != addresses[1] and not any(a.startswith("127.0.0.") for a in addresses)
        async with EtcdClient([first_url], client_options) as etcd:
            members = await etcd.member_list()
        for machine in (first, second):
            address = internal_ip(machine)
            node_name = machine["status"]["nodeRef"]["name"]
            assert node_name == "ip-" + address.replace(".", "-")
            node = await get_node(kube, node_name)
            assert node is not None and internal_ip(node) == address
            etcd_pod = await eventually(
                lambda name=node_name: posted_mirror_pod(kube, f"etcd-{name}"),
                timeout=10,
                message=f"the etcd mirror Pod of {node_name}",
            )
            assert etcd_pod["spec"]["nodeName"] == node_name and etcd_pod["status"]["hostIP"] == address
            member = next(m for m in members if m.name == node_name)
            assert member.peer_urls == (f"https://{address}:2380",)
            assert member.client_urls == (f"https://{address}:2379",)
            annotations = machine["metadata"].get("annotations") or {}
            assert not [key for key in annotations if "etcd" in key], annotations
        secret = await kube.get("v1", "Secret", DEFAULT_CLIENT_SECRET, namespace)
        assert set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}
        pids = sorted(p.pid for p in recorded_processes(provider_state_dir))

    # A restarted provider keeps the block and the members: no new process, same addresses.
    async with running_provider(kube, namespace, options):
        await kube.create(machine_manifest("m2", namespace))
        for name, address in zip(("m0", "m1"), addresses, strict=True):
            machine = await running(kube, name, namespace)
            assert internal_ip(machine) == address
        assert set(pids) <= {p.pid for p in recorded_processes(provider_state_dir)}, "a member was restarted"
        await kube.delete(API_VERSION, "Machine", "m1", namespace)

        async def m1_gone() -> bool:
            return await get_machine(kube, "m1", namespace) is None

        await eventually(m1_gone, timeout=60, message="m1 deleted")
        assert await get_node(kube, "ip-" + addresses[1].replace(".", "-")) is None
        assert await mirror_pod(kube, "etcd-ip-" + addresses[1].replace(".", "-")) is None

        async def third_address() -> str | None:
            machine = await get_machine(kube, "m2", namespace)
            status = (machine or {}).get("status") or {}
            found = [a["address"] for a in status.get("addresses") or () if a["type"] == "InternalIP"]
            return found[0] if found else None

        # m2 waits for its learner slot or joins; either way its address is a fresh one.
        address = await eventually(third_address, timeout=60, message="m2 has an address")
        assert address not in addresses
