"""The health decision of a MachineHealthCheck, as pure functions of the objects and the time.

Nothing here reads a clock, a cache or the network: every function takes the Machine and Node
dicts as the API server serves them and ``now`` (an aware UTC datetime), so the whole decision is
tested as a table (``tests/unit/controllers/machinehealthcheck/test_health.py``). One function per rule:

=================================  ==============================================================
:func:`check_failed_phase`         ``status.phase: Failed`` is unhealthy at once.
:func:`check_node_startup`         no ``status.nodeRef`` once ``status.lastUpdated`` +
                                   ``nodeStartupTimeout`` has passed (``"0"`` disables the check;
                                   no ``lastUpdated`` yet: look again after the whole timeout).
:func:`check_node_exists`          ``status.nodeRef`` names a Node that does not exist: at once.
:func:`check_unhealthy_conditions` a Node condition with an entry's ``type`` and ``status`` for
                                   longer than its ``timeout`` (from ``lastTransitionTime``).
:func:`target_health`              the checks above, ORed: the first unhealthy verdict, else the
                                   earliest moment one of them will turn unhealthy.
:func:`counts_as_healthy`          what ``status.currentHealthy`` counts.
:func:`parse_max_unhealthy`        ``spec.maxUnhealthy`` (count or percentage) to a number.
:func:`short_circuit`              the short-circuit: may anything be remediated right now?
=================================  ==============================================================

A target that is not unhealthy *yet* carries ``recheck_after``: the seconds until the earliest
timeout it is running against expires, plus one second, so the controller requeues at exactly the
moment the verdict flips instead of polling.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from api.controlplane import UNHEALTHY_MACHINE_CONDITIONS_ANNOTATION
from api.machine import (
    PHASE_FAILED,
    REASON_MACHINE_HAS_FAILURE,
    REASON_NODE_NOT_FOUND,
    REASON_NODE_STARTUP_TIMEOUT,
    REASON_UNHEALTHY_MACHINE_CONDITION,
    REASON_UNHEALTHY_NODE,
)
from api.meta import parse_duration
from controllers.common import format_time, parse_time

EXTERNAL_REMEDIATION_ANNOTATION = "host.metal3.io/external-remediation"
"""A Machine carrying this annotation is being remediated by an external remediator (bare metal):
it does not count as healthy until the remediator removes it."""

DEFAULT_NODE_STARTUP_TIMEOUT = "10m"
RECHECK_MARGIN = timedelta(seconds=1)
"""Requeue this long after a timeout expires, so the next look sees it expired."""


@dataclass(frozen=True)
class Verdict:
    """What one check (or all of them) says about one Machine."""

    unhealthy: bool = False
    """True when the Machine needs remediation now."""
    reason: str = ""
    """Which check failed (``MachineHasFailure``, ``NodeStartupTimeout``, ``NodeNotFound``,
    ``UnhealthyNode``); empty when healthy."""
    message: str = ""
    """What failed and since when, in words; empty when healthy."""
    since: datetime | None = None
    """When the failing state began (``None`` when unknown or healthy)."""
    recheck_after: float | None = None
    """Seconds until this Machine turns unhealthy if nothing changes (+1 s); ``None`` when no
    timeout is running. Only set on a verdict that is not unhealthy."""

    @property
    def pending(self) -> bool:
        """Not unhealthy yet, but a timeout is running against it."""
        return not self.unhealthy and self.recheck_after is not None


HEALTHY = Verdict()


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _until(deadline: datetime, now: datetime) -> float:
    return (deadline - now + RECHECK_MARGIN).total_seconds()


def _node_ref_name(machine: Mapping[str, Any]) -> str | None:
    name = _mapping(_mapping(machine.get("status")).get("nodeRef")).get("name")
    return name if isinstance(name, str) and name else None


# ------------------------------------------------------------------------------------ the rules


def check_failed_phase(machine: Mapping[str, Any]) -> Verdict:
    """A Machine in phase ``Failed`` is unhealthy at once: its provider gave up on it."""
    status = _mapping(machine.get("status"))
    if status.get("phase") != PHASE_FAILED:
        return HEALTHY
    detail = status.get("errorMessage") or status.get("errorReason") or "no error message"
    return Verdict(
        unhealthy=True,
        reason=REASON_MACHINE_HAS_FAILURE,
        message=f"Machine is in phase {PHASE_FAILED}: {detail}",
    )


def check_node_startup(machine: Mapping[str, Any], node_startup_timeout: timedelta, now: datetime) -> Verdict:
    """A Machine without ``status.nodeRef`` is unhealthy once ``lastUpdated`` + the timeout has passed.

    A zero timeout disables the check. Without ``status.lastUpdated`` (the provider has not
    written status yet) the Machine is not unhealthy, and is looked at again after the whole
    timeout. A Machine that has a nodeRef passes this check.
    """
    if _node_ref_name(machine) is not None or node_startup_timeout <= timedelta(0):
        return HEALTHY
    last_updated = parse_time(_mapping(machine.get("status")).get("lastUpdated"))
    if last_updated is None:
        return Verdict(recheck_after=(node_startup_timeout + RECHECK_MARGIN).total_seconds())
    deadline = last_updated + node_startup_timeout
    if now > deadline:
        return Verdict(
            unhealthy=True,
            reason=REASON_NODE_STARTUP_TIMEOUT,
            message=(
                f"Machine has no Node since {format_time(last_updated)}, longer than the "
                f"nodeStartupTimeout of {_seconds(node_startup_timeout)}"
            ),
            since=last_updated,
        )
    return Verdict(recheck_after=_until(deadline, now))


def check_node_exists(machine: Mapping[str, Any], node: Mapping[str, Any] | None) -> Verdict:
    """A Machine whose ``status.nodeRef`` names a Node that does not exist is unhealthy at once."""
    name = _node_ref_name(machine)
    if name is None or node is not None:
        return HEALTHY
    return Verdict(
        unhealthy=True,
        reason=REASON_NODE_NOT_FOUND,
        message=f"Node {name} of the Machine (status.nodeRef) does not exist",
    )


def check_unhealthy_conditions(
    node: Mapping[str, Any] | None, unhealthy_conditions: Sequence[Mapping[str, Any]], now: datetime
) -> Verdict:
    """Unhealthy when a Node condition has an entry's ``type`` and ``status`` for longer than its timeout.

    The time counts from the condition's ``lastTransitionTime``. A matching condition without
    one (or with one that does not parse) is past any timeout at once: the machine-api-operator
    (``target.needsRemediation`` in ``machinehealthcheck_controller.go``) reads it as the zero
    time. Counting from ``now`` instead would push the deadline back on every pass, so such a
    Node would never be remediated. Entries are ORed; one that matches but has not lasted long
    enough yet makes the verdict pending, with the earliest expiry as ``recheck_after``. An entry
    whose timeout does not parse is skipped (the admission webhook refuses it).
    """
    if node is None:
        return HEALTHY
    return _held_conditions(node, "Node", unhealthy_conditions, now, REASON_UNHEALTHY_NODE)


def _held_conditions(
    obj: Mapping[str, Any],
    what: str,
    unhealthy_conditions: Sequence[Mapping[str, Any]],
    now: datetime,
    reason: str,
    *,
    say_why: bool = False,
) -> Verdict:
    """The verdict of :func:`check_unhealthy_conditions` on ``obj``'s own conditions (a Node's,
    or a Machine's: :func:`check_unhealthy_machine_conditions`); ``say_why`` appends the matched
    condition's message to the verdict's."""
    by_type = {
        c.get("type"): c
        for c in _mapping(obj.get("status")).get("conditions") or ()
        if isinstance(c, Mapping)
    }
    name = _mapping(obj.get("metadata")).get("name") or "?"
    waits: list[float] = []
    for entry in unhealthy_conditions:
        condition = by_type.get(entry.get("type"))
        if condition is None or condition.get("status") != entry.get("status"):
            continue
        try:
            timeout = parse_duration(str(entry.get("timeout", "")))
        except ValueError:
            continue
        since = parse_time(condition.get("lastTransitionTime"))
        if since is None or now > since + timeout:
            when = format_time(since) if since is not None else "an unknown time (no lastTransitionTime)"
            why = f": {condition.get('message')}" if say_why and condition.get("message") else ""
            return Verdict(
                unhealthy=True,
                reason=reason,
                message=(
                    f"{what} {name} has condition {entry.get('type')}={entry.get('status')} since "
                    f"{when}, longer than its timeout of {_seconds(timeout)}{why}"
                ),
                since=since,
            )
        waits.append(_until(since + timeout, now))
    return Verdict(recheck_after=min(waits)) if waits else HEALTHY


def with_machine_conditions(mhc: Mapping[str, Any]) -> dict[str, Any]:
    """The MachineHealthCheck's spec, plus ``unhealthyMachineConditions`` read from its
    :data:`~api.controlplane.UNHEALTHY_MACHINE_CONDITIONS_ANNOTATION` (a JSON list; anything
    else there is ignored, as an unparsable entry of ``unhealthyConditions`` is)."""
    spec = dict(_mapping(mhc.get("spec")))
    text = _mapping(_mapping(mhc.get("metadata")).get("annotations")).get(
        UNHEALTHY_MACHINE_CONDITIONS_ANNOTATION
    )
    try:
        rules = json.loads(text) if isinstance(text, str) else []
    except ValueError:
        rules = []
    spec["unhealthyMachineConditions"] = (
        [r for r in rules if isinstance(r, Mapping)] if isinstance(rules, list) else []
    )
    return spec


def check_unhealthy_machine_conditions(
    machine: Mapping[str, Any], unhealthy_conditions: Sequence[Mapping[str, Any]], now: datetime
) -> Verdict:
    """Unhealthy when one of the Machine's own conditions has an entry's ``type`` and ``status``
    for longer than its timeout (cluster-api's ``unhealthyMachineConditions``), counted from its
    ``lastTransitionTime`` exactly as :func:`check_unhealthy_conditions` counts a Node's; the
    ControlPlane's ``ControlPlaneComponentsHealthy`` False is the one this operator writes."""
    return _held_conditions(
        machine, "Machine", unhealthy_conditions, now, REASON_UNHEALTHY_MACHINE_CONDITION, say_why=True
    )


def target_health(
    machine: Mapping[str, Any],
    node: Mapping[str, Any] | None,
    spec: Mapping[str, Any],
    now: datetime,
) -> Verdict:
    """The checks, ORed: the first unhealthy verdict, else the earliest pending one, else healthy.

    ``node`` is the Node named by the Machine's ``status.nodeRef`` (``None`` when there is no
    nodeRef or the Node does not exist); ``spec`` is the MachineHealthCheck's spec.
    """
    verdicts = (
        check_failed_phase(machine),
        check_node_startup(machine, node_startup_timeout(spec), now),
        check_node_exists(machine, node),
        check_unhealthy_conditions(node, spec.get("unhealthyConditions") or (), now),
        check_unhealthy_machine_conditions(machine, spec.get("unhealthyMachineConditions") or (), now),
    )
    for verdict in verdicts:
        if verdict.unhealthy:
            return verdict
    waits = [v.recheck_after for v in verdicts if v.recheck_after is not None]
    return Verdict(recheck_after=min(waits)) if waits else HEALTHY


def node_startup_timeout(spec: Mapping[str, Any]) -> timedelta:
    """``spec.nodeStartupTimeout`` (default 10m; ``"0"`` disables); an unparsable one is the default."""
    value = spec.get("nodeStartupTimeout")
    try:
        return (
            parse_duration(str(value)) if value is not None else parse_duration(DEFAULT_NODE_STARTUP_TIMEOUT)
        )
    except ValueError:
        return parse_duration(DEFAULT_NODE_STARTUP_TIMEOUT)


def counts_as_healthy(machine: Mapping[str, Any], node: Mapping[str, Any] | None, verdict: Verdict) -> bool:
    """Healthy: not being deleted, has its Node, and neither unhealthy nor waiting on a timeout.

    A Machine an external remediator is working on (its annotation present) is not healthy
    either, so it keeps counting against ``maxUnhealthy`` until the remediator is done.
    """
    metadata = _mapping(machine.get("metadata"))
    return (
        not metadata.get("deletionTimestamp")
        and node is not None
        and not verdict.unhealthy
        and verdict.recheck_after is None
        and EXTERNAL_REMEDIATION_ANNOTATION not in _mapping(metadata.get("annotations"))
    )


def earliest_recheck(verdicts: Iterable[Verdict]) -> float | None:
    """The soonest ``recheck_after`` of pending verdicts, or None when nothing is pending."""
    waits = [v.recheck_after for v in verdicts if v.pending and v.recheck_after is not None]
    return min(waits) if waits else None


# ------------------------------------------------------------------------ maxUnhealthy and short-circuit

_INT = re.compile(r"^[+-]?[0-9]+$")


@dataclass(frozen=True)
class MaxUnhealthy:
    """``spec.maxUnhealthy`` resolved against the number of Machines checked."""

    limit: int | None
    """How many unhealthy Machines remediation tolerates; ``None`` when the value is invalid."""
    problem: str = ""
    """Why the value is invalid (empty when it is valid)."""


def parse_max_unhealthy(value: Any, expected: int) -> MaxUnhealthy:
    """A count (``2`` or ``"2"``) or a percentage of ``expected`` rounded down (``"40%"``).

    Unset means ``100%``. A negative count tolerates nothing (as 0). Anything else (``"foo%50"``,
    ``"12.5%"``, ``true``) is invalid: the limit is ``None`` and ``problem`` says why, which
    blocks every remediation.
    """
    if value is None:
        return MaxUnhealthy(expected)
    if isinstance(value, bool) or not isinstance(value, int | str):
        return MaxUnhealthy(None, f"maxUnhealthy {value!r} is neither a count nor a percentage")
    if isinstance(value, int):
        return MaxUnhealthy(max(value, 0))
    text = value.strip()
    if text.endswith("%") and _INT.match(text[:-1]):
        percent = int(text[:-1])
        return MaxUnhealthy(max(math.floor(percent * expected / 100), 0))
    if _INT.match(text):
        return MaxUnhealthy(max(int(text), 0))
    return MaxUnhealthy(
        None, f'maxUnhealthy "{value}" is neither a count (e.g. 2) nor a percentage (e.g. "40%")'
    )


def format_max_unhealthy(value: Any) -> str:
    """``spec.maxUnhealthy`` as the machine-api-operator prints it in messages (``2``, ``40%``)."""
    return "100%" if value is None else str(value)


@dataclass(frozen=True)
class ShortCircuit:
    """Whether remediation may proceed, and the status fields that say so."""

    allowed: bool
    """False when the MachineHealthCheck is short-circuited."""
    remediations_allowed: int
    """``status.remediationsAllowed``: further remediations before the short-circuit trips."""
    unhealthy: int
    """Machines checked that are not healthy (unhealthy, waiting on a timeout, or without Node)."""
    message: str = ""
    """Why remediation is not allowed, in the machine-api-operator's words (empty when allowed)."""


def short_circuit(max_unhealthy: Any, expected: int, healthy: int) -> ShortCircuit:
    """The short-circuit: remediate only while ``expected - healthy`` ≤ maxUnhealthy.

    More unhealthy Machines than that usually means the problem is not the Machines (a network
    partition, a broken control plane), and replacing them would make it worse. An invalid
    ``maxUnhealthy`` blocks remediation and the message says why.
    """
    unhealthy = max(expected - healthy, 0)
    resolved = parse_max_unhealthy(max_unhealthy, expected)
    if resolved.limit is None:
        return ShortCircuit(
            allowed=False,
            remediations_allowed=0,
            unhealthy=unhealthy,
            message=(
                f"Remediation is not allowed, {resolved.problem} (total: {expected}, unhealthy: {unhealthy})"
            ),
        )
    if unhealthy > resolved.limit:
        return ShortCircuit(
            allowed=False,
            remediations_allowed=0,
            unhealthy=unhealthy,
            message=(
                "Remediation is not allowed, the number of not started or unhealthy machines exceeds "
                f"maxUnhealthy (total: {expected}, unhealthy: {unhealthy}, "
                f"maxUnhealthy: {format_max_unhealthy(max_unhealthy)})"
            ),
        )
    return ShortCircuit(allowed=True, remediations_allowed=resolved.limit - unhealthy, unhealthy=unhealthy)


def _seconds(value: timedelta) -> str:
    seconds = value.total_seconds()
    return f"{seconds:g}s"
