"""``cpo localmachine --realistic --max-instances-per-domain 1``: one host per failure domain.

The provider runs as a real subprocess against the embedded API server, with real etcd members,
as a user runs it for a ``maxSurge: 0`` rollout: three Machines in three zones run; two more
Machines in zone-a wait in ``Provisioning`` (reason ``WaitingForHost``, no member, no process),
still after a provider crash and restart; once zone-a's first Machine has its member removed
(as the operator does) and is deleted, one of the two runs on the freed host (same address, same
Node name) and the other waits for that one. In the default mode (a provider in this process)
the cap counts the Machines without a failure domain as one pool, and a deleting Machine held by
a lifecycle hook keeps its host until the hook goes.
"""

from __future__ import annotations

import functools
import signal
from pathlib import Path

import pytest

from api.machine import API_VERSION
from controllers.etcd.client import EtcdClient, EtcdClientOptions, LearnerNotInSync, UnhealthyCluster
from providers.localmachine import (
    CONDITION_DRAINABLE,
    CONDITION_ETCD_MEMBER,
    ETCD_CLIENT_URL_ANNOTATION,
    REASON_WAITING_FOR_HOST,
)
from providers.localmachine.hosts import HostPools
from providers.localmachine.realistic import EtcdPKI
from runtime.client import Client
from runtime.jsoncodec import JSON
from tests.integration.conftest import etcd_options
from tests.support.etcd import etcd_processes_for
from tests.support.localmachine import (
    HEARTBEAT,
    get_machine,
    internal_ip,
    machine_condition,
    provider_options,
    running,
    running_provider,
)
from tests.support.localmachine import machine as machine_manifest
from tests.support.poll import eventually
from tests.support.processes import ChildProcess, cpo, start_process

pytestmark = pytest.mark.slow


async def start_provider(state_dir: Path, kubeconfig: Path, namespace: str, log: Path) -> ChildProcess:
    return await start_process(
        cpo(
            "localmachine",
            "--state-dir", str(state_dir),
            "--kubeconfig", str(kubeconfig),
            "--namespace", namespace,
            "--realistic",
            "--max-instances-per-domain", "1",
            "--heartbeat-period", str(HEARTBEAT),
            "--health-timeout", "1",
            "--stop-grace-period", "3",
            "--join-backoff-max", "0.5",
            "--log-format", "json",
        ),
        log_path=log,
    )  # fmt: skip


async def waiting_for_host(client: Client, name: str, namespace: str, *, holder: str) -> JSON | None:
    """The Machine's EtcdMemberStarted condition once it says it waits for ``holder``'s host."""
    condition = machine_condition(await get_machine(client, name, namespace), CONDITION_ETCD_MEMBER)
    if condition.get("reason") != REASON_WAITING_FOR_HOST or holder not in condition.get("message", ""):
        return None
    return condition


async def promote_learners(urls: list[str], options: EtcdClientOptions, voters: int) -> None:
    """Promote learners as they catch up (as the operator does) until ``voters`` members vote."""

    async def attempt() -> bool:
        async with EtcdClient(urls, options) as etcd:
            members = await etcd.member_list()
            for member in members:
                if member.is_learner and member.started:
                    try:
                        await etcd.promote(member.id)
                    except LearnerNotInSync:
                        pass
            members = await etcd.member_list()
        return sum(1 for m in members if not m.is_learner and m.started) == voters

    await eventually(attempt, timeout=90, message=f"{voters} voters")


async def member_removed(urls: list[str], options: EtcdClientOptions, name: str) -> None:
    """Remove the member named ``name`` from etcd, as the operator would, retrying while etcd
    refuses (a cluster that just changed): done once no member has that name."""

    async def removed() -> bool:
        async with EtcdClient(urls, options) as etcd:
            member = next((m for m in await etcd.member_list() if m.name == name), None)
            if member is None:
                return True
            try:
                await etcd.remove(member.id)
            except UnhealthyCluster:
                return False
        return True

    await eventually(removed, timeout=30, message=f"{name}'s member removed")


async def test_a_machine_waits_for_its_domains_host_and_takes_its_address_once_freed(
    kube: Client, namespace: str, provider_state_dir: Path, kubeconfig_path: Path, tmp_path: Path
) -> None:
    providers = [
        await start_provider(provider_state_dir, kubeconfig_path, namespace, tmp_path / "provider.log")
    ]
    try:
        await kube.create(machine_manifest("a1", namespace, zone="zone-a"))
        a1 = await running(kube, "a1", namespace)
        options = EtcdPKI(provider_state_dir).client_options(timeout=5)
        await kube.create(machine_manifest("b1", namespace, zone="zone-b"))
        await kube.create(machine_manifest("c1", namespace, zone="zone-c"))
        urls = [f"https://{internal_ip(a1)}:2379"]
        await promote_learners(urls, options, voters=3)
        b1 = await running(kube, "b1", namespace)
        c1 = await running(kube, "c1", namespace)
        addresses = {internal_ip(m) for m in (a1, b1, c1)}
        assert len(addresses) == 3, addresses

        # Two more for zone-a at once: both wait for its one host.
        await kube.create(machine_manifest("a2", namespace, zone="zone-a"))
        await kube.create(machine_manifest("a3", namespace, zone="zone-a"))
        for name in ("a2", "a3"):
            condition = await eventually(
                functools.partial(waiting_for_host, kube, name, namespace, holder="a1"),
                timeout=30,
                message=f"{name} waits for a1's host",
            )
            assert condition["status"] == "False"
            assert "'zone-a'" in condition["message"] and "all 1 " in condition["message"], condition
            waiting = await get_machine(kube, name, namespace)
            assert waiting is not None and waiting["status"]["phase"] == "Provisioning"
            assert not (provider_state_dir / namespace / name).exists(), f"waiting {name} got an instance"
        async with EtcdClient(urls, options) as etcd:
            assert len(await etcd.member_list()) == 3, "a waiting Machine got a member"

        # A restarted provider counts the hosts in use from its state directory.
        await providers[0].kill()
        providers.append(
            await start_provider(provider_state_dir, kubeconfig_path, namespace, tmp_path / "restarted.log")
        )

        def waited_after_restart() -> bool:
            return any(line.get("reason") == REASON_WAITING_FOR_HOST for line in providers[-1].log_lines())

        await eventually(waited_after_restart, timeout=60, message="the restarted provider keeps a2 waiting")
        assert not (provider_state_dir / namespace / "a2").exists()
        assert not (provider_state_dir / namespace / "a3").exists()

        # The operator's way: a1's member removed from etcd first, then its Machine deleted. Asked
        # through the other members too: a removed member stops serving, so a retry of a removal
        # whose answer was lost must not depend on a1's own endpoint.
        others = [f"https://{internal_ip(await running(kube, n, namespace))}:2379" for n in ("b1", "c1")]
        await member_removed([*others, *urls], options, a1["status"]["nodeRef"]["name"])
        await kube.delete(API_VERSION, "Machine", "a1", namespace)

        # a2 and a3 race for the freed host: one gets it, the other waits for that one.
        async def winner() -> str | None:
            for name in ("a2", "a3"):
                found = await get_machine(kube, name, namespace)
                if (found or {}).get("spec", {}).get("providerID"):
                    return name
            return None

        replacement_name = await eventually(winner, timeout=60, message="a2 or a3 provisioned")
        loser = "a3" if replacement_name == "a2" else "a2"
        replacement = await running(kube, replacement_name, namespace)
        assert internal_ip(replacement) == internal_ip(a1), "the replacement takes the freed host's address"
        assert replacement["status"]["nodeRef"]["name"] == a1["status"]["nodeRef"]["name"]
        assert await get_machine(kube, "a1", namespace) is None
        assert machine_condition(replacement, CONDITION_ETCD_MEMBER)["status"] == "True"
        await eventually(
            lambda: waiting_for_host(kube, loser, namespace, holder=replacement_name),
            timeout=30,
            message=f"{loser} waits for {replacement_name}'s host",
        )
        assert not (provider_state_dir / namespace / loser).exists(), "both got the last host"

        for name in (loser, replacement_name, "b1", "c1"):
            await kube.delete(API_VERSION, "Machine", name, namespace)

        async def all_gone() -> bool:
            for name in ("a2", "a3", "b1", "c1"):
                if await get_machine(kube, name, namespace) is not None:
                    return False
            return not any(
                etcd_processes_for(provider_state_dir / namespace / n / "data")
                for n in ("a2", "a3", "b1", "c1")
            )

        await eventually(all_gone, timeout=30, message="machines deleted and their members stopped")
    except BaseException:
        for process in providers:
            print(process.log_tail())
        raise
    finally:
        for process in providers:
            process.send_signal(signal.SIGTERM)
            await process.stop(grace=10)


async def test_in_the_default_mode_the_cap_counts_the_machines_without_a_domain_and_hooks_hold_a_host(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    options = provider_options(provider_state_dir, etcd=etcd_options(), max_instances_per_domain=1)
    async with running_provider(kube, namespace, options):
        await kube.create(machine_manifest("m0", namespace, zone=None, pre_drain=["tests.io/Hold"]))
        m0 = await running(kube, "m0", namespace)
        await kube.create(machine_manifest("z0", namespace, zone="zone-a"))
        urls = [m0["metadata"]["annotations"][ETCD_CLIENT_URL_ANNOTATION]]
        await promote_learners(urls, EtcdClientOptions(timeout=5), voters=2)
        await running(kube, "z0", namespace)
        await kube.create(machine_manifest("m1", namespace, zone=None))

        async def waiting_for_host() -> JSON | None:
            m1 = await get_machine(kube, "m1", namespace)
            condition = machine_condition(m1, CONDITION_ETCD_MEMBER)
            return condition if condition.get("reason") == REASON_WAITING_FOR_HOST else None

        condition = await eventually(waiting_for_host, timeout=30, message="m1 waits for a host")
        assert "without a failure domain" in condition["message"] and "m0" in condition["message"]
        assert not (provider_state_dir / namespace / "m1").exists()

        await member_removed(urls, EtcdClientOptions(timeout=5), "m0")
        await kube.delete(API_VERSION, "Machine", "m0", namespace)

        # Held by its hook, the deleting m0 is still an instance: it keeps its host.
        async def held() -> bool:
            m0 = await get_machine(kube, "m0", namespace)
            return machine_condition(m0, CONDITION_DRAINABLE).get("reason") == "HookPresent"

        await eventually(held, timeout=30, message="m0 held by its preDrain hook")
        assert HostPools(provider_state_dir, cap=1).holders(namespace, None) == {"m0": None}
        assert not (provider_state_dir / namespace / "m1").exists()
        await kube.patch(
            API_VERSION, "Machine", "m0", {"spec": {"lifecycleHooks": {"preDrain": None}}}, namespace
        )
        await running(kube, "m1", namespace)
        assert await get_machine(kube, "m0", namespace) is None
        for name in ("m1", "z0"):
            await kube.delete(API_VERSION, "Machine", name, namespace)

        async def all_gone() -> bool:
            return all([await get_machine(kube, name, namespace) is None for name in ("m1", "z0")])

        await eventually(all_gone, timeout=30, message="machines deleted")
