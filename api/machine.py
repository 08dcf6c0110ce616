"""OpenShift's Machine API, ``machine.openshift.io/v1beta1``: Machine and MachineHealthCheck.

Field names and JSON shapes follow OpenShift's types (``openshift/api`` ``machine/v1beta1``, the
Default feature set). The models allow extra keys, so whatever a real cluster stores beyond them
(``authoritativeAPI`` under a feature gate, whatever a later release adds) reads back untouched.
The generated CRDs are as strict as OpenShift's: no unknown field is kept under a Machine's
``spec`` or ``status`` (the API server prunes it, as OpenShift's does), status conditions are a
list-map keyed by ``type`` with ``lastTransitionTime`` required, and a MachineHealthCheck's fields
are optional where OpenShift's are. Only the opaque ``providerSpec.value`` and ``providerStatus``
keep whatever they hold (plain dicts, never interpreted):

>>> from api import Machine
>>> obj = {
...     "apiVersion": "machine.openshift.io/v1beta1",
...     "kind": "Machine",
...     "metadata": {"name": "master-0", "namespace": "openshift-machine-api"},
...     "spec": {"providerSpec": {"value": {"kind": "AWSMachineProviderConfig"}},
...              "lifecycleHooks": {"preDrain": [{"name": "etcd-quorum", "owner": "cpo"}]}},
...     "status": {"phase": "Running", "lastOperation": {"state": "Succeeded"}},
... }
>>> machine = Machine.from_dict(obj)
>>> if machine.status and machine.status.phase == "Running":
...     print([hook.name for hook in machine.spec.lifecycle_hooks.pre_drain])
['etcd-quorum']
>>> machine.to_dict() == obj          # lastOperation is not modelled, and kept
True

The project ships CRDs for these kinds for clusters that lack them (tests, the local provider);
on OpenShift the cluster's own CRDs serve them and the same models read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.config import JsonDict

from .meta import (
    CRDInfo,
    Duration,
    KubeModel,
    KubeObject,
    LabelSelector,
    ObjectMeta,
    ObjectReference,
    OwnerReference,
    PrinterColumn,
    Time,
)

GROUP = "machine.openshift.io"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"

# Machine phases (status.phase). A plain string on the wire, as in OpenShift: readers must cope
# with values a later release adds.
PHASE_PROVISIONING = "Provisioning"
PHASE_PROVISIONED = "Provisioned"
PHASE_RUNNING = "Running"
PHASE_DELETING = "Deleting"
PHASE_FAILED = "Failed"
MACHINE_PHASES = (PHASE_PROVISIONING, PHASE_PROVISIONED, PHASE_RUNNING, PHASE_DELETING, PHASE_FAILED)

# Machine conditions of the health-check hand-off: the MachineHealthCheck controller marks a
# Machine owned by a ControlPlane with both (status False); the ControlPlane controller remediates
# it and clears them.
CONDITION_HEALTH_CHECK_SUCCEEDED = "HealthCheckSucceeded"
CONDITION_OWNER_REMEDIATED = "OwnerRemediated"
REASON_WAITING_FOR_REMEDIATION = "WaitingForRemediation"


def marked_for_remediation(machine: Mapping[str, Any]) -> bool:
    """The MachineHealthCheck hand-off: ``HealthCheckSucceeded=False`` and ``OwnerRemediated=False``.

    The one reading of the mark: the ControlPlane remediates such a Machine, and the
    etcd-quorum-hook controller hands etcd leadership to no member of one.
    """
    status = machine.get("status")
    statuses: dict[str, str] = {}
    for entry in (status.get("conditions") if isinstance(status, Mapping) else None) or ():
        if isinstance(entry, Mapping):
            statuses.setdefault(str(entry.get("type")), str(entry.get("status")))
    return (
        statuses.get(CONDITION_HEALTH_CHECK_SUCCEEDED) == "False"
        and statuses.get(CONDITION_OWNER_REMEDIATED) == "False"
    )


# Reasons the ControlPlane writes into OwnerRemediated once it has decided about a marked Machine
# (cluster-api's names for a control plane's remediation): deferred (a rule makes it wait),
# impossible without a human, or carried out (the Machine is being deleted).
REASON_REMEDIATION_DEFERRED = "RemediationDeferred"
REASON_CANNOT_BE_REMEDIATED = "CannotBeRemediated"
REASON_MACHINE_DELETING = "MachineDeleting"
OWNER_WAITING_REASONS = (
    REASON_WAITING_FOR_REMEDIATION,
    REASON_REMEDIATION_DEFERRED,
    REASON_CANNOT_BE_REMEDIATED,
)
"""``OwnerRemediated`` reasons that say nothing was carried out yet: the mark may still be taken back."""

# Machine conditions the operator writes on a ControlPlane's Machines (cluster-api's
# KubeadmControlPlane writes the first two under the same names). Each has one writer, and every
# writer merges its own types into the stored list (controllers.conditions).
CONDITION_ETCD_MEMBER_HEALTHY = "EtcdMemberHealthy"
"""The Machine's etcd member: found, voter or learner, healthy, leader (etcd-quorum-hook controller)."""
REASON_ETCD_LEADER = "Leader"
"""True: a healthy voter that leads the cluster."""
REASON_ETCD_VOTER = "Voter"
"""True: a healthy voter."""
REASON_ETCD_LEARNER = "Learner"
"""True: a started learner that answers health reads (not yet a voter)."""
REASON_ETCD_VOTER_UNHEALTHY = "VoterUnhealthy"
"""False: a voter that does not answer a health read."""
REASON_ETCD_LEARNER_UNHEALTHY = "LearnerUnhealthy"
"""False: a learner that has not started or does not answer a health read."""
REASON_ETCD_MEMBER_NOT_FOUND = "MemberNotFound"
"""False: no member of the etcd cluster belongs to the Machine."""
REASON_ETCD_INSPECTION_FAILED = "InspectionFailed"
"""Unknown: etcd could not be read."""
ETCD_MEMBER_REASONS = (
    REASON_ETCD_LEADER,
    REASON_ETCD_VOTER,
    REASON_ETCD_LEARNER,
    REASON_ETCD_VOTER_UNHEALTHY,
    REASON_ETCD_LEARNER_UNHEALTHY,
    REASON_ETCD_MEMBER_NOT_FOUND,
    REASON_ETCD_INSPECTION_FAILED,
)

CONDITION_UP_TO_DATE = "UpToDate"
"""Whether the Machine matches its ControlPlane's spec, and why not (ControlPlane controller)."""
REASON_UP_TO_DATE = "UpToDate"
REASON_TEMPLATE_CHANGED = "TemplateChanged"
"""False: its spec differs from the ControlPlane's Machine template for its failure domain."""
REASON_FAILURE_DOMAIN_NOT_CONFIGURED = "FailureDomainNotConfigured"
"""False: its failure domain is not in ``spec.failureDomains`` any more."""
REASON_ROLLOUT_AFTER = "RolloutAfter"
"""False: it was created before ``spec.rolloutAfter``, which has passed."""

CONDITION_COMPONENTS_HEALTHY = "ControlPlaneComponentsHealthy"
"""Whether the Machine's kube-apiserver, kube-controller-manager, kube-scheduler and etcd Pods are
Ready, the reason naming the failing one (ControlPlane controller,
:mod:`controllers.controlplane.components`). The ControlPlane's MachineHealthCheck judges it False
for ``spec.healthCheck.componentsUnhealthyTimeout``."""

CONDITION_ETCD_QUORUM_HOOK_HOLDING = "EtcdQuorumHookHolding"
"""True while the etcd-quorum hook holds the Machine's drain (and so its deletion); the reason is
the check that holds it (etcd-quorum-hook controller)."""
REASON_HOOK_GUARDING = "Guarding"
"""False: the Machine is not being deleted; the hook is in place for when it is."""
REASON_HOOK_NOT_PLACED = "HookNotPlaced"
"""False: no hook yet (no control-plane Machine is Running, so the Machine API is not working)."""
REASON_HOOK_REMOVING_MEMBER = "RemovingMember"
"""True: being deleted and its member may be removed now; the hook goes once etcd no longer lists it."""
REASON_HOOK_RELEASED = "Released"
"""False: being deleted, no member left and no hook: the drain goes on."""
REASON_HOOK_REMOVED_BY_OTHERS = "HookRemovedByOthers"
"""False: being deleted while its member is still listed, and someone removed the hook."""

# Reasons of HealthCheckSucceeded=False: which check failed.
REASON_MACHINE_HAS_FAILURE = "MachineHasFailure"
REASON_NODE_STARTUP_TIMEOUT = "NodeStartupTimeout"
REASON_NODE_NOT_FOUND = "NodeNotFound"
REASON_UNHEALTHY_NODE = "UnhealthyNode"
REASON_UNHEALTHY_MACHINE_CONDITION = "UnhealthyMachineCondition"
"""One of the Machine's own conditions matched ``unhealthyMachineConditions`` for too long."""

# MachineHealthCheck status conditions and their reasons.
CONDITION_REMEDIATION_ALLOWED = "RemediationAllowed"
REASON_TOO_MANY_UNHEALTHY = "TooManyUnhealthy"
CONDITION_EXTERNAL_REMEDIATION_TEMPLATE_AVAILABLE = "ExternalRemediationTemplateAvailable"
REASON_EXTERNAL_REMEDIATION_TEMPLATE_NOT_FOUND = "ExternalRemediationTemplateNotFound"
CONDITION_EXTERNAL_REMEDIATION_REQUEST_AVAILABLE = "ExternalRemediationRequestAvailable"
REASON_EXTERNAL_REMEDIATION_REQUEST_CREATION_FAILED = "ExternalRemediationRequestCreationFailed"

# Condition severities (only with status False).
SEVERITY_ERROR = "Error"
SEVERITY_WARNING = "Warning"
SEVERITY_INFO = "Info"

LIFECYCLE_HOOK_NAME_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)

_PRESERVE: JsonDict = {"x-kubernetes-preserve-unknown-fields": True}


class MachineObjectMeta(KubeModel):
    """Metadata the machine controller copies onto the Node it creates (a subset of ObjectMeta)."""

    name: str | None = None
    """Name for the Node."""
    generate_name: str | None = None
    """Prefix for a generated Node name."""
    namespace: str | None = None
    """Namespace (Nodes are cluster-scoped; kept for compatibility)."""
    labels: dict[str, str] | None = None
    """Labels added to the Node."""
    annotations: dict[str, str] | None = None
    """Annotations added to the Node."""
    owner_references: list[OwnerReference] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"]},
    )
    """Owner references added to the Node."""


class LifecycleHook(KubeModel):
    """A named hold on a machine lifecycle step; the step waits while the hook is present."""

    name: str = Field(min_length=3, max_length=256, pattern=LIFECYCLE_HOOK_NAME_PATTERN)
    """Unique name of the hook, CamelCase, optionally prefixed by a domain (``example.com/Name``)."""
    owner: str = Field(min_length=3, max_length=512)
    """Who holds the hook and will remove it, e.g. ``clusteroperator/etcd``."""


class LifecycleHooks(KubeModel):
    """Hooks that pause a machine's deletion at fixed points."""

    pre_drain: list[LifecycleHook] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    """While any is present, the node is not drained (and so the machine is not terminated)."""
    pre_terminate: list[LifecycleHook] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    """While any is present, the drained machine's instance is not terminated."""


class Taint(KubeModel):
    """A taint applied to the machine's Node (``corev1.Taint``)."""

    key: str
    """Taint key."""
    value: str | None = None
    """Taint value."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    """What the taint does to pods that do not tolerate it."""
    time_added: Time | None = None
    """When a NoExecute taint was added."""


class ProviderSpec(KubeModel):
    """Provider-specific machine configuration."""

    value: dict[str, Any] | None = Field(default=None, json_schema_extra=_PRESERVE)
    """The provider's configuration object (e.g. AWSMachineProviderConfig), opaque to the Machine API."""


class MachineSpec(KubeModel):
    """Desired state of a Machine; the API server prunes fields it does not know."""

    metadata: MachineObjectMeta | None = None
    """Labels, annotations and names given to the Node."""
    lifecycle_hooks: LifecycleHooks | None = None
    """Hooks that pause deletion before drain and before termination."""
    taints: list[Taint] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"})
    """Taints added to the Node (never removed from it by the machine controller)."""
    provider_spec: ProviderSpec | None = None
    """Provider configuration of the instance."""
    provider_id: str | None = Field(default=None, alias="providerID")
    """The instance's ID at the provider; equals the Node's spec.providerID."""


class NodeAddress(KubeModel):
    """An address of the machine (``corev1.NodeAddress``)."""

    type: str
    """Hostname, ExternalIP, InternalIP, ExternalDNS or InternalDNS."""
    address: str
    """The address."""


class LastOperation(KubeModel):
    """The last operation the machine controller performed."""

    description: str | None = None
    """What happened, in words."""
    last_updated: Time | None = None
    """When it was recorded."""
    state: str | None = None
    """Processing, Failed, Successful, …"""
    type: str | None = None
    """Create, Update, Delete, …"""


class Condition(KubeModel):
    """An observation of a Machine API object (OpenShift's Condition, with severity); as a
    MachineHealthCheck's status holds them: a plain list, nothing required."""

    type: str | None = None
    """Condition type, CamelCase or ``example.com/CamelCase``."""
    status: str | None = None
    """True, False or Unknown."""
    severity: str | None = None
    """Error, Warning or Info; only with status False."""
    last_transition_time: Time | None = None
    """When status last changed."""
    reason: str | None = None
    """CamelCase cause of the last transition."""
    message: str | None = None
    """Human-readable details."""


class MachineCondition(KubeModel):
    """An observation of a Machine (OpenShift's Condition, with severity), as a Machine's status
    holds them: one per ``type`` (a list-map), with ``type``, ``status`` and ``lastTransitionTime``
    required."""

    type: str
    """Condition type, CamelCase or ``example.com/CamelCase``."""
    status: str
    """True, False or Unknown."""
    severity: str | None = None
    """Error, Warning or Info; only with status False."""
    last_transition_time: Time
    """When status last changed."""
    reason: str | None = None
    """CamelCase cause of the last transition."""
    message: str | None = None
    """Human-readable details."""


class MachineStatus(KubeModel):
    """Observed state of a Machine; the API server prunes fields it does not know."""

    node_ref: ObjectReference | None = Field(
        default=None, json_schema_extra={"x-kubernetes-map-type": "atomic"}
    )
    """The Node of this machine, once it has joined."""
    last_updated: Time | None = None
    """When the status was last observed."""
    error_reason: str | None = None
    """Machine-readable terminal problem that needs a human (e.g. InvalidConfiguration)."""
    error_message: str | None = None
    """Human-readable terminal problem."""
    provider_status: dict[str, Any] | None = Field(default=None, json_schema_extra=_PRESERVE)
    """Provider-specific status (e.g. AWSMachineProviderStatus), opaque to the Machine API."""
    addresses: list[NodeAddress] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    """Addresses of the instance, as the provider reports them."""
    last_operation: LastOperation | None = None
    """The last operation of the machine controller."""
    phase: str | None = None
    """Provisioning, Provisioned, Running, Deleting or Failed."""
    conditions: list[MachineCondition] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    """Current conditions, one per type."""


class Machine(KubeObject):
    """A single compute instance that is (or will become) a Node."""

    api_version: Literal["machine.openshift.io/v1beta1"] = "machine.openshift.io/v1beta1"
    """APIVersion of this object: machine.openshift.io/v1beta1."""
    kind: Literal["Machine"] = "Machine"
    """Kind of this object: Machine."""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    """Standard object metadata."""
    spec: MachineSpec = Field(default_factory=MachineSpec)
    """Desired state."""
    status: MachineStatus | None = None
    """Observed state, written by the machine controller."""


class UnhealthyCondition(KubeModel):
    """A Node condition that, held for ``timeout``, makes the machine unhealthy. Every field is
    optional in the schema, as in OpenShift's."""

    type: str | None = Field(default=None, min_length=1)
    """Node condition type, e.g. Ready."""
    status: str | None = Field(default=None, min_length=1)
    """Condition status that counts as unhealthy: True, False or Unknown."""
    timeout: Duration | None = None
    """How long the condition must hold, e.g. ``300s``."""


class MachineHealthCheckSpec(KubeModel):
    """Which machines to check and when to remediate them. Nothing is required, as in OpenShift's
    schema."""

    selector: LabelSelector | None = Field(
        default=None, json_schema_extra={"x-kubernetes-map-type": "atomic"}
    )
    """Machines to check; an empty or missing selector matches every machine in the namespace."""
    unhealthy_conditions: list[UnhealthyCondition] | None = Field(default=None, min_length=1)
    """Node conditions that make a machine unhealthy (any of them)."""
    max_unhealthy: int | Annotated[str, Field(pattern=r"^((100|[0-9]{1,2})%|[0-9]+)$")] = "100%"
    """Remediate only while at most this many selected machines (a count or a percentage) are
    unhealthy; 0 or 0% stops all remediation. Defaults to 100%."""
    node_startup_timeout: str = Field(default="10m", pattern=r"^0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
    """A machine without a Node after this long is unhealthy; ``0`` disables the check. Defaults to 10m."""
    remediation_template: ObjectReference | None = Field(
        default=None, json_schema_extra={"x-kubernetes-map-type": "atomic"}
    )
    """A remediation template of an external remediator; when set, remediation is handed to it."""


class MachineHealthCheckStatus(KubeModel):
    """What the last health check observed."""

    expected_machines: int | None = Field(default=None, ge=0)
    """Machines matched by the selector."""
    current_healthy: int | None = Field(default=None, ge=0)
    """Matched machines that are healthy."""
    remediations_allowed: int | None = Field(default=None, ge=0)
    """Further remediations allowed before maxUnhealthy stops them."""
    conditions: list[Condition] | None = None
    """Current conditions (RemediationAllowed)."""


class MachineHealthCheck(KubeObject):
    """Health policy for a set of machines; unhealthy ones are remediated."""

    api_version: Literal["machine.openshift.io/v1beta1"] = "machine.openshift.io/v1beta1"
    """APIVersion of this object: machine.openshift.io/v1beta1."""
    kind: Literal["MachineHealthCheck"] = "MachineHealthCheck"
    """Kind of this object: MachineHealthCheck."""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    """Standard object metadata."""
    spec: MachineHealthCheckSpec | None = None
    """Health-check policy."""
    status: MachineHealthCheckStatus | None = None
    """Most recently observed status."""


MACHINE_CRD = CRDInfo(
    model=Machine,
    group=GROUP,
    version=VERSION,
    kind="Machine",
    plural="machines",
    singular="machine",
    categories=("cluster-api",),
    printer_columns=(
        PrinterColumn("Phase", "string", ".status.phase", "Phase of the machine"),
        PrinterColumn(
            "Type", "string", ".metadata.labels['machine\\.openshift\\.io/instance-type']", "Instance type"
        ),
        PrinterColumn("Region", "string", ".metadata.labels['machine\\.openshift\\.io/region']", "Region"),
        PrinterColumn("Zone", "string", ".metadata.labels['machine\\.openshift\\.io/zone']", "Zone"),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp", "Age of the machine"),
        PrinterColumn("Node", "string", ".status.nodeRef.name", "Node of the machine", priority=1),
        PrinterColumn("ProviderID", "string", ".spec.providerID", "Instance ID at the provider", priority=1),
        PrinterColumn(
            "State",
            "string",
            ".metadata.annotations['machine\\.openshift\\.io/instance-state']",
            "Instance state",
            priority=1,
        ),
    ),
)

MACHINEHEALTHCHECK_CRD = CRDInfo(
    model=MachineHealthCheck,
    group=GROUP,
    version=VERSION,
    kind="MachineHealthCheck",
    plural="machinehealthchecks",
    singular="machinehealthcheck",
    short_names=("mhc", "mhcs"),
    categories=("cluster-api",),
    printer_columns=(
        PrinterColumn(
            "MaxUnhealthy", "string", ".spec.maxUnhealthy", "Most unhealthy machines remediation tolerates"
        ),
        PrinterColumn("ExpectedMachines", "integer", ".status.expectedMachines", "Machines checked"),
        PrinterColumn("CurrentHealthy", "integer", ".status.currentHealthy", "Machines healthy now"),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    ),
)
