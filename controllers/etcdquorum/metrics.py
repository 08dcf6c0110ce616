"""The ``cpo_etcd_*`` Prometheus families of the etcd-quorum-hook controller.

They live in the runtime's registry (:data:`runtime.metrics.registry`), next to the controller
and workqueue families, so ``/metrics`` of ``cpo run`` serves them. Every family is labelled by
``controlplane`` (``<namespace>/<name>``):

* ``cpo_etcd_members{controlplane,role}``: members by ``role`` (``voter`` or ``learner``);
* ``cpo_etcd_healthy_voters{controlplane}``: voters that answer a linearizable read;
* ``cpo_etcd_quorum_margin{controlplane}``: healthy voters minus the quorum; 0 means one more
  failure loses quorum, below 0 means it is lost;
* ``cpo_etcd_learner_promotions_total{controlplane}`` and
  ``cpo_etcd_member_removals_total{controlplane}``: membership changes this process made;
* ``cpo_etcd_hook_waits{controlplane,reason}``: Machines whose member change is waiting, by the
  check that holds it (the reasons of :mod:`controllers.etcdquorum.rules`);
* ``cpo_etcd_members_without_machine{controlplane,reason}``: members that belong to no Machine
  and stay, by why (:data:`controllers.etcdquorum.members_without_machine.KEPT_REASONS`), and
  ``cpo_etcd_members_without_machine_removed_total{controlplane}``: dead ones removed (also
  counted in ``cpo_etcd_member_removals_total``);
* ``cpo_etcd_planned_voter_dip_seconds{controlplane}``: how long the cluster has had one voter
  fewer than desired because a ``maxSurge: 0`` replacement removed the old member before the new
  one votes (0 when it has not): the planned dip CPOEtcdQuorumAtRisk leaves to
  CPOEtcdPlannedVoterDipTooLong.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Gauge

from controllers.etcdquorum.members_without_machine import KEPT_REASONS
from controllers.etcdquorum.rules import WAIT_REASONS
from runtime.metrics import registry

ROLES: Final = ("voter", "learner")

members: Final = Gauge(
    "cpo_etcd_members",
    "etcd members of a control plane, by role (voter or learner).",
    ["controlplane", "role"],
    registry=registry,
)
healthy_voters: Final = Gauge(
    "cpo_etcd_healthy_voters",
    "etcd voting members of a control plane that answer a linearizable read.",
    ["controlplane"],
    registry=registry,
)
quorum_margin: Final = Gauge(
    "cpo_etcd_quorum_margin",
    "Healthy etcd voters minus the quorum: 0 means one more failure loses quorum.",
    ["controlplane"],
    registry=registry,
)
learner_promotions_total: Final = Counter(
    "cpo_etcd_learner_promotions_total",
    "etcd learners promoted to voters by the etcd-quorum-hook controller.",
    ["controlplane"],
    registry=registry,
)
member_removals_total: Final = Counter(
    "cpo_etcd_member_removals_total",
    "etcd members removed by the etcd-quorum-hook controller.",
    ["controlplane"],
    registry=registry,
)
hook_waits: Final = Gauge(
    "cpo_etcd_hook_waits",
    "Machines whose etcd member change waits, by the check that holds it.",
    ["controlplane", "reason"],
    registry=registry,
)

members_without_machine: Final = Gauge(
    "cpo_etcd_members_without_machine",
    "etcd members that belong to no Machine and stay, by why they stay.",
    ["controlplane", "reason"],
    registry=registry,
)
members_without_machine_removed_total: Final = Counter(
    "cpo_etcd_members_without_machine_removed_total",
    "Dead etcd members of no Machine and no Node removed by the etcd-quorum-hook controller.",
    ["controlplane"],
    registry=registry,
)
planned_voter_dip_seconds: Final = Gauge(
    "cpo_etcd_planned_voter_dip_seconds",
    "Seconds since a maxSurge-0 replacement removed a member before its replacement votes; 0 when not.",
    ["controlplane"],
    registry=registry,
)


def init(controlplane: str) -> None:
    """Create every series of ``controlplane`` at zero, so dashboards see it before the first change."""
    for role in ROLES:
        members.labels(controlplane, role)
    healthy_voters.labels(controlplane)
    quorum_margin.labels(controlplane)
    learner_promotions_total.labels(controlplane)
    member_removals_total.labels(controlplane)
    for reason in WAIT_REASONS:
        hook_waits.labels(controlplane, reason)
    for reason in KEPT_REASONS:
        members_without_machine.labels(controlplane, reason)
    members_without_machine_removed_total.labels(controlplane)
    planned_voter_dip_seconds.labels(controlplane)


def forget(controlplane: str) -> None:
    """Drop every series of a ControlPlane that is gone (or uses external etcd)."""
    for gauge_or_counter, label_sets in (
        (members, [(controlplane, role) for role in ROLES]),
        (healthy_voters, [(controlplane,)]),
        (quorum_margin, [(controlplane,)]),
        (learner_promotions_total, [(controlplane,)]),
        (member_removals_total, [(controlplane,)]),
        (hook_waits, [(controlplane, reason) for reason in WAIT_REASONS]),
        (members_without_machine, [(controlplane, reason) for reason in KEPT_REASONS]),
        (members_without_machine_removed_total, [(controlplane,)]),
        (planned_voter_dip_seconds, [(controlplane,)]),
    ):
        for labels in label_sets:
            try:
                gauge_or_counter.remove(*labels)
            except KeyError:
                pass
