"""``spec.state``: an Inactive ControlPlane observes and reports, and writes nothing on Machines.

OpenShift's ControlPlaneMachineSet (CPMS) has the same two states, and this module follows its
meaning of Inactive: the controller gathers the same facts as for an Active ControlPlane and
keeps the ControlPlane's own status up to date, but takes no action on the control plane.
Here that means, for an Inactive ControlPlane:

* no adoption: the Machines its selector matches get no ownerReference, yet they are counted in
  ``status`` (replicas, ready, available, updated) as the ones it would adopt;
* no create, delete, replacement or remediation, and no MachineHealthCheck;
* no etcd guard hook: the etcd-quorum-hook controller places and removes none on its Machines and
  changes no etcd membership (it still reports ``EtcdClusterHealthy``);
* condition ``Progressing`` is False with reason ``Inactive``, and its message says the step the
  controller would take if it were Active (:func:`inactive_progress`), e.g. that it would delete
  two of three Machines because ``spec.replicas`` is 1; the phase is never Scaling, Updating or
  Remediating (:func:`controllers.controlplane.status.phase`), since nothing is under way.

The ControlPlane itself still gets its finalizer (as CPMS's does), so that becoming Active later
needs nothing more; deleting an Inactive ControlPlane releases nothing, as it owns nothing.

Where we differ from CPMS: CPMS defaults ``state`` to Inactive, because its installer creates one
on every cluster and a human decides to activate it. A ControlPlane is created by its user, and on
a cluster without control-plane Machines it must bootstrap with no extra step, so ours defaults to
Active (:data:`api.controlplane.DEFAULT_STATE`). Adopting an existing control plane stays safe
because the admission webhook refuses an Active ControlPlane (at creation, or when it is
activated) whose ``spec.replicas`` differs from the number of existing Machines its selector
matches; CPMS makes that check at creation only. Like CPMS, Active never goes back to Inactive
(refused by the webhook): to make the controller stop acting, delete the ControlPlane (its
Machines are released and stay).
"""

from __future__ import annotations

from api.controlplane import STATE_INACTIVE, ControlPlaneSpec
from api.controlplane_reasons import REASON_INACTIVE
from controllers.controlplane.step import Step


def is_inactive(spec: ControlPlaneSpec) -> bool:
    """Whether the controller only observes this ControlPlane (``spec.state: Inactive``)."""
    return spec.state == STATE_INACTIVE


def inactive_progress(step: Step | None) -> tuple[str, str]:
    """``(reason, message)`` of an Inactive ControlPlane's ``Progressing`` condition (False): the
    step it would take if Active, and how to make it act."""
    if step is None or step.action == "none":
        would = "nothing to do if Active: the Machines match spec"
    elif step.action == "wait":
        would = f"if Active, it would wait: {step.message}"
    else:
        would = f"if Active, it would {step.action} a Machine ({step.reason}): {step.message}"
    return (
        REASON_INACTIVE,
        f"spec.state is Inactive: no Machine is adopted, created or deleted; {would}. "
        "Set spec.state to Active to let it act",
    )
