"""Who may do what: RBAC evaluation over the stored Roles, ClusterRoles and their bindings.

The server answers ``SubjectAccessReview`` with :func:`authorize`, and, for the identities it
enforces RBAC on (:meth:`~apiserver.server.EmbeddedAPIServer.enforce_rbac`), checks every request
the same way before serving it, as kube-apiserver's ``--authorization-mode=RBAC`` does:

* ``system:masters`` may do everything (the admin token is in that group);
* every authenticated identity may read discovery, ``/version`` and the probes and review itself
  (:data:`BOOTSTRAP_RULES`, the rules of kube's bootstrap roles);
* otherwise a request is allowed when a ClusterRoleBinding, or a RoleBinding in the request's
  namespace, names the user, one of its groups, or its service account, and the role it refers to
  has a rule matching the verb, API group, resource (``resource/subresource`` for a subresource;
  ``*`` and ``*/subresource`` as wildcards), resource name, or non-resource URL (``/path`` or a
  trailing ``*`` prefix).

ClusterRole aggregation (``aggregationRule``) is not evaluated: a role is the rules it holds.

:class:`AccessRecorder` keeps every (verb, group, resource, subresource, namespace scope) one
identity asked for, which tests compare with the grants of a role.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from runtime.jsoncodec import JSON

from .store import Store

RBAC_GROUP = "rbac.authorization.k8s.io"
SUPERUSER_GROUP = "system:masters"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class Attributes:
    """One request as the authorizer sees it (kube's ``authorizer.Attributes``)."""

    user: str
    groups: Sequence[str]
    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    """For a non-resource request (``resource`` empty): the URL path."""

    @property
    def resource_request(self) -> bool:
        return bool(self.resource)


@dataclass(frozen=True, order=True)
class Access:
    """What one request used: its verb, API group, resource, subresource and namespace scope.

    ``namespace`` is None for a cluster-scoped request or one across all namespaces. A non-resource
    request is recorded with ``resource`` set to its path and ``group`` ``"<non-resource>"``.
    """

    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str | None


NON_RESOURCE = "<non-resource>"

BOOTSTRAP_RULES: tuple[JSON, ...] = (
    # system:discovery, system:public-info-viewer
    {
        "verbs": ["get"],
        "nonResourceURLs": [
            "/api",
            "/api/*",
            "/apis",
            "/apis/*",
            "/openapi",
            "/openapi/*",
            "/version",
            "/version/",
            "/healthz",
            "/livez",
            "/readyz",
        ],
    },
    # system:basic-user
    {
        "verbs": ["create"],
        "apiGroups": ["authentication.k8s.io"],
        "resources": ["selfsubjectreviews"],
    },
    {
        "verbs": ["create"],
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    },
)
"""What kube-apiserver's bootstrap ClusterRoles grant every authenticated identity (the server
does not store those roles; it applies their rules)."""


@dataclass
class AccessRecorder:
    """Every access one identity asked for, allowed or not (see :class:`Access`)."""

    user: str
    used: set[Access] = field(default_factory=set)

    def record(self, attrs: Attributes) -> None:
        if attrs.resource_request:
            self.used.add(
                Access(attrs.verb, attrs.group, attrs.resource, attrs.subresource, attrs.namespace or None)
            )
        else:
            self.used.add(Access(attrs.verb, NON_RESOURCE, attrs.path, "", None))


def service_account_user(namespace: str, name: str) -> tuple[str, list[str]]:
    """The username and groups kube-apiserver gives a service account's token."""
    return (
        f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
        ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"],
    )


def authorize(store: Store, attrs: Attributes) -> tuple[bool, str]:
    """(allowed, reason), the reason naming the binding and role that allowed it."""
    if SUPERUSER_GROUP in attrs.groups:
        return True, ""
    if "system:authenticated" in attrs.groups and any(_allows(r, attrs) for r in BOOTSTRAP_RULES):
        return True, "RBAC: allowed by the bootstrap roles of system:authenticated"
    for binding in store.list((RBAC_GROUP, "clusterrolebindings")):
        rules = _role_rules(store, binding, "")
        if _names_subject(binding, attrs, "") and any(_allows(r, attrs) for r in rules):
            return True, _reason(binding, "ClusterRoleBinding")
    for binding in store.list((RBAC_GROUP, "rolebindings"), attrs.namespace) if attrs.namespace else []:
        rules = _role_rules(store, binding, attrs.namespace)
        if _names_subject(binding, attrs, attrs.namespace) and any(_allows(r, attrs) for r in rules):
            return True, _reason(binding, "RoleBinding")
    return False, ""


def forbidden_message(attrs: Attributes) -> str:
    """kube-apiserver's 403 message for a request RBAC denied."""
    user = attrs.user
    if not attrs.resource_request:
        return f'forbidden: User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    where = f' in the namespace "{attrs.namespace}"' if attrs.namespace else " at the cluster scope"
    named = f' "{attrs.name}"' if attrs.name else ""
    return (
        f'{qualified}{named} is forbidden: User "{user}" cannot {attrs.verb} resource "{resource}" '
        f'in API group "{attrs.group}"{where}'
    )


def _reason(binding: JSON, kind: str) -> str:
    ref = binding.get("roleRef") or {}
    meta = binding.get("metadata") or {}
    where = f' of namespace "{meta.get("namespace")}"' if meta.get("namespace") else ""
    return f'RBAC: allowed by {kind} "{meta.get("name")}"{where} of {ref.get("kind")} "{ref.get("name")}"'


def _names_subject(binding: JSON, attrs: Attributes, binding_namespace: str) -> bool:
    for subject in binding.get("subjects") or []:
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "User" and name == attrs.user:
            return True
        if kind == "Group" and name in attrs.groups:
            return True
        if kind == "ServiceAccount":
            namespace = subject.get("namespace") or binding_namespace
            if attrs.user == f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}":
                return True
    return False


def _role_rules(store: Store, binding: JSON, namespace: str) -> Iterable[JSON]:
    ref = binding.get("roleRef") or {}
    if ref.get("kind") == "ClusterRole":
        role = store.get((RBAC_GROUP, "clusterroles"), ("", str(ref.get("name"))))
    elif ref.get("kind") == "Role" and namespace:
        role = store.get((RBAC_GROUP, "roles"), (namespace, str(ref.get("name"))))
    else:
        role = None
    return (role or {}).get("rules") or []


def _allows(rule: dict[str, Any], attrs: Attributes) -> bool:
    verbs = rule.get("verbs") or []
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    if not attrs.resource_request:
        return any(
            url == attrs.path or url == "*" or (url.endswith("*") and attrs.path.startswith(url[:-1]))
            for url in rule.get("nonResourceURLs") or []
        )
    groups = rule.get("apiGroups") or []
    if "*" not in groups and attrs.group not in groups:
        return False
    resources = rule.get("resources") or []
    if attrs.subresource:
        wanted = {f"{attrs.resource}/{attrs.subresource}", f"*/{attrs.subresource}", "*"}
    else:
        wanted = {attrs.resource, "*"}
    if not wanted.intersection(resources):
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.name in names
