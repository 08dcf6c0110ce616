"""Horizontal scaling of the ControlPlane: the next step toward ``replicas`` Machines (a create or
delete starts only once :func:`~controllers.controlplane.preflight.preflight` passes).

One Machine at a time, never more than replicas + 1 Machines: every create or delete changes
etcd's membership by at most one member, and is decided again from fresh facts after it.
Once the count is right, :mod:`~controllers.controlplane.rollout` decides what is replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from api.controlplane import ControlPlaneSpec
from api.controlplane_reasons import (
    REASON_HELD_BY_CONFIGURATION,
    REASON_REMEDIATING,
    REASON_REMOVING_MEMBER,
    REASON_REPLACING_DELETED,
    REASON_REPLACING_OUTDATED,
    REASON_SCALING_DOWN,
    REASON_SCALING_UP,
    REASON_WAITING_FOR_DELETION,
    REASON_WAITING_FOR_LEARNER,
)
from api.failuredomains import domain_names
from controllers.controlplane.machines import MachineInfo
from controllers.controlplane.placement import choose_failure_domain, select_for_scale_in
from controllers.controlplane.rollout import rollout_step
from controllers.controlplane.step import Step, in_domain, replacing

# ---------------------------------------------------------------------------------------------- next step


def planned_step(
    spec: ControlPlaneSpec, machines: Sequence[MachineInfo], misconfigured: Sequence[str]
) -> Step:
    """The :func:`~controllers.controlplane.scale.next_step` for ``spec`` and these Machines: the
    step an Active ControlPlane takes next, and the one an Inactive ControlPlane reports it would."""
    rolling = spec.strategy.rolling_update
    return next_step(
        replicas=spec.replicas,
        strategy=spec.strategy.type,
        max_surge=rolling.max_surge if rolling else 1,
        domains=domain_names(spec),
        machines=machines,
        misconfigured=misconfigured,
    )


def next_step(
    *,
    replicas: int,
    strategy: Literal["RollingUpdate", "OnDelete"],
    max_surge: int,
    domains: Sequence[str],
    machines: Sequence[MachineInfo],
    misconfigured: Sequence[str] = (),
) -> Step:
    """The one next step toward ``replicas`` up-to-date, evenly spread Machines.

    One Machine at a time, never more than replicas + 1 Machines (deleting ones included):

    1. fewer non-deleting Machines than ``replicas``: :func:`scale_up_step`;
    2. a Machine is being deleted: :func:`wait_for_deletion_step` (one replacement at a time),
       unless an outdated replacement that never voted holds it (:func:`stalled_replacement_step`);
    3. more than ``replicas``: :func:`scale_down_step` (after a maxSurge-1 replacement this is
       the outdated one);
    4. exactly ``replicas``: :func:`~controllers.controlplane.rollout.rollout_step` replaces an
       outdated Machine or rebalances the failure domains.

    ``misconfigured`` names what makes the ControlPlane Degraded by its configuration: Machines
    its selector matches that another controller owns, control-plane Nodes without a Machine.
    While there is any, steps 3 and 4 are held (:func:`held_by_configuration_step`), as CPMS
    stops acting while its cluster state does not validate: those Machines and Nodes may be
    etcd members the ControlPlane cannot count, so removing a member could cost a quorum it
    does not see. Scale-up still goes on (a member more never lowers the quorum margin), and so
    does remediation. Unready Machines hold nothing here: Degraded by them
    (:func:`~controllers.controlplane.status.degraded_condition`), a rollout may still replace
    them (the preflight decides whether a step is safe now).
    """
    active = [m for m in machines if not m.deleting]
    deleting = sorted((m for m in machines if m.deleting), key=lambda m: m.name)
    if len(active) < replicas:
        return scale_up_step(replicas, domains, active, deleting)
    if deleting:
        return stalled_replacement_step(active, deleting) or wait_for_deletion_step(deleting, active)
    if len(active) > replicas:
        return held_by_configuration_step(misconfigured, scale_down_step(replicas, active))
    step = rollout_step(
        replicas=replicas, strategy=strategy, max_surge=max_surge, domains=domains, active=active
    )
    if step.action in ("create", "delete"):
        return held_by_configuration_step(misconfigured, step)
    return step


def held_by_configuration_step(misconfigured: Sequence[str], held: Step) -> Step:
    """``held``, or a wait while the ControlPlane is Degraded by its configuration (see
    :func:`next_step`): reason ``HeldByConfiguration``, naming what is misconfigured and the step
    held. Waits again after the wait period, so the step resumes once the problem is fixed,
    without a restart or an edit of the ControlPlane."""
    if not misconfigured:
        return held
    return Step(
        "wait",
        REASON_HELD_BY_CONFIGURATION,
        "Held until the configuration problem is fixed (see Degraded): "
        + ", ".join(sorted(misconfigured))
        + f"; then: {held.message}",
        needs_preflight=False,
    )


def scale_up_step(
    replicas: int, domains: Sequence[str], active: Sequence[MachineInfo], deleting: Sequence[MachineInfo]
) -> Step:
    """Create one Machine, unless replicas + 1 Machines exist already (then wait for a deletion).

    If a Machine is being deleted (a user's delete, a rollout's or rebalance's under maxSurge 0,
    a remediation's) the new one is its replacement: it goes to the emptiest configured domain
    counting only the non-deleting Machines, the deleting one's domain on a tie
    (:func:`~controllers.controlplane.placement.choose_failure_domain`). Putting it back in the
    deleting Machine's domain merely because that is configured would undo a rebalance under
    maxSurge 0 (delete from the crowded domain, recreate there) for ever. A create only happens
    below ``replicas`` non-deleting Machines, so there are never more than ``replicas`` of them;
    the old one may stay, held by the etcd-quorum hook until its replacement votes. Safe because
    the cap of replicas + 1 keeps at most one member being added while one may still be leaving,
    and the create waits for the preflight.
    """
    if len(active) + len(deleting) >= replicas + 1:
        names = ", ".join(m.name for m in deleting)
        return Step(
            "wait",
            REASON_WAITING_FOR_DELETION,
            f"Waiting for Machine(s) {names} to be deleted before creating more (at most "
            f"{replicas + 1} Machines)",
        )
    domain = choose_failure_domain(domains, active, prefer=[m.failure_domain for m in deleting])
    if deleting:
        return replacement_step(deleting[0], domain)
    return Step(
        "create",
        REASON_SCALING_UP,
        f"Scaling up from {len(active)} to {replicas} replica(s): creating a Machine"
        + in_domain(domain, " in "),
        domain=domain,
        toward_replicas=True,
    )


def stalled_replacement_step(active: Sequence[MachineInfo], deleting: Sequence[MachineInfo]) -> Step | None:
    """Delete an outdated Machine that never became a voter while a held deletion waits for it,
    or None.

    Under maxSurge 0 the old Machine is deleted first, and the etcd-quorum hook holds it while
    its member is a healthy voter, until a replacement votes. If that replacement never gets
    there (a faulty template: no member, or one never promoted) and the user puts the previous
    template back, the replacement is outdated and the held deletion would wait for it for ever
    (KCP and CPMS replace the failing replacement first, as the maxSurge-1 path does through the
    scale-in order). Removing a Machine whose member does not vote leaves the voters as they
    are, so it is safe beside the membership change in flight; its preflight does not hold its
    own state against it, and the scale-up rule then creates an up-to-date replacement. An
    up-to-date replacement that fails is left to remediation: the same template would fail the
    same way. The newest such Machine goes first.
    """
    if not all(m.etcd_voter and m.etcd_healthy for m in deleting):
        return None
    stalled = [m for m in active if m.outdated and not m.etcd_voter and not m.ready]
    if not stalled:
        return None
    victim = max(stalled, key=lambda m: (m.created, m.name))
    held = ", ".join(m.name for m in deleting)
    return Step(
        "delete",
        REASON_REPLACING_OUTDATED,
        f"Replacing outdated Machine {victim.name}: deleting it, since it never became an etcd voter "
        f"and the deletion of {held} waits for a replacement that votes",
        machine=victim.name,
    )


def replacement_step(gone: MachineInfo, domain: str | None) -> Step:
    """Create the replacement of ``gone``, a Machine being deleted, in ``domain``; the reason says
    why it goes: ``ReplacingOutdated`` (a maxSurge-0 rollout), ``Remediating`` (the health check
    marked it), else ``ReplacingDeleted`` (someone deleted it)."""
    if gone.outdated:
        reason, kind = REASON_REPLACING_OUTDATED, "outdated"
    elif gone.marked_unhealthy:
        reason, kind = REASON_REMEDIATING, "unhealthy"
    else:
        reason, kind = REASON_REPLACING_DELETED, "deleted"
    return Step(
        "create",
        reason,
        replacing(kind, gone.name, gone.failure_domain, domain, "creating its replacement"),
        domain=domain,
        toward_replicas=True,
    )


def wait_for_deletion_step(deleting: Sequence[MachineInfo], active: Sequence[MachineInfo] = ()) -> Step:
    """Wait while any Machine is being deleted (with at least ``replicas`` others).

    A deletion in flight is a membership change in flight (the etcd-quorum hook removes the
    member before the Machine goes): starting another one now could take two members at once.
    The reason says what the deletion waits for: ``WaitingForLearner`` (a new member, named, is
    a learner not yet promoted: the hook keeps a healthy old member until it votes; a dead one, or
    a maxSurge-0 deletion's, may be gone already, and the message says which),
    ``RemovingMember`` (the deleting Machine still has its member), else ``WaitingForDeletion``
    (the member is gone; the Machine's drain and the provider remain).
    """
    names = ", ".join(m.name for m in deleting)
    learners = sorted(m.name for m in active if m.etcd_learner)
    holding = ", ".join(m.name for m in deleting if m.has_etcd_member)
    if learners:
        after = f"{holding} is removed once it votes" if holding else f"{names} is already removed"
        message = (
            f"Machine(s) {', '.join(learners)}: etcd learner not promoted yet; the member of Machine(s) "
        )
        message += after
        return Step("wait", REASON_WAITING_FOR_LEARNER, message, needs_preflight=False)
    if holding:
        message = (
            f"Machine(s) {names} being deleted: waiting for the removal of its etcd member "
            "(the etcd-quorum hook holds the deletion until it is safe)"
        )
        return Step("wait", REASON_REMOVING_MEMBER, message, needs_preflight=False)
    message = f"Waiting for Machine(s) {names} to be deleted"
    return Step("wait", REASON_WAITING_FOR_DELETION, message, needs_preflight=False)


def scale_down_step(replicas: int, active: Sequence[MachineInfo]) -> Step:
    """Delete the :func:`~controllers.controlplane.placement.select_for_scale_in` Machine.

    Only reached with nothing being deleted, so one member leaves at a time, and only after
    the preflight found every voter healthy.
    """
    victim = select_for_scale_in(active)
    assert victim is not None
    if victim.outdated:
        action = f"deleting it ({len(active)} Machines for {replicas} replica(s): its replacement is in)"
        return Step(
            "delete",
            REASON_REPLACING_OUTDATED,
            replacing("outdated", victim.name, victim.failure_domain, None, action),
            machine=victim.name,
        )
    return Step(
        "delete",
        REASON_SCALING_DOWN,
        f"Scaling down from {len(active)} to {replicas} replica(s): deleting Machine {victim.name}"
        + in_domain(victim.failure_domain, " in "),
        machine=victim.name,
    )
