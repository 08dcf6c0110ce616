"""The localmachine provider's deletion (lifecycle hooks) and fault injection, with real etcd members."""

from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path

import pytest

from api.machine import API_VERSION
from providers.localmachine import (
    CONDITION_DRAINABLE,
    CONDITION_TERMINABLE,
    FAULT_ANNOTATION,
    FINALIZER,
)
from providers.localmachine.etcd_process import ProcessIdentity
from runtime.client import JSON, Client
from tests.support.etcd import etcd_processes_for
from tests.support.localmachine import (
    HEARTBEAT,
    get_machine,
    get_node,
    machine,
    machine_condition,
    provider_options,
    ready_condition,
    recorded_processes,
    running_provider,
    set_fault,
)
from tests.support.poll import eventually, holds_for

pytestmark = pytest.mark.slow

# "Within two heartbeat periods", plus the API round trips of the observer itself.
TWO_HEARTBEATS = 2 * HEARTBEAT


def data_dir(state_dir: Path, namespace: str, name: str) -> Path:
    return state_dir / namespace / name / "data"


async def running(kube: Client, name: str, namespace: str) -> bool:
    obj = await get_machine(kube, name, namespace)
    return bool(obj and (obj.get("status") or {}).get("phase") == "Running")


async def ready_is(kube: Client, name: str, status: str) -> bool:
    return ready_condition(await get_node(kube, name)).get("status") == status


async def within_two_heartbeats(kube: Client, name: str, status: str, what: str) -> float:
    """Wait for Node ``name`` Ready=``status``; fail unless it came within two heartbeat periods."""
    started = time.monotonic()
    await eventually(lambda: ready_is(kube, name, status), timeout=10, message=what)
    took = time.monotonic() - started
    assert took <= TWO_HEARTBEATS, f"{what} took {took:.2f}s, more than two heartbeats ({TWO_HEARTBEATS}s)"
    return took


async def test_a_deleted_machine_waits_for_its_lifecycle_hooks_then_goes_with_its_process_and_node(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"lm{secrets.token_hex(3)}-m0"
    async with running_provider(kube, namespace, provider_options(provider_state_dir)):
        await kube.create(
            machine(name, namespace, pre_drain=["EtcdQuorumOperator"], pre_terminate=["tests.io/Unmount"])
        )
        await eventually(lambda: running(kube, name, namespace), timeout=30, message=f"{name} Running")
        (process,) = recorded_processes(provider_state_dir)
        assert etcd_processes_for(data_dir(provider_state_dir, namespace, name)) == [process.pid]

        await kube.delete(API_VERSION, "Machine", name, namespace)

        async def blocked_by_pre_drain() -> bool:
            obj = await get_machine(kube, name, namespace)
            condition = machine_condition(obj, CONDITION_DRAINABLE)
            return bool(
                obj
                and obj["status"]["phase"] == "Deleting"
                and condition.get("status") == "False"
                and condition.get("reason") == "HookPresent"
                and "EtcdQuorumOperator" in condition.get("message", "")
            )

        await eventually(blocked_by_pre_drain, timeout=10, message="Drainable=False naming the preDrain hook")
        heartbeat_before = ready_condition(await get_node(kube, name)).get("lastHeartbeatTime")

        async def still_there_and_not_cordoned() -> bool:
            node = await get_node(kube, name)
            obj = await get_machine(kube, name, namespace)
            return (
                process.alive()
                and node is not None
                and not node["spec"].get("unschedulable")
                and ready_condition(node).get("status") == "True"
                and obj is not None
                and FINALIZER in obj["metadata"]["finalizers"]
            )

        # Several heartbeats (and past a whole second, the timestamps' resolution): nothing moves.
        await holds_for(still_there_and_not_cordoned, duration=max(5 * HEARTBEAT, 1.2), message="hook holds")
        # The node keeps reporting while the hook holds the machine.
        assert ready_condition(await get_node(kube, name)).get("lastHeartbeatTime") != heartbeat_before

        await kube.patch(
            API_VERSION, "Machine", name, {"spec": {"lifecycleHooks": {"preDrain": None}}}, namespace
        )

        async def cordoned_and_blocked_by_pre_terminate() -> bool:
            node = await get_node(kube, name)
            condition = machine_condition(await get_machine(kube, name, namespace), CONDITION_TERMINABLE)
            return bool(
                node
                and node["spec"].get("unschedulable") is True
                and condition.get("status") == "False"
                and "tests.io/Unmount" in condition.get("message", "")
            )

        await eventually(
            cordoned_and_blocked_by_pre_terminate, timeout=10, message="cordoned, Terminable=False"
        )
        drainable = machine_condition(await get_machine(kube, name, namespace), CONDITION_DRAINABLE)
        assert drainable.get("status") == "True"
        await holds_for(
            lambda: _alive(process), duration=3 * HEARTBEAT, message="preTerminate keeps the process"
        )

        await kube.patch(
            API_VERSION, "Machine", name, {"spec": {"lifecycleHooks": {"preTerminate": None}}}, namespace
        )

        async def all_gone() -> bool:
            return (
                not process.alive()
                and await get_node(kube, name) is None
                and await get_machine(kube, name, namespace) is None
            )

        await eventually(all_gone, timeout=15, message="process stopped, Node deleted, finalizer released")
        assert not (provider_state_dir / namespace / name).exists(), "its data must be removed"
        assert etcd_processes_for(data_dir(provider_state_dir, namespace, name)) == []


async def _alive(process: ProcessIdentity) -> bool:
    return process.alive()


async def test_faults_make_the_node_not_ready_within_two_heartbeats_and_clear_when_removed(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"lm{secrets.token_hex(3)}-m0"
    async with running_provider(kube, namespace, provider_options(provider_state_dir)):
        await kube.create(machine(name, namespace))
        await eventually(lambda: running(kube, name, namespace), timeout=30, message=f"{name} Running")
        await eventually(lambda: ready_is(kube, name, "True"), timeout=TWO_HEARTBEATS, message="Ready")
        (process,) = recorded_processes(provider_state_dir)

        await set_fault(kube, name, namespace, "notready")
        await within_two_heartbeats(kube, name, "False", "notready → Ready=False")
        assert process.alive() and not process.stopped()
        condition = ready_condition(await get_node(kube, name))
        assert "notready" in condition["message"]
        await set_fault(kube, name, namespace, None)
        await within_two_heartbeats(kube, name, "True", "notready removed → Ready=True")

        await set_fault(kube, name, namespace, "stop")
        await within_two_heartbeats(kube, name, "Unknown", "stop → Ready=Unknown")
        assert process.stopped()
        await set_fault(kube, name, namespace, None)
        await within_two_heartbeats(kube, name, "True", "stop removed → Ready=True")
        assert process.alive() and not process.stopped()

        # stop-member: the member stops, the Node (its kubelet) stays Ready.
        await set_fault(kube, name, namespace, "stop-member")
        await eventually(process.stopped, timeout=TWO_HEARTBEATS, message="stop-member → SIGSTOP")

        async def posted_with_the_member_stopped() -> JSON:
            condition = ready_condition(await get_node(kube, name))
            return condition if "stop-member" in condition.get("message", "") else {}

        posted = await eventually(
            posted_with_the_member_stopped, timeout=TWO_HEARTBEATS, message="a heartbeat under stop-member"
        )
        assert posted["status"] == "True", posted
        await set_fault(kube, name, namespace, None)
        await eventually(
            lambda: process.alive() and not process.stopped(),
            timeout=TWO_HEARTBEATS,
            message="stop-member removed → SIGCONT",
        )

        # A crash behind the provider's back is found by the heartbeat alone.
        os.kill(process.pid, signal.SIGKILL)
        await within_two_heartbeats(kube, name, "Unknown", "external SIGKILL → Ready=Unknown")
        message = ready_condition(await get_node(kube, name))["message"]
        assert "not running" in message


async def test_the_kill_fault_is_a_crash_that_stays_and_fail_provision_fails_the_machine(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    prefix = f"lm{secrets.token_hex(3)}"
    name, doomed, invalid = f"{prefix}-m0", f"{prefix}-bad", f"{prefix}-invalid"
    async with running_provider(kube, namespace, provider_options(provider_state_dir)):
        await kube.create(machine(name, namespace))
        await eventually(lambda: running(kube, name, namespace), timeout=30, message=f"{name} Running")
        await eventually(lambda: ready_is(kube, name, "True"), timeout=TWO_HEARTBEATS, message="Ready")
        (process,) = recorded_processes(provider_state_dir)

        await set_fault(kube, name, namespace, "kill")
        await within_two_heartbeats(kube, name, "Unknown", "kill → Ready=Unknown")
        assert not process.alive()
        heartbeat = ready_condition(await get_node(kube, name))["lastHeartbeatTime"]
        await set_fault(kube, name, namespace, None)

        async def stays_dead() -> bool:
            node = await get_node(kube, name)
            return (
                not etcd_processes_for(data_dir(provider_state_dir, namespace, name))
                and ready_condition(node).get("status") == "Unknown"
                # A dead "kubelet" posts nothing: the heartbeat stops moving.
                and ready_condition(node).get("lastHeartbeatTime") == heartbeat
            )

        await holds_for(stays_dead, duration=max(4 * HEARTBEAT, 1.2), message="a crashed member stays dead")

        await kube.create(machine(doomed, namespace, annotations={FAULT_ANNOTATION: "fail-provision"}))

        async def failed() -> bool:
            obj = await get_machine(kube, doomed, namespace)
            status = (obj or {}).get("status") or {}
            return (
                status.get("phase") == "Failed"
                and status.get("errorReason") == "CreateError"
                and "fail-provision" in status.get("errorMessage", "")
            )

        await eventually(failed, timeout=10, message=f"{doomed} Failed with a reason")
        assert not (provider_state_dir / namespace / doomed).exists(), "no member may be started"
        assert await get_node(kube, doomed) is None

        # The same fault from the providerSpec: how a template faults every new Machine.
        await kube.create(machine(f"{doomed}-spec", namespace, faults=["fail-provision"]))
        doomed_by_spec = f"{doomed}-spec"

        async def failed_by_spec() -> bool:
            status = ((await get_machine(kube, doomed_by_spec, namespace)) or {}).get("status") or {}
            return status.get("phase") == "Failed" and status.get("errorReason") == "CreateError"

        await eventually(failed_by_spec, timeout=10, message=f"{doomed_by_spec} Failed by its providerSpec")
        assert not (provider_state_dir / namespace / doomed_by_spec).exists()
        await kube.create(machine(f"{invalid}-faults", namespace, faults=["crash"]))

        async def bad_fault_refused() -> bool:
            status = ((await get_machine(kube, f"{invalid}-faults", namespace)) or {}).get("status") or {}
            return status.get("errorReason") == "InvalidConfiguration" and "faults ['crash']" in status.get(
                "errorMessage", ""
            )

        await eventually(bad_fault_refused, timeout=10, message="an unknown providerSpec fault is refused")

        # Bad input fails the Machine with a message that says what to change.
        await kube.create(machine(invalid, namespace, zone="zone a!"))

        async def invalid_configuration() -> bool:
            status = ((await get_machine(kube, invalid, namespace)) or {}).get("status") or {}
            return (
                status.get("phase") == "Failed"
                and status.get("errorReason") == "InvalidConfiguration"
                and "failureDomain 'zone a!' cannot be a Node label value" in status.get("errorMessage", "")
            )

        await eventually(
            invalid_configuration, timeout=10, message=f"{invalid} Failed as InvalidConfiguration"
        )
        assert not (provider_state_dir / namespace / invalid).exists()
        # A Failed machine can still be deleted: its finalizer is released.
        await kube.delete(API_VERSION, "Machine", doomed, namespace)
        await kube.delete(API_VERSION, "Machine", invalid, namespace)
        await kube.delete(API_VERSION, "Machine", doomed_by_spec, namespace)
        await kube.delete(API_VERSION, "Machine", f"{invalid}-faults", namespace)
        await kube.delete(API_VERSION, "Machine", name, namespace)

        async def all_gone() -> bool:
            return (
                await get_machine(kube, doomed, namespace) is None
                and await get_machine(kube, invalid, namespace) is None
                and await get_machine(kube, name, namespace) is None
                and await get_node(kube, name) is None
            )

        await eventually(all_gone, timeout=15, message="every machine deleted")


async def test_a_node_of_the_same_name_owned_by_another_machine_is_left_alone(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"lm{secrets.token_hex(3)}-m0"
    foreign = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "annotations": {"machine.openshift.io/machine": "elsewhere/other"}},
    }
    await kube.create(foreign)
    try:
        async with running_provider(kube, namespace, provider_options(provider_state_dir)):
            await kube.create(machine(name, namespace))

            async def refused() -> bool:
                obj = await get_machine(kube, name, namespace)
                condition = machine_condition(obj, "NodeOwned")
                return bool(
                    obj
                    and (obj.get("status") or {}).get("phase") == "Provisioned"
                    and condition.get("reason") == "NodeNameTaken"
                    and "elsewhere/other" in condition.get("message", "")
                )

            await eventually(refused, timeout=30, message="NodeOwned=False naming the Node's owner")
            node = await get_node(kube, name)
            assert node is not None
            assert "labels" not in node["metadata"] or not node["metadata"]["labels"]
            assert not ready_condition(node), "a foreign Node gets no heartbeat from us"
            await kube.delete(API_VERSION, "Machine", name, namespace)
            await eventually(
                lambda: _gone(kube, name, namespace), timeout=15, message="machine deleted, foreign Node kept"
            )
            assert await get_node(kube, name) is not None
    finally:
        await kube.delete("v1", "Node", name)


async def _gone(kube: Client, name: str, namespace: str) -> bool:
    return await get_machine(kube, name, namespace) is None
