"""The quorum chaos campaign: randomized user actions and faults, checked against etcd's quorum.

Not part of the test run (``tests/e2e/test_chaos.py`` runs a short version). Each run is a fresh
world — ``cpo dev-apiserver``, ``cpo localmachine`` (real etcd members), **two** ``cpo run``
replicas with leader election, a continuous etcd writer — driven by a schedule drawn from the run's
seed, then checked::

    .venv/bin/python -m bench.chaos --runs 100 --seed 1 [--duration 60] [--jobs 1] [--out chaos-out]
    .venv/bin/python -m bench.chaos --seeds 6,18     # replay chosen runs
    .venv/bin/python -m bench.chaos --realistic      # every world's provider with --realistic

``--realistic`` runs each world's ``cpo localmachine`` with ``--realistic``: members on addresses
of their own, named after their Nodes (``ip-127-X-Y-Z``), etcd over TLS with the client
certificate in the Secret the ControlPlane names (``spec.etcd.tlsSecretRef``); the observer, the
quorum monitor and the writer connect with it. The injector finds a member's process by its
Machine (the provider's state directories are named after Machines in both modes), and the
checks map a member to its Machine by the Machine's name or its Node's
(:attr:`~demo.observer.MachineView.node`), so they read both modes alike. Every world's
``cpo run`` gets ``--etcd-member-without-machine-grace`` :data:`MEMBER_WITHOUT_MACHINE_GRACE`
and a short remediation backoff (:data:`REMEDIATION_FLAGS`).

The schedule (:func:`plan`) mixes user actions (scale among 1, 3 and 5; an even count, which the
webhook must refuse; a template change; ``rolloutAfter`` now, seconds ahead or an hour ahead;
deleting a Machine; toggling ``OnDelete``; toggling ``maxSurge`` between 1 and 0; deleting the
ControlPlane and adopting its Machines again through an Inactive one made Active) with faults
(a member killed through ``local.cpo.dev/fault: kill`` or by SIGKILL behind the provider's back;
a member paused with SIGSTOP and resumed; a Node made NotReady; every member of one failure
domain SIGKILLed at once; the leading ``cpo run`` or the provider SIGKILLed
and restarted). Drawn apart (:data:`MEMBERSHIP_ACTIONS`, each from a generator of its own, so a
seed's other actions are those it had before): a ``maxSurge: 0`` rollout every 30 s
(``surge-zero-rollout``), and, every minute, a Machine deleted with its etcd-quorum hook taken
off by hand (``hook-off``, the escape hatch, preferably on a Machine whose member is dead), whose
member the operator must then remove; and (:data:`COMPONENT_ACTIONS`) a live Machine's
kube-apiserver, controller manager or scheduler not ready for a few seconds every 20 s
(``component-fault``), and every minute a template whose new Machines' component never gets
ready, fixed 10–20 s later (``broken-template``). And per run (:func:`host_cap`): a host pool of
:data:`HOST_CAP` per failure domain for half of the runs whose schedule stays at 3 replicas or
fewer, so that every domain keeps a spare host and every run must still converge (the reasoning
is :func:`host_cap`'s).

The injector keeps a fault budget: it never itself takes down more members at
once than the cluster can lose ((voters − 1) / 2, less the members already unhealthy or killed
by the injector, counting a removal the operator may make at any moment as made, the early
removal a ``maxSurge: 0`` rollout marks included: :func:`fault_budget`), so a quorum loss is the
operator's doing.

What :func:`one_run` checks, from the quorum monitor's and the observer's 100 ms samples and not
from the operator's own claims:

* quorum is never lost (a stretch without a healthy quorum longer than an etcd election);
* voters never rise above the desired count + 1;
* two learners are never promoted together (voters never rise by 2 between two samples);
* Machines are added one at a time (never two, not deleting, both not yet Running);
* one remediation at a time (the Machine of a new ``status.lastRemediation`` only once the
  previous one's is gone, or held by the etcd-quorum hook on its healthy voter), and none while
  another Machine is being created (but one with no member yet when the remediated Machine's
  member is an unhealthy voter, which etcd would not let join);
* a healthy voter is never removed while every voter is healthy and fewer than the desired
  count would be left (a replacement votes first: the fault tolerance the user asked for is
  lowered only by failures, never by the operator) — but for the ``maxSurge: 0`` early removal:
  one voter of a Machine the ControlPlane marked ``controlplane.cpo.dev/remove-member-first``,
  leaving exactly desired − 1, never while the Machine of the previous early removal is still
  there. That dip is safe to accept because the user chose it (``maxSurge: 0`` documents one
  voter of fault tolerance as each replacement's price) and because the fault budget counts the
  marked voter as removed from the moment of the mark, so no injected fault is ever added to it:
  a quorum loss on top of the dip would still be the operator's;
* a member whose Machine's hook was taken off by hand stops voting within the grace plus
  :data:`ORPHAN_SLACK` of its Machine's going;
* two ``cpo run`` never lead together for longer than the renew deadline (each replica's
  ``leader_election_master_status`` is sampled every 200 ms);
* the webhook refuses every even replica count the schedule tries;
* after the schedule, with every fault cleared, the world converges within
  :data:`CONVERGE_TIMEOUT`: the desired voters, no learner, every Machine Running with a Ready
  Node, the ControlPlane ``Available``, no preDrain hook left on a Machine that is not deleting
  and has no member;
* every acknowledged write is read back (linearizable) with its value;
* no etcd member and no ``cpo`` process is left once the world is stopped.

A failing run prints its seed and writes its schedule, its timeline (JSON and PNG) and the
processes' logs under ``--out``, so ``--runs 1 --seed <seed>`` replays the same schedule.

Its worlds end as the demo's do (:mod:`demo.lifetime`): Ctrl-C, SIGTERM and SIGHUP stop every run
under way and its world (exit status 128 + the signal's number); killed outright, the campaign
takes its ``cpo`` processes with it; and a campaign (or a ``cpo demo``) ends the etcd members a
killed one left behind before it starts, and says so.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Collection, Coroutine, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from prometheus_client.parser import text_string_to_metric_families

from api.controlplane import API_VERSION as CP_API_VERSION
from controllers.etcdquorum.rules import machine_info
from demo.lifetime import Stopped, StopSignals, end_abandoned_worlds
from demo.monitor import QuorumSample, quorum_losses
from demo.observer import MachineView, Observer, Sample
from demo.report import build_report, plot_timeline, write_json
from demo.tour import CONTROLPLANE, FAULT_ANNOTATION, Tour, describe, settled
from demo.world import ChildProcess, DemoWorld, KubectlError
from demo.writer import EtcdWriter, Verification, WriterStats
from providers.localmachine.etcd_process import ProcessIdentity, recorded_processes
from runtime.client import Client
from runtime.errors import APIError

NAMESPACE = "chaos"
CONVERGE_TIMEOUT = 120.0
"""Seconds the world may take to settle once the schedule ended and every fault is cleared."""
BOOTSTRAP_TIMEOUT = 180.0
"""Seconds the first 3 Machines may take to settle before the schedule starts."""
READOPT_TIMEOUT = 60.0
"""Seconds a ``readopt`` may take to release the Machines, and then to activate the new one."""
RENEW_DEADLINE = 10.0
"""``cpo run``'s leader-election renew deadline: two leaders may overlap at most this long."""
LEADER_POLL = 0.2
MEMBER_FAULTS = ("kill-annotation", "kill-signal", "pause", "notready")
WEIGHTS = {
    "scale": 4,
    "scale-even": 1,
    "template": 2,
    "rollout-after": 1,
    "delete-machine": 2,
    "toggle-ondelete": 1,
    "kill-annotation": 2,
    "kill-signal": 2,
    "pause": 2,
    "notready": 2,
    "kill-operator": 2,
    "kill-provider": 1,
}


# ---------------------------------------------------------------------------------------------- schedule


@dataclass(frozen=True)
class Intent:
    """One scheduled action: ``at`` seconds into the schedule, ``pick`` chooses its target among
    the candidates of that moment (sorted by name), ``value`` is its number (a replica count, or
    how long a fault lasts)."""

    at: float
    kind: str
    pick: float
    value: float


DOMAIN_OUTAGE_EVERY = 60.0
"""Seconds of schedule per failure-domain outage (``kill-domain``)."""


LATER_ACTIONS_EVERY = 30.0
"""Seconds of schedule per action drawn from :data:`LATER_ACTIONS`."""
LATER_ACTIONS = ("rollout-after-ahead", "toggle-max-surge", "readopt")
"""User actions added to the schedule after its first campaigns (see :func:`plan`)."""
ROLLOUT_AFTER_FAR = 3600.0
"""Seconds ahead of a ``rolloutAfter`` that must replace nothing during the run."""


SURGE_ZERO_ROLLOUT_EVERY = 30.0
"""Seconds of schedule per ``surge-zero-rollout``: ``maxSurge`` 0 and a template change at once."""
HOOK_OFF_EVERY = 60.0
"""Seconds of schedule per ``hook-off``: a Machine deleted and its etcd-quorum hook taken off."""
MEMBERSHIP_ACTIONS = ("surge-zero-rollout", "hook-off")
"""User actions that exercise the membership rules of ``maxSurge: 0`` and of members of no
Machine (see :func:`plan`); drawn from generators of their own."""
HOOK_OFF_PATIENCE = 20.0
"""Seconds a ``hook-off`` keeps looking for a dead member, or a fault budget for a live one."""
HOST_CAP = 2
"""Hosts per failure domain of a run given a host pool (:func:`host_cap`)."""
HOST_CAP_CHANCE = 0.5
"""The chance that a run whose schedule allows it gets a host pool."""
COMPONENT_FAULT_EVERY = 20.0
"""Seconds of schedule per ``component-fault``: a live Machine's kube-apiserver, controller manager
or scheduler Pod not ready for a while (the provider's ``*-notready`` faults)."""
BROKEN_TEMPLATE_EVERY = 60.0
"""Seconds of schedule per ``broken-template``: a template whose new Machines' API server,
controller manager or scheduler never gets ready, fixed 10–20 s later."""
COMPONENT_ACTIONS = ("component-fault", "broken-template")
"""The control-plane component faults (see :func:`plan`), each from a generator of its own."""
COMPONENT_FAULTS = ("kube-apiserver-notready", "kube-controller-manager-notready", "kube-scheduler-notready")
MEMBER_WITHOUT_MACHINE_GRACE = 5.0
"""``cpo run --etcd-member-without-machine-grace`` in every world: seconds a dead member of no
Machine waits before the operator removes it."""
REMEDIATION_FLAGS = (
    "--remediation-backoff-initial=1",
    "--remediation-backoff-max=4",
    "--remediation-max-retry=100",
)
"""``cpo run``'s remediation bound in every world: 1 s doubling to 4 s, 100 retries. The
injector's kills land on replacements within ``minHealthyPeriod`` again and again, which the
operator counts as retries of one lineage; with its defaults (30 s doubling to 10 min, 5 retries)
a run would wait minutes, or stop ``ReplacementsFailing``, long past :data:`CONVERGE_TIMEOUT`.
The campaign checks quorum safety under faults, not that bound (its e2e test does)."""


def plan(seed: int, duration: float) -> list[Intent]:
    """The schedule of run ``seed``: an action every 2–7 s for ``duration`` seconds, one
    failure-domain outage per :data:`DOMAIN_OUTAGE_EVERY` seconds at a random moment, and one of
    :data:`LATER_ACTIONS` per :data:`LATER_ACTIONS_EVERY` seconds.

    The outages and the later actions are each drawn from a generator of their own, so adding
    them left every seed's other actions as they were: a seed named in ``docs/reliability.md``
    still replays them."""
    rng = random.Random(seed)
    kinds = list(WEIGHTS)
    intents: list[Intent] = []
    at = rng.uniform(1.0, 4.0)
    while at < duration:
        kind = rng.choices(kinds, weights=[WEIGHTS[k] for k in kinds])[0]
        if kind == "scale":
            value = float(rng.choice((1, 3, 5)))
        elif kind == "scale-even":
            value = float(rng.choice((2, 4)))
        else:
            value = round(rng.uniform(2.0, 8.0), 1)  # how long a fault lasts, or a restart delay
        intents.append(Intent(round(at, 1), kind, rng.random(), value))
        at += rng.uniform(2.0, 7.0)
    intents += periodic(seed, "kill-domain", DOMAIN_OUTAGE_EVERY, duration)
    later = random.Random(f"later-actions-{seed}")
    for _ in range(max(1, int(duration // LATER_ACTIONS_EVERY))):
        at = later.uniform(min(5.0, duration), duration)
        kind = later.choice(LATER_ACTIONS)
        # rolloutAfter: due 5–25 s ahead (inside the run), or far ahead (must replace nothing)
        ahead = later.choice((round(later.uniform(5.0, 25.0), 1), ROLLOUT_AFTER_FAR))
        intents.append(Intent(round(at, 1), kind, later.random(), ahead))
    intents += periodic(seed, "surge-zero-rollout", SURGE_ZERO_ROLLOUT_EVERY, duration)
    intents += periodic(seed, "hook-off", HOOK_OFF_EVERY, duration)
    intents += periodic(seed, "component-fault", COMPONENT_FAULT_EVERY, duration)
    intents += periodic(seed, "broken-template", BROKEN_TEMPLATE_EVERY, duration)
    return sorted(intents, key=lambda intent: intent.at)


def periodic(seed: int, kind: str, every: float, duration: float) -> list[Intent]:
    """One ``kind`` intent per ``every`` seconds of schedule (at least one), each at a moment drawn
    from a generator of its own (named after ``kind`` and the seed), so that adding a kind never
    moves another kind's draws."""
    rng = random.Random(f"{kind}-{seed}")
    found = []
    for _ in range(max(1, int(duration // every))):
        at = rng.uniform(min(5.0, duration), duration)
        found.append(Intent(round(at, 1), kind, rng.random(), 0.0))
    return found


def host_cap(seed: int, intents: Sequence[Intent]) -> int | None:
    """The hosts per failure domain of run ``seed``'s world (``cpo localmachine
    --max-instances-per-domain``), None for no limit: :data:`HOST_CAP` with a chance of
    :data:`HOST_CAP_CHANCE`, drawn from a generator of its own, when the schedule ``intents``
    never asks for more than 3 replicas; else None.

    Every run must still converge, so a cap leaves a spare host in every domain, whatever the
    schedule does. The ControlPlane does not know the hosts: a replacement goes to the domain of
    the Machine it replaces, and the Machine a user or the health check deletes keeps its host
    while its member is a healthy voter, until the replacement votes. In a full domain that
    replacement waits for a host for ever (by design: the escape hatch is the SRE's, and
    ``maxSurge: 0`` rollouts free the host only for the ControlPlane's own deletions). With 3
    Machines over 3 domains and 2 hosts each, every domain has its spare host; 5 replicas fill two
    domains, and a cap of 1 fills all three, so neither could promise convergence under user
    deletions, NotReady remediations and ``maxSurge: 1`` rollouts."""
    capacity = random.Random(f"host-cap-{seed}")
    drawn = capacity.random() < HOST_CAP_CHANCE
    most = max((int(i.value) for i in intents if i.kind == "scale"), default=3)
    return HOST_CAP if drawn and most <= 3 else None


# ---------------------------------------------------------------------------------------------- the run


@dataclass
class RunResult:
    seed: int
    ok: bool = False
    quorum_losses: int = 0
    lost_writes: int = 0
    acknowledged_writes: int = 0
    converged: bool = False
    convergence_seconds: float | None = None
    peak_voters: int = 0
    peak_machines: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    applied: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    host_cap: int | None = None
    """Hosts per failure domain of its world (:func:`host_cap`), None for no limit."""
    early_removals: int = 0
    """``maxSurge: 0`` early removals seen (:func:`early_removals`)."""
    realistic: bool = False
    """Its provider ran with ``--realistic``."""

    def line(self) -> str:
        settle = "-" if self.convergence_seconds is None else f"{self.convergence_seconds:.1f}s"
        status = "ok  " if self.ok else "FAIL"
        text = (
            f"{status} seed {self.seed:>6}: quorum losses {self.quorum_losses}, writes "
            f"{self.acknowledged_writes} acknowledged / {self.lost_writes} lost, converged "
            f"{'yes' if self.converged else 'NO'} ({settle}), peak voters {self.peak_voters}, "
            f"peak Machines {self.peak_machines}, faults {sum(self.faults.values())}, "
            f"hosts per domain {self.host_cap or 'unlimited'}, early removals {self.early_removals}"
        )
        if self.error:
            text += f"; error: {self.error}"
        for violation in self.violations:
            text += f"\n       {violation}"
        return text


KILL_UNSEEN_FOR = 30.0
"""How long a member the injector killed counts as down while the observer still shows it healthy.
A killed member stays down until its Machine is replaced (nothing restarts it), so the cap only
ends the count of a kill that never landed (an annotation the provider did not act on)."""


def fault_budget(sample: Sample | None, desired: int, held: Collection[str]) -> int:
    """How many more members the injector may take down: (voters − 1) / 2 less those down, from
    the observer's latest ``sample``, and less the Machines in ``held``: those whose members the
    injector holds down (paused, Node NotReady) or killed and the sample may not show down yet.

    Down members are counted by name, the sample's and ``held`` together, so a member is counted
    once whether or not the sample has seen it go. A sample is up to 100 ms old and a member's
    health read takes longer than a SIGKILL: a voter of 3 killed and, 300 ms later, with the
    sample still showing 3 healthy, a failure-domain outage must not be allowed to kill a second.

    A removal the operator may make at any moment counts as made: while a voter's Machine is
    being deleted or there are more voters than ``desired``. The injector cannot act atomically
    with it: on a scale-in to 1 the operator may remove the third of 3 voters, and 30 ms later an
    injector still counting 3 would kill one of the 2 left. The operator changes membership at
    most once per 2 s, so one is enough.

    So does a healthy voter no Machine of the sample maps to: the sample joins the Machines, read
    every 100 ms, with the quorum monitor's last member list, which may be older (a member list
    and a health read of every voter take a while). A Machine gone means its member was removed
    first (the hook's order), so the list may still show a member etcd has already dropped: a
    scale-in's removal of the third of 3 voters, and a kill of one of the 2 left.

    That includes the healthy voter of a Machine the ControlPlane marked to lose its member first
    (``maxSurge: 0``; :attr:`~demo.observer.MachineView.remove_member_first`, counted from the
    mark, which comes right before the deletion): the operator removes it before its replacement
    votes, so with 3 voters nothing is left to lose, and a fault added to that planned dip would
    leave quorum to luck.
    """
    if sample is None or sample.voters == 0:
        return 0
    voters = sample.voters
    if (
        voters > desired
        or any(m.deleting and m.etcd_role == "voter" for m in sample.machines)
        or any(m.remove_member_first and m.etcd_role == "voter" for m in sample.machines)
    ):
        voters -= 1
    down_by_name = {m.name for m in sample.machines if m.etcd_role == "voter" and not m.etcd_healthy}
    down_without_machine = max(0, sample.voters - sample.healthy_voters - len(down_by_name))
    mapped = {m.node or m.name for m in sample.machines if m.etcd_role == "voter"}
    healthy_without_machine = max(0, sample.voters - len(mapped) - down_without_machine)
    voters -= healthy_without_machine
    return (voters - 1) // 2 - len(down_by_name | set(held)) - down_without_machine


def unseen_kills(sample: Sample | None, killed: Mapping[str, float], now: float) -> set[str]:
    """The Machines whose members the injector killed (``killed``: name → monotonic time of the
    kill) that ``sample`` still shows as healthy voters, within :data:`KILL_UNSEEN_FOR`."""
    if sample is None:
        return set()
    shown_healthy = {m.name for m in sample.machines if m.etcd_role == "voter" and m.etcd_healthy}
    return {name for name, at in killed.items() if name in shown_healthy and now - at < KILL_UNSEEN_FOR}


@dataclass(frozen=True)
class HookOff:
    """A Machine whose etcd-quorum hook the injector took off by hand (``hook-off``)."""

    at: float
    """Seconds on the observer's clock."""
    machine: str
    members: tuple[str, ...]
    """The names its member may have: the Machine's, and its Node's (the realistic provider's)."""


class Injector:
    """Carries out the intents against the world, inside the fault budget; records what it did."""

    def __init__(self, world: DemoWorld, tour: Tour, observer: Observer, result: RunResult) -> None:
        self.world = world
        self.tour = tour
        self.observer = observer
        self.result = result
        self.started = time.monotonic()
        self.desired = tour.replicas
        self.desired_history: list[tuple[float, int]] = [(0.0, tour.replicas)]
        self.paused: dict[str, ProcessIdentity] = {}
        self.notready: set[str] = set()
        self.killed: dict[str, float] = {}
        self.pending: set[asyncio.Task[None]] = set()
        self.on_delete = False
        self.max_surge = 1
        self.hooks_off: list[HookOff] = []
        self.acting = asyncio.Lock()
        """Held while an action chooses and acts: a background retry (``hook-off``) and the
        schedule's next action must not both spend the same fault budget."""

    def record(self, kind: str, detail: str) -> None:
        self.result.applied.append(
            {"at": round(time.monotonic() - self.started, 1), "kind": kind, "detail": detail}
        )

    async def run(self, intents: Sequence[Intent]) -> None:
        for intent in intents:
            delay = self.started + intent.at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)  # allow-sleep: the schedule's own clock
            try:
                async with self.acting:
                    await self.apply(intent)
            except KubectlError as err:
                self.record(intent.kind, f"refused: {str(err).splitlines()[0][:160]}")
            except Exception as err:  # the injector's own failure: said, and the schedule goes on
                self.record(intent.kind, f"not applied: {type(err).__name__}: {err}")
        if self.pending:
            await asyncio.gather(*self.pending, return_exceptions=True)

    # -- choosing

    def machines(self) -> list[Any]:
        sample = self.observer.latest
        return sorted((m for m in sample.machines if not m.deleting), key=lambda m: m.name) if sample else []

    def budget(self) -> int:
        """How many more members the injector may take down now (:func:`fault_budget`), against
        the smallest replica count in effect within :data:`SCALE_GRACE`: the operator may still
        act on a count the user has just raised (a scale-in's removal landing after a scale-out)."""
        sample = self.observer.latest
        unseen = unseen_kills(sample, self.killed, time.monotonic())
        now = self.now()
        desired = min(desired_values(self.desired_history, now - SCALE_GRACE, now))
        return fault_budget(sample, desired, self.paused.keys() | self.notready | unseen)

    @staticmethod
    def choose(items: Sequence[Any], pick: float) -> Any:
        return items[min(int(pick * len(items)), len(items) - 1)]

    # -- acting

    async def apply(self, intent: Intent) -> None:
        kind = intent.kind
        patch: dict[str, Any]
        if kind == "scale":
            replicas = int(intent.value)
            await self.tour.kubectl("scale", f"controlplane/{CONTROLPLANE}", "--replicas", str(replicas))
            self.desired = replicas
            self.desired_history.append((time.monotonic() - self.observer.started, replicas))
            self.record(kind, f"replicas {replicas}")
        elif kind == "scale-even":
            replicas = int(intent.value)
            try:
                await self.tour.kubectl("scale", f"controlplane/{CONTROLPLANE}", "--replicas", str(replicas))
            except KubectlError as err:
                # A webhook that cannot be called fails closed too (its `cpo run` is being
                # killed); the record keeps that apart from the odd-replica rule's own denial.
                first_line = str(err).splitlines()[0]
                if "denied the request" in first_line:
                    self.record(kind, f"replicas {replicas} refused by the webhook")
                else:
                    other_refusal = f"refused, not by the webhook's rule: {first_line[:160]}"
                    self.record(kind, f"replicas {replicas} {other_refusal}")
                return
            stored = (await self.tour.controlplane())["spec"]["replicas"]
            if stored % 2 == 0:
                self.result.violations.append(f"replicas {replicas} was accepted and stored")
            self.record(kind, f"replicas {replicas} answered without error; stored {stored}")
        elif kind == "template":
            revision = f"r{int(intent.pick * 1e6)}"
            patch = {"spec": {"template": {"spec": {"providerSpec": {"value": {"revision": revision}}}}}}
            await self.tour.kubectl(
                "patch", "controlplane", CONTROLPLANE, "--type", "merge", "-p", json.dumps(patch)
            )
            self.record(kind, f"revision {revision}")
        elif kind == "rollout-after":
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            patch = {"spec": {"rolloutAfter": now}}
            await self.tour.kubectl(
                "patch", "controlplane", CONTROLPLANE, "--type", "merge", "-p", json.dumps(patch)
            )
            self.record(kind, now)
        elif kind == "rollout-after-ahead":
            moment = datetime.now(UTC) + timedelta(seconds=intent.value)
            stamp = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
            await self.merge_patch({"spec": {"rolloutAfter": stamp}})
            self.record(kind, f"{stamp} ({intent.value:g}s ahead)")
        elif kind == "toggle-max-surge":
            # The webhook refuses maxSurge 0 below 3 replicas: the state flips only once stored.
            surge = 1 - self.max_surge
            await self.merge_patch({"spec": {"strategy": {"rollingUpdate": {"maxSurge": surge}}}})
            self.max_surge = surge
            self.record(kind, f"maxSurge {surge}")
        elif kind == "readopt":
            await self.readopt(intent)
        elif kind == "surge-zero-rollout":
            await self.surge_zero_rollout(intent)
        elif kind == "hook-off":
            await self.hook_off(intent)
        elif kind == "component-fault":
            await self.component_fault(intent)
        elif kind == "broken-template":
            await self.broken_template(intent)
        elif kind == "delete-machine":
            machines = self.machines()
            if not machines:
                return self.record(kind, "skipped: no Machine")
            victim = self.choose(machines, intent.pick).name
            await self.tour.kubectl("delete", "machine", victim, "--wait=false")
            self.record(kind, victim)
        elif kind == "toggle-ondelete":
            self.on_delete = not self.on_delete
            strategy = "OnDelete" if self.on_delete else "RollingUpdate"
            patch = {"spec": {"strategy": {"type": strategy}}}
            await self.tour.kubectl(
                "patch", "controlplane", CONTROLPLANE, "--type", "merge", "-p", json.dumps(patch)
            )
            self.record(kind, strategy)
        elif kind in MEMBER_FAULTS:
            await self.member_fault(intent)
        elif kind == "kill-domain":
            await self.kill_domain(intent)
        elif kind == "kill-operator":
            await self.kill_operator(intent)
        elif kind == "kill-provider":
            await self.kill_provider(intent)

    def now(self) -> float:
        """Seconds on the observer's clock (the samples', and :attr:`desired_history`'s)."""
        return time.monotonic() - self.observer.started

    async def surge_zero_rollout(self, intent: Intent) -> None:
        """A rollout under ``maxSurge: 0``: the strategy set to ``RollingUpdate`` with ``maxSurge``
        0 and the template changed, in one patch. The webhook refuses ``maxSurge`` 0 below 3
        replicas, so from 1 replica the ControlPlane is scaled to 3 first, as a user would."""
        if self.desired < 3:
            await self.tour.kubectl("scale", f"controlplane/{CONTROLPLANE}", "--replicas", "3")
            self.desired = 3
            self.desired_history.append((self.now(), 3))
            self.record("scale", "replicas 3 (for a maxSurge 0 rollout)")
        revision = f"z{int(intent.pick * 1e6)}"
        await self.merge_patch(
            {
                "spec": {
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}},
                    "template": {"spec": {"providerSpec": {"value": {"revision": revision}}}},
                }
            }
        )
        self.max_surge = 0
        self.on_delete = False
        self.record(intent.kind, f"maxSurge 0, revision {revision}")

    async def hook_off(self, intent: Intent) -> None:
        """The escape hatch, as an SRE uses it: delete a Machine and take the etcd-quorum hook off
        it by hand, so that its instance goes at once and its member stays behind, of no Machine
        and no Node, for the operator to remove (dead) within its grace.

        Preferably a Machine whose member is a dead voter (killed by the injector, or shown
        unhealthy); else a healthy voter's, inside the fault budget (its instance stops with the
        hook gone: a member taken down, counted as a kill). When neither is there (a rollout
        under way uses the budget up), it tries again every second in the background, for up to
        :data:`HOOK_OFF_PATIENCE` seconds, while the schedule goes on; each attempt holds
        :attr:`acting`, as the schedule's actions do, so two never spend one fault budget."""
        if await self.try_hook_off(intent):
            return

        async def retry() -> None:
            deadline = time.monotonic() + HOOK_OFF_PATIENCE
            while time.monotonic() < deadline:
                await asyncio.sleep(1.0)  # allow-sleep: the retry period of a deadline loop
                try:
                    async with self.acting:
                        if await self.try_hook_off(intent):
                            return
                except KubectlError as err:
                    return self.record(intent.kind, f"refused: {str(err).splitlines()[0][:160]}")
            self.record(intent.kind, f"skipped: no dead member nor fault budget for {HOOK_OFF_PATIENCE:g}s")

        task = asyncio.create_task(retry())
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def try_hook_off(self, intent: Intent) -> bool:
        """One attempt of :meth:`hook_off`: whether it found a Machine and acted."""
        sample = self.observer.latest
        if sample is None:
            return False
        dead = sorted(
            (
                m
                for m in sample.machines
                if m.etcd_role == "voter" and (not m.etcd_healthy or m.name in self.killed)
            ),
            key=lambda m: m.name,
        )
        if dead:
            victim, how = self.choose(dead, intent.pick), "dead member"
        else:
            live = self.voters_to_fault()
            if self.budget() < 1 or not live:
                return False
            victim, how = self.choose(live, intent.pick), "healthy member"
            self.killed[victim.name] = time.monotonic()
            self.result.faults[intent.kind] += 1
        no_hooks = '{"spec":{"lifecycleHooks":{"preDrain":null}}}'
        try:
            if not victim.deleting:
                await self.tour.kubectl("delete", "machine", victim.name, "--wait=false")
            await self.tour.kubectl("patch", "machine", victim.name, "--type=merge", "-p", no_hooks)
        except KubectlError as err:
            if "NotFound" not in str(err):
                raise
            # Gone since the sample (remediated, its dead member removed): look again.
            self.killed.pop(victim.name, None)
            return False
        members = tuple(sorted({victim.name, *([victim.node] if victim.node else [])}))
        self.hooks_off.append(HookOff(self.now(), victim.name, members))
        self.record(intent.kind, f"{victim.name} ({how}) deleted, hook taken off")
        return True

    async def merge_patch(self, patch: dict[str, Any]) -> None:
        await self.tour.kubectl(
            "patch", "controlplane", CONTROLPLANE, "--type", "merge", "-p", json.dumps(patch)
        )

    async def readopt(self, intent: Intent) -> None:
        """Delete the ControlPlane (its Machines are released and stay), create it again Inactive
        over them, and make it Active: the adoption of a running control plane, under faults.

        Only from a settled count (``desired`` Machines, none being deleted): a Machine being
        deleted when the ControlPlane goes loses its guard with it (by design: a released
        Machine is no longer guarded), and its member would stay behind as a stranger the new
        ControlPlane refuses to count. The webhook refuses activation while the replicas differ
        from the Machines, so it is retried for up to :data:`READOPT_TIMEOUT`."""
        sample = self.observer.latest
        machines = sample.machines if sample is not None else ()
        if any(m.deleting for m in machines) or len(machines) != self.desired:
            return self.record(
                intent.kind, f"skipped: {len(machines)} Machines for {self.desired}, or one deleting"
            )
        stored = await self.tour.controlplane()
        # The observer's sample may be a moment old, and the controller may delete a Machine in
        # that moment: pause it (no Machine created or deleted while paused), let a reconcile see
        # the pause, and check the Machines as they are now, before the deletion.
        deadline = time.monotonic() + READOPT_TIMEOUT
        await self.merge_patch({"spec": {"paused": True}})
        while not await self.pause_observed():
            if time.monotonic() > deadline:
                await self.merge_patch({"spec": {"paused": False}})
                return self.record(
                    intent.kind, f"skipped: the pause not observed within {READOPT_TIMEOUT:g}s"
                )
            await asyncio.sleep(0.25)  # allow-sleep: the poll period of a deadline loop
        live = json.loads(await self.tour.kubectl("get", "machines", "-o", "json"))["items"]
        if any(m["metadata"].get("deletionTimestamp") for m in live) or len(live) != self.desired:
            await self.merge_patch({"spec": {"paused": False}})
            return self.record(
                intent.kind, f"skipped once paused: {len(live)} Machines for {self.desired}, or one deleting"
            )
        await self.tour.kubectl("delete", "controlplane", CONTROLPLANE, "--wait=false")
        while await self.controlplane_exists():
            if time.monotonic() > deadline:
                return self.record(intent.kind, f"not released within {READOPT_TIMEOUT:g}s")
            await asyncio.sleep(0.25)  # allow-sleep: the poll period of a deadline loop
        again = {
            "apiVersion": stored["apiVersion"],
            "kind": stored["kind"],
            "metadata": {"name": CONTROLPLANE, "namespace": NAMESPACE},
            "spec": {**stored["spec"], "state": "Inactive"},
        }
        await self.tour.kubectl("create", "-f", "-", input_text=json.dumps(again))
        refusal = ""
        while time.monotonic() < deadline:
            try:
                await self.merge_patch({"spec": {"state": "Active"}})
            except KubectlError as err:
                refusal = str(err).splitlines()[0][:160]
                await asyncio.sleep(1.0)  # allow-sleep: the retry period of a deadline loop
                continue
            return self.record(
                intent.kind, f"released, created Inactive, activated ({len(machines)} Machines)"
            )
        self.record(intent.kind, f"not activated within {READOPT_TIMEOUT:g}s: {refusal}")

    async def pause_observed(self) -> bool:
        """The ControlPlane is paused and its status reports the generation that paused it."""
        cp = await self.tour.controlplane()
        status = cp.get("status") or {}
        return (
            bool(cp["spec"].get("paused"))
            and status.get("observedGeneration") == cp["metadata"]["generation"]
        )

    async def controlplane_exists(self) -> bool:
        try:
            await self.tour.kubectl("get", "controlplane", CONTROLPLANE, "-o", "name")
        except KubectlError as err:
            if "NotFound" in str(err) or "not found" in str(err):
                return False
            raise
        return True

    def voters_to_fault(self) -> list[Any]:
        """The voters' Machines the injector has not already paused or killed."""
        return [
            m
            for m in self.machines()
            if m.etcd_role == "voter" and m.name not in self.paused and m.name not in self.killed
        ]

    async def member_fault(self, intent: Intent) -> None:
        voters = self.voters_to_fault()
        budget = self.budget()
        if budget < 1 or not voters:
            return self.record(intent.kind, f"skipped: fault budget {budget}")
        victim = self.choose(voters, intent.pick).name
        self.result.faults[intent.kind] += 1
        if intent.kind == "kill-annotation":
            await self.tour.kubectl("annotate", "--overwrite", "machine", victim, f"{FAULT_ANNOTATION}=kill")
            self.killed[victim] = time.monotonic()
        elif intent.kind == "kill-signal":
            process = member_process(self.world.state_dir, victim)
            if process is None:
                return self.record(intent.kind, f"skipped: no process of {victim}")
            process.signal(signal.SIGKILL)
            self.killed[victim] = time.monotonic()
        elif intent.kind == "pause":
            process = member_process(self.world.state_dir, victim)
            if process is None:
                return self.record(intent.kind, f"skipped: no process of {victim}")
            process.signal(signal.SIGSTOP)
            self.paused[victim] = process
            self.later(intent.value, self.resume(victim))
        elif intent.kind == "notready":
            await self.tour.kubectl(
                "annotate", "--overwrite", "machine", victim, f"{FAULT_ANNOTATION}=notready"
            )
            self.notready.add(victim)
            self.later(intent.value, self.ready_again(victim))
        self.record(
            intent.kind, f"{victim} for {intent.value}s" if intent.kind in ("pause", "notready") else victim
        )

    async def component_fault(self, intent: Intent) -> None:
        """One live Machine's kube-apiserver, controller manager or scheduler not ready for 3–10 s
        (its Node and member stay healthy: no fault budget is spent). It holds every other step
        meanwhile; the operator must neither deadlock on it nor count the Machine as ready."""
        candidates = [m for m in self.machines() if m.name not in self.killed and m.name not in self.notready]
        if not candidates:
            return self.record(intent.kind, "skipped: no Machine")
        victim = self.choose(candidates, intent.pick).name
        fault = COMPONENT_FAULTS[int(intent.pick * 1e3) % len(COMPONENT_FAULTS)]
        lasts = round(3.0 + 7.0 * ((intent.pick * 1e6) % 1.0), 1)
        await self.tour.kubectl("annotate", "--overwrite", "machine", victim, f"{FAULT_ANNOTATION}={fault}")
        self.notready.add(victim)  # its annotation is cleared like a NotReady Node's
        self.later(lasts, self.ready_again(victim))
        self.result.faults[intent.kind] += 1
        self.record(intent.kind, f"{victim}: {fault} for {lasts}s")

    async def broken_template(self, intent: Intent) -> None:
        """A template whose new Machines carry a component fault (``providerSpec.value.faults``),
        fixed 10–20 s later: the rollout must hold at its first replacement, and the fix must
        delete that replacement first."""
        fault = COMPONENT_FAULTS[int(intent.pick * 1e3) % len(COMPONENT_FAULTS)]
        lasts = round(10.0 + 10.0 * ((intent.pick * 1e6) % 1.0), 1)
        revision = f"broken-{int(intent.pick * 1e6)}"
        value = {"revision": revision, "faults": [fault]}
        await self.merge_patch({"spec": {"template": {"spec": {"providerSpec": {"value": value}}}}})
        self.result.faults[intent.kind] += 1
        self.record(intent.kind, f"revision {revision} with {fault}, fixed after {lasts}s")
        self.later(lasts, self.fix_template())

    async def fix_template(self) -> None:
        """Take the fault out of the template, retrying while the API refuses (the webhook of a
        ``cpo run`` being killed fails closed): a fix that never lands would leave the user's
        last word a broken template, which no run can converge from."""
        fixed = {"faults": None, "revision": f"fixed-{int(time.monotonic() * 1e3)}"}
        for _ in range(60):
            async with self.acting:
                try:
                    await self.merge_patch(
                        {"spec": {"template": {"spec": {"providerSpec": {"value": fixed}}}}}
                    )
                    return
                except KubectlError as err:
                    if "not found" in str(err).lower():
                        return  # the ControlPlane is gone (a readopt): its successor has no fault
            await asyncio.sleep(1.0)  # allow-sleep: retrying a refused user action

    async def kill_domain(self, intent: Intent) -> None:
        """A failure domain lost: SIGKILL of every member in one domain at once, the domain with
        the most voters the fault budget covers. Two members failing together is what makes the
        ControlPlane's one-remediation-at-a-time rule matter."""
        budget = self.budget()
        by_domain: dict[str, list[str]] = {}
        for machine in self.voters_to_fault():
            if machine.etcd_healthy:
                by_domain.setdefault(machine.failure_domain, []).append(machine.name)
        within = {domain: names for domain, names in by_domain.items() if len(names) <= budget}
        if not within:
            counts = ", ".join(
                f"{domain or '(none)'} {len(names)}" for domain, names in sorted(by_domain.items())
            )
            return self.record(intent.kind, f"skipped: fault budget {budget}; voters by domain: {counts}")
        most = max(len(names) for names in within.values())
        domain = self.choose(sorted(d for d, names in within.items() if len(names) == most), intent.pick)
        killed = []
        for name in within[domain]:
            process = member_process(self.world.state_dir, name)
            if process is not None:
                process.signal(signal.SIGKILL)
                self.killed[name] = time.monotonic()
                killed.append(name)
        if not killed:
            return self.record(intent.kind, f"skipped: no process in {domain}")
        self.result.faults[intent.kind] += 1
        self.record(intent.kind, f"{domain}: {', '.join(killed)}")

    def later(self, delay: float, action: Any) -> None:
        async def run() -> None:
            await asyncio.sleep(delay)  # allow-sleep: how long the fault lasts
            await action

        task = asyncio.create_task(run())
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def resume(self, name: str) -> None:
        process = self.paused.pop(name, None)
        if process is not None:
            process.signal(signal.SIGCONT)

    async def ready_again(self, name: str) -> None:
        self.notready.discard(name)
        with contextlib.suppress(KubectlError):
            await self.tour.kubectl("annotate", "machine", name, f"{FAULT_ANNOTATION}-")

    async def kill_operator(self, intent: Intent) -> None:
        leader = await leading_operator(self.world)
        if leader is None:
            return self.record(intent.kind, "skipped: no replica leads")
        child = self.world.child(self.world.operator_name(leader))
        await self.kill_and_restart(intent, child, self.world.start_operator(leader), whole_group=True)

    async def kill_provider(self, intent: Intent) -> None:
        # The process alone: the members it started outlive it, as machines outlive their controller.
        child = self.world.child("localmachine")
        await self.kill_and_restart(intent, child, self.world.start_provider(), whole_group=False)

    async def kill_and_restart(
        self, intent: Intent, child: ChildProcess, restart: Coroutine[Any, Any, Any], *, whole_group: bool
    ) -> None:
        """SIGKILL ``child`` (its whole process group, or the process alone) and run ``restart``
        ``intent.value`` seconds later."""
        if child.process is None or child.process.returncode is not None:
            restart.close()
            return self.record(intent.kind, f"skipped: {child.name} is not running")
        if whole_group:
            os.killpg(child.process.pid, signal.SIGKILL)
        else:
            os.kill(child.process.pid, signal.SIGKILL)
        await child.process.wait()
        self.result.faults[intent.kind] += 1
        self.record(intent.kind, f"{child.name} killed; restarted after {intent.value}s")
        self.later(intent.value, restart)

    async def clear(self) -> None:
        """End every fault: resume paused members, Nodes ready again, fault annotations off, every
        killed process running again."""
        for task in list(self.pending):
            with contextlib.suppress(Exception):
                await task
        for name in list(self.paused):
            await self.resume(name)
        for name in list(self.notready):
            await self.ready_again(name)
        for machine in self.machines():
            with contextlib.suppress(KubectlError):
                await self.tour.kubectl("annotate", "machine", machine.name, f"{FAULT_ANNOTATION}-")
        if not self.world.child("localmachine").running:
            await self.world.start_provider()
        for index in range(self.world.operators):
            if not self.world.child(self.world.operator_name(index)).running:
                await self.world.start_operator(index)


def member_process(state_dir: Path, machine: str) -> ProcessIdentity | None:
    """The live etcd process of ``machine``'s member, from the provider's state files."""
    return next(iter(recorded_processes(state_dir, machine)), None)


async def leader_status(port: int) -> bool | None:
    """What one ``cpo run`` says of its own leadership (None: it did not answer)."""
    try:
        timeout = aiohttp.ClientTimeout(total=1.0)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(f"http://127.0.0.1:{port}/metrics") as response,
        ):
            text = await response.text()
    except (aiohttp.ClientError, TimeoutError, OSError):
        return None
    for family in text_string_to_metric_families(text):
        if family.name == "leader_election_master_status":
            return any(sample.value == 1 for sample in family.samples)
    return False


async def leading_operator(world: DemoWorld) -> int | None:
    for index, ports in enumerate(world.operator_ports):
        if await leader_status(ports.metrics):
            return index
    return None


class LeaderWatch:
    """Samples every replica's ``leader_election_master_status``; :meth:`longest_overlap` is the
    longest stretch in which two replicas both said they lead."""

    def __init__(self, world: DemoWorld) -> None:
        self.world = world
        self.samples: list[tuple[float, tuple[bool, ...]]] = []
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LeaderWatch:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task

    async def _run(self) -> None:
        while not self._stop.is_set():
            states = await asyncio.gather(*(leader_status(p.metrics) for p in self.world.operator_ports))
            self.samples.append((time.monotonic(), tuple(bool(s) for s in states)))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), LEADER_POLL)

    def longest_overlap(self) -> float:
        longest, since = 0.0, None
        for at, states in self.samples:
            if sum(states) > 1:
                since = at if since is None else since
                longest = max(longest, at - since)
            else:
                since = None
        return longest


async def hooks_left_without_member(client: Client, sample: Sample) -> list[str]:
    """Machines not being deleted whose preDrain hook stays though no member belongs to them."""
    listed = await client.list("machine.openshift.io/v1beta1", "Machine", namespace=NAMESPACE)
    with_member = {m.name for m in sample.machines if m.etcd_role != "-"}
    infos = [machine_info(machine) for machine in listed.get("items") or ()]
    return [i.name for i in infos if i.has_hook and not i.deleting and i.name not in with_member]


async def converge(
    client: Client, observer: Observer, desired: int, within: float = CONVERGE_TIMEOUT
) -> float | None:
    """Seconds until the world settles at ``desired`` (see the module docstring), None past
    ``within``. Reads through the API client, not kubectl: a kubectl process four times a second
    would cost more CPU than the world it watches."""
    began = time.monotonic()
    check = settled(desired)
    while time.monotonic() - began < within:
        sample = observer.latest
        if sample is not None:
            with contextlib.suppress(APIError):
                controlplane = await client.get(
                    CP_API_VERSION, "ControlPlane", CONTROLPLANE, namespace=NAMESPACE
                )
                if check(sample, controlplane) and not await hooks_left_without_member(client, sample):
                    return time.monotonic() - began
        await asyncio.sleep(0.25)  # allow-sleep: the poll period of a deadline loop
    return None


SCALE_GRACE = 2.0
"""Seconds after a user's scale change during which the previous replica count still bounds the
voters: a promotion decided on the old count can land just after the change (the operator's
cache learns of it a moment later, and no write to etcd and the API server is atomic)."""


def desired_values(desired_history: Sequence[tuple[float, int]], start: float, end: float) -> list[int]:
    """Every replica count in effect at some moment of ``[start, end]``."""
    values = [desired_history[0][1]]
    for since, replicas in desired_history:
        if since <= start:
            values = [replicas]
        elif since <= end:
            values.append(replicas)
    return values


def timeline_violations(samples: Sequence[Sample], desired_history: Sequence[tuple[float, int]]) -> list[str]:
    """Voters rising above desired + 1 (desired: the largest count in effect within
    :data:`SCALE_GRACE` before), or by two at once, in the observer's samples."""
    found: list[str] = []
    for before, after in itertools.pairwise(samples):
        if after.voters > before.voters:
            if after.voters - before.voters >= 2:
                found.append(
                    f"t={after.at:.1f}s voters {before.voters} → {after.voters}: two promoted together"
                )
            limit = max(desired_values(desired_history, after.at - SCALE_GRACE, after.at)) + 1
            if after.voters > limit:
                found.append(f"t={after.at:.1f}s voters rose to {after.voters}, above desired + 1 = {limit}")
    return found


def machines_added_together(samples: Sequence[Sample]) -> list[str]:
    """Two Machines, neither deleting, both not yet Running at once in the observer's samples: the
    ControlPlane adds one Machine at a time (each new one Running before the next is created)."""
    found: list[str] = []
    ever_running: set[str] = set()
    reported: set[tuple[str, ...]] = set()
    for sample in samples:
        ever_running.update(m.name for m in sample.machines if m.phase == "Running")
        new = tuple(m.name for m in sample.machines if not m.deleting and m.name not in ever_running)
        if len(new) >= 2 and new not in reported:
            reported.add(new)
            found.append(f"t={sample.at:.1f}s Machines {', '.join(new)} added together (none Running yet)")
    return found


def remediation_starts(samples: Sequence[Sample]) -> Iterator[tuple[int, str]]:
    """Each index at which a new Machine appears in the ControlPlane's
    ``status.lastRemediation`` (one not remediated before), with that Machine's name."""
    remediated = {s.last_remediation for s in samples[:1] if s.last_remediation}
    for index in range(1, len(samples)):
        new = samples[index].last_remediation
        if new and new not in remediated:
            remediated.add(new)
            yield index, new


def remediations_together(samples: Sequence[Sample]) -> list[str]:
    """A remediation started (a new Machine in the ControlPlane's ``status.lastRemediation``)
    while an earlier remediated Machine was still there, other than one the etcd-quorum hook
    holds (being deleted while its member is a healthy voter: it goes only once a replacement
    votes). Judged on the samples on both sides of the change, so a Machine gone meanwhile is
    not counted."""
    found: list[str] = []
    remediated = {s.last_remediation for s in samples[:1] if s.last_remediation}
    for index, new in remediation_starts(samples):
        before, after = samples[index - 1], samples[index]
        still_there = {m.name for m in after.machines}
        unfinished = [
            m.name
            for m in before.machines
            if m.name in remediated
            and m.name in still_there
            and not (m.deleting and m.etcd_role == "voter" and m.etcd_healthy)
        ]
        if unfinished:
            found.append(
                f"t={after.at:.1f}s remediation of {new} started while that of {', '.join(unfinished)} "
                "had not finished"
            )
        remediated.add(new)
    return found


CACHE_GRACE = 1.0
"""Seconds a Machine must have been seen before a decision that overlooked it counts: the
operator decides on its cache, which learns of a change a moment after the API server."""


def remediations_while_creating(samples: Sequence[Sample]) -> list[str]:
    """A remediation started (a new Machine in the ControlPlane's ``status.lastRemediation``)
    while another Machine was being created: neither deleting, ``Running`` nor ``Failed``, and not
    marked for remediation itself, in the sample on each side of the change and from
    :data:`CACHE_GRACE` before it. The ControlPlane lets such a Machine finish first, except one
    with no member yet when the remediated Machine's member is an unhealthy voter (etcd takes no
    member while a voter is unhealthy, so waiting would wait for ever): such a pair, in any of
    those samples, is not counted."""
    found: list[str] = []
    for index, new in remediation_starts(samples):
        after = samples[index]
        since = after.at - CACHE_GRACE
        earlier = next((s for s in reversed(samples[:index]) if s.at <= since), None)
        if earlier is None:
            continue
        window = [earlier, *(s for s in samples[: index + 1] if s.at > since)]
        views = [{m.name: m for m in s.machines} for s in window]
        target_voter_unhealthy = any(
            (t := v.get(new)) is not None and t.etcd_role == "voter" and not t.etcd_healthy for v in views
        )
        creating = []
        for machine in after.machines:
            seen = [v.get(machine.name) for v in views]
            if machine.name == new or not all(m is not None and _being_created(m) for m in seen):
                continue
            if target_voter_unhealthy and any(m is not None and m.etcd_role == "-" for m in seen):
                continue
            creating.append(machine.name)
        if creating:
            found.append(
                f"t={after.at:.1f}s remediation of {new} started while {', '.join(creating)} "
                "was being created"
            )
    return found


def _being_created(machine: MachineView) -> bool:
    return not (machine.deleting or machine.phase in ("Running", "Failed") or machine.marked_unhealthy)


MARK_WINDOW = 30.0
"""Seconds before a removal within which the observer must have seen its Machine marked
(:attr:`~demo.observer.MachineView.remove_member_first`) for it to count as an early removal:
the mark comes right before the deletion, and the removal after the hook controller's next pass."""


def marked_members(machines: Sequence[Sample], start: float, end: float) -> dict[str, str]:
    """Member name → Machine, for every Machine the observer saw marked to lose its member first
    in ``[start, end]``; a member is named after its Machine, or (realistic provider) its Node."""
    found: dict[str, str] = {}
    for sample in machines:
        if start <= sample.at <= end:
            for machine in sample.machines:
                if machine.remove_member_first:
                    found[machine.name] = machine.name
                    if machine.node:
                        found[machine.node] = machine.name
    return found


def still_there(machines: Sequence[Sample], name: str, start: float, end: float) -> bool:
    """Machine ``name`` is in every observer sample of ``[start, end]`` (and there is one)."""
    window = [s for s in machines if start <= s.at <= end]
    return bool(window) and all(any(m.name == name for m in s.machines) for s in window)


def healthy_voter_removals(
    samples: Sequence[QuorumSample],
    desired_history: Sequence[tuple[float, int]],
    machines: Sequence[Sample] = (),
) -> list[str]:
    """A voter removed while every voter was healthy and the voters left are fewer than desired,
    in the quorum monitor's samples: the cluster's fault tolerance lowered by the operator, not by
    a failure (a replacement must vote first). Desired is the smallest count in effect from
    :data:`SCALE_GRACE` before the removal (one decided on the old count can land just after a
    scale-out) to a second after it (the injector records a scale-in when kubectl returns).

    One exception, the ``maxSurge: 0`` early removal: a single voter whose Machine the observer's
    samples (``machines``) show marked to lose its member first (:func:`marked_members`), leaving
    exactly desired − 1. Still flagged: a marked removal that leaves fewer, and an early removal
    while the Machine of the previous one is still there (one early removal at a time: the
    operator waits for it to go, :data:`CACHE_GRACE` allowed for its cache)."""
    return _voter_removals(samples, desired_history, machines)[0]


def early_removals(
    samples: Sequence[QuorumSample],
    desired_history: Sequence[tuple[float, int]],
    machines: Sequence[Sample] = (),
) -> list[str]:
    """The ``maxSurge: 0`` early removals :func:`healthy_voter_removals` accepted, as
    ``t=<at>s <member> (<Machine>)``: the campaign counts them, to show the exception was used."""
    return _voter_removals(samples, desired_history, machines)[1]


def _voter_removals(
    samples: Sequence[QuorumSample],
    desired_history: Sequence[tuple[float, int]],
    machines: Sequence[Sample],
) -> tuple[list[str], list[str]]:
    """:func:`healthy_voter_removals`'s findings, and the early removals it accepted."""
    found: list[str] = []
    early: list[str] = []
    accepted: list[str] = []

    def desired_at(at: float) -> int:
        return min(desired_values(desired_history, at - SCALE_GRACE, at + 1.0))

    readable = [s for s in samples if s.error is None]
    for before, after in itertools.pairwise(readable):
        voters_before = {name for name in before.machines if not name.endswith("~")}
        members_after = {name.removesuffix("~") for name in after.machines}
        removed = sorted(voters_before - members_after)
        if not removed or before.healthy_voters < before.voters:
            continue
        desired = desired_at(after.at)
        left = before.voters - len(removed)
        if left >= desired:
            continue
        marked = marked_members(machines, after.at - MARK_WINDOW, after.at + 1.0)
        if len(removed) == 1 and removed[0] in marked and left == desired - 1:
            machine = marked[removed[0]]
            previous = [
                m
                for m in early
                if m != machine and still_there(machines, m, after.at - CACHE_GRACE, after.at)
            ]
            if previous:
                found.append(
                    f"t={after.at:.1f}s early removal of {removed[0]} ({machine}) while the Machine of "
                    f"the previous one, {', '.join(previous)}, was still there"
                )
            early.append(machine)
            accepted.append(f"t={after.at:.1f}s {removed[0]} ({machine})")
            continue
        how = " (an early removal may leave desired − 1, no fewer)" if set(removed) & marked.keys() else ""
        found.append(
            f"t={after.at:.1f}s healthy voter(s) {', '.join(removed)} removed while all "
            f"{before.voters} voters were healthy: {left} left, desired {desired}{how}"
        )
    return found, accepted


ORPHAN_SLACK = 60.0
"""Seconds beyond the grace within which a dead member of no Machine must be gone: the operator's
pacing, a leader's restart and a paused ControlPlane (``readopt``) may hold it that long."""


def members_left_without_machine(
    hooks_off: Sequence[HookOff],
    machines: Sequence[Sample],
    samples: Sequence[QuorumSample],
    grace: float,
) -> list[str]:
    """The Machines whose hook the injector took off (``hooks_off``) whose member still voted
    ``grace`` + :data:`ORPHAN_SLACK` seconds after the Machine was gone (first missing from the
    observer's ``machines`` samples), by the quorum monitor's ``samples``. A replacement may join
    under the same name (the realistic provider hands the freed address, and so the Node's name,
    to it) but only as a learner, once the old member is removed: a sample with no voter of that
    name is the removal. Not judged when the samples end before the deadline (the convergence
    check then speaks), nor when the Machine never went."""
    found: list[str] = []
    readable = [s for s in samples if s.error is None]
    for hook in hooks_off:
        gone = next(
            (s.at for s in machines if s.at >= hook.at and all(m.name != hook.machine for m in s.machines)),
            None,
        )
        if gone is None:
            continue
        deadline = gone + grace + ORPHAN_SLACK
        window = [s for s in readable if hook.at <= s.at <= deadline]
        if any(not set(hook.members) & set(s.machines) for s in window):
            continue
        if not readable or readable[-1].at < deadline:
            continue
        found.append(
            f"t={deadline:.1f}s the member of {hook.machine} (hook taken off at t={hook.at:.1f}s, Machine "
            f"gone at t={gone:.1f}s) still votes {grace + ORPHAN_SLACK:g}s later"
        )
    return found


async def one_run(seed: int, duration: float, out: Path, *, realistic: bool = False) -> RunResult:
    intents = plan(seed, duration)
    result = RunResult(seed, host_cap=host_cap(seed, intents), realistic=realistic)
    directory = Path(tempfile.mkdtemp(prefix=f"cpo-chaos-{seed}-"))
    world = DemoWorld(
        directory,
        namespace=NAMESPACE,
        operators=2,
        realistic=realistic,
        max_instances_per_domain=result.host_cap,
        operator_flags=(
            f"--etcd-member-without-machine-grace={MEMBER_WITHOUT_MACHINE_GRACE:g}",
            *REMEDIATION_FLAGS,
        ),
    )
    observer: Observer | None = None
    injector: Injector | None = None
    writer: EtcdWriter | None = None
    verification: Verification | None = None
    stopped = False
    try:
        await world.start()
        async with await Client.from_kubeconfig(str(world.kubeconfig_path)) as client:
            observer = Observer(
                client, NAMESPACE, controlplane=CONTROLPLANE, tls_secret=world.etcd_client_secret
            )
            watched = observer
            writer = EtcdWriter(
                observer.endpoints, prefix="/cpo-chaos/w/", client_options=lambda: watched.client_options
            )
            observer.writes_acknowledged = lambda: len(writer.stats.acknowledged)
            tour = Tour(
                world.kubeconfig_path, NAMESPACE, observer, replicas=3, fast=True, step_budget=180,
                tls_secret=world.etcd_client_secret,
            )  # fmt: skip
            async with observer, writer, LeaderWatch(world) as leaders:
                await tour.kubectl("apply", "-f", "-", input_text=yaml.safe_dump(tour.manifest()))
                if await converge(client, observer, 3, within=BOOTSTRAP_TIMEOUT) is None:
                    raise RuntimeError(f"the 3-replica ControlPlane did not settle in {BOOTSTRAP_TIMEOUT:g}s")
                injector = Injector(world, tour, observer, result)
                await injector.run(intents)
                await injector.clear()
                settle = await converge(client, observer, injector.desired)
                result.converged = settle is not None
                result.convergence_seconds = settle
                if not result.converged and observer.latest is not None:
                    controlplane = await tour.controlplane()
                    snapshot = await tour.kubectl(
                        "get", "controlplanes,machines,machinehealthchecks", "-o", "yaml"
                    )
                    (world.directory / "logs" / "objects.yaml").write_text(snapshot)
                    result.violations.append(
                        f"not converged in {CONVERGE_TIMEOUT:g}s: {describe(observer.latest, controlplane)}"
                    )
                await writer.stop()
                try:
                    verification = await writer.verify(observer.endpoints())
                except Exception as err:  # no etcd to read from: said, and the other checks still run
                    result.violations.append(f"acknowledged writes could not be read back: {err}")
            if verification is None:
                result.acknowledged_writes = len(writer.stats.acknowledged)
            else:
                result.acknowledged_writes = verification.acknowledged
                result.lost_writes = len(verification.lost)
                if verification.lost:
                    result.violations.append(f"acknowledged writes lost: {verification.lost[:5]}")
            overlap = leaders.longest_overlap()
            if overlap > RENEW_DEADLINE:
                result.violations.append(f"two cpo run led together for {overlap:.1f}s")
            monitor = observer.monitor
            assert monitor is not None
            losses = quorum_losses(monitor.samples)
            result.quorum_losses = len(losses)
            for start, end in losses:
                last = monitor.samples[min(end, len(monitor.samples) - 1)]
                result.violations.append(
                    f"quorum lost from t={monitor.samples[start].at:.1f}s to t={last.at:.1f}s"
                )
            result.violations.extend(timeline_violations(observer.samples, injector.desired_history))
            removals, early = _voter_removals(monitor.samples, injector.desired_history, observer.samples)
            result.violations.extend(removals)
            result.early_removals = len(early)
            result.violations.extend(
                members_left_without_machine(
                    injector.hooks_off, observer.samples, monitor.samples, MEMBER_WITHOUT_MACHINE_GRACE
                )
            )
            result.violations.extend(machines_added_together(observer.samples))
            result.violations.extend(remediations_together(observer.samples))
            result.violations.extend(remediations_while_creating(observer.samples))
            result.peak_voters = max((s.voters for s in observer.samples), default=0)
            result.peak_machines = max((len(s.machines) for s in observer.samples), default=0)
    except Exception as err:  # a run that could not finish is a failed run, with its reason
        result.error = f"{type(err).__name__}: {err}"
    except asyncio.CancelledError:
        stopped = True
        raise
    finally:
        await world.stop()
        if stopped:  # the campaign was stopped: no evidence, and no folder left behind
            shutil.rmtree(directory, ignore_errors=True)
        left = [p.pid for p in recorded_processes(world.state_dir)]
        left += [c.process.pid for c in world.children if c.running and c.process is not None]
        if left:
            result.violations.append(f"processes left running: {left}")
    result.ok = not result.violations and result.error is None and result.converged
    if not result.ok:
        keep_evidence(
            result, intents, observer, world, out,
            desired_history=injector.desired_history if injector else (),
            stats=writer.stats if writer else WriterStats(), verification=verification,
        )  # fmt: skip
    shutil.rmtree(directory, ignore_errors=True)
    return result


def keep_evidence(
    result: RunResult,
    intents: Sequence[Intent],
    observer: Observer | None,
    world: DemoWorld,
    out: Path,
    *,
    desired_history: Sequence[tuple[float, int]],
    stats: WriterStats,
    verification: Verification | None,
) -> None:
    """The failing run's schedule, what was applied, its timeline (JSON + PNG, with the writer's
    figures) and the logs."""
    target = out / f"seed-{result.seed}"
    target.mkdir(parents=True, exist_ok=True)
    (target / "schedule.json").write_text(
        json.dumps({"seed": result.seed, "intents": [asdict(i) for i in intents], "applied": result.applied,
                    "desired_history": desired_history, "violations": result.violations,
                    "error": result.error}, indent=1) + "\n"
    )  # fmt: skip
    if observer is not None and observer.monitor is not None:
        report = build_report(
            samples=observer.samples, quorum_samples=observer.monitor.samples, steps=[], stats=stats,
            verification=verification, started=observer.started, desired={}, files={},
        )  # fmt: skip
        write_json(report, target / "timeline.json")
        with contextlib.suppress(Exception):
            plot_timeline(report, target / "timeline.png")
    shutil.copytree(world.directory / "logs", target / "logs", dirs_exist_ok=True)


# ---------------------------------------------------------------------------------------------- campaign


def summary(results: Sequence[RunResult]) -> str:
    settles = sorted(r.convergence_seconds for r in results if r.convergence_seconds is not None)

    def quantile(q: float) -> str:
        return f"{settles[min(int(q * len(settles)), len(settles) - 1)]:.1f}s" if settles else "-"

    faults: Counter[str] = Counter()
    for result in results:
        faults.update(result.faults)
    rows = [
        ("runs", str(len(results))),
        ("failed runs", str(sum(not r.ok for r in results))),
        ("quorum losses", str(sum(r.quorum_losses for r in results))),
        ("lost acknowledged writes", str(sum(r.lost_writes for r in results))),
        ("acknowledged writes", str(sum(r.acknowledged_writes for r in results))),
        ("runs that did not converge", str(sum(not r.converged for r in results))),
        (
            "convergence p50 / p99 / max",
            f"{quantile(0.5)} / {quantile(0.99)} / {settles[-1] if settles else 0:.1f}s",
        ),
        ("peak voters", str(max((r.peak_voters for r in results), default=0))),
        ("peak Machines", str(max((r.peak_machines for r in results), default=0))),
        ("faults injected", ", ".join(f"{k} {v}" for k, v in sorted(faults.items())) or "none"),
        ("runs with a host pool", str(sum(r.host_cap is not None for r in results))),
        ("maxSurge 0 early removals", str(sum(r.early_removals for r in results))),
    ]
    if settles:
        rows.append(("convergence mean", f"{statistics.mean(settles):.1f}s"))
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"| {name:<{width}} | {value} |" for name, value in rows)


async def campaign(
    seeds: Sequence[int],
    duration: float,
    jobs: int,
    out: Path,
    results: list[RunResult],
    *,
    realistic: bool = False,
) -> None:
    """Run the seeds, ``jobs`` at once; each finished run goes to ``results`` and is printed."""
    limit = asyncio.Semaphore(jobs)

    async def one(run_seed: int) -> None:
        async with limit:
            result = await one_run(run_seed, duration, out, realistic=realistic)
        results.append(result)
        print(result.line(), flush=True)

    await asyncio.gather(*(one(seed) for seed in seeds))


async def stoppable_campaign(
    seeds: Sequence[int], duration: float, jobs: int, out: Path, *, realistic: bool = False
) -> tuple[list[RunResult], int | None]:
    """The campaign, first ending the worlds killed campaigns or demos left; a stop signal ends the
    runs under way and their worlds. Returns the finished runs by seed, and 128 + the signal's
    number when one came."""
    results: list[RunResult] = []
    with StopSignals() as signals:
        for line in await end_abandoned_worlds():
            print(line, flush=True)
        with contextlib.suppress(Stopped):
            await signals.interruptible(campaign(seeds, duration, jobs, out, results, realistic=realistic))
        if signals.received is not None:
            print(f"stopped by {signals.received.name}; every run's world has ended", flush=True)
    return sorted(results, key=lambda r: r.seed), signals.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1, help="seed of the first run; run i uses seed + i")
    parser.add_argument(
        "--seeds", help="comma-separated seeds to run instead (replaying chosen runs); ignores --runs, --seed"
    )
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of schedule per run")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once")
    parser.add_argument("--out", type=Path, default=Path("chaos-out"), help="evidence of failing runs")
    parser.add_argument("--json", type=Path, help="write every run's result here")
    parser.add_argument(
        "--realistic",
        action="store_true",
        help="run every world's provider with --realistic (members named after Nodes, etcd over TLS)",
    )
    args = parser.parse_args(argv)
    began = time.monotonic()
    if args.seeds:
        seeds = [int(seed) for seed in args.seeds.split(",")]
    else:
        seeds = [args.seed + index for index in range(args.runs)]
    results, stopped = asyncio.run(
        stoppable_campaign(seeds, args.duration, args.jobs, args.out, realistic=args.realistic)
    )
    print(summary(results))
    print(f"wall time {time.monotonic() - began:.0f}s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps([{**asdict(r), "faults": dict(r.faults)} for r in results], indent=1) + "\n"
        )
    if stopped is not None:
        return stopped
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
