"""The answers kube-apiserver computes instead of storing: TokenReview, SubjectAccessReview, TokenRequest.

* ``POST /apis/authentication.k8s.io/v1/tokenreviews``: whether a bearer token is one the server
  accepts, and whose (:func:`token_review`);
* ``POST /apis/authorization.k8s.io/v1/subjectaccessreviews``: whether RBAC lets a user do something
  (:func:`subject_access_review`, evaluated by :func:`apiserver.rbac.authorize`);
* ``POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`` (what ``kubectl create token``
  sends): a new token for the service account (:func:`token_request`), which then authenticates as
  ``system:serviceaccount:<ns>:<name>``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from runtime.jsoncodec import JSON

from .errors import Qualified, invalid, invalid_object
from .rbac import Attributes, authorize
from .store import Store

DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600
MIN_TOKEN_EXPIRATION_SECONDS = 600

UserInfo = tuple[str, list[str], str]
"""(username, groups, uid) of an authenticated identity."""


def token_review(body: JSON, lookup: Callable[[str], UserInfo | None]) -> JSON:
    """The review with ``status`` filled in: authenticated and the user, or an error."""
    spec = body.get("spec") or {}
    token = str(spec.get("token") or "")
    if not token:
        raise invalid_object(_TOKEN_REVIEW, "", [invalid("spec.token", "", "token is required")])
    found = lookup(token)
    status: JSON
    if found is None:
        status = {"user": {}, "error": "invalid bearer token"}
    else:
        username, groups, uid = found
        user: JSON = {"username": username}
        if uid:
            user["uid"] = uid
        if groups:
            user["groups"] = list(groups)
        status = {"authenticated": True, "user": user}
    audiences = spec.get("audiences")
    if audiences and found is not None:
        status["audiences"] = list(audiences)
    return _answer(body, "TokenReview", "authentication.k8s.io/v1", status)


def subject_access_review(body: JSON, store: Store) -> JSON:
    """The review with ``status.allowed`` (and the reason) from RBAC."""
    spec = body.get("spec") or {}
    resource = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    user = str(spec.get("user") or "")
    groups = [str(g) for g in spec.get("groups") or []]
    problems = []
    if not user and not groups:
        problems.append(invalid("spec.user", user, "at least one of user or group must be specified"))
    if bool(resource) == bool(non_resource):
        problems.append(
            invalid(
                "spec.resourceAttributes",
                resource,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    if problems:
        raise invalid_object(_SAR, "", problems)
    if resource:
        attrs = Attributes(
            user,
            groups,
            str(resource.get("verb") or ""),
            group=str(resource.get("group") or ""),
            resource=str(resource.get("resource") or ""),
            subresource=str(resource.get("subresource") or ""),
            namespace=str(resource.get("namespace") or ""),
            name=str(resource.get("name") or ""),
        )
    else:
        url: JSON = non_resource or {}
        attrs = Attributes(user, groups, str(url.get("verb") or ""), path=str(url.get("path") or ""))
    allowed, reason = authorize(store, attrs)
    status: JSON = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return _answer(body, "SubjectAccessReview", "authorization.k8s.io/v1", status)


def token_request(body: JSON, namespace: str, name: str, token: str) -> JSON:
    """The TokenRequest answered with ``token``, which the caller has registered for the account."""
    spec = dict(body.get("spec") or {})
    seconds = spec.get("expirationSeconds")
    if seconds is None:
        seconds = DEFAULT_TOKEN_EXPIRATION_SECONDS
    if not isinstance(seconds, int) or seconds < MIN_TOKEN_EXPIRATION_SECONDS:
        raise invalid_object(
            _TOKEN_REQUEST,
            name,
            [invalid("spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes")],
        )
    spec["expirationSeconds"] = seconds
    spec.setdefault("audiences", ["https://kubernetes.default.svc.cluster.local"])
    created = datetime.now(UTC)
    expires = (created + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": meta,
        "spec": spec,
        "status": {"token": token, "expirationTimestamp": expires},
    }


def _answer(body: JSON, kind: str, api_version: str, status: JSON) -> JSON:
    meta = dict(body.get("metadata") or {})
    meta["creationTimestamp"] = None  # a review is never stored: kube writes null here
    return {
        "kind": kind,
        "apiVersion": api_version,
        "metadata": meta,
        "spec": body.get("spec") or {},
        "status": status,
    }


_TOKEN_REVIEW = Qualified("authentication.k8s.io", "tokenreviews", "TokenReview")
_SAR = Qualified("authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview")
_TOKEN_REQUEST = Qualified("authentication.k8s.io", "tokenrequests", "TokenRequest")
