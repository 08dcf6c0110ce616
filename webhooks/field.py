"""The webhooks' field errors: :mod:`runtime.fielderrors` with bad values printed as JSON.

A validator collects :class:`FieldError` values and turns them into the message users already know
from kubectl:

>>> errors = [invalid("spec.replicas", 4, "must be an odd number"), required("spec.template")]
>>> aggregate(errors)
'[spec.replicas: Invalid value: 4: must be an odd number, spec.template: Required value]'
>>> print(invalid_message("ControlPlane.controlplane.cpo.dev", "cluster", errors[:1]))
ControlPlane.controlplane.cpo.dev "cluster" is invalid: spec.replicas: Invalid value: 4: must be an odd number

The webhooks see the object as decoded JSON, not as Go structs, so a bad value that is an object,
a list or a float prints as its compact JSON text (keys sorted), which is how a user wrote it:

>>> str(invalid("spec.selector", {"matchLabels": {}}, "must not be empty"))
'spec.selector: Invalid value: {"matchLabels":{}}: must not be empty'

Numbers, booleans, strings (Go-quoted) and ``null`` print as kube prints them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from runtime import fielderrors
from runtime.fielderrors import FieldError, aggregate, forbidden, invalid_message, required
from runtime.goformat import GoRepr, go_value

__all__ = [
    "FieldError",
    "aggregate",
    "duplicate",
    "forbidden",
    "format_value",
    "invalid",
    "invalid_message",
    "not_supported",
    "required",
]


def format_value(value: Any) -> str:
    """A bad value as these webhooks print it: kube's form for scalars, compact JSON otherwise."""
    return go_value(_printed(value))


def _printed(value: Any) -> Any:
    """``value`` itself where kube's printing already is its JSON text, else its JSON text."""
    if value is None or isinstance(value, str | bool | int):
        return value
    return GoRepr(json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str))


def invalid(field: str, value: Any, detail: str) -> FieldError:
    """``<field>: Invalid value: <value>: <detail>``."""
    return fielderrors.invalid(field, _printed(value), detail)


def duplicate(field: str, value: Any) -> FieldError:
    """``<field>: Duplicate value: <value>``."""
    return fielderrors.duplicate(field, _printed(value))


def not_supported(field: str, value: Any, supported: Sequence[Any]) -> FieldError:
    """``<field>: Unsupported value: <value>: supported values: "a", "b"``."""
    return fielderrors.not_supported(field, _printed(value), supported)
