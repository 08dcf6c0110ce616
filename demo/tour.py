"""The demo's scripted tour: each step makes one change a user would make and waits for its real outcome.

A :class:`Step` acts (kubectl, as a user would) and then waits until the world shows the result —
Machines, etcd members and the ControlPlane's status as the :class:`~demo.observer.Observer` sees
them — never for a fixed time. A step that does not reach its outcome within its budget fails the
tour with a message saying what it was still waiting for.

The steps, in order (``--steps`` picks a subset by name):

``bootstrap``   create the ControlPlane; wait for ``replicas`` voters, no learner, all Running
``even``        ``kubectl scale --replicas 4``: the webhook refuses it; the refusal is kept as shown
``scale-out``   scale to ``replicas + 2``; wait for that many voters
``kill``        kill one member (``local.cpo.dev/fault: kill``); the MachineHealthCheck marks it,
                the ControlPlane replaces it (add, promote, remove); wait until it is gone
``rollout``     change the template; wait until every Machine is a new one
``scale-in``    scale back to ``replicas``
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from demo.observer import Observer, Sample
from demo.world import KubectlError, kubectl

CONTROLPLANE = "demo"
STEP_NAMES = ("bootstrap", "even", "scale-out", "kill", "rollout", "scale-in")
FAULT_ANNOTATION = "local.cpo.dev/fault"


class StepFailed(RuntimeError):
    """A step did not reach its outcome; the message says what was still missing."""


@dataclass
class StepRecord:
    """One step as the report shows it."""

    name: str
    title: str
    started: float
    finished: float | None = None
    ok: bool = False
    detail: str = ""

    @property
    def duration(self) -> float | None:
        return None if self.finished is None else self.finished - self.started


@dataclass
class Tour:
    """What the steps share: the cluster, the observer, the options."""

    kubeconfig: Path
    namespace: str
    observer: Observer
    replicas: int = 3
    failure_domains: tuple[str, ...] = ("zone-a", "zone-b", "zone-c")
    fast: bool = False
    step_budget: float = 240.0
    tls_secret: str | None = None
    """The etcd client certificate Secret the ControlPlane names (``spec.etcd.tlsSecretRef``)."""
    records: list[StepRecord] = field(default_factory=list)
    on_change: Callable[[], None] = lambda: None

    async def kubectl(self, *args: str, input_text: str | None = None) -> str:
        return await kubectl(self.kubeconfig, "-n", self.namespace, *args, input_text=input_text)

    async def controlplane(self) -> dict[str, Any]:
        return json.loads(await self.kubectl("get", "controlplane", CONTROLPLANE, "-o", "json"))  # type: ignore[no-any-return]

    async def wait_for(self, what: str, done: Callable[[Sample, dict[str, Any]], bool]) -> None:
        """Poll until ``done(latest sample, ControlPlane)`` holds, within the step budget."""
        deadline = time.monotonic() + self.step_budget
        last = ""
        while True:
            sample = self.observer.latest
            if sample is not None:
                controlplane = await self.controlplane()
                if done(sample, controlplane):
                    return
                last = describe(sample, controlplane)
            if time.monotonic() > deadline:
                raise StepFailed(f"still waiting for {what} after {self.step_budget:g}s; now: {last}")
            await asyncio.sleep(0.25)

    async def run(self, names: tuple[str, ...] = STEP_NAMES) -> None:
        """Run the named steps in tour order; stops at the first that fails (it is recorded)."""
        for name in STEP_NAMES:
            if name not in names:
                continue
            title, action = STEPS[name]
            record = StepRecord(
                name, title.format(replicas=self.replicas, bigger=self.replicas + 2), time.monotonic()
            )
            self.records.append(record)
            self.on_change()
            try:
                record.detail = await action(self)
                record.ok = True
            except StepFailed as err:
                record.detail = str(err)
                raise
            finally:
                record.finished = time.monotonic()
                self.on_change()

    def manifest(self) -> dict[str, Any]:
        """The demo's ControlPlane: ``replicas`` local machines spread over three failure domains."""
        spec: dict[str, Any] = {
            "replicas": self.replicas,
            "template": {
                "metadata": {"labels": {"machine.openshift.io/cluster-api-machine-role": "master"}},
                "spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "revision": "1"}}},
            },
            "failureDomains": [
                {"name": name, "providerSpec": {"value": {"failureDomain": name}}}
                for name in self.failure_domains
            ],
        }
        if self.tls_secret is not None:
            spec["etcd"] = {"tlsSecretRef": {"name": self.tls_secret}}
        if self.fast:
            # Seconds instead of OpenShift's minutes, so a killed member is replaced at once.
            spec["healthCheck"] = {
                "unhealthyConditions": [
                    {"type": "Ready", "status": "False", "timeout": "5s"},
                    {"type": "Ready", "status": "Unknown", "timeout": "5s"},
                ],
                "nodeStartupTimeout": "60s",
            }
        else:
            spec["healthCheck"] = {
                "unhealthyConditions": [
                    {"type": "Ready", "status": "False", "timeout": "30s"},
                    {"type": "Ready", "status": "Unknown", "timeout": "30s"},
                ],
                "nodeStartupTimeout": "5m",
            }
        return {
            "apiVersion": "controlplane.cpo.dev/v1alpha1",
            "kind": "ControlPlane",
            "metadata": {"name": CONTROLPLANE, "namespace": self.namespace},
            "spec": spec,
        }


def settled(replicas: int) -> Callable[[Sample, dict[str, Any]], bool]:
    """``replicas`` healthy voters, no learner, that many Machines all Running and none deleting."""

    def check(sample: Sample, controlplane: dict[str, Any]) -> bool:
        phases = sample.phases()
        return (
            sample.voters == replicas
            and sample.healthy_voters == replicas
            and sample.learners == 0
            and len(sample.machines) == replicas
            and phases.get("Running", 0) == replicas
            and condition(controlplane, "Available") == "True"
        )

    return check


def condition(obj: dict[str, Any], kind: str) -> str | None:
    for item in (obj.get("status") or {}).get("conditions") or ():
        if item.get("type") == kind:
            return str(item.get("status"))
    return None


def describe(sample: Sample, controlplane: dict[str, Any]) -> str:
    phases = ", ".join(f"{count} {phase}" for phase, count in sorted(sample.phases().items()))
    return (
        f"{sample.voters} voters ({sample.healthy_voters} healthy), {sample.learners} learners; "
        f"Machines: {phases or 'none'}; Available={condition(controlplane, 'Available')}"
    )


async def bootstrap(tour: Tour) -> str:
    import yaml

    await tour.kubectl("apply", "-f", "-", input_text=yaml.safe_dump(tour.manifest()))
    await tour.wait_for(f"{tour.replicas} voters", settled(tour.replicas))
    return f"{tour.replicas} voters, each joined as a learner and promoted one at a time"


async def even(tour: Tour) -> str:
    try:
        await tour.kubectl("scale", f"controlplane/{CONTROLPLANE}", "--replicas", str(tour.replicas + 1))
    except KubectlError as refusal:
        if (await tour.controlplane())["spec"]["replicas"] != tour.replicas:
            raise StepFailed("the even replica count was stored") from None
        return str(refusal)
    raise StepFailed(f"kubectl scale --replicas {tour.replicas + 1} was accepted")


async def scale_out(tour: Tour) -> str:
    target = tour.replicas + 2
    await tour.kubectl("scale", f"controlplane/{CONTROLPLANE}", "--replicas", str(target))
    await tour.wait_for(f"{target} voters", settled(target))
    return f"{target} voters, added one at a time"


async def kill(tour: Tour) -> str:
    sample = tour.observer.latest
    assert sample is not None
    victim = next(m.name for m in sample.machines if m.etcd_role == "voter")
    await tour.kubectl("annotate", "machine", victim, f"{FAULT_ANNOTATION}=kill")
    size = len(sample.machines)

    def replaced(now: Sample, controlplane: dict[str, Any]) -> bool:
        gone = all(m.name != victim for m in now.machines)
        return gone and settled(size)(now, controlplane)

    await tour.wait_for(f"{victim} replaced", replaced)
    last = ((await tour.controlplane()).get("status") or {}).get("lastRemediation") or {}
    return f"{victim} killed, marked unhealthy and replaced (lastRemediation: {last.get('machine', '?')})"


async def rollout(tour: Tour) -> str:
    sample = tour.observer.latest
    assert sample is not None
    before = {m.name for m in sample.machines}
    size = len(before)
    patch = {"spec": {"template": {"spec": {"providerSpec": {"value": {"revision": "2"}}}}}}
    await tour.kubectl("patch", "controlplane", CONTROLPLANE, "--type", "merge", "-p", json.dumps(patch))

    def renewed(now: Sample, controlplane: dict[str, Any]) -> bool:
        return not before & {m.name for m in now.machines} and settled(size)(now, controlplane)

    await tour.wait_for(f"all {size} Machines replaced", renewed)
    return f"all {size} Machines replaced one at a time"


async def scale_in(tour: Tour) -> str:
    await tour.kubectl("scale", f"controlplane/{CONTROLPLANE}", "--replicas", str(tour.replicas))
    await tour.wait_for(f"{tour.replicas} voters", settled(tour.replicas))
    return f"back to {tour.replicas} voters"


STEPS: dict[str, tuple[str, Callable[[Tour], Awaitable[str]]]] = {
    "bootstrap": ("bootstrap to {replicas} voters", bootstrap),
    "even": ("an even replica count is refused", even),
    "scale-out": ("scale out to {bigger}", scale_out),
    "kill": ("kill a member: health check, remediation", kill),
    "rollout": ("rolling update of every Machine", rollout),
    "scale-in": ("scale back to {replicas}", scale_in),
}
