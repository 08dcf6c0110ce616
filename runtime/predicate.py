"""Predicates: filters that decide which events reach an event handler (and so the queue).

A predicate answers one question per event kind: should this create, update, delete or generic
event enqueue anything? A source asks every predicate it was given and drops the event when one
says no. Predicates see the cache's own objects: read them, never change them.

Ready-made predicates (each passes every event kind it does not mention):

=====================================  =========================================================
:class:`GenerationChangedPredicate`    updates that changed ``metadata.generation`` (spec
                                       changes, not status-only writes)
:class:`LabelChangedPredicate`         updates that changed ``metadata.labels``
:class:`AnnotationChangedPredicate`    updates that changed ``metadata.annotations``
:class:`ResourceVersionChangedPredicate`  updates that changed ``metadata.resourceVersion``
                                       (drops the informer's no-op resync updates)
:func:`label_selector_predicate`       objects whose labels match a ``LabelSelector``
:func:`predicate_funcs`                your own functions, one per event kind
:func:`new_predicate_funcs`            one object filter applied to every event kind
:func:`and_`, :func:`or_`, :func:`not_`  combinations
=====================================  =========================================================

Example: reconcile on spec changes or label changes, but not on status-only writes (pass the
predicate to ``ControllerBuilder.for_``, ``owns`` or ``watches``):

>>> from runtime.event import UpdateEvent
>>> from runtime.predicate import GenerationChangedPredicate, LabelChangedPredicate, or_
>>> spec_or_labels = or_(GenerationChangedPredicate(), LabelChangedPredicate())
>>> before = {"metadata": {"generation": 1, "labels": {"tier": "etcd"}}}
>>> status_only = {"metadata": {"generation": 1, "labels": {"tier": "etcd"}}, "status": {"ready": 3}}
>>> spec_or_labels.update(UpdateEvent(before, status_only))
False
>>> relabelled = {"metadata": {"generation": 1, "labels": {"tier": "control-plane"}}}
>>> spec_or_labels.update(UpdateEvent(before, relabelled))
True

An update event that lacks its old or new object passes none of the "changed" predicates
(controller-runtime logs it and returns false too); sources never produce one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from runtime.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from runtime.jsoncodec import JSON
from runtime.labels import from_label_selector


@runtime_checkable
class Predicate(Protocol):
    """Whether each kind of event should be handled."""

    def create(self, event: CreateEvent) -> bool: ...
    def update(self, event: UpdateEvent) -> bool: ...
    def delete(self, event: DeleteEvent) -> bool: ...
    def generic(self, event: GenericEvent) -> bool: ...


class Funcs:
    """A predicate that passes everything; subclasses override the event kinds they filter."""

    def create(self, event: CreateEvent) -> bool:
        return True

    def update(self, event: UpdateEvent) -> bool:
        return True

    def delete(self, event: DeleteEvent) -> bool:
        return True

    def generic(self, event: GenericEvent) -> bool:
        return True


def _metadata(obj: JSON | None) -> Mapping[str, Any] | None:
    if not obj:
        return None
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else None


def _metadata_changed(event: UpdateEvent, key: str, *, empty_is_absent: bool = False) -> bool:
    """Whether ``metadata[key]`` differs between the old and the new object; an update that lacks
    either object passes none of the "changed" predicates."""
    old = _metadata(event.object_old)
    new = _metadata(event.object_new)
    if old is None or new is None:
        return False
    before, after = old.get(key), new.get(key)
    if empty_is_absent:
        return (before or {}) != (after or {})
    return bool(before != after)


class GenerationChangedPredicate(Funcs):
    """Passes updates that changed ``metadata.generation``.

    The API server bumps the generation on spec changes (for CRDs with a status subresource, on
    every change but status and metadata), so this skips status-only writes, including the
    controller's own. It also skips label, annotation and finalizer changes: combine it with
    :class:`LabelChangedPredicate` or :class:`AnnotationChangedPredicate` through :func:`or_`
    when those matter. Objects without a generation never pass an update.
    """

    def update(self, event: UpdateEvent) -> bool:
        return _metadata_changed(event, "generation")


class ResourceVersionChangedPredicate(Funcs):
    """Passes updates that changed ``metadata.resourceVersion`` (drops resync no-op updates)."""

    def update(self, event: UpdateEvent) -> bool:
        return _metadata_changed(event, "resourceVersion")


class LabelChangedPredicate(Funcs):
    """Passes updates that changed ``metadata.labels`` (absent and empty count as equal)."""

    def update(self, event: UpdateEvent) -> bool:
        return _metadata_changed(event, "labels", empty_is_absent=True)


class AnnotationChangedPredicate(Funcs):
    """Passes updates that changed ``metadata.annotations`` (absent and empty count as equal)."""

    def update(self, event: UpdateEvent) -> bool:
        return _metadata_changed(event, "annotations", empty_is_absent=True)


class _PredicateFuncs:
    __slots__ = ("_create", "_delete", "_generic", "_update")

    def __init__(
        self,
        create: Callable[[CreateEvent], bool] | None,
        update: Callable[[UpdateEvent], bool] | None,
        delete: Callable[[DeleteEvent], bool] | None,
        generic: Callable[[GenericEvent], bool] | None,
    ) -> None:
        self._create = create
        self._update = update
        self._delete = delete
        self._generic = generic

    def create(self, event: CreateEvent) -> bool:
        return True if self._create is None else self._create(event)

    def update(self, event: UpdateEvent) -> bool:
        return True if self._update is None else self._update(event)

    def delete(self, event: DeleteEvent) -> bool:
        return True if self._delete is None else self._delete(event)

    def generic(self, event: GenericEvent) -> bool:
        return True if self._generic is None else self._generic(event)


def predicate_funcs(
    *,
    create: Callable[[CreateEvent], bool] | None = None,
    update: Callable[[UpdateEvent], bool] | None = None,
    delete: Callable[[DeleteEvent], bool] | None = None,
    generic: Callable[[GenericEvent], bool] | None = None,
) -> Predicate:
    """A predicate from one function per event kind; an event kind without a function passes."""
    return _PredicateFuncs(create, update, delete, generic)


class _ObjectFilter:
    __slots__ = ("_filter",)

    def __init__(self, filter: Callable[[JSON], bool]) -> None:
        self._filter = filter

    def create(self, event: CreateEvent) -> bool:
        return self._filter(event.object)

    def update(self, event: UpdateEvent) -> bool:
        return self._filter(event.object_new)

    def delete(self, event: DeleteEvent) -> bool:
        return self._filter(event.object)

    def generic(self, event: GenericEvent) -> bool:
        return self._filter(event.object)


def new_predicate_funcs(filter: Callable[[JSON], bool]) -> Predicate:
    """A predicate that applies ``filter`` to the event's object (the new one for updates)."""
    return _ObjectFilter(filter)


class _Combined:
    """``and_`` (``combine=all``) or ``or_`` (``combine=any``) of predicates."""

    __slots__ = ("_combine", "_predicates")

    def __init__(self, predicates: tuple[Predicate, ...], combine: Callable[[Iterable[bool]], bool]) -> None:
        self._predicates = predicates
        self._combine = combine

    def create(self, event: CreateEvent) -> bool:
        return self._combine(p.create(event) for p in self._predicates)

    def update(self, event: UpdateEvent) -> bool:
        return self._combine(p.update(event) for p in self._predicates)

    def delete(self, event: DeleteEvent) -> bool:
        return self._combine(p.delete(event) for p in self._predicates)

    def generic(self, event: GenericEvent) -> bool:
        return self._combine(p.generic(event) for p in self._predicates)


class _Not:
    __slots__ = ("_predicate",)

    def __init__(self, predicate: Predicate) -> None:
        self._predicate = predicate

    def create(self, event: CreateEvent) -> bool:
        return not self._predicate.create(event)

    def update(self, event: UpdateEvent) -> bool:
        return not self._predicate.update(event)

    def delete(self, event: DeleteEvent) -> bool:
        return not self._predicate.delete(event)

    def generic(self, event: GenericEvent) -> bool:
        return not self._predicate.generic(event)


def check_predicates(predicates: Iterable[object], where: str) -> tuple[Predicate, ...]:
    """``predicates`` as a tuple, or :class:`TypeError` naming ``where`` and the first non-predicate."""
    checked = tuple(predicates)
    for p in checked:
        if not isinstance(p, Predicate):
            raise TypeError(
                f"{where}: {p!r} is not a predicate (it needs create, update, delete and generic "
                "methods; wrap a function with predicate_funcs or new_predicate_funcs)"
            )
    return checked  # type: ignore[return-value]


def and_(*predicates: Predicate) -> Predicate:
    """Passes an event when every predicate does (no predicates: everything passes)."""
    return _Combined(check_predicates(predicates, "and_"), all)


def or_(*predicates: Predicate) -> Predicate:
    """Passes an event when at least one predicate does (no predicates: nothing passes)."""
    return _Combined(check_predicates(predicates, "or_"), any)


def not_(predicate: Predicate) -> Predicate:
    """Passes exactly the events ``predicate`` drops."""
    return _Not(check_predicates((predicate,), "not_")[0])


# --- label selectors ----------------------------------------------------------------------------


def label_selector_predicate(selector: Mapping[str, Any]) -> Predicate:
    """Passes events whose object's labels match a ``metav1.LabelSelector`` dict.

    ``{}`` matches everything, as the API server's selectors do. An invalid selector raises
    :class:`ValueError` here, not on the first event.
    """
    matches = from_label_selector(selector).matches

    def filter(obj: JSON) -> bool:
        metadata = _metadata(obj)
        return matches((metadata.get("labels") if metadata else None) or {})

    return new_predicate_funcs(filter)
