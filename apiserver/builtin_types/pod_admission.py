"""Two of kube-apiserver's default admission plugins for Pods: ServiceAccount (for mirror Pods)
and Priority.

:func:`admit_pod` runs on the CREATE of a Pod (not of a subresource), before the mutating
webhooks, as these plugins run in kube-apiserver's chain before ``MutatingAdmissionWebhook``. It
sets what they set and returns the message of a refusal (the handler answers it as 403
Forbidden, ``pods "<name>" is forbidden: <message>``), or None.

* **ServiceAccount** (``plugin/pkg/admission/serviceaccount/admission.go``): a *mirror Pod* (one
  with the annotation ``kubernetes.io/config.mirror``, which a kubelet creates for a static pod)
  is never changed, and may reference no service account, no Secret (a secret volume, an
  ``imagePullSecrets`` entry, an env ``secretKeyRef`` or ``envFrom`` ``secretRef``) and no
  projected ServiceAccountToken. Other Pods are left as they are here: the embedded server does
  not default ``serviceAccountName`` to ``default`` nor mount a token (kube-apiserver does).
* **Priority** (``plugin/pkg/admission/priority/admission.go``): ``spec.priority`` and
  ``spec.preemptionPolicy`` come from the Pod's ``priorityClassName``: the two classes every
  kube-apiserver creates at start (``system-node-critical`` 2000001000 and
  ``system-cluster-critical`` 2000000000, both ``PreemptLowerPriority``), else 0 and
  ``PreemptLowerPriority`` when the Pod names no class. The embedded server serves no
  PriorityClass API, so any other name is refused as kube-apiserver refuses a class it does not
  have; so is a ``priority`` or ``preemptionPolicy`` given in the spec that differs from the
  computed one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from runtime.jsoncodec import JSON

from ..gostruct import meta_of, section

MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"
SYSTEM_PRIORITY_CLASSES: Final = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
"""The PriorityClasses kube-apiserver creates at start (``pkg/apis/scheduling``'s system classes)."""
DEFAULT_PREEMPTION_POLICY: Final = "PreemptLowerPriority"


def admit_pod(obj: JSON) -> str | None:
    """Apply the ServiceAccount and Priority plugins to a new Pod (in place); a refusal's message."""
    refusal = _mirror_pod_refusal(obj)
    if refusal is not None:
        return refusal
    return _priority(obj)


def _mirror_pod_refusal(obj: JSON) -> str | None:
    if MIRROR_POD_ANNOTATION not in (meta_of(obj).get("annotations") or {}):
        return None
    spec = section(obj)
    if spec.get("serviceAccountName"):
        return "a mirror pod may not reference service accounts"
    if _references_secrets(spec):
        return "a mirror pod may not reference secrets"
    for volume in spec.get("volumes") or ():
        for source in ((volume or {}).get("projected") or {}).get("sources") or ():
            if (source or {}).get("serviceAccountToken") is not None:
                return "a mirror pod may not use ServiceAccountToken volume projections"
    return None


def _references_secrets(spec: Mapping[str, Any]) -> bool:
    if spec.get("imagePullSecrets"):
        return True
    if any((volume or {}).get("secret") is not None for volume in spec.get("volumes") or ()):
        return True
    containers = [
        *(spec.get("initContainers") or ()),
        *(spec.get("containers") or ()),
        *(spec.get("ephemeralContainers") or ()),
    ]
    for container in containers:
        for env in (container or {}).get("env") or ():
            if ((env or {}).get("valueFrom") or {}).get("secretKeyRef") is not None:
                return True
        for source in (container or {}).get("envFrom") or ():
            if (source or {}).get("secretRef") is not None:
                return True
    return False


def _priority(obj: JSON) -> str | None:
    spec = obj.setdefault("spec", {})
    name = spec.get("priorityClassName") or ""
    if name and name not in SYSTEM_PRIORITY_CLASSES:
        return f"no PriorityClass with name {name} was found"
    priority = SYSTEM_PRIORITY_CLASSES.get(name, 0)
    given = spec.get("priority")
    if given is not None and given != priority:
        return (
            f"the integer value of priority ({given}) must not be provided in pod spec; priority "
            f"admission controller computed {priority} from the given PriorityClass name"
        )
    policy = spec.get("preemptionPolicy")
    if policy is not None and policy != DEFAULT_PREEMPTION_POLICY:
        return (
            f"the string value of PreemptionPolicy ({policy}) must not be provided in pod spec; "
            f"priority admission controller computed {DEFAULT_PREEMPTION_POLICY} from the given "
            "PriorityClass name"
        )
    spec["priority"] = priority
    spec["preemptionPolicy"] = DEFAULT_PREEMPTION_POLICY
    return None
