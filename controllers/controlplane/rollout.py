"""Rollout of the ControlPlane: which Machine is replaced once the count is right, and how.

A replacement is a create and a delete, one at a time (the order set by ``maxSurge``), each a
separate step of :func:`~controllers.controlplane.scale.next_step` decided from fresh facts: the
etcd membership changes by one member per step, as in a scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from api.controlplane_reasons import (
    REASON_REBALANCING,
    REASON_REPLACING_OUTDATED,
    REASON_WAITING_FOR_MANUAL_DELETION,
)
from api.quorum import MIN_REPLICAS_FOR_NO_SURGE
from controllers.controlplane.machines import MachineInfo
from controllers.controlplane.placement import choose_failure_domain, is_imbalanced, select_for_scale_in
from controllers.controlplane.step import UP_TO_DATE, Step, replacing


def rollout_step(
    *,
    replicas: int,
    strategy: Literal["RollingUpdate", "OnDelete"],
    max_surge: int,
    domains: Sequence[str],
    active: Sequence[MachineInfo],
) -> Step:
    """The step when exactly ``replicas`` Machines exist and none is being deleted.

    Under RollingUpdate, replace an outdated Machine (:func:`replace_outdated_step`), else
    rebalance uneven failure domains (:func:`rebalance_step`). OnDelete only reports outdated
    Machines (:func:`on_delete_step`). maxSurge 0 is honoured only with
    :data:`~api.quorum.MIN_REPLICAS_FOR_NO_SURGE` or more replicas: deleting first with 1 replica
    would lose the only member, so smaller control planes surge by one. A create or delete
    decided here is held while the ControlPlane is Degraded by its configuration
    (:func:`~controllers.controlplane.scale.next_step`), never because a Machine is unready:
    replacing an unready Machine is what a rollout may be for.
    """
    if strategy == "OnDelete":
        return on_delete_step(active)
    surge = max_surge if replicas >= MIN_REPLICAS_FOR_NO_SURGE else 1
    outdated = [m for m in active if m.outdated]
    if outdated:
        return replace_outdated_step(outdated, surge, domains, active)
    if is_imbalanced(domains, active):
        return rebalance_step(surge, domains, active)
    return UP_TO_DATE


def on_delete_step(active: Sequence[MachineInfo]) -> Step:
    """OnDelete: nothing is replaced until a human deletes the outdated Machines (then the scale
    rules create their replacements); the outdated ones are reported."""
    outdated = [m for m in active if m.outdated]
    if not outdated:
        return UP_TO_DATE
    return Step(
        "none",
        REASON_WAITING_FOR_MANUAL_DELETION,
        f"{len(outdated)} outdated Machine(s) ({', '.join(sorted(m.name for m in outdated))}); "
        "strategy OnDelete replaces a Machine only once you delete it",
        needs_preflight=False,
    )


def replace_outdated_step(
    outdated: Sequence[MachineInfo], surge: int, domains: Sequence[str], active: Sequence[MachineInfo]
) -> Step:
    """Replace the outdated Machine the scale-in rule would pick among the outdated ones.

    maxSurge 1 creates its replacement first (then the scale-in rule deletes it: it is the
    outdated one of replicas + 1); maxSurge 0 deletes it first (then the scale-up rule creates
    the replacement), which a cluster of 3 or more members survives since every other voter was
    healthy at the preflight. The maxSurge-0 delete marks the Machine ``remove_member_first``: its
    member may go before the replacement votes, freeing the host for it where there is no spare
    (:func:`controllers.etcdquorum.early_removal.early_removal_decision` says when). Either way the
    replacement goes where :func:`~controllers.controlplane.placement.choose_failure_domain` puts
    it with the outdated Machine left out and its domain preferred on a tie: back into its domain
    in an even spread, into the emptiest domain when its own is crowded or no longer configured.
    """
    victim = select_for_scale_in(outdated)
    assert victim is not None
    if surge == 0:
        return Step(
            "delete",
            REASON_REPLACING_OUTDATED,
            replacing("outdated", victim.name, victim.failure_domain, None, "deleting it first (maxSurge 0)"),
            machine=victim.name,
            remove_member_first=True,
        )
    staying = [m for m in active if m.name != victim.name]
    domain = choose_failure_domain(domains, staying, prefer=[victim.failure_domain])
    return Step(
        "create",
        REASON_REPLACING_OUTDATED,
        replacing("outdated", victim.name, victim.failure_domain, domain, "creating its replacement"),
        domain=domain,
        machine=victim.name,
    )


def rebalance_step(surge: int, domains: Sequence[str], active: Sequence[MachineInfo]) -> Step:
    """Even out failure domains that differ by more than one Machine, the way a replacement goes.

    maxSurge 1 creates a Machine in the emptiest domain (then the scale-in rule deletes one from
    the fullest); maxSurge 0 deletes from the fullest first (then the scale-up rule creates in
    the emptiest, counting the non-deleting Machines only, so never more than ``replicas`` of
    them). One member changes per step, as in a rollout. Each step strictly narrows the gap
    between the fullest and the emptiest domain, and a difference of one is not imbalanced
    (:func:`~controllers.controlplane.placement.is_imbalanced`): the spread converges, then
    nothing moves.
    """
    if surge == 0:
        victim = select_for_scale_in(active)
        assert victim is not None
        return Step(
            "delete",
            REASON_REBALANCING,
            f"Failure domains are uneven: deleting Machine {victim.name} from {victim.failure_domain}",
            machine=victim.name,
            remove_member_first=True,
        )
    domain = choose_failure_domain(domains, active)
    return Step(
        "create",
        REASON_REBALANCING,
        f"Failure domains are uneven: creating a Machine in {domain}",
        domain=domain,
    )
