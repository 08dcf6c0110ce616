"""The ControlPlane controller with the etcd-quorum-hook controller on real etcd: scaling, rollouts,
remediation and rebalancing, each watched over its whole length by a quorum monitor.

Every test asserts the invariants of the pair: never more than replicas + 1 Machines, never more
than desired + 1 voters, etcd never without a healthy quorum.

The rolloutAfter and the rebalance scenarios, whose 30 s holds prove that nothing happens, run in
the background of the others (tests.support.background): they start with the module, and their
tests, last in the module, await their ends.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import secrets
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane import MHC_SCOPE_LABEL, MHC_SCOPE_VALUE
from api.machine import (
    API_VERSION,
)
from controllers.common import format_time, now, parse_time
from controllers.controlplane import FAILURE_DOMAIN_LABEL
from controllers.controlplane.machines import marked_for_remediation
from controllers.controlplane.remediation_record import (
    REMEDIATION_FOR_ANNOTATION,
    REMEDIATION_IN_PROGRESS_ANNOTATION,
)
from controllers.machinehealthcheck import EVENT_MACHINE_MARKED
from demo.monitor import QuorumMonitor
from runtime.client import JSON, Client
from runtime.envtest import Environment
from tests.support.background import background_starter, run_in_background
from tests.support.controlplane import (
    MachineCount,
    controlplane,
    cp_condition,
    events_for,
    first_client_url,
    get_cp,
    machines_of,
    replaced_or_outdated,
    running_controlplane,
    settled,
)
from tests.support.explain import ExplainWatch
from tests.support.localmachine import (
    get_machine,
    machine_condition,
    provider_options,
    set_fault,
)
from tests.support.poll import eventually, holds_for

pytestmark = pytest.mark.slow


def domains_of(machines: list[JSON]) -> list[str]:
    return sorted(m["metadata"]["labels"].get(FAILURE_DOMAIN_LABEL, "") for m in machines)


async def set_spec(kube: Client, name: str, namespace: str, spec: dict[str, Any]) -> None:
    await kube.patch(CP_API_VERSION, "ControlPlane", name, {"spec": spec}, namespace)


async def test_scaling_1_3_5_3_1_one_machine_at_a_time(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"cp{secrets.token_hex(3)}"
    zones = ["zone-a", "zone-b", "zone-c"]
    async with running_controlplane(kube, namespace, provider_options(provider_state_dir), hooks=True):
        await kube.create(controlplane(name, namespace, replicas=1, domains=zones))
        async with (
            QuorumMonitor([await first_client_url(kube, namespace)]) as monitor,
            MachineCount(kube, namespace) as count,
        ):
            await settled(kube, name, namespace, 1)
            for replicas in (3, 5, 3, 1):
                previous = count.peak
                since = monitor.mark()
                count.peak = 0
                first_deleted = len(count.deleted)
                marked = None
                if replicas == 3 and previous == 5:
                    # The delete annotation beats domain and age: mark the youngest Machine of a
                    # most populated domain, which would otherwise go last of its class.
                    in_a = [
                        m
                        for m in await machines_of(kube, namespace)
                        if m["metadata"]["labels"][FAILURE_DOMAIN_LABEL] == "zone-a"
                    ]
                    marked = max(in_a, key=lambda m: m["metadata"]["creationTimestamp"])["metadata"]["name"]
                    await kube.patch(
                        API_VERSION,
                        "Machine",
                        marked,
                        {"metadata": {"annotations": {"machine.openshift.io/delete-machine": "true"}}},
                        namespace,
                    )
                await set_spec(kube, name, namespace, {"replicas": replicas})
                await settled(kube, name, namespace, replicas, within=90)
                if marked is not None:
                    assert count.deleted[first_deleted] == marked, count.deleted
                high = max(replicas, previous if replicas < previous else 0)
                assert count.peak <= max(replicas, high) + 1
                assert monitor.peak("voters", since=since) <= max(replicas, high) + 1
                assert monitor.peak("learners", since=since) <= 1, "one Machine joins at a time"
                if replicas == 5:
                    # Spread evenly: 2 + 2 + 1, ties alphabetical.
                    assert domains_of(await machines_of(kube, namespace)) == sorted(
                        ["zone-a", "zone-a", "zone-b", "zone-b", "zone-c"]
                    )
                if replicas == 3:
                    assert domains_of(await machines_of(kube, namespace)) == zones

                async def mhc_in_sync(replicas: int = replicas) -> bool:
                    mhc = await kube.get(API_VERSION, "MachineHealthCheck", f"{name}-mhc", namespace)
                    return bool(mhc["spec"]["maxUnhealthy"] == (replicas - 1) // 2)

                await eventually(mhc_in_sync, timeout=5, message="maxUnhealthy = (replicas - 1) / 2")
            monitor.assert_never_lost_quorum()
            # One change at a time: never two Machines being deleted at once, never two created
            # between two looks 0.1 s apart.
            assert count.deleting_peak <= 1, count.history
            for before, after in zip(count.history, count.history[1:], strict=False):
                assert len(set(after) - set(before)) <= 1, (before, after)

            # The hook controller's condition survives this controller's status writes.
            async def etcd_condition_kept() -> bool:
                cp = await get_cp(kube, name, namespace)
                return cp_condition(cp, "EtcdClusterHealthy").get("status") == "True"

            await eventually(etcd_condition_kept, timeout=10, message="EtcdClusterHealthy kept")
        mhc = await kube.get(API_VERSION, "MachineHealthCheck", f"{name}-mhc", namespace)
        assert mhc["spec"]["maxUnhealthy"] == 0


async def scaled_to_three(kube: Client, name: str, namespace: str, **spec: Any) -> QuorumMonitor:
    await kube.create(
        controlplane(name, namespace, replicas=3, domains=["zone-a", "zone-b", "zone-c"], **spec)
    )
    monitor = QuorumMonitor([await first_client_url(kube, namespace)])
    await monitor.__aenter__()
    await settled(kube, name, namespace, 3, within=90)
    return monitor


NEW_TEMPLATE = {
    "template": {
        "metadata": {
            "labels": {"machine.openshift.io/cluster-api-machine-role": "master"},
            "annotations": {"cpo.dev/revision": "2"},
        },
        "spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "revision": "2"}}},
    }
}
"""A new providerSpec (what a Machine is, so every Machine is replaced), and a new annotation
(written onto the Machines in place)."""


async def test_rolling_update_of_three_replicas_then_on_delete(
    kube: Client, namespace: str, provider_state_dir: Path, kubeconfig_path: Path
) -> None:
    """A rolling update, then OnDelete; the same world then shows, through ``cpo explain``, the
    plan of a rollout, of a remediation and of a scale-out the preflight blocks
    (:func:`explain_shows_remediation_then_a_blocked_scale_out`)."""
    name = f"cp{secrets.token_hex(3)}"
    provider = provider_options(provider_state_dir)
    async with running_controlplane(kube, namespace, provider, hooks=True, health_checks=True):
        monitor = await scaled_to_three(kube, name, namespace, healthCheck=ROLLOUT_HEALTH_CHECK)
        try:
            before = {m["metadata"]["name"] for m in await machines_of(kube, namespace)}
            since = monitor.mark()
            async with (
                MachineCount(kube, namespace) as count,
                ExplainWatch(kubeconfig_path, namespace, name) as watch,
            ):
                await eventually(lambda: watch.documents, timeout=30, message="cpo explain's first document")
                await set_spec(kube, name, namespace, NEW_TEMPLATE)

                async def updating() -> bool:
                    cp = await get_cp(kube, name, namespace)
                    return ((cp or {}).get("status") or {}).get("phase") == "Updating"

                await eventually(updating, timeout=10, message="phase Updating")
                cp = await settled(kube, name, namespace, 3, within=120)
                await explain_showed_the_rollout(watch, before)
            after = await machines_of(kube, namespace)
            assert not before & {m["metadata"]["name"] for m in after}, "every Machine was replaced"
            assert all(m["spec"]["providerSpec"]["value"]["revision"] == "2" for m in after)
            assert all(m["metadata"]["annotations"]["cpo.dev/revision"] == "2" for m in after)
            assert domains_of(after) == ["zone-a", "zone-b", "zone-c"], "replacements stay in their domain"
            assert count.peak <= 4, (count.history, count.other_events, count.deleted)
            assert monitor.low("voters", since=since) >= 3 and monitor.peak("voters", since=since) <= 4
            monitor.assert_never_lost_quorum()
            assert cp_condition(cp, "Progressing")["status"] == "False"

            # OnDelete: a template change replaces nothing until a Machine is deleted.
            await set_spec(kube, name, namespace, {"strategy": {"type": "OnDelete"}})
            # A rolloutAfter that has passed outdates every Machine created before it.
            await set_spec(kube, name, namespace, {"rolloutAfter": format_time(now())})
            current = await machines_of(kube, namespace)

            async def outdated_reported() -> bool:
                cp = await get_cp(kube, name, namespace)
                status = (cp or {}).get("status") or {}
                return status.get("updatedReplicas") == 0 and status.get("phase") == "Updating"

            await eventually(outdated_reported, timeout=10, message="three outdated replicas reported")

            async def unchanged() -> bool:
                return [m["metadata"]["name"] for m in await machines_of(kube, namespace)] == [
                    m["metadata"]["name"] for m in current
                ]

            await holds_for(unchanged, duration=2.0, message="OnDelete replaces nothing on its own")
            victim = current[0]
            await kube.delete(API_VERSION, "Machine", victim["metadata"]["name"], namespace)

            async def replaced() -> list[JSON] | None:
                machines = await machines_of(kube, namespace)
                names = {m["metadata"]["name"] for m in machines}
                ready = victim["metadata"]["name"] not in names and len(machines) == 3
                return machines if ready else None

            machines = await eventually(replaced, timeout=60, message="the deleted Machine replaced")
            new = [
                m for m in machines if m["metadata"]["name"] not in {c["metadata"]["name"] for c in current}
            ]
            assert len(new) == 1
            assert (
                new[0]["metadata"]["labels"][FAILURE_DOMAIN_LABEL]
                == victim["metadata"]["labels"][FAILURE_DOMAIN_LABEL]
            )
            monitor.assert_never_lost_quorum()
            await explain_shows_remediation_then_a_blocked_scale_out(
                kube, name, namespace, kubeconfig_path, monitor
            )
        finally:
            await monitor.__aexit__(None, None, None)


async def explain_showed_the_rollout(watch: ExplainWatch, before: set[str]) -> None:
    """``cpo explain`` showed a replacement being created, an old member's removal waiting, then
    the plan done; and each plan was announced by an Event in the same words."""

    async def done() -> bool:
        last = watch.last or {}
        return (last.get("plan") or {}).get("progressing", {}).get("reason") == "UpToDate"

    await eventually(done, timeout=30, message="cpo explain shows the plan done")
    plans = watch.plans()
    creating = [
        (reason, message)
        for reason, message in plans
        if (reason == "ReplacingOutdated" and "creating its replacement" in message)
        or reason == "WaitingForMachine"
    ]
    assert creating and any(old in creating[0][1] for old in before), plans
    removing = [(reason, message) for reason, message in plans if reason == "RemovingMember"]
    assert removing and any(old in removing[0][1] for old in before), plans
    assert plans[-1][0] == "UpToDate" and not watch.documents[-1]["plan"]["blocked"], plans
    etcd = watch.documents[-1]["etcd"]
    assert (etcd["voters"], etcd["healthyVoters"], etcd["quorum"], etcd["faultTolerance"]) == (3, 3, 2, 1), (
        etcd
    )
    assert etcd["leaderMachine"] in {m["name"] for m in watch.documents[-1]["machines"]}, etcd


async def explain_shows_remediation_then_a_blocked_scale_out(
    kube: Client, name: str, namespace: str, kubeconfig_path: Path, monitor: QuorumMonitor
) -> None:
    """A killed member: ``cpo explain`` names its Machine in the remediation plan. Then, autorepair
    off, a member paused with the provider's fault and a scale-out asked: the plan is blocked by
    ``EtcdMemberUnhealthy`` (the check ``EtcdVotersHealthy``), naming the paused Machine, and no
    Machine is created."""
    async with ExplainWatch(kubeconfig_path, namespace, name) as watch:
        await eventually(lambda: watch.documents, timeout=30, message="cpo explain's first document")
        victim = (await machines_of(kube, namespace))[0]["metadata"]["name"]
        await set_fault(kube, victim, namespace, "kill")

        def remediation_shown() -> JSON | None:
            return watch.first("Remediating", victim)

        shown = await eventually(remediation_shown, timeout=60, message=f"cpo explain: remediating {victim}")
        assert any(m["name"] == victim for m in shown["machines"]), shown["machines"]

        def replaced() -> bool:
            # Not `settled`: under OnDelete two outdated Machines stay, so only availability counts.
            document = watch.last or {}
            remediation = (document.get("remediation") or {}).get("lastRemediation") or {}
            return (
                remediation.get("machine") == victim
                and victim not in {m["name"] for m in document["machines"]}
                and document["controlPlane"]["replicas"]["available"] == 3
                and document["etcd"]["healthyVoters"] == 3
            )

        await eventually(replaced, timeout=90, message=f"{victim} replaced, three available")

        await set_spec(kube, name, namespace, {"enableAutorepair": False})

        def health_check_gone() -> bool:
            # Gone before the fault, or it could mark the paused Machine and remediation remove it.
            return (watch.last or {}).get("remediation", {}).get("healthCheck", True) is None

        await eventually(health_check_gone, timeout=15, message="the MachineHealthCheck deleted")
        paused = next(m["name"] for m in (watch.last or {})["machines"] if m["name"] != victim)
        await set_fault(kube, paused, namespace, "stop")

        await healthy_voters_down_to(monitor, 2, f"{paused}'s member not answering")
        await set_spec(kube, name, namespace, {"replicas": 5})

        def blocked_shown() -> JSON | None:
            return watch.first("EtcdMemberUnhealthy", "EtcdVotersHealthy", paused)

        try:
            blocked = await eventually(blocked_shown, timeout=30, message=f"cpo explain: blocked on {paused}")
        except AssertionError as err:
            raise AssertionError(f"{err}; plans shown: {watch.plans()[-6:]}") from None
        assert [b["reason"] for b in blocked["plan"]["blocked"]][:1] == ["EtcdMemberUnhealthy"], blocked[
            "plan"
        ]
        assert len(blocked["machines"]) == 3, blocked["machines"]
        assert blocked["etcd"]["healthyVoters"] == 2 and blocked["etcd"]["faultTolerance"] == 0, blocked[
            "etcd"
        ]
        await set_fault(kube, paused, namespace, None)


async def owner_remediated(
    kube: Client, machine: str, namespace: str, reason: str, prefix: str, *, within: float
) -> JSON:
    """Wait until ``machine``'s ``OwnerRemediated`` carries the ControlPlane's decision
    ``reason``, its message starting with ``prefix`` (the rule that decided); the condition."""

    async def carried() -> JSON | None:
        owner = machine_condition(await get_machine(kube, machine, namespace), "OwnerRemediated")
        matches = owner.get("reason") == reason and str(owner.get("message") or "").startswith(prefix)
        return owner if matches else None

    condition: JSON = await eventually(
        carried, timeout=within, message=f"{machine}: OwnerRemediated {reason}, {prefix!r}..."
    )
    return condition


async def healthy_voters_down_to(monitor: QuorumMonitor, count: int, what: str) -> None:
    """Wait until the quorum monitor's latest sample counts ``count`` healthy voters."""

    def reached() -> bool:
        return bool(monitor.samples) and monitor.samples[-1].healthy_voters == count

    await eventually(reached, timeout=15, message=what)


async def settled_objects(kube: Client, name: str, namespace: str) -> dict[str, JSON]:
    """The ControlPlane, its MachineHealthCheck and its Machines, by kind and name."""
    cp = await get_cp(kube, name, namespace)
    check = await kube.get(API_VERSION, "MachineHealthCheck", f"{name}-mhc", namespace)
    found = {"ControlPlane": cp or {}, "MachineHealthCheck": check}
    found.update({f"Machine/{m['metadata']['name']}": m for m in await machines_of(kube, namespace)})
    return found


def versions_of(objects: dict[str, JSON]) -> dict[str, str]:
    return {key: obj["metadata"]["resourceVersion"] for key, obj in objects.items()}


async def quiet_objects(kube: Client, name: str, namespace: str) -> dict[str, JSON] | None:
    """:func:`settled_objects` once their resourceVersions have stayed the same for 2 s (the
    writes that follow a change are done), else None."""
    first = await settled_objects(kube, name, namespace)

    async def same() -> bool:
        return versions_of(await settled_objects(kube, name, namespace)) == versions_of(first)

    try:
        await holds_for(same, duration=2, message="versions unchanged")
    except AssertionError:
        return None
    return first


def changes(before: Any, after: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, one ``path: old -> new`` line each (resourceVersion and
    managedFields left out; conditions matched by type, ``[type=Ready]``): what a write wrote."""
    if isinstance(before, dict) and isinstance(after, dict):
        found: list[str] = []
        for key in sorted(set(before) | set(after)):
            if key in ("resourceVersion", "managedFields"):
                continue
            found += changes(before.get(key), after.get(key), f"{path}.{key}")
        return found
    if isinstance(before, list) and isinstance(after, list):
        if all(isinstance(item, dict) and "type" in item for item in [*before, *after]):
            old, new = ({item["type"]: item for item in items} for items in (before, after))
            return [
                line
                for type_ in sorted(set(old) | set(new))
                for line in changes(old.get(type_, {}), new.get(type_, {}), f"{path}[type={type_}]")
            ]
        if len(before) == len(after):
            pairs = enumerate(zip(before, after, strict=True))
            return [line for i, (b, a) in pairs for line in changes(b, a, f"{path}[{i}]")]
    return [] if before == after else [f"{path}: {json.dumps(before)} -> {json.dumps(after)}"]


OBSERVATION = re.compile(
    r"\.conditions\[type=[^\]]+\]\.status: "
    r"|\.status\.(readyReplicas|availableReplicas|unavailableReplicas|updatedReplicas|currentHealthy"
    r"|remediationsAllowed|etcd\.\w+): "
)
"""A change line (:func:`changes`) that reports something observed: a condition's status, a count
of ready or healthy Machines, etcd's health. Such a write follows the world (a Node that turned
NotReady, a health read answered late on a loaded machine); a write without one is churn."""


class WorldMoved(Exception):
    """The operator wrote an observed change during a window meant to be still: not churn, and
    the window starts again (see :data:`OBSERVATION`)."""


async def rollout_after_scenario(kube: Client, namespace: str, provider_state_dir: Path) -> None:
    """``spec.rolloutAfter`` an hour ahead replaces nothing and every Machine counts as updated;
    moved 15 s ahead, each Machine is replaced once after that moment, then nothing changes.

    The hour-ahead window is also the settled control plane of issue 27: with every controller
    running (the hook controller and the health check resync each second), the ControlPlane, its
    Machines and its MachineHealthCheck keep their resourceVersions for the whole 30 s while the
    world stays still. A write that reports an observed change (:data:`OBSERVATION`: a Node
    NotReady for a moment on a loaded machine) starts the 30 s again, at most three times; any
    other write fails the test with what it wrote."""
    name = f"cp{secrets.token_hex(3)}"
    provider = provider_options(provider_state_dir)
    async with running_controlplane(kube, namespace, provider, hooks=True, health_checks=True):
        monitor = await scaled_to_three(kube, name, namespace)
        try:
            before = {m["metadata"]["name"] for m in await machines_of(kube, namespace)}
            since = monitor.mark()
            async with MachineCount(kube, namespace) as count:
                await set_spec(
                    kube, name, namespace, {"rolloutAfter": format_time(now() + timedelta(hours=1))}
                )

                async def all_updated_and_untouched() -> bool:
                    cp = await get_cp(kube, name, namespace)
                    status = (cp or {}).get("status") or {}
                    names = {m["metadata"]["name"] for m in await machines_of(kube, namespace)}
                    return (
                        cp is not None
                        and status.get("observedGeneration") == cp["metadata"]["generation"]
                        and status.get("replicas") == 3
                        and status.get("updatedReplicas") == 3
                        and names == before
                    )

                async def unwritten_since(written: dict[str, JSON]) -> bool:
                    current = await settled_objects(kube, name, namespace)
                    machines = [obj for key, obj in current.items() if key.startswith("Machine/")]
                    problems = replaced_or_outdated(machines, before)
                    assert not problems, problems
                    if versions_of(current) == versions_of(written):
                        return True
                    wrote = [
                        f"{key} {line}"
                        for key in sorted(set(current) | set(written))
                        for line in changes(written.get(key), current.get(key))
                    ]
                    if any(OBSERVATION.search(line) for line in wrote):
                        raise WorldMoved(wrote)
                    raise AssertionError(f"written on the settled control plane: {wrote}")

                # 30 s in which the world stays still, in at most 3 windows: a write that reports
                # an observed change (a Node's readiness on a loaded machine) restarts the window;
                # any other write fails the test. Churn repeats, so it shows in every window.
                moves: list[str] = []
                while True:
                    await eventually(all_updated_and_untouched, timeout=30, message="the change observed")
                    written = await eventually(
                        lambda: quiet_objects(kube, name, namespace),
                        timeout=30,
                        message="the operator's writes of the change done",
                    )
                    try:
                        await holds_for(
                            functools.partial(unwritten_since, written),
                            duration=30,
                            message="a rolloutAfter an hour ahead replaces nothing, all 3 Machines "
                            "updated, and nothing is written on the settled control plane",
                        )
                        break
                    except WorldMoved as moved:
                        moves.append(str(moved))
                        assert len(moves) < 3, f"no still 30 s in 3 windows; what moved: {moves}"
                assert count.deleted == [], count.history

                due = now() + timedelta(seconds=15)
                await set_spec(kube, name, namespace, {"rolloutAfter": format_time(due)})

                async def rolled_out() -> list[JSON] | None:
                    machines = await machines_of(kube, namespace)
                    names = {m["metadata"]["name"] for m in machines}
                    cp = await get_cp(kube, name, namespace)
                    status = (cp or {}).get("status") or {}
                    counts = [status.get(k) for k in ("replicas", "updatedReplicas", "availableReplicas")]
                    done = not names & before and len(names) == 3 and counts == [3, 3, 3]
                    return machines if done and status.get("phase") == "Running" else None

                after = await eventually(rolled_out, timeout=15 + 150, message="every Machine replaced")
                assert all(parse_time(m["metadata"]["creationTimestamp"]) >= due for m in after), (
                    "nothing is replaced before rolloutAfter",
                    [m["metadata"]["creationTimestamp"] for m in after],
                    format_time(due),
                )
                final = {m["metadata"]["name"] for m in after}

                async def unchanged() -> bool:
                    return not replaced_or_outdated(await machines_of(kube, namespace), final)

                await holds_for(unchanged, duration=30, message="after the rollout, nothing more is replaced")
                await settled(kube, name, namespace, 3)
            ever = {machine for names in count.history for machine in names}
            assert ever == before | final, ("each Machine replaced exactly once", count.history)
            assert sorted(count.deleted) == sorted(before), count.deleted
            assert domains_of(after) == ["zone-a", "zone-b", "zone-c"]
            assert count.peak <= 4, count.history
            assert monitor.low("voters", since=since) >= 3, monitor.changes()
            assert monitor.peak("voters", since=since) <= 4, monitor.changes()
            monitor.assert_never_lost_quorum()
        finally:
            await monitor.__aexit__(None, None, None)


async def test_max_surge_zero_deletes_first_then_replaces(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    """maxSurge 0: each outdated Machine is deleted before its replacement is created. One
    member is down behind a Ready Node (a failing etcd on a live kubelet): its Machine goes
    first, since beside it the preflight refuses any other delete, and taking the oldest first
    would hold the rollout for ever. The down member is the youngest Machine's, the one the age
    order would take last. After it, each healthy voter goes before its replacement votes (the
    rollout marks the Machines it deletes, so each frees its host), never more than one at a time:
    the voters never go below 2 (desired - 1)."""
    name = f"cp{secrets.token_hex(3)}"
    async with running_controlplane(kube, namespace, provider_options(provider_state_dir), hooks=True):
        monitor = await scaled_to_three(
            kube, name, namespace, strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}}
        )
        try:
            machines = await machines_of(kube, namespace)
            down = max(machines, key=lambda m: (m["metadata"]["creationTimestamp"], m["metadata"]["name"]))
            down_name = down["metadata"]["name"]
            await set_fault(kube, down_name, namespace, "stop-member")

            await healthy_voters_down_to(monitor, 2, f"{down_name}'s member stopped")
            since = monitor.mark()

            async def first_deleted() -> str | None:
                return next(
                    (
                        m["metadata"]["name"]
                        for m in await machines_of(kube, namespace)
                        if m["metadata"].get("deletionTimestamp")
                    ),
                    None,
                )

            async with MachineCount(kube, namespace) as count:
                await set_spec(kube, name, namespace, NEW_TEMPLATE)
                deleted = await eventually(first_deleted, timeout=30, message="the rollout's first delete")
                assert deleted == down_name, f"{deleted} deleted first, beside {down_name}'s member down"
                await settled(kube, name, namespace, 3, within=120)
            assert down_name not in {m["metadata"]["name"] for m in await machines_of(kube, namespace)}
            # Each replacement appeared only after its predecessor was marked for deletion: the
            # controller never created a 4th Machine while 3 were active.
            first_new = next(i for i, names in enumerate(count.history) if len(names) == 4)
            events = [
                e
                for e in await events_for(kube, namespace, name)
                if e["reason"] in ("MachineDeleted", "MachineCreated")
            ]
            ordered = sorted(events, key=lambda e: e.get("firstTimestamp") or "")
            assert ordered and ordered[0]["reason"] == "MachineCreated"  # the initial scale-out
            rollout = [
                e["reason"] for e in ordered if "outdated" in e["message"] or "replacement" in e["message"]
            ]
            assert rollout[:2] == ["MachineDeleted", "MachineCreated"], rollout
            assert first_new > 0 and count.peak <= 4
            # The down member went at once (it held no quorum up); its replacement then voted, and
            # from then on each healthy voter went early (3 -> 2 -> 3) or, when its replacement's
            # learner joined first (an early removal waits for a pending learner), after it voted
            # (3 -> 4 -> 3): never below desired - 1, never above desired + 1.
            gone = monitor.first(lambda s: s.at >= since and s.voters == 2)
            assert gone is not None, monitor.changes()
            back = monitor.first(lambda s: s.at > gone.at and s.voters == 3)
            assert back is not None, monitor.changes()
            assert monitor.low("voters", since=back.at) >= 2, monitor.changes()
            assert monitor.peak("voters", since=since) <= 4, monitor.changes()
            monitor.assert_never_lost_quorum()
        finally:
            await monitor.__aexit__(None, None, None)


def node_health_check(timeout: str) -> JSON:
    """The owned MachineHealthCheck's conditions: a Node Ready Unknown or False for ``timeout``
    (seconds here instead of OpenShift's minutes), and 60 s for a Node to start."""
    return {
        "unhealthyConditions": [
            {"type": "Ready", "status": "Unknown", "timeout": timeout},
            {"type": "Ready", "status": "False", "timeout": timeout},
        ],
        "nodeStartupTimeout": "60s",
    }


SECONDS_HEALTH_CHECK = node_health_check("2s")

ROLLOUT_HEALTH_CHECK = node_health_check("15s")
"""For a test whose rollout must not be remediated: on a loaded machine a replacement's Node can
stay NotReady for 2 s (a stress run on four workers saw :data:`SECONDS_HEALTH_CHECK` remediate one
mid-rollout, as configured), not for 15 s; a killed member is still remediated within a minute."""


async def remediated(kube: Client, name: str, namespace: str, victim: str) -> JSON:
    """Wait until ``status.lastRemediation`` names ``victim`` (its remediation started); on
    failure, say what the status says instead (e.g. a ``MaxRetryReached`` failureReason)."""

    async def remediating() -> JSON | None:
        cp = await get_cp(kube, name, namespace)
        status = (cp or {}).get("status") or {}
        return cp if (status.get("lastRemediation") or {}).get("machine") == victim else None

    try:
        cp: JSON = await eventually(remediating, timeout=30, message=f"lastRemediation names {victim}")
    except AssertionError as err:
        status = ((await get_cp(kube, name, namespace)) or {}).get("status") or {}
        seen = {k: status.get(k) for k in ("phase", "failureReason", "failureMessage", "lastRemediation")}
        raise AssertionError(f"{err}; status {seen}") from None
    return cp


def remediation_for(machine: JSON) -> JSON:
    """The remediation record a replacement carries."""
    return dict(json.loads(machine["metadata"]["annotations"][REMEDIATION_FOR_ANNOTATION]))


async def test_failed_machines_are_remediated_add_then_remove_retries_counted_per_lineage(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    """End to end: the member dies, its Node turns Unknown, the ControlPlane's own
    MachineHealthCheck marks the Machine, and the ControlPlane replaces it; the replacement
    carries the remediation's record. With ``maxRetry: 0`` and a long ``minHealthyPeriod``, an
    unrelated Machine failing next (the etcd leader's: its Node turns NotReady, its member stays
    up) is no retry of that remediation: it is replaced too, retry 0, leadership moved off it
    first. The first replacement failing in its turn is retry 1 of its lineage, and remediation
    stops with ``MaxRetryReached``. Voters: never more than 4, never fewer than 2 (the dead
    member removed)."""
    name = f"cp{secrets.token_hex(3)}"
    provider = provider_options(provider_state_dir)
    limits = {"maxRetry": 0, "minHealthyPeriod": "1h"}
    async with running_controlplane(kube, namespace, provider, hooks=True, health_checks=True):
        monitor = await scaled_to_three(
            kube, name, namespace, healthCheck=SECONDS_HEALTH_CHECK, remediation=limits
        )
        try:
            since = monitor.mark()
            originals = [m["metadata"]["name"] for m in await machines_of(kube, namespace)]
            first = originals[1]
            replacements: list[JSON] = []
            for fault in ("kill", "notready"):
                before = {m["metadata"]["name"] for m in await machines_of(kube, namespace)}
                survivors = [n for n in originals if n in before]
                leader = monitor.samples[-1].leader if monitor.samples else None
                victim = first if fault == "kill" else leader if leader in survivors else survivors[0]
                faulted = monitor.mark()
                await set_fault(kube, victim, namespace, fault)
                cp = await remediated(kube, name, namespace, victim)
                assert cp["status"]["lastRemediation"]["retryCount"] == 0
                if victim == first:

                    async def phase_remediating() -> bool:
                        cp = await get_cp(kube, name, namespace)
                        status = (cp or {}).get("status") or {}
                        return (
                            status.get("phase") == "Remediating"
                            and cp_condition(cp, "Remediating")["status"] == "True"
                        )

                    await eventually(phase_remediating, timeout=10, message="phase and condition Remediating")
                cp = await settled(kube, name, namespace, 3, within=90)
                assert REMEDIATION_IN_PROGRESS_ANNOTATION not in (cp["metadata"].get("annotations") or {})
                machines = await machines_of(kube, namespace)
                assert victim not in {m["metadata"]["name"] for m in machines}
                assert domains_of(machines) == ["zone-a", "zone-b", "zone-c"]
                (replacement,) = [m for m in machines if m["metadata"]["name"] not in before]
                record = remediation_for(replacement)
                assert record == cp["status"]["lastRemediation"], (record, cp["status"])
                assert (record["machine"], record["retryCount"]) == (victim, 0)
                replacements.append(replacement)
                if victim == leader:
                    # Its removal cost no election: leadership was moved off it first (the event),
                    # or had left it by then on its own (an election elsewhere, after the test
                    # read the leader): the last sample with its member shows another leader.
                    messages = [e["message"] for e in await events_for(kube, namespace, name)]
                    with_member = [s for s in monitor.samples if s.at >= faulted and victim in s.machines]
                    moved = any(f"Moved etcd leadership from {victim} to" in m for m in messages)
                    assert moved or (with_member and with_member[-1].leader != victim), (
                        messages,
                        [(s.leader, s.machines) for s in with_member[-3:]],
                    )
            # The first replacement fails within minHealthyPeriod: retry 1 > maxRetry 0.
            again = replacements[0]["metadata"]["name"]
            await set_fault(kube, again, namespace, "kill")

            async def stopped() -> bool:
                cp = await get_cp(kube, name, namespace)
                status = (cp or {}).get("status") or {}
                return status.get("failureReason") == "MaxRetryReached" and again in status.get(
                    "failureMessage", ""
                )

            await eventually(stopped, timeout=30, message=f"remediation of {again} stops: MaxRetryReached")

            # The Machine itself says what the ControlPlane decided, and where its lineage stands.
            owner = await owner_remediated(
                kube, again, namespace, "CannotBeRemediated", "MaxRetryReached: ", within=10
            )
            assert "retry 1 of maxRetry 0 along the lineage of Machine" in owner["message"], owner
            machines = {m["metadata"]["name"]: m for m in await machines_of(kube, namespace)}
            assert again in machines and not machines[again]["metadata"].get("deletionTimestamp")
            assert monitor.peak("voters", since=since) <= 4
            assert monitor.low("voters", since=since) >= 2
            monitor.assert_never_lost_quorum()
            reasons = [e["reason"] for e in await events_for(kube, namespace, name)]
            assert reasons.count("MachineRemediated") == 2, reasons
            marked = [e["reason"] for e in await events_for(kube, namespace, first)]
            assert EVENT_MACHINE_MARKED in marked, marked
        finally:
            await monitor.__aexit__(None, None, None)


async def test_a_remediation_recorded_before_a_crash_is_carried_out_by_the_next_pass(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    """A remediation is recorded on the ControlPlane (its in-progress annotation) before the
    Machine is deleted. A process that dies between the two leaves the marked Machine named there
    and not deleting; the next pass must delete it as that remediation (same record, no new
    count), not wait for it to go, and the replacement carries that record.

    But not while etcd cannot be read (here: its TLS Secret named but missing): whether the
    removal keeps quorum cannot be told then, so the remediation waits (``EtcdUnreachable``, as
    KubeadmControlPlane defers without an etcd member list) and goes on once etcd answers."""
    name = f"cp{secrets.token_hex(3)}"
    provider = provider_options(provider_state_dir)
    async with running_controlplane(kube, namespace, provider, hooks=True, health_checks=True):
        monitor = await scaled_to_three(kube, name, namespace, healthCheck=SECONDS_HEALTH_CHECK)
        try:
            before = {m["metadata"]["name"] for m in await machines_of(kube, namespace)}
            victim = sorted(before)[1]
            # Paused, the ControlPlane deletes nothing while the health check marks the victim.
            await set_spec(kube, name, namespace, {"paused": True})
            await set_fault(kube, victim, namespace, "kill")

            async def victim_marked() -> bool:
                return marked_for_remediation(await kube.get(API_VERSION, "Machine", victim, namespace))

            await eventually(victim_marked, timeout=30, message=f"{victim} marked by the health check")

            await owner_remediated(kube, victim, namespace, "RemediationDeferred", "Paused: ", within=10)
            recorded = {"machine": victim, "timestamp": "2026-01-01T00:00:00Z", "retryCount": 2}
            # What the dead process left: the record, and no delete.
            annotation = {REMEDIATION_IN_PROGRESS_ANNOTATION: json.dumps([recorded])}
            await kube.patch(
                CP_API_VERSION, "ControlPlane", name, {"metadata": {"annotations": annotation}}, namespace
            )
            await set_spec(kube, name, namespace, {"etcd": {"tlsSecretRef": {"name": "no-such-secret"}}})
            await set_spec(kube, name, namespace, {"paused": False})
            # While etcd cannot be read, the recorded remediation waits.
            deferred = await owner_remediated(
                kube, victim, namespace, "RemediationDeferred", "EtcdUnreachable: ", within=15
            )
            assert "no-such-secret" in deferred["message"], deferred

            async def victim_kept() -> bool:
                obj = await get_machine(kube, victim, namespace)
                return obj is not None and not obj["metadata"].get("deletionTimestamp")

            await holds_for(victim_kept, duration=3, message=f"{victim} not deleted while etcd is unread")
            await set_spec(kube, name, namespace, {"etcd": {"tlsSecretRef": None}})

            async def victim_gone() -> bool:
                return victim not in {m["metadata"]["name"] for m in await machines_of(kube, namespace)}

            await eventually(victim_gone, timeout=90, message=f"{victim} remediated")
            cp = await settled(kube, name, namespace, 3, within=90)
            assert cp["status"]["lastRemediation"] == recorded  # carried out, not recorded again
            assert REMEDIATION_IN_PROGRESS_ANNOTATION not in (cp["metadata"].get("annotations") or {})
            (replacement,) = [
                m for m in await machines_of(kube, namespace) if m["metadata"]["name"] not in before
            ]
            assert remediation_for(replacement) == recorded
            reasons = [e["reason"] for e in await events_for(kube, namespace, name)]
            assert "MachineRemediated" in reasons
            monitor.assert_never_lost_quorum()
        finally:
            await monitor.__aexit__(None, None, None)


@pytest.mark.parametrize("replicas", [3, 5])
async def test_a_killed_member_is_remediated_while_a_deleted_machine_waits_on_the_hook(
    kube: Client, namespace: str, provider_state_dir: Path, replicas: int
) -> None:
    """One member dead, then a user deletes another Machine. Its healthy voter is held by the
    hook until a replacement votes, and no replacement can join while the dead voter fails the
    preflight (etcd itself refuses a new member while a voter is unreachable). Remediation must
    not wait for that deletion: it removes the dead Machine first, and both are replaced, one at
    a time, without losing quorum. With 3 replicas the owned MachineHealthCheck must not count the
    deletion against its maxUnhealthy of 1: the deleting Machine and the dead one would make 2 and
    short-circuit the remediation for ever."""
    name = f"cp{secrets.token_hex(3)}"
    provider = provider_options(provider_state_dir)
    async with running_controlplane(kube, namespace, provider, hooks=True, health_checks=True):
        await kube.create(
            controlplane(
                name,
                namespace,
                replicas=replicas,
                domains=["zone-a", "zone-b", "zone-c"],
                healthCheck=SECONDS_HEALTH_CHECK,
            )
        )
        monitor = QuorumMonitor([await first_client_url(kube, namespace)])
        await monitor.__aenter__()
        try:
            await settled(kube, name, namespace, replicas, within=150)
            since = monitor.mark()
            first, victim = [m["metadata"]["name"] for m in await machines_of(kube, namespace)][:2]
            await set_fault(kube, victim, namespace, "kill")

            # Deleted before the health check marks the victim (seconds later), so that its
            # remediation has to decide with that deletion held by the hook.
            await healthy_voters_down_to(monitor, replicas - 1, f"{victim}'s member dead")
            await kube.delete(API_VERSION, "Machine", first, namespace)

            async def both_replaced() -> bool:
                names = {m["metadata"]["name"] for m in await machines_of(kube, namespace)}
                return first not in names and victim not in names

            # The status can still read 5 of 5 from before the kill: wait for the Machines first.
            await eventually(both_replaced, timeout=150, message=f"{first} and {victim} gone")
            cp = await settled(kube, name, namespace, replicas, within=90)
            assert cp["status"]["lastRemediation"]["machine"] == victim
            assert monitor.peak("voters", since=since) <= replicas + 1
            monitor.assert_never_lost_quorum()
        finally:
            await monitor.__aexit__(None, None, None)


async def test_the_last_machine_marked_unhealthy_is_kept_and_the_controlplane_is_degraded(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    """A one-replica ControlPlane whose only Machine's Node goes NotReady, marked by a user's
    MachineHealthCheck that allows every Machine to be unhealthy (the ControlPlane's own allows
    none at one replica): the ControlPlane never deletes it (its member is the whole etcd
    cluster). Only a human can go on, so the Machine reads ``CannotBeRemediated`` and the
    ControlPlane ``Degraded`` with reason ``CannotRemediateLastMachine``; etcd keeps its one voter
    throughout."""
    name = f"cp{secrets.token_hex(3)}"
    provider = provider_options(provider_state_dir)
    async with running_controlplane(kube, namespace, provider, hooks=True, health_checks=True):
        await kube.create(controlplane(name, namespace, replicas=1, enableAutorepair=False))
        await kube.create(
            {
                "apiVersion": API_VERSION,
                "kind": "MachineHealthCheck",
                # The scope label opts the user's check in to this operator's controller.
                "metadata": {
                    "name": f"{name}-users",
                    "namespace": namespace,
                    "labels": {MHC_SCOPE_LABEL: MHC_SCOPE_VALUE},
                },
                "spec": {
                    "selector": {"matchLabels": {"machine.openshift.io/cluster-api-machine-role": "master"}},
                    "maxUnhealthy": "100%",
                    **SECONDS_HEALTH_CHECK,
                },
            }
        )
        async with QuorumMonitor([await first_client_url(kube, namespace)]) as monitor:
            await settled(kube, name, namespace, 1, within=60)
            since = monitor.mark()
            [only] = [m["metadata"]["name"] for m in await machines_of(kube, namespace)]
            await set_fault(kube, only, namespace, "notready")

            async def degraded() -> JSON | None:
                condition = cp_condition(await get_cp(kube, name, namespace), "Degraded")
                return condition if condition.get("status") == "True" else None

            condition = await eventually(degraded, timeout=30, message="the ControlPlane Degraded")
            assert condition["reason"] == "CannotRemediateLastMachine", condition
            assert only in condition["message"], condition
            cp = await get_cp(kube, name, namespace)
            assert (cp or {})["status"]["failureReason"] == "CannotRemediateLastMachine"
            owner_remediated = machine_condition(await get_machine(kube, only, namespace), "OwnerRemediated")
            assert owner_remediated.get("reason") == "CannotBeRemediated", owner_remediated

            async def still_there() -> bool:
                machine = await get_machine(kube, only, namespace)
                return machine is not None and not machine["metadata"].get("deletionTimestamp")

            await holds_for(still_there, duration=3, message=f"{only}, the last Machine, kept")
            assert monitor.low("voters", since=since) == 1 and monitor.peak("voters", since=since) == 1
            monitor.assert_never_lost_quorum(since=since)


FAILING_TEMPLATE = {
    "template": {
        "spec": {
            "providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "faults": ["fail-provision"]}}
        }
    }
}
"""A template whose new Machines never provision (the provider's ``fail-provision`` fault, in the
providerSpec: it applies to the Machines made from it, never to the existing ones)."""
FAULTY_TEMPLATE = {
    "template": {
        "spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "faults": ["notready"]}}}
    }
}
"""A template whose new Machines never get a Ready Node (the provider's ``notready`` fault)."""
ROLLED_BACK = {"template": {"spec": {"providerSpec": {"value": {"faults": None}}}}}
"""The template as it was before a faulty one (a merge patch: null removes the faults)."""


async def rebalance_scenario(kube: Client, namespace: str, provider_state_dir: Path) -> None:
    """Case 2: from a, a, b to a, b, c with maxSurge 0 by adding a domain: delete from the crowded
    domain, recreate in the empty one, never more than replicas Machines not being deleted, then
    nothing moves. Case 3, same world: a template whose replacement never gets a Ready Node holds
    the rollout; rolling the template back deletes that replacement, whose own Node readiness
    does not count against its delete. Then under maxSurge 0, a replacement that never provisions
    while the old Machine's deletion is held for a voting one: rolled back, it goes too."""
    name = f"cp{secrets.token_hex(3)}"
    zero = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}}
    async with running_controlplane(kube, namespace, provider_options(provider_state_dir), hooks=True):
        body = controlplane(name, namespace, replicas=3, domains=["zone-a", "zone-b"], strategy=zero)
        await kube.create(body)
        async with QuorumMonitor([await first_client_url(kube, namespace)]) as monitor:
            await settled(kube, name, namespace, 3, within=90)
            assert domains_of(await machines_of(kube, namespace)) == ["zone-a", "zone-a", "zone-b"]
            since = monitor.mark()
            async with MachineCount(kube, namespace) as count:
                three = [
                    {"name": z, "providerSpec": {"value": {"failureDomain": z}}}
                    for z in ("zone-a", "zone-b", "zone-c")
                ]
                await set_spec(kube, name, namespace, {"failureDomains": three})

                async def rebalanced() -> bool:
                    return domains_of(await machines_of(kube, namespace)) == ["zone-a", "zone-b", "zone-c"]

                try:
                    await eventually(rebalanced, timeout=60, message="one Machine per domain")
                except AssertionError as err:
                    progressing = cp_condition(await get_cp(kube, name, namespace), "Progressing")
                    raise AssertionError(f"{err}; {progressing}; {count.history[-6:]}") from None
                await settled(kube, name, namespace, 3, within=60)
                converged = sorted(m["metadata"]["name"] for m in await machines_of(kube, namespace))

                async def unchanged() -> bool:
                    machines = await machines_of(kube, namespace)
                    return sorted(m["metadata"]["name"] for m in machines) == converged

                await holds_for(unchanged, duration=30, message="a converged spread stays still")
            assert count.not_deleting_peak <= 3, count.history
            assert count.peak <= 4
            # maxSurge 0: the rebalance's deletes are marked, so each member goes before its
            # replacement votes (never lower than desired - 1).
            assert monitor.low("voters", since=since) >= 2
            assert monitor.peak("voters", since=since) <= 4

            one = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}
            await set_spec(kube, name, namespace, {"strategy": one, **FAULTY_TEMPLATE})

            async def held_by_the_failing_replacement() -> str | None:
                new = [m["metadata"]["name"] for m in await machines_of(kube, namespace)]
                failing = [n for n in new if n not in converged]
                message = cp_condition(await get_cp(kube, name, namespace), "Progressing").get("message", "")
                if len(failing) == 1 and f"MachineNodesReady: Machine(s) {failing[0]}" in message:
                    return failing[0]
                return None

            failing = await eventually(
                held_by_the_failing_replacement,
                timeout=60,
                message="the rollout waits on its NotReady replacement",
            )
            # The rollback: the template as it was.
            await set_spec(kube, name, namespace, ROLLED_BACK)

            async def failing_replacement_gone() -> bool:
                names = sorted(m["metadata"]["name"] for m in await machines_of(kube, namespace))
                return names == converged

            await eventually(failing_replacement_gone, timeout=60, message=f"the rollback deletes {failing}")
            await settled(kube, name, namespace, 3, within=60)
            assert monitor.peak("voters", since=since) <= 4
            assert monitor.low("voters", since=since) >= 2
            surge_zero_since = monitor.mark()

            # maxSurge 0: an old Machine goes first (its member too, before a replacement votes:
            # the rollout marked it); its replacement never provisions. Rolled back, that
            # replacement is outdated and goes, so the rollout is not stuck on it for ever.
            await set_spec(kube, name, namespace, {"strategy": zero, **FAILING_TEMPLATE})

            async def a_failed_replacement() -> str | None:
                machines = await machines_of(kube, namespace)
                failed = [m for m in machines if (m.get("status") or {}).get("phase") == "Failed"]
                return failed[0]["metadata"]["name"] if len(failed) == 1 else None

            stalled = await eventually(a_failed_replacement, timeout=60, message="a failed replacement")
            await set_spec(kube, name, namespace, ROLLED_BACK)

            async def replaced_by_a_working_one() -> bool:
                names = [m["metadata"]["name"] for m in await machines_of(kube, namespace)]
                return len(names) == 3 and stalled not in names and len(set(names) - set(converged)) == 1

            try:
                await eventually(
                    replaced_by_a_working_one, timeout=90, message=f"the rollback replaces {stalled}"
                )
            except AssertionError as err:
                progressing = cp_condition(await get_cp(kube, name, namespace), "Progressing")
                raise AssertionError(f"{err}; {progressing}") from None
            await settled(kube, name, namespace, 3, within=60)
            assert monitor.peak("voters", since=since) <= 4
            assert monitor.low("voters", since=surge_zero_since) >= 2
            monitor.assert_never_lost_quorum()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def rollout_after_run(
    env: Environment, machine_crds: None, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[asyncio.Task[None]]:
    """:func:`rollout_after_scenario`, run beside the module's other tests: a minute of it is
    two 30 s holds in which nothing may happen."""
    async with run_in_background(env, tmp_path_factory, "rollout-after", rollout_after_scenario) as task:
        yield task


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def rebalance_run(
    env: Environment, machine_crds: None, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[asyncio.Task[None]]:
    """:func:`rebalance_scenario`, run beside the module's other tests: 30 s of it is a hold in
    which nothing may move."""
    async with run_in_background(env, tmp_path_factory, "rebalance", rebalance_scenario) as task:
        yield task


start_background_scenarios = background_starter("rollout_after_run", "rebalance_run")


async def test_rolling_rollout_after_waits_for_its_moment_then_replaces_each_machine_once(
    rollout_after_run: asyncio.Task[None],
) -> None:
    """:func:`rollout_after_scenario`, started with the module (tests.support.background)."""
    await rollout_after_run


async def test_rebalance_under_max_surge_zero_converges_and_a_failing_replacement_is_rolled_back(
    rebalance_run: asyncio.Task[None],
) -> None:
    """:func:`rebalance_scenario`, started with the module (tests.support.background)."""
    await rebalance_run
