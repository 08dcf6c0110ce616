"""REST mapping: where a kind lives on the server, found through discovery and cached.

:class:`MappedTransport` is the transport with its :class:`RESTMapper`: what both the watch verbs
(:mod:`runtime.client.watch`) and the object verbs (:mod:`runtime.client.client`) resolve a kind
with before they build a request.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import quote

from ..apiversion import split_api_version
from ..errors import APIError, NoKindMatch
from .transport import Transport


@dataclass(frozen=True)
class ResourceInfo:
    """Where a kind lives: ``/api/v1`` or ``/apis/<group>/<version>``, plus its plural and scope."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    subresources: frozenset[str] = frozenset()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The REST path; ``namespace`` is ignored for cluster-scoped kinds, None lists all namespaces."""
        parts = [self.group_version_path]
        if self.namespaced and namespace:
            parts.append(f"/namespaces/{quote(namespace, safe='')}")
        parts.append(f"/{self.plural}")
        if name is not None:
            if not name:
                raise ValueError(f"{self.kind}: an empty name")
            parts.append(f"/{quote(name, safe='')}")
            if subresource:
                parts.append(f"/{subresource}")
        return "".join(parts)


class RESTMapper:
    """Maps ``(apiVersion, kind)`` to :class:`ResourceInfo` via discovery, cached per group-version.

    A kind missing from the cache refetches its group-version once (a CRD may have appeared since);
    still missing, it raises :class:`~runtime.errors.NoKindMatch`. Concurrent misses share one fetch.
    """

    def __init__(self, client: Transport) -> None:
        self._client = client
        self._by_group_version: dict[str, dict[str, ResourceInfo]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def invalidate(self, api_version: str | None = None) -> None:
        """Forget one group-version (or all); the next lookup rediscovers it."""
        if api_version is None:
            self._by_group_version.clear()
        else:
            self._by_group_version.pop(api_version, None)

    async def resource_for(self, api_version: str, kind: str) -> ResourceInfo:
        known = self._by_group_version.get(api_version)
        if known is not None and kind in known:
            return known[kind]
        lock = self._locks.setdefault(api_version, asyncio.Lock())
        async with lock:
            current = self._by_group_version.get(api_version)
            if current is not None and current is not known and kind in current:
                return current[kind]  # another task refreshed while we waited
            current = await self._discover(api_version)
            self._by_group_version[api_version] = current
        if kind not in current:
            raise NoKindMatch(api_version, kind)
        return current[kind]

    async def _discover(self, api_version: str) -> dict[str, ResourceInfo]:
        group, version = split_api_version(api_version)
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            listing = await self._client.request_json("GET", path)
        except APIError as err:
            if err.status == 404:
                return {}
            raise
        subresources: dict[str, set[str]] = {}
        for resource in listing.get("resources", []):
            plural, _, sub = str(resource.get("name", "")).partition("/")
            if sub:
                subresources.setdefault(plural, set()).add(sub)
        found: dict[str, ResourceInfo] = {}
        for resource in listing.get("resources", []):
            name = str(resource.get("name", ""))
            if "/" in name:
                continue
            found[str(resource["kind"])] = ResourceInfo(
                group=group,
                version=version,
                kind=str(resource["kind"]),
                plural=name,
                namespaced=bool(resource.get("namespaced")),
                subresources=frozenset(subresources.get(name, ())),
            )
        return found


class MappedTransport(Transport):
    """A :class:`Transport` that knows where kinds live: the base of the client's verbs."""

    @cached_property
    def mapper(self) -> RESTMapper:
        """Kinds to REST paths, discovered on first use and cached per group-version."""
        return RESTMapper(self)

    async def _resource(
        self, api_version: str, kind: str, namespace: str | None, *, name: bool
    ) -> ResourceInfo:
        info = await self.mapper.resource_for(api_version, kind)
        if name and info.namespaced and not namespace:
            raise ValueError(f"{kind} is namespaced: pass a namespace")
        return info
