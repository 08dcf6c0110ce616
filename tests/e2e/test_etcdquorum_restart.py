"""Restart safety of the etcd-quorum-hook controller: ``cpo run`` SIGKILLed in the middle of a replacement.

The operator runs as a real process (``python -m cli run``) and reaches the API server
through a TCP proxy the test can cut; the local provider runs in this process with real etcd
members. A replacement of one of three voters is interrupted twice, at the two points a crash
can leave behind:

1. the replacement promoted, the old member not removed yet;
2. the old member removed, the old Machine's hook not removed yet (the operator can still
   reach etcd but no longer the API server, so it removes the member and cannot take the hook
   off, and is killed right then).

Each time a new process finishes the job, and the cluster ends as an uninterrupted replacement
leaves it: the three other members, all voters, the old Machine gone. A quorum monitor watches
the whole test: quorum is never lost, and once bootstrapped there are never fewer than 3 or more
than 4 voters.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from api.machine import API_VERSION
from controllers.etcd.client import EtcdClient
from controllers.etcdquorum import HOOK_OWNER
from demo.monitor import QuorumMonitor, QuorumSample
from runtime.client import Client
from runtime.envtest import Environment, write_kubeconfig
from tests.support.etcdquorum import (
    client_url,
    controlplane,
    cp_machine,
    etcd_condition,
    hook_owner,
    machine_timeline,
    start_operator,
)
from tests.support.localmachine import (
    get_machine,
    provider_options,
    running_provider,
    set_fault,
)
from tests.support.poll import eventually
from tests.support.tcpproxy import TCPProxy, proxied_kubeconfig, server_address

pytestmark = pytest.mark.slow

START_WITHIN = 90.0
"""A cold ``cpo run`` on a loaded 2-core machine imports everything before its first pass."""


async def _latest(monitor: QuorumMonitor, **expected: object) -> QuorumSample | None:
    if not monitor.samples:
        return None
    sample = monitor.samples[-1]
    return sample if all(getattr(sample, k) == v for k, v in expected.items()) else None


async def test_killing_cpo_run_mid_replacement_ends_in_the_same_final_state(
    env: Environment, kube: Client, namespace: str, provider_state_dir: Path, tmp_path: Path
) -> None:
    prefix = f"rs{secrets.token_hex(2)}"
    names = [f"{prefix}-m{i}" for i in range(4)]
    m0, m1, m2, m3 = names
    cp_name = f"{prefix}-cp"
    host, port, _ = server_address(env.kubeconfig)
    proxy = TCPProxy(host, port)
    operator_kubeconfig = write_kubeconfig(
        proxied_kubeconfig(env.kubeconfig, await proxy.start()), tmp_path / "operator.kubeconfig"
    )
    log = tmp_path / "operator.log"
    operator = await start_operator(operator_kubeconfig, log)
    await kube.create(controlplane(cp_name, namespace, 3))
    try:
        async with (
            machine_timeline(kube, namespace) as timeline,
            running_provider(kube, namespace, provider_options(provider_state_dir)),
        ):
            await kube.create(cp_machine(m0, namespace, zone="zone-a"))
            url = await client_url(kube, m0, namespace)
            await kube.create(cp_machine(m1, namespace, zone="zone-b"))
            await kube.create(cp_machine(m2, namespace, zone="zone-c"))
            async with QuorumMonitor([url]) as monitor, EtcdClient([url]) as etcd:
                await eventually(
                    lambda: _latest(monitor, voters=3, learners=0),
                    timeout=START_WITHIN + 60,
                    message=f"cpo run promoted two learners; log:\n{operator.log()[-3000:]}",
                )
                bootstrapped = monitor.mark()

                # --- 1. the replacement joins and is promoted; cpo run dies before the old member goes.
                await kube.create(cp_machine(m3, namespace, zone="zone-a"))
                sample = await eventually(
                    lambda: _latest(monitor, voters=4, learners=0), timeout=60, message=f"{m3} promoted"
                )
                await operator.kill()
                leader = sample.leader
                # The old machine and the member that will be frozen are not the leader, so that no
                # election (a second or two without answers, not a quorum loss) muddies the record.
                old, frozen = [n for n in (m0, m1, m2, m3) if n != leader][:2]
                await kube.delete(API_VERSION, "Machine", old, namespace)
                await set_fault(kube, frozen, namespace, "stop")
                await eventually(
                    lambda: _latest(monitor, healthy_voters=3), timeout=15, message=f"{frozen} stopped"
                )

                # A new process takes over: with a voter frozen, removing the old member would leave
                # 2 healthy voters, so it waits and says so, naming the frozen member.
                operator = await start_operator(operator_kubeconfig, log)

                async def waiting() -> bool:
                    message = (await etcd_condition(kube, cp_name, namespace)).get("message", "")
                    return "HealthyVotersBelowDesired" in message and frozen in message

                await eventually(
                    waiting,
                    timeout=START_WITHIN,
                    message=f"the wait is reported; log:\n{operator.log()[-3000:]}",
                )
                assert any(m.name == old for m in await etcd.member_list())

                # --- 2. cpo run loses the API server; the frozen member comes back, so it removes the
                # old member from etcd but cannot take the hook off; it dies right then.
                proxy.refuse = True
                proxy.cut()
                await set_fault(kube, frozen, namespace, None)
                await eventually(
                    lambda: _gone_from(etcd, old),
                    timeout=60,
                    message=f"{old}'s member removed; log:\n{operator.log()[-3000:]}",
                )
                await operator.kill()
                assert hook_owner(await get_machine(kube, old, namespace)) == HOOK_OWNER
                proxy.refuse = False

                # A third process removes the hook; the provider then drains and deletes the Machine.
                operator = await start_operator(operator_kubeconfig, log)
                await eventually(
                    lambda: old in timeline.gone,
                    timeout=START_WITHIN,
                    message=f"{old} gone; log:\n{operator.log()[-3000:]}",
                )
                members = await etcd.member_list()
                survivors = [n for n in names if n != old]
                assert sorted(m.name for m in members) == sorted(survivors)
                assert not any(m.is_learner for m in members)
                for name in survivors:
                    assert hook_owner(await get_machine(kube, name, namespace)) == HOOK_OWNER
                assert timeline.hook_removed[old] < timeline.gone[old]
                monitor.assert_never_lost_quorum()
                assert monitor.low("voters", since=bootstrapped) >= 3
                assert monitor.peak("voters") <= 4
    finally:
        await operator.kill()
        await proxy.stop()


async def _gone_from(etcd: EtcdClient, name: str) -> bool:
    return all(m.name != name for m in await etcd.member_list())
