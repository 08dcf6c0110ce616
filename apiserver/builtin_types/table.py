"""The list of built-in types the server registers: :func:`builtin_types`.

Each entry is a :class:`~apiserver.registry.ResourceType` (group, version, resource, kind, scope,
short names, verbs, validation and defaulting) tied to its struct description and subresources;
:func:`builtin_entry` looks those up for a type.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

from ..gostruct import Struct, merge_keys_for
from ..registry import ResourceType
from .defaulting import (
    default_crd,
    default_namespace,
    default_node,
    default_pod,
    default_secret,
    default_service,
    default_webhooks,
)
from .events import CohabitingResourceType
from .structs import (
    CLUSTER_ROLE,
    CLUSTER_ROLE_BINDING,
    CONFIG_MAP,
    CORE_EVENT,
    CUSTOM_RESOURCE_DEFINITION,
    EVENTS_V1_EVENT,
    LEASE,
    MUTATING_WEBHOOK_CONFIGURATION,
    NAMESPACE,
    NODE,
    POD,
    POD_DISRUPTION_BUDGET,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SELF_SUBJECT_REVIEW,
    SERVICE,
    SERVICE_ACCOUNT,
    SUBJECT_ACCESS_REVIEW,
    TOKEN_REVIEW,
    VALIDATING_WEBHOOK_CONFIGURATION,
)
from .validation import (
    validate_config_map,
    validate_core_event,
    validate_crd,
    validate_events_v1_event,
    validate_lease,
    validate_namespace,
    validate_node,
    validate_pdb,
    validate_pod,
    validate_secret,
    validate_service,
    webhook_configuration_validator,
)
from .workloads import DEPLOYMENT, NETWORK_POLICY

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SUBRESOURCE_VERBS = ["get", "patch", "update"]


@dataclass(frozen=True)
class Subresource:
    """A subresource as discovery advertises it; group/version empty means the parent's."""

    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str = ""
    version: str = ""


@dataclass(frozen=True)
class BuiltinEntry:
    spec: Struct
    name_rule: str
    subresources: tuple[Subresource, ...]


_STATUS = Subresource("status", "", tuple(SUBRESOURCE_VERBS))
_BUILTINS: dict[tuple[str, str], BuiltinEntry] = {}


def _register(
    rt: ResourceType, spec: Struct, *, name_rule: str = "subdomain", subresources: Sequence[Subresource] = ()
) -> ResourceType:
    rt.builtin = True
    rt.key_order = [f.name for f in spec.fields]
    rt.merge_keys = merge_keys_for(spec)
    rt.storage_version_hash = rt.storage_version_hash or storage_version_hash(rt.group, rt.version, rt.kind)
    rt.has_status = rt.has_status or any(s.name == "status" for s in subresources)
    _BUILTINS[(rt.group, rt.resource)] = BuiltinEntry(spec, name_rule, tuple(subresources))
    return rt


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """Discovery's storageVersionHash: the first 8 bytes of sha256("group/version/kind"), base64."""
    import hashlib

    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def builtin_types() -> list[ResourceType]:
    """Everything the server serves natively, in discovery order within each group."""
    _BUILTINS.clear()
    sr = Subresource
    return [
        _register(
            ResourceType(
                "",
                "v1",
                "configmaps",
                "ConfigMap",
                "configmap",
                True,
                short_names=["cm"],
                verbs=list(ALL_VERBS),
                validate=validate_config_map,
                tracks_generation=False,
            ),
            CONFIG_MAP,
        ),
        _register(
            ResourceType(
                "",
                "v1",
                "events",
                "Event",
                "event",
                True,
                short_names=["ev"],
                verbs=list(ALL_VERBS),
                validate=validate_core_event,
                tracks_generation=False,
            ),
            CORE_EVENT,
        ),
        _register(
            ResourceType(
                "",
                "v1",
                "namespaces",
                "Namespace",
                "namespace",
                False,
                short_names=["ns"],
                verbs=["create", "delete", "get", "list", "patch", "update", "watch"],
                validate=validate_namespace,
                default=default_namespace,
                tracks_generation=False,
            ),
            NAMESPACE,
            name_rule="label",
            subresources=[sr("finalize", "", ("update",)), _STATUS],
        ),
        _register(
            ResourceType(
                "",
                "v1",
                "nodes",
                "Node",
                "node",
                False,
                short_names=["no"],
                verbs=list(ALL_VERBS),
                validate=validate_node,
                default=default_node,
                tracks_generation=False,
            ),
            NODE,
            subresources=[
                sr("proxy", "NodeProxyOptions", ("create", "delete", "get", "patch", "update")),
                _STATUS,
            ],
        ),
        _register(
            ResourceType(
                "",
                "v1",
                "pods",
                "Pod",
                "pod",
                True,
                short_names=["po"],
                categories=["all"],
                verbs=list(ALL_VERBS),
                validate=validate_pod,
                default=default_pod,
                tracks_generation=False,
            ),
            POD,
            subresources=[
                sr("attach", "PodAttachOptions", ("create", "get")),
                sr("binding", "Binding", ("create",)),
                sr("ephemeralcontainers", "", tuple(SUBRESOURCE_VERBS)),
                sr("eviction", "Eviction", ("create",), "policy", "v1"),
                sr("exec", "PodExecOptions", ("create", "get")),
                sr("log", "", ("get",)),
                sr("portforward", "PodPortForwardOptions", ("create", "get")),
                sr("proxy", "PodProxyOptions", ("create", "delete", "get", "patch", "update")),
                sr("resize", "", tuple(SUBRESOURCE_VERBS)),
                _STATUS,
            ],
        ),
        _register(
            ResourceType(
                "",
                "v1",
                "secrets",
                "Secret",
                "secret",
                True,
                verbs=list(ALL_VERBS),
                validate=validate_secret,
                default=default_secret,
                tracks_generation=False,
            ),
            SECRET,
        ),
        _register(
            ResourceType(
                "",
                "v1",
                "serviceaccounts",
                "ServiceAccount",
                "serviceaccount",
                True,
                short_names=["sa"],
                verbs=list(ALL_VERBS),
                tracks_generation=False,
            ),
            SERVICE_ACCOUNT,
            subresources=[sr("token", "TokenRequest", ("create",), "authentication.k8s.io", "v1")],
        ),
        _register(
            ResourceType(
                "",
                "v1",
                "services",
                "Service",
                "service",
                True,
                short_names=["svc"],
                categories=["all"],
                verbs=list(ALL_VERBS),
                validate=validate_service,
                default=default_service,
                tracks_generation=False,
            ),
            SERVICE,
            name_rule="dns1035",
            subresources=[
                sr("proxy", "ServiceProxyOptions", ("create", "delete", "get", "patch", "update")),
                _STATUS,
            ],
        ),
        _register(
            CohabitingResourceType(
                "events.k8s.io",
                "v1",
                "events",
                "Event",
                "event",
                True,
                short_names=["ev"],
                verbs=list(ALL_VERBS),
                validate=validate_events_v1_event,
                tracks_generation=False,
                storage_version_hash=storage_version_hash("", "v1", "Event"),
                storage_group_resource=("", "events"),
                storage_kind="Event",
            ),
            EVENTS_V1_EVENT,
        ),
        _register(
            ResourceType(
                "authentication.k8s.io",
                "v1",
                "selfsubjectreviews",
                "SelfSubjectReview",
                "selfsubjectreview",
                False,
                verbs=["create"],
                tracks_generation=False,
            ),
            SELF_SUBJECT_REVIEW,
        ),
        _register(
            ResourceType(
                "authentication.k8s.io",
                "v1",
                "tokenreviews",
                "TokenReview",
                "tokenreview",
                False,
                verbs=["create"],
                tracks_generation=False,
            ),
            TOKEN_REVIEW,
        ),
        _register(
            ResourceType(
                "authorization.k8s.io",
                "v1",
                "subjectaccessreviews",
                "SubjectAccessReview",
                "subjectaccessreview",
                False,
                verbs=["create"],
                tracks_generation=False,
            ),
            SUBJECT_ACCESS_REVIEW,
        ),
        _register(
            ResourceType(
                "apps",
                "v1",
                "deployments",
                "Deployment",
                "deployment",
                True,
                short_names=["deploy"],
                categories=["all"],
                verbs=list(ALL_VERBS),
            ),
            DEPLOYMENT,
            subresources=[_STATUS],
        ),
        _register(
            ResourceType(
                "networking.k8s.io",
                "v1",
                "networkpolicies",
                "NetworkPolicy",
                "networkpolicy",
                True,
                short_names=["netpol"],
                verbs=list(ALL_VERBS),
            ),
            NETWORK_POLICY,
        ),
        _register(
            ResourceType(
                "policy",
                "v1",
                "poddisruptionbudgets",
                "PodDisruptionBudget",
                "poddisruptionbudget",
                True,
                short_names=["pdb"],
                verbs=list(ALL_VERBS),
                validate=validate_pdb,
            ),
            POD_DISRUPTION_BUDGET,
            subresources=[_STATUS],
        ),
        _register(
            ResourceType(
                "rbac.authorization.k8s.io",
                "v1",
                "clusterrolebindings",
                "ClusterRoleBinding",
                "clusterrolebinding",
                False,
                verbs=list(ALL_VERBS),
                tracks_generation=False,
            ),
            CLUSTER_ROLE_BINDING,
        ),
        _register(
            ResourceType(
                "rbac.authorization.k8s.io",
                "v1",
                "clusterroles",
                "ClusterRole",
                "clusterrole",
                False,
                verbs=list(ALL_VERBS),
                tracks_generation=False,
            ),
            CLUSTER_ROLE,
        ),
        _register(
            ResourceType(
                "rbac.authorization.k8s.io",
                "v1",
                "rolebindings",
                "RoleBinding",
                "rolebinding",
                True,
                verbs=list(ALL_VERBS),
                tracks_generation=False,
            ),
            ROLE_BINDING,
        ),
        _register(
            ResourceType(
                "rbac.authorization.k8s.io",
                "v1",
                "roles",
                "Role",
                "role",
                True,
                verbs=list(ALL_VERBS),
                tracks_generation=False,
            ),
            ROLE,
        ),
        _register(
            ResourceType(
                "admissionregistration.k8s.io",
                "v1",
                "mutatingwebhookconfigurations",
                "MutatingWebhookConfiguration",
                "mutatingwebhookconfiguration",
                False,
                categories=["api-extensions"],
                verbs=list(ALL_VERBS),
                validate=webhook_configuration_validator(mutating=True),
                default=default_webhooks(True),
            ),
            MUTATING_WEBHOOK_CONFIGURATION,
        ),
        _register(
            ResourceType(
                "admissionregistration.k8s.io",
                "v1",
                "validatingwebhookconfigurations",
                "ValidatingWebhookConfiguration",
                "validatingwebhookconfiguration",
                False,
                categories=["api-extensions"],
                verbs=list(ALL_VERBS),
                validate=webhook_configuration_validator(mutating=False),
                default=default_webhooks(False),
            ),
            VALIDATING_WEBHOOK_CONFIGURATION,
        ),
        _register(
            ResourceType(
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                "CustomResourceDefinition",
                "customresourcedefinition",
                False,
                short_names=["crd", "crds"],
                categories=["api-extensions"],
                verbs=list(ALL_VERBS),
                validate=validate_crd,
                default=default_crd,
            ),
            CUSTOM_RESOURCE_DEFINITION,
            subresources=[_STATUS],
        ),
        _register(
            ResourceType(
                "coordination.k8s.io",
                "v1",
                "leases",
                "Lease",
                "lease",
                True,
                verbs=list(ALL_VERBS),
                validate=validate_lease,
                tracks_generation=False,
            ),
            LEASE,
        ),
    ]


def builtin_entry(rt: ResourceType) -> BuiltinEntry | None:
    if not _BUILTINS:
        builtin_types()
    return _BUILTINS.get((rt.group, rt.resource)) if rt.builtin else None
