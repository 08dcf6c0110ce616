"""A provider killed mid-way and restarted re-attaches to its etcd members: no duplicates, no orphans.

The provider runs as a real ``cpo localmachine`` subprocess, so SIGKILL is a true crash: no
``finally`` runs and its members (started with ``die_with_parent`` off) are left to the new one.
"""

from __future__ import annotations

import secrets
import signal
from datetime import UTC, datetime
from pathlib import Path

import pytest

from api.machine import API_VERSION
from controllers.etcd.client import EtcdClient, Unavailable, UnhealthyCluster
from providers.localmachine import ETCD_CLIENT_URL_ANNOTATION
from providers.localmachine.etcd_process import EtcdSupervisor
from runtime.client import Client
from tests.integration.conftest import etcd_options
from tests.support.etcd import AddAnswerLost, etcd_processes_for, promote_when_in_sync
from tests.support.localmachine import (
    HEARTBEAT,
    get_machine,
    get_node,
    ready_condition,
    recorded_processes,
)
from tests.support.localmachine import machine as machine_manifest
from tests.support.poll import eventually
from tests.support.processes import ChildProcess, cpo, start_process

pytestmark = pytest.mark.slow


async def start_provider(state_dir: Path, kubeconfig: Path, namespace: str, log: Path) -> ChildProcess:
    argv = cpo(
        "localmachine",
        "--state-dir",
        str(state_dir),
        "--kubeconfig",
        str(kubeconfig),
        "--namespace",
        namespace,
        "--heartbeat-period",
        str(HEARTBEAT),
        "--stop-grace-period",
        "3",
        "--join-backoff-max",
        "0.5",
        "--health-timeout",
        "1",
    )
    return await start_process(argv, log_path=log)


def pid_of(state_dir: Path, namespace: str, name: str) -> int:
    pids = etcd_processes_for(state_dir / namespace / name / "data")
    assert len(pids) == 1, f"{name}: expected exactly one etcd process, found {pids}"
    return pids[0]


async def test_a_provider_killed_and_restarted_re_attaches_with_one_process_per_machine(
    kube: Client, namespace: str, provider_state_dir: Path, kubeconfig_path: Path, tmp_path: Path
) -> None:
    prefix = f"lm{secrets.token_hex(3)}"
    m0, m1, m2 = (f"{prefix}-m{i}" for i in range(3))
    log = tmp_path / "provider.log"
    providers: list[ChildProcess] = []

    async def phase_is(name: str, phase: str) -> bool:
        obj = await get_machine(kube, name, namespace)
        return bool(obj and (obj.get("status") or {}).get("phase") == phase)

    try:
        providers.append(await start_provider(provider_state_dir, kubeconfig_path, namespace, log))
        await kube.create(machine_manifest(m0, namespace))
        await eventually(lambda: phase_is(m0, "Running"), timeout=40, message=f"{m0} Running")
        await kube.create(machine_manifest(m1, namespace))
        await eventually(lambda: phase_is(m1, "Running"), timeout=40, message=f"{m1} Running")
        before = {name: pid_of(provider_state_dir, namespace, name) for name in (m0, m1)}

        providers[0].send_signal(signal.SIGKILL)
        await providers[0].exited(within=10)
        # The members outlive the provider, as machines outlive a crashed cloud controller.
        assert {name: pid_of(provider_state_dir, namespace, name) for name in (m0, m1)} == before

        # Work piles up while no provider runs: a new Machine, and m1 promoted (by "the hook controller").
        await kube.create(machine_manifest(m2, namespace))
        first = await get_machine(kube, m0, namespace)
        assert first is not None
        async with EtcdClient([first["metadata"]["annotations"][ETCD_CLIENT_URL_ANNOTATION]]) as etcd:
            learner = next(m for m in await etcd.member_list() if m.name == m1)
            assert learner.is_learner
            await promote_when_in_sync(etcd, learner.id)
            # What a provider killed while m2's member add was on the wire leaves: the member
            # added in etcd, its answer lost, the join recorded as still adding.
            dead_provider = EtcdSupervisor(provider_state_dir / namespace, etcd_options())

            async def added_answer_lost() -> bool:
                try:
                    await dead_provider.join(m2, AddAnswerLost(etcd, reaches=True))
                except UnhealthyCluster:  # within 5 s of the promotion: etcd adds nothing yet
                    return False
                except Unavailable:
                    return True
                raise AssertionError("the add answered")

            await eventually(added_answer_lost, timeout=20, message=f"{m2}'s member added, answer lost")
            orphan = next(m for m in await etcd.member_list() if not m.started)

            restarted_at = datetime.now(UTC).replace(microsecond=0)
            providers.append(await start_provider(provider_state_dir, kubeconfig_path, namespace, log))
            await eventually(
                lambda: phase_is(m2, "Running"), timeout=40, message=f"{m2} joined after the restart"
            )
            members = {m.name: m for m in await etcd.member_list()}
            assert sorted(members) == sorted([m0, m1, m2])
            assert members[m2].is_learner and not members[m1].is_learner
            assert members[m2].id == orphan.id  # the member the dead provider added, started

        after = {name: pid_of(provider_state_dir, namespace, name) for name in (m0, m1, m2)}
        assert {name: after[name] for name in (m0, m1)} == before, "re-attached, not restarted"
        assert len(recorded_processes(provider_state_dir)) == 3

        async def heartbeats_resumed() -> bool:
            for name in (m0, m1, m2):
                ready = ready_condition(await get_node(kube, name))
                beat = ready.get("lastHeartbeatTime")
                if ready.get("status") != "True" or beat is None:
                    return False
                if datetime.fromisoformat(beat.replace("Z", "+00:00")) < restarted_at:
                    return False
            return True

        await eventually(heartbeats_resumed, timeout=10, message="the new provider heartbeats every Node")

        # The new provider also stops members it did not start itself.
        for name in (m0, m1, m2):
            await kube.delete(API_VERSION, "Machine", name, namespace)

        async def all_gone() -> bool:
            for name in (m0, m1, m2):
                if await get_machine(kube, name, namespace) is not None or await get_node(kube, name):
                    return False
            return not recorded_processes(provider_state_dir) and not any(
                etcd_processes_for(provider_state_dir / namespace / name / "data") for name in (m0, m1, m2)
            )

        await eventually(all_gone, timeout=20, message="machines deleted and their members stopped")
        providers[-1].send_signal(signal.SIGTERM)
        assert await providers[-1].exited(within=15) == 0
    except BaseException:
        print(log.read_text(errors="replace")[-5000:] if log.exists() else "(no provider log)")
        raise
    finally:
        for process in providers:
            await process.kill()
