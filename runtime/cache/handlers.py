"""Event handlers of an informer: what is told about every change of the store."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..jsoncodec import JSON

_log = logging.getLogger("runtime.cache")

if TYPE_CHECKING:
    from .informer import Informer
    from .multiscope import MultiScopeInformer


class ResourceEventHandler(Protocol):
    """Notified after the informer's store changed; runs on the event loop and must not block."""

    def on_add(self, obj: JSON, is_in_initial_list: bool) -> None:
        """``obj`` appeared; ``is_in_initial_list`` for the first list and for a late handler's replay."""
        ...

    def on_update(self, old: JSON, new: JSON) -> None:
        """``old`` became ``new`` (another resourceVersion)."""
        ...

    def on_delete(self, obj: JSON) -> None:
        """``obj`` is gone: the watch's final state, or after a relist the last state the cache knew."""
        ...


@dataclass(frozen=True)
class ResourceEventHandlerFuncs:
    """Adapt plain functions to :class:`ResourceEventHandler`; a missing one ignores its events."""

    on_add_func: Callable[[JSON, bool], None] | None = None
    on_update_func: Callable[[JSON, JSON], None] | None = None
    on_delete_func: Callable[[JSON], None] | None = None

    def __init__(
        self,
        on_add: Callable[[JSON, bool], None] | None = None,
        on_update: Callable[[JSON, JSON], None] | None = None,
        on_delete: Callable[[JSON], None] | None = None,
    ) -> None:
        object.__setattr__(self, "on_add_func", on_add)
        object.__setattr__(self, "on_update_func", on_update)
        object.__setattr__(self, "on_delete_func", on_delete)

    def on_add(self, obj: JSON, is_in_initial_list: bool) -> None:
        if self.on_add_func is not None:
            self.on_add_func(obj, is_in_initial_list)

    def on_update(self, old: JSON, new: JSON) -> None:
        if self.on_update_func is not None:
            self.on_update_func(old, new)

    def on_delete(self, obj: JSON) -> None:
        if self.on_delete_func is not None:
            self.on_delete_func(obj)


class HandlerRegistration:
    """What :meth:`Informer.add_event_handler` returns: pass it to ``remove_event_handler``."""

    __slots__ = ("_informer", "handler", "on_update_deferred")

    def __init__(self, informer: Informer | MultiScopeInformer, handler: ResourceEventHandler) -> None:
        self._informer = informer
        self.handler = handler
        # A handler may take the old state as a function to call only if it needs it (the
        # controller's sources do): then an update whose predicates and handler read only the new
        # object costs no decode of the old one. Its signature: (load_old, new) -> None.
        self.on_update_deferred: Callable[[Callable[[], JSON], JSON], None] | None = getattr(
            handler, "on_update_deferred", None
        )

    def has_synced(self) -> bool:
        """True once the handler has been told about every object of the informer's first list."""
        return self._informer.has_synced()


class EventHandlers:
    """The handlers registered on one informer (a plain one, or a multi-scope view), told of every
    change in the order they registered.

    A handler that raises is logged and the next is still told: one controller's bug must not stop
    the cache feeding the others, nor the informer that called it.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.registrations: tuple[HandlerRegistration, ...] = ()

    def add(self, registration: HandlerRegistration, existing: Iterable[JSON]) -> HandlerRegistration:
        """Register ``registration``, then replay ``existing`` to it as ``on_add(obj, True)``."""
        self.registrations = (*self.registrations, registration)
        for obj in existing:
            self.call(registration, "on_add", obj, True)
        return registration

    def remove(self, registration: HandlerRegistration) -> None:
        """Stop telling a handler; removing one twice is harmless."""
        self.registrations = tuple(r for r in self.registrations if r is not registration)

    def call(self, registration: HandlerRegistration, method: str, *args: object) -> None:
        try:
            getattr(registration.handler, method)(*args)
        except Exception:
            _log.exception("%s informer: handler %r raised in %s", self.kind, registration.handler, method)

    def notify(self, method: str, *args: object) -> None:
        for registration in self.registrations:
            self.call(registration, method, *args)

    def notify_update(self, load_old: Callable[[], JSON], new: JSON) -> None:
        """``on_update(old, new)``, or ``on_update_deferred(load_old, new)`` to a handler that
        takes the old state only if it needs it."""
        for registration in self.registrations:
            if registration.on_update_deferred is None:
                self.call(registration, "on_update", load_old(), new)
            else:
                self.call(registration, "on_update_deferred", load_old, new)


# ------------------------------------------------------------------------------------ options
