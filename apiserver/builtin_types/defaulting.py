"""Defaulting of the built-in types: scheme defaults while decoding, strategy defaults after.

``ResourceType.default`` holds what the real server does while decoding (scheme defaults): those
fields are attributed to the writer in managedFields. What a type's strategy or an admission
plugin sets later (namespace phase, pod QoS class, service cluster IP) lives in
:func:`prepare_for_create` / :func:`prepare_for_update`, which the handler runs after the
managedFields bookkeeping.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

from runtime.jsoncodec import JSON

from ..gostruct import meta_of, section
from ..registry import ResourceType
from .pod_admission import admit_pod


def default_namespace(obj: JSON) -> None:
    name = meta_of(obj).get("name")
    if name:
        obj.setdefault("metadata", {}).setdefault("labels", {})["kubernetes.io/metadata.name"] = name


def default_secret(obj: JSON) -> None:
    if not obj.get("type"):
        obj["type"] = "Opaque"
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def _image_pull_policy(image: str) -> str:
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    tag = last.split(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def default_pod(obj: JSON) -> None:
    spec = obj.setdefault("spec", {})
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            container.setdefault("resources", {})
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            if container.get("image"):
                container.setdefault("imagePullPolicy", _image_pull_policy(container["image"]))
            for port in container.get("ports") or []:
                port.setdefault("protocol", "TCP")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)


def default_service(obj: JSON) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))


def default_node(obj: JSON) -> None:
    status = obj.get("status")
    if isinstance(status, dict) and status.get("capacity") and not status.get("allocatable"):
        status["allocatable"] = dict(status["capacity"])


def default_webhooks(mutating: bool) -> Callable[[JSON], None]:
    def default(obj: JSON) -> None:
        for hook in obj.get("webhooks") or []:
            for rule in hook.get("rules") or []:
                rule.setdefault("scope", "*")
            hook.setdefault("failurePolicy", "Fail")
            hook.setdefault("matchPolicy", "Equivalent")
            hook.setdefault("namespaceSelector", {})
            hook.setdefault("objectSelector", {})
            hook.setdefault("timeoutSeconds", 10)
            if mutating:
                hook.setdefault("reinvocationPolicy", "Never")
            service = (hook.get("clientConfig") or {}).get("service")
            if isinstance(service, dict):
                service.setdefault("port", 443)

    return default


def default_crd(obj: JSON) -> None:
    spec = obj.setdefault("spec", {})
    names = spec.setdefault("names", {})
    kind = names.get("kind") or ""
    if not names.get("singular") and kind:
        names["singular"] = kind.lower()
    if not names.get("listKind") and kind:
        names["listKind"] = kind + "List"
    conversion = spec.get("conversion")
    if not isinstance(conversion, dict):
        spec["conversion"] = {"strategy": "None"}
    elif not conversion.get("strategy"):
        conversion["strategy"] = "None"
    for version in spec.get("versions") or []:
        scale = ((version.get("subresources") or {}).get("scale")) if isinstance(version, dict) else None
        del scale  # nothing to default in v1


_NEXT_CLUSTER_IP = [1]


def _allocate_cluster_ip() -> str:
    # 10.0.0.1 is the kubernetes service; allocate sequentially after it
    _NEXT_CLUSTER_IP[0] += 1
    n = _NEXT_CLUSTER_IP[0]
    return f"10.0.{n // 254}.{n % 254 + 1}" if n >= 254 else f"10.0.0.{n}"


def _qos_class(spec: JSON) -> str:
    requests_any = limits_any = False
    guaranteed = True
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        requests_any = requests_any or bool(requests) or bool(limits)
        limits_any = limits_any or bool(limits)
        if not limits or any(limits.get(k) is None for k in ("cpu", "memory")):
            guaranteed = False
        for key, value in requests.items():
            if limits.get(key) != value:
                guaranteed = False
    if not requests_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed and limits_any else "Burstable"


_DEFAULT_TOLERATIONS = (
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
)


def prepare_for_create(rt: ResourceType, obj: JSON) -> None:
    """What the type's strategy and the default admission plugins set on a new object (in place)."""
    key = (rt.group, rt.resource)
    if key == ("", "namespaces"):
        spec = obj.setdefault("spec", {})
        finalizers = spec.get("finalizers") or []
        if "kubernetes" not in finalizers:
            spec["finalizers"] = [*finalizers, "kubernetes"]
        obj["status"] = {"phase": "Active"}
    elif key == ("", "pods"):
        spec = obj.setdefault("spec", {})
        tolerations = spec.get("tolerations") or []
        for default in _DEFAULT_TOLERATIONS:
            if not any(t.get("key") == default["key"] for t in tolerations):
                tolerations = [*tolerations, dict(default)]
        spec["tolerations"] = tolerations
        # spec.priority and spec.preemptionPolicy: the Priority admission plugin's (admission_refusal).
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}
    elif key == ("", "services"):
        spec = obj.setdefault("spec", {})
        if spec.get("type") != "ExternalName":
            if not spec.get("clusterIP"):
                spec["clusterIP"] = _allocate_cluster_ip()
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
        obj["status"] = {"loadBalancer": {}}
    elif key == ("policy", "poddisruptionbudgets"):
        obj.pop("status", None)
    elif key == ("apiextensions.k8s.io", "customresourcedefinitions"):
        from ..schema import crd_initial_status

        # As the create response shows it: no conditions yet, empty accepted names.
        obj["status"] = crd_initial_status(obj)
    elif key == ("", "nodes"):
        section(obj).pop("configSource", None)


NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
"""The taint kube-apiserver's TaintNodesByCondition admission plugin puts on every new Node."""


def admit_create(rt: ResourceType, obj: JSON) -> None:
    """What kube-apiserver's default mutating admission plugins (those not expressed as strategy
    defaults in :func:`prepare_for_create`) do to a new object, in place. It runs once, before the
    mutating webhooks, which therefore see its result.

    TaintNodesByCondition (``plugin/pkg/admission/nodetaint/admission.go``, enabled by default):
    on the CREATE of a Node (not of a subresource) it appends the taint
    ``node.kubernetes.io/not-ready`` with effect ``NoSchedule`` -- no value, no timeAdded -- unless
    the Node already has a taint with that key and effect (``Taint.MatchTaint`` compares only those
    two; the value does not matter). Updates are never touched, so a taint removed later stays
    removed. In a cluster the node lifecycle controller removes it once the Node is Ready; nothing
    here does (no controller-manager), so every Node keeps it, as with envtest.
    """
    if (rt.group, rt.resource) != ("", "nodes"):
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    taints = spec.get("taints") or []
    if not any(
        isinstance(t, dict)
        and t.get("key") == NOT_READY_TAINT["key"]
        and t.get("effect") == NOT_READY_TAINT["effect"]
        for t in taints
    ):
        spec["taints"] = [*taints, dict(NOT_READY_TAINT)]


def admission_refusal(rt: ResourceType, obj: JSON) -> str | None:
    """What kube-apiserver's default admission plugins that may refuse a new object do to it (in
    place), and the message of their refusal: for Pods, ServiceAccount's rules for
    mirror Pods and Priority's (:mod:`~apiserver.builtin_types.pod_admission`). Runs once, after
    :func:`admit_create`, before the mutating webhooks."""
    if (rt.group, rt.resource) != ("", "pods"):
        return None
    return admit_pod(obj)


def graceful_delete_period(rt: ResourceType, obj: JSON, options: JSON) -> int:
    """Seconds a DELETE of ``obj`` waits before the object goes (0: at once).

    Pods only, as kube's pod strategy (``pkg/registry/core/pod/strategy.go``,
    ``CheckGracefulDelete``) decides: the request's ``gracePeriodSeconds``, else the Pod's
    ``spec.terminationGracePeriodSeconds``; 0 when the Pod is bound to no Node or has finished
    (``Succeeded``/``Failed``); a negative period counts as 1. In between, the Pod is stored with
    ``deletionTimestamp`` (now + the period) and ``deletionGracePeriodSeconds``: its kubelet
    deletes it with grace 0 once its containers stopped. Every other type goes at once.
    """
    if (rt.group, rt.resource) != ("", "pods"):
        return 0
    spec, status = section(obj), obj.get("status") or {}
    asked = options.get("gracePeriodSeconds")
    period = int(asked) if asked is not None else int(spec.get("terminationGracePeriodSeconds") or 0)
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        period = 0
    return 1 if period < 0 else period


def shortened_grace_period(rt: ResourceType, obj: JSON, options: JSON) -> int | None:
    """The new grace period of ``obj``, already being deleted gracefully, that a DELETE asking a
    shorter one sets (kube's ``rest.BeforeDelete``: only a shorter period may be given, and the
    deletion time moves earlier by the difference); None when it changes nothing."""
    if (rt.group, rt.resource) != ("", "pods"):
        return None
    pending = meta_of(obj).get("deletionGracePeriodSeconds")
    asked = options.get("gracePeriodSeconds")
    if not pending or asked is None or int(asked) >= int(pending):
        return None
    return max(int(asked), 0)


def prepare_for_update(rt: ResourceType, new: JSON, old: JSON, subresource: str = "") -> None:
    """Reset what an endpoint may not change (in place): status on the main resource, spec on /status.

    ``subresource="finalize"`` (namespaces) keeps only the new ``spec.finalizers``.
    """
    if subresource == "finalize":
        finalizers = section(new).get("finalizers")
        for key in list(new):
            if key != "metadata":
                del new[key]
        new.update({k: v for k, v in old.items() if k != "metadata"})
        spec = dict(section(old))
        if finalizers:
            spec["finalizers"] = finalizers
        else:
            spec.pop("finalizers", None)
        new["spec"] = spec
        return
    if not rt.has_status:
        return
    if subresource == "":
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)
        if (rt.group, rt.resource) == ("", "namespaces"):
            new.setdefault("spec", {})
            if "finalizers" in section(old):
                new["spec"]["finalizers"] = section(old)["finalizers"]
            else:
                new["spec"].pop("finalizers", None)
    elif subresource == "status":
        if "spec" in old:
            new["spec"] = old["spec"]
        else:
            new.pop("spec", None)
