"""Who may read ``/metrics``: the request filter of the secure metrics server.

A :data:`Filter` sees each request before the handler does and either lets it through (returns
None) or answers it (a 401 or 403 response). A :data:`FilterProvider` builds one from the
manager's client when the server starts; the manager's ``metrics_filter_provider`` option takes
one, and the default is :func:`with_authentication_and_authorization`, what kubebuilder projects
use:

1. the bearer token of the ``Authorization`` header is checked with a ``TokenReview`` (no token or
   an unknown one: 401);
2. the user the review names is checked with a ``SubjectAccessReview``: may it ``get`` (the
   request's method, lower-cased) the non-resource URL (the request's path)? No: 403.

So Prometheus scrapes with a service account bound to a ClusterRole granting ``get`` on
``/metrics``, and the manager's own service account needs ``create`` on ``tokenreviews`` and
``subjectaccessreviews``. Answers are cached (per token, and per user and request), so a scrape
every few seconds costs the API server two requests a minute, not two a scrape.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web

from ..client import Client
from ..errors import APIError

Filter = Callable[[web.Request], Awaitable[web.StreamResponse | None]]
"""Looks at a request: None lets it through, a response answers it instead of the handler."""
FilterProvider = Callable[[Client], Filter]
"""Builds a :data:`Filter` from the manager's client when the metrics server starts."""

DEFAULT_AUTHENTICATION_TTL: Final = 60.0
DEFAULT_ALLOWED_TTL: Final = 60.0
DEFAULT_DENIED_TTL: Final = 10.0

log = logging.getLogger("runtime.manager.filters")


@dataclass(frozen=True)
class _User:
    name: str
    uid: str
    groups: tuple[str, ...]
    extra: tuple[tuple[str, tuple[str, ...]], ...]


class AuthenticationAndAuthorization:
    """The :data:`Filter` of :func:`with_authentication_and_authorization` (see the module docstring).

    ``authentication_ttl``, ``allowed_ttl`` and ``denied_ttl`` are how many seconds a token's
    review, an allowed and a denied access review are reused.
    """

    def __init__(
        self,
        client: Client,
        *,
        authentication_ttl: float = DEFAULT_AUTHENTICATION_TTL,
        allowed_ttl: float = DEFAULT_ALLOWED_TTL,
        denied_ttl: float = DEFAULT_DENIED_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.authentication_ttl = authentication_ttl
        self.allowed_ttl = allowed_ttl
        self.denied_ttl = denied_ttl
        self._clock = clock
        self._tokens: dict[str, tuple[float, _User | None]] = {}
        self._decisions: dict[tuple[_User, str, str], tuple[float, bool]] = {}

    async def __call__(self, request: web.Request) -> web.StreamResponse | None:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return _status(401, "Unauthorized")
        try:
            user = await self._authenticate(token)
            if user is None:
                return _status(401, "Unauthorized")
            verb, path = request.method.lower(), request.path
            if not await self._authorize(user, verb, path):
                return _status(403, f"Forbidden (user={user.name}, verb={verb}, resource=, subresource=)")
        except (TimeoutError, APIError, OSError) as err:
            # The API server could not answer: neither let the request in nor blame the caller.
            log.warning("metrics authentication or authorization failed: %s", err)
            return _status(500, "Internal Server Error: authentication or authorization failed")
        return None

    async def _authenticate(self, token: str) -> _User | None:
        now = self._clock()
        hit = self._tokens.get(token)
        if hit is not None and hit[0] > now:
            return hit[1]
        review = await self.client.create(
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "metadata": {},
                "spec": {"token": token},
            }
        )
        status: dict[str, Any] = review.get("status") or {}
        user: _User | None = None
        if status.get("authenticated"):
            info: dict[str, Any] = status.get("user") or {}
            user = _User(
                str(info.get("username") or ""),
                str(info.get("uid") or ""),
                tuple(info.get("groups") or ()),
                tuple(sorted((k, tuple(v)) for k, v in (info.get("extra") or {}).items())),
            )
        self._remember(self._tokens, token, (now + self.authentication_ttl, user))
        return user

    async def _authorize(self, user: _User, verb: str, path: str) -> bool:
        now = self._clock()
        key = (user, verb, path)
        hit = self._decisions.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        spec: dict[str, Any] = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        review = await self.client.create(
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "metadata": {},
                "spec": spec,
            }
        )
        allowed = bool((review.get("status") or {}).get("allowed"))
        ttl = self.allowed_ttl if allowed else self.denied_ttl
        self._remember(self._decisions, key, (now + ttl, allowed))
        return allowed

    def _remember(self, cache: dict[Any, Any], key: Any, value: Any) -> None:
        if len(cache) >= 4096:  # bound memory against a flood of made-up tokens
            now = self._clock()
            for stale in [k for k, (until, _) in cache.items() if until <= now]:
                del cache[stale]
            if len(cache) >= 4096:
                cache.clear()
        cache[key] = value


def with_authentication_and_authorization(client: Client) -> Filter:
    """The default :data:`FilterProvider` of a secure metrics server (see the module docstring)."""
    return AuthenticationAndAuthorization(client)


def _status(code: int, text: str) -> web.Response:
    return web.Response(status=code, text=text + "\n", content_type="text/plain")
