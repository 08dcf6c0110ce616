"""What the demo watches while it runs: Machines by phase and the etcd cluster, sampled every 100 ms.

:class:`Observer` polls the API server for the namespace's Machines and etcd for its members and
their health, and appends a :class:`Sample` to :attr:`Observer.samples`. The samples are the
demo's evidence: the report's peaks and lowest quorum margin, the timeline picture and the test's
assertions all come from them, never from the steps' own claims.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from controllers.etcd.client import EtcdClient, EtcdClientOptions, EtcdError

ETCD_CLIENT_URL_ANNOTATION = "local.cpo.dev/etcd-client-url"
SAMPLE_PERIOD = 0.1


@dataclass(frozen=True)
class MachineView:
    """One Machine as the demo shows it."""

    name: str
    phase: str
    deleting: bool
    failure_domain: str
    client_url: str | None
    etcd_role: str = "-"
    """``voter``, ``learner`` or ``-`` (no member)."""


@dataclass(frozen=True)
class Sample:
    """The world at one moment (``at``: seconds since the observer started)."""

    at: float
    machines: tuple[MachineView, ...]
    voters: int
    learners: int
    healthy_voters: int
    etcd_reachable: bool
    writes_acknowledged: int
    desired: int | None = None
    """The ControlPlane's ``spec.replicas`` at that moment (None before it exists)."""

    @property
    def quorum(self) -> int:
        """Votes needed for a decision among the current voters."""
        return self.voters // 2 + 1

    @property
    def has_quorum(self) -> bool:
        return self.voters > 0 and self.healthy_voters >= self.quorum

    @property
    def quorum_margin(self) -> int:
        """Healthy voters beyond the quorum: how many more may fail before etcd stops."""
        return self.healthy_voters - self.quorum

    def phases(self) -> Counter[str]:
        return Counter("Deleting" if m.deleting else (m.phase or "Pending") for m in self.machines)


@dataclass
class Observer:
    """Samples the demo's world every :data:`SAMPLE_PERIOD` seconds; see the module docstring."""

    client: Any
    """A :class:`runtime.client.Client` of the demo's API server."""
    namespace: str
    controlplane: str = "demo"
    writes_acknowledged: Any = None
    """A callable returning the writer's acknowledged count (None: always 0)."""
    samples: list[Sample] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    last_error: str | None = None
    """Why the latest attempt to sample failed, if it did (shown when a step times out)."""
    _task: asyncio.Task[None] | None = None
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def latest(self) -> Sample | None:
        return self.samples[-1] if self.samples else None

    def endpoints(self) -> list[str]:
        """The etcd client URLs of the Machines seen last (the writer follows them)."""
        latest = self.latest
        return [m.client_url for m in latest.machines if m.client_url] if latest else []

    async def __aenter__(self) -> Observer:
        self._task = asyncio.create_task(self._run(), name="demo-observer")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task

    async def sample(self) -> Sample:
        """Take one sample now (also what the loop does)."""
        listed = await self.client.list("machine.openshift.io/v1beta1", "Machine", namespace=self.namespace)
        machines = [_machine_view(item) for item in listed.get("items") or ()]
        voters = learners = healthy = 0
        roles: dict[str, str] = {}
        reachable = False
        urls = [m.client_url for m in machines if m.client_url]
        if urls:
            async with EtcdClient(urls, EtcdClientOptions(timeout=0.5)) as etcd:
                with contextlib.suppress(EtcdError):
                    members = await etcd.member_list()
                    reachable = True
                    voter_urls = [
                        u for member in members if not member.is_learner for u in member.client_urls
                    ]
                    for member in members:
                        role = "learner" if member.is_learner else "voter"
                        for url in member.client_urls:
                            roles[url.rstrip("/")] = role
                    learners = sum(1 for member in members if member.is_learner)
                    voters = len(members) - learners
                    if voter_urls:
                        health = await etcd.health(voter_urls)
                        healthy = sum(1 for h in health if h.healthy)
        machines = [
            MachineView(**{**m.__dict__, "etcd_role": roles.get((m.client_url or "").rstrip("/"), "-")})
            for m in machines
        ]
        acknowledged = self.writes_acknowledged() if self.writes_acknowledged is not None else 0
        desired = None
        with contextlib.suppress(Exception):
            controlplane = await self.client.get(
                "controlplane.cpo.dev/v1alpha1", "ControlPlane", self.controlplane, namespace=self.namespace
            )
            desired = int(controlplane["spec"]["replicas"])
        return Sample(
            at=time.monotonic() - self.started,
            machines=tuple(sorted(machines, key=lambda m: m.name)),
            voters=voters,
            learners=learners,
            healthy_voters=healthy,
            etcd_reachable=reachable,
            writes_acknowledged=acknowledged,
            desired=desired,
        )

    async def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                self.samples.append(await self.sample())
            except Exception as err:  # a missed sample is a gap, not the end of the demo
                self.last_error = f"{type(err).__name__}: {err}"
            rest = SAMPLE_PERIOD - (time.monotonic() - began)
            if rest > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), rest)


def _machine_view(machine: dict[str, Any]) -> MachineView:
    metadata = machine.get("metadata") or {}
    labels = metadata.get("labels") or {}
    value = ((machine.get("spec") or {}).get("providerSpec") or {}).get("value") or {}
    return MachineView(
        name=str(metadata.get("name")),
        phase=str((machine.get("status") or {}).get("phase") or ""),
        deleting=bool(metadata.get("deletionTimestamp")),
        failure_domain=str(
            value.get("failureDomain") or labels.get("controlplane.cpo.dev/failure-domain") or ""
        ),
        client_url=(metadata.get("annotations") or {}).get(ETCD_CLIENT_URL_ANNOTATION),
    )
