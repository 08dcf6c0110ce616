"""The etcd-quorum-hook controller: no change to the control-plane Machines may cost etcd its quorum.

etcd commits a write only when a majority (the *quorum*) of its voting members agrees: 2 of 3,
3 of 5. Lose the majority and the API server stops writing. Machines are drained and terminated
by the Machine API, which knows nothing about etcd; this controller is what stands between a
deleted control-plane Machine and the etcd member running on it. It runs inside ``cpo run``
under the name ``etcd-quorum-hook`` (leader only) and works per ControlPlane.

Which Machines, which etcd
--------------------------
A ControlPlane's Machines are those of its namespace matched by ``spec.selector``; they form one
etcd cluster, and ``spec.replicas`` is the number of voters it should have (the *desired*
count). A ControlPlane with ``spec.etcd.external: true`` is left alone entirely: no hooks, no
condition. An Inactive ControlPlane (``spec.state: Inactive``) only observes: no hook is placed
on or removed from its Machines and no member is promoted or removed; its ``EtcdClusterHealthy``
condition is still reported. etcd is reached at ``spec.etcd.endpoints`` (client certificate and
CA from the Secret ``spec.etcd.tlsSecretRef``: ``tls.crt``, ``tls.key``, ``ca.crt``), else at each Machine's
``etcd.cpo.dev/client-url`` annotation, else at ``https://<InternalIP>:2379``; one client per
ControlPlane is kept across passes (:mod:`controllers.etcd.pool`).

Which Machine a member belongs to is the one rule of :mod:`controllers.etcd.membership`, which
the ControlPlane controller follows as well: the provider's optional ``etcd.cpo.dev/member-id``
or ``etcd.cpo.dev/peer-url`` annotation, else the host of the member's peer URL among the
Machine's InternalIP addresses (IPv4 or IPv6), else the member's name as the Machine's or its
Node's.

The rules
---------
**The hook.** Every control-plane Machine that is not being deleted carries the preDrain
lifecycle hook ``{name: EtcdQuorumOperator, owner: clusteroperator/etcd}``. While a preDrain hook
is present the Machine API does not drain or terminate the Machine, so its etcd member keeps
running until this controller lets go. Hooks are placed only once the Machine API works (at
least one control-plane Machine ``Running``). A hook of that name with another owner is set
back; other hooks are never touched. Deleting a ControlPlane releases its Machines and removes
the hooks (nothing guards a released Machine), but first lets a replacement under way finish:
while one of its Machines being deleted still carries the hook, hooks are placed as usual (the
replacement's learner needs one to be promoted), and the old member is removed; after that no
hook is placed.

**Promotion.** New members join as *learners*: they copy the data but do not vote, so they
cannot weaken the quorum. A learner is promoted to voter only when its Machine carries the hook
and is not being deleted, one promotion at a time, never while a voter or the learner itself is
unhealthy (``MembersUnhealthy``: beside a dead voter the new one would be needed for the quorum;
the dead one goes first), and never beyond *desired + 1* voters (room for exactly one
replacement). etcd itself refuses a learner that has not caught up
(``LearnerNotInSync``); the controller asks again with a growing backoff.

**Removal.** When a Machine with the hook is deleted, its member is removed, one member per pass
across the whole cluster, and only if that is safe:

* a learner is removed at once (it holds no vote);
* a healthy voter only when the voters left still include at least *desired* healthy ones (so
  its replacement must have been promoted first) and a healthy quorum of themselves, and no
  other voter is unhealthy (``MembersUnhealthy``: 5 voters with one dead survive one more
  failure, 4 with one dead none; the dead one goes first once its Machine is deleted);
* an unhealthy voter when the healthy voters left still hold a quorum of the voters left
  (removing a dead member lowers the quorum it was failing to help with);
* nothing while the cluster has lost quorum: the controller never tries to repair a cluster that
  has lost quorum; it reports it and waits for a human (restore members, or recover from backup).

**maxSurge 0.** The one exception to "a replacement votes first": a Machine the ControlPlane
deleted in a ``maxSurge: 0`` rollout or rebalance (it marks it first,
``controlplane.cpo.dev/remove-member-first``), on clusters with no spare host. Its healthy voter
is removed before the replacement votes, so that the host it frees can take the replacement,
when the ControlPlane still deletes first, the voters are exactly *desired*, no learner is
pending, no other marked Machine's member went early, every other voter is healthy by reads made
right before the removal, the quorum holds without it and our hook is the only lifecycle hook
left on the Machine (:func:`~controllers.etcdquorum.early_removal.early_removal_decision`).
Voters never go below *desired* − 1; a user's or a health check's deletion is never treated so.

Membership changes (promotions and removals) are made one at a time and at least 2 seconds
apart, each decided from a fresh member list and fresh health reads. When several deleting
Machines qualify, an unhealthy member goes first (removing it never lowers the failures etcd
survives, a healthy one removed beside it leaves none), then one whose failure domain hosts
another voter, then by name. A removal that must wait says why: the
``EtcdClusterHealthy`` condition's message names the check (``HealthyVotersBelowDesired``,
``QuorumAfterRemoval``, ``QuorumLost``, ``EtcdUnreachable``...) and the members concerned; after
a minute the Machine and the ControlPlane get a Warning event with the same text.

**Leadership before a removal.** Removing the member that leads costs etcd an election: no
leader, so no write, for about an election timeout. So right before removing a voter the
controller reads the leader (an endpoint status read) and, when the voter leads, moves leadership
to the oldest voter that answers its health read and whose Machine stays (not being deleted, not
marked for remediation by a MachineHealthCheck), then reads the leader again and removes the
member only once another one leads (:func:`~controllers.etcdquorum.handoff.leadership_handoff`). A
move that fails, or a leader nobody reports, makes the removal wait that pass
(``LeadershipNotMoved``); after 3 such passes it goes on without, at the cost of one election. No
hand-off is tried, and the removal goes on, for a learner (it never leads), for a leader that fails
its health read (it cannot hand leadership on) or when no voter qualifies. This runs for every
removal, whoever deleted the Machine (a scale-in, a rollout, a remediation, a user's ``kubectl
delete machine``, another health check). The ControlPlane controller also moves leadership off a
Machine's member before *it* deletes that Machine
(:func:`controllers.controlplane.etcdview.forward_leadership`); that one is all there is with
``cpo run --controllers=controlplane``, and this one catches what it cannot see: a Machine deleted
by someone else, or leadership that came back while the replacement joined. cluster-api's
KubeadmControlPlane does the same in its pre-terminate hook, right before removing the member.

**Hook removal.** The hook comes off a deleting Machine only once a member list read from etcd
shows no member, voter or learner, belonging to it. Then the Machine API drains and terminates
it. If etcd cannot be read, the hook stays.

**Members of no Machine.** A started member that no Machine of the namespace maps to (its
Machine went behind the controller's back: the escape hatch below, a finalizer stripped, a
deletion while the operator was down) is removed when it is dead for good, with
cluster-etcd-operator's guards and more (:mod:`controllers.etcdquorum.members_without_machine`):
no Node speaks for it either, it has been unhealthy for ``member_without_machine_grace`` (120 s;
``cpo run --etcd-member-without-machine-grace``) and is again by a read right before the removal,
the Machine API works, the ControlPlane is Active and owns a Machine with a member, a list of the
namespace's Machines read from the API server (not the cache) confirms it has none, and the quorum
holds without it; one at a time, with a ``MemberWithoutMachineRemoved`` event. A **healthy**
member of no Machine is never removed on its own (it may run outside the Machine API): the
condition names it with why it stays, and so does ``cpo explain``. A learner that was added but
never started (it has no name), belongs to no Machine and has been seen so for 5 minutes is
removed too: that is what a provider leaves behind when it crashes between adding a member and
starting it; it would block every later join.

The escape hatch
----------------
A dead member needs no hatch: it is removed as soon as the voters left keep a quorum. A healthy
voter whose replacement can never vote (the replacement cannot join or never provisions) holds
its Machine's deletion for as long (``HealthyVotersBelowDesired``). To let that Machine go
anyway, accepting one voter fewer, remove the ``EtcdQuorumOperator`` hook from it by hand: the
controller never puts it back on a Machine being deleted, says so in a ``HookRemovedByOthers``
event, and the Machine is drained and terminated. Once the Machine and its Node are gone and the
member has been dead for the grace period, the controller removes it (members of no Machine,
above). (Before removing the member of a deleting Machine the controller reads that Machine from
the API server, not from its cache, so a hook taken off a moment ago is seen even when the
provider has already stopped the member.)

What to watch
-------------
* Condition ``EtcdClusterHealthy`` on the ControlPlane: ``True``/``EtcdHealthy``, or ``False``
  with ``QuorumLost``, ``MembersUnhealthy``, ``AlarmsActive``, ``MembersWithoutMachine`` or
  ``EtcdUnreachable``. The message counts members, voters and learners and names unhealthy
  members, alarms and every wait. Only this condition is written, by a status merge patch that
  carries the resourceVersion, so other controllers' conditions are kept.
* Conditions on each Machine (:mod:`controllers.etcdquorum.machine_conditions`), merged by type and
  written only when they change: ``EtcdMemberHealthy`` (``Leader``, ``Voter``, ``Learner``;
  ``VoterUnhealthy``, ``LearnerUnhealthy``, ``MemberNotFound``; Unknown ``InspectionFailed``)
  and ``EtcdQuorumHookHolding`` (True with the check that holds a deleting Machine, e.g.
  ``HealthyVotersBelowDesired`` or ``LeadershipNotMoved``, or ``RemovingMember``; False
  ``Guarding``, ``HookNotPlaced``, ``Released``, ``HookRemovedByOthers``). ``cpo explain`` shows
  both.
* Events (``kubectl describe machine``/``controlplane``): ``HookAdded``, ``HookRepaired``,
  ``LearnerPromoted``, ``MemberRemoved``, ``HookRemoved``, ``AbandonedLearnerRemoved``,
  ``MemberWithoutMachineRemoved``,
  ``HookRemovedByOthers`` and, for waits longer than a minute, the wait's reason.
  ``MemberRemoved`` reads ``etcd <voter|learner> <member> removed: <why it is safe>[; <what
  happened to leadership>]; leader before: <member>, term <N> → <M>``: the leader and raft term
  read right before the removal and the term read right after it (``?``: no member named a
  leader). A removed member named as the leader before, or ``M`` above ``N``, means that removal
  cost an election.
* Metrics, labelled ``controlplane="<namespace>/<name>"``: ``cpo_etcd_members{role}``,
  ``cpo_etcd_healthy_voters``, ``cpo_etcd_quorum_margin`` (healthy voters − quorum; alert on
  ``< 1``), ``cpo_etcd_learner_promotions_total``, ``cpo_etcd_member_removals_total``,
  ``cpo_etcd_hook_waits{reason}``, ``cpo_etcd_members_without_machine{reason}`` (why members of
  no Machine stay: ``Healthy``, ``NodePresent``, ``GracePeriod``, ``ClusterNotReady``,
  ``OneMemberChangeAtATime``; alert ``CPOEtcdMemberWithoutMachine``),
  ``cpo_etcd_members_without_machine_removed_total``, ``cpo_etcd_planned_voter_dip_seconds`` (a
  maxSurge-0 replacement's dip; alert ``CPOEtcdPlannedVoterDipTooLong``); plus the controller's
  own ``controller_runtime_*`` and ``workqueue_*`` series under ``controller="etcd-quorum-hook"``.

Restarts
--------
Nothing is kept in memory that decides anything: each pass re-reads the Machines and etcd. A
process killed at any point (after a promotion, after a removal, before the hook came off) is
finished by the next one. The timings are :class:`EtcdQuorumOptions`; in Python::

    from controllers.etcdquorum import EtcdQuorumOptions, setup_with_manager

    setup_with_manager(manager, EtcdQuorumOptions(busy_period=1.0, abandoned_learner_grace=300))

The hook's name and owner are options too (``hook_name``, ``hook_owner``; ``cpo run
--etcd-hook-name``/``--etcd-hook-owner``): on a cluster where another operator already writes
``EtcdQuorumOperator`` (OpenShift's etcd operator does), run this controller under a hook name of
its own, or not at all (``cpo run --controllers=*,-etcd-quorum-hook``); never as a second writer
of another operator's hook. ``docs/operations.md`` says which to choose.

The rules themselves are pure functions in :mod:`controllers.etcdquorum.rules`, with three of
their own modules: members of no Machine (:mod:`controllers.etcdquorum.members_without_machine`),
the maxSurge-0 early removal (:mod:`controllers.etcdquorum.early_removal`) and the leadership
hand-off (:mod:`controllers.etcdquorum.handoff`). The reconciler
(:mod:`controllers.etcdquorum.reconciler`) gathers, decides and acts, with its hook steps in
:mod:`controllers.etcdquorum.hooks`, its removals in :mod:`controllers.etcdquorum.removals`
(hand-off, removal, event) and :mod:`controllers.etcdquorum.strays` (members of no Machine), and
its condition, events and gauges in
:mod:`controllers.etcdquorum.report` (what ``EtcdClusterHealthy`` says is
:mod:`controllers.etcdquorum.cluster_health`'s); the options in :mod:`controllers.etcdquorum.options`, the
metrics in :mod:`controllers.etcdquorum.metrics`.
"""

from controllers.etcdquorum.options import EtcdQuorumOptions, ResolvedEtcdQuorumOptions
from controllers.etcdquorum.reconciler import CONTROLLER_NAME, EtcdQuorumReconciler, setup_with_manager
from controllers.etcdquorum.rules import HOOK_NAME, HOOK_OWNER, Hook

__all__ = [
    "CONTROLLER_NAME",
    "HOOK_NAME",
    "HOOK_OWNER",
    "EtcdQuorumOptions",
    "EtcdQuorumReconciler",
    "Hook",
    "ResolvedEtcdQuorumOptions",
    "setup_with_manager",
]
