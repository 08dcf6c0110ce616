"""Which Machines are a ControlPlane's: one classification for every controller and webhook.

A Machine stands to a ControlPlane in the relation :func:`relate` reads from its
``ownerReferences``, its labels and its ``deletionTimestamp``:

==================  ===========================================================================
``owned``           its controller ownerReference (:func:`controller_owner`) is this ControlPlane,
                    by uid, whatever its labels say now: a Machine whose labels were edited stays
                    the ControlPlane's until it is released
``referenced``      any ownerReference is this ControlPlane, controller or not (a release that
                    stopped half-way leaves such a reference)
``matched``         ``spec.selector`` matches its labels now
``controlled``      it has a controller owner at all (this ControlPlane or another controller)
``deleting``        it carries a ``deletionTimestamp``
==================  ===========================================================================

and from those, the three classes the ControlPlane controller acts on (:class:`Relation`):
**owned**; **adoptable**: matched, no controller owner, not being deleted (adopting a dying
Machine would only make the ControlPlane replace it); **foreign**: matched, but another
controller owns it (left alone and reported).

Each user keeps its own filter, one documented line over this classification
(:class:`ControlPlaneMachines`):

* the ControlPlane controller manages :attr:`~ControlPlaneMachines.owned`, adopts
  :attr:`~ControlPlaneMachines.adoptable` and reports :attr:`~ControlPlaneMachines.foreign`;
* the etcd-quorum-hook controller guards :attr:`~ControlPlaneMachines.guarded`: every owned
  Machine and every Machine the selector matches, deleting ones included (their members are the
  ones it removes) and other controllers' (their members must stay mapped to a Machine, or they
  would count as members without one);
* a ControlPlane's release drops its reference from :attr:`~ControlPlaneMachines.referenced`;
* the admission webhook counts :attr:`~ControlPlaneMachines.counted` (matched and not being
  deleted: what an Active ControlPlane would adopt or be refused over) and refuses the
  :attr:`~ControlPlaneMachines.foreign` among them.

>>> cp_uid = "uid-1"
>>> selector = {"matchLabels": {"role": "master", "cluster": "a"}}
>>> mine = {"metadata": {"name": "m0", "labels": {"role": "master", "cluster": "b"},
...         "ownerReferences": [{"kind": "ControlPlane", "name": "cp", "uid": cp_uid,
...                              "controller": True}]}}
>>> loose = {"metadata": {"name": "m1", "labels": {"role": "master", "cluster": "a"}}}
>>> machines = ControlPlaneMachines.of(cp_uid, selector, [mine, loose])
>>> machines.names(machines.owned), machines.names(machines.adoptable), machines.names(machines.guarded)
(['m0'], ['m1'], ['m0', 'm1'])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from .controlplane import GROUP as CONTROLPLANE_GROUP
from .controlplane import KIND as CONTROLPLANE_KIND
from .selector import selector_matches

__all__ = [
    "ControlPlaneMachines",
    "MachineRelation",
    "Relation",
    "controller_owner",
    "controlling_controlplane",
    "references",
    "relate",
]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def controller_owner(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``metadata.ownerReferences`` entry with ``controller: true``, or None.

    Only the boolean ``true`` counts, as in Kubernetes (``metav1.GetControllerOf``): the API
    server stores the field as a boolean, and an object has at most one such reference.
    """
    for ref in _mapping(obj.get("metadata")).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def references(obj: Mapping[str, Any], uid: str | None) -> bool:
    """Whether any ``metadata.ownerReferences`` entry of ``obj`` names ``uid``, controller or
    not (None, an owner not created yet, is named by nothing)."""
    refs = _mapping(obj.get("metadata")).get("ownerReferences") or ()
    return uid is not None and any(isinstance(ref, Mapping) and ref.get("uid") == uid for ref in refs)


def controlling_controlplane(obj: Mapping[str, Any]) -> str | None:
    """The name of the ControlPlane (any version of ``controlplane.cpo.dev``) that controls
    ``obj``, or None: the controller owner of :func:`controller_owner` read by kind and group,
    for a reader that has no ControlPlane at hand to compare uids with (an event's mapping, the
    MachineHealthCheck's hand-off). The owner is in the object's namespace, as every namespaced
    owner is."""
    owner = controller_owner(obj)
    if owner is None or owner.get("kind") != CONTROLPLANE_KIND:
        return None
    if str(owner.get("apiVersion") or "").partition("/")[0] != CONTROLPLANE_GROUP:
        return None
    name = owner.get("name")
    return str(name) if name else None


class Relation(StrEnum):
    """What the ControlPlane controller does with a Machine."""

    OWNED = "owned"
    """Controlled by this ControlPlane: managed (scaled, rolled out, remediated)."""
    ADOPTABLE = "adoptable"
    """Matched, controlled by nobody, not being deleted: the ControlPlane adopts it."""
    FOREIGN = "foreign"
    """Matched, controlled by another controller: left alone, reported."""
    UNRELATED = "unrelated"
    """None of those (a deleting unowned Machine the selector matches is unrelated here, but
    still :attr:`MachineRelation.guarded`)."""


@dataclass(frozen=True)
class MachineRelation:
    """How one Machine stands to one ControlPlane (see the module's table)."""

    name: str
    owned: bool
    referenced: bool
    matched: bool
    controlled: bool
    deleting: bool

    @property
    def relation(self) -> Relation:
        if self.owned:
            return Relation.OWNED
        if not self.matched:
            return Relation.UNRELATED
        if self.controlled:
            return Relation.FOREIGN
        return Relation.UNRELATED if self.deleting else Relation.ADOPTABLE

    @property
    def guarded(self) -> bool:
        """The etcd-quorum hook's: owned, or matched by the selector (deleting and foreign ones
        included)."""
        return self.owned or self.matched

    @property
    def counted(self) -> bool:
        """The admission webhook's: matched and not being deleted."""
        return self.matched and not self.deleting


MachineT = TypeVar("MachineT", bound=Mapping[str, Any])
"""The Machines' type (wire dicts); what a user's filter gives back is what it was given."""


def relate(cp_uid: str | None, selector: Mapping[str, Any], machine: Mapping[str, Any]) -> MachineRelation:
    """How ``machine`` stands to the ControlPlane with uid ``cp_uid`` (None: one not created
    yet, which owns nothing) and ``selector`` (a wire ``LabelSelector``)."""
    metadata = _mapping(machine.get("metadata"))
    owner = controller_owner(machine)
    return MachineRelation(
        name=str(metadata.get("name") or ""),
        owned=cp_uid is not None and owner is not None and owner.get("uid") == cp_uid,
        referenced=references(machine, cp_uid),
        matched=selector_matches(selector, metadata.get("labels")),
        controlled=owner is not None,
        deleting=bool(metadata.get("deletionTimestamp")),
    )


@dataclass(frozen=True)
class ControlPlaneMachines(Generic[MachineT]):
    """One namespace's Machines, each with its :class:`MachineRelation` to one ControlPlane, in
    the order given; every user's set is a filter over :attr:`all`."""

    all: tuple[tuple[MachineRelation, MachineT], ...]

    @classmethod
    def of(
        cls, cp_uid: str | None, selector: Mapping[str, Any], machines: Iterable[MachineT]
    ) -> ControlPlaneMachines[MachineT]:
        return cls(tuple((relate(cp_uid, selector, machine), machine) for machine in machines))

    def _where(self, keep: Callable[[MachineRelation], bool]) -> list[MachineT]:
        return [machine for relation, machine in self.all if keep(relation)]

    @property
    def owned(self) -> list[MachineT]:
        """The ControlPlane controller manages these."""
        return self._where(lambda r: r.relation is Relation.OWNED)

    @property
    def adoptable(self) -> list[MachineT]:
        """The ControlPlane controller adopts these."""
        return self._where(lambda r: r.relation is Relation.ADOPTABLE)

    @property
    def foreign(self) -> list[MachineT]:
        """Matched but another controller's: reported by the controller, refused by the webhook."""
        return self._where(lambda r: r.relation is Relation.FOREIGN)

    @property
    def guarded(self) -> list[MachineT]:
        """The etcd-quorum-hook controller guards these (:attr:`MachineRelation.guarded`)."""
        return self._where(lambda r: r.guarded)

    @property
    def referenced(self) -> list[MachineT]:
        """A release drops the ControlPlane's reference from these."""
        return self._where(lambda r: r.referenced)

    @property
    def counted(self) -> list[MachineT]:
        """The admission webhook counts these (:attr:`MachineRelation.counted`)."""
        return self._where(lambda r: r.counted)

    @staticmethod
    def names(machines: Sequence[Mapping[str, Any]]) -> list[str]:
        """The sorted names of ``machines``."""
        return sorted(str(_mapping(m.get("metadata")).get("name") or "") for m in machines)
