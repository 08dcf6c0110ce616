"""The cache: informers on demand, one per kind, and reads served from them."""

from __future__ import annotations

import asyncio
import builtins

from ..client import Client
from ..errors import NotFound
from ..jsoncodec import JSON
from ..labels import as_selector
from ..waiting import wait_for_any
from .indexers import INDEX_NAMESPACE
from .informer import Informer
from .multiscope import MultiScopeInformer
from .options import CacheOptions, LabelSelectorLike

KindInformer = Informer | MultiScopeInformer
"""What :meth:`Cache.informer_for` returns: one informer, or one per scope behind a merged reader."""


class CacheNotStarted(RuntimeError):
    """A read from a :class:`Cache` whose ``start`` has not been called (it would wait forever)."""


class Cache:
    """Informers on demand, one per ``(api_version, kind)``, and reads served from them.

    A kind cached in several scopes (:class:`~runtime.cache.ByObject` ``namespaces`` or
    ``label_selectors``) gets a :class:`MultiScopeInformer`: an informer per scope, read as one.

    A :class:`~runtime.runnable.Runnable` that needs no leader election: every replica keeps its
    cache warm so a new leader starts reconciling at once.

    :meth:`get` and :meth:`list` of a kind not read before create its informer and wait until it
    has synced (controller-runtime's behaviour); before :meth:`start` they raise
    :class:`CacheNotStarted` instead of waiting forever. A kind the server does not serve keeps
    its informer retrying with backoff, so bound such waits (the manager's sync timeout).
    """

    def __init__(self, client: Client, options: CacheOptions | None = None) -> None:
        self.client = client
        self.options = (options or CacheOptions()).with_defaults()
        self._informers: dict[tuple[str, str], KindInformer] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        # The informers' own stop signal: set when the caller's is, or when an informer fails.
        self._stop: asyncio.Event | None = None
        self._failure: BaseException | None = None
        self._failed = asyncio.Event()

    def need_leader_election(self) -> bool:
        return False

    def informer_for(self, api_version: str, kind: str) -> KindInformer:
        """The informer of a kind, created (and started, if the cache runs) on first call."""
        key = (api_version, kind)
        informer = self._informers.get(key)
        if informer is None:
            scopes = self.options.scopes_for(api_version, kind)
            if len(scopes) > 1:
                informer = MultiScopeInformer(self.client, api_version, kind, scopes, self.options.informer)
            else:
                (scope,) = scopes
                informer = Informer.for_scope(self.client, api_version, kind, scope, self.options.informer)
            self._informers[key] = informer
            if self._stop is not None:
                self._run(informer)
        return informer

    @property
    def informers(self) -> builtins.list[KindInformer]:
        """Every informer created so far."""
        return list(self._informers.values())

    def _run(self, informer: KindInformer) -> None:
        assert self._stop is not None
        task = asyncio.create_task(informer.start(self._stop), name=f"informer {informer.kind}")
        self._tasks.add(task)
        task.add_done_callback(self._on_informer_done)

    def _on_informer_done(self, task: asyncio.Task[None]) -> None:
        failure = None if task.cancelled() else task.exception()
        if failure is not None and self._failure is None:
            self._failure = failure
            self._failed.set()

    async def start(self, stop: asyncio.Event) -> None:
        """Run every informer (including those created later) until ``stop`` is set."""
        if self._stop is not None:
            raise RuntimeError("the cache was already started")
        self._stop = asyncio.Event()
        for informer in list(self._informers.values()):
            self._run(informer)
        try:
            await wait_for_any(stop, self._failed)
        finally:
            # An informer that failed (a bug, not a server error) takes the others down with it,
            # and the cache fails like any runnable: the manager then stops everything.
            self._stop.set()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._failure is not None:
            raise self._failure

    def has_synced(self) -> bool:
        """True when every informer created so far has synced (a readiness check)."""
        return all(informer.has_synced() for informer in self._informers.values())

    async def wait_for_cache_sync(self) -> None:
        """Wait until every informer, including any created meanwhile, has synced."""
        while True:
            pending = [i for i in self._informers.values() if not i.has_synced()]
            if not pending:
                return
            await asyncio.gather(*(informer.wait_for_sync() for informer in pending))

    async def _synced_informer(self, api_version: str, kind: str) -> KindInformer:
        informer = self.informer_for(api_version, kind)
        if self._stop is None:
            raise CacheNotStarted(
                f"read {kind} from a cache that was not started: run cache.start(stop) (the manager "
                "does) or use the client directly"
            )
        await informer.wait_for_sync()
        return informer

    @staticmethod
    def _check_namespace(informer: KindInformer, namespace: str | None) -> None:
        if not informer.covers_namespace(namespace):
            held = informer.namespaces if isinstance(informer, MultiScopeInformer) else (informer.namespace,)
            raise ValueError(
                f"the cache holds {informer.kind} of namespace(s) {', '.join(map(repr, held))} only, not "
                f"{namespace!r}: widen CacheOptions (namespace or by_object) or use the client"
            )

    async def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> JSON:
        """The cached object, as a copy; raises :class:`~runtime.errors.NotFound` when absent."""
        informer = await self._synced_informer(api_version, kind)
        self._check_namespace(informer, namespace)
        key = f"{namespace}/{name}" if namespace and informer.namespaced is not False else name
        obj = informer.get_by_key(key)
        if obj is None:
            raise NotFound(
                404,
                "NotFound",
                f'{kind} "{name}" not found in the cache',
                {"name": name, "kind": kind},
            )
        return obj

    async def list(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        label_selector: LabelSelectorLike | None = None,
        index: tuple[str, str] | None = None,
    ) -> builtins.list[JSON]:
        """Cached objects as copies, sorted by key, filtered by namespace, labels and/or an index.

        ``index=(name, value)`` uses an informer index (say :data:`INDEX_OWNER_UID`, or one added
        with :meth:`Informer.add_indexers`) instead of a scan.
        """
        selector = as_selector(label_selector)
        informer = await self._synced_informer(api_version, kind)
        self._check_namespace(informer, namespace)
        if index is not None:
            name, value = index
            keys = informer.keys_by_index(name, value)
            if namespace and informer.namespaced is not False:
                keys = [key for key in keys if key.startswith(namespace + "/")]
        elif namespace and informer.namespaced is not False:
            keys = informer.keys_by_index(INDEX_NAMESPACE, namespace)
        else:
            keys = informer.list_keys()
        found = []
        for key in keys:
            obj = informer.get_by_key(key)
            if obj is not None and (
                selector.empty or selector.matches((obj.get("metadata") or {}).get("labels"))
            ):
                found.append(obj)
        return found
