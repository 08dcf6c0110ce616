"""The whole ControlPlane life cycle against a provider that shows only what a cloud shows.

One world for the module (the embedded API server, ``cpo localmachine --realistic`` and
``cpo run``, each a subprocess, started by :class:`demo.world.DemoWorld`): every etcd member on a
loopback address of its own at ports 2379/2380, serving TLS with client-certificate auth; Nodes
named ``ip-127-X-Y-Z`` after that address (so Node and member names differ from Machine names);
the etcd client certificate in a Secret the ControlPlane names in ``spec.etcd.tlsSecretRef``; and
no annotation saying where a member is. The operator must find the members from the Machines'
InternalIP addresses alone. The tests run in order on that world: bootstrap 3 voters, scale to
5, a rolling update, a killed member remediated, a scale-in that deletes the leader's Machine
(leadership is handed on first, over TLS), then the ControlPlane deleted in the middle of a
replacement (the replacement finishes first; the Machines stay).
The quorum monitor samples etcd over TLS all along; the last test reads its whole record.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio

from api.machine import API_VERSION
from controllers.etcd.client import EtcdClient, EtcdClientOptions, EtcdError
from controllers.etcdquorum.rules import Hook
from demo.monitor import quorum_losses
from demo.observer import Sample
from demo.tour import CONTROLPLANE, kill, rollout, scale_out, settled
from demo.tour import bootstrap as bootstrap_step
from demo.world import DemoWorld
from providers.localmachine.realistic import PKI_DIR
from runtime.client import Client
from runtime.errors import NotFound
from runtime.jsoncodec import JSON
from tests.support.controlplane import our_hooks
from tests.support.poll import eventually
from tests.support.tour_world import TourWorld, tour_world

pytestmark = [pytest.mark.slow, pytest.mark.kubectl, pytest.mark.asyncio(loop_scope="module")]

NAMESPACE = "realistic"
CP = "controlplane.cpo.dev/v1alpha1"
LOCATION_ANNOTATION_PREFIXES = ("etcd.cpo.dev/", "local.cpo.dev/etcd")
OWN_HOOK = Hook("cpo.dev/EtcdQuorum", "cpo/etcd")
"""The operator runs under a hook identity of its own, as beside another etcd guard: the release
of a ControlPlane deleted while ``cpo run`` runs without its etcd-quorum-hook controller still
knows the hook for its own (the default identity would then be OpenShift's etcd operator's)."""
DELETE_MACHINE_ANNOTATION = "machine.openshift.io/delete-machine"
"""A scale-in deletes the Machine carrying it first (OpenShift's Machine API convention)."""


@dataclass
class World(TourWorld):
    scale_in_started: float | None = None
    """When the scale from 5 to 3 began, on the quorum monitor's clock."""
    deletion_started: float | None = None
    """When the ControlPlane's deletion mid-replacement began, on the quorum monitor's clock."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def realistic(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    world = DemoWorld(
        tmp_path_factory.mktemp("realistic-world"),
        namespace=NAMESPACE,
        realistic=True,
        operator_flags=(f"--etcd-hook-name={OWN_HOOK.name}", f"--etcd-hook-owner={OWN_HOOK.owner}"),
    )
    async with tour_world(world) as started:
        yield World(started.world, started.client, started.observer, started.tour)


async def machines(client: Client) -> list[JSON]:
    listed = await client.list(API_VERSION, "Machine", namespace=NAMESPACE)
    return list(listed.get("items") or ())


def internal_ip(obj: JSON) -> str:
    return next(a["address"] for a in obj["status"]["addresses"] if a["type"] == "InternalIP")


def location_annotations(items: list[JSON]) -> dict[str, list[str]]:
    """Per Machine, the annotations that would tell the operator where its member is."""
    found = {}
    for item in items:
        keys = [
            key
            for key in (item["metadata"].get("annotations") or {})
            if key.startswith(LOCATION_ANNOTATION_PREFIXES)
        ]
        if keys:
            found[item["metadata"]["name"]] = keys
    return found


async def assert_cloud_like(world: World) -> None:
    """Each Machine: no location annotation; its Node named after its address, not after it; the
    Node's InternalIP the Machine's; its etcd member named after the Node and listening there."""
    items = await machines(world.client)
    assert location_annotations(items) == {}
    addresses = set()
    sample = world.observer.monitor.samples[-1] if world.observer.monitor else None
    assert sample is not None
    members = {name.removesuffix("~") for name in sample.machines}
    for machine in items:
        address = internal_ip(machine)
        node_name = machine["status"]["nodeRef"]["name"]
        assert node_name == "ip-" + address.replace(".", "-") != machine["metadata"]["name"]
        node = await world.client.get("v1", "Node", node_name)
        assert internal_ip(node) == address
        assert node_name in members, (node_name, members)
        addresses.add(address)
    assert len(addresses) == len(items), "two Machines share an address"
    assert all(not address.startswith("127.0.0.") for address in addresses)


async def test_bootstrap_finds_the_members_from_internal_ips_over_tls(realistic: World) -> None:
    await bootstrap_step(realistic.tour)
    cp = await realistic.client.get(CP, "ControlPlane", CONTROLPLANE, NAMESPACE)
    assert cp["spec"]["etcd"]["tlsSecretRef"] == {"name": realistic.world.etcd_client_secret}
    await assert_cloud_like(realistic)
    # etcd asks every client for a certificate from the provider's CA: trusting the CA is not enough.
    url = next(m.client_url for m in realistic.observer.latest.machines if m.client_url)  # type: ignore[union-attr]
    assert url.startswith("https://") and url.endswith(":2379")
    secret = await realistic.client.get("v1", "Secret", realistic.world.etcd_client_secret, NAMESPACE)
    assert set(secret["data"]) >= {"tls.crt", "tls.key", "ca.crt"}
    ca_only = ssl.create_default_context(cafile=str(realistic.world.state_dir / PKI_DIR / "ca.crt"))
    async with EtcdClient([url], EtcdClientOptions(timeout=3, ssl_context=ca_only)) as anonymous:
        with pytest.raises(EtcdError):
            await anonymous.member_list()


async def test_scale_to_five(realistic: World) -> None:
    await scale_out(realistic.tour)
    await assert_cloud_like(realistic)


async def test_rolling_update_replaces_every_machine(realistic: World) -> None:
    await rollout(realistic.tour)
    await assert_cloud_like(realistic)


async def test_a_killed_member_is_marked_and_replaced(realistic: World) -> None:
    detail = await kill(realistic.tour)
    cp = await realistic.client.get(CP, "ControlPlane", CONTROLPLANE, NAMESPACE)
    victim = detail.split()[0]
    assert (cp["status"].get("lastRemediation") or {}).get("machine") == victim, cp["status"]
    await assert_cloud_like(realistic)


async def test_scaling_in_hands_leadership_on_over_tls_before_deleting_the_leaders_machine(
    realistic: World,
) -> None:
    monitor = realistic.observer.monitor
    assert monitor is not None

    async def leader() -> str | None:
        return monitor.samples[-1].leader if monitor.samples else None

    leading = await eventually(leader, timeout=30, message="etcd has a leader")
    items = await machines(realistic.client)
    victim = next(m["metadata"]["name"] for m in items if m["status"]["nodeRef"]["name"] == leading)
    await realistic.tour.kubectl("annotate", "machine", victim, f"{DELETE_MACHINE_ANNOTATION}=")
    realistic.scale_in_started = monitor.mark()
    await realistic.tour.kubectl("scale", f"controlplane/{CONTROLPLANE}", "--replicas", "3")
    await realistic.tour.wait_for("3 voters", settled(3))
    assert victim not in {m["metadata"]["name"] for m in await machines(realistic.client)}
    # The operator's log, not its Events: by now the Event spam filter (25 per object, then one per
    # 5 minutes) has long dropped the ControlPlane's Events.
    log = realistic.world.log_path("operator").read_text(errors="replace")
    assert f"Moved etcd leadership from {victim} to " in log, [
        line for line in log.splitlines() if "leadership" in line.lower()
    ]
    assert "CERTIFICATE_VERIFY_FAILED" not in log


async def restart_operator(world: DemoWorld, controllers: str | None = None) -> None:
    """Stop ``cpo run`` and start it again on its ports, with ``--controllers=controllers``."""
    await world.child("operator").stop()
    await world.start_operator(0, controllers)


async def test_deleting_the_controlplane_mid_replacement_finishes_it_then_releases_the_machines(
    realistic: World,
) -> None:
    """``kubectl delete controlplane`` while a replacement's member is a learner whose Machine has
    no hook yet (the moment between its creation and the etcd-quorum-hook controller's next pass,
    stretched here by running ``cpo run`` without that controller): the replacement is finished
    (hooked, promoted, the old member removed and the old Machine let go), then every Machine is
    released. The deletion used to hang for ever: the release waited for the old member's removal,
    which waited for the promotion, which waited for a hook nobody placed during a deletion."""
    monitor = realistic.observer.monitor
    assert monitor is not None
    tour = realistic.tour
    items = await machines(realistic.client)
    assert len(items) == 3
    leader = monitor.samples[-1].leader
    old = next(m["metadata"]["name"] for m in items if m["status"]["nodeRef"]["name"] != leader)
    stayed = {m["metadata"]["name"] for m in items} - {old}
    realistic.deletion_started = monitor.mark()

    await restart_operator(realistic.world, "*,-etcd-quorum-hook")
    await tour.kubectl("delete", "machine", old, "--wait=false")

    def replacement_joined(sample: Sample, _: dict[str, Any]) -> bool:
        return any(m.etcd_role == "learner" and not m.deleting for m in sample.machines)

    await tour.wait_for("the replacement's member, a learner", replacement_joined)
    latest = realistic.observer.latest
    assert latest is not None
    new = next(m.name for m in latest.machines if m.etcd_role == "learner")
    replacement = await realistic.client.get(API_VERSION, "Machine", new, NAMESPACE)
    assert not our_hooks(replacement, OWN_HOOK), "the replacement must be caught before it is hooked"
    await tour.kubectl("delete", "controlplane", CONTROLPLANE, "--wait=false")

    async def says_what_it_waits_for() -> bool:
        listed = await realistic.client.list("v1", "Event", namespace=NAMESPACE)
        return any(
            e.get("reason") == "ReleaseWaitsForEtcd" and old in e.get("message", "")
            for e in listed.get("items") or ()
        )

    await eventually(says_what_it_waits_for, timeout=30, message=f"an event: the release waits for {old}")
    await restart_operator(realistic.world)

    async def gone() -> bool:
        try:
            await realistic.client.get(CP, "ControlPlane", CONTROLPLANE, NAMESPACE)
        except NotFound:
            return True
        return False

    await eventually(gone, timeout=120, message="ControlPlane deleted")

    async def old_gone() -> bool:
        return old not in {m["metadata"]["name"] for m in await machines(realistic.client)}

    await eventually(old_gone, timeout=60, message=f"the replaced Machine {old} deleted")
    after = await machines(realistic.client)
    assert {m["metadata"]["name"] for m in after} == stayed | {new}
    assert all(not m["metadata"].get("deletionTimestamp") for m in after)
    assert all(not m["metadata"].get("ownerReferences") for m in after), [
        m["metadata"].get("ownerReferences") for m in after
    ]
    assert not any(our_hooks(m, OWN_HOOK) for m in after), "a released Machine keeps no etcd guard hook"
    voters = {name: "voter" for name in stayed | {new}}

    async def observed_settled() -> bool:
        # The observer's next sample after the old Machine went: one voter per Machine left.
        latest = realistic.observer.latest
        return latest is not None and {m.name: m.etcd_role for m in latest.machines} == voters

    await eventually(observed_settled, timeout=30, message=f"the voters are the Machines {sorted(voters)}")
    sample = monitor.samples[-1]
    assert (sample.voters, sample.healthy_voters, sample.learners) == (3, 3, 0), sample
    # Over the whole deletion: quorum held, and never more than one voter above the three.
    monitor.assert_never_lost_quorum(since=realistic.deletion_started)
    assert monitor.peak("voters", since=realistic.deletion_started) == 4
    assert monitor.low("healthy_voters", since=realistic.deletion_started) >= 3


async def test_the_quorum_monitor_saw_quorum_kept_and_never_more_than_one_extra_voter(
    realistic: World,
) -> None:
    monitor = realistic.observer.monitor
    assert monitor is not None
    samples = monitor.samples
    assert len(samples) > 100, "the monitor sampled etcd over TLS all along"
    assert quorum_losses(samples) == [], [
        (samples[start].at, samples[end - 1].at) for start, end in quorum_losses(samples)
    ]
    # The observer pairs each quorum sample with the ControlPlane's replicas read just after it.
    # Until the scale-in the tests only raised them, so that count bounds the sample; from the
    # scale-in on, voters only go down from the 5 the cluster had.
    scale_in = realistic.scale_in_started
    assert scale_in is not None
    over = [
        (s.at, s.voters, s.desired)
        for s in realistic.observer.samples
        if s.desired and s.voters > (s.desired + 1 if s.at < scale_in else 5)
    ]
    assert over == []
    assert max(s.voters for s in samples) == 6, "the rollout adds one voter at a time above 5"
    assert location_annotations(await machines(realistic.client)) == {}
