"""One etcd client per etcd cluster, kept across reconcile passes.

A controller asks :meth:`EtcdClientPool.client_for` at the start of each pass for the client of
one ControlPlane's etcd. The client (and its HTTP sessions, with the connection its reads keep to
each member) is made once and kept: a pass only points it at the current endpoints. Its TLS
context, built from the Secret the ControlPlane names in ``spec.etcd.tlsSecretRef``, is built
again only when that Secret's ``resourceVersion`` changes (a rotated certificate then gets a fresh
client; the old one is closed). The Secret itself is read
from the API server on each pass (a GET of one object: the operator does not watch Secrets, which
would need list and watch on every Secret of the cluster).

The pool is a runnable: added to the manager, it closes every client when the manager stops. A
controller calls :meth:`EtcdClientPool.forget` when a ControlPlane goes away.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from controllers.etcd.client import EtcdClient, EtcdClientOptions
from controllers.etcd.tls import read_tls_secret, tls_context
from runtime.client import Client


@dataclass
class _Entry:
    client: EtcdClient
    tls_identity: tuple[str, str] | None
    """(Secret name, resourceVersion) the client's TLS context was built from; None without one."""


class EtcdClientPool:
    """The etcd clients of one controller, one per ControlPlane (key ``namespace/name``)."""

    def __init__(self, kube: Client, options: EtcdClientOptions | None = None) -> None:
        self.kube = kube
        self.options = options or EtcdClientOptions()
        self._entries: dict[str, _Entry] = {}

    async def client_for(
        self, key: str, namespace: str, endpoints: Sequence[str], tls_secret: str | None
    ) -> EtcdClient:
        """The client of ControlPlane ``key``, pointed at ``endpoints``.

        Raises :class:`~controllers.etcd.tls.TLSSecretError` when the named Secret is missing or
        incomplete, and ``ValueError`` for an endpoint that is not a URL (or none at all).
        """
        identity: tuple[str, str] | None = None
        secret = None
        if tls_secret:
            secret = await read_tls_secret(self.kube, namespace, tls_secret)
            identity = (tls_secret, str((secret.get("metadata") or {}).get("resourceVersion") or ""))
        entry = self._entries.get(key)
        if entry is not None and entry.tls_identity == identity:
            entry.client.set_endpoints(endpoints)
            return entry.client
        options = self.options
        if secret is not None:
            options = dataclasses.replace(options, ssl_context=tls_context(secret))
        client = EtcdClient(endpoints, options)
        if entry is not None:
            await entry.client.close()
        self._entries[key] = _Entry(client, identity)
        return client

    async def forget(self, key: str) -> None:
        """Close the client of ControlPlane ``key``, if any (it went away, or stopped using etcd)."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            await entry.client.close()

    async def close(self) -> None:
        """Close every client."""
        entries, self._entries = list(self._entries.values()), {}
        for entry in entries:
            await entry.client.close()

    def __len__(self) -> int:
        return len(self._entries)

    async def start(self, stop: asyncio.Event) -> None:
        """As a manager's runnable: hold the clients until ``stop``, then close them."""
        try:
            await stop.wait()
        finally:
            await self.close()

    def need_leader_election(self) -> bool:
        """It runs without the lease: a process that never leads still closes what it opened."""
        return False


__all__ = ["EtcdClientPool"]
