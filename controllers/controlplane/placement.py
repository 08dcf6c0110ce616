"""Where the ControlPlane's Machines go and what they look like: failure domains, the Machine a
template makes, its spec hash, whether a Machine is outdated, and which one leaves on scale-in.

Pure functions of the spec and :class:`~controllers.controlplane.machines.MachineInfo` values.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from api.controlplane import ControlPlaneSpec
from api.failuredomains import FAILURE_DOMAIN_LABEL, domain_names, domain_provider_spec, machine_domain
from api.machine import API_VERSION as MACHINE_API_VERSION
from api.machine import REASON_FAILURE_DOMAIN_NOT_CONFIGURED, REASON_ROLLOUT_AFTER, REASON_TEMPLATE_CHANGED
from controllers.common import parse_time
from controllers.controlplane.machines import MachineInfo, controller_ref
from runtime.jsoncodec import JSON

SPEC_HASH_ANNOTATION: Final = "controlplane.cpo.dev/spec-hash"
"""On each Machine the controller creates: :func:`template_hash` of what it was created from."""
SPEC_HASH_PREFIX: Final = "v2-"
"""How a :func:`template_hash` begins, so that a hash the previous version wrote
(:func:`previous_template_hash`, bare hex) is told from it by its value alone."""
TEMPLATE_METADATA_ANNOTATION: Final = "controlplane.cpo.dev/template-metadata"
"""On each Machine the controller creates or keeps in step with the template: the keys of the
template's labels and annotations written on it last (:func:`applied_record`), as ``kubectl
apply`` keeps its last-applied configuration; the one thing that lets a key the template drops be
removed without touching keys others set (:mod:`~controllers.controlplane.template_metadata`)."""
OPERATOR_KEY_PREFIXES: Final = ("controlplane.cpo.dev/", "etcd.cpo.dev/")
"""Label and annotation keys that are the operator's own state: never written or removed by
keeping a Machine in step with the template, never recorded."""


def desired_machine(spec: ControlPlaneSpec, domain: str | None) -> JSON:
    """The labels, annotations and providerSpec a new Machine in ``domain`` gets from the template.

    Labels default to the selector's matchLabels; the domain's ``providerSpec`` is merged over the
    template's (JSON merge patch). The failure-domain label and the operator's annotations are
    not part of it (they are derived from it).
    """
    template = spec.template
    labels = dict(
        (template.metadata.labels if template.metadata else None) or spec.selector.match_labels or {}
    )
    annotations = dict((template.metadata.annotations if template.metadata else None) or {})
    value = domain_provider_spec(spec, domain)
    return {"labels": labels, "annotations": annotations, "providerSpec": {"value": value}}


def is_operator_key(key: str) -> bool:
    """Whether ``key`` is under :data:`OPERATOR_KEY_PREFIXES`."""
    return key.startswith(OPERATOR_KEY_PREFIXES)


def applied_record(spec: ControlPlaneSpec) -> str:
    """:data:`TEMPLATE_METADATA_ANNOTATION`'s value for the template now: the sorted keys of its
    labels and annotations (the operator's own keys left out), as compact JSON."""
    desired = desired_machine(spec, None)
    return json.dumps(
        {
            "labels": sorted(k for k in desired["labels"] if not is_operator_key(k)),
            "annotations": sorted(k for k in desired["annotations"] if not is_operator_key(k)),
        },
        separators=(",", ":"),
    )


def new_machine(spec: ControlPlaneSpec, domain: str | None, *, name: str, owner: Mapping[str, Any]) -> JSON:
    """The Machine ``name`` to create in ``domain``: :func:`desired_machine`, plus the
    failure-domain label, the :func:`template_hash` and :func:`applied_record` annotations and
    ``owner`` as its controller."""
    desired = desired_machine(spec, domain)
    labels = dict(desired["labels"])
    if domain is not None:
        labels[FAILURE_DOMAIN_LABEL] = domain
    annotations = {
        **desired["annotations"],
        SPEC_HASH_ANNOTATION: template_hash(spec, domain),
        TEMPLATE_METADATA_ANNOTATION: applied_record(spec),
    }
    return {
        "apiVersion": MACHINE_API_VERSION,
        "kind": "Machine",
        "metadata": {
            "name": name,
            "namespace": owner["metadata"]["namespace"],
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [controller_ref(owner)],
        },
        "spec": {"providerSpec": desired["providerSpec"]},
    }


def _hash(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _what_it_is_hash(value: Any, domain: str | None) -> str:
    return SPEC_HASH_PREFIX + _hash({"providerSpec": {"value": value}, "failureDomain": domain})


def template_hash(spec: ControlPlaneSpec, domain: str | None) -> str:
    """The spec hash of a Machine created now in ``domain``: what the Machine *is*, its
    providerSpec (the template's with the domain's merged over it) and its failure domain.

    The template's labels and annotations are not in it: they are written onto the Machines in
    place (:mod:`~controllers.controlplane.template_metadata`), so changing them replaces nothing.
    That is KubeadmControlPlane's split (its rollout compares the machine's infrastructure and
    bootstrap configuration, and metadata is propagated without a rollout) and CPMS's (which
    compares the providerSpec alone, with the failure domain injected).
    """
    return _what_it_is_hash(domain_provider_spec(spec, domain), domain)


def previous_template_hash(spec: ControlPlaneSpec, domain: str | None) -> str:
    """The spec hash the previous version of this controller wrote on the Machines it created:
    the template's labels and annotations with the merged providerSpec, bare hex.

    Kept, frozen, only to recognise those Machines after an upgrade (:func:`spec_hash_matches`):
    without it every one of them would look outdated and a fleet would replace every control plane.
    """
    template = spec.template
    labels = (template.metadata.labels if template.metadata else None) or spec.selector.match_labels or {}
    annotations = (template.metadata.annotations if template.metadata else None) or {}
    value = domain_provider_spec(spec, domain)
    return _hash({"labels": dict(labels), "annotations": dict(annotations), "providerSpec": {"value": value}})


def observed_hash(spec: ControlPlaneSpec, machine: Mapping[str, Any]) -> str:
    """The spec hash the Machine's own content stands for: its providerSpec and its domain, as
    :func:`template_hash` computes them; for a Machine without the annotation (an adopted one) or
    with the previous version's. A Machine that matches the template hashes like
    :func:`template_hash`, so adopting an up-to-date set of Machines starts no rollout, whatever
    labels and annotations they carry."""
    value = ((machine.get("spec") or {}).get("providerSpec") or {}).get("value") or {}
    return _what_it_is_hash(value, machine_domain(spec, machine))


def spec_hash_matches(spec: ControlPlaneSpec, machine: Mapping[str, Any]) -> bool:
    """Whether what ``machine`` is matches the template for its domain.

    By its :data:`SPEC_HASH_ANNOTATION`: a hash of this version (:data:`SPEC_HASH_PREFIX`)
    matches when equal to :func:`template_hash`, what the Machine was created from deciding, not
    its providerSpec as edited since. A hash of the previous version matches when equal to
    :func:`previous_template_hash` (created from this very template), or else when the Machine's
    own providerSpec and domain are the template's (:func:`observed_hash`): that version hashed
    the template's metadata too, which no longer makes a Machine outdated. A Machine without the
    annotation (adopted) is compared by its content alone.
    """
    recorded = ((machine.get("metadata") or {}).get("annotations") or {}).get(SPEC_HASH_ANNOTATION)
    domain = machine_domain(spec, machine)
    wanted = template_hash(spec, domain)
    if recorded and recorded.startswith(SPEC_HASH_PREFIX):
        return bool(recorded == wanted)
    if recorded and recorded == previous_template_hash(spec, domain):
        return True
    return observed_hash(spec, machine) == wanted


def hash_to_rewrite(spec: ControlPlaneSpec, machine: Mapping[str, Any]) -> str | None:
    """The :func:`template_hash` to write in place of a previous version's hash on ``machine``,
    when it matches the template (:func:`spec_hash_matches`) in a configured domain; None when
    there is nothing to rewrite (no annotation, already this version's, or outdated: it will be
    replaced). The rewrite keeps the Machine's state whole across upgrades: once rewritten, what
    it was created from is recorded in today's terms."""
    recorded = ((machine.get("metadata") or {}).get("annotations") or {}).get(SPEC_HASH_ANNOTATION)
    if not recorded or recorded.startswith(SPEC_HASH_PREFIX):
        return None
    domain = machine_domain(spec, machine)
    names = domain_names(spec)
    if (names and domain not in names) or not spec_hash_matches(spec, machine):
        return None
    return template_hash(spec, domain)


def is_outdated(spec: ControlPlaneSpec, machine: Mapping[str, Any], *, now: datetime) -> str | None:
    """Why ``machine`` must be replaced at ``now``, or None when it is up to date.

    Outdated means: its failure domain is no longer configured (rebalance by replacement); what
    it is, its providerSpec and domain, differs from the template's (:func:`spec_hash_matches`;
    labels and annotations never outdate a Machine); or :func:`rollout_after_due` says ``spec.rolloutAfter``
    has come and the Machine predates it.
    Being outdated only makes a Machine a candidate: it is replaced one step at a time, each
    step behind the preflight, so a template change never takes more than one member at once.
    """
    why = outdated_reason(spec, machine, now=now)
    return None if why is None else why[1]


def outdated_reason(
    spec: ControlPlaneSpec, machine: Mapping[str, Any], *, now: datetime
) -> tuple[str, str] | None:
    """:func:`is_outdated`'s answer as ``(reason, message)``: the reason one of
    ``FailureDomainNotConfigured``, ``TemplateChanged``, ``RolloutAfter`` (the Machine's
    ``UpToDate`` condition says it), checked in that order."""
    metadata = machine.get("metadata") or {}
    domain = machine_domain(spec, machine)
    names = domain_names(spec)
    if names and domain not in names:
        return (
            REASON_FAILURE_DOMAIN_NOT_CONFIGURED,
            f"failure domain {domain or '(none)'} is not in spec.failureDomains",
        )
    if not spec_hash_matches(spec, machine):
        return REASON_TEMPLATE_CHANGED, "its spec differs from the template"
    if rollout_after_due(spec, parse_time(metadata.get("creationTimestamp")), now=now):
        return REASON_ROLLOUT_AFTER, "it was created before spec.rolloutAfter, which has passed"
    return None


def _whole_seconds(moment: datetime) -> datetime:
    return moment.replace(microsecond=0)


def rollout_after_due(spec: ControlPlaneSpec, created: datetime | None, *, now: datetime) -> bool:
    """Whether ``spec.rolloutAfter`` makes a Machine created at ``created`` outdated at ``now``.

    True only when both hold: the time has come (``now >= rolloutAfter``) and the Machine was
    created strictly before it (``creationTimestamp < rolloutAfter``). This is KCP's rule
    (cluster-api ``controlplane/kubeadm``: a Machine needs rollout when its creationTimestamp
    is before rolloutAfter and rolloutAfter is before the reconciliation time), except that the
    moment itself already counts as passed, so the rollout starts on the requeue that lands on
    it rather than one pass later. Consequences a user sees:

    - a ``rolloutAfter`` in the future replaces nothing and leaves every Machine up to date
      (each ready one counts in ``status.updatedReplicas``); the controller looks again when it passes
      (:func:`seconds_until_rollout_after`);
    - once it has passed, every Machine older than it is replaced once; each replacement is
      created after it, so it is not outdated, and the rollout ends instead of churning;
    - a ``rolloutAfter`` in the past only replaces Machines that predate it (setting it to now
      is the way to ask for a fresh set of Machines).

    Both sides are compared at whole seconds, because the API stores ``creationTimestamp`` so:
    a replacement created in the same second as ``rolloutAfter`` reads back as equal to it, not
    before it, and is not outdated. A Machine without a readable creation time is never outdated
    by ``rolloutAfter`` (it cannot be shown to predate it).
    """
    if spec.rollout_after is None or created is None:
        return False
    deadline = _whole_seconds(spec.rollout_after)
    return _whole_seconds(now) >= deadline and _whole_seconds(created) < deadline


def seconds_until_rollout_after(spec: ControlPlaneSpec, *, now: datetime) -> float | None:
    """How long until ``spec.rolloutAfter`` passes, or None when it is unset or already due.

    The controller requeues for that moment: no watch event marks it, and until it comes no
    Machine is outdated by it (:func:`rollout_after_due`). Never less than one second, so a
    clock that wakes a little early does not spin.
    """
    if spec.rollout_after is None:
        return None
    remaining = (_whole_seconds(spec.rollout_after) - _whole_seconds(now)).total_seconds()
    return max(remaining, 1.0) if remaining > 0 else None


# ---------------------------------------------------------------------------------------------- placement


def domain_counts(domains: Sequence[str], machines: Iterable[MachineInfo]) -> Counter[str]:
    """Non-deleting Machines per configured domain (every configured domain present, maybe 0)."""
    counts: Counter[str] = Counter({name: 0 for name in domains})
    for machine in machines:
        domain = machine.failure_domain
        if not machine.deleting and domain is not None and domain in counts:
            counts[domain] += 1
    return counts


def choose_failure_domain(
    domains: Sequence[str], machines: Iterable[MachineInfo], *, prefer: Sequence[str | None] = ()
) -> str | None:
    """Where a new Machine goes: the configured domain with the fewest non-deleting Machines.

    Among the domains tied for fewest, the first of ``prefer`` (the domain of the Machine being
    replaced), else the alphabetically first name (the same answer on every pass). None when no
    domain is configured. Spreading the members keeps a quorum when one domain fails whole.

    A replacement passes the Machines that stay, the replaced one left out whether it is already
    being deleted (remove-then-add) or not yet (add-then-remove): the new Machine goes where the
    spread will be thinnest once the old one is gone. So a replacement out of a crowded domain
    lands in the emptiest one and a rebalance converges, while in an even spread the replaced
    Machine's domain is among the fewest and ``prefer`` keeps it there: an ordinary rollout moves
    no Machine between domains.

    KCP (cluster-api ``NextFailureDomainForScaleUp``) ranks the domains by their up-to-date,
    non-deleting Machines, then by all their Machines (deleting and outdated included), and
    leaves a remaining tie to map order. Here outdated Machines count too, because they are
    replaced one at a time in place and are members until then: the spread of the members that
    exist during the rollout is what a domain failure tests. The tie goes to the replaced
    Machine's domain, where KCP's second key would steer away from it (it still counts there).
    """
    if not domains:
        return None
    counts = domain_counts(domains, machines)
    fewest = min(counts.values())
    for domain in prefer:
        if domain is not None and domain in counts and counts[domain] == fewest:
            return domain
    return min(sorted(domains), key=lambda name: counts[name])


def scale_in_class(machine: MachineInfo) -> int:
    """The scale-in priority class, lower goes first.

    0 outdated with the delete annotation, 1 delete annotation, 2 outdated and unhealthy, not
    Ready (its control-plane components included) or with an unhealthy etcd voter, 3 outdated,
    4 unhealthy control-plane components, 5 any other: a Machine someone asked to remove, then
    one that must be replaced anyway (one that does not serve first), then one whose API server,
    controller manager, scheduler or etcd Pod is broken, before a good one.

    Class 4 is KCP's ``UnhealthyMachinesWithUnhealthyControlPlaneComponents``: scaling 5 to 3
    with one Machine's controller manager crash-looping removes that Machine first, so the two
    steps leave the healthy ones. KCP ranks it before the outdated Machines too, but hands a
    rollout's scale-down the outdated Machines only; here one order serves both, so the outdated
    ones come first: a rollout whose replacement's API server crash-loops must not delete that
    replacement (to create it again, broken, one etcd membership change after another) but wait
    on it, held by the preflight, until the template is fixed, which makes it outdated and first.

    Class 2 is KCP's "outdated with unhealthy control-plane components"
    (``UnhealthyMachinesWithUnhealthyControlPlaneComponents``, which counts a failed
    ``EtcdMemberHealthy``), widened, as CPMS does, to Machines that are not Ready (KCP's
    conditions are Unknown without a Node, which it does not count): so when the template
    changes again while a replacement made from the previous one never became Ready (still
    provisioning, or a NotReady Node), that replacement goes first, and not an older Machine that
    serves; its own readiness does not hold its delete
    (:func:`~controllers.controlplane.preflight.excluded_from_preflight`). The etcd clause matters
    most: the preflight refuses every delete while a voter other than the deleted Machine's is
    unhealthy, so a rollout that picked an older Machine beside a dead member (whose Node may
    well be Ready: a failing etcd on a live kubelet) would wait for ever.
    """
    if machine.outdated and machine.delete_annotation:
        return 0
    if machine.delete_annotation:
        return 1
    if machine.outdated and (machine.unhealthy or not machine.ready or machine.unhealthy_voter):
        return 2
    if machine.outdated:
        return 3
    if machine.components_unhealthy:
        return 4
    return 5


def select_for_scale_in(machines: Sequence[MachineInfo]) -> MachineInfo | None:
    """Which non-deleting Machine to delete when there is one too many.

    By :func:`scale_in_class`; within a class, the Machine in the most populated failure domain,
    then the oldest (then the name, for a stable answer). Taking from the fullest domain keeps
    the spread even. Beyond class 2's unhealthy voter the choice does not look at etcd: the
    preflight requires every other voter healthy, so any one member that passes it may go.
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
    """Whether the non-deleting Machines are spread unevenly (two domains differ by more than one).

    A difference of one is unavoidable whenever the count is not a multiple of the domains (3
    Machines over 2 domains), so it starts no rebalancing, which would move Machines for ever.
    """
    if len(domains) < 2:
        return False
    counts = domain_counts(domains, machines)
    return max(counts.values()) - min(counts.values()) > 1
