"""The localmachine provider shares a Machine's ``status.conditions`` with other writers: it sets its
own conditions by type and leaves every other condition as the API server holds it."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

import pytest

from api.machine import API_VERSION
from providers.localmachine import CONDITION_DRAINABLE, CONDITION_ETCD_MEMBER, CONDITION_TERMINABLE
from runtime.client import Client
from runtime.errors import Conflict
from tests.support.localmachine import (
    get_machine,
    machine,
    machine_condition,
    provider_options,
    running_provider,
)
from tests.support.poll import eventually

pytestmark = pytest.mark.slow

FOREIGN = {
    "type": "UpToDate",
    "status": "False",
    "reason": "TemplateChanged",
    "message": "written by another controller",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}


async def add_foreign_condition(kube: Client, name: str, namespace: str) -> None:
    """What another controller does: its condition added to the stored list under its read's
    version, read again when the provider wrote in between."""
    for _ in range(10):
        stored = await get_machine(kube, name, namespace)
        assert stored is not None
        conditions = [*((stored.get("status") or {}).get("conditions") or []), FOREIGN]
        version = stored["metadata"]["resourceVersion"]
        patch = {"metadata": {"resourceVersion": version}, "status": {"conditions": conditions}}
        try:
            await kube.patch_status(API_VERSION, "Machine", name, patch, namespace)
            return
        except Conflict:
            continue
    raise AssertionError("the condition could not be written in 10 attempts")


async def test_a_condition_of_another_writer_survives_the_providers_next_status_writes(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"lm{secrets.token_hex(3)}-m0"
    async with running_provider(kube, namespace, provider_options(provider_state_dir)):
        await kube.create(
            machine(name, namespace, pre_drain=["EtcdQuorumOperator"], pre_terminate=["tests.io/Hold"])
        )

        async def running() -> dict[str, Any] | None:
            obj = await get_machine(kube, name, namespace)
            return obj if obj and (obj.get("status") or {}).get("phase") == "Running" else None

        started = machine_condition(
            await eventually(running, timeout=30, message=f"{name} Running"), CONDITION_ETCD_MEMBER
        )
        assert started.get("status") == "True", started

        # The deletion makes the provider write Drainable=False at once, from whatever it last
        # read: the other writer's condition lands in the same moment.
        await asyncio.gather(
            add_foreign_condition(kube, name, namespace),
            kube.delete(API_VERSION, "Machine", name, namespace),
        )

        async def held_by_the_hook() -> dict[str, Any] | None:
            obj = await get_machine(kube, name, namespace)
            drainable = machine_condition(obj, CONDITION_DRAINABLE)
            return obj if drainable.get("reason") == "HookPresent" else None

        held = await eventually(held_by_the_hook, timeout=15, message="Drainable=False naming the hook")
        assert machine_condition(held, "UpToDate") == FOREIGN
        # Its own unchanged condition keeps its transition time.
        assert machine_condition(held, CONDITION_ETCD_MEMBER) == started

        # The next writes (the preDrain hook gone: Drainable=True, Terminable=False) keep it too.
        await kube.patch(
            API_VERSION, "Machine", name, {"spec": {"lifecycleHooks": {"preDrain": None}}}, namespace
        )

        async def drained() -> dict[str, Any] | None:
            obj = await get_machine(kube, name, namespace)
            drainable = machine_condition(obj, CONDITION_DRAINABLE).get("status")
            terminable = machine_condition(obj, CONDITION_TERMINABLE).get("status")
            return obj if drainable == "True" and terminable == "False" else None

        seen = await eventually(drained, timeout=15, message="Drainable=True, Terminable=False")
        assert machine_condition(seen, "UpToDate") == FOREIGN
        await kube.patch(
            API_VERSION, "Machine", name, {"spec": {"lifecycleHooks": {"preTerminate": None}}}, namespace
        )
        await eventually(lambda: _gone(kube, name, namespace), timeout=20, message=f"{name} deleted")


async def _gone(kube: Client, name: str, namespace: str) -> bool:
    return await get_machine(kube, name, namespace) is None
