"""The ``machinehealthcheck`` controller: OpenShift MachineHealthChecks, with a quorum-safe hand-off.

A MachineHealthCheck (``machine.openshift.io/v1beta1``, short name ``mhc``) watches the Machines
its ``spec.selector`` matches in its namespace (an empty selector matches them all) and
remediates the unhealthy ones, with the machine-api-operator's semantics, except that a Machine
owned by a ControlPlane is only *marked*: the ControlPlane replaces it when that keeps etcd quorum.
Example::

    apiVersion: machine.openshift.io/v1beta1
    kind: MachineHealthCheck
    metadata:
      name: masters
      namespace: openshift-machine-api
      labels: {controlplane.cpo.dev/machinehealthcheck: "true"}   # this operator's to check
    spec:
      selector:
        matchLabels: {machine.openshift.io/cluster-api-machine-role: master}
      unhealthyConditions:
      - {type: Ready, status: "False", timeout: 300s}
      - {type: Ready, status: Unknown, timeout: 300s}
      maxUnhealthy: 1
      nodeStartupTimeout: 25m

When is a Machine unhealthy?
----------------------------
Any one of (see :mod:`controllers.machinehealthcheck.health`, one function per rule):

* its ``status.phase`` is ``Failed`` — at once;
* it has no ``status.nodeRef`` and ``status.lastUpdated`` + ``nodeStartupTimeout`` (default
  ``10m``; ``"0"`` turns the check off) has passed;
* its ``status.nodeRef`` names a Node that does not exist — at once;
* a Node condition has the ``type`` and ``status`` of an ``unhealthyConditions`` entry for longer
  than that entry's ``timeout``, counted from the condition's ``lastTransitionTime`` (a
  condition without one is past any timeout at once);
* a condition of the Machine itself matches an entry of the annotation
  ``controlplane.cpo.dev/unhealthy-machine-conditions`` (a JSON list of ``{"type", "status",
  "timeout"}``, cluster-api's ``unhealthyMachineConditions``, which OpenShift's
  MachineHealthCheck has no field for) for longer than its timeout, counted the same way: a
  ControlPlane's own MachineHealthCheck carries ``ControlPlaneComponentsHealthy`` False for
  ``spec.healthCheck.componentsUnhealthyTimeout``, so a Machine whose API server, controller
  manager, scheduler or etcd Pod stays broken is remediated (reason ``UnhealthyMachineCondition``).

A Machine that will turn unhealthy if nothing changes (a condition matched but not for long
enough yet) is looked at again at exactly that moment (+1 s), not polled.

A Machine counts as **healthy** (``status.currentHealthy``) when it is not being deleted, has its
Node, and neither is unhealthy nor is waiting on a timeout, nor carries the
``host.metal3.io/external-remediation`` annotation.

Short-circuit (``maxUnhealthy``)
--------------------------------
``maxUnhealthy`` is a count (``2`` or ``"2"``) or a percentage of the Machines checked, rounded
down (``"40%"`` of 5 is 2). Default ``100%``; ``0``/``"0%"`` stops all remediation; a value that
is neither (``"foo%50"``) stops it too and the condition says why. When more Machines than that
are not healthy (``expectedMachines - currentHealthy``), nothing is remediated: many unhealthy
Machines at once usually means the fault is elsewhere (network, control plane), and replacing
Machines would make it worse. You then see

* condition ``RemediationAllowed=False``, reason ``TooManyUnhealthy``, message
  ``Remediation is not allowed, the number of not started or unhealthy machines exceeds
  maxUnhealthy (total: 5, unhealthy: 3, maxUnhealthy: 40%)``;
* ``status.remediationsAllowed: 0``;
* a Warning event ``RemediationRestricted`` on the MachineHealthCheck;
* ``mapi_machinehealthcheck_short_circuit{name,namespace} 1`` (the alert
  ``MachineHealthCheckUnterminatedShortCircuit`` fires after 30 minutes).

It lifts by itself once enough Machines are healthy again.

Remediation
-----------
For each unhealthy Machine, when remediation is allowed (the order of the rules:
:func:`controllers.machinehealthcheck.actions.choose_action`):

* **owned (controller ownerReference) by a ControlPlane**: the Machine gets the conditions
  ``HealthCheckSucceeded=False`` (reason ``MachineHasFailure``, ``NodeStartupTimeout``,
  ``NodeNotFound`` or ``UnhealthyNode``; the message says what and since when) and
  ``OwnerRemediated=False`` (reason ``WaitingForRemediation``), plus a Warning event
  ``MachineMarkedUnhealthy``. It is never deleted here: the ControlPlane controller replaces it
  when etcd quorum allows and clears the conditions. If the Machine recovers before that,
  ``HealthCheckSucceeded`` turns True and the waiting ``OwnerRemediated`` is removed (waiting:
  ``WaitingForRemediation``, or the ControlPlane's ``RemediationDeferred`` /
  ``CannotBeRemediated``, which say what it decided without acting).
* **with ``spec.remediationTemplate``**: a remediation request is created from the template
  (kind = the template's kind without ``Template``, named after the Machine, owned by it) for an
  external remediator; it is deleted once the Machine is healthy again. The MachineHealthCheck
  conditions ``ExternalRemediationTemplateAvailable`` and ``ExternalRemediationRequestAvailable``
  say whether that worked. The operator needs RBAC on the remediation kinds for this (grant it
  alongside the remediator's own).
* **another controller owner** (a MachineSet, …): the Machine is deleted (event
  ``MachineDeleted``; ``MachineDeletionFailed`` when the API refuses) and its owner replaces it.
* **no controller owner**: event ``SkippedNoController``, nothing else.

A Machine already being deleted is left alone. The annotation ``cluster.x-k8s.io/paused`` on the
MachineHealthCheck stops every remediation; the status is still kept up to date.

Status and metrics
------------------
``status.expectedMachines``, ``currentHealthy``, ``remediationsAllowed`` and ``conditions`` are
written through the status subresource, only when something changed. The metrics carry the
machine-api-operator's names and labels (:mod:`controllers.machinehealthcheck.metrics`):
``mapi_machinehealthcheck_nodes_covered``, ``mapi_machinehealthcheck_remediation_success_total``
and ``mapi_machinehealthcheck_short_circuit``, all ``{name, namespace}``; a deleted
MachineHealthCheck's series are removed.

Which MachineHealthChecks
-------------------------
Only those labelled ``controlplane.cpo.dev/machinehealthcheck: "true"``
(:data:`api.controlplane.MHC_SCOPE_LABEL`): the one a ControlPlane owns carries it, and a user
puts it on any other this operator should check. Every other MachineHealthCheck (the
machine-api-operator's worker checks, say) is never reconciled, and its status is never written;
the admission webhook is not even called for it (:func:`api.controlplane.in_health_check_scope`
is the one rule both follow).

What the operator sees
----------------------
``cpo run`` caches control-plane Machines (label
``machine.openshift.io/cluster-api-machine-role=master``) and Nodes (those :mod:`api.nodes`
tells: ``node-role.kubernetes.io/control-plane`` or ``node-role.kubernetes.io/master`` by
default, ``--control-plane-node-selector`` otherwise) only, so its MachineHealthChecks act on
control-plane Machines; worker MachineHealthChecks stay with the machine-api-operator.

Module map
----------
The reconciler gathers facts, pure functions decide, the reconciler acts, then reports:

=====================  ===========================================================================
``__init__``           this guide, and the names other packages import
:mod:`.health`         the health rules: one pure function per check, ``maxUnhealthy``, short-circuit
:mod:`.actions`        the pure choice of what to do about each Machine (:func:`.actions.choose_action`)
:mod:`.marks`          the conditions that mark a ControlPlane's Machine, and that take the mark back
:mod:`.external`       external remediation requests: the template reference, the request, the outcome
:mod:`.status`         the pure status (counts and conditions) and the ``RemediationRestricted`` Event
:mod:`.remediator`     the I/O that carries the chosen actions out: writes, deletes, Events, counter
:mod:`.reconciler`     the controller: gather, decide, act, report; options and wiring
:mod:`.watches`        which MachineHealthChecks a Machine or Node event wakes
:mod:`.metrics`        the ``mapi_machinehealthcheck_*`` metrics
=====================  ===========================================================================

Wiring::

    from controllers.machinehealthcheck import setup_with_manager

    setup_with_manager(manager)   # controller "machinehealthcheck"
"""

from controllers.machinehealthcheck.reconciler import (
    CONTROLLER_NAME,
    EVENT_MACHINE_DELETED,
    EVENT_MACHINE_MARKED,
    EVENT_REMEDIATION_RESTRICTED,
    EVENT_SKIPPED_NO_CONTROLLER,
    PAUSED_ANNOTATION,
    MachineHealthCheckOptions,
    MachineHealthCheckReconciler,
    setup_with_manager,
)

__all__ = [
    "CONTROLLER_NAME",
    "EVENT_MACHINE_DELETED",
    "EVENT_MACHINE_MARKED",
    "EVENT_REMEDIATION_RESTRICTED",
    "EVENT_SKIPPED_NO_CONTROLLER",
    "PAUSED_ANNOTATION",
    "MachineHealthCheckOptions",
    "MachineHealthCheckReconciler",
    "setup_with_manager",
]
