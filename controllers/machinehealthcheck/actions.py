"""What a MachineHealthCheck does about each Machine it checks: one pure choice per target.

The reconciler gathers the facts (:class:`Target`: the Machine, its Node and the health
:class:`~controllers.machinehealthcheck.health.Verdict`; :class:`CheckFacts`: paused, the
short-circuit, ``spec.remediationTemplate``), calls :func:`choose_action` for each target and
carries the :class:`Action` out. Nothing here reads a clock, a cache or the network, so the
choice is a table test (``tests/unit/controllers/machinehealthcheck/test_actions.py``).

The kinds of action, the machine-api-operator's remediation with the hand-off of a ControlPlane's
Machines to their ControlPlane:

============  ===================================================================================
``mark``      set :attr:`Action.conditions` on the Machine (``HealthCheckSucceeded=False``,
              ``OwnerRemediated=False``), count a remediation, event ``MachineMarkedUnhealthy``
``external``  create the remediation request from ``spec.remediationTemplate`` (when it does not
              exist yet)
``skip``      event ``SkippedNoController``, nothing else
``delete``    delete the Machine (its controller owner replaces it), event ``MachineDeleted``
``clear``     a recovered Machine: delete its remediation request (:attr:`Action.delete_request`)
              and/or take our mark back (:attr:`Action.conditions`)
``leave``     nothing (:attr:`Action.why` says why)
============  ===================================================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from api.ownership import controller_owner
from controllers.conditions import changes, conditions_of
from runtime.jsoncodec import JSON

from .health import Verdict, counts_as_healthy, target_health
from .marks import is_owned_by_controlplane, mark_conditions, recovered_conditions

ActionKind = Literal["mark", "external", "skip", "delete", "clear", "leave"]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def is_deleting(obj: Mapping[str, Any]) -> bool:
    """Whether deletion of ``obj`` was requested (``metadata.deletionTimestamp`` set)."""
    return bool(_mapping(obj.get("metadata")).get("deletionTimestamp"))


# ---------------------------------------------------------------------------------------------- facts


@dataclass(frozen=True)
class Target:
    """One Machine the MachineHealthCheck selects, as gathered: its Node and how it was judged."""

    machine: JSON
    node: JSON | None
    """The Node of ``status.nodeRef``; None without nodeRef or when that Node does not exist."""
    verdict: Verdict
    healthy: bool
    """What ``status.currentHealthy`` counts
    (:func:`~controllers.machinehealthcheck.health.counts_as_healthy`)."""

    @classmethod
    def judge(cls, machine: JSON, node: JSON | None, spec: Mapping[str, Any], now: datetime) -> Target:
        """The target with its verdict under the MachineHealthCheck ``spec`` at ``now``."""
        verdict = target_health(machine, node, spec, now)
        return cls(machine, node, verdict, counts_as_healthy(machine, node, verdict))

    @property
    def name(self) -> str:
        return str(self.machine["metadata"]["name"])

    def describe(self, mhc: Mapping[str, Any]) -> str:
        """``namespace/mhc/machine/node``, the machine-api-operator's target string."""
        meta = mhc["metadata"]
        node = _mapping(_mapping(self.machine.get("status")).get("nodeRef")).get("name", "")
        return f"{meta.get('namespace')}/{meta.get('name')}/{self.name}/{node}"

    def facts(self) -> TargetFacts:
        """What :func:`choose_action` reads of this target."""
        return TargetFacts(
            verdict=self.verdict,
            healthy=self.healthy,
            deleting=is_deleting(self.machine),
            controlplane_owned=is_owned_by_controlplane(self.machine),
            has_controller=controller_owner(self.machine) is not None,
            conditions=tuple(conditions_of(self.machine)),
        )


@dataclass(frozen=True)
class TargetFacts:
    """The facts about one Machine that decide its action."""

    verdict: Verdict
    healthy: bool
    """Counted healthy: not being deleted, has its Node, neither unhealthy nor pending, and no
    ``host.metal3.io/external-remediation`` annotation (an external remediator is not done)."""
    deleting: bool = False
    controlplane_owned: bool = False
    """Its controller owner is a ControlPlane: it is only marked."""
    has_controller: bool = True
    """It has a controller owner at all (a MachineSet, a ControlPlane, …)."""
    conditions: Sequence[Mapping[str, Any]] = ()
    """Its stored ``status.conditions``: whether the mark is there already."""


@dataclass(frozen=True)
class CheckFacts:
    """The facts about the MachineHealthCheck that decide every target's action."""

    paused: bool = False
    """It carries ``cluster.x-k8s.io/paused``."""
    allowed: bool = True
    """The short-circuit lets remediation proceed
    (:func:`~controllers.machinehealthcheck.health.short_circuit`)."""
    external: bool = False
    """It has a ``spec.remediationTemplate``."""


# ---------------------------------------------------------------------------------------------- action


@dataclass(frozen=True)
class Action:
    """What to do about one target; see the module docstring for each kind."""

    kind: ActionKind
    why: str
    """The rule that chose it, in words (for logs and tests)."""
    conditions: Mapping[str, JSON | None] = field(default_factory=dict)
    """``mark`` and ``clear``: the Machine conditions to set (None: remove that type); empty for a
    ``clear`` with no mark to take back."""
    delete_request: bool = False
    """``clear``: delete the Machine's external remediation request."""


def choose_action(target: TargetFacts, check: CheckFacts) -> Action:
    """The action for one target, by the first rule that decides, in this order:

    1. :func:`paused_rule`: a paused MachineHealthCheck acts on nothing (recovery included);
    2. :func:`recovered_rule`: a healthy Machine gets its remediation request deleted and our
       mark taken back, whatever the short-circuit says;
    3. :func:`not_unhealthy_rule`: a Machine neither healthy nor unhealthy (a timeout running,
       no Node yet, being deleted, under external remediation) is left as it is;
    4. :func:`short_circuit_rule`: while short-circuited, no unhealthy Machine is remediated;
    5. :func:`deleting_rule`: an unhealthy Machine already being deleted is left alone;
    6. :func:`controlplane_rule`: one owned by a ControlPlane is marked (never deleted here);
    7. :func:`external_rule`: with ``spec.remediationTemplate``, an external request is made;
    8. :func:`no_controller_rule`: without a controller owner, nothing replaces it: skipped;
    9. else it is deleted, and its controller owner replaces it.

    That is the machine-api-operator's ``remediate`` (a Machine being deleted is never deleted
    twice; external remediation before deletion; ``SkippedNoController`` for an orphan), with
    its ``maxUnhealthy`` short-circuit, the ``cluster.x-k8s.io/paused`` annotation, and the
    ControlPlane hand-off ahead of both external remediation and deletion: etcd quorum decides
    when a control-plane Machine goes, and only the ControlPlane knows it.
    """
    return (
        paused_rule(check)
        or recovered_rule(target, check)
        or not_unhealthy_rule(target)
        or short_circuit_rule(check)
        or deleting_rule(target)
        or controlplane_rule(target)
        or external_rule(check)
        or no_controller_rule(target)
        or Action("delete", "unhealthy, with a controller owner that replaces it")
    )


def paused_rule(check: CheckFacts) -> Action | None:
    """``cluster.x-k8s.io/paused`` stops every remediation and every clean-up after recovery."""
    return Action("leave", "the MachineHealthCheck is paused") if check.paused else None


def recovered_rule(target: TargetFacts, check: CheckFacts) -> Action | None:
    """A healthy Machine: its remediation request goes (remediation succeeded; with
    ``spec.remediationTemplate`` only), and, owned by a ControlPlane, the mark its owner has not
    acted on is taken back (:func:`~controllers.machinehealthcheck.marks.recovered_conditions`),
    when that changes anything. Not subject to the short-circuit: it removes no Machine."""
    if not target.healthy:
        return None
    wanted = recovered_conditions(target.conditions) if target.controlplane_owned else {}
    conditions = wanted if changes(target.conditions, wanted) else {}
    if not check.external and not conditions:
        return Action("leave", "healthy, nothing to clean up")
    return Action("clear", "healthy again", conditions=conditions, delete_request=check.external)


def not_unhealthy_rule(target: TargetFacts) -> Action | None:
    """Only an unhealthy verdict is remediated; a pending one is looked at again when its timeout
    expires."""
    return None if target.verdict.unhealthy else Action("leave", "not unhealthy (yet)")


def short_circuit_rule(check: CheckFacts) -> Action | None:
    """More Machines not healthy than ``maxUnhealthy`` tolerates: the fault is likely elsewhere,
    and remediating would make it worse."""
    return None if check.allowed else Action("leave", "remediation is short-circuited (maxUnhealthy)")


def deleting_rule(target: TargetFacts) -> Action | None:
    """A Machine already on its way out is never deleted (or marked) twice."""
    return Action("leave", "already being deleted") if target.deleting else None


def controlplane_rule(target: TargetFacts) -> Action | None:
    """A ControlPlane's Machine is marked, for its ControlPlane to replace when that keeps etcd
    quorum; when the mark is already there (nothing :func:`~controllers.conditions.changes`) there
    is nothing to do, and no second remediation is counted."""
    if not target.controlplane_owned:
        return None
    wanted = mark_conditions(target.conditions, target.verdict)
    if not changes(target.conditions, wanted):
        return Action("leave", "already marked for its ControlPlane")
    return Action("mark", "unhealthy, owned by a ControlPlane", conditions=wanted)


def external_rule(check: CheckFacts) -> Action | None:
    """With ``spec.remediationTemplate``, an external remediator acts on a request made from it."""
    return Action("external", "unhealthy, external remediation") if check.external else None


def no_controller_rule(target: TargetFacts) -> Action | None:
    """Without a controller owner nothing would replace the Machine: it is not deleted."""
    return None if target.has_controller else Action("skip", "unhealthy, but no controller owner")


def plan(targets: Sequence[Target], check: CheckFacts) -> list[tuple[Target, Action]]:
    """Every target with its action, remediations first (in the targets' order), then clean-ups
    after recovery; targets left alone are dropped."""
    chosen = [(t, choose_action(t.facts(), check)) for t in targets]
    return [(t, a) for t, a in chosen if a.kind not in ("leave", "clear")] + [
        (t, a) for t, a in chosen if a.kind == "clear"
    ]
