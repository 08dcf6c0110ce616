"""Admission rules for ``spec.state`` and for a ControlPlane created over existing Machines.

Adopting an existing control plane must never disrupt it. An Active ControlPlane adopts the
Machines its selector matches and at once makes their number ``spec.replicas``: created without
``replicas`` (the default is 1) over three running Machines, it would delete two. So:

* **At creation**, an Active ControlPlane (``spec.state`` absent means Active) is refused when
  its ``spec.replicas`` (given or defaulted) differs from the number of existing control-plane
  Machines its selector matches in its namespace, not counting Machines being deleted. The
  message names both numbers and says what to do: set ``spec.replicas`` to that number, or create
  the ControlPlane with ``spec.state: Inactive`` to see first what it would do
  (:mod:`controllers.controlplane.inactive`). When no such Machine exists the cluster is new and
  any valid count is accepted, so a ControlPlane on an empty cluster bootstraps with no extra
  step. An Inactive ControlPlane is never checked: it acts on nothing.
* **Inactive → Active** is checked the same way, against the Machines existing then.
* Later scale changes (``spec.replicas``, ``kubectl scale``) are not compared with the existing
  Machines: once Active, changing the count is what the user asks for.
* **Machines another controller controls** (a ``controller: true`` ownerReference, e.g. another
  ControlPlane's) that the selector matches are refused at creation and activation of an Active
  ControlPlane, whatever the count: the controller never adopts them
  (:attr:`api.ownership.ControlPlaneMachines.foreign`), so it would create Machines of
  its own beside them (etcd members it cannot count). See :func:`controlled_elsewhere_errors`.
* **Machines in a failure domain the ControlPlane does not list** are refused at creation and
  activation of an Active ControlPlane that lists failure domains: it would replace them at once
  (a Machine outside ``spec.failureDomains`` is rebalanced). The message gives both lists, the
  domains listed and the domains the Machines run in, and names each Machine it would replace,
  one whose domain cannot be told included. See :func:`unlisted_domain_errors`.
* **Active → Inactive** is refused: an Active ControlPlane owns its Machines and may be in the
  middle of a replacement; stopping half-way is not a state to leave a control plane in. Delete
  the ControlPlane to make the controller stop acting (its Machines are released and stay).

These follow OpenShift's ControlPlaneMachineSet (CPMS), whose webhook compares an Active
set's replicas with the control-plane Machines at creation and whose API forbids leaving
Active. We differ in three ways: the state defaults to Active (see :data:`api.controlplane.DEFAULT_STATE`),
so zero existing Machines must pass; the count is taken over the Machines the ControlPlane's own
selector matches in its namespace (not every control-plane Machine of the cluster) and leaves out
Machines being deleted (they will not be adopted); and activation is checked too, since an
Inactive ControlPlane's Machines may have changed since its creation.

The webhook answers in every operator replica, leader or not, so the Machines are read through a
:data:`MachineLister`, in the operator the manager's cache (:func:`machines_from_reader`), whose
informers run in every replica (caches are not leader-election runnables). That cache holds
only control-plane Machines, which is all a valid selector can match: it must require the
control-plane role label (:func:`webhooks.controlplane_selector.selector_role_errors`).

>>> spec = {"replicas": 1, "state": "Active", "selector": {"matchLabels": {"role": "master"}}}
>>> machines = [{"metadata": {"name": f"m{i}", "labels": {"role": "master"}}} for i in range(3)]
>>> for error in adoption_errors(spec, existing_machines(spec, machines), activating=False):
...     print(error)  # doctest: +NORMALIZE_WHITESPACE
spec.replicas: Invalid value: 1: 3 control-plane Machine(s) matching spec.selector exist and
spec.replicas is 1: an Active ControlPlane would delete 2 of them; set spec.replicas to 3 to adopt
them as they are, or create the ControlPlane with spec.state Inactive to see first what it would do
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from api.controlplane import DEFAULT_STATE, KIND, STATE_ACTIVE, STATE_INACTIVE, STATES, ControlPlaneSpec
from api.failuredomains import (
    FAILURE_DOMAIN_LABEL,
    ZONE_LABEL,
    domain_names,
    machine_domain,
    provider_spec_zone,
)
from api.machine import API_VERSION as MACHINE_API_VERSION
from api.ownership import ControlPlaneMachines, Relation, controller_owner, relate
from runtime.jsoncodec import JSON

from .field import FieldError, forbidden, invalid, not_supported

MachineLister = Callable[[str], Awaitable[list[JSON]]]
"""``async (namespace) -> the Machines of that namespace`` (the operator: its cache's)."""


class ListReader(Protocol):
    """Anything with the client's ``list`` (the runtime Cache, or the Client)."""

    async def list(self, api_version: str, kind: str, *, namespace: str | None = None) -> Any: ...


def machines_from_reader(reader: ListReader) -> MachineLister:
    """A :data:`MachineLister` over a cache (a list of objects) or a client (a list object)."""

    async def list_machines(namespace: str) -> list[JSON]:
        found = await reader.list(MACHINE_API_VERSION, "Machine", namespace=namespace)
        return list(found["items"] if isinstance(found, Mapping) else found)

    return list_machines


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def state_of(spec: Mapping[str, Any]) -> Any:
    """``spec.state``, absent meaning the default (Active)."""
    state = spec.get("state")
    return DEFAULT_STATE if state is None else state


def state_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """``spec.state`` is Active or Inactive."""
    state = state_of(spec)
    return [] if state in STATES else [not_supported("spec.state", state, STATES)]


def state_transition_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[FieldError]:
    """Active never goes back to Inactive (CPMS's rule); Inactive → Active is allowed."""
    if state_of(old_spec) == STATE_ACTIVE and state_of(new_spec) == STATE_INACTIVE:
        return [
            forbidden(
                "spec.state",
                "cannot go back to Inactive once Active; to make the controller stop acting on these "
                "Machines, delete the ControlPlane (its Machines are released and stay)",
            )
        ]
    return []


def activates(old_spec: Mapping[str, Any] | None, new_spec: Mapping[str, Any]) -> bool:
    """Whether this request makes an Active ControlPlane out of none or an Inactive one: the
    moments the existing Machines are compared with ``spec.replicas``."""
    if state_of(new_spec) != STATE_ACTIVE:
        return False
    return old_spec is None or state_of(old_spec) == STATE_INACTIVE


def counted_machines(
    spec: Mapping[str, Any], machines: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The ``machines`` (one namespace's) the webhook counts: those ``spec.selector`` matches that
    are not being deleted, which an Active ControlPlane would adopt or be refused over
    (:attr:`api.ownership.ControlPlaneMachines.counted`)."""
    return ControlPlaneMachines.of(None, _mapping(spec.get("selector")), machines).counted


def existing_machines(spec: Mapping[str, Any], machines: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names of the :func:`counted_machines`."""
    return ControlPlaneMachines.names(counted_machines(spec, machines))


def controlled_elsewhere(
    spec: Mapping[str, Any], machines: Sequence[Mapping[str, Any]], uid: str | None = None
) -> list[tuple[str, str]]:
    """``(machine, "Kind name")`` for the ``machines`` :func:`existing_machines` counts that
    another controller controls than the ControlPlane with this ``uid`` (None: a new one,
    controlling nothing): the counted ones of :attr:`api.ownership.ControlPlaneMachines.foreign`."""
    found = []
    for machine in machines:
        relation = relate(uid, _mapping(spec.get("selector")), machine)
        owner = controller_owner(machine)
        if relation.counted and relation.relation is Relation.FOREIGN and owner is not None:
            found.append((relation.name, f"{owner.get('kind')} {owner.get('name')}"))
    return sorted(found)


def controlled_elsewhere_errors(
    spec: Mapping[str, Any],
    foreign: Sequence[tuple[str, str]],
    adoptable: int,
    *,
    activating: bool,
) -> list[FieldError]:
    """Refuse an Active ControlPlane whose selector matches Machines another controller controls.

    The anchor, OpenShift's ControlPlaneMachineSet, cannot have this case: its webhook
    (``pkg/webhooks/controlplanemachineset/webhooks.go``, ``validateMetadata``) requires the name
    ``cluster``, one set per cluster, and ``validateSpecOnCreate`` compares ``replicas`` with every
    control-plane Machine (``fetchControlPlaneMachines``). We allow several ControlPlanes, so the
    overlap is refused here: the controller leaves such Machines alone and would create its own
    (``adoptable``: the matched Machines it would adopt), or hold its rollouts while they exist.
    """
    if not foreign:
        return []
    machines = ", ".join(name for name, _ in foreign)
    owners = ", ".join(sorted({owner for _, owner in foreign}))
    replicas = spec.get("replicas", 1)
    missing = replicas - adoptable if isinstance(replicas, int) else 0
    effect = (
        f"would create {missing} Machine(s) of its own beside them"
        if missing > 0
        else "would hold every rollout and scale-in while they exist"
    )
    other = (
        "or keep spec.state Inactive"
        if activating
        else "or create this ControlPlane with spec.state Inactive to see first what it would do"
    )
    release = (
        f"delete {owners} first (its Machines are released and stay)"
        if all(owner.startswith(f"{KIND} ") for _, owner in foreign)
        else f"release them first (delete {owners} with --cascade=orphan)"
    )
    return [
        forbidden(
            "spec.selector",
            f"Machine(s) {machines} matching spec.selector are controlled by {owners}: an Active "
            f"ControlPlane never adopts them and {effect}; {release} and then create or activate "
            f"this one, or use a selector those Machines do not match, {other}",
        )
    ]


def adoption_errors(
    spec: Mapping[str, Any], existing: Sequence[str], *, activating: bool
) -> list[FieldError]:
    """``spec.replicas`` equals the number of ``existing`` Machines, unless there are none.

    ``activating``: the request turns an Inactive ControlPlane Active (else: creates one); only
    the advice differs. With stacked etcd an even count cannot be the advice (replicas must be
    odd): the advice is then to make the count odd (add or delete one control-plane Machine)
    while the ControlPlane is Inactive, and to activate it with that count.
    """
    replicas = spec.get("replicas", 1)
    if not existing or not isinstance(replicas, int) or replicas == len(existing):
        return []
    count = len(existing)
    effect = (
        f"would delete {count - replicas} of them"
        if replicas < count
        else f"would create {replicas - count} more at once"
    )
    stacked_even = count % 2 == 0 and _mapping(spec.get("etcd")).get("external") is not True
    if stacked_even:
        advice = (
            "an even number of stacked etcd members cannot be adopted as it is (spec.replicas must "
            "be odd): make the count odd while the ControlPlane is Inactive (add or delete one "
            "control-plane Machine), then set spec.replicas to that count and make it Active"
        )
        other = "" if activating else " (create it with spec.state Inactive)"
    else:
        advice = f"set spec.replicas to {count} to adopt them as they are"
        other = (
            ", or keep spec.state Inactive"
            if activating
            else ", or create the ControlPlane with spec.state Inactive to see first what it would do"
        )
    return [
        invalid(
            "spec.replicas",
            replicas,
            f"{count} control-plane Machine(s) matching spec.selector exist and spec.replicas is "
            f"{replicas}: an Active ControlPlane {effect}; {advice}{other}",
        )
    ]


# ------------------------------------------------------------------- failure domains at adoption

UNKNOWN_PLACE: Final = "unknown"
"""What :func:`machine_places` says of a Machine whose failure domain cannot be told."""


@dataclass(frozen=True)
class MachinePlace:
    """Where one counted Machine runs, as :func:`unlisted_domain_errors` reports it."""

    machine: str
    place: str
    """A failure domain's name, ``zone <zone>`` (a zone no listed domain was found for), or
    :data:`UNKNOWN_PLACE`."""
    listed: bool
    """Its failure domain is one of ``spec.failureDomains``: adopting it replaces nothing."""


def _spec_model(spec: Mapping[str, Any]) -> ControlPlaneSpec | None:
    try:
        return ControlPlaneSpec.model_validate(spec)
    except ValueError:
        return None  # the schema refuses it before this rule could matter


def machine_places(
    spec: Mapping[str, Any], machines: Sequence[Mapping[str, Any]]
) -> list[MachinePlace] | None:
    """Where each of ``machines`` (the :func:`counted_machines`) runs, sorted by name; None when
    ``spec`` configures no failure domain (one implicit domain: there is nothing to compare).

    A Machine's domain is read by the controllers' one reader,
    :func:`api.failuredomains.machine_domain`, so the webhook and the controller cannot disagree
    about which Machines an Active ControlPlane would replace (the controller replaces a Machine
    whose domain is not listed: ``FailureDomainNotConfigured``). A Machine it places in no listed
    domain is described by what it carries: its ``FAILURE_DOMAIN_LABEL`` (a domain this or an
    earlier ControlPlane created it in), else its zone (the ``ZONE_LABEL`` label, else the zone
    its providerSpec names), else :data:`UNKNOWN_PLACE`: its failure domain cannot be told.
    """
    model = _spec_model(spec)
    if model is None or not model.failure_domains:
        return None
    listed = domain_names(model)
    places = []
    for machine in machines:
        metadata = _mapping(machine.get("metadata"))
        name = str(metadata.get("name", ""))
        domain = machine_domain(model, machine)
        if domain is not None and domain in listed:
            places.append(MachinePlace(name, domain, True))
            continue
        labels = _mapping(metadata.get("labels"))
        value = _mapping(_mapping(_mapping(machine.get("spec")).get("providerSpec")).get("value"))
        zone = labels.get(ZONE_LABEL) or provider_spec_zone(value)
        if labels.get(FAILURE_DOMAIN_LABEL):
            place = str(labels[FAILURE_DOMAIN_LABEL])
        elif zone:
            place = f"zone {zone}"
        else:
            place = UNKNOWN_PLACE
        places.append(MachinePlace(name, place, False))
    return sorted(places, key=lambda p: p.machine)


def _seen(listed: Sequence[str], places: Sequence[MachinePlace]) -> list[str]:
    """The places the Machines run in: listed domains in spec order, then the others by name,
    :data:`UNKNOWN_PLACE` last."""
    found = {p.place for p in places}
    others = sorted(found - set(listed) - {UNKNOWN_PLACE})
    return [d for d in listed if d in found] + others + ([UNKNOWN_PLACE] if UNKNOWN_PLACE in found else [])


def unlisted_domain_errors(
    spec: Mapping[str, Any], places: Sequence[MachinePlace] | None, *, activating: bool
) -> list[FieldError]:
    """Refuse an Active ControlPlane whose ``spec.failureDomains`` leave out a failure domain a
    Machine it would adopt runs in (``places``: :func:`machine_places`; None: nothing to compare).

    An Active ControlPlane replaces every Machine outside the listed domains at once
    (:func:`controllers.controlplane.placement.outdated_reason`, ``FailureDomainNotConfigured``):
    created over a healthy control plane with a domain forgotten, it would start replacing
    Machines nobody asked to replace. The refusal names both lists (the listed domains, and the
    domains the Machines run in) and each Machine it would replace with where it runs; a Machine
    whose domain cannot be told (:data:`UNKNOWN_PLACE`) is one of them, since the controller
    replaces it too.

    This is the ControlPlaneMachineSet webhook's create-time rule (``validateSpecOnCreate``: its
    Machines' failure domains, read from their providerSpecs, must all be among the set's, else
    "control plane machines are using unspecified failure domain(s)"), with our differences: it
    is checked when the ControlPlane becomes Active (created Active, or Inactive → Active), not at
    the creation of an Inactive one, which acts on nothing and is how a user sees first what the
    ControlPlane would do; it is taken over the Machines this ControlPlane's selector matches in
    its namespace (:func:`counted_machines`), not every control-plane Machine of the cluster; and
    CPMS's other direction (a listed domain no Machine uses) is not refused: a ControlPlane
    spreads its next Machines into such a domain and replaces none for it.
    """
    if places is None:
        return []
    unlisted = [p for p in places if not p.listed]
    if not unlisted:
        return []
    listed = [str(_mapping(d).get("name")) for d in spec.get("failureDomains") or ()]
    replaced = ", ".join(
        f"{p.machine} (its failure domain cannot be told)"
        if p.place == UNKNOWN_PLACE
        else f"{p.machine} ({p.place})"
        for p in unlisted
    )
    other = (
        ", or keep spec.state Inactive"
        if activating
        else ", or create the ControlPlane with spec.state Inactive to see first what it would do"
    )
    return [
        forbidden(
            "spec.failureDomains",
            f"spec.failureDomains lists [{', '.join(listed)}] and the control-plane Machines matching "
            f"spec.selector run in [{', '.join(_seen(listed, places))}]: an Active ControlPlane would "
            f"replace {replaced} at once; add a failure domain for each place they run in (its "
            f"providerSpec naming their zone) to adopt them as they are{other}",
        )
    ]
