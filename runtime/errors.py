"""Typed errors for failed Kubernetes API requests, built from the ``Status`` body the server sends.

Controllers branch on *what* went wrong (not found: ignore; conflict: requeue; invalid: give up),
so each well-known ``Status.reason`` gets its own exception class, the Python counterpart of
apimachinery's ``errors.IsNotFound``/``IsConflict``/... helpers:

>>> import asyncio
>>> from runtime.client import Client
>>> from runtime.errors import NotFound
>>> async def read_missing() -> str:
...     async with await Client.from_kubeconfig(kubeconfig) as client:
...         try:
...             await client.get("v1", "ConfigMap", "no-such-config", namespace="default")
...         except NotFound as err:
...             return f"{err.status} {err.reason}"
...     return "found"
>>> asyncio.run(read_missing())
'404 NotFound'

:func:`from_status` picks the class by ``reason`` first (the server's own classification) and falls
back to the HTTP status code for bodies that carry no known reason (proxies, aggregated servers).
``AlreadyExists`` deliberately is *not* a ``Conflict``: both are HTTP 409, but apimachinery's
``IsConflict`` is false for an existing name, and retrying a create on conflict would loop forever.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from .jsoncodec import JSON


class APIError(Exception):
    """A request the API server answered with a non-2xx status.

    ``status`` is the HTTP status code; ``reason``, ``message`` and ``details`` come from the
    ``Status`` body (empty when the body was not a ``Status``); ``body`` is that body as decoded
    JSON, or the raw text when it was not JSON.
    """

    reason_name: ClassVar[str] = ""
    """The ``Status.reason`` this class stands for ("" for the generic class)."""

    def __init__(
        self,
        status: int,
        reason: str = "",
        message: str = "",
        details: Mapping[str, Any] | None = None,
        body: Any = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.details: JSON = dict(details or {})
        self.body = body
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")

    @property
    def name(self) -> str:
        """``details.name``: the object the error is about, when the server said."""
        return str(self.details.get("name", ""))

    @property
    def kind(self) -> str:
        """``details.kind`` (the resource, e.g. ``configmaps``), when the server said."""
        return str(self.details.get("kind", ""))


class BadRequest(APIError):
    """400: the request itself was malformed (bad patch, bad selector, undecodable body)."""

    reason_name = "BadRequest"


class Unauthorized(APIError):
    """401: the credentials were missing, expired or rejected."""

    reason_name = "Unauthorized"


class Forbidden(APIError):
    """403: authenticated, but RBAC (or a namespace being deleted) refused the request."""

    reason_name = "Forbidden"


class NotFound(APIError):
    """404: the object (or its kind, or its namespace) does not exist."""

    reason_name = "NotFound"


class AlreadyExists(APIError):
    """409 on create: an object with that name already exists."""

    reason_name = "AlreadyExists"


class Conflict(APIError):
    """409: the object changed since it was read (stale ``resourceVersion``); re-read and retry."""

    reason_name = "Conflict"


class Gone(APIError):
    """410: the requested ``resourceVersion`` is too old (``Expired`` or ``Gone``); relist."""

    reason_name = "Gone"


class Invalid(APIError):
    """422: the object failed validation; :attr:`causes` lists the offending fields."""

    reason_name = "Invalid"

    @property
    def causes(self) -> list[JSON]:
        """``details.causes``: ``{"reason", "message", "field"}`` entries, one per problem."""
        causes = self.details.get("causes") or []
        return [dict(cause) for cause in causes if isinstance(cause, Mapping)]


class TooManyRequests(APIError):
    """429: throttled by API Priority and Fairness; wait :attr:`retry_after` seconds."""

    reason_name = "TooManyRequests"

    def __init__(
        self,
        status: int,
        reason: str = "",
        message: str = "",
        details: Mapping[str, Any] | None = None,
        body: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(status, reason, message, details, body)
        if retry_after is None:
            retry_after = _retry_after_seconds(self.details)
        self.retry_after = retry_after
        """Seconds the server asked us to wait (``Retry-After`` or ``details.retryAfterSeconds``)."""


class ServerTimeout(APIError):
    """500 ``ServerTimeout`` or 504 ``Timeout``: the server gave up; the request may be retried."""

    reason_name = "ServerTimeout"


class InternalError(APIError):
    """500: the server failed (a webhook crashed, etcd is unavailable, ...)."""

    reason_name = "InternalError"


class ServiceUnavailable(APIError):
    """503: the server (or an aggregated API behind it) cannot serve right now."""

    reason_name = "ServiceUnavailable"


class NoKindMatch(LookupError):
    """Discovery does not know the kind: its CRD is missing or its API group is not served."""

    def __init__(self, api_version: str, kind: str) -> None:
        self.api_version = api_version
        self.kind = kind
        super().__init__(f'no matches for kind "{kind}" in version "{api_version}"')


_CLASS_BY_REASON: dict[str, type[APIError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Gone": Gone,
    "Expired": Gone,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "ServerTimeout": ServerTimeout,
    "Timeout": ServerTimeout,
    "InternalError": InternalError,
    "ServiceUnavailable": ServiceUnavailable,
}

_CLASS_BY_CODE: dict[int, type[APIError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: ServerTimeout,
}


def error_class(http_status: int, reason: str) -> type[APIError]:
    """The exception class for a ``reason`` (preferred) or, failing that, an HTTP status code."""
    return _CLASS_BY_REASON.get(reason) or _CLASS_BY_CODE.get(http_status) or APIError


def from_status(http_status: int, body: Any, *, retry_after: float | None = None) -> APIError:
    """The typed error for a failed response.

    ``body`` may be the decoded ``Status`` dict, its JSON text or bytes, or anything else (kept as
    :attr:`APIError.body`). ``retry_after`` is the ``Retry-After`` header in seconds, if any; it
    wins over ``details.retryAfterSeconds`` for :class:`TooManyRequests`.
    """
    decoded = _decode(body)
    status: Mapping[str, Any] = decoded if isinstance(decoded, Mapping) else {}
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    if not message and isinstance(decoded, str):
        message = decoded.strip()
    details = status.get("details")
    details = details if isinstance(details, Mapping) else None
    cls = error_class(http_status, reason)
    if cls is TooManyRequests:
        return TooManyRequests(http_status, reason, message, details, decoded, retry_after=retry_after)
    return cls(http_status, reason, message, details, decoded)


def _decode(body: Any) -> Any:
    if isinstance(body, bytes | bytearray):
        body = bytes(body).decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            return json.loads(body)
        except ValueError:
            return body
    return body


def _retry_after_seconds(details: Mapping[str, Any]) -> float | None:
    value = details.get("retryAfterSeconds")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


__all__ = [
    "APIError",
    "AlreadyExists",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "NoKindMatch",
    "NotFound",
    "ServerTimeout",
    "ServiceUnavailable",
    "TooManyRequests",
    "Unauthorized",
    "error_class",
    "from_status",
]
