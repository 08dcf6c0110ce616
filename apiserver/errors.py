"""Errors of the embedded API server, phrased exactly as kube-apiserver phrases them.

Two vocabularies live here:

* :class:`FieldError` mirrors ``k8s.io/apimachinery/pkg/util/validation/field.Error``: one problem
  with one field (``spec.replicas: Invalid value: 4: must be odd``). Validation code anywhere in the
  server returns lists of them.
* :class:`StatusError` is an HTTP answer carrying a ``metav1.Status`` body. Handlers raise it; the
  HTTP layer turns it into the response. The constructors (:func:`not_found`, :func:`conflict`,
  :func:`invalid`, ...) reproduce the real messages, including their quirks (``details.kind`` is the
  plural resource for NotFound/AlreadyExists/Conflict but the Kind for Invalid), because clients
  and tests match on them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from runtime.jsoncodec import JSON


class GoRepr:
    """A value already formatted the way Go would print it (e.g. ``0x0`` for an unset uint64)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"GoRepr({self.text!r})"


def go_quote(text: str) -> str:
    """Go's ``%q`` for a string (close enough: JSON escaping without forcing ASCII)."""
    return json.dumps(text, ensure_ascii=False)


def go_value(value: Any) -> str:
    """Format a decoded JSON value as ``field.Error`` prints it (``%v`` for scalars, ``%q`` for strings)."""
    if isinstance(value, GoRepr):
        return value.text
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{go_quote(str(k))}:{go_value(v)}" for k, v in value.items())
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_value(v) for v in value) + "}"
    return str(value)


def go_float(value: float) -> str:
    """Go's ``%v`` for a float64: shortest digits, exponent form below 1e-4 and from 1e+06 up."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    # repr() is the shortest text that round-trips, which is what Go's precision -1 means.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len(digit_tuple) - len(digits)
    point = len(digits) + exponent  # position of the decimal point relative to the digits
    if point - 1 < -4 or point - 1 >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        exp = point - 1
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


# field.ErrorType: (cause reason, human prefix). Required/Forbidden/TooLong/Internal omit the value.
_FIELD_TYPES: dict[str, tuple[str, str]] = {
    "NotFound": ("FieldValueNotFound", "Not found"),
    "Required": ("FieldValueRequired", "Required value"),
    "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
    "Invalid": ("FieldValueInvalid", "Invalid value"),
    "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
    "Forbidden": ("FieldValueForbidden", "Forbidden"),
    "TooLong": ("FieldValueTooLong", "Too long"),
    "TooMany": ("FieldValueTooMany", "Too many"),
    "Internal": ("InternalError", "Internal error"),
    "TypeInvalid": ("FieldValueTypeInvalid", "Invalid value"),
}
_VALUELESS = {"Required", "Forbidden", "TooLong", "Internal"}


@dataclass(frozen=True)
class FieldError:
    """One validation problem with one field, as ``field.Error``."""

    type: str
    field: str
    value: Any = None
    detail: str = ""

    @property
    def reason(self) -> str:
        return _FIELD_TYPES[self.type][0]

    def body(self) -> str:
        """The message without the field path (what a StatusCause's ``message`` holds)."""
        prefix = _FIELD_TYPES[self.type][1]
        text = prefix if self.type in _VALUELESS else f"{prefix}: {go_value(self.value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()

    def cause(self) -> JSON:
        return {"reason": self.reason, "message": self.body(), "field": self.field}


def required(path: str, detail: str = "") -> FieldError:
    return FieldError("Required", path, None, detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("Invalid", path, value, detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError("Forbidden", path, None, detail)


def not_supported(path: str, value: Any, supported: list[Any]) -> FieldError:
    detail = "supported values: " + ", ".join(go_value(v) for v in supported) if supported else ""
    return FieldError("NotSupported", path, value, detail)


def type_invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("TypeInvalid", path, value, detail)


def aggregate_message(errors: list[FieldError]) -> str:
    """``field.ErrorList.ToAggregate().Error()``: one message, or ``[a, b]`` with duplicates dropped."""
    messages: list[str] = []
    for err in errors:
        text = str(err)
        if text not in messages:
            messages.append(text)
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"


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
    return StatusError(422, "Invalid", f'{label} "{name}" is invalid: {aggregate_message(errors)}', details)


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
