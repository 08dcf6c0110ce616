"""The operator's APIs as pydantic models, and the CRDs generated from them.

* :mod:`api.controlplane` — ``ControlPlane`` (``controlplane.cpo.dev/v1alpha1``), this project's API.
* :mod:`api.controlplane_reasons` — the reasons of a ControlPlane's conditions and Events, and its
  preflight check names: strings users script against.
* :mod:`api.machine` — OpenShift's ``Machine`` and ``MachineHealthCheck`` (``machine.openshift.io/v1beta1``).
* :mod:`api.meta` — the base model, ``ObjectMeta``, ``LabelSelector``, wire types
  (Time, Duration, IntOrString).
* :mod:`api.selector` — label-selector matching and formatting.
* :mod:`api.ownership` — which Machines are a ControlPlane's: the controller-owner rule and the
  one classification every controller and the webhook filter.
* :mod:`api.nodes` — which Nodes are control-plane Nodes (either role label, or the selectors
  ``cpo run --control-plane-node-selector`` gives): the operator's cache and every controller.
* :mod:`api.components` — the control-plane components and kubelet's mirror Pods of them
  (kubeadm's names and labels): the ControlPlane controller reads them, the local provider writes them.
* :mod:`api.quorum` — etcd's quorum arithmetic, shared by the controllers, the webhook and ``cpo explain``.
* :mod:`api.failuredomains` — a ControlPlane's failure domains and the one reader of a Machine's.
* :mod:`api.crdgen` — ``cpo manifests``: CRD YAML from the models, like controller-gen.

Attributes are snake_case, the wire is camelCase; ``Model.from_dict(obj)`` and ``model.to_dict()``
convert losslessly:

>>> from api import ControlPlane
>>> raw = {
...     "apiVersion": "controlplane.cpo.dev/v1alpha1",
...     "kind": "ControlPlane",
...     "metadata": {"name": "cluster", "namespace": "openshift-machine-api"},
...     "spec": {
...         "replicas": 3,
...         "template": {"spec": {"providerSpec": {"value": {"instanceType": "m6i.xlarge"}}}},
...         "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
...     },
... }
>>> cp = ControlPlane.from_dict(raw)
>>> cp.spec.replicas, cp.spec.strategy.rolling_update.max_surge
(3, 1)
>>> cp.to_dict() == raw
True
"""

from .controlplane import (
    CONTROLPLANE_CRD,
    Condition,
    ControlPlane,
    ControlPlaneMachineSpec,
    ControlPlaneMachineTemplate,
    ControlPlaneSpec,
    ControlPlaneStatus,
    EtcdSpec,
    EtcdStatus,
    FailureDomain,
    HealthCheck,
    HealthCheckCondition,
    LastRemediation,
    MachineTemplateMetadata,
    Remediation,
    RollingUpdate,
    Strategy,
)
from .machine import (
    MACHINE_CRD,
    MACHINEHEALTHCHECK_CRD,
    LifecycleHook,
    LifecycleHooks,
    Machine,
    MachineCondition,
    MachineHealthCheck,
    MachineHealthCheckSpec,
    MachineHealthCheckStatus,
    MachineSpec,
    MachineStatus,
    UnhealthyCondition,
)
from .meta import CRDInfo, KubeModel, LabelSelector, ObjectMeta, ObjectReference, OwnerReference

ALL_CRDS: tuple[CRDInfo, ...] = (CONTROLPLANE_CRD, MACHINE_CRD, MACHINEHEALTHCHECK_CRD)
"""Every CRD ``cpo manifests`` writes."""

__all__ = [
    "ALL_CRDS",
    "CONTROLPLANE_CRD",
    "MACHINEHEALTHCHECK_CRD",
    "MACHINE_CRD",
    "CRDInfo",
    "Condition",
    "ControlPlane",
    "ControlPlaneMachineSpec",
    "ControlPlaneMachineTemplate",
    "ControlPlaneSpec",
    "ControlPlaneStatus",
    "EtcdSpec",
    "EtcdStatus",
    "FailureDomain",
    "HealthCheck",
    "HealthCheckCondition",
    "KubeModel",
    "LabelSelector",
    "LastRemediation",
    "LifecycleHook",
    "LifecycleHooks",
    "Machine",
    "MachineCondition",
    "MachineHealthCheck",
    "MachineHealthCheckSpec",
    "MachineHealthCheckStatus",
    "MachineSpec",
    "MachineStatus",
    "MachineTemplateMetadata",
    "ObjectMeta",
    "ObjectReference",
    "OwnerReference",
    "Remediation",
    "RollingUpdate",
    "Strategy",
    "UnhealthyCondition",
]
