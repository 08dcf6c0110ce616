"""The control-plane components and how kubelet shows them: their static pods' mirror Pods.

A control-plane Node runs kube-apiserver, kube-controller-manager, kube-scheduler and etcd as
static pods (kubelet starts them from files), and kubelet shows each in the API server as a
*mirror Pod*: annotated :data:`MIRROR_ANNOTATION`, controller-owned by its Node. kubeadm keeps
them in :data:`KUBEADM_NAMESPACE`, named ``<component>-<nodeName>`` and labelled
``component=<component>`` (:data:`COMPONENT_LABEL`) and ``tier=control-plane`` (:data:`TIER_LABEL`,
:data:`TIER`). The ControlPlane controller reads them (:mod:`controllers.controlplane.components`);
the local provider writes them, playing kubelet (:mod:`providers.localmachine.static_pods`).

What the operator relies on, as Kubernetes has it: kubelet creates a mirror Pod for every static
pod with the annotation ``kubernetes.io/config.mirror`` (``ConfigMirrorAnnotationKey`` in
kubelet's ``pkg/kubelet/types``), ``spec.nodeName`` its Node and the Node as its controller
owner (``pkg/kubelet/pod/mirror_client.go``), and posts its status through ``pods/status`` (the
status manager), whose ``Ready`` condition is what the operator reads; kube-apiserver refuses a
mirror Pod that names a service account (``plugin/pkg/admission/serviceaccount/admission.go``), and
when a Node stops posting, kube-controller-manager turns its Pods' ``Ready`` False
(``MarkPodsNotReady``), so a dead Node's components read as not ready, never as stale ready.
"""

from __future__ import annotations

from typing import Final

KUBE_APISERVER: Final = "kube-apiserver"
KUBE_CONTROLLER_MANAGER: Final = "kube-controller-manager"
KUBE_SCHEDULER: Final = "kube-scheduler"
ETCD: Final = "etcd"
COMPONENTS: Final = (KUBE_APISERVER, KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER, ETCD)
"""Every component of a control-plane Machine, in the order conditions and messages name them."""

MIRROR_ANNOTATION: Final = "kubernetes.io/config.mirror"
"""kubelet's annotation on a static pod's mirror Pod (its hash of the static pod)."""
KUBEADM_NAMESPACE: Final = "kube-system"
COMPONENT_LABEL: Final = "component"
TIER_LABEL: Final = "tier"
TIER: Final = "control-plane"
