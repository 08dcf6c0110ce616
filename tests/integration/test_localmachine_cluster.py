"""The localmachine provider builds a real etcd cluster from Machines: bootstrap, learners, Nodes.

The provider never promotes: the test promotes each learner with the etcd client, as the
etcd-quorum-hook controller will.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections import defaultdict
from pathlib import Path

import pytest

from api.machine import API_VERSION
from controllers.etcd.client import EtcdClient, LearnerNotInSync
from providers.localmachine import (
    CONDITION_ETCD_MEMBER,
    ETCD_CLIENT_URL_ANNOTATION,
    ETCD_MEMBER_ID_ANNOTATION,
    ETCD_PEER_URL_ANNOTATION,
    FINALIZER,
    REASON_WAITING_FOR_LEARNER,
)
from providers.localmachine.etcd_process import EtcdProcessOptions
from runtime.client import Client
from tests.support.etcd import promote_when_in_sync
from tests.support.localmachine import (
    HEARTBEAT,
    get_machine,
    get_node,
    machine,
    machine_condition,
    provider_options,
    ready_condition,
    running_provider,
    set_fault,
)
from tests.support.poll import eventually, holds_for

pytestmark = pytest.mark.slow


def learner_limit() -> tuple[EtcdProcessOptions, int]:
    """etcd options allowing two learners where the binary can (etcd ≥ 3.6), and the limit in force."""
    try:
        EtcdProcessOptions(max_learners=2).with_defaults()
    except ValueError:
        return EtcdProcessOptions(), 1  # etcd 3.5: one learner at a time, hard-coded
    return EtcdProcessOptions(max_learners=2), 2


async def record_phases(client: Client, namespace: str, phases: dict[str, list[str]]) -> None:
    """Append every new ``status.phase`` of every Machine in ``namespace``, in the order written."""
    async for event in client.watch(API_VERSION, "Machine", namespace, timeout_seconds=300):
        obj = event.get("object") or {}
        name = (obj.get("metadata") or {}).get("name")
        phase = (obj.get("status") or {}).get("phase")
        if name and phase and (not phases[name] or phases[name][-1] != phase):
            phases[name].append(phase)


async def test_three_machines_become_a_three_member_cluster_learners_joining_one_at_a_time(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    etcd_options, limit = learner_limit()
    prefix = f"lm{secrets.token_hex(3)}"
    m0, m1, m2 = (f"{prefix}-m{i}" for i in range(3))
    phases: dict[str, list[str]] = defaultdict(list)
    watcher = asyncio.create_task(record_phases(kube, namespace, phases))
    options = provider_options(provider_state_dir, etcd=etcd_options)
    try:
        async with running_provider(kube, namespace, options):
            await kube.create(machine(m0, namespace, zone="zone-a"))

            async def running(name: str) -> bool:
                obj = await get_machine(kube, name, namespace)
                return bool(obj and (obj.get("status") or {}).get("phase") == "Running")

            await eventually(lambda: running(m0), timeout=30, message=f"{m0} Running")
            first = await get_machine(kube, m0, namespace)
            assert first is not None
            assert first["spec"]["providerID"] == f"local:///{m0}"
            assert FINALIZER in first["metadata"]["finalizers"]
            assert first["status"]["addresses"] == [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": m0},
            ]
            assert first["status"]["nodeRef"]["name"] == m0
            annotations = first["metadata"]["annotations"]
            client_url = annotations[ETCD_CLIENT_URL_ANNOTATION]
            assert annotations[ETCD_PEER_URL_ANNOTATION].startswith("http://127.0.0.1:")
            node = await get_node(kube, m0)
            assert node is not None
            labels = node["metadata"]["labels"]
            assert labels["node-role.kubernetes.io/master"] == ""
            assert labels["node-role.kubernetes.io/control-plane"] == ""
            assert labels["topology.kubernetes.io/zone"] == "zone-a"
            assert node["spec"]["providerID"] == f"local:///{m0}"
            assert first["status"]["nodeRef"]["uid"] == node["metadata"]["uid"]
            await eventually(
                lambda: _ready_is(kube, m0, "True"), timeout=5 * HEARTBEAT, message=f"Node {m0} Ready"
            )

            async with EtcdClient([client_url]) as etcd:
                (only,) = await etcd.member_list()
                assert only.name == m0 and not only.is_learner
                assert f"{only.id:x}" == annotations[ETCD_MEMBER_ID_ANNOTATION]

                await kube.create(machine(m1, namespace, zone="zone-b"))
                await kube.create(machine(m2, namespace, zone="zone-c"))

                async def learners() -> list[str]:
                    return sorted(m.name for m in await etcd.member_list() if m.is_learner and m.name)

                if limit >= 2:
                    # etcd ≥ 3.6 with max_learners=2: both join and wait side by side.
                    await eventually(
                        lambda: _equals(learners(), [m1, m2]), timeout=30, message="two learners at once"
                    )
                    order = [m1, m2]
                else:
                    first_learner = (await eventually(learners, timeout=30, message="a first learner"))[0]
                    waiting = m2 if first_learner == m1 else m1
                    order = [first_learner, waiting]

                    async def waits_for_the_learner_ahead() -> bool:
                        condition = machine_condition(
                            await get_machine(kube, waiting, namespace), CONDITION_ETCD_MEMBER
                        )
                        return condition.get(
                            "reason"
                        ) == REASON_WAITING_FOR_LEARNER and first_learner in condition.get("message", "")

                    await eventually(
                        waits_for_the_learner_ahead,
                        timeout=10,
                        message=f"{waiting} waits for {first_learner}",
                    )
                    # Its Machine names the peer URL it asks etcd to add before etcd has it, so
                    # the etcd-quorum hook can map a member to it the moment etcd adds one.
                    announced = (await get_machine(kube, waiting, namespace))["metadata"]["annotations"]
                    assert announced[ETCD_PEER_URL_ANNOTATION].startswith("http://127.0.0.1:")
                    assert ETCD_MEMBER_ID_ANNOTATION not in announced  # not provisioned yet

                    async def one_learner_and_waiting_still_provisioning() -> bool:
                        obj = await get_machine(kube, waiting, namespace)
                        members = await etcd.member_list()
                        return (
                            obj is not None
                            and obj["status"]["phase"] == "Provisioning"
                            and not obj["spec"].get("providerID")
                            and [m.name for m in members if m.is_learner] == [first_learner]
                            and len(members) == 2
                        )

                    # The provider asks again and again (backoff ≤ 0.5 s); etcd keeps refusing.
                    await holds_for(
                        one_learner_and_waiting_still_provisioning,
                        duration=4 * HEARTBEAT,
                        message=f"{waiting} waits while {first_learner} is a learner",
                    )

                for name in order:
                    await eventually(lambda name=name: running(name), timeout=40, message=f"{name} Running")
                    member = next(m for m in await etcd.member_list() if m.name == name)
                    assert member.is_learner, f"{name} must stay a learner until the test promotes it"
                    await eventually(
                        lambda name=name: _ready_is(kube, name, "True"),
                        timeout=5 * HEARTBEAT,
                        message=f"Node {name} Ready (a learner answers serializable reads)",
                    )
                    await promote_when_in_sync(etcd, member.id)

                members = await etcd.member_list()
                assert sorted(m.name for m in members) == sorted([m0, m1, m2])
                assert not any(m.is_learner for m in members)
                for name, zone in ((m1, "zone-b"), (m2, "zone-c")):
                    node = await get_node(kube, name)
                    assert node is not None
                    assert node["metadata"]["labels"]["topology.kubernetes.io/zone"] == zone
                for name in (m0, m1, m2):
                    assert phases[name] == ["Provisioning", "Provisioned", "Running"], phases[name]
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def test_promoting_a_learner_that_has_fallen_behind_raises_learner_not_in_sync(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    """A learner the ``stop`` fault froze while the cluster moved on cannot be promoted; once the
    fault is removed it catches up and the promotion goes through. (The etcd client tests refuse a
    learner that never started: ``test_promotion_of_a_learner_that_has_not_caught_up_is_refused``.)"""
    prefix = f"lm{secrets.token_hex(3)}"
    m0, m1 = f"{prefix}-m0", f"{prefix}-m1"
    async with running_provider(kube, namespace, provider_options(provider_state_dir)):
        await kube.create(machine(m0, namespace))
        await eventually(
            lambda: _phase_is(kube, m0, namespace, "Running"), timeout=30, message=f"{m0} Running"
        )
        await kube.create(machine(m1, namespace))
        await eventually(
            lambda: _phase_is(kube, m1, namespace, "Running"), timeout=30, message=f"{m1} Running"
        )
        first = await get_machine(kube, m0, namespace)
        assert first is not None
        async with EtcdClient([first["metadata"]["annotations"][ETCD_CLIENT_URL_ANNOTATION]]) as etcd:
            learner = next(m for m in await etcd.member_list() if m.name == m1)
            assert learner.is_learner
            await set_fault(kube, m1, namespace, "stop")
            await eventually(
                lambda: _ready_is(kube, m1, "Unknown"), timeout=2 * HEARTBEAT + 1, message="m1 stopped"
            )
            # Far more entries than the learner has: etcd wants a learner within 10% of the leader's log.
            await _put_keys(etcd.endpoints[0], 200)
            with pytest.raises(LearnerNotInSync):
                await etcd.promote(learner.id)
            await set_fault(kube, m1, namespace, None)
            await eventually(lambda: _ready_is(kube, m1, "True"), timeout=10, message="m1 resumed and Ready")
            members = await promote_when_in_sync(etcd, learner.id)
            assert not any(m.is_learner for m in members)


async def _put_keys(endpoint: str, count: int) -> None:
    import base64

    import aiohttp

    async with aiohttp.ClientSession() as session:
        for index in range(count):
            key = base64.b64encode(f"filler/{index}".encode()).decode()
            async with session.post(f"{endpoint}/v3/kv/put", json={"key": key, "value": key}) as answer:
                assert answer.status == 200, await answer.text()


async def _equals(value: object, expected: object) -> bool:
    return await value == expected  # type: ignore[misc]


async def _ready_is(client: Client, node_name: str, status: str) -> bool:
    return ready_condition(await get_node(client, node_name)).get("status") == status


async def _phase_is(client: Client, name: str, namespace: str, phase: str) -> bool:
    obj = await get_machine(client, name, namespace)
    return bool(obj and (obj.get("status") or {}).get("phase") == phase)
