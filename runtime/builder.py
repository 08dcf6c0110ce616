"""The controller builder: declare what a controller watches, get a running controller.

The builder wires the common shapes in one statement, like controller-runtime's
``ctrl.NewControllerManagedBy(mgr)``. Here ConfigMaps are reconciled, the Secrets they own wake
them, and every Namespace wakes its ConfigMap ``settings``:

>>> import asyncio
>>> from runtime.builder import ControllerBuilder
>>> from runtime.client import Client
>>> from runtime.controller import ControllerOptions
>>> from runtime.handler import EnqueueRequestsFromMapFunc
>>> from runtime.manager import Manager, ManagerOptions
>>> from runtime.predicate import GenerationChangedPredicate
>>> from runtime.reconcile import Request, Result, reconciler_func
>>> def settings_of_namespace(namespace: dict) -> list[Request]:
...     return [Request("settings", namespace["metadata"]["name"])]
>>> async def main() -> Request:
...     wanted = Request("settings", "default")
...     reconciled = asyncio.Event()
...
...     async def reconcile(request: Request) -> Result:
...         if request == wanted:
...             reconciled.set()
...         return Result()
...
...     async with await Client.from_kubeconfig(kubeconfig) as client:
...         servers_off = {"metrics_bind_address": "0", "health_probe_bind_address": "0"}
...         manager = Manager(ManagerOptions(client=client, **servers_off))
...         (
...             ControllerBuilder(manager)
...             .for_("v1", "ConfigMap", GenerationChangedPredicate())
...             .owns("v1", "Secret")
...             .watches("v1", "Namespace", EnqueueRequestsFromMapFunc(settings_of_namespace))
...             .with_options(ControllerOptions(max_concurrent_reconciles=2))
...             .complete(reconciler_func(reconcile))
...         )
...         stop = asyncio.Event()
...         running = asyncio.create_task(manager.start(stop))
...         await asyncio.wait_for(reconciled.wait(), timeout=30)
...         stop.set()
...         await running
...     return wanted
>>> asyncio.run(main())
Request(name='settings', namespace='default')

What each call means:

* ``for_(av, kind, *predicates)``: the reconciled type; its events enqueue the object itself
  (:class:`~runtime.handler.EnqueueRequestForObject`). At most once.
* ``owns(av, kind, *predicates)``: objects the reconciled type creates; their events enqueue the
  owner from their controller ``ownerReference``
  (:class:`~runtime.handler.EnqueueRequestForOwner` with ``only_controller=True``; pass
  ``only_controller=False`` to match every owner reference). Needs ``for_``.
* ``watches(av, kind, handler, *predicates)``: any other type, with any event handler.
* ``watches_source(source)``: a source of your own, e.g. a
  :class:`~runtime.source.Channel` of etcd events. Event filters do not apply to it.
* ``with_event_filter(*predicates)``: predicates applied to every ``for_``/``owns``/``watches``.
* ``named(name)``: the controller's name (metrics labels, log key, queue name). Defaults to the
  lowercase kind of ``for_``; required without ``for_``.
* ``with_options(options)``: :class:`~runtime.controller.ControllerOptions`.

:meth:`ControllerBuilder.complete` creates the :class:`~runtime.controller.Controller`, adds it to
the manager (which starts it once the caches run and this process leads) and returns it. The
builder only needs three things of a manager, listed in :class:`Manager`.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from runtime.apiversion import group_of
from runtime.client import Client
from runtime.controller import Controller, ControllerOptions
from runtime.handler import EnqueueRequestForObject, EnqueueRequestForOwner, EventHandler
from runtime.predicate import Predicate
from runtime.reconcile import Reconciler
from runtime.runnable import Runnable
from runtime.source import InformerCache, Kind, Source


class Manager(Protocol):
    """What the builder needs of a manager (``runtime.manager.Manager`` has it all)."""

    @property
    def client(self) -> Client: ...

    @property
    def cache(self) -> InformerCache: ...

    def add(self, runnable: Runnable) -> object: ...


@dataclasses.dataclass(frozen=True, slots=True)
class _KindWatch:
    api_version: str
    kind: str
    handler: EventHandler
    predicates: tuple[Predicate, ...]


_NO_HANDLER: EventHandler = EnqueueRequestForObject()  # replaced before use


class ControllerBuilder:
    """Builds a :class:`~runtime.controller.Controller` on ``manager``; see the module docstring."""

    def __init__(self, manager: Manager) -> None:
        self._manager = manager
        self._name: str | None = None
        self._for: _KindWatch | None = None
        self._owns: list[tuple[_KindWatch, bool]] = []  # handler filled in by complete()
        self._watches: list[_KindWatch] = []
        self._sources: list[Source] = []
        self._filters: list[Predicate] = []
        self._options = ControllerOptions()
        self._completed = False

    def named(self, name: str) -> ControllerBuilder:
        """Name the controller (defaults to the lowercase kind of :meth:`for_`)."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"named() needs a non-empty controller name, got {name!r}")
        self._name = name
        return self

    def for_(self, api_version: str, kind: str, *predicates: Predicate) -> ControllerBuilder:
        """Reconcile objects of this type; their own events enqueue them."""
        if self._for is not None:
            raise ValueError(
                f"for_ was already called with ({self._for.api_version}, {self._for.kind}); a "
                "controller reconciles one type: use watches() for more"
            )
        _check_type(api_version, kind, "for_")
        self._for = _KindWatch(api_version, kind, EnqueueRequestForObject(), tuple(predicates))
        return self

    def owns(
        self, api_version: str, kind: str, *predicates: Predicate, only_controller: bool = True
    ) -> ControllerBuilder:
        """Watch objects the ``for_`` type owns; their events enqueue the owner."""
        _check_type(api_version, kind, "owns")
        # The owner handler needs the for_ type, which may come later: made in complete().
        self._owns.append((_KindWatch(api_version, kind, _NO_HANDLER, tuple(predicates)), only_controller))
        return self

    def watches(
        self, api_version: str, kind: str, handler: EventHandler, *predicates: Predicate
    ) -> ControllerBuilder:
        """Watch objects of this type, mapped to requests by ``handler``."""
        _check_type(api_version, kind, "watches")
        self._watches.append(_KindWatch(api_version, kind, handler, tuple(predicates)))
        return self

    def watches_source(self, source: Source) -> ControllerBuilder:
        """Add a source of your own (event filters do not apply to it)."""
        self._sources.append(source)
        return self

    def with_event_filter(self, *predicates: Predicate) -> ControllerBuilder:
        """Apply ``predicates`` to every ``for_``, ``owns`` and ``watches`` of this controller."""
        self._filters.extend(predicates)
        return self

    def with_options(self, options: ControllerOptions) -> ControllerBuilder:
        """Use these :class:`~runtime.controller.ControllerOptions`."""
        if not isinstance(options, ControllerOptions):
            raise TypeError(f"with_options needs a ControllerOptions, got {options!r}")
        self._options = options
        return self

    def complete(self, reconciler: Reconciler) -> Controller:
        """Create the controller with every watch, add it to the manager and return it."""
        if self._completed:
            raise RuntimeError("this builder already built its controller; start a new ControllerBuilder")
        primary = self._for
        if primary is None and self._owns:
            raise ValueError("owns() needs for_(): the owned objects enqueue their owner of the for_ type")
        if primary is None and self._name is None:
            raise ValueError("a controller without for_() needs a name: call named()")
        name = self._name if self._name is not None else primary.kind.lower()  # type: ignore[union-attr]

        options = self._options
        if primary is not None:
            log_values = {
                "controllerGroup": group_of(primary.api_version),
                "controllerKind": primary.kind,
                **(options.log_values or {}),
            }
            options = dataclasses.replace(options, log_values=log_values)
        controller = Controller(name, reconciler, options)

        cache = self._manager.cache
        filters = tuple(self._filters)
        watches: list[_KindWatch] = []
        if primary is not None:
            watches.append(primary)
            for owned, only_controller in self._owns:
                handler = EnqueueRequestForOwner(primary.api_version, primary.kind, only_controller)
                watches.append(dataclasses.replace(owned, handler=handler))
        watches.extend(self._watches)
        for watch in watches:
            controller.watch(
                Kind(cache, watch.api_version, watch.kind, watch.handler, *filters, *watch.predicates)
            )
        for source in self._sources:
            controller.watch(source)
        self._manager.add(controller)
        self._completed = True
        return controller


def _check_type(api_version: str, kind: str, where: str) -> None:
    if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
        raise ValueError(
            f"{where}() needs an apiVersion and a kind, e.g. ('apps/v1', 'Deployment'); "
            f"got ({api_version!r}, {kind!r})"
        )
