"""Field errors in Kubernetes' own words (``k8s.io/apimachinery/pkg/util/validation/field``).

A validator collects :class:`FieldError` values and turns them into the message users already know
from kubectl::

    errors = [invalid("spec.replicas", 4, "must be an odd number"), required("spec.template")]
    aggregate(errors)
    # '[spec.replicas: Invalid value: 4: must be an odd number, spec.template: Required value]'
    invalid_message("ControlPlane.controlplane.cpo.dev", "cluster", errors)
    # 'ControlPlane.controlplane.cpo.dev "cluster" is invalid: [spec.replicas: ...]'

Values print as Go's ``%v``/``%q`` would for JSON data: numbers and booleans bare, strings quoted,
``null``, and objects or lists as compact JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

_OMIT = object()


def format_value(value: Any) -> str:
    """A bad value as kube prints it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str)


@dataclass(frozen=True)
class FieldError:
    """One problem with one field: ``<field>: <Type>[: <value>][: <detail>]``."""

    field: str
    """Dotted path with indices, e.g. ``spec.failureDomains[1].name``."""
    type: str
    """Kube's error type: Invalid value, Required value, Duplicate value, Unsupported value, Forbidden."""
    value: Any = _OMIT
    """The offending value; omitted for Required and Forbidden."""
    detail: str = ""
    """What is allowed instead."""

    def __str__(self) -> str:
        text = f"{self.field}: {self.type}"
        if self.value is not _OMIT:
            text += f": {format_value(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text


def invalid(field: str, value: Any, detail: str) -> FieldError:
    """``<field>: Invalid value: <value>: <detail>``."""
    return FieldError(field, "Invalid value", value, detail)


def required(field: str, detail: str = "") -> FieldError:
    """``<field>: Required value[: <detail>]``."""
    return FieldError(field, "Required value", _OMIT, detail)


def duplicate(field: str, value: Any) -> FieldError:
    """``<field>: Duplicate value: <value>``."""
    return FieldError(field, "Duplicate value", value)


def not_supported(field: str, value: Any, supported: Sequence[Any]) -> FieldError:
    """``<field>: Unsupported value: <value>: supported values: "a", "b"``."""
    listed = ", ".join(json.dumps(str(v)) for v in supported)
    return FieldError(field, "Unsupported value", value, f"supported values: {listed}")


def forbidden(field: str, detail: str) -> FieldError:
    """``<field>: Forbidden: <detail>``."""
    return FieldError(field, "Forbidden", _OMIT, detail)


def aggregate(errors: Iterable[FieldError | str]) -> str:
    """Several errors as kube joins them: one alone, else ``[a, b]``; repeated texts appear once."""
    texts = list(dict.fromkeys(str(e) for e in errors))
    if len(texts) == 1:
        return texts[0]
    return "[" + ", ".join(texts) + "]"


def invalid_message(kind_group: str, name: str, errors: Iterable[FieldError | str]) -> str:
    """The message of kube's 422 Invalid: ``<Kind>.<group> "<name>" is invalid: <errors>``."""
    return f'{kind_group} "{name}" is invalid: {aggregate(errors)}'
