"""Field errors in Kubernetes' own words (``k8s.io/apimachinery/pkg/util/validation/field``).

A validator collects :class:`FieldError` values -- one problem with one field -- and joins them
into the message users already know from kubectl:

>>> errors = [invalid("spec.replicas", 4, "must be odd"), required("spec.template")]
>>> print(errors[0])
spec.replicas: Invalid value: 4: must be odd
>>> aggregate(errors)
'[spec.replicas: Invalid value: 4: must be odd, spec.template: Required value]'
>>> invalid_message("ControlPlane.controlplane.cpo.dev", "cluster", errors[:1])
'ControlPlane.controlplane.cpo.dev "cluster" is invalid: spec.replicas: Invalid value: 4: must be odd'
>>> not_supported("spec.type", "X", ["A", "B"]).cause()
{'reason': 'FieldValueNotSupported', 'message': 'Unsupported value: "X": supported values: "A", "B"', \
'field': 'spec.type'}

Bad values print as ``field.Error`` prints them (:func:`runtime.goformat.go_value`): numbers and
booleans bare, strings quoted with Go's ``%q``, ``null``, maps and slices in Go syntax, and a
:class:`runtime.goformat.GoRepr` (a value with its own printed form) as its text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from runtime.goformat import go_quote, go_value
from runtime.jsoncodec import JSON

__all__ = [
    "FieldError",
    "aggregate",
    "duplicate",
    "forbidden",
    "invalid",
    "invalid_message",
    "not_supported",
    "required",
    "type_invalid",
]

# field.ErrorType: (cause reason, human prefix).
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
# Types whose message never shows the bad value.
_VALUELESS = {"Required", "Forbidden", "TooLong", "Internal"}


@dataclass(frozen=True)
class FieldError:
    """One problem with one field, as ``field.Error``: ``<field>: <Type>[: <value>][: <detail>]``."""

    type: str
    """The error type, named as Go's ``field.ErrorType`` constants without their prefix:
    ``Invalid``, ``Required``, ``Duplicate``, ``NotSupported``, ``Forbidden``, ``TooLong``,
    ``TooMany``, ``NotFound``, ``Internal``, ``TypeInvalid``."""
    field: str
    """Dotted path with indices, e.g. ``spec.failureDomains[1].name``; empty for the object itself."""
    value: Any = None
    """The offending value (ignored by the types that never print one)."""
    detail: str = ""
    """What is wrong, or what is allowed instead."""

    @property
    def reason(self) -> str:
        """The ``metav1.StatusCause`` reason (``FieldValueInvalid``, ...)."""
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
        """The ``metav1.StatusCause`` a 422 Invalid answer lists for this error."""
        return {"reason": self.reason, "message": self.body(), "field": self.field}


def required(field: str, detail: str = "") -> FieldError:
    """``<field>: Required value[: <detail>]``."""
    return FieldError("Required", field, None, detail)


def invalid(field: str, value: Any, detail: str) -> FieldError:
    """``<field>: Invalid value: <value>: <detail>``."""
    return FieldError("Invalid", field, value, detail)


def forbidden(field: str, detail: str) -> FieldError:
    """``<field>: Forbidden: <detail>``."""
    return FieldError("Forbidden", field, None, detail)


def duplicate(field: str, value: Any) -> FieldError:
    """``<field>: Duplicate value: <value>``."""
    return FieldError("Duplicate", field, value)


def not_supported(field: str, value: Any, supported: Sequence[Any]) -> FieldError:
    """``<field>: Unsupported value: <value>: supported values: "a", "b"``."""
    detail = "supported values: " + ", ".join(go_quote(str(v)) for v in supported) if supported else ""
    return FieldError("NotSupported", field, value, detail)


def type_invalid(field: str, value: Any, detail: str) -> FieldError:
    """``<field>: Invalid value: <value>: <detail>`` with the cause reason ``FieldValueTypeInvalid``."""
    return FieldError("TypeInvalid", field, value, detail)


def aggregate(errors: Iterable[FieldError | str]) -> str:
    """``field.ErrorList.ToAggregate().Error()``: one message alone, else ``[a, b]``; repeats appear once."""
    texts = list(dict.fromkeys(str(e) for e in errors))
    if len(texts) == 1:
        return texts[0]
    return "[" + ", ".join(texts) + "]"


def invalid_message(kind_group: str, name: str, errors: Iterable[FieldError | str]) -> str:
    """The message of a 422 Invalid answer: ``<Kind>.<group> "<name>" is invalid: <errors>``."""
    return f'{kind_group} "{name}" is invalid: {aggregate(errors)}'
