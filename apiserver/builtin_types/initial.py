"""What a fresh kube-apiserver holds, and the answers it computes instead of storing.

:func:`initial_objects` (the system namespaces and the ``kubernetes`` Service),
:func:`apiserver_identity_lease` (the server's own Lease in ``kube-system``) and
:func:`self_subject_review` (the caller's user info).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from datetime import UTC

from runtime.jsoncodec import JSON

from ..gostruct import format_time
from ..registry import ResourceType
from .table import builtin_types


def initial_objects(now: str | None = None) -> list[tuple[ResourceType, JSON]]:
    """What a fresh kube-apiserver holds before anyone writes: the four system namespaces and
    the ``kubernetes`` Service in ``default``. Stores fill in resourceVersions."""
    from datetime import datetime as _dt

    created = now or format_time(_dt.now(UTC))
    types = {(rt.group, rt.resource): rt for rt in builtin_types()}
    namespaces = types[("", "namespaces")]
    out: list[tuple[ResourceType, JSON]] = []
    for name in ("default", "kube-node-lease", "kube-public", "kube-system"):
        ns: JSON = {
            "kind": "Namespace",
            "apiVersion": "v1",
            "metadata": {
                "name": name,
                "uid": str(uuid.uuid4()),
                "creationTimestamp": created,
                "labels": {"kubernetes.io/metadata.name": name},
                "managedFields": [
                    {
                        "manager": "kube-apiserver",
                        "operation": "Update",
                        "apiVersion": "v1",
                        "time": created,
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {
                            "f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}
                        },
                    }
                ],
            },
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
        out.append((namespaces, ns))
    services = types[("", "services")]
    kubernetes: JSON = {
        "kind": "Service",
        "apiVersion": "v1",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "uid": str(uuid.uuid4()),
            "creationTimestamp": created,
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}],
            "clusterIP": "10.0.0.1",
            "clusterIPs": ["10.0.0.1"],
            "type": "ClusterIP",
            "sessionAffinity": "None",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
        },
        "status": {"loadBalancer": {}},
    }
    out.append((services, kubernetes))
    out.append((types[("coordination.k8s.io", "leases")], apiserver_identity_lease(created)))
    return out


def apiserver_identity_lease(now: str, *, hostname: str | None = None) -> JSON:
    """The Lease by which a kube-apiserver announces itself in kube-system.

    Its name is derived from the host name (so it is stable across restarts on one host), the
    holder adds a per-process uuid, and the apiserver renews it itself (hence its managedFields).
    """
    import hashlib
    import socket

    host = hostname or socket.gethostname()
    digest = hashlib.sha256(f"{host}_kube-apiserver".encode()).digest()
    name = "apiserver-" + base64.b32encode(digest[:16]).decode().rstrip("=").lower()
    renewed = now.replace("Z", ".000000Z") if now.endswith("Z") and "." not in now else now
    return {
        "kind": "Lease",
        "apiVersion": "coordination.k8s.io/v1",
        "metadata": {
            "name": name,
            "namespace": "kube-system",
            "uid": str(uuid.uuid4()),
            "creationTimestamp": now,
            "labels": {"apiserver.kubernetes.io/identity": "kube-apiserver", "kubernetes.io/hostname": host},
            "managedFields": [
                {
                    "manager": "kube-apiserver",
                    "operation": "Update",
                    "apiVersion": "coordination.k8s.io/v1",
                    "time": now,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {
                            "f:labels": {
                                ".": {},
                                "f:apiserver.kubernetes.io/identity": {},
                                "f:kubernetes.io/hostname": {},
                            }
                        },
                        "f:spec": {"f:holderIdentity": {}, "f:leaseDurationSeconds": {}, "f:renewTime": {}},
                    },
                }
            ],
        },
        "spec": {
            "holderIdentity": f"{name}_{uuid.uuid4()}",
            "leaseDurationSeconds": 3600,
            "renewTime": renewed,
        },
    }


# ------------------------------------------------------------------------ SelfSubjectReview


def self_subject_review(
    username: str,
    groups: Sequence[str],
    uid: str = "",
    extra: dict[str, list[str]] | None = None,
    *,
    now: str,
) -> JSON:
    """The answer to POST selfsubjectreviews: the caller's own user info, nothing is stored.

    ``uid`` and ``extra`` are omitted when empty, as the Go struct's omitempty tags do.
    """
    user_info: JSON = {"username": username}
    if uid:
        user_info["uid"] = uid
    if groups:
        user_info["groups"] = list(groups)
    if extra:
        user_info["extra"] = {key: list(values) for key, values in extra.items()}
    return {
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": now},
        "status": {"userInfo": user_info},
    }
