"""The facts ``cpo explain`` shows, read from the API server: :func:`gather` reads the objects,
:func:`explain_document` turns them into the ``-o json`` document (pure: the single source of
every fact the screen shows; the shape is in :mod:`cli.explain`'s docstring).

Facts the controller has not written (a Machine's ``EtcdMemberHealthy`` or ``UpToDate``
condition, ``status.etcd``) are ``null`` in the document, never guessed from elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from api.controlplane import API_VERSION as CONTROLPLANE_API_VERSION
from api.controlplane import CONDITION_PROGRESSING, DEFAULT_SELECTOR_LABELS
from api.controlplane_reasons import REASON_BLOCKED
from api.failuredomains import FAILURE_DOMAIN_LABEL
from api.machine import API_VERSION as MACHINE_API_VERSION
from api.machine import (
    CONDITION_COMPONENTS_HEALTHY,
    CONDITION_ETCD_MEMBER_HEALTHY,
    CONDITION_ETCD_QUORUM_HOOK_HOLDING,
    CONDITION_HEALTH_CHECK_SUCCEEDED,
    CONDITION_OWNER_REMEDIATED,
    CONDITION_UP_TO_DATE,
    REASON_ETCD_LEADER,
    REASON_ETCD_LEARNER,
    REASON_ETCD_LEARNER_UNHEALTHY,
    REASON_ETCD_MEMBER_NOT_FOUND,
    REASON_ETCD_VOTER,
    REASON_ETCD_VOTER_UNHEALTHY,
)
from api.quorum import quorum as quorum_of
from api.selector import selector_matches
from controllers.controlplane.healthcheck import MHC_SUFFIX
from controllers.controlplane.plan import BLOCKING_REASONS as CONTROLLER_BLOCKING_REASONS
from controllers.etcdquorum.rules import HOOK_NAME
from runtime.client import JSON, Client
from runtime.errors import NotFound

DOCUMENT_VERSION: Final = 1
"""Version of the ``-o json`` document; it changes only if a key changes meaning or goes away."""

ETCD_ROLES: Final = {
    REASON_ETCD_LEADER: "leader",
    REASON_ETCD_VOTER: "voter",
    REASON_ETCD_LEARNER: "learner",
    REASON_ETCD_VOTER_UNHEALTHY: "voter",
    REASON_ETCD_LEARNER_UNHEALTHY: "learner",
    REASON_ETCD_MEMBER_NOT_FOUND: "none",
}
"""The etcd role each ``EtcdMemberHealthy`` reason names; any other reason (``InspectionFailed``,
or one a later operator adds) is the role ``unknown``."""

DEFAULT_ETCD_HOOK_NAME: Final = HOOK_NAME
"""The etcd-quorum hook's default name (``cpo run --etcd-hook-name`` changes it; ``cpo explain
--hook-name`` follows)."""

BLOCKING_REASONS: Final = CONTROLLER_BLOCKING_REASONS | {"PreflightFailed", "Degraded", REASON_BLOCKED}
"""``Progressing`` reasons that say a step cannot start: the controller's
(:data:`controllers.controlplane.plan.BLOCKING_REASONS`), ``PreflightFailed`` (what operators
wrote before those) and the generic ``Degraded`` and ``Blocked``."""


@dataclass
class Snapshot:
    """The objects one explanation is made of, as the API server returned them."""

    controlplane: JSON
    machines: list[JSON] = field(default_factory=list)
    nodes: dict[str, JSON] = field(default_factory=dict)
    """Nodes by name: those the Machines' ``status.nodeRef`` name and that exist."""
    health_check: JSON | None = None


async def gather(client: Client, namespace: str, name: str) -> Snapshot:
    """Read the ControlPlane ``namespace/name`` and what it explains; :class:`NotFound` when it is gone."""
    cp = await client.get(CONTROLPLANE_API_VERSION, "ControlPlane", name, namespace)
    selector = (cp.get("spec") or {}).get("selector") or {"matchLabels": dict(DEFAULT_SELECTOR_LABELS)}
    listing = await client.list(MACHINE_API_VERSION, "Machine", namespace)
    machines = [
        m
        for m in listing.get("items") or []
        if selector_matches(selector, (m.get("metadata") or {}).get("labels") or {})
    ]
    machines.sort(key=lambda m: str(m["metadata"].get("name")))
    nodes: dict[str, JSON] = {}
    for machine in machines:
        node_name = _node_name(machine)
        if node_name and node_name not in nodes:
            try:
                nodes[node_name] = await client.get("v1", "Node", node_name)
            except NotFound:
                pass
    checks = await client.list(MACHINE_API_VERSION, "MachineHealthCheck", namespace)
    return Snapshot(cp, machines, nodes, _health_check_of(cp, checks.get("items") or []))


def _health_check_of(cp: Mapping[str, Any], checks: Sequence[JSON]) -> JSON | None:
    """The ControlPlane's MachineHealthCheck: the one it owns, else the one of its conventional name."""
    uid = cp["metadata"].get("uid")
    for check in checks:
        refs = check.get("metadata", {}).get("ownerReferences") or ()
        if uid and any(ref.get("uid") == uid for ref in refs):
            return check
    wanted = cp["metadata"]["name"] + MHC_SUFFIX
    return next((c for c in checks if c.get("metadata", {}).get("name") == wanted), None)


def _node_name(machine: Mapping[str, Any]) -> str | None:
    ref = (machine.get("status") or {}).get("nodeRef") or {}
    value = ref.get("name")
    return str(value) if value else None


def _find(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions or () if c.get("type") == type_), None)


def _brief(condition: Mapping[str, Any] | None) -> JSON | None:
    if condition is None:
        return None
    return {
        "status": condition.get("status"),
        "reason": condition.get("reason") or "",
        "message": condition.get("message") or "",
    }


def _etcd_member(condition: Mapping[str, Any] | None) -> JSON | None:
    """The Machine's etcd role and health, read from its ``EtcdMemberHealthy`` condition: the role
    is the one its reason names (:data:`ETCD_ROLES`), the health its status."""
    if condition is None:
        return None
    reason = str(condition.get("reason") or "")
    message = str(condition.get("message") or "")
    status = condition.get("status")
    return {
        "role": ETCD_ROLES.get(reason, "unknown"),
        "healthy": True if status == "True" else False if status == "False" else None,
        "reason": reason,
        "message": message,
    }


def _machine_entry(machine: Mapping[str, Any], nodes: Mapping[str, JSON], hook_name: str) -> JSON:
    metadata = machine.get("metadata") or {}
    status = machine.get("status") or {}
    conditions = status.get("conditions") or []
    node_name = _node_name(machine)
    node_ready: str | None = None
    if node_name is not None:
        node = nodes.get(node_name)
        ready = _find(((node or {}).get("status") or {}).get("conditions"), "Ready")
        node_ready = str(ready.get("status")) if ready is not None else "Unknown"
    hooks = (machine.get("spec") or {}).get("lifecycleHooks") or {}
    pre_drain = [{"name": h.get("name"), "owner": h.get("owner")} for h in hooks.get("preDrain") or ()]
    pre_terminate = [
        {"name": h.get("name"), "owner": h.get("owner")} for h in hooks.get("preTerminate") or ()
    ]
    checked = _find(conditions, CONDITION_HEALTH_CHECK_SUCCEEDED)
    checked_status = (checked or {}).get("status")
    return {
        "name": metadata.get("name"),
        "failureDomain": (metadata.get("labels") or {}).get(FAILURE_DOMAIN_LABEL),
        "phase": status.get("phase"),
        "node": node_name,
        "nodeReady": node_ready,
        "etcd": _etcd_member(_find(conditions, CONDITION_ETCD_MEMBER_HEALTHY)),
        "hooks": {
            "preDrain": pre_drain,
            "preTerminate": pre_terminate,
            "etcdQuorumHook": any(h["name"] == hook_name for h in pre_drain),
            "etcdQuorumHookHolding": _brief(_find(conditions, CONDITION_ETCD_QUORUM_HOOK_HOLDING)),
        },
        "upToDate": _brief(_find(conditions, CONDITION_UP_TO_DATE)),
        "components": _brief(_find(conditions, CONDITION_COMPONENTS_HEALTHY)),
        "healthCheck": {
            "healthy": True if checked_status == "True" else False if checked_status == "False" else None,
            "reason": (checked or {}).get("reason") or "",
            "message": (checked or {}).get("message") or "",
            "ownerRemediated": _brief(_find(conditions, CONDITION_OWNER_REMEDIATED)),
        },
        "deleting": bool(metadata.get("deletionTimestamp")),
        "deletionTimestamp": metadata.get("deletionTimestamp"),
    }


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _etcd_entry(etcd: Any) -> JSON:
    """``status.etcd`` as the document's ``etcd``; every number None (and ``known`` false) when absent."""
    if not isinstance(etcd, Mapping):
        etcd = {}

    def count(key: str) -> int | None:
        value = etcd.get(key)
        if isinstance(value, list):
            return len(value)
        return _int_or_none(value)

    voters = count("voters")
    quorum = _int_or_none(etcd.get("quorum"))
    if quorum is None and voters is not None:
        quorum = quorum_of(voters)
    tolerance = _int_or_none(etcd.get("faultTolerance"))
    healthy = count("healthyVoters")
    if tolerance is None and quorum is not None and (healthy is not None or voters is not None):
        tolerance = max(0, (healthy if healthy is not None else voters or 0) - quorum)
    leader = etcd.get("leaderMachine", etcd.get("leader"))
    return {
        "known": bool(etcd),
        "voters": voters,
        "learners": count("learners"),
        "healthyVoters": healthy,
        "quorum": quorum,
        "faultTolerance": tolerance,
        "leaderMachine": leader if isinstance(leader, str) else None,
    }


def _health_check_entry(check: Mapping[str, Any] | None) -> JSON | None:
    if check is None:
        return None
    spec = check.get("spec") or {}
    status = check.get("status") or {}
    return {
        "name": (check.get("metadata") or {}).get("name"),
        "maxUnhealthy": spec.get("maxUnhealthy"),
        "expectedMachines": status.get("expectedMachines"),
        "currentHealthy": status.get("currentHealthy"),
        "remediationsAllowed": status.get("remediationsAllowed"),
    }


def _plan(conditions: Sequence[Mapping[str, Any]], status: Mapping[str, Any]) -> JSON:
    progressing = _find(conditions, CONDITION_PROGRESSING)
    blocked: list[JSON] = []
    if progressing is not None:
        reason = str(progressing.get("reason") or "")
        if reason in BLOCKING_REASONS or reason.startswith("Blocked"):
            blocked.append(
                {
                    "source": CONDITION_PROGRESSING,
                    "reason": reason,
                    "message": progressing.get("message") or "",
                    "since": progressing.get("lastTransitionTime"),
                }
            )
    for condition in conditions:
        type_ = condition.get("type")
        if type_ in ("Blocked", "PreflightFailed", "Degraded") and condition.get("status") == "True":
            blocked.append(
                {
                    "source": type_,
                    "reason": condition.get("reason") or "",
                    "message": condition.get("message") or "",
                    "since": condition.get("lastTransitionTime"),
                }
            )
    if status.get("failureReason"):
        blocked.append(
            {
                "source": "status.failureReason",
                "reason": status.get("failureReason"),
                "message": status.get("failureMessage") or "",
                "since": None,
            }
        )
    return {
        "progressing": None
        if progressing is None
        else {
            "status": progressing.get("status"),
            "reason": progressing.get("reason") or "",
            "message": progressing.get("message") or "",
            "since": progressing.get("lastTransitionTime"),
        },
        "blocked": blocked,
    }


def explain_document(snapshot: Snapshot, *, hook_name: str = DEFAULT_ETCD_HOOK_NAME) -> JSON:
    """The ``-o json`` document for ``snapshot`` (its shape is in the module docstring)."""
    cp = snapshot.controlplane
    status = cp.get("status") or {}
    conditions = list(status.get("conditions") or [])
    last = status.get("lastRemediation")
    return {
        "version": DOCUMENT_VERSION,
        "kind": "ControlPlaneExplanation",
        "controlPlane": _controlplane_entry(cp),
        "conditions": [
            {
                "type": c.get("type"),
                "status": c.get("status"),
                "reason": c.get("reason") or "",
                "message": c.get("message") or "",
                "lastTransitionTime": c.get("lastTransitionTime"),
            }
            for c in conditions
        ],
        "machines": [_machine_entry(m, snapshot.nodes, hook_name) for m in snapshot.machines],
        "etcd": _etcd_entry(status.get("etcd")),
        "remediation": {
            "lastRemediation": None
            if not isinstance(last, Mapping)
            else {
                "machine": last.get("machine"),
                "timestamp": last.get("timestamp"),
                "retryCount": last.get("retryCount", 0),
            },
            "healthCheck": _health_check_entry(snapshot.health_check),
        },
        "plan": _plan(conditions, status),
    }


def _controlplane_entry(cp: Mapping[str, Any]) -> JSON:
    """The document's ``controlPlane``: what the ControlPlane asks for and what its status says."""
    metadata = cp.get("metadata") or {}
    spec = cp.get("spec") or {}
    status = cp.get("status") or {}
    strategy = spec.get("strategy") or {}
    strategy_type = strategy.get("type") or "RollingUpdate"
    failure = (
        {"reason": status.get("failureReason"), "message": status.get("failureMessage") or ""}
        if status.get("failureReason")
        else None
    )
    return {
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "desiredReplicas": spec.get("replicas", 1),
        "strategy": {
            "type": strategy_type,
            "maxSurge": (
                (strategy.get("rollingUpdate") or {}).get("maxSurge", 1)
                if strategy_type == "RollingUpdate"
                else None
            ),
        },
        "state": spec.get("state") or "Active",
        "paused": bool(spec.get("paused")),
        "phase": status.get("phase"),
        "generation": metadata.get("generation"),
        "observedGeneration": status.get("observedGeneration"),
        "deleting": bool(metadata.get("deletionTimestamp")),
        "replicas": {
            "current": status.get("replicas"),
            "ready": status.get("readyReplicas"),
            "updated": status.get("updatedReplicas"),
            "available": status.get("availableReplicas"),
            "unavailable": status.get("unavailableReplicas"),
        },
        "failure": failure,
    }
