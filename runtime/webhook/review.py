"""AdmissionReview v1: the request a webhook receives and the response it sends back."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import jsonpatch

from ..jsoncodec import JSON

ADMISSION_API_VERSION: Final = "admission.k8s.io/v1"
ADMISSION_KIND: Final = "AdmissionReview"
OPERATIONS: Final = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})

# HTTP and Status reasons (k8s.io/apimachinery metav1.StatusReason) for the codes we answer with.
_REASONS: Final = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    408: "Timeout",
    409: "Conflict",
    413: "RequestEntityTooLarge",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    504: "Timeout",
}


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    """The ``request`` of an AdmissionReview, in snake_case. ``raw`` is the decoded request as sent."""

    uid: str
    kind: JSON
    """The object's group/version/kind, e.g. ``{"group": "", "version": "v1", "kind": "Pod"}``."""
    resource: JSON
    """group/version/resource, e.g. ``{"group": "apps", "version": "v1", "resource": "deployments"}``."""
    sub_resource: str
    """``""``, or e.g. ``"scale"`` or ``"status"``."""
    operation: str
    """CREATE, UPDATE, DELETE or CONNECT."""
    name: str
    namespace: str
    object: JSON | None
    """The new object (None for DELETE)."""
    old_object: JSON | None
    """The existing object for UPDATE and DELETE."""
    dry_run: bool
    user_info: JSON
    raw: JSON


class Denied(Exception):
    """Raise from a validator or defaulter to refuse the request with ``message``.

    ``code`` is the HTTP status the API server answers its client with (403 by default, 422 for
    kube-style field validation errors); ``reason`` defaults to the status' name (``Forbidden``,
    ``Invalid``, …); ``warnings`` are shown to the client along with the denial.
    """

    def __init__(
        self, message: str, code: int = 403, *, reason: str | None = None, warnings: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = _REASONS.get(code, "") if reason is None else reason
        self.warnings = list(warnings)


@dataclass(slots=True)
class AdmissionResponse:
    """What a handler answers; the server adds the uid and the AdmissionReview envelope."""

    allowed: bool
    code: int = 200
    message: str = ""
    reason: str = ""
    patch: list[JSON] | None = None
    """RFC 6902 operations to apply to the object; None or empty for no change."""
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] | None = None

    def to_review(self, uid: str) -> JSON:
        """The whole AdmissionReview answer for the request ``uid``."""
        status: JSON = {"code": self.code}
        if self.reason:
            status["reason"] = self.reason
        if self.message:
            status["message"] = self.message
        response: JSON = {"uid": uid, "allowed": self.allowed, "status": status}
        if self.patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(self.patch).encode()).decode("ascii")
        if self.warnings:
            response["warnings"] = list(self.warnings)
        if self.audit_annotations:
            response["auditAnnotations"] = dict(self.audit_annotations)
        return {"apiVersion": ADMISSION_API_VERSION, "kind": ADMISSION_KIND, "response": response}


def allowed(message: str = "", warnings: Sequence[str] = ()) -> AdmissionResponse:
    """Let the request through."""
    return AdmissionResponse(True, 200, message, warnings=list(warnings))


def denied(
    message: str, code: int = 403, reason: str | None = None, warnings: Sequence[str] = ()
) -> AdmissionResponse:
    """Refuse the request with ``message`` (and ``code``, 403 by default)."""
    return AdmissionResponse(
        False, code, message, _REASONS.get(code, "") if reason is None else reason, warnings=list(warnings)
    )


def errored(code: int, message: str) -> AdmissionResponse:
    """Refuse because the request could not be judged (no reason, like controller-runtime's ``Errored``)."""
    return AdmissionResponse(False, code, message)


def patch_response(original: JSON, modified: JSON, warnings: Sequence[str] = ()) -> AdmissionResponse:
    """Allow, with the JSON patch that turns ``original`` into ``modified``."""
    operations: list[JSON] = jsonpatch.make_patch(original, modified).patch
    return AdmissionResponse(True, 200, patch=operations, warnings=list(warnings))


def review_for(request: Mapping[str, Any]) -> JSON:
    """Wrap a ``request`` dict in an AdmissionReview v1 envelope (for tests and tools)."""
    return {"apiVersion": ADMISSION_API_VERSION, "kind": ADMISSION_KIND, "request": dict(request)}
