"""Whether each control-plane Machine's kube-apiserver, kube-controller-manager, kube-scheduler and
etcd run: read from their mirror Pods, the facts that gate every step of the ControlPlane.

A control-plane Machine is more than an etcd member on a Ready Node. Its components run as static
pods: kubelet starts them from files and shows each as a *mirror Pod* in the API server
(annotation ``kubernetes.io/config.mirror``, controller-owned by its Node, ``spec.nodeName`` the
Node). A template whose Machines boot, join etcd and report a Ready Node while their kube-apiserver
crash-loops would pass every other check, and a rollout would replace every working API server
with a broken one. So the ControlPlane reads these Pods (:func:`machine_components`) and:

* holds every delete, and every rollout or rebalance create, while a Machine other than the
  step's own has an unhealthy or not-yet-seen component (preflight
  ``ControlPlaneComponentsHealthy``, :func:`~controllers.controlplane.preflight.components_preflight`;
  a create toward ``spec.replicas`` is not held: it takes nothing away);
* takes Machines with unhealthy components first on scale-in and rollout
  (:func:`~controllers.controlplane.placement.scale_in_class`), and remediates only while another
  Machine keeps a full healthy set (:func:`~controllers.controlplane.remediation.components_rule`);
* counts a Machine in ``readyReplicas`` only with its components healthy;
* writes the Machine condition ``ControlPlaneComponentsHealthy`` (:func:`machine_condition`),
  which the ControlPlane's own MachineHealthCheck judges with its own timeout
  (``spec.healthCheck.componentsUnhealthyTimeout``), so a component that stays broken gets its
  Machine remediated like a NotReady Node.

KubeadmControlPlane does the same with ``APIServerPodHealthy``, ``ControllerManagerPodHealthy``,
``SchedulerPodHealthy`` and ``EtcdPodHealthy`` (its preflight, its scale-down order
``UnhealthyMachinesWithUnhealthyControlPlaneComponents``, its remediation); the
ControlPlaneMachineSet checks only the Node. We keep one Machine condition whose reason names the
failing component (:data:`COMPONENT_REASONS`) rather than one per component.

Where the Pods are: :class:`ComponentLayout`
--------------------------------------------
``cpo run --control-plane-components`` (``kubeadm``, the default; ``openshift``; ``off``):

* ``kubeadm``: every component in ``kube-system``, labelled ``component=<component>`` and
  ``tier=control-plane`` (``component=kube-apiserver``, ``kube-controller-manager``,
  ``kube-scheduler``, ``etcd``);
* ``openshift``: kube-apiserver in ``openshift-kube-apiserver`` (``apiserver=true``),
  kube-controller-manager in ``openshift-kube-controller-manager``
  (``kube-controller-manager=true``), kube-scheduler in ``openshift-kube-scheduler``
  (``scheduler=true``), etcd in ``openshift-etcd`` (``etcd=true``), as OpenShift's
  kube-apiserver, kube-controller-manager, kube-scheduler and etcd operators label their static
  pods.

(kubeadm names them ``<component>-<nodeName>``; OpenShift's operators name theirs
``kube-apiserver-<node>``, ``kube-controller-manager-<node>``, ``openshift-kube-scheduler-<node>``,
``etcd-<node>``, and keep installer and guard Pods in the same namespaces, which the labels leave
out.) A Pod counts only with the mirror annotation, and is matched to its Node by ``spec.nodeName``,
never by name. The operator's cache holds just these Pods (one scope per namespace and selector),
and its RBAC is a Role per namespace.

When a component is judged
--------------------------
* **Not before its Node is Ready**: a Machine without a Ready Node is held by the Node check.
* **A component never seen is not checked.** A component none of whose Pods has been seen on any
  control-plane Node (since the operator started) is not judged on any Machine: a cluster whose
  components are not static pods, or run elsewhere than the layout says, never blocks. Once every
  component of the layout is unseen and a control-plane Node has been Ready for the grace period,
  that is reported as a misconfiguration (ControlPlane condition ``ControlPlaneComponentsHealthy``
  Unknown, reason ``ComponentPodsNotFound``, and ``cpo explain``): counted as off, never as unhealthy.
* **A missing Pod** of a component seen elsewhere counts as unhealthy once the Node has been Ready
  for the grace period (``--control-plane-components-grace``, default 120 s; KCP's "Pod not
  found"); before that it is *pending*: it holds steps as a Machine still coming up does, but is
  not unhealthy (no condition False, nothing for the health check to judge).
* **A Pod** is healthy when its ``Ready`` condition is True; otherwise (not ready, Failed,
  Succeeded, being deleted) unhealthy, the message naming the container's waiting reason
  (``CrashLoopBackOff``) and its restarts.
* ``--control-plane-components=off`` turns the check off; it is then reported as off (condition
  Unknown, reason ``ComponentsCheckDisabled``), never as passing.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from api.components import (
    COMPONENT_LABEL,
    COMPONENTS,
    ETCD,
    KUBE_APISERVER,
    KUBE_CONTROLLER_MANAGER,
    KUBE_SCHEDULER,
    KUBEADM_NAMESPACE,
    MIRROR_ANNOTATION,
    TIER,
    TIER_LABEL,
)
from api.machine import CONDITION_COMPONENTS_HEALTHY
from controllers.common import parse_time
from controllers.conditions import condition, find_condition
from runtime.jsoncodec import JSON
from runtime.labels import Selector, as_selector

REASON_COMPONENTS_HEALTHY: Final = "ComponentsHealthy"
REASON_COMPONENTS_UNHEALTHY: Final = "ComponentsUnhealthy"
"""Several components are unhealthy (the message names each)."""
COMPONENT_REASONS: Final = {
    KUBE_APISERVER: "APIServerPodUnhealthy",
    KUBE_CONTROLLER_MANAGER: "ControllerManagerPodUnhealthy",
    KUBE_SCHEDULER: "SchedulerPodUnhealthy",
    ETCD: "EtcdPodUnhealthy",
}
"""The reason of a Machine's condition when exactly this component is unhealthy (KCP's names)."""
REASON_CHECK_DISABLED: Final = "ComponentsCheckDisabled"
REASON_PODS_NOT_FOUND: Final = "ComponentPodsNotFound"
REASON_WAITING_FOR_PODS: Final = "WaitingForComponentPods"
REASON_WAITING_FOR_NODE: Final = "WaitingForNode"

DEFAULT_GRACE_SECONDS: Final = 120.0


@dataclass(frozen=True)
class ComponentLocation:
    """Where one component's mirror Pods are: a namespace and a label selector."""

    namespace: str
    label_selector: str


@dataclass(frozen=True)
class ComponentLayout:
    """Where a cluster keeps its control-plane components' mirror Pods."""

    name: str
    locations: Mapping[str, ComponentLocation]
    """Component name → where its Pods are."""

    cache_scopes: Mapping[str, tuple[str, ...]] | None = None
    """Namespace → the label selectors the operator's cache lists and watches there, when fewer
    than one per component do (one set-based selector for kubeadm's four). Defaults to one
    scope per component's location."""

    def scopes(self) -> dict[str, list[str]]:
        """Namespace → the label selectors to cache there (the operator's cache scopes)."""
        if self.cache_scopes is not None:
            return {namespace: list(selectors) for namespace, selectors in self.cache_scopes.items()}
        scopes: dict[str, list[str]] = {}
        for location in self.locations.values():
            scopes.setdefault(location.namespace, []).append(location.label_selector)
        return scopes

    def component_of(self, pod: Mapping[str, Any]) -> str | None:
        """The component ``pod`` is a mirror Pod of, or None."""
        metadata = pod.get("metadata") or {}
        if MIRROR_ANNOTATION not in (metadata.get("annotations") or {}):
            return None
        labels = metadata.get("labels") or {}
        for component, location in self.locations.items():
            if metadata.get("namespace") == location.namespace and _parsed(location.label_selector).matches(
                labels
            ):
                return component
        return None


@functools.lru_cache(maxsize=64)
def _parsed(selector: str) -> Selector:
    """A layout's selector, parsed once (it is matched against every mirror Pod on every pass)."""
    return as_selector(selector)


def _kubeadm(component: str) -> ComponentLocation:
    return ComponentLocation(KUBEADM_NAMESPACE, f"{COMPONENT_LABEL}={component},{TIER_LABEL}={TIER}")


KUBEADM_LAYOUT: Final = ComponentLayout(
    "kubeadm",
    {c: _kubeadm(c) for c in COMPONENTS},
    cache_scopes={
        KUBEADM_NAMESPACE: (f"{COMPONENT_LABEL} in ({','.join(sorted(COMPONENTS))}),{TIER_LABEL}={TIER}",)
    },
)
OPENSHIFT_LAYOUT: Final = ComponentLayout(
    "openshift",
    {
        KUBE_APISERVER: ComponentLocation("openshift-kube-apiserver", "apiserver=true"),
        KUBE_CONTROLLER_MANAGER: ComponentLocation(
            "openshift-kube-controller-manager", "kube-controller-manager=true"
        ),
        KUBE_SCHEDULER: ComponentLocation("openshift-kube-scheduler", "scheduler=true"),
        ETCD: ComponentLocation("openshift-etcd", "etcd=true"),
    },
)
LAYOUTS: Final = {"kubeadm": KUBEADM_LAYOUT, "openshift": OPENSHIFT_LAYOUT}
"""``--control-plane-components`` values (besides ``off``)."""


def layout_named(name: str) -> ComponentLayout | None:
    """The layout ``name`` stands for (None for ``off``); raises ``ValueError`` naming the choices."""
    if name == "off":
        return None
    try:
        return LAYOUTS[name]
    except KeyError:
        choices = ", ".join([*LAYOUTS, "off"])
        raise ValueError(f"control-plane components layout {name!r}: choose one of {choices}") from None


# ---------------------------------------------------------------------------------------------- one Pod


@dataclass(frozen=True)
class ComponentState:
    """One component of one Machine."""

    component: str
    healthy: bool | None
    """True healthy, False unhealthy, None pending (a missing Pod within the grace period)."""
    message: str


def pod_state(component: str, pod: Mapping[str, Any]) -> ComponentState:
    """Healthy when the Pod's ``Ready`` condition is True and it is not being deleted."""
    metadata, status = pod.get("metadata") or {}, pod.get("status") or {}
    name = f"{metadata.get('namespace')}/{metadata.get('name')}"
    phase = status.get("phase") or "Pending"
    ready = find_condition(status.get("conditions") or [], "Ready") or {}
    if metadata.get("deletionTimestamp"):
        return ComponentState(component, False, f"Pod {name} is being deleted")
    if phase in ("Failed", "Succeeded"):
        return ComponentState(component, False, f"Pod {name} is {phase}")
    if ready.get("status") == "True":
        return ComponentState(component, True, f"Pod {name} Ready")
    return ComponentState(component, False, f"Pod {name} not ready{_container_detail(status)}")


def _container_detail(status: Mapping[str, Any]) -> str:
    """``" (CrashLoopBackOff, 4 restarts)"``: why its containers do not run, and how often they restarted."""
    containers = [c for c in status.get("containerStatuses") or () if isinstance(c, Mapping)]
    restarts = sum(int(c.get("restartCount") or 0) for c in containers)
    reasons = sorted(
        {
            str(why)
            for c in containers
            for state in ("waiting", "terminated")
            if (why := ((c.get("state") or {}).get(state) or {}).get("reason"))
        }
    )
    parts = [*reasons, f"{restarts} restart{'s' if restarts != 1 else ''}"] if containers else []
    return f" ({', '.join(parts)})" if parts else ""


# ---------------------------------------------------------------------------------------------- one Machine


@dataclass(frozen=True)
class MachineComponents:
    """The components of one Machine, as judged this pass."""

    states: tuple[ComponentState, ...] = ()
    judged: bool = False
    """False when nothing was judged (check off or unconfigured, no Ready Node): see ``why``."""
    why: str = ""
    """Why nothing was judged."""

    @property
    def unhealthy(self) -> tuple[str, ...]:
        return tuple(s.component for s in self.states if s.healthy is False)

    @property
    def pending(self) -> tuple[str, ...]:
        return tuple(s.component for s in self.states if s.healthy is None)

    @property
    def summary(self) -> str:
        """What is wrong, component by component (``kube-apiserver: Pod … not ready (…)``)."""
        return "; ".join(f"{s.component}: {s.message}" for s in self.states if s.healthy is not True)


def pods_by_node(layout: ComponentLayout, pods: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], JSON]:
    """(node name, component) → its mirror Pod; of several (a static pod being replaced), the newest."""
    found: dict[tuple[str, str], JSON] = {}
    for pod in pods:
        component = layout.component_of(pod)
        node = (pod.get("spec") or {}).get("nodeName")
        if component is None or not node:
            continue
        key = (str(node), component)
        if key not in found or _created(pod) >= _created(found[key]):
            found[key] = dict(pod)
    return found


def _created(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("creationTimestamp") or "")


def machine_components(
    *,
    node: str | None,
    ready_since: datetime | None,
    pods: Mapping[tuple[str, str], Mapping[str, Any]],
    checked: Sequence[str],
    now: datetime,
    grace: timedelta,
) -> MachineComponents:
    """The components of the Machine whose Node is ``node``, Ready since ``ready_since`` (None: not
    Ready). Only the ``checked`` components (seen somewhere: :class:`ComponentsCheck`) are judged."""
    if node is None or ready_since is None:
        return MachineComponents(why="its Node is not Ready")
    if not checked:
        return MachineComponents(why="no component is checked")
    states = []
    for component in checked:
        pod = pods.get((node, component))
        if pod is not None:
            states.append(pod_state(component, pod))
        elif now - ready_since >= grace:
            states.append(ComponentState(component, False, f"Pod not found on Node {node}"))
        else:
            states.append(ComponentState(component, None, f"Pod not seen yet on Node {node}"))
    return MachineComponents(tuple(states), judged=True)


# ------------------------------------------------------------------------------------------ one ControlPlane


@dataclass
class ComponentsCheck:
    """What the check knows across passes for one ControlPlane: the components ever seen.

    ``seen`` grows only (for as long as the operator runs): a component whose Pods all vanish
    after it was seen is missing, hence unhealthy after the grace period, not unchecked.
    """

    layout: ComponentLayout | None
    grace: timedelta
    seen: set[str] = field(default_factory=set)

    def observe(self, pods: Mapping[tuple[str, str], Mapping[str, Any]], nodes: Iterable[str]) -> list[str]:
        """Record the components with a Pod on one of ``nodes`` (the control-plane Nodes) and
        return the checked ones, in the layout's order."""
        if self.layout is None:
            return []
        names = set(nodes)
        self.seen.update(component for node, component in pods if node in names)
        return [c for c in self.layout.locations if c in self.seen]


def controlplane_condition(
    check: ComponentsCheck,
    checked: Sequence[str],
    machines: Mapping[str, MachineComponents],
    longest_ready: timedelta | None,
) -> JSON:
    """The ControlPlane's ``ControlPlaneComponentsHealthy``: True, False naming each Machine's
    broken components, or Unknown when the check is off, misconfigured or waiting for its Pods.
    ``longest_ready`` is how long the longest-Ready control-plane Node has been Ready."""
    layout = check.layout
    if layout is None:
        message = (
            "the check is turned off (cpo run --control-plane-components=off): components are not checked"
        )
        return condition(CONDITION_COMPONENTS_HEALTHY, "Unknown", REASON_CHECK_DISABLED, message)
    if not checked:
        if longest_ready is None or longest_ready < check.grace:
            message = f"no mirror Pod of the {layout.name} layout seen yet on a control-plane Node"
            return condition(CONDITION_COMPONENTS_HEALTHY, "Unknown", REASON_WAITING_FOR_PODS, message)
        return condition(
            CONDITION_COMPONENTS_HEALTHY, "Unknown", REASON_PODS_NOT_FOUND, misconfigured_message(check)
        )
    broken = {name: c for name, c in sorted(machines.items()) if c.unhealthy}
    unchecked = [c for c in layout.locations if c not in checked]
    note = f"; not checked (never seen): {', '.join(unchecked)}" if unchecked else ""
    if broken:
        message = "; ".join(f"Machine {name}: {c.summary}" for name, c in broken.items())
        return condition(
            CONDITION_COMPONENTS_HEALTHY, "False", REASON_COMPONENTS_UNHEALTHY, message + note, "Warning"
        )
    message = f"{', '.join(checked)} healthy on every Machine with a Ready Node{note}"
    return condition(CONDITION_COMPONENTS_HEALTHY, "True", REASON_COMPONENTS_HEALTHY, message)


def misconfigured_message(check: ComponentsCheck) -> str:
    """What the operator looked for and found nowhere, and what to do."""
    layout = check.layout
    assert layout is not None
    where = "; ".join(f"{c} in {loc.namespace} ({loc.label_selector})" for c, loc in layout.locations.items())
    other = ", ".join(n for n in LAYOUTS if n != layout.name)
    return (
        f"no mirror Pod of the {layout.name} layout ({where}) on any control-plane Node after "
        f"{int(check.grace.total_seconds())}s: the components are not checked. If they run as static "
        f"pods elsewhere, start cpo run with --control-plane-components={other}; if they are not "
        "static pods, with --control-plane-components=off"
    )


def machine_condition(components: MachineComponents, check_reason: str | None = None) -> JSON:
    """The Machine's ``ControlPlaneComponentsHealthy``. ``check_reason`` is the ControlPlane's
    reason when the check is off or unconfigured (then Unknown with that reason)."""
    if check_reason is not None:
        return condition(CONDITION_COMPONENTS_HEALTHY, "Unknown", check_reason, "components are not checked")
    if not components.judged:
        return condition(CONDITION_COMPONENTS_HEALTHY, "Unknown", REASON_WAITING_FOR_NODE, components.why)
    unhealthy = components.unhealthy
    if unhealthy:
        reason = COMPONENT_REASONS[unhealthy[0]] if len(unhealthy) == 1 else REASON_COMPONENTS_UNHEALTHY
        return condition(CONDITION_COMPONENTS_HEALTHY, "False", reason, components.summary, "Warning")
    if components.pending:
        return condition(CONDITION_COMPONENTS_HEALTHY, "Unknown", REASON_WAITING_FOR_PODS, components.summary)
    names = ", ".join(s.component for s in components.states)
    return condition(CONDITION_COMPONENTS_HEALTHY, "True", REASON_COMPONENTS_HEALTHY, f"{names} Ready")


def ready_since(node: Mapping[str, Any] | None) -> datetime | None:
    """When the Node's Ready condition last turned True, or None when it is not Ready (a Ready
    condition without a transition time counts as Ready since ever: no grace)."""
    if node is None:
        return None
    ready = find_condition((node.get("status") or {}).get("conditions") or [], "Ready") or {}
    if ready.get("status") != "True":
        return None
    return parse_time(ready.get("lastTransitionTime")) or datetime.min.replace(tzinfo=UTC)
