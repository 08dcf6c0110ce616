"""The ``localmachine`` provider: each Machine becomes a real etcd member on loopback plus a Node.

It plays a cloud's Machine API for tests, benchmarks and laptops. It reconciles the Machines whose
``spec.providerSpec.value.kind`` is ``LocalMachineProviderSpec`` and nothing else. Try it::

    cpo dev-apiserver --kubeconfig-out /tmp/kc --crd config/crd --crd config/machine-api &
    cpo localmachine --state-dir /tmp/cpo-machines --kubeconfig /tmp/kc &
    kubectl --kubeconfig /tmp/kc apply -f - <<EOF
    apiVersion: machine.openshift.io/v1beta1
    kind: Machine
    metadata: {name: master-0, namespace: default}
    spec:
      providerSpec:
        value: {kind: LocalMachineProviderSpec, failureDomain: zone-a}
    EOF
    kubectl --kubeconfig /tmp/kc get machines,nodes

or in Python, in a manager of your own (here against the test suite's API server, ``kubeconfig``,
watching one namespace: a provider turns every Machine it sees into an etcd member):
a Machine becomes ``Running`` once its etcd member and Node are up, and deleting it stops the
member and removes the Node.

>>> import asyncio
>>> from providers.localmachine import LocalMachineOptions, setup_with_manager
>>> from runtime.cache import CacheOptions
>>> from runtime.client import Client
>>> from runtime.errors import NotFound
>>> from runtime.manager import Manager, ManagerOptions
>>> NAME, MACHINES = "docstring-master-0", "machine.openshift.io/v1beta1"
>>> MACHINE = {
...     "apiVersion": MACHINES, "kind": "Machine",
...     "metadata": {"name": NAME, "namespace": namespace},
...     "spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "failureDomain": "zone-a"}}},
... }
>>> async def phase(client: Client) -> str | None:
...     try:
...         machine = await client.get(MACHINES, "Machine", NAME, namespace)
...     except NotFound:
...         return None
...     return machine.get("status", {}).get("phase")
>>> async def main() -> None:
...     manager = await Manager.create(
...         ManagerOptions(
...             kubeconfig=kubeconfig,
...             cache_options=CacheOptions(namespace=namespace),  # this namespace's Machines only
...             metrics_bind_address="0",
...             health_probe_bind_address="0",
...         )
...     )
...     setup_with_manager(manager, LocalMachineOptions(state_dir=tmp_path, heartbeat_period=1))
...     stop = asyncio.Event()
...     running = asyncio.create_task(manager.start(stop))
...     async with await Client.from_kubeconfig(kubeconfig) as client, asyncio.timeout(60):
...         await client.create(MACHINE)
...         while await phase(client) != "Running":
...             await asyncio.sleep(0.2)
...         node = await client.get("v1", "Node", NAME)
...         print("Running; node zone:", node["metadata"]["labels"]["topology.kubernetes.io/zone"])
...         await client.delete(MACHINES, "Machine", NAME, namespace)
...         while await phase(client) is not None:
...             await asyncio.sleep(0.2)
...         print("deleted")
...     stop.set()
...     await running
>>> asyncio.run(main())
Running; node zone: zone-a
deleted

Clusters and membership
-----------------------
One etcd cluster per **namespace**: the first Machine of a namespace that gets provisioned
bootstraps a new cluster, every later one joins it as a **learner** (member add with
``isLearner``, then start with ``--initial-cluster-state existing``, as kubeadm joins a control
plane node). Members live under ``<state_dir>/<namespace>/<machine name>/`` (state file, data,
log; see :mod:`providers.localmachine.etcd_process`) and the etcd member is named after the Machine.

The provider **never promotes and never removes** members: promotion of caught-up learners and
removal of a deleted machine's member are the etcd-quorum-hook controller's job (tests promote
with :class:`~controllers.etcd.client.EtcdClient`). etcd before 3.6 allows one learner at a time,
so while a learner waits for its promotion a later Machine stays ``Provisioning`` with condition
``EtcdMemberStarted=False``, reason ``WaitingForLearnerPromotion`` naming the learner ahead, and
asks again with a backoff (``join_backoff_initial`` doubling up to ``join_backoff_max``). With
etcd ≥ 3.6, :attr:`providers.localmachine.etcd_process.EtcdProcessOptions.max_learners` raises the limit and
nothing else changes. For about 5 s after a member starts or is promoted, etcd refuses member
adds ("unhealthy cluster"): reason ``WaitingForEtcdCluster``, retried the same way.

Where the operator finds a machine's member (default mode): every member of this provider listens on the same
host, so addresses cannot tell them apart, and the provider writes the operator's contract
annotations (:mod:`controllers.etcd.membership`): ``etcd.cpo.dev/client-url``,
``etcd.cpo.dev/peer-url`` and ``etcd.cpo.dev/member-id`` (hex), together with
``spec.providerID``. The peer URL is also written *before* each ``member add`` (the URL that add
asks for), so that a member etcd has always belongs to a Machine, even if the provider dies
between the add and the rest.

Realistic mode
--------------
``cpo localmachine --realistic`` (:attr:`LocalMachineOptions.realistic`) shows the operator only
what a cloud shows it (see :mod:`providers.localmachine.realistic`):

* every member listens on a **loopback address of its own** at the standard ports, 2379 for
  clients and 2380 for peers. The provider takes a block ``127.X.Y.0/24`` (``--address-block
  127.X.Y``; by default one drawn at random whose first addresses are free on both ports, so two
  providers run side by side), records it in ``<state_dir>/address-block.json`` and hands its
  addresses out in turn; an address is handed out again only once no member record holds it
  (and, with host pools, below, only to the pool that holds it).
  Linux routes all of 127.0.0.0/8 to ``lo``: nothing to set up.
* that address is the Machine's ``status.addresses`` InternalIP (written *before* the member
  add, as a cloud reports an instance's private address before anything runs on it) and its
  Node's. The **Node is named after it**, as clouds name instances (``127.5.3.1`` →
  ``ip-127-5-3-1``, also the Hostname address), and the **etcd member is named after the Node**,
  as OpenShift names them: no name the operator sees is the Machine's.
* etcd serves **TLS with client-certificate auth** on both ports, from a CA the provider creates
  under ``<state_dir>/_pki/`` (kept across restarts); each member's certificate names its address.
  The client certificate, its key and the CA go into the Secret ``etcd-client-tls``
  (``--etcd-client-secret``) of each Machines' namespace as ``tls.crt``, ``tls.key`` and
  ``ca.crt``: name it in the ControlPlane's ``spec.etcd.tlsSecretRef``. The provider's own etcd
  calls (member add, health reads) use the same certificate.
* **no annotation** says where a member is: the operator derives ``https://<InternalIP>:2379``
  and maps members to Machines by their peer URL's host. The fault annotation below stays: it is
  a test control, not a fact about the cluster.

Host pools
----------
``cpo localmachine --max-instances-per-domain N`` (:attr:`LocalMachineOptions.max_instances_per_domain`)
models bare metal with N hosts per failure domain: at most N instances at once in each domain
(``providerSpec.value.failureDomain``, else ``.zone``; the Machines without either form a pool of
their own) of each cluster (namespace: each is a cluster of its own, with its own hosts). A host
is held from the moment a Machine is given it, before its member is added, until its instance is
gone: the member process stopped, its data removed and its Node deleted, right before the
finalizer is dropped. A deleting Machine held by lifecycle hooks keeps its host (its instance
runs). A Machine beyond the cap stays ``Provisioning`` with no member added and no process, with
condition ``EtcdMemberStarted=False``, reason ``WaitingForHost`` (the message names the domain,
the cap and the Machines holding its hosts); it asks again with the join backoff, and at once when
a Machine of its domain frees its host. In realistic mode each domain has a pool of N addresses
of the block, taken as its Machines first need them: a new Machine takes the first address of its
pool no Machine holds, so a **replacement takes the freed host's address** (its InternalIP, and
its Node and member name, are the old Machine's), and no address of a pool goes to another. etcd
refuses to add a member at a peer URL it still lists, so such a replacement joins once the old
member has been removed (the etcd-quorum hook's job; until then it waits as ``EtcdUnavailable``
with etcd's answer). In the default mode the cap only limits the count.

The claims live in ``<state_dir>/hosts.json`` (see :mod:`providers.localmachine.hosts`), so a
restarted provider counts the hosts in use; an instance recorded without a claim is counted once
its Machine is reconciled. Reconciles run concurrently (4 by default), but a claim reads and writes
the record with no await in between, so two Machines racing for a domain's last host never both
get it. Without the option there is no limit (claims are still recorded).

Lifecycle
---------
* **Provisioning**: finalizer ``local.cpo.dev/machine``; ``status.phase`` ``Provisioning`` →
  ``Provisioned`` (member started; ``spec.providerID`` = ``local:///<name>``, ``status.addresses``
  InternalIP = the member's host, Hostname = the name) → ``Running`` (Node created,
  ``status.nodeRef`` set). Status is written through the status subresource. The provider's
  own conditions (``EtcdMemberStarted``, ``NodeOwned``, ``Drainable``, ``Terminable``) are merged
  by type into the stored list under its resourceVersion, so another writer's Machine conditions
  (the health check's marks, the operator's) survive every status write.
* **Machine labels**, as a Machine API provider puts them on a Machine whose instance exists
  (machine-api-operator's actuators write them on each update of a running instance: region
  from the providerSpec, zone and instance type from the instance): ``machine.openshift.io/region``
  from ``providerSpec.value.region`` (default ``local``), ``machine.openshift.io/zone`` from
  ``.failureDomain``, else ``.zone`` (left out when neither is set) and
  ``machine.openshift.io/instance-type`` from ``.instanceType`` (default ``local``); ``kubectl
  get machines`` prints them as REGION, ZONE and TYPE. They are written with ``spec.providerID``
  and put back on each later reconcile when missing or different (a merge patch of those keys
  alone). A value that cannot be a label value fails the Machine (``InvalidConfiguration``). The
  operator does not hash them (a Machine's spec hash covers the template's labels only), and it
  reads the zone label only through a configured domain whose providerSpec names that zone
  (:func:`api.failuredomains.machine_domain`), so adding them replaces no Machine.
* **Node** ``<machine name>`` with labels ``node-role.kubernetes.io/master`` and
  ``node-role.kubernetes.io/control-plane`` (``node_role_labels``, ``--node-role-labels``:
  ``control-plane`` for that one only, as kubeadm labels Nodes; ``master`` for that one only),
  ``kubernetes.io/hostname`` and
  ``topology.kubernetes.io/zone`` (from ``providerSpec.value.failureDomain``, else ``.zone``;
  left out when neither is set), annotation ``machine.openshift.io/machine: <namespace>/<name>``.
  A Node of that name that belongs to another Machine is left alone (condition ``NodeOwned=False``).
* **Health**: every ``heartbeat_period`` the provider plays kubelet: Node ``Ready`` is ``True``
  while the member answers a health read within ``health_timeout``, ``False`` when it does not
  (or under the ``notready`` fault), and ``Unknown`` when the process is dead or stopped (then
  ``lastHeartbeatTime`` stops moving, as when a kubelet stops posting). A dead or stopped
  process thus shows within one heartbeat period (two at the most). Under the ``stop-member``
  fault a stopped member keeps ``Ready=True``: a kubelet that lives while its etcd fails.
* **Static pods**: every heartbeat in which it posts the Node's status, the provider posts its
  control-plane static pods' too, as kubelet does for a kubeadm control-plane node: the mirror
  Pods ``etcd-<node>``, ``kube-apiserver-<node>``, ``kube-controller-manager-<node>`` and
  ``kube-scheduler-<node>`` in ``kube-system`` (labels ``component``, ``tier: control-plane``;
  annotations ``kubernetes.io/config.mirror``, ``.source: file``, ``.hash``; the Node as
  controller owner; ``priorityClassName: system-node-critical``, ``hostNetwork``, no service
  account) and their status through ``pods/status``, written only when it changes (what they
  are: :mod:`providers.localmachine.static_pods`; how they are written:
  :mod:`providers.localmachine.mirror_pods`). ``etcd``'s readiness follows its member's health
  read; the others are Ready unless their ``*-notready`` fault is in force. A Node whose kubelet
  does not post (``Ready=Unknown``) gets its Pods' ``Ready`` turned False, as the node lifecycle
  controller turns it. The Pods go right before their Node; Pods this provider made (its
  annotation ``local.cpo.dev/machine: <namespace>/<machine>``, for a namespace whose Machines it
  reconciles) whose Node is gone (or is another Node of that name, another uid) are deleted on
  the first reconcile of that namespace and whenever one of its Machines has gone.
  ``static_pods=False`` (``cpo localmachine --no-static-pods``) makes none.
* **Deletion**: ``phase: Deleting``; while ``spec.lifecycleHooks.preDrain`` is non-empty the
  machine waits with ``Drainable=False`` (reason ``HookPresent``, the message names the hooks) and
  its Node keeps heartbeating; then the Node is cordoned; while ``preTerminate`` is non-empty it
  waits with ``Terminable=False``; then the process is stopped (SIGTERM, SIGKILL after
  ``stop_grace_period``), its data removed, the Node deleted and the finalizer dropped.
* A Machine that is ``Failed`` stays so (as with OpenShift's machine controller): delete it.
  Bad ``providerSpec`` values fail it with ``errorReason: InvalidConfiguration``; a provisioned
  machine whose member record vanished fails with ``InstanceMissing``.

Faults
------
A fault is state, not an order: in force while it is set. Two places set one: the annotation
``local.cpo.dev/fault`` (one fault, or several separated by commas, set and removed on a live
Machine), and the providerSpec's
``faults`` list (``providerSpec.value.faults: [notready]``), fixed for the Machine's life and in
force from the moment its instance starts: how a ControlPlane template faults every *new* Machine
without touching the existing ones (a fault in the template's metadata could be copied onto
existing Machines in place). An unknown fault in the list fails the Machine with
``errorReason: InvalidConfiguration``; an unknown annotation value is ignored (logged). The faults:

``kill``            SIGKILL the member once: a crash. The process stays dead (removing the
                    annotation does not bring it back); the Node turns ``Ready=Unknown``.
``stop``            SIGSTOP the member while the annotation is there, SIGCONT once it is removed
                    (a member paused behind the provider's back is resumed as well).
``stop-member``     as ``stop``, but the Node stays ``Ready=True``: an etcd that fails while its
                    kubelet lives (an etcd static pod crash-looping on a healthy host).
``notready``        Node ``Ready=False`` while the annotation is there, though the process lives.
``fail-provision``  on a Machine not provisioned yet: ``phase: Failed`` with ``errorReason:
                    CreateError``; no member is started. Ignored once provisioned.
``kube-apiserver-notready``, ``kube-controller-manager-notready``, ``kube-scheduler-notready``
                    that static pod crash-loops while Node and etcd member stay healthy: its
                    mirror Pod turns ``Ready=False`` and ``ContainersReady=False``, its container
                    waits in ``CrashLoopBackOff`` and restarts with kubelet's back-off (at once,
                    then after 10 s doubling up to 300 s; ``restartCount`` grows by one per
                    restart). Removed, the Pod is Ready again, its restart count kept. Nothing
                    happens with ``static_pods`` off.

Restart safety
--------------
Members are started with ``die_with_parent`` off: they outlive a provider crash, as machines
outlive their cloud controller. A restarted provider on the same ``state_dir`` re-attaches to the
recorded processes (pid + start time in the state files) and starts no duplicates. Run one
provider per state directory. A join writes the member's URLs to its state file before the
``member add``, so a crash while the add is on the wire (or an add whose answer was lost) is
finished by the next attempt: it starts the member etcd added under that peer URL, or adds it
again when etcd has none. Before that record existed, such a crash left an unstarted learner that
blocked every later join until the etcd-quorum hook removed it as abandoned (five minutes).
"""

from providers.localmachine.options import LocalMachineOptions, ResolvedLocalMachineOptions
from providers.localmachine.reconciler import (
    CONDITION_DRAINABLE,
    CONDITION_ETCD_MEMBER,
    CONDITION_TERMINABLE,
    ETCD_CLIENT_URL_ANNOTATION,
    ETCD_MEMBER_ID_ANNOTATION,
    ETCD_PEER_URL_ANNOTATION,
    FAULT_ANNOTATION,
    FINALIZER,
    PROVIDER_SPEC_KIND,
    REASON_WAITING_FOR_HOST,
    REASON_WAITING_FOR_LEARNER,
    LocalMachineReconciler,
    is_local_machine,
    setup_with_manager,
)

__all__ = [
    "CONDITION_DRAINABLE",
    "CONDITION_ETCD_MEMBER",
    "CONDITION_TERMINABLE",
    "ETCD_CLIENT_URL_ANNOTATION",
    "ETCD_MEMBER_ID_ANNOTATION",
    "ETCD_PEER_URL_ANNOTATION",
    "FAULT_ANNOTATION",
    "FINALIZER",
    "PROVIDER_SPEC_KIND",
    "REASON_WAITING_FOR_HOST",
    "REASON_WAITING_FOR_LEARNER",
    "LocalMachineOptions",
    "LocalMachineReconciler",
    "ResolvedLocalMachineOptions",
    "is_local_machine",
    "setup_with_manager",
]
