"""A template whose Machines fail to provision is retried with a bound, then left for a human.

One world for the module (the embedded API server, ``cpo localmachine`` and ``cpo run``, each a
subprocess, started by :class:`demo.world.DemoWorld`), driven with kubectl as a user would. The
operator runs with a short remediation backoff (``--remediation-backoff-initial 4``, factor 2,
``--remediation-backoff-max 12``, ``--remediation-max-retry 3``): the rule is the one users get
by default (30 s doubling to 10 min, 5 retries), at a scale a test can wait for.

A rollout to a template with ``providerSpec.value.faults: [fail-provision]`` creates a Machine
that goes Failed; the MachineHealthCheck marks it, the ControlPlane replaces it, the replacement
fails too, and so on along one lineage. The test measures the creates: the first replacement
comes at once, each retry after 4, 8, then 12 s (capped), then none: the ControlPlane is
``Degraded`` with ``ReplacementsFailing`` and creates nothing for 60 s. Setting the resume
annotation to the current time starts a new series (the operator clears the annotation), which
stops again after its retries; fixing the template then rolls a working template out.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
import pytest_asyncio

from api.machine import API_VERSION
from demo.tour import CONTROLPLANE, settled
from demo.tour import bootstrap as bootstrap_step
from demo.world import DemoWorld
from runtime.client import Client
from runtime.errors import from_status
from runtime.jsoncodec import JSON
from tests.support.controlplane import cp_condition
from tests.support.poll import eventually, holds_for
from tests.support.tour_world import TourWorld as World
from tests.support.tour_world import tour_world

pytestmark = [pytest.mark.slow, pytest.mark.kubectl, pytest.mark.asyncio(loop_scope="module")]

NAMESPACE = "retries"
CP = "controlplane.cpo.dev/v1alpha1"
INITIAL, FACTOR, CAP, MAX_RETRY = 4.0, 2.0, 12.0, 3
OPERATOR_FLAGS = (
    f"--remediation-backoff-initial={INITIAL:g}",
    f"--remediation-backoff-factor={FACTOR:g}",
    f"--remediation-backoff-max={CAP:g}",
    f"--remediation-max-retry={MAX_RETRY}",
)
RESUME_ANNOTATION = "controlplane.cpo.dev/resume-remediation"
REMEDIATION_FOR = "controlplane.cpo.dev/remediation-for"
FAILING = {"spec": {"template": {"spec": {"providerSpec": {"value": {"faults": ["fail-provision"]}}}}}}
FIXED = {"spec": {"template": {"spec": {"providerSpec": {"value": {"faults": None, "revision": "2"}}}}}}
EARLY = 1.0
"""Creation times and the remediation record's time are whole seconds: an interval may read up
to 1 s short."""
LATE = 6.0
"""What an interval may add to its backoff: the provider failing the Machine, the health check
marking it, a reconcile, whole-second creation times."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    directory = tmp_path_factory.mktemp("retry-world")
    demo = DemoWorld(directory, namespace=NAMESPACE, operator_flags=OPERATOR_FLAGS)
    async with tour_world(demo, step_budget=180.0) as started:
        await bootstrap_step(started.tour)
        yield started


def backoff(retry: int) -> float:
    """The documented wait before retry ``retry`` (1 for the first retry)."""
    return min(INITIAL * FACTOR ** (retry - 1), CAP)


class Creates:
    """Every Machine created, by name: its creation time and the lineage record it carries.

    Recorded from a watch, not from polls: a Failed Machine may be marked, remediated and gone
    within a fifth of a second, between two lists."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.seen: dict[str, JSON] = {}
        self._following: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Creates:
        listed = await self.client.list(API_VERSION, "Machine", namespace=NAMESPACE)
        for machine in listed.get("items") or ():
            self.seen.setdefault(machine["metadata"]["name"], machine)
        self._following = asyncio.create_task(self._follow(str(listed["metadata"]["resourceVersion"])))
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._following is not None:
            self._following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._following

    async def _follow(self, resource_version: str) -> None:
        while True:  # the server ends a watch after its timeout: go on from the last version seen
            async for event in self.client.watch(
                API_VERSION, "Machine", NAMESPACE, resource_version=resource_version, timeout_seconds=300
            ):
                machine = event["object"]
                if event["type"] == "ERROR":
                    raise from_status(int(machine.get("code") or 500), machine)
                resource_version = machine["metadata"]["resourceVersion"]
                if event["type"] in ("ADDED", "MODIFIED"):
                    self.seen.setdefault(machine["metadata"]["name"], machine)

    async def poll(self) -> list[JSON]:
        """The Machines there now; the watch fails the test here if it broke."""
        if self._following is not None and self._following.done():
            self._following.result()
            raise AssertionError("the watch of Machines ended")
        listed = await self.client.list(API_VERSION, "Machine", namespace=NAMESPACE)
        return list(listed.get("items") or ())

    def after(self, names: set[str]) -> list[JSON]:
        """The Machines seen that are not in ``names``, oldest first (creation times are whole
        seconds: within one, a Machine without a lineage record, then by retry count)."""
        fresh = [m for name, m in self.seen.items() if name not in names]
        return sorted(fresh, key=order)


def order(machine: JSON) -> tuple[str, int, str]:
    record = lineage(machine)
    count = -1 if record is None else int(record.get("retryCount", 0))
    return machine["metadata"]["creationTimestamp"], count, machine["metadata"]["name"]


def created(machine: JSON) -> datetime:
    return datetime.fromisoformat(machine["metadata"]["creationTimestamp"])


def lineage(machine: JSON) -> dict[str, Any] | None:
    raw = (machine["metadata"].get("annotations") or {}).get(REMEDIATION_FOR)
    return json.loads(raw) if raw else None


async def patch(world: World, body: JSON) -> None:
    await world.tour.kubectl("patch", "controlplane", CONTROLPLANE, "--type", "merge", "-p", json.dumps(body))


async def controlplane(client: Client) -> JSON:
    return await client.get(CP, "ControlPlane", CONTROLPLANE, NAMESPACE)


async def stopped(
    world: World, creates: Creates, known: set[str], budget: float, failed_said: list[str] | None = None
) -> JSON:
    """Wait until Degraded says ReplacementsFailing, recording every Machine created meanwhile
    (and, into ``failed_said``, every ``MachineFailed`` message Degraded shows on the way)."""

    async def degraded() -> JSON | None:
        await creates.poll()
        cp = await controlplane(world.client)
        condition = cp_condition(cp, "Degraded")
        if condition.get("status") == "True" and condition.get("reason") == "ReplacementsFailing":
            return cp
        if failed_said is not None and condition.get("reason") == "MachineFailed":
            failed_said.append(str(condition.get("message")))
        return None

    try:
        return await eventually(degraded, timeout=budget, message="Degraded with reason ReplacementsFailing")
    except AssertionError as err:
        cp = await controlplane(world.client)
        made = [m["metadata"]["name"] for m in creates.after(known)]
        raise AssertionError(
            f"{err}; {len(made)} Machine(s) created meanwhile: {made}; "
            f"Degraded: {cp_condition(cp, 'Degraded')}"
        ) from None


def assert_backoff(series: list[JSON]) -> None:
    """The creates of one lineage: the first replacement at once, retry n after backoff(n)."""
    assert len(series) == MAX_RETRY + 2, [m["metadata"]["name"] for m in series]
    counts = [(lineage(m) or {}).get("retryCount") for m in series[1:]]
    assert counts == list(range(MAX_RETRY + 1)), counts
    intervals = [(created(b) - created(a)).total_seconds() for a, b in itertools.pairwise(series)]
    for retry, interval in enumerate(intervals[1:], start=1):
        wanted = backoff(retry)
        assert wanted - EARLY <= interval <= wanted + LATE, (retry, wanted, intervals)


async def test_failing_replacements_back_off_then_stop_until_resumed_or_fixed(world: World) -> None:
    monitor = world.observer.monitor
    assert monitor is not None
    mark = monitor.mark()
    async with Creates(world.client) as creates:
        await failing_then_resumed_then_fixed(world, creates)
    monitor.assert_never_lost_quorum(since=mark)


async def failing_then_resumed_then_fixed(world: World, creates: Creates) -> None:
    original = set(creates.seen)
    await patch(world, FAILING)

    # The rollout's Machine fails, then its replacements along one lineage, backing off; while a
    # retry waits, Degraded says the ControlPlane replaces the Failed Machine itself and what it
    # waits for, and never asks for a delete by hand (which would skip the backoff).
    failed_said: list[str] = []
    cp = await stopped(world, creates, original, budget=120, failed_said=failed_said)
    first_series = creates.after(original)
    assert_backoff(first_series)
    assert any("WaitingForRetryPeriod" in said for said in failed_said), failed_said
    assert all("replaces them itself" in said and "delete them" not in said for said in failed_said), {
        said for said in failed_said if "delete them" in said
    }
    condition = cp_condition(cp, "Degraded")
    assert RESUME_ANNOTATION in condition["message"], condition
    assert cp["status"]["failureReason"] == "ReplacementsFailing", cp["status"]
    last = first_series[-1]["metadata"]["name"]
    machine = await world.client.get(API_VERSION, "Machine", last, NAMESPACE)
    owner = next(c for c in machine["status"]["conditions"] if c["type"] == "OwnerRemediated")
    assert owner["reason"] == "CannotBeRemediated", owner

    # Stopped: nothing is created for 60 s, and the working Machines stay (the rollout that
    # would delete one waits on the failed Machine's preflight).
    known = original | {m["metadata"]["name"] for m in first_series}

    async def nothing_created() -> bool:
        machines = await creates.poll()
        staying = {m["metadata"]["name"] for m in machines if not m["metadata"].get("deletionTimestamp")}
        return not creates.after(known) and original <= staying

    await holds_for(nothing_created, duration=60, message="no Machine created or taken away once stopped")

    # The resume annotation, later than the failure: a new series, the annotation cleared.
    resume_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    await world.tour.kubectl("annotate", "controlplane", CONTROLPLANE, f"{RESUME_ANNOTATION}={resume_at}")
    started = time.monotonic()

    async def resumed() -> bool:
        await creates.poll()
        fresh = creates.after(known)
        annotations = (await controlplane(world.client))["metadata"].get("annotations") or {}
        return bool(fresh) and RESUME_ANNOTATION not in annotations

    await eventually(resumed, timeout=30, message="a new Machine created and the resume annotation cleared")
    await stopped(world, creates, known, budget=120 - (time.monotonic() - started))
    second_series = creates.after(known)
    assert [(lineage(m) or {}).get("retryCount") for m in second_series] == list(range(MAX_RETRY + 1)), [
        lineage(m) for m in second_series
    ]

    # A fixed template resumes too: a new rollout, every Machine replaced by a working one.
    await patch(world, FIXED)

    def renewed(now: Any, cp: dict[str, Any]) -> bool:
        return not original & {m.name for m in now.machines} and settled(3)(now, cp)

    await world.tour.wait_for("every Machine replaced by the fixed template", renewed)
    cp = await controlplane(world.client)
    assert cp_condition(cp, "Degraded").get("status") == "False", cp_condition(cp, "Degraded")
