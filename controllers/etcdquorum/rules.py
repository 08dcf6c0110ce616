"""The etcd-quorum-hook rules as pure functions: no I/O, one rule per function, each table-tested.

The reconciler (:mod:`controllers.etcdquorum.reconciler`) reads the Machines and the etcd member
list, turns them into :class:`GuardedMachine` and :class:`MemberState`, and asks these functions
what to do. Keeping the rules free of I/O is what lets a unit test walk every case of the quorum
arithmetic, and lets an SRE read each rule in one place:

Which Machine a member belongs to, where etcd is reached and the quorum arithmetic are the one
model's (:mod:`controllers.etcd.membership`); the rules here take its answers.

* :func:`machine_api_functional` and :func:`hook_action`: where the preDrain hook goes;
* :func:`promotion_decision`: which learner may become a voter now;
* :func:`removal_decision`: which deleting Machine's member may be removed now, or why not;
* :func:`early_removal_decision`: under ``maxSurge: 0``, which marked Machine's healthy voter may
  go before its replacement votes (so that its host can take the replacement);
* :func:`leadership_handoff`: whether leadership moves off that member first, and to whom;
* :func:`is_abandoned_learner`: the one kind of member that maps to no Machine and is cleaned up;
* :func:`hook_removable`: when a deleting Machine's hook may go.

What the ``EtcdClusterHealthy`` condition says is :mod:`controllers.etcdquorum.cluster_health`'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from api.controlplane import REMOVE_MEMBER_FIRST_ANNOTATION, ControlPlaneSpec
from api.failuredomains import machine_domain
from api.machine import marked_for_remediation
from api.quorum import MIN_REPLICAS_FOR_NO_SURGE, quorum, quorum_kept_without
from api.quorum import quorum_lost as _voters_lost_quorum
from controllers.etcd.membership import MemberState

HOOK_NAME: Final = "EtcdQuorumOperator"
"""Name of the preDrain lifecycle hook this controller owns (the name OpenShift's etcd operator uses)."""
HOOK_OWNER: Final = "clusteroperator/etcd"
"""Owner written in the hook by default."""


@dataclass(frozen=True, slots=True)
class Hook:
    """The preDrain lifecycle hook this controller places: its name and the owner it writes.

    Defaults to the name and owner OpenShift's etcd operator uses (:data:`HOOK_NAME`,
    :data:`HOOK_OWNER`); :class:`~controllers.etcdquorum.options.EtcdQuorumOptions` can change both.
    """

    name: str = HOOK_NAME
    owner: str = HOOK_OWNER


DEFAULT_HOOK: Final = Hook()

# Names of the checks a removal or a promotion can wait on: the reason label of
# cpo_etcd_hook_waits, the reason of the wait events, and the word in the condition message.
WAIT_QUORUM_LOST: Final = "QuorumLost"
WAIT_HEALTHY_VOTERS: Final = "HealthyVotersBelowDesired"
WAIT_QUORUM_AFTER_REMOVAL: Final = "QuorumAfterRemoval"
WAIT_ONE_CHANGE_PER_PASS: Final = "OneMemberChangeAtATime"
WAIT_ETCD_UNREACHABLE: Final = "EtcdUnreachable"
WAIT_MEMBER_PRESENT: Final = "MemberStillListed"
WAIT_HOOK_MISSING: Final = "HookMissing"
WAIT_VOTERS_AT_MAXIMUM: Final = "VotersAtMaximum"
WAIT_LEARNER_NOT_IN_SYNC: Final = "LearnerNotInSync"
WAIT_MEMBERS_UNHEALTHY: Final = "MembersUnhealthy"
WAIT_LEARNER_PENDING: Final = "LearnerPending"
WAIT_OTHER_HOOKS: Final = "OtherLifecycleHooks"
WAIT_LEADERSHIP_NOT_MOVED: Final = "LeadershipNotMoved"
WAIT_REASONS: Final = (
    WAIT_QUORUM_LOST,
    WAIT_HEALTHY_VOTERS,
    WAIT_QUORUM_AFTER_REMOVAL,
    WAIT_ONE_CHANGE_PER_PASS,
    WAIT_ETCD_UNREACHABLE,
    WAIT_MEMBER_PRESENT,
    WAIT_HOOK_MISSING,
    WAIT_VOTERS_AT_MAXIMUM,
    WAIT_LEARNER_NOT_IN_SYNC,
    WAIT_MEMBERS_UNHEALTHY,
    WAIT_LEARNER_PENDING,
    WAIT_OTHER_HOOKS,
    WAIT_LEADERSHIP_NOT_MOVED,
)


# ---------------------------------------------------------------------------------------------- inputs


@dataclass(frozen=True, slots=True)
class GuardedMachine:
    """What the rules need of one control-plane Machine."""

    name: str
    deleting: bool = False
    """It has a deletionTimestamp."""
    running: bool = False
    """``status.phase`` is ``Running``."""
    hook_owner: str | None = None
    """Owner of its preDrain hook named as :attr:`hook`'s; None when it has no such hook."""
    hook: Hook = DEFAULT_HOOK
    """The hook the controller places (what :attr:`has_our_hook` compares with)."""
    failure_domain: str | None = None
    remove_member_first: bool = False
    """It carries :data:`~api.controlplane.REMOVE_MEMBER_FIRST_ANNOTATION`: the ControlPlane deleted
    it in a ``maxSurge: 0`` rollout or rebalance (:func:`early_removal_decision`)."""
    other_hooks: tuple[str, ...] = ()
    """Its lifecycle hooks other than :attr:`hook` (``preDrain/<name>``, ``preTerminate/<name>``)."""
    created: str = ""
    """``metadata.creationTimestamp`` (RFC 3339 UTC, so it sorts as time); empty when unknown."""
    remediation_marked: bool = False
    """A MachineHealthCheck marked it for its ControlPlane to replace
    (:func:`api.machine.marked_for_remediation`)."""

    @property
    def has_hook(self) -> bool:
        """It carries a preDrain hook of :attr:`hook`'s name, whoever is written as owner."""
        return self.hook_owner is not None

    @property
    def has_our_hook(self) -> bool:
        """It carries :attr:`hook`: its name with its owner."""
        return self.hook_owner == self.hook.owner

    @property
    def held_by_our_hook(self) -> bool:
        """It is being deleted and carries :attr:`hook`: the controller has its member's removal
        to finish (or to wait for), and a ControlPlane being deleted waits for that before it
        releases its Machines (:func:`hooks_placed_while_deleting`)."""
        return self.deleting and self.has_our_hook


def machine_info(
    machine: Mapping[str, Any], hook: Hook = DEFAULT_HOOK, *, cp_spec: ControlPlaneSpec | None = None
) -> GuardedMachine:
    """Read a Machine (wire dict) into a :class:`GuardedMachine`, its hook being ``hook``'s name.

    Its failure domain is the one reader's (:func:`api.failuredomains.machine_domain`) over the
    ControlPlane's ``cp_spec``; without one, none is read (a reader that needs only the hook)."""
    metadata = machine.get("metadata") or {}
    spec = machine.get("spec") or {}
    status = machine.get("status") or {}
    lifecycle = spec.get("lifecycleHooks") or {}
    hooks = lifecycle.get("preDrain") or []
    owner = next((str(h.get("owner") or "") for h in hooks if h.get("name") == hook.name), None)
    others = [f"preDrain/{h.get('name')}" for h in hooks if h.get("name") != hook.name]
    others += [f"preTerminate/{h.get('name')}" for h in lifecycle.get("preTerminate") or ()]
    return GuardedMachine(
        name=str(metadata.get("name") or ""),
        deleting=bool(metadata.get("deletionTimestamp")),
        running=status.get("phase") == "Running",
        hook_owner=owner,
        hook=hook,
        failure_domain=machine_domain(cp_spec, machine) if cp_spec is not None else None,
        remove_member_first=REMOVE_MEMBER_FIRST_ANNOTATION in (metadata.get("annotations") or {}),
        other_hooks=tuple(others),
        created=str(metadata.get("creationTimestamp") or ""),
        remediation_marked=marked_for_remediation(machine),
    )


# ---------------------------------------------------------------------------------------------- hooks


def machine_api_functional(machines: Sequence[GuardedMachine]) -> bool:
    """The Machine API works when at least one control-plane Machine is ``Running``; before that no
    hook is placed (a cluster still being installed has nothing to protect and nothing to drain)."""
    return any(machine.running for machine in machines)


HookAction = Literal["add", "repair"]


def hook_action(machine: GuardedMachine, api_functional: bool) -> HookAction | None:
    """What the preDrain hook of ``machine`` needs: ``add``, ``repair`` (our name, someone else's
    owner), or None.

    A Machine being deleted never gets the hook, neither added nor rewritten: whoever took it
    off a deleting Machine did so on purpose (the escape hatch).
    """
    if machine.deleting or not api_functional:
        return None
    if machine.hook_owner is None:
        return "add"
    if not machine.has_our_hook:
        return "repair"
    return None


def hooks_placed_while_deleting(machines: Iterable[GuardedMachine]) -> bool:
    """Whether hooks are still placed while the ControlPlane itself is being deleted: only while
    one of its Machines being deleted still carries our hook (name and owner).

    Deleting a ControlPlane releases its Machines and takes our hook off them, because the guard
    needs the ControlPlane (its etcd endpoints, its TLS Secret) and nothing would remove a hook
    left behind. The release first waits for every Machine being deleted with the hook to lose
    its member and then its hook. That removal may itself wait for a replacement to be promoted
    (``HealthyVotersBelowDesired``), and a replacement is promoted only once its Machine carries
    the hook (``HookMissing``): so while such a Machine exists, the replacement under way gets its
    hook as usual and finishes. This is what OpenShift does, where the etcd operator's hook
    controller does not belong to the ControlPlaneMachineSet: deleting the set in the middle of
    a replacement leaves the etcd operator to hook the new Machine, promote its member, remove
    the old one and let the old Machine go. Once no Machine being deleted carries the hook, none
    is placed: the release takes them all off next, and a hook placed after it would never be
    removed. A hook placed from a stale view cannot outlive the release either: every hook write
    carries the Machine's resourceVersion, so it fails if the release patched the Machine first.
    """
    return any(machine.held_by_our_hook for machine in machines)


def hooks_with_ours(hooks: Sequence[Mapping[str, Any]], ours: Hook = DEFAULT_HOOK) -> list[dict[str, Any]]:
    """``hooks`` (a preDrain list) with ``ours`` present and owned by us; every other hook kept as is."""
    kept = [dict(hook) for hook in hooks if hook.get("name") != ours.name]
    return [*kept, {"name": ours.name, "owner": ours.owner}]


def hooks_without_ours(hooks: Sequence[Mapping[str, Any]], ours: Hook = DEFAULT_HOOK) -> list[dict[str, Any]]:
    """``hooks`` without ``ours``; every other hook kept as is."""
    return [dict(hook) for hook in hooks if hook.get("name") != ours.name]


def hook_removable(machine: GuardedMachine, owners: Mapping[int, str | None]) -> bool:
    """The hook of a deleting Machine may go once no member, voter or learner, belongs to it any
    more. ``owners`` (member id → Machine name, :func:`controllers.etcd.membership.map_members`)
    must come from a member list just read from etcd."""
    return machine.deleting and machine.has_hook and machine.name not in owners.values()


# ---------------------------------------------------------------------------------------------- decisions


@dataclass(frozen=True, slots=True)
class Wait:
    """A change that must wait: which Machine, which check, and a sentence saying why."""

    machine: str | None
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Decision:
    """At most one member change for this pass, and the changes that wait."""

    member: MemberState | None = None
    """The member to promote or remove now; None when nothing may change."""
    why: str = ""
    """For an event: why this change is safe."""
    waits: tuple[Wait, ...] = field(default_factory=tuple)


def voters_of(members: Sequence[MemberState]) -> list[MemberState]:
    """The voting members of ``members`` (learners left out)."""
    return [m for m in members if not m.member.is_learner]


def member_labels(members: Sequence[MemberState]) -> str:
    """The members' labels, comma-separated, or ``none``: how messages name members."""
    return ", ".join(m.label for m in members) or "none"


def quorum_lost(members: Sequence[MemberState]) -> bool:
    """Fewer healthy voters than a quorum of the voters: etcd cannot commit; change nothing."""
    return _voters_lost_quorum({m.member.id: m.healthy for m in voters_of(members)})


def promotion_decision(
    members: Sequence[MemberState], machines: Mapping[str, GuardedMachine], desired: int
) -> Decision:
    """Which learner to promote now, if any (one per pass: never two promotions at once).

    A learner is promoted only when its Machine carries our hook (so its member cannot be drained
    away without this controller's say), is not being deleted, and the member has started; never
    when the cluster has lost quorum, never while a voter or the learner itself fails its health
    read (``MembersUnhealthy``), and never when one more voter would exceed the desired count + 1
    (room for exactly one replacement at a time). etcd itself then refuses a learner that has
    not caught up (the reconciler retries with a backoff). Learners are taken in name order.

    The health rule is the anchor's: OpenShift's etcd operator
    (``clustermembercontroller.ClusterMemberController.reconcileMembers``) returns before
    ``ensureEtcdLearnerPromotion`` whenever ``etcdClient.UnhealthyMembers`` lists any member.
    Promoting beside a dead voter makes a quorum that needs the new member: 3 voters with 2
    healthy (both needed) become 4 with 3 healthy (all three needed), so a new member that fails
    right after its promotion takes etcd down; etcd's own check counts started members, not
    healthy ones. The dead voter goes first, then the learner votes in a cluster that does not
    need it. Unlike the anchor, an unhealthy *other* learner holds nothing: it has no vote.
    """
    learners = sorted((m for m in members if m.member.is_learner), key=lambda m: m.label)
    if not learners:
        return Decision()
    if quorum_lost(members):
        return Decision(waits=(Wait(None, WAIT_QUORUM_LOST, "etcd has lost quorum: no promotion"),))
    voters = len(voters_of(members))
    unhealthy_voters = [m for m in voters_of(members) if not m.healthy]
    waits: list[Wait] = []
    for learner in learners:
        machine = machines.get(learner.machine) if learner.machine else None
        if machine is None or machine.deleting or not learner.member.started:
            continue  # unmapped, going away, or not started: reported elsewhere, never promoted
        if not machine.has_our_hook:
            waits.append(
                Wait(machine.name, WAIT_HOOK_MISSING, f"learner {learner.label} waits for its Machine's hook")
            )
            continue
        if unhealthy_voters or not learner.healthy:
            why = (
                f"unhealthy voters: {member_labels(unhealthy_voters)}; a promotion now would make a quorum "
                "that needs the new member"
                if unhealthy_voters
                else f"the learner fails its health read ({learner.error or 'no answer'})"
            )
            waits.append(Wait(machine.name, WAIT_MEMBERS_UNHEALTHY, f"learner {learner.label} waits: {why}"))
            continue
        if voters + 1 > desired + 1:
            waits.append(
                Wait(
                    machine.name,
                    WAIT_VOTERS_AT_MAXIMUM,
                    f"promoting learner {learner.label} would make {voters + 1} voters, more than "
                    f"{desired} desired + 1",
                )
            )
            continue
        return Decision(
            member=learner,
            why=(
                f"its Machine {machine.name} carries the {machine.hook.name} hook; "
                f"voters {voters} → {voters + 1}"
            ),
            waits=tuple(waits),
        )
    return Decision(waits=tuple(waits))


def _removal_check(candidate: MemberState, voters: Sequence[MemberState], desired: int) -> Wait | None:
    """Why removing voter ``candidate`` must wait, or None when it keeps the cluster safe."""
    healthy_after = sum(m.healthy for m in voters if m is not candidate)
    remaining = len(voters) - 1
    unhealthy_others = [m for m in voters if m is not candidate and not m.healthy]
    also = f"; unhealthy voters: {member_labels(unhealthy_others)}" if unhealthy_others else ""
    if not quorum_kept_without({m.member.id: m.healthy for m in voters}, candidate.member.id):
        return Wait(
            candidate.machine,
            WAIT_QUORUM_AFTER_REMOVAL,
            f"removing member {candidate.label} would leave {healthy_after} healthy of {remaining} "
            f"voters, less than their quorum of {quorum(remaining)}{also}",
        )
    if candidate.healthy and healthy_after < desired:
        return Wait(
            candidate.machine,
            WAIT_HEALTHY_VOTERS,
            f"removing member {candidate.label} would leave {healthy_after} healthy voters, fewer "
            f"than the {desired} desired: waiting for a replacement to be promoted{also}",
        )
    if candidate.healthy and unhealthy_others:
        return Wait(
            candidate.machine,
            WAIT_MEMBERS_UNHEALTHY,
            f"healthy member {candidate.label} stays while voters are unhealthy: "
            f"{member_labels(unhealthy_others)}; restore them, or delete their Machines "
            "(their members go first)",
        )
    return None


def _removal_candidates(
    members: Sequence[MemberState], machines: Mapping[str, GuardedMachine]
) -> list[MemberState]:
    """Members of Machines being deleted that carry the hook, by label (without the hook, a human
    took over: see :func:`hook_action`)."""
    return sorted(
        (
            m
            for m in members
            if m.machine is not None
            and m.machine in machines
            and machines[m.machine].deleting
            and machines[m.machine].has_hook
        ),
        key=lambda m: m.label,
    )


def _one_at_a_time(chosen: MemberState, others: Iterable[MemberState]) -> tuple[Wait, ...]:
    return tuple(
        Wait(m.machine, WAIT_ONE_CHANGE_PER_PASS, f"member {chosen.label} is removed first")
        for m in others
        if m is not chosen
    )


def _quorum_lost_waits(voters: Sequence[MemberState], candidates: Sequence[MemberState]) -> tuple[Wait, ...]:
    healthy = sum(m.healthy for m in voters)
    message = (
        f"etcd has lost quorum ({healthy} healthy of {len(voters)} voters, quorum "
        f"{quorum(len(voters))}; unhealthy: {member_labels([m for m in voters if not m.healthy])}): "
        "no member is removed, restore the unhealthy members or recover etcd from a backup"
    )
    return tuple(Wait(m.machine, WAIT_QUORUM_LOST, message) for m in candidates)


def _removal_preference(
    allowed: Sequence[MemberState], voters: Sequence[MemberState], machines: Mapping[str, GuardedMachine]
) -> list[MemberState]:
    """``allowed`` in the order they go: one whose failure domain keeps another voter, then by
    label. (An unhealthy voter always goes before a healthy one: a healthy one is not allowed
    while another voter is unhealthy.)"""
    domains = Counter(
        machines[m.machine].failure_domain for m in voters if m.machine is not None and m.machine in machines
    )

    def preference(m: MemberState) -> tuple[bool, str]:
        domain = machines[m.machine].failure_domain if m.machine else None
        return (not (domain is not None and domains[domain] > 1), m.label)

    return sorted(allowed, key=preference)


def removal_decision(
    members: Sequence[MemberState], machines: Mapping[str, GuardedMachine], desired: int
) -> Decision:
    """Which member of a deleting Machine to remove now, or why each one waits.

    Only members of Machines that are being deleted *and* carry the hook are candidates (without
    the hook, a human took over: see :func:`hook_action`). Then, one member per pass:

    1. a **learner** is removed at once: it holds no vote;
    2. nothing else while the cluster has **lost quorum** (it cannot commit a change anyway);
    3. a **healthy voter** only when the voters left keep at least the desired number of healthy
       voters (so a replacement must have been promoted first) and a quorum of themselves, and
       no other voter is unhealthy (``MembersUnhealthy``);
    4. an **unhealthy voter** when the healthy voters left still hold a quorum of the voters left
       (removing a dead member only lowers the quorum it was failing to help with).

    Rule 3's health clause is the anchor's: OpenShift's etcd operator
    (``clustermemberremovalcontroller.attemptToScaleDown``) refuses to scale down while
    ``UnhealthyMembers`` lists a member and none of them is a voter of a Machine pending deletion,
    and removes an unhealthy one of those first. Removing a healthy voter beside a dead one costs
    a failure etcd would survive: 5 voters with one dead survive one more failure, 4 with one
    dead survive none. So the dead member leaves first (its Machine deleted by a human or by its
    remediation), or comes back. Unlike the anchor, an unhealthy learner holds nothing.

    Several allowed: first the one whose failure domain hosts another voter too, then by name.
    The others wait with reason ``OneMemberChangeAtATime``.
    """
    candidates = _removal_candidates(members, machines)
    if not candidates:
        return Decision()
    learners = [m for m in candidates if m.member.is_learner]
    if learners:
        return Decision(
            member=learners[0],
            why="it is a learner of a deleting Machine: it holds no vote",
            waits=_one_at_a_time(learners[0], candidates),
        )
    voters = voters_of(members)
    if quorum_lost(members):
        return Decision(waits=_quorum_lost_waits(voters, candidates))
    checks = [(candidate, _removal_check(candidate, voters, desired)) for candidate in candidates]
    allowed = [candidate for candidate, wait in checks if wait is None]
    waits = [wait for _, wait in checks if wait is not None]
    if not allowed:
        return Decision(waits=tuple(waits))
    chosen, *others = _removal_preference(allowed, voters, machines)
    healthy_after = sum(m.healthy for m in voters if m is not chosen)
    return Decision(
        member=chosen,
        why=(
            f"{healthy_after} healthy of {len(voters) - 1} voters remain (desired {desired}, "
            f"quorum {quorum(len(voters) - 1)})"
        ),
        waits=(*waits, *_one_at_a_time(chosen, others)),
    )


# ---------------------------------------------------------------------------------------------- maxSurge 0


def removes_member_first(spec: ControlPlaneSpec) -> bool:
    """Whether the ControlPlane's rollouts delete first (``RollingUpdate`` with ``maxSurge: 0`` and
    at least :data:`~api.quorum.MIN_REPLICAS_FOR_NO_SURGE` replicas; smaller ones always surge):
    only then may a marked Machine's member go before its replacement votes."""
    rolling = spec.strategy.rolling_update
    return (
        spec.strategy.type == "RollingUpdate"
        and rolling is not None
        and rolling.max_surge == 0
        and spec.replicas >= MIN_REPLICAS_FOR_NO_SURGE
    )


def early_removal_decision(
    members: Sequence[MemberState],
    machines: Mapping[str, GuardedMachine],
    desired: int,
    *,
    surge_zero: bool,
) -> Decision:
    """Which healthy voter of a Machine the ControlPlane deleted in a ``maxSurge: 0`` rollout or
    rebalance may be removed *before* its replacement votes, or why it waits.

    ``maxSurge: 0`` exists for clusters with exactly as many hosts as replicas (bare metal). The
    ControlPlane deletes the old Machine first, but while this controller's hook keeps its member
    (until the replacement is a voter: :func:`removal_decision`) the old instance keeps its host,
    the replacement never provisions, and the rollout deadlocks. KCP lets the old member go first
    when the rest of etcd is healthy: its pre-terminate hook removes the member once
    ``targetEtcdClusterHealthy`` holds, forwarding leadership first. Here the same, for deletions
    the ControlPlane marked (:data:`~api.controlplane.REMOVE_MEMBER_FIRST_ANNOTATION`) only; a
    user's or a health check's deletion keeps the add-then-remove order of :func:`removal_decision`.
    The member goes when all of these hold:

    * the ControlPlane still deletes first (``surge_zero``: :func:`removes_member_first`);
    * its Machine is being deleted, carries the hook and the mark, and the member is a healthy
      voter (a learner or a dead voter is :func:`removal_decision`'s);
    * the voters are exactly ``desired`` and no learner is pending: the cluster is whole, and no
      other replacement is under way;
    * no other marked Machine's member is already gone early (its Machine still exists): one
      early removal at a time;
    * every other voter is healthy, and the quorum holds without the member (the reconciler
      decides this again from a health read made right before the removal, not this pass's);
    * our hook is the only lifecycle hook left on the Machine: another hook still holds the
      instance, so removing the member would free no host and only cost a voter.

    The arithmetic: with ``desired`` = n healthy voters, removing one leaves n - 1, all healthy,
    with quorum ⌊(n - 1)/2⌋ + 1 ≤ n - 1 for n ≥ 2; voters never go below ``desired`` - 1, and the
    cluster then survives ⌊(n - 2)/2⌋ failures instead of ⌊(n - 1)/2⌋: one voter of fault
    tolerance is the price of each replacement (for 3 replicas, none is left until the
    replacement votes). That is what the API field's documentation states.
    """
    candidates = [
        m
        for m in _removal_candidates(members, machines)
        if m.voter and m.healthy and m.machine is not None and machines[m.machine].remove_member_first
    ]
    if not candidates or not surge_zero:
        return Decision()
    voters = voters_of(members)
    if quorum_lost(members):
        return Decision(waits=_quorum_lost_waits(voters, candidates))
    with_member = {m.machine for m in members if m.machine is not None}
    gone_early = sorted(
        name
        for name, machine in machines.items()
        if machine.deleting and machine.remove_member_first and name not in with_member
    )
    learners = [m for m in members if m.member.is_learner]
    unhealthy = [m for m in voters if not m.healthy]
    waits: list[Wait] = []
    allowed: list[MemberState] = []
    for candidate in candidates:
        machine = machines[candidate.machine or ""]
        label = candidate.label
        if len(voters) != desired:
            why = f"{len(voters)} voters, not the {desired} desired: an early removal needs the cluster whole"
            waits.append(Wait(machine.name, WAIT_HEALTHY_VOTERS, f"member {label} stays: {why}"))
        elif learners:
            waits.append(
                Wait(
                    machine.name,
                    WAIT_LEARNER_PENDING,
                    f"member {label} stays: learner {member_labels(learners)} is not a voter yet",
                )
            )
        elif gone_early:
            waits.append(
                Wait(
                    machine.name,
                    WAIT_ONE_CHANGE_PER_PASS,
                    f"member {label} stays: the member of {', '.join(gone_early)} went early, and its "
                    "replacement does not vote yet",
                )
            )
        elif unhealthy:
            waits.append(
                Wait(
                    machine.name,
                    WAIT_MEMBERS_UNHEALTHY,
                    f"member {label} stays until its replacement votes: unhealthy voters "
                    f"{member_labels(unhealthy)}",
                )
            )
        elif not quorum_kept_without({m.member.id: m.healthy for m in voters}, candidate.member.id):
            waits.append(
                Wait(
                    machine.name,
                    WAIT_QUORUM_AFTER_REMOVAL,
                    f"removing member {label} early would leave fewer healthy voters than their quorum",
                )
            )
        elif machine.other_hooks:
            waits.append(
                Wait(
                    machine.name,
                    WAIT_OTHER_HOOKS,
                    f"member {label} stays until its replacement votes: lifecycle hooks "
                    f"{', '.join(machine.other_hooks)} still hold the Machine, so removing it frees no host",
                )
            )
        else:
            allowed.append(candidate)
    if not allowed:
        return Decision(waits=tuple(waits))
    chosen, *others = _removal_preference(allowed, voters, machines)
    return Decision(
        member=chosen,
        why=(
            f"maxSurge 0: its Machine was deleted by the ControlPlane to free its host; "
            f"{len(voters) - 1} healthy of {len(voters) - 1} voters remain (desired {desired}, quorum "
            f"{quorum(len(voters) - 1)}) until the replacement votes"
        ),
        waits=(*waits, *_one_at_a_time(chosen, others)),
    )


MAX_HANDOFF_ATTEMPTS: Final = 3
"""Passes in a row a removal waits for leadership to move off its member before it goes on
without (one election), so that a hand-off etcd keeps refusing never holds a Machine for ever."""


@dataclass(frozen=True, slots=True)
class HandOff:
    """What happens to etcd leadership before a member is removed (:func:`leadership_handoff`)."""

    target: MemberState | None = None
    """Move leadership to this voter first; None: remove the member as it is."""
    wait: str | None = None
    """When set, the removal waits this pass (``LeadershipNotMoved``) and this says why."""
    why: str = ""
    """What was decided, for the log and the ``MemberRemoved`` event."""


def leadership_handoff(
    leaving: MemberState,
    leader: int,
    members: Sequence[MemberState],
    machines: Mapping[str, GuardedMachine],
    *,
    failed_attempts: int = 0,
) -> HandOff:
    """Whether leadership must move off ``leaving`` before it is removed, and to which voter.

    ``leader`` is the leader's member id as an endpoint status read just now reports it (0: no
    member named one). Removing the leading member costs the cluster an election: no leader, so
    no write, for about an election timeout. So when ``leaving`` leads, leadership goes first to
    a voter that answers its health read, whose Machine exists, is not being deleted (it would
    be next to go) and is not marked for remediation (:attr:`GuardedMachine.remediation_marked`:
    its replacement is coming); the oldest such Machine, then by name, because etcd refuses
    membership changes until its leader has been connected to a quorum for 5 seconds, so a
    leader that joined a moment ago would hold up the very removal it was moved for.

    No move is needed, and the removal goes on, when ``leaving`` is a learner (it never leads),
    when another member leads, or when ``leaving`` leads but fails its health read (it cannot
    hand leadership on; an election follows either way). When ``leaving`` leads and no voter
    qualifies, the removal goes on too: removal_decision has already found the voters left
    enough for a quorum, and an election is what a removal without a hand-off costs.

    The removal waits (``LeadershipNotMoved``) only when the leader cannot be told (no member
    reports one: an election is under way) or a hand-off was tried and failed
    (``failed_attempts`` passes in a row); after :data:`MAX_HANDOFF_ATTEMPTS` such passes it goes
    on without, so a hand-off etcd keeps refusing costs an election, never a stuck Machine.

    This follows cluster-api's KubeadmControlPlane, whose pre-terminate hook forwards leadership
    off a deleting Machine's member right before removing it, whoever deleted the Machine; it
    skips the hand-off when no Machine without a deletion timestamp is left, and a failed move
    returns an error, so the removal is retried on its next reconcile. Unlike it, the target is
    the oldest qualifying voter, not the newest, healthy and not marked for remediation, and a
    refusal that persists gives way after a bound.
    """
    if leaving.member.is_learner:
        return HandOff(why="a learner never leads")
    if leader != 0 and leader != leaving.member.id:
        return HandOff(why="it does not lead")
    gave_up = failed_attempts >= MAX_HANDOFF_ATTEMPTS
    if leader == 0:
        if gave_up:
            return HandOff(why=f"no member reported a leader in {failed_attempts} passes: removed as is")
        return HandOff(wait=f"no member reports a leader: member {leaving.label} waits for one")
    if not leaving.healthy or not leaving.endpoint:
        return HandOff(why="it leads but fails its health read: it cannot hand leadership on")
    if gave_up:
        return HandOff(
            why=f"leadership could not be moved off it in {failed_attempts} passes: removed as is "
            "(an election)"
        )
    candidates = sorted(
        (
            m
            for m in voters_of(members)
            if m is not leaving
            and m.healthy
            and m.machine is not None
            and m.machine in machines
            and not machines[m.machine].deleting
            and not machines[m.machine].remediation_marked
        ),
        key=lambda m: (machines[m.machine or ""].created or "~", m.machine or ""),
    )
    if not candidates:
        return HandOff(
            why="it leads and no healthy voter of a Machine that stays is left to lead: removed as is "
            "(an election)"
        )
    target = candidates[0]
    return HandOff(target=target, why=f"leadership handed to {target.label} first")


def is_abandoned_learner(member: MemberState, first_seen: float, now: float, grace: float) -> bool:
    """A learner that was added but never started (it has no name), belongs to no Machine, and has
    been seen so for ``grace`` seconds: a provider crashed between its member add and the start.
    It blocks further joins (etcd allows one learner before 3.6) and holds no data: remove it.
    Every other member that belongs to no Machine is only reported."""
    return (
        member.member.is_learner
        and not member.member.started
        and member.machine is None
        and now - first_seen >= grace
    )
