"""One set of members and Machines, fed to both controllers' decisions through the one model.

The ControlPlane controller (its etcd view and preflight, its quorum check for a remediation)
and the etcd-quorum-hook controller (promotion, removal, the hook) must agree on which member is
whose. Each world below is built twice — once where only the Machines' InternalIP addresses link
members to Machines (the member names match neither Machine nor Node names, as on a cloud whose
etcd names members after something else), once where only the provider's contract annotations do
(every member on one address, as the development provider runs them) — and both controllers'
decisions are checked on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from api.quorum import quorum_kept_without
from controllers.controlplane import machines as cp_machine
from controllers.controlplane import preflight as cp_preflight
from controllers.controlplane.etcdview import EtcdView, view_of
from controllers.etcd.client import Member
from controllers.etcd.membership import MEMBER_ID_ANNOTATION, PEER_URL_ANNOTATION, MachineIdentity, Membership
from controllers.etcdquorum import rules as hook_rules
from tests.support import machine_rows


@dataclass(frozen=True)
class Host:
    """One control-plane Machine and its member, as a test row."""

    index: int
    learner: bool = False
    healthy: bool = True
    deleting: bool = False
    started: bool = True


Layout = Callable[[Host], tuple[dict[str, Any], Member]]


def _machine(host: Host, ip: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"cp-{host.index}",
            "creationTimestamp": f"2026-01-01T00:0{host.index}:00Z",
            "annotations": annotations,
            **({"deletionTimestamp": "2026-01-01T01:00:00Z"} if host.deleting else {}),
        },
        "spec": {
            "lifecycleHooks": {"preDrain": [{"name": hook_rules.HOOK_NAME, "owner": hook_rules.HOOK_OWNER}]}
        },
        "status": {
            "phase": "Running",
            "nodeRef": {"name": f"ip-10-0-0-{host.index}.ec2.internal"},
            "addresses": [{"type": "InternalIP", "address": ip}],
        },
    }


def _member(host: Host, ip: str, peer_port: int, client_port: int) -> Member:
    literal = f"[{ip}]" if ":" in ip else ip
    return Member(
        id=0xA0 + host.index,
        # Named after neither the Machine (cp-N) nor the Node (ip-10-0-0-N...).
        name=f"etcd-member-{host.index * 7}" if host.started else "",
        peer_urls=(f"https://{literal}:{peer_port}",),
        client_urls=(f"https://{literal}:{client_port}",) if host.started else (),
        is_learner=host.learner,
    )


def by_address(host: Host) -> tuple[dict[str, Any], Member]:
    """No annotation; each Machine on its own InternalIP (IPv6 for odd rows), standard ports."""
    ip = f"fd00::{host.index}" if host.index % 2 else f"10.0.0.{host.index}"
    return _machine(host, ip, {}), _member(host, ip, 2380, 2379)


def by_annotation(host: Host) -> tuple[dict[str, Any], Member]:
    """Every Machine on 127.0.0.1; the contract annotations (peer URL, or member id only for
    even rows) are all that tells the members apart."""
    member = _member(host, "127.0.0.1", 2380 + 10 * host.index, 2379 + 10 * host.index)
    annotations = (
        {MEMBER_ID_ANNOTATION: member.id_hex}
        if host.index % 2 == 0
        else {PEER_URL_ANNOTATION: member.peer_urls[0]}
    )
    return _machine(host, "127.0.0.1", annotations), member


LAYOUTS = pytest.mark.parametrize(
    "layout",
    [by_address, by_annotation],
    ids=["when only the addresses link members to Machines", "when only the contract annotations link them"],
)


@dataclass
class World:
    """Both controllers' inputs, derived from one :class:`Membership`."""

    membership: Membership
    view: EtcdView
    cp_machines: list[cp_machine.MachineInfo]
    hook_machines: dict[str, hook_rules.GuardedMachine]
    owners: dict[int, str | None]

    def preflight(self, desired: int) -> dict[str, str]:
        hosting = sorted(self.view.with_member | {m.name for m in self.cp_machines if not m.deleting})
        failures = cp_preflight.preflight(
            self.cp_machines, self.view.facts, hosting_etcd=hosting, desired=desired
        )
        return {f.check: f.message for f in failures}

    def removal(self, desired: int) -> hook_rules.Decision:
        return hook_rules.removal_decision(list(self.membership.members), self.hook_machines, desired)

    def promotion(self, desired: int) -> hook_rules.Decision:
        return hook_rules.promotion_decision(list(self.membership.members), self.hook_machines, desired)


def world(layout: Layout, *hosts: Host) -> World:
    machines, members = zip(*(layout(host) for host in hosts), strict=True)
    health = {
        m.id: (h.healthy and h.started, None if h.healthy else "dead")
        for m, h in zip(members, hosts, strict=True)
    }
    membership = Membership.of(list(members), [MachineIdentity.from_machine(m) for m in machines], health)
    deleting = {f"cp-{h.index}" for h in hosts if h.deleting}
    view = view_of(membership, deleting)
    cp_machines = [
        machine_rows.cp_machine(
            f"cp-{h.index}",
            created=datetime(2026, 1, 1, 0, h.index, tzinfo=UTC),
            deleting=h.deleting,
            phase="Running",
            node_ready=h.healthy,
            etcd_voter=f"cp-{h.index}" in view.voters,
            etcd_healthy=f"cp-{h.index}" in view.healthy,
            etcd_learner=f"cp-{h.index}" in view.with_member - view.voters,
        )
        for h in hosts
    ]
    hook_machines = {m["metadata"]["name"]: hook_rules.machine_info(m) for m in machines}
    owners = {m.member.id: m.machine for m in membership.members}
    return World(membership, view, cp_machines, hook_machines, owners)


@LAYOUTS
def test_every_member_belongs_to_its_own_machine_in_both_controllers(layout: Layout) -> None:
    w = world(layout, Host(1), Host(2), Host(3), Host(4, learner=True))
    assert w.owners == {0xA1: "cp-1", 0xA2: "cp-2", 0xA3: "cp-3", 0xA4: "cp-4"}
    assert w.view.voters == {"cp-1", "cp-2", "cp-3"} and w.view.with_member == {
        "cp-1",
        "cp-2",
        "cp-3",
        "cp-4",
    }
    assert w.view.facts.member_names == ("cp-1", "cp-2", "cp-3", "cp-4")
    # The ControlPlane waits for the learner; the hook controller is the one to promote it.
    assert set(w.preflight(desired=3)) == {cp_preflight.CHECK_ETCD_NO_PENDING_LEARNER}
    promoted = w.promotion(desired=3).member
    assert promoted is not None and promoted.machine == "cp-4"
    assert w.removal(desired=3).member is None


@LAYOUTS
def test_a_replacement_round_seen_alike_by_both_controllers(layout: Layout) -> None:
    # cp-1 is being replaced: cp-4's member voted, so the hook controller removes cp-1's member,
    # and the ControlPlane agrees that losing it keeps quorum.
    w = world(layout, Host(1, deleting=True), Host(2), Host(3), Host(4))
    removed = w.removal(desired=3).member
    assert removed is not None and removed.machine == "cp-1"
    assert quorum_kept_without(cp_machine.machine_voters(w.cp_machines), "cp-1")
    assert not hook_rules.hook_removable(w.hook_machines["cp-1"], w.owners)
    assert w.preflight(desired=3) == {}  # the deleting voter is left out of the checks
    # Once its member is gone, both see cp-1 without a member, and its hook may go.
    after = world(layout, Host(2), Host(3), Host(4))
    assert hook_rules.hook_removable(w.hook_machines["cp-1"], after.owners)
    assert "cp-1" not in after.view.with_member


@LAYOUTS
def test_an_unhealthy_voter_is_named_as_the_same_machine_by_both(layout: Layout) -> None:
    w = world(layout, Host(1, deleting=True), Host(2, healthy=False), Host(3), Host(4))
    removal = w.removal(desired=3)
    assert removal.member is None
    assert [(wait.machine, wait.reason) for wait in removal.waits] == [
        ("cp-1", hook_rules.WAIT_HEALTHY_VOTERS)
    ]
    assert "unhealthy voters: etcd-member-14 (a2)" in removal.waits[0].message
    failures = w.preflight(desired=3)
    assert failures[cp_preflight.CHECK_ETCD_VOTERS_REACHABLE].startswith("voter(s) unhealthy: cp-2: dead")
    assert w.view.healthy == {"cp-1", "cp-3", "cp-4"}


@LAYOUTS
def test_an_unstarted_learner_belongs_to_its_machine_before_it_has_a_name(layout: Layout) -> None:
    w = world(layout, Host(1), Host(2), Host(3), Host(4, learner=True, started=False))
    assert w.owners[0xA4] == "cp-4"
    assert w.view.facts.learners == ("cp-4",)
    assert w.promotion(desired=3).member is None  # not started: never promoted
    assert not hook_rules.is_abandoned_learner(w.membership.members[3], first_seen=0, now=3600, grace=60)


@LAYOUTS
def test_quorum_loss_stops_both(layout: Layout) -> None:
    w = world(layout, Host(1, deleting=True), Host(2, healthy=False), Host(3, healthy=False), Host(4))
    assert w.membership.quorum_lost
    assert [wait.reason for wait in w.removal(desired=3).waits] == [hook_rules.WAIT_QUORUM_LOST]
    assert not quorum_kept_without(cp_machine.machine_voters(w.cp_machines), "cp-1")
