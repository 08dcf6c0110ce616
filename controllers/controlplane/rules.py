"""The ControlPlane controller's decisions, each one a pure function with its rule in the docstring.

Nothing here reads the API server or etcd: the reconciler gathers the facts (Machines, Nodes, the
etcd member list) into plain values, asks these functions what to do, and does it. That keeps
every rule testable with a table of cases, and findable by name:

=====================================  =========================================================
:func:`classify_machines`              which Machines are owned, to adopt, owned by others
:func:`desired_machine`                the Machine a template + failure domain produce
:func:`template_hash`                  the spec hash of that Machine
:func:`is_outdated`                    whether a Machine must be replaced
:func:`choose_failure_domain`          where a new Machine goes
:func:`select_for_scale_in`            which Machine goes when there is one too many
:func:`preflight`                      whether a create/delete may start (failed checks)
:func:`next_step`                      create, delete or wait, and why
:func:`remediation_decision`           whether an unhealthy Machine may be remediated now
:func:`compute_status`                 replicas, phase and conditions
=====================================  =========================================================
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, Literal

from api.controlplane import (
    CONDITION_AVAILABLE,
    CONDITION_DEGRADED,
    CONDITION_MACHINES_READY,
    CONDITION_PROGRESSING,
    CONDITION_REMEDIATING,
    ControlPlaneSpec,
    Phase,
)
from api.meta import parse_duration
from api.selector import selector_matches
from controllers.common import controller_owner, parse_time
from runtime.jsoncodec import JSON

SPEC_HASH_ANNOTATION: Final = "controlplane.cpo.dev/spec-hash"
"""On each Machine the controller creates: :func:`template_hash` of what it was created from."""
FAILURE_DOMAIN_LABEL: Final = "controlplane.cpo.dev/failure-domain"
"""On each Machine the controller creates: the name of its failure domain."""
DELETE_MACHINE_ANNOTATION: Final = "machine.openshift.io/delete-machine"
"""A user's (or autoscaler's) request: remove this Machine first on scale-in."""

# Preflight check names (also the ``check`` label of cpo_controlplane_preflight_failures_total).
CHECK_MACHINES_READY: Final = "MachineNodesReady"
CHECK_ETCD_REACHABLE: Final = "EtcdReachable"
CHECK_ETCD_MEMBERS_MATCH: Final = "EtcdMembersMatchMachines"
CHECK_ETCD_MEMBER_LISTS_AGREE: Final = "EtcdMemberListsAgree"
CHECK_ETCD_NO_ALARMS: Final = "EtcdNoAlarms"
CHECK_ETCD_VOTERS_REACHABLE: Final = "EtcdVotersHealthy"
CHECK_ETCD_NO_PENDING_LEARNER: Final = "EtcdNoPendingLearner"
PREFLIGHT_CHECKS: Final = (
    CHECK_MACHINES_READY,
    CHECK_ETCD_REACHABLE,
    CHECK_ETCD_MEMBERS_MATCH,
    CHECK_ETCD_MEMBER_LISTS_AGREE,
    CHECK_ETCD_NO_ALARMS,
    CHECK_ETCD_VOTERS_REACHABLE,
    CHECK_ETCD_NO_PENDING_LEARNER,
)


# ---------------------------------------------------------------------------------------------- facts


@dataclass(frozen=True)
class MachineInfo:
    """What the decisions need to know about one owned Machine (gathered by the reconciler)."""

    name: str
    created: datetime
    failure_domain: str | None = None
    outdated: bool = False
    deleting: bool = False
    delete_annotation: bool = False
    """Carries ``machine.openshift.io/delete-machine``."""
    phase: str | None = None
    node_ready: bool = False
    """Its Node exists and is Ready."""
    marked_unhealthy: bool = False
    """The MachineHealthCheck marked it for remediation (``HealthCheckSucceeded=False``)."""
    etcd_voter: bool = False
    """Its etcd member is a voter."""
    etcd_healthy: bool = False
    """Its etcd member answered a health read."""
    etcd_learner: bool = False
    """Its etcd member is a learner."""

    @property
    def running(self) -> bool:
        return self.phase == "Running"

    @property
    def failed(self) -> bool:
        return self.phase == "Failed"

    @property
    def ready(self) -> bool:
        """Running with a Ready Node."""
        return self.running and self.node_ready

    @property
    def available(self) -> bool:
        """Not being deleted, ready, and its etcd member is a healthy voter."""
        return not self.deleting and self.ready and self.etcd_voter and self.etcd_healthy

    @property
    def unhealthy(self) -> bool:
        """Marked by the health check, Failed, or its Node is not Ready once Running."""
        return self.marked_unhealthy or self.failed or (self.running and not self.node_ready)

    @property
    def has_etcd_member(self) -> bool:
        return self.etcd_voter or self.etcd_learner

    @property
    def in_transition(self) -> bool:
        """Being deleted, or being created (not yet Running with a Ready Node, and not unhealthy):
        not healthy to a MachineHealthCheck, yet no failure either."""
        return self.deleting or not (self.ready or self.unhealthy)


# ---------------------------------------------------------------------------------------------- ownership


@dataclass(frozen=True)
class Ownership:
    """The selector's Machines, split by who controls them."""

    owned: list[JSON] = field(default_factory=list)
    adoptable: list[JSON] = field(default_factory=list)
    owned_by_others: list[JSON] = field(default_factory=list)


def classify_machines(
    uid: str, selector: Mapping[str, Any], machines: Iterable[Mapping[str, Any]]
) -> Ownership:
    """Split Machines into owned, adoptable and owned by another controller.

    * **owned**: the controller ownerReference is this ControlPlane (by uid), whatever the labels
      say now (a Machine whose labels were edited stays ours until released);
    * **adoptable**: matches ``spec.selector``, has no controller owner and is not being deleted
      (adopting a dying Machine would only make us replace it);
    * **owned by others**: matches the selector but another controller owns it: left alone and
      reported (``Degraded``, reason ``MachinesAlreadyOwned``).
    """
    result = Ownership()
    for machine in machines:
        metadata = machine.get("metadata") or {}
        owner = controller_owner(machine)
        if owner is not None and owner.get("uid") == uid:
            result.owned.append(dict(machine))
            continue
        if not selector_matches(selector, metadata.get("labels")):
            continue
        if owner is not None:
            result.owned_by_others.append(dict(machine))
        elif not metadata.get("deletionTimestamp"):
            result.adoptable.append(dict(machine))
    return result


# ---------------------------------------------------------------------------------------------- template


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: ``patch`` merged over ``target`` (null deletes a key, objects merge, the rest replaces)."""
    if not isinstance(patch, Mapping):
        return patch
    merged = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = json_merge_patch(merged.get(key), value)
    return merged


def domain_names(spec: ControlPlaneSpec) -> list[str]:
    """The configured failure domains, in spec order (empty: one implicit domain)."""
    return [domain.name for domain in spec.failure_domains or ()]


def desired_machine(spec: ControlPlaneSpec, domain: str | None) -> JSON:
    """The labels, annotations and providerSpec a new Machine in ``domain`` gets from the template.

    Labels default to the selector's matchLabels; the domain's ``providerSpec`` is merged over the
    template's (JSON merge patch). The failure-domain label and the spec-hash annotation are not
    part of it (they are derived from it).
    """
    template = spec.template
    labels = dict(
        (template.metadata.labels if template.metadata else None) or spec.selector.match_labels or {}
    )
    annotations = dict((template.metadata.annotations if template.metadata else None) or {})
    value: Any = dict(template.spec.provider_spec.value or {})
    for candidate in spec.failure_domains or ():
        if candidate.name == domain and candidate.provider_spec is not None:
            value = json_merge_patch(value, candidate.provider_spec.value or {})
    return {"labels": labels, "annotations": annotations, "providerSpec": {"value": value}}


def _hash(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def template_hash(spec: ControlPlaneSpec, domain: str | None) -> str:
    """The spec hash of a Machine created now in ``domain``: template metadata + merged providerSpec."""
    return _hash(desired_machine(spec, domain))


def observed_hash(spec: ControlPlaneSpec, machine: Mapping[str, Any]) -> str:
    """The spec hash a Machine without the annotation (an adopted one) stands for.

    Computed from what the Machine carries, restricted to the keys the template sets: a Machine
    that matches the template hashes like :func:`template_hash`, so adopting an up-to-date set of
    Machines starts no rollout.
    """
    wanted = desired_machine(spec, machine_domain(spec, machine))
    metadata = machine.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    value = ((machine.get("spec") or {}).get("providerSpec") or {}).get("value") or {}
    return _hash(
        {
            "labels": {key: labels.get(key) for key in wanted["labels"]},
            "annotations": {key: annotations.get(key) for key in wanted["annotations"]},
            "providerSpec": {"value": value},
        }
    )


def machine_domain(spec: ControlPlaneSpec, machine: Mapping[str, Any]) -> str | None:
    """A Machine's failure domain: its label, else the configured domain whose providerSpec it carries."""
    labels = (machine.get("metadata") or {}).get("labels") or {}
    if labels.get(FAILURE_DOMAIN_LABEL):
        return str(labels[FAILURE_DOMAIN_LABEL])
    value = ((machine.get("spec") or {}).get("providerSpec") or {}).get("value") or {}
    for name in domain_names(spec):
        if desired_machine(spec, name)["providerSpec"]["value"] == value:
            return name
    return None


def is_outdated(spec: ControlPlaneSpec, machine: Mapping[str, Any]) -> str | None:
    """Why ``machine`` must be replaced, or None when it is up to date.

    Outdated means: its failure domain is no longer configured (rebalance by replacement); its
    spec hash annotation (or, without one, :func:`observed_hash`) differs from
    :func:`template_hash` for its domain; or it was created before ``spec.rolloutAfter``.
    """
    metadata = machine.get("metadata") or {}
    domain = machine_domain(spec, machine)
    names = domain_names(spec)
    if names and domain not in names:
        return f"failure domain {domain or '(none)'} is not in spec.failureDomains"
    current = (metadata.get("annotations") or {}).get(SPEC_HASH_ANNOTATION) or observed_hash(spec, machine)
    if current != template_hash(spec, domain):
        return "its spec differs from the template"
    created = parse_time(metadata.get("creationTimestamp"))
    if spec.rollout_after is not None and created is not None and created < spec.rollout_after:
        return "it was created before spec.rolloutAfter"
    return None


# ---------------------------------------------------------------------------------------------- placement


def domain_counts(domains: Sequence[str], machines: Iterable[MachineInfo]) -> Counter[str]:
    """Non-deleting Machines per configured domain (every configured domain present, maybe 0)."""
    counts: Counter[str] = Counter({name: 0 for name in domains})
    for machine in machines:
        domain = machine.failure_domain
        if not machine.deleting and domain is not None and domain in counts:
            counts[domain] += 1
    return counts


def choose_failure_domain(domains: Sequence[str], machines: Iterable[MachineInfo]) -> str | None:
    """Where a new Machine goes: the configured domain with the fewest non-deleting Machines.

    Ties go to the alphabetically first name. None when no domain is configured.
    """
    if not domains:
        return None
    counts = domain_counts(domains, machines)
    return min(sorted(domains), key=lambda name: counts[name])


def scale_in_class(machine: MachineInfo) -> int:
    """The scale-in priority class, lower goes first.

    0 outdated with the delete annotation, 1 delete annotation, 2 outdated and unhealthy,
    3 outdated, 4 any other.
    """
    if machine.outdated and machine.delete_annotation:
        return 0
    if machine.delete_annotation:
        return 1
    if machine.outdated and machine.unhealthy:
        return 2
    if machine.outdated:
        return 3
    return 4


def select_for_scale_in(machines: Sequence[MachineInfo]) -> MachineInfo | None:
    """Which non-deleting Machine to delete when there is one too many.

    By :func:`scale_in_class`; within a class, the Machine in the most populated failure domain,
    then the oldest (then the name, for a stable answer).
    """
    candidates = [machine for machine in machines if not machine.deleting]
    if not candidates:
        return None
    per_domain = Counter(machine.failure_domain for machine in candidates)
    return min(
        candidates,
        key=lambda m: (scale_in_class(m), -per_domain[m.failure_domain], m.created, m.name),
    )


def is_imbalanced(domains: Sequence[str], machines: Sequence[MachineInfo]) -> bool:
    """Whether the non-deleting Machines are spread unevenly (two domains differ by more than one)."""
    if len(domains) < 2:
        return False
    counts = domain_counts(domains, machines)
    return max(counts.values()) - min(counts.values()) > 1


# ---------------------------------------------------------------------------------------------- preflight


@dataclass(frozen=True)
class EtcdFacts:
    """What the reconciler learnt from etcd for the preflight (see :func:`preflight`)."""

    reachable: bool = True
    error: str = ""
    """Why etcd could not be asked, when ``reachable`` is False."""
    member_names: tuple[str, ...] = ()
    """Names of every member (voters and learners; an unstarted member has the name ``""``)."""
    learners: tuple[str, ...] = ()
    """Names (or ids, for unstarted ones) of learners."""
    disagreeing: tuple[str, ...] = ()
    """Endpoints whose member list differs from the others'."""
    alarms: tuple[str, ...] = ()
    """Active alarms as ``ALARM@member``."""
    unhealthy_voters: tuple[str, ...] = ()
    """Voters whose health read failed, with the error."""


@dataclass(frozen=True)
class PreflightFailure:
    """One failed preflight check."""

    check: str
    message: str


def preflight(
    machines: Sequence[MachineInfo],
    etcd: EtcdFacts | None,
    *,
    hosting_etcd: Sequence[str],
    desired: int | None = None,
) -> list[PreflightFailure]:
    """Which checks forbid starting a create or delete now (empty: go ahead).

    * ``MachineNodesReady``: every owned, non-deleting Machine is Running with a Ready Node.
    * With stacked etcd (``etcd`` not None):
      ``EtcdReachable`` (the member list could be read), ``EtcdMembersMatchMachines`` (every member
      belongs to a Machine in ``hosting_etcd`` and every such Machine has a member),
      ``EtcdMemberListsAgree`` (every member reports the same list), ``EtcdNoAlarms``,
      ``EtcdVotersHealthy`` (every voter answers a health read), ``EtcdNoPendingLearner`` (no
      learner waits for promotion: the previous step is not finished). With ``desired`` (the
      replica count) a learner counts as pending only while it may still be promoted, that is
      while the voters are at most ``desired``: the etcd-quorum hook never promotes beyond
      desired + 1 voters, so after a scale-in below the voters a learner waits for a removal,
      which only a step of this controller brings.
    """
    failures: list[PreflightFailure] = []
    not_ready = sorted(m.name for m in machines if not m.deleting and not m.ready)
    if not_ready:
        failures.append(
            PreflightFailure(
                CHECK_MACHINES_READY,
                f"Machine(s) {', '.join(not_ready)} not Running with a Ready Node",
            )
        )
    if etcd is None:
        return failures
    if not etcd.reachable:
        failures.append(
            PreflightFailure(CHECK_ETCD_REACHABLE, f"cannot read the etcd member list: {etcd.error}")
        )
        return failures
    members = set(etcd.member_names)
    hosts = set(hosting_etcd)
    strangers = sorted(name or "(unstarted)" for name in members - hosts)
    missing = sorted(hosts - members)
    if strangers or missing:
        parts = []
        if strangers:
            parts.append(f"member(s) without a Machine: {', '.join(strangers)}")
        if missing:
            parts.append(f"Machine(s) without a member: {', '.join(missing)}")
        failures.append(PreflightFailure(CHECK_ETCD_MEMBERS_MATCH, "; ".join(parts)))
    if etcd.disagreeing:
        failures.append(
            PreflightFailure(
                CHECK_ETCD_MEMBER_LISTS_AGREE,
                f"member list differs at {', '.join(etcd.disagreeing)}",
            )
        )
    if etcd.alarms:
        failures.append(PreflightFailure(CHECK_ETCD_NO_ALARMS, f"active alarm(s): {', '.join(etcd.alarms)}"))
    if etcd.unhealthy_voters:
        failures.append(
            PreflightFailure(
                CHECK_ETCD_VOTERS_REACHABLE, f"voter(s) unhealthy: {'; '.join(etcd.unhealthy_voters)}"
            )
        )
    voters = len(etcd.member_names) - len(etcd.learners)
    if etcd.learners and (desired is None or voters <= desired):
        failures.append(
            PreflightFailure(
                CHECK_ETCD_NO_PENDING_LEARNER,
                f"learner(s) {', '.join(etcd.learners)} not promoted yet",
            )
        )
    return failures


# ---------------------------------------------------------------------------------------------- next step


@dataclass(frozen=True)
class Step:
    """What to do next: create a Machine (in ``domain``), delete ``machine``, wait, or nothing."""

    action: Literal["create", "delete", "wait", "none"]
    reason: str
    """CamelCase, for conditions and events."""
    message: str
    domain: str | None = None
    machine: str | None = None
    needs_preflight: bool = True
    """A create or delete starts only after :func:`preflight` passes."""


def next_step(
    *,
    replicas: int,
    strategy: Literal["RollingUpdate", "OnDelete"],
    max_surge: int,
    domains: Sequence[str],
    machines: Sequence[MachineInfo],
) -> Step:
    """The one next step toward ``replicas`` up-to-date, evenly spread Machines.

    One Machine at a time, never more than replicas + 1 Machines (deleting ones included):

    1. fewer non-deleting Machines than ``replicas``: create one. If a Machine is being deleted
       (a user's delete, a rollout's, a remediation's) the new one goes to that Machine's domain
       when it is still configured (a replacement), else to :func:`choose_failure_domain`;
    2. more than ``replicas``: wait while anything is being deleted, else delete
       :func:`select_for_scale_in` (after a maxSurge-1 replacement this is the outdated one);
    3. exactly ``replicas``: wait while anything is being deleted (one replacement at a time);
       under RollingUpdate, replace an outdated Machine (the scale-in choice among the outdated
       ones): maxSurge 1 creates its replacement first (then rule 2 deletes it), maxSurge 0
       (only with 3 or more replicas, else as maxSurge 1) deletes it first (then rule 1
       replaces it in its domain); uneven domains are rebalanced the same way. OnDelete only
       reports outdated Machines.
    """
    active = [m for m in machines if not m.deleting]
    deleting = sorted((m for m in machines if m.deleting), key=lambda m: m.name)
    total = len(machines)
    if len(active) < replicas:
        if total >= replicas + 1:
            names = ", ".join(m.name for m in deleting)
            return Step(
                "wait",
                "WaitingForDeletion",
                f"Waiting for Machine(s) {names} to be deleted before creating more (at most "
                f"{replicas + 1} Machines)",
            )
        replaced = next((m for m in deleting if m.failure_domain in domains), None)
        domain = replaced.failure_domain if replaced is not None else choose_failure_domain(domains, active)
        if deleting:
            return Step(
                "create",
                "ReplacingMachine",
                f"Creating a replacement for Machine {deleting[0].name}"
                + (f" in failure domain {domain}" if domain else ""),
                domain=domain,
            )
        return Step(
            "create",
            "ScalingUp",
            f"Scaling up from {len(active)} to {replicas} replica(s)"
            + (f": new Machine in failure domain {domain}" if domain else ""),
            domain=domain,
        )
    if deleting:
        return Step(
            "wait",
            "WaitingForDeletion",
            f"Waiting for Machine(s) {', '.join(m.name for m in deleting)} to be deleted",
            needs_preflight=False,
        )
    if len(active) > replicas:
        victim = select_for_scale_in(active)
        assert victim is not None
        surplus = "outdated " if victim.outdated else ""
        return Step(
            "delete",
            "ScalingDown",
            f"Deleting {surplus}Machine {victim.name} ({len(active)} Machines for {replicas} replica(s))",
            machine=victim.name,
        )
    outdated = [m for m in active if m.outdated]
    if strategy == "OnDelete":
        if outdated:
            return Step(
                "none",
                "WaitingForManualDeletion",
                f"{len(outdated)} outdated Machine(s) ({', '.join(sorted(m.name for m in outdated))}); "
                "strategy OnDelete replaces a Machine only once you delete it",
                needs_preflight=False,
            )
        return Step("none", "UpToDate", "All Machines are up to date", needs_preflight=False)
    surge = max_surge if replicas >= 3 else 1
    if outdated:
        victim = select_for_scale_in(outdated)
        assert victim is not None
        if surge == 0:
            return Step(
                "delete",
                "RollingUpdate",
                f"Deleting outdated Machine {victim.name} first (maxSurge 0); its replacement follows",
                machine=victim.name,
            )
        domain = (
            victim.failure_domain
            if victim.failure_domain in domains
            else choose_failure_domain(domains, active)
        )
        return Step(
            "create",
            "RollingUpdate",
            f"Creating the replacement of outdated Machine {victim.name}"
            + (f" in failure domain {domain}" if domain else ""),
            domain=domain,
            machine=victim.name,
        )
    if is_imbalanced(domains, active):
        if surge == 0:
            victim = select_for_scale_in(active)
            assert victim is not None
            return Step(
                "delete",
                "Rebalancing",
                f"Failure domains are uneven: deleting Machine {victim.name} from {victim.failure_domain}",
                machine=victim.name,
            )
        domain = choose_failure_domain(domains, active)
        return Step(
            "create",
            "Rebalancing",
            f"Failure domains are uneven: creating a Machine in {domain}",
            domain=domain,
        )
    return Step("none", "UpToDate", "All Machines are up to date", needs_preflight=False)


# ---------------------------------------------------------------------------------------------- remediation


@dataclass(frozen=True)
class RemediationDecision:
    """Whether the unhealthy Machine may be remediated now, and the retry count to record."""

    allowed: bool
    reason: str
    message: str
    retry_count: int = 0
    requeue_after: float | None = None
    """Seconds until it may be allowed (retryPeriod), when that is what blocks it."""
    needs_human: bool = False
    """maxRetry is exhausted: only a human can go on."""
    resumed: bool = False
    """``target`` is already recorded as the last remediation but was never deleted (the process
    died between the record and the delete): carry that remediation out, do not record a new one."""


def quorum_kept_without(machines: Sequence[MachineInfo], target: str) -> bool:
    """Whether removing ``target``'s member keeps a quorum among the healthy voters left.

    The cluster after removal has the other voters; a quorum of it (n // 2 + 1) must be healthy.
    """
    voters = [m for m in machines if m.etcd_voter and m.name != target]
    healthy = [m for m in voters if m.etcd_healthy]
    return len(healthy) >= len(voters) // 2 + 1 if voters else False


def health_check_budget(replicas: int, machines: Sequence[MachineInfo]) -> int:
    """The owned MachineHealthCheck's ``maxUnhealthy``: the failed Machines etcd can lose, plus
    the Machines in transition.

    etcd can lose (n − 1) / 2 of n members, n being the larger of the replica count and the
    owned Machines: during a scale-in the members are still there (chaos seeds 41 and 44: a
    member died after the user scaled 3 or 5 to 1, and a budget of 0 kept it from ever being
    replaced, which the scale-in waited for). A MachineHealthCheck counts a Machine being deleted
    or created (:attr:`MachineInfo.in_transition`) as not healthy, as machine-api's does, but it
    is no failure: during a replacement the old Machine, whose voter the etcd-quorum hook holds
    until the new one votes, and the new one would otherwise use up a 3-replica control plane's
    whole budget, and a Machine failing then would never be remediated, while the held deletion
    waits for a replacement that only that remediation lets join (chaos seeds 6 and 18).
    """
    members = max(replicas, len(machines))
    return (members - 1) // 2 + sum(m.in_transition for m in machines)


def held_by_hook(machine: MachineInfo) -> bool:
    """Being deleted while its member is a healthy voter: the etcd-quorum hook holds the Machine
    until a replacement votes, so its deletion cannot finish before a replacement joins."""
    return machine.deleting and machine.etcd_voter and machine.etcd_healthy


def remediation_decision(
    *,
    target: MachineInfo,
    machines: Sequence[MachineInfo],
    initialized: bool,
    stacked_etcd: bool,
    last_machine: str | None,
    last_time: datetime | None,
    last_retry_count: int,
    max_retry: int | None,
    retry_period: str | None,
    min_healthy_period: str | None,
    now: datetime,
) -> RemediationDecision:
    """KubeadmControlPlane's safety rules for remediating ``target`` (marked unhealthy).

    Allowed only when: there are at least 2 Machines or the control plane is not initialised yet;
    the previous remediation finished (its Machine is gone, or :func:`held_by_hook`, or it is
    ``target`` itself, recorded but not yet deleted: then it is ``resumed``); no other
    Machine is provisioning or being deleted (but for one :func:`held_by_hook`, and, when
    ``target``'s member is an unhealthy voter, one that has no member yet: etcd takes none while
    a voter is unhealthy); removing ``target``'s member keeps quorum among the healthy voters
    (stacked etcd, target a voter). A remediation within ``minHealthyPeriod`` (default 1h) of the
    previous one is a retry: it must wait ``retryPeriod`` after it, and stops after ``maxRetry``
    retries (then a human must act); a later one starts a new count.
    """
    others = [m for m in machines if m.name != target.name]
    if initialized and len(machines) < 2:
        return RemediationDecision(
            False,
            "CannotRemediateLastMachine",
            f"Machine {target.name} is the only control-plane Machine; remediating it would lose etcd: "
            "scale to 3 replicas or repair it by hand",
        )
    # The previous remediation's Machine may be held by the etcd-quorum hook too (its Node was
    # NotReady but its member a healthy voter): it goes only once a replacement votes, which no
    # Machine failing the preflight lets join (chaos seed 37).
    previous = next((m for m in machines if m.name == last_machine), None) if last_machine else None
    # The record is written before the delete; a crash between the two leaves ``target`` itself
    # named (``target`` is never deleting): waiting for it to go would wait for ever.
    resuming = previous is not None and previous.name == target.name
    if previous is not None and not resuming and not held_by_hook(previous):
        return RemediationDecision(
            False,
            "WaitingForPreviousRemediation",
            f"The previous remediation (Machine {last_machine}) has not finished",
        )
    # A deleting Machine whose member is still a healthy voter is held by the etcd-quorum hook
    # until its replacement votes; waiting for it would wait for ever, since no replacement joins
    # while ``target`` fails the preflight (and etcd takes no new member while a voter is dead).
    # Every member removal stays gated by the hook controller.
    deleting = sorted(m.name for m in others if m.deleting and not held_by_hook(m))
    if deleting:
        return RemediationDecision(
            False, "WaitingForDeletion", f"Machine(s) {', '.join(deleting)} being deleted; remediation waits"
        )
    # A Machine that has no etcd member yet gets none while a voter is unhealthy (etcd refuses
    # the member add): when ``target`` is that voter, waiting for it would wait for ever.
    blocks_joins = target.etcd_voter and not target.etcd_healthy
    provisioning = sorted(
        m.name
        for m in others
        if not m.deleting and not m.ready and not m.unhealthy and (m.has_etcd_member or not blocks_joins)
    )
    if provisioning:
        return RemediationDecision(
            False,
            "WaitingForProvisioning",
            f"Machine(s) {', '.join(provisioning)} still provisioning; remediation waits",
        )
    if stacked_etcd and initialized and target.etcd_voter and not quorum_kept_without(machines, target.name):
        return RemediationDecision(
            False,
            "EtcdQuorumAtRisk",
            f"Removing the etcd member of {target.name} would leave too few healthy voters for quorum; "
            "repair the other unhealthy member(s) first",
        )
    if resuming:
        # The retry rules were applied when it was recorded; it keeps that record's count.
        return RemediationDecision(
            True,
            "Remediating",
            f"Replacing unhealthy Machine {target.name} (its remediation was recorded but the Machine "
            "not yet deleted)",
            retry_count=last_retry_count,
            resumed=True,
        )
    retry_count = 0
    if last_time is not None:
        healthy_window = parse_duration(min_healthy_period or "1h")
        if now - last_time < healthy_window:
            retry_count = last_retry_count + 1
            if max_retry is not None and retry_count > max_retry:
                return RemediationDecision(
                    False,
                    "MaxRetryReached",
                    f"Machine {target.name} failed again within minHealthyPeriod after {last_retry_count} "
                    f"remediation retry(ies) (maxRetry {max_retry}); find the cause, then delete the Machine "
                    "by hand",
                    retry_count=retry_count,
                    needs_human=True,
                )
            wait = last_time + parse_duration(retry_period or "0") - now
            if wait > timedelta(0):
                return RemediationDecision(
                    False,
                    "WaitingForRetryPeriod",
                    f"Remediation of {target.name} waits for retryPeriod ({retry_period}) after the "
                    "previous one",
                    retry_count=retry_count,
                    requeue_after=wait.total_seconds(),
                )
    return RemediationDecision(
        True, "Remediating", f"Replacing unhealthy Machine {target.name}", retry_count=retry_count
    )


# ---------------------------------------------------------------------------------------------- status


@dataclass(frozen=True)
class StatusInputs:
    """Everything :func:`compute_status` needs."""

    replicas: int
    selector: str
    generation: int
    machines: Sequence[MachineInfo]
    step: Step | None = None
    preflight_failures: Sequence[PreflightFailure] = ()
    paused: bool = False
    deleting: bool = False
    owned_by_others: Sequence[str] = ()
    unmanaged_nodes: Sequence[str] = ()
    remediation: RemediationDecision | None = None
    """The decision about the Machine marked unhealthy, when there is one."""
    remediating: bool = False
    """A remediation is in progress (started now, or its Machine is still being replaced)."""
    failure: tuple[str, str] | None = None
    """``(reason, message)`` of a problem only a human can fix."""


def _condition(type_: str, status: bool, reason: str, message: str) -> JSON:
    return {"type": type_, "status": "True" if status else "False", "reason": reason, "message": message}


def compute_status(inputs: StatusInputs) -> JSON:
    """The ControlPlane's status (without lastTransitionTime; see :func:`merge_conditions`).

    Counts: ``replicas`` (owned Machines, deleting included), ``updatedReplicas`` (not outdated,
    not deleting), ``readyReplicas`` (Running with a Ready Node), ``availableReplicas`` (not deleting,
    ready and a healthy etcd voter), ``unavailableReplicas`` (spec.replicas − available, never negative).
    Phase: Deleting > Remediating > Degraded > Pending (no Machine) > Provisioning (none ready)
    > Updating (outdated Machines) > Scaling (count differs) > Running.
    """
    machines = inputs.machines
    active = [m for m in machines if not m.deleting]
    updated = [m for m in active if not m.outdated]
    ready = [m for m in machines if m.ready]
    available = [m for m in machines if m.available]
    outdated = [m for m in active if m.outdated]
    failed = sorted(m.name for m in machines if m.failed)
    missing = max(inputs.replicas - len(available), 0)
    remediating = inputs.remediating or (inputs.remediation is not None and inputs.remediation.allowed)
    failure = inputs.failure
    if failure is None and failed:
        failure = (
            "MachineFailed",
            f"Machine(s) {', '.join(failed)} Failed; see their status.errorMessage, fix the cause and "
            "delete them to get replacements",
        )

    conditions: list[JSON] = []
    if missing == 0:
        conditions.append(
            _condition(CONDITION_AVAILABLE, True, "AsExpected", f"{len(available)} available replica(s)")
        )
    else:
        conditions.append(
            _condition(
                CONDITION_AVAILABLE,
                len(available) > 0,
                "MissingReplicas",
                f"Missing {missing} available replica(s)",
            )
        )
    progress_reason, progress_message = "AsExpected", "All Machines are up to date"
    progressing = False
    if inputs.paused:
        progress_reason, progress_message = "Paused", "spec.paused is true: no Machine is created or deleted"
    elif inputs.preflight_failures:
        progress_reason = "PreflightFailed"
        progress_message = "; ".join(f"{f.check}: {f.message}" for f in inputs.preflight_failures)
        progressing = True
    elif inputs.step is not None and inputs.step.action != "none":
        progress_reason, progress_message = inputs.step.reason, inputs.step.message
        progressing = True
    elif outdated:
        progress_reason = "OutdatedMachines"
        progress_message = f"Waiting for {len(outdated)} old replica(s) to be removed"
        if inputs.step is not None and inputs.step.reason == "WaitingForManualDeletion":
            progress_message = inputs.step.message
    if outdated and progressing:
        progress_message = f"Waiting for {len(outdated)} old replica(s) to be removed; {progress_message}"
    conditions.append(_condition(CONDITION_PROGRESSING, progressing, progress_reason, progress_message))

    degraded: list[tuple[str, str]] = []
    if failure is not None:
        degraded.append(failure)
    if inputs.owned_by_others:
        degraded.append(
            (
                "MachinesAlreadyOwned",
                f"Machine(s) {', '.join(inputs.owned_by_others)} match spec.selector but another controller "
                "owns them; they are left alone",
            )
        )
    if inputs.unmanaged_nodes:
        degraded.append(
            (
                "UnmanagedNodes",
                f"control-plane Node(s) {', '.join(inputs.unmanaged_nodes)} have no Machine",
            )
        )
    if degraded:
        conditions.append(
            _condition(
                CONDITION_DEGRADED, True, degraded[0][0], "; ".join(message for _, message in degraded)
            )
        )
    else:
        conditions.append(_condition(CONDITION_DEGRADED, False, "AsExpected", ""))

    not_ready = sorted(m.name for m in active if not m.ready)
    conditions.append(
        _condition(
            CONDITION_MACHINES_READY,
            not not_ready,
            "AsExpected" if not not_ready else "MachinesNotReady",
            f"Machine(s) {', '.join(not_ready)} not ready" if not_ready else "",
        )
    )
    if remediating:
        message = inputs.remediation.message if inputs.remediation and inputs.remediation.allowed else ""
        conditions.append(
            _condition(
                CONDITION_REMEDIATING, True, "Remediating", message or "Replacing an unhealthy Machine"
            )
        )
    elif inputs.remediation is not None:
        conditions.append(
            _condition(CONDITION_REMEDIATING, False, inputs.remediation.reason, inputs.remediation.message)
        )
    else:
        conditions.append(_condition(CONDITION_REMEDIATING, False, "AsExpected", ""))

    phase: Phase
    if inputs.deleting:
        phase = "Deleting"
    elif remediating:
        phase = "Remediating"
    elif failure is not None or inputs.owned_by_others:
        phase = "Degraded"
    elif not machines:
        phase = "Pending"
    elif not ready:
        phase = "Provisioning"
    elif outdated:
        phase = "Updating"
    elif len(active) != inputs.replicas or len(machines) != len(active):
        phase = "Scaling"
    else:
        phase = "Running"

    status: JSON = {
        "replicas": len(machines),
        "updatedReplicas": len(updated),
        "readyReplicas": len(ready),
        "availableReplicas": len(available),
        "unavailableReplicas": missing,
        "selector": inputs.selector,
        "observedGeneration": inputs.generation,
        "phase": phase,
        "conditions": conditions,
        "failureReason": failure[0] if failure else None,
        "failureMessage": failure[1] if failure else None,
    }
    return status
