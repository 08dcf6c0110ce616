"""What the demo watches while it runs: the etcd cluster through the quorum monitor, and the Machines.

:class:`Observer` runs a :class:`~demo.monitor.QuorumMonitor` on the demo's etcd
cluster (started as soon as the first Machine announces its member, then following the member
list as members come and go) and, beside it, polls the namespace's Machines and the ControlPlane.
Every :data:`SAMPLE_PERIOD` it appends a :class:`Sample` joining the two. The monitor's own record
is the evidence about quorum: the report's quorum verdict and the test's assertions read it, never
the steps' own claims.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from api.controlplane import REMOVE_MEMBER_FIRST_ANNOTATION
from api.quorum import quorum
from controllers.controlplane.machines import marked_for_remediation
from controllers.etcd.client import EtcdClientOptions
from controllers.etcd.membership import MachineIdentity
from controllers.etcd.tls import tls_context_from_secret
from demo.monitor import QuorumMonitor, QuorumSample

FAILURE_DOMAIN_LABEL = "controlplane.cpo.dev/failure-domain"
SAMPLE_PERIOD = 0.1


@dataclass(frozen=True)
class MachineView:
    """One Machine as the demo shows it."""

    name: str
    phase: str
    deleting: bool
    failure_domain: str
    client_url: str | None
    """The provider's client URL annotation, else ``https://<InternalIP>:2379``, as the operator finds it."""
    node: str | None = None
    """Its Node's name (``status.nodeRef``, else its Hostname address): the member's name when the
    provider names members after Nodes, as its realistic mode does."""
    etcd_role: str = "-"
    """``voter``, ``learner`` or ``-`` (no member)."""
    etcd_healthy: bool = True
    """False when its member is a voter that did not answer the quorum monitor's health read."""
    marked_unhealthy: bool = False
    """The MachineHealthCheck handed it to its owner for remediation (``HealthCheckSucceeded`` and
    ``OwnerRemediated`` both ``False``)."""
    remove_member_first: bool = False
    """It carries :data:`~api.controlplane.REMOVE_MEMBER_FIRST_ANNOTATION`: the ControlPlane
    deletes it in a ``maxSurge: 0`` rollout or rebalance, and its healthy voter may be removed
    before its replacement votes."""


@dataclass(frozen=True)
class Sample:
    """The world at one moment (``at``: seconds on the quorum monitor's clock)."""

    at: float
    machines: tuple[MachineView, ...]
    voters: int
    learners: int
    healthy_voters: int
    has_quorum: bool
    writes_acknowledged: int
    desired: int | None = None
    """The ControlPlane's ``spec.replicas`` at that moment (None before it exists)."""
    last_remediation: str | None = None
    """The Machine of the ControlPlane's ``status.lastRemediation`` at that moment, if any."""

    @property
    def quorum_margin(self) -> int:
        """Healthy voters beyond the quorum: how many more may fail before etcd stops."""
        return self.healthy_voters - quorum(self.voters)

    def phases(self) -> Counter[str]:
        return Counter("Deleting" if m.deleting else (m.phase or "Pending") for m in self.machines)


@dataclass
class Observer:
    """Samples the demo's world; see the module docstring."""

    client: Any
    """A :class:`runtime.client.Client` of the demo's API server."""
    namespace: str
    controlplane: str = "demo"
    writes_acknowledged: Any = None
    """A callable returning the writer's acknowledged count (None: always 0)."""
    samples: list[Sample] = field(default_factory=list)
    monitor: QuorumMonitor | None = None
    """The quorum monitor, once the first member exists."""
    last_error: str | None = None
    """Why the latest attempt to sample the API server failed, if it did."""
    tls_secret: str | None = None
    """The Secret with the etcd client certificate (``tls.crt``, ``tls.key``, ``ca.crt``), read
    once the first member exists; None: plain HTTP."""
    client_options: EtcdClientOptions = field(default_factory=lambda: EtcdClientOptions(timeout=2.0))
    """How the monitor (and the demo's writer) connect to etcd; TLS from :attr:`tls_secret`."""
    _started: float = field(default_factory=time.monotonic)
    _task: asyncio.Task[None] | None = None
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def latest(self) -> Sample | None:
        return self.samples[-1] if self.samples else None

    @property
    def started(self) -> float:
        """``time.monotonic()`` at the zero of the samples' clock."""
        return self.monitor.started_at if self.monitor is not None else self._started

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
        if self.monitor is not None:
            await self.monitor.__aexit__(None, None, None)

    async def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                sample = await self._sample()
                if sample is not None:
                    self.samples.append(sample)
            except Exception as err:  # a missed sample is a gap, not the end of the demo
                self.last_error = f"{type(err).__name__}: {err}"
            rest = SAMPLE_PERIOD - (time.monotonic() - began)
            if rest > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), rest)

    async def _sample(self) -> Sample | None:
        listed = await self.client.list("machine.openshift.io/v1beta1", "Machine", namespace=self.namespace)
        machines = [_machine_view(item) for item in listed.get("items") or ()]
        if self.monitor is None:
            urls = [m.client_url for m in machines if m.client_url]
            if not urls:
                return None
            if self.tls_secret is not None:
                context = await tls_context_from_secret(self.client, self.namespace, self.tls_secret)
                self.client_options = replace(self.client_options, ssl_context=context)
            # The monitor's clock starts here: the demo's timeline begins with the first member.
            self.monitor = QuorumMonitor(urls, client_options=self.client_options)
            await self.monitor.__aenter__()
        quorum = self.monitor.samples[-1] if self.monitor.samples else None
        if quorum is None:
            return None
        roles = _roles(quorum)
        desired = last_remediation = None
        with contextlib.suppress(Exception):
            controlplane = await self.client.get(
                "controlplane.cpo.dev/v1alpha1", "ControlPlane", self.controlplane, namespace=self.namespace
            )
            desired = int(controlplane["spec"]["replicas"])
            last_remediation = ((controlplane.get("status") or {}).get("lastRemediation") or {}).get(
                "machine"
            )
        return Sample(
            at=time.monotonic() - self.monitor.started_at,
            machines=tuple(
                sorted(
                    (
                        replace(
                            m,
                            etcd_role=roles.get(m.node or "", roles.get(m.name, "-")),
                            etcd_healthy=not {m.name, m.node} & set(quorum.unhealthy_voters),
                        )
                        for m in machines
                    ),
                    key=_by_name,
                )
            ),
            voters=quorum.voters,
            learners=quorum.learners,
            healthy_voters=quorum.healthy_voters,
            has_quorum=quorum.has_quorum,
            writes_acknowledged=self.writes_acknowledged() if self.writes_acknowledged is not None else 0,
            desired=desired,
            last_remediation=last_remediation,
        )


def _roles(sample: QuorumSample) -> dict[str, str]:
    """Member name → role; the monitor marks learners with a ``~`` suffix (the local provider names
    members after their Machine, or in its realistic mode after their Node)."""
    return {name.removesuffix("~"): "learner" if name.endswith("~") else "voter" for name in sample.machines}


def _by_name(machine: MachineView) -> str:
    return machine.name


def _machine_view(machine: dict[str, Any]) -> MachineView:
    metadata = machine.get("metadata") or {}
    labels = metadata.get("labels") or {}
    value = ((machine.get("spec") or {}).get("providerSpec") or {}).get("value") or {}
    status = machine.get("status") or {}
    addresses = {
        address.get("type"): address.get("address") for address in reversed(status.get("addresses") or ())
    }
    client_url = MachineIdentity.from_machine(machine).endpoint
    return MachineView(
        name=str(metadata.get("name")),
        phase=str((machine.get("status") or {}).get("phase") or ""),
        deleting=bool(metadata.get("deletionTimestamp")),
        failure_domain=str(value.get("failureDomain") or labels.get(FAILURE_DOMAIN_LABEL) or ""),
        client_url=client_url,
        node=(status.get("nodeRef") or {}).get("name") or addresses.get("Hostname"),
        marked_unhealthy=marked_for_remediation(machine),
        remove_member_first=REMOVE_MEMBER_FIRST_ANNOTATION in (metadata.get("annotations") or {}),
    )
