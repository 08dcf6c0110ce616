"""The operator's Machine-condition writer against the API server: it sets its own types by type,
keeps another writer's condition that landed after its read, and writes nothing when nothing
changed (the Machine's resourceVersion stays)."""

from __future__ import annotations

import secrets

from api.machine import API_VERSION
from controllers.conditions import condition, write_machine_conditions
from runtime.client import Client
from tests.support.localmachine import get_machine, machine, machine_condition

OTHER = {
    "type": "EtcdMemberStarted",
    "status": "True",
    "reason": "Started",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}


async def test_own_types_merged_over_a_newer_version_written_once_and_removed(
    kube: Client, namespace: str
) -> None:
    name = f"mc{secrets.token_hex(3)}"
    read = await kube.create(machine(name, namespace))
    # Another writer gets in after our read: our copy's resourceVersion is stale.
    await kube.patch_status(API_VERSION, "Machine", name, {"status": {"conditions": [OTHER]}}, namespace)

    guarding = condition("EtcdQuorumHookHolding", "False", "Guarding", "in place")
    assert await write_machine_conditions(kube, read, {"EtcdQuorumHookHolding": guarding}) is True
    stored = await get_machine(kube, name, namespace)
    assert machine_condition(stored, "EtcdMemberStarted") == OTHER
    written = machine_condition(stored, "EtcdQuorumHookHolding")
    assert (written["status"], written["reason"], written["message"]) == ("False", "Guarding", "in place")

    # The same conditions again, from the stale copy or a fresh one: no write at all.
    assert stored is not None
    version = stored["metadata"]["resourceVersion"]
    assert await write_machine_conditions(kube, stored, {"EtcdQuorumHookHolding": guarding}) is False
    assert await write_machine_conditions(kube, read, {"EtcdQuorumHookHolding": guarding}) is False
    again = await get_machine(kube, name, namespace)
    assert again is not None and again["metadata"]["resourceVersion"] == version

    # A removal takes only our type.
    assert await write_machine_conditions(kube, again, {"EtcdQuorumHookHolding": None}) is True
    after = await get_machine(kube, name, namespace)
    assert (after or {}).get("status", {}).get("conditions") == [OTHER]


async def test_a_machine_gone_is_nothing_to_report_on(kube: Client, namespace: str) -> None:
    name = f"mc{secrets.token_hex(3)}"
    read = await kube.create(machine(name, namespace))
    await kube.delete(API_VERSION, "Machine", name, namespace)
    wanted = {"UpToDate": condition("UpToDate", "True", "UpToDate")}
    assert await write_machine_conditions(kube, read, wanted) is False
