"""Discovery and OpenAPI documents, rendered from the :class:`~.registry.Registry`.

Covers ``/api``, ``/apis``, ``/apis/<group>``, ``/api/v1`` and ``/apis/<group>/<version>``
(APIVersions, APIGroupList, APIGroup, APIResourceList), the aggregated discovery kubectl asks
for (``Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``),
``/version`` and OpenAPI v3 (``/openapi/v3``, one document per group/version, described in our
own words rather than kube-apiserver's, plus the small group and non-resource documents the root lists: enough
for ``kubectl apply`` and ``kubectl explain``). Key order follows kube-apiserver's output.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runtime.jsoncodec import JSON

from .builtin_types.structs import order_json_schema
from .builtin_types.table import ALL_VERBS
from .builtins import builtin_subresources, struct_of
from .gostruct import Anything, IntOrString, ListOf, MapOf, Quantity, Scalar, Struct, Time, TypeSpec
from .registry import Registry, ResourceType

DEFAULT_SERVER_ADDRESS = "127.0.0.1:6443"

# Built-in groups in kube-apiserver's priority order; other groups (CRDs) follow, sorted by name.
BUILTIN_GROUP_ORDER = (
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
)

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
PLAIN_JSON = "application/json"


KUBERNETES_RELEASE = ("1", "32")
"""The Kubernetes release (major, minor) whose API the stand-in serves; kubectl's skew check reads it."""

STAND_IN_VERSION = "0.1.0"
"""The stand-in's own version: the project's (``pyproject.toml``)."""

_MACHINES = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm"}


def version_info() -> JSON:
    """``GET /version``: the stand-in's own identity, presented as a Kubernetes 1.32 server.

    ``major``/``minor`` are the release whose API it serves, so clients' version checks pass;
    ``gitVersion`` is that release with the stand-in's version as semver build metadata
    (``v1.32.0+cpo.0.1.0``). ``gitCommit`` is the SHA-1 of the stand-in's source files and
    ``buildDate`` their latest change, so a changed stand-in reports another build; ``goVersion``,
    ``compiler`` and ``platform`` name the Python that runs it. The keys are kube-apiserver's, in
    its order.

    >>> info = version_info()
    >>> info["major"], info["minor"], info["gitVersion"]
    ('1', '32', 'v1.32.0+cpo.0.1.0')
    >>> len(info["gitCommit"]), info["gitTreeState"]
    (40, 'clean')
    """
    return dict(_build_identity())


@functools.cache
def _build_identity() -> JSON:
    sources = sorted(Path(__file__).resolve().parent.rglob("*.py"))
    digest = hashlib.sha1(usedforsecurity=False)
    for path in sources:
        digest.update(path.read_bytes())
    built = max(path.stat().st_mtime for path in sources)
    major, minor = KUBERNETES_RELEASE
    machine = platform.machine().lower()
    return {
        "major": major,
        "minor": minor,
        "gitVersion": f"v{major}.{minor}.0+cpo.{STAND_IN_VERSION}",
        "gitCommit": digest.hexdigest(),
        "gitTreeState": "clean",
        "buildDate": datetime.fromtimestamp(built, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "goVersion": f"{platform.python_implementation().lower()}{platform.python_version()}",
        "compiler": platform.python_implementation().lower(),
        "platform": f"{sys.platform}/{_MACHINES.get(machine, machine)}",
    }


def api_versions(server_address: str = DEFAULT_SERVER_ADDRESS) -> JSON:
    """``GET /api`` (note: no apiVersion key)."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_order(groups: list[str]) -> list[str]:
    builtin = [g for g in BUILTIN_GROUP_ORDER if g in groups]
    return builtin + sorted(g for g in groups if g not in BUILTIN_GROUP_ORDER)


def _group_entry(reg: Registry, group: str) -> JSON | None:
    versions = reg.groups().get(group)
    if not versions:
        return None
    preferred = reg.preferred_version(group) or versions[0]
    return {
        "name": group,
        "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
        "preferredVersion": {"groupVersion": f"{group}/{preferred}", "version": preferred},
    }


def api_group_list(reg: Registry) -> JSON:
    """``GET /apis``: every named group (the core group is under /api)."""
    groups = [g for g in reg.groups() if g]
    entries = [_group_entry(reg, g) for g in _group_order(groups)]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [e for e in entries if e]}


def api_group(reg: Registry, group: str) -> JSON | None:
    """``GET /apis/<group>``; None when the group is not served (the caller answers 404 text)."""
    if not group:
        return None
    entry = _group_entry(reg, group)
    if entry is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **entry}


def _sorted_types(reg: Registry, group: str, version: str) -> list[ResourceType]:
    return sorted(reg.in_group_version(group, version), key=lambda rt: rt.resource)


def _subresources(rt: ResourceType) -> list[tuple[str, str, str, str, list[str]]]:
    """(name, group, version, kind, verbs) of each subresource; group/version "" = the parent's."""
    if rt.builtin:
        return [
            (s.name, s.group, s.version, s.kind or rt.kind, list(s.verbs))
            for s in sorted(builtin_subresources(rt), key=lambda s: s.name)
        ]
    out: list[tuple[str, str, str, str, list[str]]] = []
    if rt.has_status:
        out.append(("status", "", "", rt.kind, ["get", "patch", "update"]))
    if rt.scale is not None:
        out.append(("scale", "autoscaling", "v1", "Scale", ["get", "patch", "update"]))
    return out


def _resource_entry(rt: ResourceType) -> JSON:
    entry: JSON = {
        "name": rt.resource,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    if rt.storage_version_hash or not rt.builtin:
        entry["storageVersionHash"] = rt.storage_version_hash or _storage_hash(rt)
    return entry


def _storage_hash(rt: ResourceType) -> str:
    from .builtin_types.table import storage_version_hash

    return storage_version_hash(rt.group, rt.version, rt.kind)


def api_resource_list(reg: Registry, group: str, version: str) -> JSON | None:
    """``GET /api/v1`` or ``/apis/<group>/<version>``, subresources included; None if not served."""
    types = _sorted_types(reg, group, version)
    if not types:
        return None
    entries: list[JSON] = []
    for rt in types:
        entries.append(_resource_entry(rt))
        for name, sub_group, sub_version, kind, verbs in _subresources(rt):
            sub: JSON = {"name": f"{rt.resource}/{name}", "singularName": "", "namespaced": rt.namespaced}
            if sub_group or sub_version:
                sub["group"] = sub_group
                sub["version"] = sub_version
            sub["kind"] = kind
            sub["verbs"] = verbs
            entries.append(sub)
    if all(rt.builtin for rt in types):
        # built-in lists are sorted by full name, so subresources follow their parent
        entries.sort(key=lambda e: e["name"])
    body: JSON = {"kind": "APIResourceList"}
    if group:
        body["apiVersion"] = "v1"
    body["groupVersion"] = f"{group}/{version}" if group else version
    body["resources"] = entries
    return body


def _aggregated_resource(rt: ResourceType) -> JSON:
    builtin_kind = {"group": "", "version": "", "kind": rt.kind}
    response_kind = (
        builtin_kind if rt.builtin else {"group": rt.group, "version": rt.version, "kind": rt.kind}
    )
    entry: JSON = {
        "resource": rt.resource,
        "responseKind": response_kind,
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    subs: list[JSON] = []
    for name, sub_group, sub_version, kind, verbs in _subresources(rt):
        if sub_group or sub_version:
            kind_ref = {"group": sub_group, "version": sub_version, "kind": kind}
        else:
            kind_ref = dict(response_kind, kind=kind)
        subs.append({"subresource": name, "responseKind": kind_ref, "verbs": verbs})
    if subs:
        entry["subresources"] = subs
    return entry


def aggregated_discovery(reg: Registry, *, core: bool, api_version: str = "apidiscovery.k8s.io/v2") -> JSON:
    """APIGroupDiscoveryList for ``/api`` (core) or ``/apis`` (every named group)."""
    groups = reg.groups()
    names = [""] if core else _group_order([g for g in groups if g])
    items: list[JSON] = []
    for group in names:
        versions = groups.get(group) or []
        if not versions:
            continue
        metadata: JSON = {"name": group, "creationTimestamp": None} if group else {"creationTimestamp": None}
        items.append(
            {
                "metadata": metadata,
                "versions": [
                    {
                        "version": v,
                        "resources": [_aggregated_resource(rt) for rt in _sorted_types(reg, group, v)],
                        "freshness": "Current",
                    }
                    for v in versions
                ],
            }
        )
    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items}


def negotiate_discovery(accept: str | None) -> str:
    """The Content-Type to answer a discovery request with, given its Accept header.

    The first acceptable entry wins: aggregated v2 or v2beta1 when asked for, otherwise plain
    JSON (also for ``*/*``, a missing header, or media types we do not serve).
    """
    for raw in (accept or "").split(","):
        parts = [p.strip() for p in raw.split(";") if p.strip()]
        if not parts:
            continue
        media = parts[0].lower()
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if media == "application/json" and params.get("g") == "apidiscovery.k8s.io":
            if params.get("as") != "APIGroupDiscoveryList":
                continue
            if params.get("v") == "v2":
                return AGGREGATED_V2
            if params.get("v") == "v2beta1":
                return AGGREGATED_V2BETA1
            continue
        if media in ("application/json", "*/*", "application/*"):
            return PLAIN_JSON
    return PLAIN_JSON


def negotiate_document(
    accept: str | None, which: str, reg: Registry, server_address: str = DEFAULT_SERVER_ADDRESS
) -> JSON:
    """The body for ``GET /api`` (``which="core"``) or ``GET /apis`` (``"apis"``) given Accept.

    ``server_address`` (``host:port`` the server listens on) goes into the plain ``/api`` answer.

    Answer it with ``Content-Type: negotiate_discovery(accept)``; aggregated answers also carry
    ``Cache-Control: public``, ``Vary: Accept`` and an :func:`etag`.
    """
    content_type = negotiate_discovery(accept)
    if content_type != PLAIN_JSON:
        version = "apidiscovery.k8s.io/v2" if content_type == AGGREGATED_V2 else "apidiscovery.k8s.io/v2beta1"
        return aggregated_discovery(reg, core=which == "core", api_version=version)
    return api_versions(server_address) if which == "core" else api_group_list(reg)


def etag(body: JSON) -> str:
    """The quoted SHA-512 ETag kube puts on aggregated discovery and OpenAPI documents."""
    digest = hashlib.sha512(json.dumps(body, separators=(",", ":")).encode()).hexdigest().upper()
    return f'"{digest}"'


# ------------------------------------------------------------------------------- OpenAPI v3


def _camel_group(group: str) -> str:
    # Built-in groups are named without their ".k8s.io" suffix: coordination_v1, rbacAuthorization_v1.
    name = (group or "core").removesuffix(".k8s.io")
    return "".join(part[:1].upper() + part[1:] for part in name.replace("-", ".").split("."))


def _group_tag(group: str) -> str:
    camel = _camel_group(group)
    return f"{camel[:1].lower()}{camel[1:]}"


def _tag(group: str, version: str) -> str:
    return f"{_group_tag(group)}_{version}"


def schema_name(rt: ResourceType, kind: str | None = None) -> str:
    """The components/schemas key of a type: ``dev.example.ref.v1.Gadget``, ``io.k8s.api.core.v1.Pod``."""
    kind = kind or rt.kind
    if rt.builtin:
        if rt.group == "apiextensions.k8s.io":
            return f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{rt.version}.{kind}"
        short = rt.group.split(".")[0] if rt.group else "core"
        return f"io.k8s.api.{short}.{rt.version}.{kind}"
    reversed_group = ".".join(reversed(rt.group.split(".")))
    return f"{reversed_group}.{rt.version}.{kind}"


META = "io.k8s.apimachinery.pkg.apis.meta.v1."

# Short descriptions, in our own words, for the parameters and shared types of our OpenAPI
# documents. The real server publishes longer upstream texts here; we deliberately do not copy
# them, so only the structure (which fields carry a description, and in what order) follows the
# recording. Query parameters are keyed by name ("fieldManager:patch" is the variant PATCH uses);
# schemas map to (type description, {property: description}).
_API_VERSION_DOC = "The API group and version this object is expressed in."
_KIND_DOC = "The type of this object, in CamelCase."
_SELF_LINK_DOC = "Obsolete link to this object; the server no longer fills it in."
_PARAM_DOCS: dict[str, str] = {
    "allowWatchBookmarks": "Ask a watch to also send BOOKMARK events that report progress.",
    "continue": "Token from a previous page of this list, used to fetch the next page.",
    "fieldSelector": "Only return objects whose fields match this selector.",
    "labelSelector": "Only return objects whose labels match this selector.",
    "limit": "Largest number of objects to return in one page of a list.",
    "pretty": "Indent the response for human reading when set to 'true'.",
    "resourceVersion": "Which version of the stored data the request may be answered from.",
    "resourceVersionMatch": "How resourceVersion is interpreted for a list call.",
    "sendInitialEvents": "Start a watch with events describing every existing object, then a bookmark.",
    "timeoutSeconds": "Upper limit, in seconds, on how long the list or watch call may run.",
    "watch": "Stream changes to the matching objects instead of returning a list.",
    "dryRun": "Validate and process the request without saving the result.",
    "fieldManager": "Name of the client or component making this change.",
    "fieldValidation": "How to treat unknown or duplicated fields in the request body.",
    "gracePeriodSeconds": "Seconds to wait before the object is removed; zero removes it at once.",
    "ignoreStoreReadErrorWithClusterBreakingPotential": (
        "Force removal of an object that can no longer be read from storage (unsafe)."
    ),
    "orphanDependents": "Deprecated switch to leave dependent objects behind; use propagationPolicy.",
    "propagationPolicy": "How dependent objects are garbage collected: Orphan, Background or Foreground.",
    "fieldManager:patch": "Name of the client or component making this change; required for apply patches.",
    "force": "Let an apply take over fields that other managers own.",
}
_SCHEMA_DOCS: dict[str, tuple[str, dict[str, str]]] = {
    "io.k8s.api.autoscaling.v1.Scale": (
        "A request to resize a scalable resource.",
        {
            "apiVersion": _API_VERSION_DOC,
            "kind": _KIND_DOC,
            "metadata": "Metadata of the object being scaled.",
            "spec": "The wanted size.",
            "status": "The observed size (read-only).",
        },
    ),
    "io.k8s.api.autoscaling.v1.ScaleSpec": (
        "The wanted size of a scale subresource.",
        {
            "replicas": "How many instances should run.",
        },
    ),
    "io.k8s.api.autoscaling.v1.ScaleStatus": (
        "The observed size of a scale subresource.",
        {
            "replicas": "How many instances are running now.",
            "selector": "Label selector, as a query string, for the instances counted in replicas.",
        },
    ),
    META + "DeleteOptions": (
        "Options that can accompany a delete request.",
        {
            "apiVersion": _API_VERSION_DOC,
            "dryRun": _PARAM_DOCS["dryRun"],
            "gracePeriodSeconds": _PARAM_DOCS["gracePeriodSeconds"],
            "ignoreStoreReadErrorWithClusterBreakingPotential": (
                _PARAM_DOCS["ignoreStoreReadErrorWithClusterBreakingPotential"]
            ),
            "kind": _KIND_DOC,
            "orphanDependents": _PARAM_DOCS["orphanDependents"],
            "preconditions": "Conditions the object must meet for the delete to go ahead.",
            "propagationPolicy": _PARAM_DOCS["propagationPolicy"],
        },
    ),
    META + "FieldsV1": (
        "A JSON tree naming a set of fields, used to record which manager owns which fields.",
        {},
    ),
    META + "ListMeta": (
        "Metadata carried by lists and other generated responses.",
        {
            "continue": "Token for fetching the next page, set when more items remain.",
            "remainingItemCount": "Rough number of items not yet returned, when the server knows it.",
            "resourceVersion": "Opaque version of the data this list was read from.",
            "selfLink": _SELF_LINK_DOC,
        },
    ),
    META + "ManagedFieldsEntry": (
        "One manager's claim on a set of fields of an object.",
        {
            "apiVersion": "The group/version the field set is written in.",
            "fieldsType": "Format of the field set; always FieldsV1.",
            "fieldsV1": "The fields this manager owns.",
            "manager": "Name of the manager that owns these fields.",
            "operation": "Whether the fields were set by Apply or by Update.",
            "subresource": "Subresource the change was made through, empty for the main resource.",
            "time": "When this entry last changed.",
        },
    ),
    META + "ObjectMeta": (
        "Metadata every stored object carries.",
        {
            "annotations": "Free-form key/value data for tools; not usable in selectors.",
            "creationTimestamp": "When the server created the object (read-only).",
            "deletionGracePeriodSeconds": "Seconds allowed for a graceful delete in progress (read-only).",
            "deletionTimestamp": "When a requested delete is due to remove the object (read-only).",
            "finalizers": "Components that must finish cleanup before the object is removed.",
            "generateName": "Prefix from which the server makes a unique name when none is given.",
            "generation": "Counter of changes to the desired state (read-only).",
            "labels": "Key/value pairs used to organise and select objects.",
            "managedFields": "Which manager owns which fields; kept by the server.",
            "name": "Name of the object, unique within its namespace and kind.",
            "namespace": "Namespace the object lives in; empty for cluster-wide objects.",
            "ownerReferences": "Objects this one belongs to; it is garbage collected when they are gone.",
            "resourceVersion": "Opaque version of this object, used for concurrency checks and watches.",
            "selfLink": _SELF_LINK_DOC,
            "uid": "Unique identifier the server gives the object when it is created.",
        },
    ),
    META + "OwnerReference": (
        "A pointer from an object to an object that owns it.",
        {
            "apiVersion": "API version of the owner.",
            "blockOwnerDeletion": "Hold back a foreground delete of the owner until this object is gone.",
            "controller": "Whether this owner is the managing controller.",
            "kind": "Kind of the owner.",
            "name": "Name of the owner.",
            "uid": "UID of the owner.",
        },
    ),
    META + "Patch": (
        "The body of a PATCH request.",
        {},
    ),
    META + "Preconditions": (
        "Conditions that must hold before a write or delete is carried out.",
        {
            "resourceVersion": "The resourceVersion the object must have.",
            "uid": "The UID the object must have.",
        },
    ),
    META + "Status": (
        "Result of a request that returns no object, such as an error.",
        {
            "apiVersion": _API_VERSION_DOC,
            "code": "HTTP status code that fits this result.",
            "details": "Extra data about the reason, such as the object concerned.",
            "kind": _KIND_DOC,
            "message": "Explanation of the result for people to read.",
            "metadata": "List metadata of the result.",
            "reason": "Short code for why the request failed, for programs to read.",
            "status": "Success or Failure.",
        },
    ),
    META + "StatusCause": (
        "One specific problem behind a failed request.",
        {
            "field": "Path of the field at fault, such as spec.items[0].name.",
            "message": "Explanation of the problem for people to read.",
            "reason": "Short code for the problem, for programs to read.",
        },
    ),
    META + "StatusDetails": (
        "Extra information about a Status, depending on its reason.",
        {
            "causes": "The individual problems that made the request fail.",
            "group": "API group of the object concerned.",
            "kind": "Kind of the object concerned.",
            "name": "Name of the object concerned.",
            "retryAfterSeconds": "Seconds to wait before trying again.",
            "uid": "UID of the object concerned.",
        },
    ),
    META + "Time": (
        "A point in time, written as an RFC 3339 string.",
        {},
    ),
}
_CONVENTIONS = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
# Every group/version kube-apiserver's scheme registers DeleteOptions in, as its OpenAPI lists them.
# The list is fixed by the binary, not by what is served (CRD groups never appear).
_DELETE_OPTIONS_GROUP_VERSIONS: tuple[tuple[str, str], ...] = tuple(
    (group, version)
    for group, versions in (
        ("", ("v1",)),
        ("admissionregistration.k8s.io", ("v1", "v1alpha1", "v1beta1")),
        ("apps", ("v1", "v1beta1", "v1beta2")),
        ("authentication.k8s.io", ("v1", "v1alpha1", "v1beta1")),
        ("authorization.k8s.io", ("v1", "v1beta1")),
        ("autoscaling", ("v1", "v2", "v2beta1", "v2beta2")),
        ("batch", ("v1", "v1beta1")),
        ("certificates.k8s.io", ("v1", "v1alpha1", "v1beta1")),
        ("coordination.k8s.io", ("v1", "v1alpha2", "v1beta1")),
        ("discovery.k8s.io", ("v1", "v1beta1")),
        ("events.k8s.io", ("v1", "v1beta1")),
        ("extensions", ("v1beta1",)),
        ("flowcontrol.apiserver.k8s.io", ("v1", "v1beta1", "v1beta2", "v1beta3")),
        ("internal.apiserver.k8s.io", ("v1alpha1",)),
        ("networking.k8s.io", ("v1", "v1alpha1", "v1beta1")),
        ("node.k8s.io", ("v1", "v1alpha1", "v1beta1")),
        ("policy", ("v1", "v1beta1")),
        ("rbac.authorization.k8s.io", ("v1", "v1alpha1", "v1beta1")),
        ("resource.k8s.io", ("v1alpha3", "v1beta1")),
        ("scheduling.k8s.io", ("v1", "v1alpha1", "v1beta1")),
        ("storage.k8s.io", ("v1", "v1alpha1", "v1beta1")),
        ("storagemigration.k8s.io", ("v1alpha1",)),
    )
    for version in versions
)
_NAMESPACE_PARAM_DOC = "namespace the object is in"


def _ref(name: str) -> JSON:
    return {"$ref": f"#/components/schemas/{name}"}


def _param(
    key: str, kind: str, where: str = "query", *, required: bool = False, description: str | None = None
) -> JSON:
    """One operation parameter; ``key`` is the name, or ``name:variant`` to pick another description."""
    out: JSON = {"name": key.split(":")[0], "in": where, "description": description or _PARAM_DOCS[key]}
    if required:
        out["required"] = True
    out["schema"] = {"type": kind, "uniqueItems": True}
    return out


_LIST_PARAMS = [
    ("allowWatchBookmarks", "boolean"),
    ("continue", "string"),
    ("fieldSelector", "string"),
    ("labelSelector", "string"),
    ("limit", "integer"),
    ("resourceVersion", "string"),
    ("resourceVersionMatch", "string"),
    ("sendInitialEvents", "boolean"),
    ("timeoutSeconds", "integer"),
    ("watch", "boolean"),
]
_WRITE_PARAMS = [("dryRun", "string"), ("fieldManager", "string"), ("fieldValidation", "string")]
_DELETE_PARAMS = [
    ("dryRun", "string"),
    ("gracePeriodSeconds", "integer"),
    ("ignoreStoreReadErrorWithClusterBreakingPotential", "boolean"),
    ("orphanDependents", "boolean"),
    ("propagationPolicy", "string"),
]


def _content(name: str, types: tuple[str, ...] = ("application/json", "application/yaml")) -> JSON:
    return {t: {"schema": _ref(name)} for t in types}


def _operation(
    rt: ResourceType,
    action: str,
    description: str,
    op_id: str,
    params: list[tuple[str, str]] | None,
    **extra: Any,
) -> JSON:
    op: JSON = {
        "tags": [_tag(rt.group, rt.version)],
        "description": description,
        "operationId": op_id,
    }
    if params:
        op["parameters"] = [_param(n, t) for n, t in params]
    op.update(extra)
    op["x-kubernetes-action"] = action
    op["x-kubernetes-group-version-kind"] = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    return op


def _paths(rt: ResourceType) -> JSON:
    prefix = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
    ident = f"{_camel_group(rt.group)}{rt.version[:1].upper()}{rt.version[1:]}"
    scoped = "Namespaced" if rt.namespaced else ""
    obj, lst = schema_name(rt), schema_name(rt, rt.list_kind)
    status = META + "Status"
    ok = {"description": "OK", "content": _content(obj)}
    unauthorized = {"description": "Unauthorized"}
    pretty = _param("pretty", "string")
    name_param = _param("name", "string", "path", required=True, description=f"name of the {rt.kind}")
    ns_param = _param("namespace", "string", "path", required=True, description=_NAMESPACE_PARAM_DOC)
    base_params = [ns_param, pretty] if rt.namespaced else [pretty]
    named_params = [name_param, ns_param, pretty] if rt.namespaced else [name_param, pretty]
    collection = (
        f"{prefix}/namespaces/{{namespace}}/{rt.resource}" if rt.namespaced else f"{prefix}/{rt.resource}"
    )
    paths: JSON = {}
    list_response = {"200": {"description": "OK", "content": _content(lst)}, "401": unauthorized}
    if rt.namespaced and "list" in rt.verbs:
        paths[f"{prefix}/{rt.resource}"] = {
            "get": _operation(
                rt,
                "list",
                f"list objects of kind {rt.kind}",
                f"list{ident}{rt.kind}ForAllNamespaces",
                None,
                responses=list_response,
            ),
            "parameters": [_param(n, t) for n, t in _LIST_PARAMS[:5]]
            + [pretty]
            + [_param(n, t) for n, t in _LIST_PARAMS[5:]],
        }
    coll: JSON = {}
    if "list" in rt.verbs:
        coll["get"] = _operation(
            rt,
            "list",
            f"list objects of kind {rt.kind}",
            f"list{ident}{scoped}{rt.kind}",
            _LIST_PARAMS,
            responses=list_response,
        )
    if "create" in rt.verbs:
        coll["post"] = _operation(
            rt,
            "post",
            f"create {_article(rt.kind)} {rt.kind}",
            f"create{ident}{scoped}{rt.kind}",
            _WRITE_PARAMS,
            requestBody={"content": _content(obj), "required": True},
            responses={
                "200": ok,
                "201": {"description": "Created", "content": _content(obj)},
                "202": {"description": "Accepted", "content": _content(obj)},
                "401": unauthorized,
            },
        )
    if "deletecollection" in rt.verbs:
        coll["delete"] = _operation(
            rt,
            "deletecollection",
            f"delete collection of {rt.kind}",
            f"delete{ident}Collection{scoped}{rt.kind}",
            _LIST_PARAMS,
            responses={"200": {"description": "OK", "content": _content(status)}, "401": unauthorized},
        )
    if coll:
        coll["parameters"] = base_params
        paths[collection] = coll
    if "get" in rt.verbs:
        paths[f"{collection}/{{name}}"] = _named_operations(rt, ident, scoped, obj, "", include_delete=True)
        paths[f"{collection}/{{name}}"]["parameters"] = named_params
    for sub, _, _, kind, _ in _subresources(rt):
        if sub not in ("status", "scale"):
            continue
        target = "io.k8s.api.autoscaling.v1.Scale" if sub == "scale" else obj
        ops = _named_operations(rt, ident, scoped, target, sub.capitalize(), include_delete=False)
        ops["parameters"] = named_params
        paths[f"{collection}/{{name}}/{sub}"] = ops
        del kind
    return paths


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _named_operations(
    rt: ResourceType, ident: str, scoped: str, target: str, suffix: str, *, include_delete: bool
) -> JSON:
    ok = {"description": "OK", "content": _content(target)}
    unauthorized = {"description": "Unauthorized"}
    what = f"{suffix.lower()} of the specified {rt.kind}" if suffix else f"the specified {rt.kind}"
    patch_types: tuple[str, ...] = (
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    )
    if rt.builtin:
        patch_types = (*patch_types, "application/strategic-merge-patch+json")
    ops: JSON = {
        "get": _operation(
            rt,
            "get",
            f"read {what}",
            f"read{ident}{scoped}{rt.kind}{suffix}",
            [("resourceVersion", "string")],
            responses={"200": ok, "401": unauthorized},
        ),
        "put": _operation(
            rt,
            "put",
            f"replace {what}",
            f"replace{ident}{scoped}{rt.kind}{suffix}",
            _WRITE_PARAMS,
            requestBody={"content": _content(target), "required": True},
            responses={
                "200": ok,
                "201": {"description": "Created", "content": _content(target)},
                "401": unauthorized,
            },
        ),
    }
    if include_delete and "delete" in rt.verbs:
        ops["delete"] = _operation(
            rt,
            "delete",
            f"delete {_article(rt.kind)} {rt.kind}",
            f"delete{ident}{scoped}{rt.kind}",
            _DELETE_PARAMS,
            requestBody={"content": _content(META + "DeleteOptions")},
            responses={
                "200": {"description": "OK", "content": _content(META + "Status")},
                "202": {"description": "Accepted", "content": _content(META + "Status")},
                "401": unauthorized,
            },
        )
    ops["patch"] = _operation(
        rt,
        "patch",
        f"partially update {what}",
        f"patch{ident}{scoped}{rt.kind}{suffix}",
        [
            ("dryRun", "string"),
            ("fieldManager:patch", "string"),
            ("fieldValidation", "string"),
            ("force", "boolean"),
        ],
        requestBody={"content": {t: {"schema": _ref(META + "Patch")} for t in patch_types}, "required": True},
        responses={"200": ok, "401": unauthorized},
    )
    return ops


def _gvk(group: str, version: str, kind: str) -> list[JSON]:
    return [{"group": group, "kind": kind, "version": version}]


def _standard_properties(list_meta: bool = False) -> JSON:
    return {
        "apiVersion": {"description": _API_VERSION_DOC, "type": "string"},
        "kind": {"description": _KIND_DOC, "type": "string"},
        "metadata": {
            "description": f"Metadata of the list. More info: {_CONVENTIONS}#types-kinds"
            if list_meta
            else f"Metadata of the object. More info: {_CONVENTIONS}#metadata",
            "allOf": [_ref(META + ("ListMeta" if list_meta else "ObjectMeta"))],
        },
    }


def _crd_schema(node: Any) -> Any:
    """A CRD openAPIV3Schema as OpenAPI v3 publishes it: int-or-string spelled out as anyOf."""
    if not isinstance(node, dict):
        return node
    out = dict(node)
    if out.get("x-kubernetes-int-or-string") and "anyOf" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    for key in ("properties", "patternProperties"):
        if isinstance(out.get(key), dict):
            out[key] = {k: _crd_schema(v) for k, v in out[key].items()}
    for key in ("items", "additionalProperties", "not"):
        if isinstance(out.get(key), dict):
            out[key] = _crd_schema(out[key])
    for key in ("allOf", "oneOf", "anyOf"):
        if isinstance(out.get(key), list):
            out[key] = [_crd_schema(v) for v in out[key]]
    return order_json_schema(out)


def _struct_schema(spec: TypeSpec, depth: int = 0) -> JSON:
    if isinstance(spec, Struct):
        if spec.go_name == "ObjectMeta":
            return {"allOf": [_ref(META + "ObjectMeta")]}
        props = {f.name: _struct_schema(f.type, depth + 1) for f in spec.fields} if depth < 8 else {}
        out: JSON = {"type": "object", "properties": dict(sorted(props.items()))}
        if spec.atomic:
            out["x-kubernetes-map-type"] = "atomic"
        return out
    if isinstance(spec, Scalar):
        kind = {"string": "string", "bool": "boolean", "float64": "number"}.get(spec.go_type, "integer")
        out = {"type": kind}
        if kind == "integer":
            out["format"] = spec.go_type
        return out
    if isinstance(spec, Time):
        return {"allOf": [_ref(META + ("MicroTime" if spec.micro else "Time"))]}
    if isinstance(spec, ListOf):
        out = {"type": "array", "items": _struct_schema(spec.item, depth + 1)}
        if spec.list_type == "map":
            out["x-kubernetes-list-map-keys"] = list(spec.keys)
        out["x-kubernetes-list-type"] = spec.list_type
        return out
    if isinstance(spec, MapOf):
        return {"type": "object", "additionalProperties": _struct_schema(spec.value, depth + 1)}
    if isinstance(spec, IntOrString):
        return {"type": "string", "format": "int-or-string", "x-kubernetes-int-or-string": True}
    if isinstance(spec, Quantity):
        return {"type": "string", "format": "quantity"}
    assert isinstance(spec, Anything)
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _object_schema(rt: ResourceType) -> JSON:
    spec = struct_of(rt)
    if spec is not None:
        schema = _struct_schema(spec)
        schema["properties"].update(_standard_properties())
        schema["properties"] = dict(sorted(schema["properties"].items()))
    else:
        schema = _crd_schema(rt.schema or {"type": "object"})
        schema = dict(schema)
        schema.setdefault("type", "object")
        props = dict(schema.get("properties") or {})
        props.update(_standard_properties())
        schema["properties"] = dict(sorted(props.items()))
    schema["x-kubernetes-group-version-kind"] = _gvk(rt.group, rt.version, rt.kind)
    if not rt.builtin:
        schema["x-kubernetes-selectable-fields"] = []
    return schema


def _list_schema(rt: ResourceType) -> JSON:
    props = _standard_properties(list_meta=True)
    props["items"] = {
        "description": f"List of {rt.resource}. More info: {_CONVENTIONS}",
        "type": "array",
        "items": _ref(schema_name(rt)),
    }
    schema: JSON = {
        "description": f"{rt.list_kind} is a list of {rt.kind}",
        "type": "object",
        "required": ["items"],
        "properties": dict(sorted(props.items())),
        "x-kubernetes-group-version-kind": _gvk(rt.group, rt.version, rt.list_kind),
    }
    if not rt.builtin:
        schema["x-kubernetes-selectable-fields"] = []
    return schema


def _meta_schemas() -> JSON:
    time = {"type": "string", "format": "date-time"}
    string = {"type": "string"}
    owner_ref = {
        "type": "object",
        "required": ["apiVersion", "kind", "name", "uid"],
        "properties": {
            "apiVersion": {"type": "string", "default": ""},
            "blockOwnerDeletion": {"type": "boolean"},
            "controller": {"type": "boolean"},
            "kind": {"type": "string", "default": ""},
            "name": {"type": "string", "default": ""},
            "uid": {"type": "string", "default": ""},
        },
        "x-kubernetes-map-type": "atomic",
    }
    object_meta = {
        "type": "object",
        "properties": {
            "annotations": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
            "creationTimestamp": {"allOf": [_ref(META + "Time")]},
            "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
            "deletionTimestamp": {"allOf": [_ref(META + "Time")]},
            "finalizers": {
                "type": "array",
                "items": {"type": "string", "default": ""},
                "x-kubernetes-list-type": "set",
                "x-kubernetes-patch-strategy": "merge",
            },
            "generateName": string,
            "generation": {"type": "integer", "format": "int64"},
            "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
            "managedFields": {
                "type": "array",
                "items": {"default": {}, "allOf": [_ref(META + "ManagedFieldsEntry")]},
                "x-kubernetes-list-type": "atomic",
            },
            "name": string,
            "namespace": string,
            "ownerReferences": {
                "type": "array",
                "items": {"default": {}, "allOf": [_ref(META + "OwnerReference")]},
                "x-kubernetes-list-map-keys": ["uid"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "uid",
                "x-kubernetes-patch-strategy": "merge",
            },
            "resourceVersion": string,
            "selfLink": string,
            "uid": string,
        },
    }
    gvks = [{"group": g, "kind": "DeleteOptions", "version": v} for g, v in _DELETE_OPTIONS_GROUP_VERSIONS]
    return {
        META + "DeleteOptions": {
            "type": "object",
            "properties": {
                "apiVersion": string,
                "dryRun": {
                    "type": "array",
                    "items": {"type": "string", "default": ""},
                    "x-kubernetes-list-type": "atomic",
                },
                "gracePeriodSeconds": {"type": "integer", "format": "int64"},
                "ignoreStoreReadErrorWithClusterBreakingPotential": {"type": "boolean"},
                "kind": string,
                "orphanDependents": {"type": "boolean"},
                "preconditions": {"allOf": [_ref(META + "Preconditions")]},
                "propagationPolicy": string,
            },
            "x-kubernetes-group-version-kind": gvks,
        },
        META + "FieldsV1": {"type": "object"},
        META + "ListMeta": {
            "type": "object",
            "properties": {
                "continue": string,
                "remainingItemCount": {"type": "integer", "format": "int64"},
                "resourceVersion": string,
                "selfLink": string,
            },
        },
        META + "ManagedFieldsEntry": {
            "type": "object",
            "properties": {
                "apiVersion": string,
                "fieldsType": string,
                "fieldsV1": {"allOf": [_ref(META + "FieldsV1")]},
                "manager": string,
                "operation": string,
                "subresource": string,
                "time": {"allOf": [_ref(META + "Time")]},
            },
        },
        META + "MicroTime": {"type": "string", "format": "date-time"},
        META + "ObjectMeta": object_meta,
        META + "OwnerReference": owner_ref,
        META + "Patch": {"type": "object"},
        META + "Preconditions": {"type": "object", "properties": {"resourceVersion": string, "uid": string}},
        META + "Status": {
            "type": "object",
            "properties": {
                "apiVersion": string,
                "code": {"type": "integer", "format": "int32"},
                "details": {"allOf": [_ref(META + "StatusDetails")], "x-kubernetes-list-type": "atomic"},
                "kind": string,
                "message": string,
                "metadata": {"default": {}, "allOf": [_ref(META + "ListMeta")]},
                "reason": string,
                "status": string,
            },
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "Status", "version": "v1"}],
        },
        META + "StatusCause": {
            "type": "object",
            "properties": {"field": string, "message": string, "reason": string},
        },
        META + "StatusDetails": {
            "type": "object",
            "properties": {
                "causes": {
                    "type": "array",
                    "items": {"default": {}, "allOf": [_ref(META + "StatusCause")]},
                    "x-kubernetes-list-type": "atomic",
                },
                "group": string,
                "kind": string,
                "name": string,
                "retryAfterSeconds": {"type": "integer", "format": "int32"},
                "uid": string,
            },
        },
        META + "Time": time,
    }


def _scale_schemas() -> JSON:
    return {
        "io.k8s.api.autoscaling.v1.Scale": {
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"default": {}, "allOf": [_ref(META + "ObjectMeta")]},
                "spec": {"default": {}, "allOf": [_ref("io.k8s.api.autoscaling.v1.ScaleSpec")]},
                "status": {"default": {}, "allOf": [_ref("io.k8s.api.autoscaling.v1.ScaleStatus")]},
            },
            "x-kubernetes-group-version-kind": [{"group": "autoscaling", "kind": "Scale", "version": "v1"}],
        },
        "io.k8s.api.autoscaling.v1.ScaleSpec": {
            "type": "object",
            "properties": {"replicas": {"type": "integer", "format": "int32"}},
        },
        "io.k8s.api.autoscaling.v1.ScaleStatus": {
            "type": "object",
            "required": ["replicas"],
            "properties": {
                "replicas": {"type": "integer", "format": "int32", "default": 0},
                "selector": {"type": "string"},
            },
        },
    }


def _documented(name: str, schema: JSON) -> JSON:
    """``schema`` with the descriptions of a shared type (each one the first key, as recorded)."""
    if name not in _SCHEMA_DOCS:
        return schema
    type_doc, property_docs = _SCHEMA_DOCS[name]
    out: JSON = {"description": type_doc} if type_doc else {}
    out.update(schema)
    if "properties" in schema:
        out["properties"] = {
            prop: {"description": property_docs[prop], **body} if prop in property_docs else body
            for prop, body in schema["properties"].items()
        }
    return out


def _referenced_only(paths: JSON, schemas: JSON) -> JSON:
    """The schemas reachable by ``$ref`` from ``paths``: a document carries no unused types."""
    prefix = "#/components/schemas/"
    keep: set[str] = set()
    pending: list[Any] = [paths]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(prefix):
                name = ref[len(prefix) :]
                if name not in keep and name in schemas:
                    keep.add(name)
                    pending.append(schemas[name])
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return {name: schema for name, schema in schemas.items() if name in keep}


def openapi_v3_group_version(reg: Registry, group: str, version: str) -> JSON | None:
    """``GET /openapi/v3/api/v1`` or ``/openapi/v3/apis/<group>/<version>``; None if not served."""
    types = _sorted_types(reg, group, version)
    if not types:
        return None
    builtin = all(rt.builtin for rt in types)
    paths: JSON = {}
    schemas: JSON = {}
    for rt in types:
        paths.update(_paths(rt))
        schemas[schema_name(rt)] = _object_schema(rt)
        if "list" in rt.verbs:
            schemas[schema_name(rt, rt.list_kind)] = _list_schema(rt)
        if rt.scale is not None:
            schemas.update(_scale_schemas())
    schemas.update(_meta_schemas())
    schemas = {name: _documented(name, schema) for name, schema in schemas.items()}
    schemas = _referenced_only(paths, schemas)
    info = (
        {"title": "Kubernetes", "version": "v1.32.0"}
        if builtin
        else {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"}
    )
    return {
        "openapi": "3.0.0",
        "info": info,
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


def _simple_document(path: str, tag: str, operation_id: str, description: str, schema: str) -> JSON:
    """A one-operation OpenAPI document (the non-resource and group endpoints)."""
    response = {
        "description": "OK",
        "content": {
            "application/json": {"schema": _ref(schema)},
            "application/yaml": {"schema": _ref(schema)},
        },
    }
    operation = {
        "tags": [tag],
        "description": description,
        "operationId": operation_id,
        "responses": {"200": response, "401": {"description": "Unauthorized"}},
    }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": {path: {"get": operation}},
        "components": {"schemas": _referenced_only({"r": response}, _DISCOVERY_SCHEMAS)},
    }


def _string_list() -> JSON:
    return {"type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "atomic"}


def _object_list(name: str) -> JSON:
    return {
        "type": "array",
        "items": {"default": {}, "allOf": [_ref(name)]},
        "x-kubernetes-list-type": "atomic",
    }


_DISCOVERY_SCHEMAS: JSON = {
    META + "APIGroup": {
        "type": "object",
        "required": ["name", "versions"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "name": {"type": "string", "default": ""},
            "preferredVersion": {"default": {}, "allOf": [_ref(META + "GroupVersionForDiscovery")]},
            "serverAddressByClientCIDRs": _object_list(META + "ServerAddressByClientCIDR"),
            "versions": _object_list(META + "GroupVersionForDiscovery"),
        },
        "x-kubernetes-group-version-kind": [{"group": "", "kind": "APIGroup", "version": "v1"}],
    },
    META + "APIGroupList": {
        "type": "object",
        "required": ["groups"],
        "properties": {
            "apiVersion": {"type": "string"},
            "groups": _object_list(META + "APIGroup"),
            "kind": {"type": "string"},
        },
        "x-kubernetes-group-version-kind": [{"group": "", "kind": "APIGroupList", "version": "v1"}],
    },
    META + "APIVersions": {
        "type": "object",
        "required": ["versions", "serverAddressByClientCIDRs"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "serverAddressByClientCIDRs": _object_list(META + "ServerAddressByClientCIDR"),
            "versions": _string_list(),
        },
        "x-kubernetes-group-version-kind": [{"group": "", "kind": "APIVersions", "version": "v1"}],
    },
    META + "GroupVersionForDiscovery": {
        "type": "object",
        "required": ["groupVersion", "version"],
        "properties": {
            "groupVersion": {"type": "string", "default": ""},
            "version": {"type": "string", "default": ""},
        },
    },
    META + "ServerAddressByClientCIDR": {
        "type": "object",
        "required": ["clientCIDR", "serverAddress"],
        "properties": {
            "clientCIDR": {"type": "string", "default": ""},
            "serverAddress": {"type": "string", "default": ""},
        },
    },
    "io.k8s.apimachinery.pkg.version.Info": {
        "type": "object",
        "required": [
            "major",
            "minor",
            "gitVersion",
            "gitCommit",
            "gitTreeState",
            "buildDate",
            "goVersion",
            "compiler",
            "platform",
        ],
        "properties": {
            key: {"type": "string", "default": ""}
            for key in sorted(
                (
                    "major",
                    "minor",
                    "gitVersion",
                    "gitCommit",
                    "gitTreeState",
                    "buildDate",
                    "goVersion",
                    "compiler",
                    "platform",
                )
            )
        },
    },
}


def _issuer_document(path: str, operation_id: str, description: str, media_type: str) -> JSON:
    operation = {
        "tags": ["WellKnown" if path.startswith("/.well-known") else "openid"],
        "description": description,
        "operationId": operation_id,
        "responses": {
            "200": {"description": "OK", "content": {media_type: {"schema": {"type": "string"}}}},
            "401": {"description": "Unauthorized"},
        },
    }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": {path: {"get": operation}},
        "components": {},
    }


def openapi_v3_document(reg: Registry, key: str) -> JSON | None:
    """The document ``GET /openapi/v3/<key>`` serves (every key :func:`openapi_v3_root` lists).

    ``key`` is ``api/v1``, ``apis/<group>/<version>``, ``apis/<group>`` (built-in groups only,
    as in kube-apiserver), ``api``, ``apis``, ``version``, ``.well-known/openid-configuration``
    or ``openid/v1/jwks``; None for anything else.
    """
    parts = key.strip("/").split("/")
    if len(parts) == 2 and parts[0] == "api":
        return openapi_v3_group_version(reg, "", parts[1])
    if len(parts) == 3 and parts[0] == "apis":
        return openapi_v3_group_version(reg, parts[1], parts[2])
    if len(parts) == 2 and parts[0] == "apis":
        group = parts[1]
        if group not in _builtin_groups(reg):
            return None
        camel = _camel_group(group)
        return _simple_document(
            f"/apis/{group}/",
            _group_tag(group),
            f"get{camel}APIGroup",
            "describe this API group",
            META + "APIGroup",
        )
    if key == "api":
        return _simple_document(
            "/api/", "core", "getCoreAPIVersions", "list the API versions served", META + "APIVersions"
        )
    if key == "apis":
        return _simple_document(
            "/apis/", "apis", "getAPIVersions", "list the API versions served", META + "APIGroupList"
        )
    if key == "version":
        return _simple_document(
            "/version/",
            "version",
            "getCodeVersion",
            "report the server build version",
            "io.k8s.apimachinery.pkg.version.Info",
        )
    if key == ".well-known/openid-configuration":
        return _issuer_document(
            "/.well-known/openid-configuration/",
            "getServiceAccountIssuerOpenIDConfiguration",
            "OpenID discovery document of the service account token issuer",
            "application/json",
        )
    if key == "openid/v1/jwks":
        return _issuer_document(
            "/openid/v1/jwks/",
            "getServiceAccountIssuerOpenIDKeyset",
            "public keys (JWKS) that verify service account tokens",
            "application/jwk-set+json",
        )
    return None


def _builtin_groups(reg: Registry) -> set[str]:
    return {rt.group for rt in reg.all() if rt.builtin and rt.group}


def openapi_v3_root(reg: Registry) -> JSON:
    """``GET /openapi/v3``: every document :func:`openapi_v3_document` serves, with its hash.

    Besides one entry per served group/version there are the discovery and non-resource
    endpoints, and a group entry for each built-in group (CRD groups get none). Served as
    ``Content-Type: text/plain; charset=utf-8`` by the real server.
    """
    keys = ["api", "apis", "version", ".well-known/openid-configuration", "openid/v1/jwks"]
    for group, versions in reg.groups().items():
        keys.extend(f"apis/{group}/{version}" if group else f"api/{version}" for version in versions)
    keys.extend(f"apis/{group}" for group in _builtin_groups(reg))
    paths: JSON = {}
    for key in sorted(keys):
        doc = openapi_v3_document(reg, key)
        if doc is None:
            continue
        digest = etag(doc).strip('"')
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return {"paths": paths}


__all__ = [
    "AGGREGATED_V2",
    "AGGREGATED_V2BETA1",
    "ALL_VERBS",
    "PLAIN_JSON",
    "aggregated_discovery",
    "api_group",
    "api_group_list",
    "api_resource_list",
    "api_versions",
    "etag",
    "negotiate_discovery",
    "negotiate_document",
    "openapi_v3_document",
    "openapi_v3_group_version",
    "openapi_v3_root",
    "version_info",
]
