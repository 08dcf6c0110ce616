"""The reasons a ControlPlane's conditions and Events give, and the names of its preflight checks.

Users script against these strings (``kubectl wait``, ``kubectl get -o jsonpath``, alerts on
``reason``), so a value never changes once released; the controllers, ``cpo explain`` and the
tests import the constants rather than repeat the strings. A reason one condition shares with
another is defined once, under the condition that uses it first, and its docstring names the
others. ``docs/operations.md`` says what to do about each.

>>> from api.controlplane_reasons import BLOCKED_BY_CHECK, CHECK_ETCD_NO_ALARMS, REASON_ETCD_ALARM
>>> BLOCKED_BY_CHECK[CHECK_ETCD_NO_ALARMS] == REASON_ETCD_ALARM == "EtcdAlarm"
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

# Available: whether the control plane serves.
REASON_AS_EXPECTED: Final = "AsExpected"
"""Available True: every desired replica serves (also Degraded, MachinesReady, Remediating False)."""
REASON_MISSING_REPLICAS: Final = "MissingReplicas"
"""Available True: the control plane serves, with fewer available replicas than ``spec.replicas``."""
REASON_ETCD_QUORUM_LOST: Final = "EtcdQuorumLost"
"""Available False: the stacked etcd has no quorum of healthy voters, or does not answer."""
REASON_NO_MACHINE_AVAILABLE: Final = "NoMachineAvailable"
"""Available False: no Machine is ready with a healthy etcd voter."""

# Progressing: the plan, the step under way or next and what holds it (also the reason of the
# Event announcing a new plan: a Warning when the step is blocked).
REASON_SCALING_UP: Final = "ScalingUp"
"""A Machine is created toward ``spec.replicas``."""
REASON_SCALING_DOWN: Final = "ScalingDown"
"""A Machine is deleted toward ``spec.replicas``."""
REASON_REPLACING_OUTDATED: Final = "ReplacingOutdated"
"""An outdated Machine is replaced (rolling update): its replacement created, or it deleted."""
REASON_REPLACING_DELETED: Final = "ReplacingDeleted"
"""A replacement is created for a Machine someone deleted."""
REASON_REBALANCING: Final = "Rebalancing"
"""A Machine is created or deleted to even out failure domains that differ by more than one."""
REASON_WAITING_FOR_MACHINE: Final = "WaitingForMachine"
"""A new Machine is still provisioning (``MachineNodesReady`` fails only for it): a normal wait."""
REASON_WAITING_FOR_LEARNER: Final = "WaitingForLearner"
"""A new etcd member is a learner not promoted yet; the next step waits for it to vote."""
REASON_REMOVING_MEMBER: Final = "RemovingMember"
"""A deleting Machine's etcd member is being removed (the etcd-quorum hook holds the deletion)."""
REASON_WAITING_FOR_DELETION: Final = "WaitingForDeletion"
"""A Machine is being deleted; the next step (also Remediating: the next remediation) waits for it."""
REASON_HELD_BY_CONFIGURATION: Final = "HeldByConfiguration"
"""Blocked: scale-in and rollout wait until the configuration problem Degraded names is fixed."""
REASON_PAUSED: Final = "Paused"
"""``spec.paused`` is true: no Machine is created or deleted (also Remediating: none is remediated)."""
REASON_UP_TO_DATE: Final = "UpToDate"
"""Nothing to do: the count is right and every Machine is up to date and well spread."""
REASON_WAITING_FOR_MANUAL_DELETION: Final = "WaitingForManualDeletion"
"""Strategy OnDelete: outdated Machines are replaced only once a human deletes them."""
REASON_INACTIVE: Final = "Inactive"
"""``spec.state`` is Inactive: the controller only observes; the message says what it would do."""
REASON_BLOCKED: Final = "Blocked"
"""Blocked by a preflight check without a reason of its own in :data:`BLOCKED_BY_CHECK`."""
REASON_ETCD_UNREACHABLE: Final = "EtcdUnreachable"
"""Blocked: etcd cannot be read (also Remediating: whether a removal keeps quorum cannot be told)."""
REASON_ETCD_ALARM: Final = "EtcdAlarm"
"""Blocked: etcd has an active alarm (e.g. NOSPACE)."""
REASON_ETCD_MEMBERS_MISMATCH: Final = "EtcdMembersMismatch"
"""Blocked: an etcd member has no Machine, or a Machine that should host one has none."""
REASON_ETCD_MEMBER_LISTS_DISAGREE: Final = "EtcdMemberListsDisagree"
"""Blocked: etcd members answer with different member lists."""
REASON_ETCD_MEMBER_UNHEALTHY: Final = "EtcdMemberUnhealthy"
"""Blocked: an etcd voter is unhealthy, or the step would leave too few healthy voters."""
REASON_MACHINE_NOT_READY: Final = "MachineNotReady"
"""Blocked: a Machine is not Running with a Ready Node (and is not merely provisioning)."""
REASON_COMPONENTS_UNHEALTHY: Final = "ControlPlaneComponentsUnhealthy"
"""Blocked: a Machine's kube-apiserver, kube-controller-manager, kube-scheduler or etcd Pod is not
Ready (or not seen yet on its Ready Node); the message names the Machine and the component."""

# Preflight checks a create or delete must pass (named in Progressing's message, and the label
# ``check`` of cpo_controlplane_preflight_failures_total).
CHECK_MACHINES_READY: Final = "MachineNodesReady"
"""Every owned Machine not being deleted is Running with a Ready Node."""
CHECK_ETCD_REACHABLE: Final = "EtcdReachable"
"""The etcd member list can be read."""
CHECK_ETCD_MEMBERS_MATCH: Final = "EtcdMembersMatchMachines"
"""Every etcd member belongs to a Machine, and every Machine that should host one does."""
CHECK_ETCD_MEMBER_LISTS_AGREE: Final = "EtcdMemberListsAgree"
"""Every member answers with the same member list."""
CHECK_ETCD_NO_ALARMS: Final = "EtcdNoAlarms"
"""etcd has no active alarm."""
CHECK_ETCD_VOTERS_REACHABLE: Final = "EtcdVotersHealthy"
"""Every voter answers a health read, and the step leaves a quorum of healthy voters."""
CHECK_ETCD_NO_PENDING_LEARNER: Final = "EtcdNoPendingLearner"
"""No learner waits for promotion (the previous step is finished)."""
CHECK_COMPONENTS_HEALTHY: Final = "ControlPlaneComponentsHealthy"
"""Every owned Machine with a Ready Node has its control-plane components' Pods Ready."""

BLOCKED_BY_CHECK: Final[Mapping[str, str]] = {
    CHECK_ETCD_REACHABLE: REASON_ETCD_UNREACHABLE,
    CHECK_ETCD_NO_ALARMS: REASON_ETCD_ALARM,
    CHECK_ETCD_MEMBERS_MATCH: REASON_ETCD_MEMBERS_MISMATCH,
    CHECK_ETCD_MEMBER_LISTS_AGREE: REASON_ETCD_MEMBER_LISTS_DISAGREE,
    CHECK_ETCD_VOTERS_REACHABLE: REASON_ETCD_MEMBER_UNHEALTHY,
    CHECK_COMPONENTS_HEALTHY: REASON_COMPONENTS_UNHEALTHY,
    CHECK_MACHINES_READY: REASON_MACHINE_NOT_READY,
    CHECK_ETCD_NO_PENDING_LEARNER: REASON_WAITING_FOR_LEARNER,
}
"""The ``Progressing`` reason of each failed preflight check (the check's name stays the metric
label ``check`` of ``cpo_controlplane_preflight_failures_total``). In this order of precedence
when several fail: the first says most about what a human must fix."""

# Degraded: something needs a human (also status.failureReason, for the first two and the
# remediation's CannotRemediateLastMachine, MaxRetryReached and ReplacementsFailing).
REASON_MACHINE_FAILED: Final = "MachineFailed"
"""A Machine is Failed: fix the cause from its status.errorMessage, then delete it."""
REASON_MACHINES_ALREADY_OWNED: Final = "MachinesAlreadyOwned"
"""Machines the selector matches are owned by another controller; they are left alone."""
REASON_UNMANAGED_NODES: Final = "UnmanagedNodes"
"""Control-plane Nodes have no Machine."""
REASON_MACHINE_NOT_WATCHED: Final = "MachineNotWatched"
"""Machines the ControlPlane controls lost the control-plane role label, so the operator cannot
see them (also the Warning Event saying so)."""
REASON_MACHINES_NOT_READY: Final = "MachinesNotReady"
"""Fewer Machines ready than ``spec.replicas`` beyond the grace (also MachinesReady False: any unready)."""

# Remediating: the replacement of a Machine the health check marked, or why it waits (the
# message of its OwnerRemediated condition starts with the same reason).
REASON_REMEDIATING: Final = "Remediating"
"""An unhealthy Machine is being replaced (also Progressing, and the replacement's create step)."""
REASON_CANNOT_REMEDIATE_LAST_MACHINE: Final = "CannotRemediateLastMachine"
"""The only Machine of an initialised control plane is never remediated: a human must act."""
REASON_WAITING_FOR_PREVIOUS_REMEDIATION: Final = "WaitingForPreviousRemediation"
"""The previous remediation's Machine is still there: one remediation at a time."""
REASON_WAITING_FOR_PROVISIONING: Final = "WaitingForProvisioning"
"""Another Machine is still provisioning (a member may be joining)."""
REASON_WAITING_FOR_HEALTHY_COMPONENTS: Final = "WaitingForHealthyComponents"
"""No other Machine has every control-plane component healthy: removing this one could leave no
working API server; repair one first."""
REASON_ETCD_QUORUM_AT_RISK: Final = "EtcdQuorumAtRisk"
"""Removing the Machine's etcd member would leave too few healthy voters: repair the others first."""
REASON_MAX_RETRY_REACHED: Final = "MaxRetryReached"
"""The lineage failed again after ``remediation.maxRetry`` retries: a human must find the cause,
then fix the template or set the resume annotation (also Degraded)."""
REASON_REPLACEMENTS_FAILING: Final = "ReplacementsFailing"
"""As ``MaxRetryReached``, when the operator's default limit stopped the retries
(``remediation.maxRetry`` unset): the replacements keep failing; fix the template, or set the
annotation ``controlplane.cpo.dev/resume-remediation`` to the current time (also Degraded)."""
REASON_WAITING_FOR_RETRY_PERIOD: Final = "WaitingForRetryPeriod"
"""The remediation waits ``remediation.retryPeriod`` after the one its Machine replaced."""
REASON_ONE_REMEDIATION_AT_A_TIME: Final = "OneRemediationAtATime"
"""OwnerRemediated only: another marked Machine is remediated first."""

# Events on the ControlPlane (and EtcdGuardReleased on a Machine), besides the plan's.
REASON_MACHINE_ADOPTED: Final = "MachineAdopted"
"""A Machine the selector matches got the ControlPlane as its controller owner."""
REASON_MACHINE_CREATED: Final = "MachineCreated"
"""A Machine was created; the message says the step."""
REASON_MACHINE_DELETED: Final = "MachineDeleted"
"""A Machine was deleted by a scale-in, rollout or rebalance step."""
REASON_MACHINE_REMEDIATED: Final = "MachineRemediated"
"""An unhealthy Machine was deleted to be replaced."""
REASON_LEADERSHIP_MOVED: Final = "LeadershipMoved"
"""etcd leadership moved off a Machine before its deletion."""
REASON_LEADERSHIP_NOT_MOVED: Final = "LeadershipNotMoved"
"""Warning: etcd refused to move leadership; the deletion goes on (one election)."""
REASON_MACHINE_HEALTH_CHECK_CREATED: Final = "MachineHealthCheckCreated"
"""The owned MachineHealthCheck was created (``spec.enableAutorepair``)."""
REASON_MACHINE_HEALTH_CHECK_DELETED: Final = "MachineHealthCheckDeleted"
"""The owned MachineHealthCheck was deleted (``spec.enableAutorepair`` is false)."""
REASON_RELEASE_WAITS_FOR_ETCD: Final = "ReleaseWaitsForEtcd"
"""The deleted ControlPlane releases its Machines once a deleting one's etcd member is removed."""
REASON_MACHINE_RELEASED: Final = "MachineReleased"
"""The deleted ControlPlane dropped its ownerReference from a Machine, which stays."""
REASON_ETCD_GUARD_RELEASED: Final = "EtcdGuardReleased"
"""On a Machine: its etcd-quorum hook was removed; deleting it no longer waits for etcd."""
REASON_HOOK_KEPT_AT_RELEASE: Final = "LifecycleHookKept"
"""On a released Machine: preDrain hooks of other writers (or the default identity, which is also
OpenShift's etcd operator's, while the etcd-quorum-hook controller is off) stay in place."""
