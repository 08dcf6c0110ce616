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
* :func:`is_abandoned_learner`: the one kind of member that maps to no Machine and is cleaned up;
* :func:`hook_removable`: when a deleting Machine's hook may go.

Three rules have modules of their own, built on these: the maxSurge-0 early removal
(:mod:`controllers.etcdquorum.early_removal`), the leadership hand-off before a removal
(:mod:`controllers.etcdquorum.handoff`) and members of no Machine
(:mod:`controllers.etcdquorum.members_without_machine`).

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
from api.quorum import quorum, quorum_kept_without
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
    it in a ``maxSurge: 0`` rollout or rebalance
    (:func:`~controllers.etcdquorum.early_removal.early_removal_decision`)."""
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


def removal_candidates(
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


def one_at_a_time(chosen: MemberState, others: Iterable[MemberState]) -> tuple[Wait, ...]:
    return tuple(
        Wait(m.machine, WAIT_ONE_CHANGE_PER_PASS, f"member {chosen.label} is removed first")
        for m in others
        if m is not chosen
    )


def quorum_lost_waits(voters: Sequence[MemberState], candidates: Sequence[MemberState]) -> tuple[Wait, ...]:
    healthy = sum(m.healthy for m in voters)
    message = (
        f"etcd has lost quorum ({healthy} healthy of {len(voters)} voters, quorum "
        f"{quorum(len(voters))}; unhealthy: {member_labels([m for m in voters if not m.healthy])}): "
        "no member is removed, restore the unhealthy members or recover etcd from a backup"
    )
    return tuple(Wait(m.machine, WAIT_QUORUM_LOST, message) for m in candidates)


def removal_preference(
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
    candidates = removal_candidates(members, machines)
    if not candidates:
        return Decision()
    learners = [m for m in candidates if m.member.is_learner]
    if learners:
        return Decision(
            member=learners[0],
            why="it is a learner of a deleting Machine: it holds no vote",
            waits=one_at_a_time(learners[0], candidates),
        )
    voters = voters_of(members)
    if quorum_lost(members):
        return Decision(waits=quorum_lost_waits(voters, candidates))
    checks = [(candidate, _removal_check(candidate, voters, desired)) for candidate in candidates]
    allowed = [candidate for candidate, wait in checks if wait is None]
    waits = [wait for _, wait in checks if wait is not None]
    if not allowed:
        return Decision(waits=tuple(waits))
    chosen, *others = removal_preference(allowed, voters, machines)
    healthy_after = sum(m.healthy for m in voters if m is not chosen)
    return Decision(
        member=chosen,
        why=(
            f"{healthy_after} healthy of {len(voters) - 1} voters remain (desired {desired}, "
            f"quorum {quorum(len(voters) - 1)})"
        ),
        waits=(*waits, *one_at_a_time(chosen, others)),
    )


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
