"""The ControlPlane API, ``controlplane.cpo.dev/v1alpha1``: one object for all control-plane Machines.

A ControlPlane says how many control-plane Machines to run (an odd number, for etcd quorum), what
they look like (``template``), where (``failureDomains``) and how to replace them (``strategy``);
the controller reports progress in ``status``. Build one in Python and send its wire form (here
to the test suite's API server, ``kubeconfig``, in a fresh ``namespace``):

>>> import asyncio
>>> from api import ControlPlane, ControlPlaneMachineTemplate, ControlPlaneSpec, ObjectMeta
>>> from runtime.client import Client
>>> cp = ControlPlane(
...     metadata=ObjectMeta(name="cluster", namespace=namespace),
...     spec=ControlPlaneSpec(
...         replicas=3,
...         template=ControlPlaneMachineTemplate.for_provider_spec({"instanceType": "m6i.xlarge"}),
...     ),
... )
>>> async def create() -> ControlPlane:
...     async with await Client.from_kubeconfig(kubeconfig) as client:
...         return ControlPlane.from_dict(await client.create(cp.to_dict()))
>>> created = asyncio.run(create())
>>> created.spec.replicas, created.spec.strategy.type, created.spec.enable_autorepair
(3, 'RollingUpdate', True)

Defaults (replicas 1, state Active, the master-role selector, RollingUpdate with maxSurge 1,
autorepair on)
are in the models, in the generated CRD and in the defaulting webhook alike; the rules that a
schema cannot say (odd replicas, immutable fields) are in :mod:`webhooks.controlplane`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ConfigDict, Field

from .meta import (
    CRDInfo,
    Duration,
    KubeObject,
    LabelSelector,
    LocalObjectReference,
    ObjectMeta,
    PrinterColumn,
    ScaleSubresource,
    StrictKubeModel,
    Time,
)
from .selector import selector_matches

GROUP = "controlplane.cpo.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "ControlPlane"

MASTER_ROLE_LABEL = "machine.openshift.io/cluster-api-machine-role"
"""The label OpenShift puts on control-plane Machines; the default selector matches ``master``."""
DEFAULT_SELECTOR_LABELS = {MASTER_ROLE_LABEL: "master"}

MHC_SCOPE_LABEL = "controlplane.cpo.dev/machinehealthcheck"
"""The label that puts a MachineHealthCheck in this operator's hands, with the value
:data:`MHC_SCOPE_VALUE`.

A ControlPlane writes it on the MachineHealthCheck it owns (and adds it to one created before the
label existed); a user may write it on any other MachineHealthCheck to have this operator check
it. Only MachineHealthChecks carrying it are sent to the operator's admission webhook (the
``objectSelector`` of ``config/machinehealthcheck``), judged by it, reconciled or written by the
``machinehealthcheck`` controller: every other one (a worker check of the machine-api-operator,
say) is left to whoever else serves it, untouched. :func:`in_health_check_scope` is the one
statement of the rule."""
MHC_SCOPE_VALUE = "true"
MHC_SCOPE_SELECTOR: dict[str, Any] = {"matchLabels": {MHC_SCOPE_LABEL: MHC_SCOPE_VALUE}}
""":data:`MHC_SCOPE_LABEL` as a label selector, the form a webhook's ``objectSelector`` takes."""

UNHEALTHY_MACHINE_CONDITIONS_ANNOTATION = "controlplane.cpo.dev/unhealthy-machine-conditions"
"""On a MachineHealthCheck this operator checks: cluster-api's ``unhealthyMachineConditions`` (a JSON
list of ``{"type", "status", "timeout"}`` judged on the Machine's own conditions), which OpenShift's
MachineHealthCheck has no field for (:mod:`controllers.machinehealthcheck`)."""

REMOVE_MEMBER_FIRST_ANNOTATION = "controlplane.cpo.dev/remove-member-first"
"""Written by the ControlPlane on a Machine right before it deletes it in a ``maxSurge: 0`` rollout
or rebalance (the value is the step's reason, ``ReplacingOutdated`` or ``Rebalancing``): the
etcd-quorum-hook controller may then remove the Machine's healthy voter *before* its replacement
votes, so that the host it frees can take the replacement
(:func:`controllers.etcdquorum.early_removal.early_removal_decision`). A Machine a user or a health check
deletes never carries it, and the ControlPlane takes it off every Machine of its own that is not
being deleted (a crash between the mark and the delete leaves nothing behind for long)."""

RESUME_REMEDIATION_ANNOTATION = "controlplane.cpo.dev/resume-remediation"
"""Set by a user on a ControlPlane whose remediation retries stopped (``Degraded``, reason
``ReplacementsFailing`` or ``MaxRetryReached``), to an RFC 3339 time later than the failure
that stopped them (``kubectl annotate cp NAME controlplane.cpo.dev/resume-remediation=$(date -u
+%Y-%m-%dT%H:%M:%SZ)``): the lineage's retries start again from 0. Used once: the ControlPlane
removes it in the write that records the remediation it allowed. A value that is not a later
time is ignored, left in place, and the Degraded message says why
(:func:`controllers.controlplane.remediation.retry_rule`)."""


def in_health_check_scope(obj: Mapping[str, Any] | None) -> bool:
    """Whether a MachineHealthCheck (the wire form) is this operator's to judge and reconcile.

    True when its labels match :data:`MHC_SCOPE_SELECTOR`, exactly as the API server evaluates the
    webhook's ``objectSelector``; a missing object or one without labels is out of scope.

    >>> in_health_check_scope({"metadata": {"labels": {MHC_SCOPE_LABEL: "true"}}})
    True
    >>> in_health_check_scope({"metadata": {"name": "worker"}})
    False
    """
    metadata = (obj or {}).get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    return selector_matches(MHC_SCOPE_SELECTOR, labels if isinstance(labels, Mapping) else None)


DNS1123_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

State = Literal["Active", "Inactive"]
STATE_ACTIVE: State = "Active"
STATE_INACTIVE: State = "Inactive"
STATES: tuple[State, ...] = (STATE_ACTIVE, STATE_INACTIVE)
DEFAULT_STATE: State = STATE_ACTIVE
"""A ControlPlane created without ``spec.state`` is Active: on a cluster without control-plane
Machines it must bootstrap with no extra step. Over existing Machines the webhook refuses an Active
one whose replicas differ from their number (:mod:`webhooks.adoption`), so defaulting to Active
never lets it scale those Machines in unasked."""

Phase = Literal[
    "Pending", "Provisioning", "Running", "Scaling", "Updating", "Remediating", "Degraded", "Deleting"
]
PHASES: tuple[Phase, ...] = (
    "Pending",
    "Provisioning",
    "Running",
    "Scaling",
    "Updating",
    "Remediating",
    "Degraded",
    "Deleting",
)

# Condition types the controller maintains on a ControlPlane.
CONDITION_AVAILABLE = "Available"
CONDITION_PROGRESSING = "Progressing"
CONDITION_DEGRADED = "Degraded"
CONDITION_ETCD_CLUSTER_HEALTHY = "EtcdClusterHealthy"
CONDITION_MACHINES_READY = "MachinesReady"
CONDITION_REMEDIATING = "Remediating"
CONDITION_TYPES = (
    CONDITION_AVAILABLE,
    CONDITION_PROGRESSING,
    CONDITION_DEGRADED,
    CONDITION_ETCD_CLUSTER_HEALTHY,
    CONDITION_MACHINES_READY,
    CONDITION_REMEDIATING,
)


def _default_selector() -> LabelSelector:
    return LabelSelector(match_labels=dict(DEFAULT_SELECTOR_LABELS))


class RollingUpdate(StrictKubeModel):
    """How a rolling replacement proceeds."""

    max_surge: int = Field(default=1, ge=0, le=1)
    """Machines allowed above spec.replicas during a replacement: 1 creates the replacement
    before deleting the outdated machine (the safe default; it needs one spare host), 0 deletes
    first, for clusters with exactly as many hosts as replicas (bare metal). With 0 the old etcd
    member is removed before its replacement votes, so that its host can take the replacement,
    once every other voter is healthy, the voters are spec.replicas and no learner is pending:
    each replacement costs one voter of fault tolerance until the new member votes (3 replicas
    survive no further failure meanwhile); only rollouts and rebalancing do this, never a Machine
    a user or a health check deletes. Below 3 replicas a replacement always surges. Defaults to 1."""


def _default_rolling_update() -> RollingUpdate:
    return RollingUpdate(max_surge=1)


class Strategy(StrictKubeModel):
    """How outdated machines are replaced."""

    type: Literal["RollingUpdate", "OnDelete"] = "RollingUpdate"
    """RollingUpdate replaces outdated machines one at a time on its own; OnDelete replaces only
    machines a user deletes. Defaults to RollingUpdate."""
    rolling_update: RollingUpdate | None = None
    """Settings of the RollingUpdate strategy."""


def _default_strategy() -> Strategy:
    return Strategy(type="RollingUpdate", rolling_update=_default_rolling_update())


class ProviderSpec(StrictKubeModel):
    """Provider-specific machine configuration, passed through to the Machine unchanged."""

    value: dict[str, Any] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-preserve-unknown-fields": True}
    )
    """The provider's configuration object (for AWS an AWSMachineProviderConfig), copied to
    each Machine's spec.providerSpec.value; kept exactly as written."""


class MachineTemplateMetadata(StrictKubeModel):
    """Metadata of every Machine of the ControlPlane: given to each Machine it creates, and kept
    on the existing ones in place (changing it replaces no Machine)."""

    labels: dict[str, str] | None = None
    """Labels of each Machine; must be matched by spec.selector. Defaults to spec.selector's
    matchLabels. Written onto existing Machines in place; a label removed here is removed from
    them (never one the selector names), a label set on a Machine by someone else stays."""
    annotations: dict[str, str] | None = None
    """Annotations of each Machine. Written onto existing Machines in place; one removed here is
    removed from them, one set on a Machine by someone else stays. Keys under
    controlplane.cpo.dev/ and etcd.cpo.dev/ are the operator's and are not kept in step."""


class ControlPlaneMachineSpec(StrictKubeModel):
    """The spec of the Machines to create."""

    provider_spec: ProviderSpec
    """Provider configuration of each Machine."""


class ControlPlaneMachineTemplate(StrictKubeModel):
    """What each control-plane Machine looks like."""

    metadata: MachineTemplateMetadata | None = None
    """Labels and annotations of each Machine."""
    spec: ControlPlaneMachineSpec
    """Spec of each Machine."""

    @classmethod
    def for_provider_spec(
        cls, value: dict[str, Any], labels: dict[str, str] | None = None
    ) -> ControlPlaneMachineTemplate:
        """A template with this providerSpec.value and, by default, the default selector's labels."""
        return cls(
            metadata=MachineTemplateMetadata(labels=dict(labels or DEFAULT_SELECTOR_LABELS)),
            spec=ControlPlaneMachineSpec(provider_spec=ProviderSpec(value=value)),
        )


class FailureDomain(StrictKubeModel):
    """A zone (or other fault boundary) machines are spread over."""

    name: str = Field(min_length=1, max_length=63, pattern=DNS1123_LABEL_PATTERN)
    """Name of the failure domain, a DNS-1123 label unique in the list (e.g. ``us-east-1a``)."""
    provider_spec: ProviderSpec | None = None
    """Fields merged over template.spec.providerSpec.value for machines in this domain (JSON merge
    patch semantics), e.g. ``{"placement": {"availabilityZone": "us-east-1a"}}``."""


class Remediation(StrictKubeModel):
    """Limits on replacing unhealthy machines (Cluster API KubeadmControlPlane semantics)."""

    max_retry: int | None = Field(default=None, ge=0)
    """How many times in a row the replacement of a failed machine may itself be remediated
    before the controller stops and waits for a human (Degraded, reason MaxRetryReached).
    Defaults to the operator's limit, 5 unless cpo run --remediation-max-retry says otherwise
    (Degraded, reason ReplacementsFailing). Retries resume when the template changes or with the
    annotation controlplane.cpo.dev/resume-remediation set to a time after the failure."""
    retry_period: Duration | None = None
    """Wait between the remediation of a machine and the remediation of its replacement, the
    same before every retry. Defaults to an exponential backoff: 30s before the first retry,
    doubled per retry, at most 10m (cpo run --remediation-backoff-initial, -factor, -max)."""
    min_healthy_period: Duration | None = "1h"
    """A replacement that stays healthy this long resets the retry count: a later failure counts
    as a new problem, not a retry. Defaults to 1h."""


class HealthCheckCondition(StrictKubeModel):
    """A Node condition that, held for ``timeout``, makes a control-plane Machine unhealthy."""

    type: str = Field(min_length=1)
    """Node condition type, e.g. Ready."""
    status: Literal["True", "False", "Unknown"]
    """The condition status that counts as unhealthy."""
    timeout: Duration
    """How long the condition must hold, e.g. ``5m0s`` (``10s`` for a laptop demo)."""


def _default_unhealthy_conditions() -> list[HealthCheckCondition]:
    return [
        HealthCheckCondition(type="Ready", status="False", timeout="5m0s"),
        HealthCheckCondition(type="Ready", status="Unknown", timeout="5m0s"),
    ]


class HealthCheck(StrictKubeModel):
    """How the MachineHealthCheck the ControlPlane owns (with enableAutorepair) judges its Machines."""

    unhealthy_conditions: list[HealthCheckCondition] = Field(
        default_factory=_default_unhealthy_conditions, min_length=1
    )
    """Node conditions that make a Machine unhealthy (any of them). Defaults to OpenShift's:
    Ready False or Unknown for 5m0s."""
    node_startup_timeout: Duration = "10m"
    """A Machine without a Node after this long is unhealthy. Defaults to 10m."""
    components_unhealthy_timeout: Duration = "10m"
    """A Machine whose condition ``ControlPlaneComponentsHealthy`` stays False this long (its
    kube-apiserver, kube-controller-manager, kube-scheduler or etcd Pod not Ready, or missing) is
    unhealthy, and remediated like one whose Node is not Ready. ``"0s"`` turns it off. Defaults
    to 10m: longer than a component's restart, shorter than an on-call page."""


class EtcdSpec(StrictKubeModel):
    """How to reach the etcd cluster the control plane uses."""

    endpoints: list[str] | None = None
    """Client URLs of etcd members used for health and membership checks (e.g.
    ``https://10.0.0.10:2379``). When empty, the members are reached through the control-plane
    machines' addresses on port 2379."""
    tls_secret_ref: LocalObjectReference | None = None
    """Secret with the etcd client certificate (``tls.crt``, ``tls.key``) and CA (``ca.crt``)."""
    external: bool = False
    """etcd runs outside these machines: replicas may be even, no quorum checks and no etcd
    lifecycle hooks. Immutable after creation. Defaults to false (stacked etcd)."""


class ControlPlaneSpec(StrictKubeModel):
    """Desired state of the control plane."""

    replicas: int = Field(default=1, ge=1)
    """Number of control-plane machines: odd for stacked etcd (1, 3, 5, 7), any positive number
    with external etcd; more than 7 is allowed with a warning. Defaults to 1. An Active
    ControlPlane is refused at creation (and at activation) when this differs from the number of
    existing Machines spec.selector matches, unless there are none; later changes are not
    compared with them."""
    state: State = DEFAULT_STATE
    """Active or Inactive. Inactive observes only: it adopts nothing and writes nothing on
    Machines (no ownerReference, no etcd hook, no MachineHealthCheck), and reports in its status
    what it would do (condition Progressing). Inactive may become Active (the Machines are then
    adopted and outdated ones replaced); Active can never go back to Inactive (delete the
    ControlPlane instead: its Machines stay). Defaults to Active."""
    selector: LabelSelector = Field(default_factory=_default_selector)
    """Machines this control plane owns or adopts. Immutable after creation. Defaults to
    ``machine.openshift.io/cluster-api-machine-role: master``; must require that label (the
    operator watches no other Machine), which the template's labels must carry too."""
    template: ControlPlaneMachineTemplate
    """Template of the machines. A change to its providerSpec replaces the machines (one at a time,
    per spec.strategy); a change to its labels or annotations is written onto them in place."""
    failure_domains: list[FailureDomain] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    """Failure domains to spread machines over, evenly; empty means one implicit domain."""
    strategy: Strategy = Field(default_factory=_default_strategy)
    """How outdated machines are replaced. Defaults to RollingUpdate with maxSurge 1."""
    rollout_after: Time | None = None
    """Once this time has passed, Machines created before it are outdated and replaced, each
    once (like ``kubectl rollout restart``); until then it replaces nothing."""
    enable_autorepair: bool = True
    """Create and own a MachineHealthCheck so unhealthy machines get replaced. Defaults to true."""
    remediation: Remediation | None = None
    """Limits on automatic replacement of unhealthy machines."""
    health_check: HealthCheck | None = None
    """Unhealthy conditions and node startup timeout of the owned MachineHealthCheck. Defaults to
    OpenShift's: Ready False or Unknown for 5m0s, 10m for a Node to appear."""
    etcd: EtcdSpec | None = None
    """The etcd cluster; stacked on the control-plane machines unless etcd.external is set."""
    paused: bool = False
    """Hold the ControlPlane's own Machine changes: while true it creates and deletes no Machine
    (no scale-out or scale-in, rollout, rebalance or remediation: a Machine a health check marks
    waits, its OwnerRemediated condition saying why) and leaves its MachineHealthCheck as it is.
    The rest goes on: Machines are adopted, status, conditions and metrics are written, the
    MachineHealthCheck still marks unhealthy Machines, and the etcd-quorum hook still hooks the
    Machines, promotes learners and removes the members of Machines others delete. Defaults to
    false."""


class Condition(StrictKubeModel):
    """One aspect of the current state (``metav1.Condition``)."""

    type: str = Field(min_length=1, max_length=316)
    """Condition type: Available, Progressing, Degraded, EtcdClusterHealthy, MachinesReady or Remediating."""
    status: Literal["True", "False", "Unknown"]
    """Whether the condition holds."""
    observed_generation: int | None = Field(default=None, ge=0)
    """metadata.generation the condition was computed from."""
    last_transition_time: Time
    """When status last changed."""
    reason: str = Field(min_length=1, max_length=1024)
    """Machine-readable CamelCase cause of the last transition."""
    message: str = Field(default="", max_length=32768)
    """Human-readable details, e.g. which preflight check failed."""


class LastRemediation(StrictKubeModel):
    """The most recent remediation the controller started."""

    machine: str
    """Name of the machine that was remediated."""
    timestamp: Time
    """When the remediation started."""
    retry_count: int = Field(default=0, ge=0)
    """How many remediations in a row replaced a machine that had itself replaced a remediated one."""


class EtcdStatus(StrictKubeModel):
    """The stacked etcd cluster as the controller last read it. Absent with external etcd,
    before the first Machine, and while etcd cannot be read (the Available condition says why).
    Written only when a count or the leader changes."""

    voters: int = Field(ge=0)
    """Voting members (with or without a Machine)."""
    learners: int = Field(ge=0)
    """Members added but not yet promoted to voters."""
    healthy_voters: int = Field(ge=0)
    """Voters of this control plane's machines that answered a health read."""
    quorum: int = Field(ge=0)
    """Voters needed to commit anything: a strict majority of the voters."""
    fault_tolerance: int = Field(ge=0)
    """How many more voters may fail now while a quorum stays: healthy voters beyond the quorum."""
    leader_machine: str | None = None
    """The machine whose member leads, when known."""


class ControlPlaneStatus(StrictKubeModel):
    """Observed state of the control plane."""

    replicas: int | None = Field(default=None, ge=0)
    """Machines the control plane currently owns (including ones being deleted)."""
    updated_replicas: int | None = Field(default=None, ge=0)
    """Owned machines not being deleted that match the current template, failure domains and
    rolloutAfter, and are ready (as readyReplicas counts them): equal to spec.replicas once a
    rollout is done, and below it while a replacement is not yet ready."""
    ready_replicas: int | None = Field(default=None, ge=0)
    """Owned machines whose Node is Ready."""
    available_replicas: int | None = Field(default=None, ge=0)
    """Owned machines that are ready and host a healthy etcd voting member."""
    unavailable_replicas: int | None = Field(default=None, ge=0)
    """spec.replicas minus availableReplicas (never negative)."""
    selector: str | None = None
    """spec.selector in labelSelector query syntax, for the scale subresource."""
    observed_generation: int | None = Field(default=None, ge=0)
    """The metadata.generation the controller last acted on."""
    phase: Phase | None = None
    """Summary of what the control plane is doing."""
    conditions: list[Condition] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    """Current conditions, each with a reason and a message."""
    failure_reason: str | None = None
    """Machine-readable cause of a problem that needs a human (set together with failureMessage)."""
    failure_message: str | None = None
    """What is wrong and what to do about it, when the controller cannot continue on its own."""
    last_remediation: LastRemediation | None = None
    """The most recent remediation started."""
    etcd: EtcdStatus | None = None
    """The stacked etcd cluster: voters, learners, healthy voters, quorum, fault tolerance, leader."""


class ControlPlane(KubeObject):
    """A set of control-plane Machines managed together, keeping etcd quorum through every change."""

    model_config = ConfigDict(extra="ignore")

    api_version: Literal["controlplane.cpo.dev/v1alpha1"] = "controlplane.cpo.dev/v1alpha1"
    """APIVersion of this object: controlplane.cpo.dev/v1alpha1."""
    kind: Literal["ControlPlane"] = "ControlPlane"
    """Kind of this object: ControlPlane."""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    """Standard object metadata."""
    spec: ControlPlaneSpec
    """Desired state."""
    status: ControlPlaneStatus | None = None
    """Observed state, written by the controller."""


CONTROLPLANE_CRD = CRDInfo(
    model=ControlPlane,
    group=GROUP,
    version=VERSION,
    kind=KIND,
    plural="controlplanes",
    singular="controlplane",
    short_names=("cp",),
    categories=("cpo", "cluster-api"),
    scale=ScaleSubresource(),
    printer_columns=(
        PrinterColumn("Desired", "integer", ".spec.replicas", "Desired number of machines"),
        PrinterColumn("Current", "integer", ".status.replicas", "Machines owned, deleting ones included"),
        PrinterColumn("Ready", "integer", ".status.readyReplicas", "Machines whose node is Ready"),
        PrinterColumn(
            "Updated", "integer", ".status.updatedReplicas", "Ready machines matching the current template"
        ),
        PrinterColumn(
            "Available", "integer", ".status.availableReplicas", "Ready machines with a healthy etcd voter"
        ),
        PrinterColumn(
            "Unavailable", "integer", ".status.unavailableReplicas", "Desired machines not available"
        ),
        PrinterColumn("State", "string", ".spec.state", "Active, or Inactive (observes only)"),
        PrinterColumn("Phase", "string", ".status.phase", "What the control plane is doing"),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    ),
)
