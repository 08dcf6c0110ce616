"""Decoding an AdmissionReview body: what is accepted, and the error that says what to change."""

from __future__ import annotations

import json
from typing import Any, Final

from ..jsoncodec import JSON
from .review import _REASONS, ADMISSION_API_VERSION, ADMISSION_KIND, OPERATIONS, AdmissionRequest


class BadReview(Exception):
    """The body is not an AdmissionReview we can answer; ``code`` is the HTTP status to send."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# Built once: json.loads with any keyword argument builds a new decoder per call.
_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _field(request: JSON, name: str, kind: type, *, required: bool = False) -> Any:
    value = request.get(name)
    if value is None:
        if required:
            raise BadReview(f"request.{name} is missing; an AdmissionReview request must have it")
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        want = {str: "string", dict: "object", bool: "boolean"}.get(kind, kind.__name__)
        raise BadReview(f"request.{name} must be {want}, got {_type_name(value)}")
    return value


def _group_version_field(request: JSON, name: str, last: str, *, required: bool) -> JSON:
    value: JSON | None = _field(request, name, dict, required=required)
    if value is None:
        return {}
    for key in ("group", "version", last):
        item = value.get(key)
        if item is not None and not isinstance(item, str):
            raise BadReview(f"request.{name}.{key} must be a string, got {_type_name(item)}")
    return value


def decode_review(body: bytes) -> AdmissionRequest:
    """Decode and check an AdmissionReview v1 body; :class:`BadReview` says what is wrong."""
    request = _review_request(body)
    uid = _field(request, "uid", str, required=True)
    if not uid:
        raise BadReview("request.uid is empty; the answer must echo the request's uid")
    operation = _field(request, "operation", str, required=True)
    if operation not in OPERATIONS:
        raise BadReview(
            f"request.operation is {operation!r}; expected one of CREATE, UPDATE, DELETE, CONNECT"
        )
    kind = _group_version_field(request, "kind", "kind", required=True)
    resource = _group_version_field(request, "resource", "resource", required=True)
    for optional in ("requestKind", "requestResource"):
        _group_version_field(
            request, optional, "kind" if optional == "requestKind" else "resource", required=False
        )
    for text in ("subResource", "requestSubResource", "name", "namespace"):
        _field(request, text, str)
    obj = _field(request, "object", dict)
    old = _field(request, "oldObject", dict)
    _field(request, "options", dict)
    dry_run = _field(request, "dryRun", bool)
    user_info = _field(request, "userInfo", dict)
    return AdmissionRequest(
        uid=uid,
        kind=kind,
        resource=resource,
        sub_resource=request.get("subResource") or "",
        operation=operation,
        name=request.get("name") or "",
        namespace=request.get("namespace") or "",
        object=obj,
        old_object=old,
        dry_run=bool(dry_run),
        user_info=user_info or {},
        raw=request,
    )


def _review_request(body: bytes) -> dict[str, Any]:
    """The ``request`` of an AdmissionReview body, once the body is JSON, an AdmissionReview v1 and
    holds a request object; :class:`BadReview` otherwise."""
    if not body:
        raise BadReview("the request body is empty; send an AdmissionReview as JSON")
    try:
        # UTF-8 only, as Go's decoder: json.loads would also guess UTF-16 and UTF-32.
        review = _DECODER.decode(body.decode("utf-8"))
    except RecursionError:
        raise BadReview("the request body is not valid JSON: nested too deeply") from None
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise BadReview(f"the request body is not valid JSON: {err}") from None
    if not isinstance(review, dict):
        raise BadReview(f"the request body is a JSON {_type_name(review)}, not an AdmissionReview object")
    api_version = review.get("apiVersion")
    if api_version != ADMISSION_API_VERSION:
        raise BadReview(
            f"apiVersion is {json.dumps(api_version)}, expected {ADMISSION_API_VERSION!r}; "
            'list "v1" in the webhook configuration\'s admissionReviewVersions'
        )
    if review.get("kind") != ADMISSION_KIND:
        raise BadReview(f"kind is {json.dumps(review.get('kind'))}, expected {ADMISSION_KIND!r}")
    request = review.get("request")
    if not isinstance(request, dict):
        raise BadReview(
            "request is missing: the AdmissionReview has no request to answer"
            if request is None
            else f"request must be an object, got {_type_name(request)}"
        )
    return request


def _status_body(code: int, message: str) -> bytes:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": _REASONS.get(code, ""),
        "code": code,
    }
    return json.dumps(status).encode()
