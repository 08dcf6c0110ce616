"""Errors of the embedded API server, phrased exactly as kube-apiserver phrases them.

Two vocabularies live here:

* :class:`runtime.fielderrors.FieldError` (re-exported here with its constructors) mirrors
  ``k8s.io/apimachinery/pkg/util/validation/field.Error``: one problem with one field
  (``spec.replicas: Invalid value: 4: must be odd``). Validation code anywhere in the server returns
  lists of them.
* :class:`StatusError` is an HTTP answer carrying a ``metav1.Status`` body. Handlers raise it; the
  HTTP layer turns it into the response. The constructors (:func:`not_found`, :func:`conflict`,
  :func:`invalid`, ...) reproduce the real messages, including their quirks (``details.kind`` is the
  plural resource for NotFound/AlreadyExists/Conflict but the Kind for Invalid), because clients
  and tests match on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.fielderrors import (
    FieldError,
    aggregate,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    type_invalid,
)
from runtime.goformat import GoRepr, go_float, go_quote, go_value
from runtime.jsoncodec import JSON

__all__ = [
    "OPTIMISTIC_LOCK",
    "FieldError",
    "GoRepr",
    "Qualified",
    "StatusError",
    "Warnings",
    "aggregate",
    "already_exists",
    "bad_request",
    "conflict",
    "duplicate",
    "forbidden",
    "go_float",
    "go_quote",
    "go_value",
    "internal_error",
    "invalid",
    "invalid_object",
    "method_not_allowed",
    "not_found",
    "not_supported",
    "page_not_found",
    "required",
    "type_invalid",
    "unsupported_media_type",
]


class StatusError(Exception):
    """An API error answered as a ``metav1.Status`` (or, for a few paths, as plain text)."""

    def __init__(
        self,
        code: int,
        reason: str | None,
        message: str,
        details: JSON | None = None,
        *,
        headers: dict[str, str] | None = None,
        plain_text: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}
        # kube-apiserver answers some routing misses with a text/plain body instead of a Status.
        self.plain_text = plain_text
        self.warnings: list[str] = []
        """``Warning`` header values recorded before the failure; sent with the error response."""

    def status(self) -> JSON:
        body: JSON = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


@dataclass(frozen=True)
class Qualified:
    """How an error names an object's type: ``gadgets.ref.example.dev`` or ``Gadget.ref.example.dev``."""

    group: str
    resource: str
    kind: str

    def by_resource(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource

    def by_kind(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


def _details(name: str | None, group: str, kind: str, **extra: Any) -> JSON:
    details: JSON = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    details.update(extra)
    return details


def not_found(q: Qualified, name: str) -> StatusError:
    return StatusError(
        404, "NotFound", f'{q.by_resource()} "{name}" not found', _details(name, q.group, q.resource)
    )


def already_exists(q: Qualified, name: str) -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f'{q.by_resource()} "{name}" already exists',
        _details(name, q.group, q.resource),
    )


def conflict(q: Qualified, name: str, why: str, *, by_kind: bool = False) -> StatusError:
    """409 Conflict. Optimistic-lock conflicts name the resource; delete preconditions name the Kind."""
    label = q.by_kind() if by_kind else q.by_resource()
    kind = q.kind if by_kind else q.resource
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {label} "{name}": {why}',
        _details(name, q.group, kind),
    )


OPTIMISTIC_LOCK = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid_object(
    q: Qualified, name: str, errors: list[FieldError], *, by_resource: bool = False
) -> StatusError:
    """422 Invalid with one cause per field error (duplicates kept, as the real server does).

    Validation names the Kind (``Gadget.ref.example.dev``); the update-precondition check that
    runs in the storage layer names the resource (``gadgets.ref.example.dev``), hence ``by_resource``.
    """
    label = q.by_resource() if by_resource else q.by_kind()
    kind = q.resource if by_resource else q.kind
    details = _details(name, q.group, kind, causes=[e.cause() for e in errors])
    return StatusError(422, "Invalid", f'{label} "{name}" is invalid: {aggregate(errors)}', details)


def bad_request(message: str, details: JSON | None = None) -> StatusError:
    return StatusError(400, "BadRequest", message, details)


def internal_error(
    message: str, *, with_prefix: bool = True, reason: str | None = "InternalError"
) -> StatusError:
    text = f"Internal error occurred: {message}" if with_prefix else message
    details: JSON | None = {"causes": [{"message": message}]} if with_prefix else None
    return StatusError(500, reason, text, details)


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> StatusError:
    return StatusError(405, "MethodNotAllowed", message, {})


def unsupported_media_type(supported: list[str]) -> StatusError:
    """415 as kube-apiserver words it (no ``details`` key, like the recorded answers)."""
    return StatusError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(supported),
    )


def page_not_found() -> StatusError:
    """The text/plain 404 that kube-apiserver's mux gives for unknown groups, versions and paths."""
    return StatusError(404, None, "404 page not found", plain_text="404 page not found\n")


@dataclass
class Warnings:
    """``Warning: 299 - "..."`` headers collected while handling one request."""

    messages: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        if message not in self.messages:
            self.messages.append(message)

    def headers(self) -> list[str]:
        return [f"299 - {go_quote(m)}" for m in self.messages]
