"""The control-plane static pods of a local machine, as kubelet shows them: their mirror Pods.

A control-plane Machine set up by kubeadm runs ``etcd``, ``kube-apiserver``,
``kube-controller-manager`` and ``kube-scheduler`` as static pods (manifests under
``/etc/kubernetes/manifests``); its kubelet creates a *mirror Pod* of each in the API server and
posts their status. This module decides what those mirror Pods are and when their status changes;
:mod:`providers.localmachine.mirror_pods` writes them, on the reconciler's heartbeats. Pure
functions and one small state machine (:class:`CrashLoop`), so every rule has a table test.

What a mirror Pod carries (the contract the operator reads):

* name ``<component>-<nodeName>`` in ``kube-system``; labels ``component: <component>`` and
  ``tier: control-plane`` (kubeadm's manifests);
* annotations :data:`MIRROR_ANNOTATION` and :data:`HASH_ANNOTATION` (both the manifest's hash,
  :func:`config_hash`), :data:`SOURCE_ANNOTATION` ``file``, and :data:`MACHINE_ANNOTATION`
  ``<namespace>/<machine>``: this provider's own mark, which no kubelet writes; it is how the
  provider tells the mirror Pods it made from any other (see :func:`is_ours`);
* the Node as controller owner (kubelet's ``pkg/kubelet/pod/mirror_client.go`` sets the same
  reference, so a Node's deletion takes its mirror Pods with it where a garbage collector runs);
* ``spec.nodeName``, one container named after the component, ``priorityClassName:
  system-node-critical``, ``hostNetwork: true`` and no service account: kube-apiserver's
  ServiceAccount admission (``plugin/pkg/admission/serviceaccount/admission.go``) refuses a
  mirror Pod that references one.

Status (:func:`pod_status`) is what kubelet's status manager posts: ``phase: Running``, the
conditions ``Initialized``, ``PodScheduled``, ``ContainersReady`` and ``Ready`` (a
``lastTransitionTime`` moves only when that condition's status does) and one container status.
:func:`status_changes` says whether a write is due, so a settled machine costs no Pod write at all.

A Node whose kubelet stops posting (``Ready=Unknown``: its member process dead or stopped) gets
its Pods' ``Ready`` turned False (:func:`marked_not_ready`), as kube-controller-manager's node
lifecycle controller does once a Node stops posting; the rest of their status stays as last posted.

Readiness: ``etcd`` follows its member's health read; the other three are ready unless their
``<component>-notready`` fault (:data:`POD_FAULTS`) is in force, under which the container
crash-loops: it restarts at once, then again after a back-off of 10 s doubling up to 300 s, as
kubelet backs off a failing container (``restartCount`` grows by one per restart, each one status
write), and waits meanwhile with reason ``CrashLoopBackOff``. Clearing the fault starts it again:
ready, its restart count kept, the back-off reset.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

from api.components import (
    COMPONENT_LABEL,
    ETCD,
    KUBE_APISERVER,
    KUBE_CONTROLLER_MANAGER,
    KUBE_SCHEDULER,
    KUBEADM_NAMESPACE,
    MIRROR_ANNOTATION,
    TIER,
    TIER_LABEL,
)
from runtime.jsoncodec import JSON

NAMESPACE: Final = KUBEADM_NAMESPACE
COMPONENTS: Final = (ETCD, KUBE_APISERVER, KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER)
"""The static pods of a control-plane Machine, in the order they are written."""

SOURCE_ANNOTATION: Final = "kubernetes.io/config.source"
HASH_ANNOTATION: Final = "kubernetes.io/config.hash"
MACHINE_ANNOTATION: Final = "local.cpo.dev/machine"
"""``<namespace>/<machine>`` of the Machine whose instance runs the static pod (this provider's mark)."""
PRIORITY_CLASS: Final = "system-node-critical"
IMAGE_PREFIX: Final = "local.cpo.dev/"
"""The containers' images name nothing to pull: the "containers" are this provider's own."""

POD_FAULTS: Final = {
    f"{KUBE_APISERVER}-notready": KUBE_APISERVER,
    f"{KUBE_CONTROLLER_MANAGER}-notready": KUBE_CONTROLLER_MANAGER,
    f"{KUBE_SCHEDULER}-notready": KUBE_SCHEDULER,
}
"""Fault name → the component it makes crash-loop (the Node and the etcd member stay healthy)."""

BACKOFF_INITIAL: Final = 10.0
BACKOFF_MAX: Final = 300.0
"""kubelet's crash-loop back-off: 10 s, doubled after each restart, at most 300 s."""


def pod_name(component: str, node_name: str) -> str:
    """``<component>-<nodeName>``, as kubelet names a mirror Pod."""
    return f"{component}-{node_name}"


def image(component: str) -> str:
    return f"{IMAGE_PREFIX}{component}:local"


def config_hash(component: str, node_name: str) -> str:
    """The static pod manifest's hash (hex): stable for a component on a Node, so a restarted
    provider recognizes the mirror Pods it made."""
    manifest = json.dumps({"component": component, "node": node_name, "image": image(component)})
    return hashlib.sha256(manifest.encode()).hexdigest()[:32]


def desired_pod(component: str, node: Mapping[str, Any], machine_key: str) -> JSON:
    """The mirror Pod of ``component`` on ``node`` (no status: that is :func:`pod_status`'s)."""
    node_name = str(node["metadata"]["name"])
    digest = config_hash(component, node_name)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(component, node_name),
            "namespace": NAMESPACE,
            "labels": {COMPONENT_LABEL: component, TIER_LABEL: TIER},
            "annotations": {
                MIRROR_ANNOTATION: digest,
                SOURCE_ANNOTATION: "file",
                HASH_ANNOTATION: digest,
                MACHINE_ANNOTATION: machine_key,
            },
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": node_name,
                    "uid": node["metadata"].get("uid"),
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": component, "image": image(component)}],
            "priorityClassName": PRIORITY_CLASS,
            "hostNetwork": True,
        },
    }


def matches(stored: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether ``stored`` is the mirror Pod ``desired`` describes: same manifest hash, same
    owning Node (uid included: a Node recreated under the same name is another Node) and our
    mark. kubelet deletes and recreates a mirror Pod that does not match, and so does the provider."""
    stored_meta, desired_meta = stored.get("metadata") or {}, desired["metadata"]
    annotations = stored_meta.get("annotations") or {}
    return (
        annotations.get(MIRROR_ANNOTATION) == desired_meta["annotations"][MIRROR_ANNOTATION]
        and annotations.get(MACHINE_ANNOTATION) == desired_meta["annotations"][MACHINE_ANNOTATION]
        and [(o.get("uid"), o.get("controller")) for o in stored_meta.get("ownerReferences") or ()]
        == [(o["uid"], o["controller"]) for o in desired_meta["ownerReferences"]]
    )


def is_ours(pod: Mapping[str, Any], clusters: set[str] | frozenset[str]) -> bool:
    """Whether this provider made ``pod``: a mirror Pod (:data:`MIRROR_ANNOTATION`) in
    :data:`NAMESPACE` that carries :data:`MACHINE_ANNOTATION` naming a Machine of one of
    ``clusters`` (namespaces whose Machines this provider reconciles). kubelet never writes that
    annotation, and a provider of other namespaces marks its Pods with those."""
    metadata = pod.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    mark = annotations.get(MACHINE_ANNOTATION)
    return (
        metadata.get("namespace") == NAMESPACE
        and MIRROR_ANNOTATION in annotations
        and isinstance(mark, str)
        and mark.split("/", 1)[0] in clusters
    )


def owner_node(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(name, uid)`` of the Node that controls ``pod``, if any."""
    for owner in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if owner.get("kind") == "Node" and owner.get("controller"):
            return str(owner.get("name")), str(owner.get("uid"))
    return None


def faulted_components(faults: frozenset[str] | set[str]) -> frozenset[str]:
    """The components whose ``<component>-notready`` fault is among ``faults``."""
    return frozenset(component for fault, component in POD_FAULTS.items() if fault in faults)


@dataclasses.dataclass(frozen=True, slots=True)
class CrashLoop:
    """What kubelet remembers of one container between two status passes.

    ``restarts`` is the container's ``restartCount``; ``started_at`` when it last started running
    (None while it waits); ``backoff`` the wait before its next restart and ``next_restart`` the
    clock time of that restart (both None while it runs); ``crashed_at`` the wall time of its
    last crash (``lastState.terminated.finishedAt``).
    """

    restarts: int = 0
    started_at: str | None = None
    backoff: float | None = None
    next_restart: float | None = None
    crashed_at: str | None = None

    @property
    def waiting(self) -> bool:
        return self.started_at is None


def _restarted(loop: CrashLoop, backoff: float, clock: float, wall: str) -> CrashLoop:
    """``loop`` after one more restart, the next one ``backoff`` seconds away."""
    return CrashLoop(
        restarts=loop.restarts + 1,
        started_at=None,
        backoff=backoff,
        next_restart=clock + backoff,
        crashed_at=wall,
    )


def advance(
    loop: CrashLoop,
    *,
    failing: bool,
    clock: float,
    wall: str,
    backoff_initial: float = BACKOFF_INITIAL,
    backoff_max: float = BACKOFF_MAX,
) -> CrashLoop:
    """One status pass of a container: ``failing`` (its fault in force) makes it crash and restart
    with kubelet's back-off, one restart per pass at most; otherwise it runs (started at ``wall``
    when it was waiting, its restart count kept and its back-off reset). ``clock`` is monotonic
    seconds, ``wall`` the RFC 3339 time written into the status."""
    if not failing:
        if loop.waiting:
            return dataclasses.replace(loop, started_at=wall, backoff=None, next_restart=None)
        return loop
    if loop.backoff is None:
        # The container crashes now; kubelet restarts it at once the first time, then backs off.
        return _restarted(loop, backoff_initial, clock, wall)
    if loop.next_restart is None:
        # Remembered from a stored status (a restarted provider): the back-off starts over now.
        return dataclasses.replace(loop, next_restart=clock + loop.backoff)
    if clock >= loop.next_restart:
        return _restarted(loop, min(backoff_max, loop.backoff * 2), clock, wall)
    return loop


def _condition(type_: str, ready: bool, previous: Mapping[str, Any] | None, wall: str, why: str) -> JSON:
    status = "True" if ready else "False"
    transition = (
        (previous or {}).get("lastTransitionTime") if (previous or {}).get("status") == status else None
    )
    condition: JSON = {"type": type_, "status": status, "lastTransitionTime": transition or wall}
    if not ready:
        condition["reason"] = "ContainersNotReady"
        condition["message"] = why
    return condition


def container_status(component: str, loop: CrashLoop, ready: bool, pod_uid: str, pod: str) -> JSON:
    """The container's status: running (ready or not) or waiting in ``CrashLoopBackOff``."""
    state: JSON
    if loop.waiting:
        state = {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off {loop.backoff or BACKOFF_INITIAL:g}s restarting failed "
                f"container={component} pod={pod}_{NAMESPACE}({pod_uid})",
            }
        }
    else:
        state = {"running": {"startedAt": loop.started_at}}
    status: JSON = {
        "name": component,
        "image": image(component),
        "imageID": "",
        "ready": ready and not loop.waiting,
        "restartCount": loop.restarts,
        "started": not loop.waiting,
        "state": state,
    }
    if loop.crashed_at is not None:
        status["lastState"] = {
            "terminated": {"exitCode": 1, "reason": "Error", "finishedAt": loop.crashed_at}
        }
    else:
        status["lastState"] = {}
    return status


def pod_status(pod: Mapping[str, Any], loop: CrashLoop, *, ready: bool, host_ip: str, wall: str) -> JSON:
    """The status kubelet posts for the mirror Pod ``pod`` (as stored: its conditions' transition
    times are kept where their status holds): ``ready`` is the container's readiness when it runs
    (the etcd member's health for etcd; True for the others), a crash-looping one is never ready."""
    component = str(pod["spec"]["containers"][0]["name"])
    name, uid = str(pod["metadata"]["name"]), str(pod["metadata"].get("uid") or "")
    container = container_status(component, loop, ready, uid, name)
    is_ready = bool(container["ready"])
    previous = {str(c.get("type")): c for c in (pod.get("status") or {}).get("conditions") or ()}
    why = f"containers with unready status: [{component}]"
    stored_start = (pod.get("status") or {}).get("startTime")
    return {
        "phase": "Running",
        "conditions": [
            _condition("Initialized", True, previous.get("Initialized"), wall, why),
            _condition("Ready", is_ready, previous.get("Ready"), wall, why),
            _condition("ContainersReady", is_ready, previous.get("ContainersReady"), wall, why),
            _condition("PodScheduled", True, previous.get("PodScheduled"), wall, why),
        ],
        "hostIP": host_ip,
        "podIP": host_ip,
        "startTime": stored_start or wall,
        "containerStatuses": [container],
    }


def marked_not_ready(pod: Mapping[str, Any], wall: str) -> list[JSON] | None:
    """The conditions of ``pod`` with ``Ready`` turned False, as the node lifecycle controller's
    ``MarkPodsNotReady`` (kube-controller-manager) turns it for every Pod of a Node whose kubelet
    stopped posting; None when there is nothing to turn (no Ready condition, or already False).
    The other conditions and the container statuses stay as the kubelet last posted them."""
    conditions = [dict(c) for c in (pod.get("status") or {}).get("conditions") or ()]
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is None or ready.get("status") == "False":
        return None
    ready["status"] = "False"
    ready["lastTransitionTime"] = wall
    return conditions


def status_changes(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether writing ``wanted`` would change ``stored``'s status. Only what ``wanted`` says
    counts: what the server or another writer added (``qosClass``, a container's ``containerID``,
    ``lastProbeTime: null`` as kube-apiserver serializes an unset time) is not a change."""
    return not _holds(stored.get("status") or {}, wanted)


def _holds(stored: Any, wanted: Any) -> bool:
    """Whether ``stored`` says everything ``wanted`` says (dicts: every key ``wanted`` sets, an
    empty one matching an absent one; lists: item by item, same length)."""
    if isinstance(wanted, Mapping):
        current = stored if isinstance(stored, Mapping) else {}
        if stored is not None and not isinstance(stored, Mapping):
            return False
        return all(value is None or _holds(current.get(key), value) for key, value in wanted.items())
    if isinstance(wanted, list):
        return (
            isinstance(stored, list)
            and len(stored) == len(wanted)
            and all(_holds(have, want) for have, want in zip(stored, wanted, strict=True))
        )
    return bool(stored == wanted)


def loop_from_status(
    pod: Mapping[str, Any], component: str, backoff_initial: float = BACKOFF_INITIAL
) -> CrashLoop:
    """A restarted provider's memory of a container: its restart count and start time as the Pod
    shows them (a container waiting in a crash loop resumes at the first back-off step)."""
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        if status.get("name") != component:
            continue
        running = ((status.get("state") or {}).get("running") or {}).get("startedAt")
        crashed = (((status.get("lastState") or {}).get("terminated")) or {}).get("finishedAt")
        return CrashLoop(
            restarts=int(status.get("restartCount") or 0),
            started_at=running,
            backoff=None if running else backoff_initial,
            next_restart=None,
            crashed_at=crashed,
        )
    return CrashLoop()
