"""The ControlPlane controller: keeps ``spec.replicas`` up-to-date control-plane Machines, safely.

A ControlPlane (``kubectl get cp``) owns the control-plane Machines its ``spec.selector``
matches. This controller creates and deletes them **one at a time**, and only after a preflight
says the cluster can afford the step; the etcd-quorum-hook controller then holds every deleted
Machine until etcd no longer needs its member. Together they never let etcd lose quorum.

The operator watches only control-plane Machines (label
``machine.openshift.io/cluster-api-machine-role=master``), so the admission webhook refuses a
ControlPlane whose ``spec.selector`` does not require that label, or whose template's labels lack
it, and says what to add (``kubectl apply`` prints ``spec.selector: Invalid value: ...: must
require the control-plane role label, or the operator cannot see the Machines it creates: add
matchLabels {"machine.openshift.io/cluster-api-machine-role": "master"}``). The default selector
is exactly that label; add others to it to narrow the selection.

Taking over an existing control plane: ``spec.state``
-----------------------------------------------------
A ControlPlane is ``Active`` (the default) or ``Inactive`` (the ``STATE`` column). On a cluster
without control-plane Machines, create it as you like: it bootstraps them. Over existing
Machines an Active ControlPlane adopts them and at once makes their number ``spec.replicas``, so
the admission webhook refuses one whose replicas (1 when not given) differ from the number of
existing, not-deleting Machines its selector matches in its namespace, naming both numbers::

    spec.replicas: Invalid value: 1: 3 control-plane Machine(s) matching spec.selector exist and
    spec.replicas is 1: an Active ControlPlane would delete 2 of them; set spec.replicas to 3 to
    adopt them as they are, or create the ControlPlane with spec.state Inactive to see first
    what it would do

Either set ``replicas`` to that number, or create it with ``state: Inactive``: an Inactive
ControlPlane adopts nothing and writes nothing on Machines (no ownerReference, no etcd guard
hook, no MachineHealthCheck) and creates, deletes and remediates nothing. It keeps its status:
the counts of the Machines it would adopt, and ``Progressing`` False with reason ``Inactive``
and the step it would take if Active (e.g. "if Active, it would create a Machine
(RollingUpdate): ..." when its template differs from the Machines). When that is what you want,
activate it (``kubectl patch cp cluster --type merge -p '{"spec":{"state":"Active"}}'``): the
same replica check applies then, and once Active it adopts the Machines and replaces the
outdated ones, one at a time as always. Active never goes back to Inactive (refused): delete the
ControlPlane to stop it acting, its Machines are released and stay. Later scale changes are not
compared with the existing Machines. This is OpenShift ControlPlaneMachineSet's ``state``; where
we differ (the default, activation checked too) is in :mod:`~controllers.controlplane.inactive`.

What it does, in order, on every reconcile (Active)
---------------------------------------------------
1. **Adopts** Machines matching the selector that no controller owns (event ``MachineAdopted``).
   An adopted Machine's failure domain is the configured domain whose providerSpec it carries
   (whole, or, once the template changed, the domain's own keys), so its replacement goes to
   its zone.
   A matching Machine owned by another controller is left alone (``Degraded``, reason
   ``MachinesAlreadyOwned``); a control-plane Node (:mod:`api.nodes`) without a Machine is
   reported (``UnmanagedNodes``).
2. Keeps the **MachineHealthCheck** ``<name>-mhc`` (with ``spec.enableAutorepair``, the default):
   the ControlPlane's selector, the unhealthy conditions and node startup timeout of
   ``spec.healthCheck`` (OpenShift's defaults: Ready False or Unknown for 5m0s, 10m), and
   ``maxUnhealthy`` = (n − 1) / 2 (n: the larger of the replicas and the owned Machines) plus the
   Machines being deleted or created (no failures, though a MachineHealthCheck counts them as not
   healthy), kept up to date on every pass.
   Turning autorepair off deletes it.
3. **Remediates** a Machine the health check marked (``HealthCheckSucceeded=False`` and
   ``OwnerRemediated=False``) when KubeadmControlPlane's safety rules allow it: at least 2
   Machines (or the control plane not initialised yet), the previous remediation finished,
   nothing provisioning or being deleted (a deletion the etcd-quorum hook holds on a healthy
   voter does not count: it waits for a replacement, which the remediation is what unblocks; nor
   does a Machine with no etcd member yet when the target's member is an unhealthy voter: etcd
   takes no new member until it is removed), etcd read this pass (``EtcdUnreachable``: without
   a member list, whether the removal keeps quorum cannot be told), and
   a quorum of healthy voters left without its member. Of several marked Machines, the one whose
   loss costs the least goes first: no Node, then no voting member, then an unhealthy voter,
   then a healthy one; then the oldest. Before its deletion, etcd leadership moves off it.
   Retries are counted **per lineage**: the replacement carries the annotation
   ``controlplane.cpo.dev/remediation-for`` (``{"machine", "timestamp", "retryCount"}``: the
   Machine it replaced, when, and the count); the next Machine created carries it, whichever
   step creates it, so a template whose Machines go ``Failed`` is one lineage whether its first
   Machine came from a rollout, a scale-out or a remediation. When that replacement fails
   within ``remediation.minHealthyPeriod`` (1h) of that time, its remediation is retry count +
   1. **Retries are bounded by default**: retry n waits ``retryPeriod`` when set, else 30 s ×
   2^(n − 1), at most 10 min (30 s, 1 min, 2 min, 4 min, 8 min) after the remediation before
   it; after ``maxRetry`` retries when set, else 5, the next failure stops them: the failed
   Machine stays, nothing is created, and the ControlPlane is ``Degraded`` (and
   ``failureReason``) with ``ReplacementsFailing`` (``MaxRetryReached`` when your ``maxRetry``
   stopped it), the message saying what to do. Each field you set wins on its own; the
   operator's defaults are ``cpo run`` flags (``--remediation-backoff-initial``,
   ``--remediation-backoff-factor``, ``--remediation-backoff-max``,
   ``--remediation-max-retry``). The retries **resume** when the template changes (the failed
   Machine, outdated now, starts a new lineage and is replaced at once) or when you set the
   annotation ``controlplane.cpo.dev/resume-remediation`` on the ControlPlane to a time later
   than the failure (``kubectl annotate cp NAME
   controlplane.cpo.dev/resume-remediation=$(date -u +%Y-%m-%dT%H:%M:%SZ)``): replaced at once,
   then bounded again; the annotation is removed as that remediation is recorded (used once),
   and a value that is not such a time is ignored, left in place, and the message says why.
   Any other Machine starts at 0, so two unrelated failures, however close, never use up the
   retries. The Machine is deleted and its
   replacement created at once in the same failure domain (add-then-remove: the hook keeps the
   old member until the new one votes). The remediation is recorded before the delete in the
   ControlPlane's annotation ``controlplane.cpo.dev/remediation-in-progress`` and moved onto the
   replacement by its create; ``status.lastRemediation`` reports the latest. A process that dies
   at any point leaves what the next pass finishes from: the Machine still there is deleted as
   the same remediation (same ``retryCount``), a replacement not yet created takes the record,
   a record already on a replacement is dropped from the ControlPlane.
4. Otherwise takes **the next step**: create a Machine when there are too few (into the failure
   domain with the fewest Machines not being deleted, ties alphabetical; a replacement counts
   without the Machine it replaces and keeps that Machine's domain on a tie, so a rollout of an
   even spread moves nothing while a replacement out of a crowded or removed domain lands in the
   emptiest one),
   delete one when there are too many (in this order: outdated with the annotation
   ``machine.openshift.io/delete-machine``, that annotation, outdated and unhealthy, outdated,
   any; then the most populated domain; then the oldest), or replace an outdated one
   (``RollingUpdate``: maxSurge 1 creates the replacement first, maxSurge 0 deletes first;
   ``OnDelete``: only Machines you delete are replaced). Under maxSurge 0 the Machine is marked
   (``controlplane.cpo.dev/remove-member-first``) right before its delete, so that its healthy
   voter may go before the replacement votes and free the host
   (:func:`controllers.etcdquorum.early_removal.early_removal_decision`); a replacement that never became
   an etcd voter and is outdated again (you put the previous template back) is deleted, whether
   the old Machine's member already went or its deletion waits (``ReplacingOutdated``); it
   changes no voter. Uneven failure domains are rebalanced
   through the same replacement (under maxSurge 0: delete from the fullest, recreate in the
   emptiest, never more than replicas Machines not being deleted; once the domains differ by at
   most one, nothing moves). Never more than replicas + 1 Machines exist. Before deleting
   the Machine whose etcd member leads, the controller hands leadership to the oldest other
   healthy voter (event ``LeadershipMoved``), so the removal costs no election.
   A Machine is **outdated** when what it *is* differs from the template: its
   ``controlplane.cpo.dev/spec-hash`` annotation (the providerSpec merged with its domain's, and
   the domain) differs from the template's, its domain was removed, or ``spec.rolloutAfter`` has
   passed and the Machine was created before it (KubeadmControlPlane's rule, at whole seconds).
   The template's labels and annotations never outdate a Machine: they are written onto it in
   place (see "Labels and annotations" below). So ``rolloutAfter`` schedules one
   replacement of every Machine: while it is in the future nothing is replaced, every ready
   Machine counts in ``updatedReplicas`` and the controller looks again at that moment; once it has
   passed, each older Machine is replaced once (one step at a time, as for a template change);
   the replacements, created after it, are up to date, so the rollout ends. Setting it to
   now asks for a fresh set of Machines now.
5. Writes **status** (only when it changed), ``status.etcd`` included: voters, learners,
   healthy voters, quorum, fault tolerance and the leader's Machine (absent with external etcd
   or while etcd cannot be read).

Labels and annotations: written in place
----------------------------------------
Changing ``spec.template.metadata`` (``kubectl label``-like edits: a cost-centre label, an
owner annotation) replaces no Machine. On every pass each owned Machine not being deleted is
brought in step with the template by one patch, and only when something differs
(:mod:`~controllers.controlplane.template_metadata`): the template's keys are written with its
values; a key the template drops is removed only if the template set it before, as recorded on
the Machine in ``controlplane.cpo.dev/template-metadata`` (``{"labels": [...], "annotations":
[...]}``, like ``kubectl apply``'s last-applied set), so a key you or a provider put on a Machine
stays. The operator's own keys (``controlplane.cpo.dev/...``, ``etcd.cpo.dev/...``) are never
touched, and no label ``spec.selector`` names, nor the control-plane role label, is ever removed.
``status.updatedReplicas`` does not move. After an upgrade from the version that hashed the
template's labels and annotations too, its Machines are not outdated when their providerSpec and
domain match the template: their hash is rewritten in place, and nothing is replaced.

Before any create or delete, the **preflight** must pass; each failed check is named in the
``Progressing`` condition (its reason says which check holds the step, e.g.
``EtcdMemberUnhealthy`` for ``EtcdVotersHealthy``: :mod:`~controllers.controlplane.plan`), an
event when that changes and the metric
``cpo_controlplane_preflight_failures_total{check}``, and the controller looks again with a
backoff (2 s doubling to 60 s). The Machine a step takes away is not held against it: a delete
ignores its own Machine's Node, member health, learner or missing member (so a rollout or
scale-in can move away from a NotReady Machine, and rolling a faulty template back deletes the
replacement that never became Ready, the one outdated Machine then), yet a voter goes only if
the voters left keep a healthy quorum without it; a maxSurge-1 replacement ignores the Node of
the Machine it replaces but not its member (a dead voter is removed first, by remediation or a
maxSurge-0 rollout, so the new member never joins a quorum that needs it). The checks, and what
to do when one fails:

``MachineNodesReady``         a Machine is not Running with a Ready Node: wait for it to
                              provision; if it is stuck, look at the Machine's conditions and the
                              provider; a Failed Machine must be deleted.
``EtcdReachable``             no etcd endpoint answered: check the members' processes / network.
``EtcdMembersMatchMachines``  a member has no Machine, or a Running Machine has no member: an
                              interrupted join or removal; remove the stray member by hand
                              (``etcdctl member remove``) once you know which it is. Before the
                              ControlPlane owns any Machine, etcd at ``spec.etcd.endpoints`` is
                              read too: if it answers, its members run on Machines this
                              ControlPlane does not select, and it creates none (adopt them: give
                              them labels the selector matches); if nothing answers there yet,
                              the first Machine bootstraps etcd as usual.
``EtcdMemberListsAgree``      members disagree on the membership: wait a few seconds; if it
                              persists, that member is partitioned.
``EtcdNoAlarms``              NOSPACE or CORRUPT: defragment / raise the quota, or restore.
``EtcdVotersHealthy``         a voter does not answer a linearizable read: it is down or cut off;
                              the health check will mark its Machine for remediation.
``EtcdNoPendingLearner``      a new member waits for promotion: normal for a few seconds during a
                              step; if it lasts, check the etcd-quorum-hook controller.

With ``spec.etcd.external`` no etcd check runs and any replica count is allowed.

Phases (``status.phase``, the ``PHASE`` column)
-----------------------------------------------
``Pending``       no Machine yet.
``Provisioning``  Machines exist but none is ready yet.
``Running``       every Machine is up to date and the count is right: nothing to do; also an
                  Inactive ControlPlane whose Machines serve (nothing is under way).
``Scaling``       the Machine count differs from ``spec.replicas``, or a Machine is being deleted.
``Updating``      outdated Machines are being (or, with OnDelete, waiting to be) replaced.
``Remediating``   an unhealthy Machine is being replaced.
``Degraded``      a human must act: ``failureReason``/``failureMessage`` say what (a Machine
                  ``Failed``: fix the cause and delete it; ``ReplacementsFailing`` or
                  ``MaxRetryReached``: its replacements keep failing, find out why, then fix the
                  template or set the resume annotation), or matching Machines are owned by
                  another controller.
``Deleting``      the ControlPlane is being deleted: its Machines are released, not deleted.

Conditions
----------
``Available``         True when the control plane serves: etcd has quorum (more than half of
                      its voters answer; with ``spec.etcd.external``, not checked) and at least
                      one Machine is available (ready and a healthy etcd voter). The message says
                      both, e.g. "etcd has quorum (2 of 3 voter(s) healthy); 2 Machine(s) serve";
                      reason ``MissingReplicas`` (still True) while fewer than ``spec.replicas``
                      are available, ``EtcdQuorumLost`` or ``NoMachineAvailable`` when False.
``Progressing``       True while a step is under way or held back; the reason and message are
                      the plan: the step under way or next (``ScalingUp``, ``ScalingDown``,
                      ``ReplacingOutdated``, ``ReplacingDeleted``, ``Remediating``,
                      ``Rebalancing``), what it waits for (``WaitingForMachine``,
                      ``WaitingForLearner``, ``RemovingMember``, ``WaitingForDeletion``), or what
                      blocks it (one reason per failed preflight check, e.g.
                      ``EtcdMemberUnhealthy``, ``MachineNotReady``; ``HeldByConfiguration``), the
                      message naming the Machine and the fact, e.g. "Replacing outdated Machine
                      demo-abc in zone-b: creating its replacement". An event (Warning when
                      blocked) announces each new plan. False with ``UpToDate`` when there is
                      nothing to do, ``Paused`` while ``spec.paused`` is set, and ``Inactive``
                      (saying the step it would take) while ``spec.state`` is Inactive.
                      :mod:`~controllers.controlplane.plan` lists them all.
``Degraded``          True when a human should look: see the phase ``Degraded``; control-plane
                      Nodes without a Machine (``UnmanagedNodes``); fewer ready Machines than
                      ``spec.replicas`` for more than 5 minutes, measured from the Node's Ready
                      transition or, without a Node, the Machine's creation (``MachinesNotReady``;
                      a reboot does not flap it). A configuration problem (``MachinesAlreadyOwned``,
                      ``UnmanagedNodes``) holds scale-in and rollout until fixed (``Progressing``
                      reason ``HeldByConfiguration``; scale-up and remediation go on); unready
                      Machines hold nothing, so a rollout can still replace them.
``MachinesReady``     False names the Machines that are not Running with a Ready Node.
``ControlPlaneComponentsHealthy``
                      True when every Machine with a Ready Node has its kube-apiserver,
                      kube-controller-manager, kube-scheduler and etcd Pods Ready; False names
                      each Machine and component (reason ``ComponentsUnhealthy``); Unknown when
                      the check is off (``ComponentsCheckDisabled``), no Pod of the configured
                      layout was ever seen (``ComponentPodsNotFound``: a misconfiguration, the
                      check counts as off) or none yet (``WaitingForComponentPods``).
``Remediating``       True while a remediation is under way; False with the reason it may not
                      start (``EtcdQuorumAtRisk``, ``EtcdUnreachable``,
                      ``WaitingForProvisioning``, ``WaitingForRetryPeriod``,
                      ``ReplacementsFailing``, ``Paused``, ...).
``EtcdClusterHealthy`` written by the etcd-quorum-hook controller, kept as is.

Control-plane components gate every step
----------------------------------------
A Machine is ready only when its Node is Ready **and** its kube-apiserver,
kube-controller-manager, kube-scheduler and etcd run: the operator reads their mirror Pods
(``cpo run --control-plane-components``: ``kubeadm``, the default, ``openshift`` or ``off``;
:mod:`~controllers.controlplane.components` says where each layout keeps them and when a
missing Pod counts). Each owned Machine gets the condition ``ControlPlaneComponentsHealthy``
(reason ``APIServerPodUnhealthy``, ``ControllerManagerPodUnhealthy``, ``SchedulerPodUnhealthy``,
``EtcdPodUnhealthy``, or ``ComponentsUnhealthy`` for several). Then:

* no delete, and no rollout or rebalance create, while another Machine's components are
  unhealthy or not seen yet (preflight ``ControlPlaneComponentsHealthy``, ``Progressing`` reason
  ``ControlPlaneComponentsUnhealthy`` naming the Machine and component), except the Machine the
  step deletes or replaces: so a replacement whose API server crash-loops holds the rollout (no
  working Machine is deleted for it), and reverting the template deletes that replacement. A
  create toward ``spec.replicas`` (a scale-up, the replacement of a deleted Machine) is not held:
  it takes nothing away and restores etcd's fault tolerance;
* scale-in takes a Machine with unhealthy components before any other that is not outdated;
* remediation of the only Machine keeping every component healthy waits while the others'
  are broken (``WaitingForHealthyComponents``; a Machine that serves no full set, its Node down
  or its member dead, is never held), and picks the Machine with broken components first among
  equals;
* the owned MachineHealthCheck judges the condition: False for
  ``spec.healthCheck.componentsUnhealthyTimeout`` (default 10m) marks the Machine, which is then
  remediated like one whose Node is not Ready;
* ``readyReplicas``, ``updatedReplicas`` and ``Available`` count a Machine only with its
  components healthy.

Deleting a ControlPlane never deletes a Machine: the finalizer ``controlplane.cpo.dev/machines``
drops the ControlPlane's ownerReference from each (event ``MachineReleased``) and deletes the
MachineHealthCheck. It also removes the operator's own preDrain hook from each released Machine
(Machine event ``EtcdGuardReleased``): that guard works per ControlPlane (it needs the
ControlPlane's etcd endpoints and TLS Secret), so a released Machine is no longer guarded by this
operator and deleting it no longer waits for it. Which hook is the operator's own is decided by
identity (:func:`.release.hook_at_release`): the configured name and owner, when the name is the
operator's own (``--etcd-hook-name``) or is the default while the etcd-quorum-hook controller
runs. Every other hook stays (Machine event ``LifecycleHookKept``), in particular
cluster-etcd-operator's ``EtcdQuorumOperator`` when that controller is off.
A replacement under way is finished first: the release waits until no Machine
being deleted carries the hook (event ``ReleaseWaitsForEtcd`` names them), and meanwhile the
etcd-quorum-hook controller still hooks the replacement so that its member can be promoted and
the old one removed; after that it places no hook. A Machine deleted before its replacement was
created keeps the deletion waiting: take its hook off by hand (the release module says more).
``spec.paused`` stops every create and delete (adoption and status go on).

Metrics: ``cpo_controlplane_replicas{controlplane,state=desired|current|updated|ready|available}``,
``cpo_controlplane_operations_total{controlplane,operation=create|delete|adopt|remediate|release}``,
``cpo_controlplane_preflight_failures_total{controlplane,check}``.

Use it in a manager of your own::

    from controllers.controlplane import ControlPlaneOptions, setup_with_manager

    setup_with_manager(manager, ControlPlaneOptions(resync_period=30))

The modules, along KubeadmControlPlane's lines (gather → decide → act → report):

============================  =============================================================
:mod:`.reconciler`            the controller: one pass, at most one create or delete
:mod:`.facts`                 gather: owned Machines (adopting), Nodes, etcd, unwatched
:mod:`.machines`              the row each rule reads of a Machine, and ownership
:mod:`.etcdview`              the etcd members seen from the Machines, leadership moves
:mod:`.unwatched`             Machines it controls that lost the control-plane role label
:mod:`.placement`             failure domains, the desired Machine, its spec hash, outdated
:mod:`.scale`                 the next step toward ``spec.replicas``
:mod:`.preflight`             the checks a create or delete must pass first
:mod:`.components`            kube-apiserver, controller manager, scheduler, etcd Pods
:mod:`.template_metadata`     the template's labels and annotations, written in place
:mod:`.rollout`               replacing outdated Machines, rebalancing, OnDelete
:mod:`.step`                  the step value every decision returns
:mod:`.remediation`           whether a marked Machine is replaced now, its retries
:mod:`.remediation_order`     which marked Machine is replaced first
:mod:`.remove_member_first`   the ``maxSurge: 0`` mark on a Machine about to be deleted
:mod:`.remediation_record`    a remediation's record, so a crash is finished later
:mod:`.healthcheck`           the MachineHealthCheck the ControlPlane owns
:mod:`.inactive`              ``spec.state: Inactive``
:mod:`.status`                the status: counts, phase, one function per condition
:mod:`.plan`                  the plan's reasons, ``status.etcd``, the Event per decision
:mod:`.machine_conditions`    ``UpToDate`` and ``OwnerRemediated`` on each Machine
:mod:`.release`               the finalizer: releasing the Machines
:mod:`.expectations`          creates and deletes not yet seen in the cache
:mod:`.requeue`               when to look again
:mod:`.options`               the options, their defaults resolved in one place
:mod:`.metrics`               ``cpo_controlplane_*``
:mod:`.wiring`                the watches, and ``setup_with_manager``
============================  =============================================================
"""

from api.failuredomains import FAILURE_DOMAIN_LABEL
from controllers.controlplane.options import ControlPlaneOptions, ResolvedControlPlaneOptions
from controllers.controlplane.placement import SPEC_HASH_ANNOTATION
from controllers.controlplane.reconciler import ControlPlaneReconciler
from controllers.controlplane.release import FINALIZER
from controllers.controlplane.wiring import CONTROLLER_NAME, setup_with_manager

__all__ = [
    "CONTROLLER_NAME",
    "FAILURE_DOMAIN_LABEL",
    "FINALIZER",
    "SPEC_HASH_ANNOTATION",
    "ControlPlaneOptions",
    "ControlPlaneReconciler",
    "ResolvedControlPlaneOptions",
    "setup_with_manager",
]
