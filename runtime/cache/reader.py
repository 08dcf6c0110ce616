"""The cached client: reads from the cache, writes to the server (controller-runtime's default client)."""

from __future__ import annotations

from ..client import Client
from ..jsoncodec import JSON
from .cache import Cache
from .options import LabelSelectorLike


class CachedClient:
    """controller-runtime's default client: ``get``/``list`` from the :class:`Cache`, writes to the server.

    Writes are the :class:`~runtime.client.Client`'s own methods (``create``, ``update``,
    ``update_status``, ``patch``, ``patch_status``, ``delete``, ``get_scale``, ``update_scale``).
    A read right after a write may not see it yet: the cache catches up when the watch event
    arrives (use the ``resourceVersion`` for optimistic locking, or :attr:`reader` to read the
    server directly).
    """

    def __init__(self, client: Client, cache: Cache) -> None:
        self.reader = client
        """The uncached client, for reads that must see the server's latest state."""
        self.cache = cache
        self.create = client.create
        self.update = client.update
        self.update_status = client.update_status
        self.patch = client.patch
        self.patch_status = client.patch_status
        self.delete = client.delete
        self.get_scale = client.get_scale
        self.update_scale = client.update_scale

    async def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> JSON:
        """The cached object (a copy); raises :class:`~runtime.errors.NotFound` when absent."""
        return await self.cache.get(api_version, kind, name, namespace or "")

    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: LabelSelectorLike | None = None,
        field_selector: str | None = None,
        index: tuple[str, str] | None = None,
    ) -> JSON:
        """A list dict shaped like :meth:`Client.list`'s (``items``, ``metadata.resourceVersion``).

        Field selectors are not evaluated by the cache: use an index, or :attr:`reader`.
        """
        if field_selector:
            raise ValueError(
                "the cache does not evaluate field selectors: list by index=(name, value) after "
                "Informer.add_indexers, or use CachedClient.reader"
            )
        items = await self.cache.list(
            api_version, kind, namespace=namespace, label_selector=label_selector, index=index
        )
        informer = self.cache.informer_for(api_version, kind)
        return {
            "apiVersion": api_version,
            "kind": f"{kind}List",
            "metadata": {"resourceVersion": informer.last_sync_resource_version},
            "items": items,
        }
