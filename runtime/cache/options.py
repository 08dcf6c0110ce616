"""What a cache caches and how its informers list and watch: the options and their defaults."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from ..jsoncodec import JSON
from ..labels import Selector, as_selector

Transform = Callable[[JSON], JSON]
"""Applied to every object before it is cached (say, to drop fields no controller reads)."""

LabelSelectorLike = Selector | str | Mapping[str, str]


def strip_managed_fields(obj: JSON) -> JSON:
    """The default transform: drop ``metadata.managedFields`` (about a third of a typical object)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def keep_everything(obj: JSON) -> JSON:
    """A transform that caches objects exactly as the server sent them."""
    return obj


@dataclass(frozen=True)
class InformerOptions:
    """Timings of the list/watch loop. ``None`` means "use the default" named per field."""

    page_size: int | None = None
    """Objects per LIST page (``limit``). Defaults to 500, client-go's pager default."""

    watch_timeout_min: float | None = None
    """Shortest server-side watch timeout (``timeoutSeconds``), seconds. Defaults to 300."""

    watch_timeout_max: float | None = None
    """Longest server-side watch timeout; each watch draws uniformly between the two. Defaults to 600."""

    inactivity_timeout: float | None = None
    """Drop and resume a watch that delivers nothing (bookmarks count) for this long, seconds.
    Defaults to 80: the server bookmarks about every 60 s."""

    short_watch: float | None = None
    """A watch closed by the server within this many seconds having delivered no event counts
    as an error (and is backed off from). Defaults to 1.0, as client-go."""

    backoff_initial: float | None = None
    """First wait after an error, seconds. Defaults to 0.8."""

    backoff_max: float | None = None
    """Cap on one wait; the wait doubles per consecutive error up to it. Defaults to 30."""

    backoff_jitter: float | None = None
    """Each wait is drawn from [d, d × (1 + jitter)] (then capped). Defaults to 1.0."""

    backoff_reset: float | None = None
    """Seconds without an error after which the wait starts over at ``backoff_initial``.
    Defaults to 120."""

    clock: Callable[[], float] | None = None
    """Monotonic time in seconds. Defaults to ``time.monotonic``."""

    sleep: Callable[[float], Awaitable[None]] | None = None
    """How a backoff waits. Defaults to ``asyncio.sleep``."""

    random: Callable[[], float] | None = None
    """Uniform [0, 1) numbers for jitter and watch timeouts. Defaults to ``random.random``."""

    def with_defaults(self) -> ResolvedInformerOptions:
        """Fill in every unset field and check the result; the one place defaults are decided."""
        resolved = ResolvedInformerOptions(
            page_size=500 if self.page_size is None else self.page_size,
            watch_timeout_min=300.0 if self.watch_timeout_min is None else self.watch_timeout_min,
            watch_timeout_max=600.0 if self.watch_timeout_max is None else self.watch_timeout_max,
            inactivity_timeout=80.0 if self.inactivity_timeout is None else self.inactivity_timeout,
            short_watch=1.0 if self.short_watch is None else self.short_watch,
            backoff_initial=0.8 if self.backoff_initial is None else self.backoff_initial,
            backoff_max=30.0 if self.backoff_max is None else self.backoff_max,
            backoff_jitter=1.0 if self.backoff_jitter is None else self.backoff_jitter,
            backoff_reset=120.0 if self.backoff_reset is None else self.backoff_reset,
            clock=time.monotonic if self.clock is None else self.clock,
            sleep=asyncio.sleep if self.sleep is None else self.sleep,
            random=random.random if self.random is None else self.random,
        )
        problems = []
        if resolved.page_size < 1:
            problems.append(f"page_size must be at least 1, not {resolved.page_size}")
        if not 1 <= resolved.watch_timeout_min <= resolved.watch_timeout_max:
            problems.append(
                "watch timeouts need 1 <= watch_timeout_min <= watch_timeout_max, not "
                f"{resolved.watch_timeout_min} and {resolved.watch_timeout_max}"
            )
        for name in ("inactivity_timeout", "backoff_initial", "backoff_max"):
            if getattr(resolved, name) <= 0:
                problems.append(f"{name} must be positive, not {getattr(resolved, name)}")
        for name in ("short_watch", "backoff_jitter", "backoff_reset"):
            if getattr(resolved, name) < 0:
                problems.append(f"{name} must not be negative, not {getattr(resolved, name)}")
        if resolved.backoff_initial > resolved.backoff_max:
            problems.append("backoff_initial must not exceed backoff_max")
        if problems:
            raise ValueError("InformerOptions: " + "; ".join(problems))
        return resolved


@dataclass(frozen=True)
class ResolvedInformerOptions:
    """:class:`InformerOptions` with every default applied."""

    page_size: int
    watch_timeout_min: float
    watch_timeout_max: float
    inactivity_timeout: float
    short_watch: float
    backoff_initial: float
    backoff_max: float
    backoff_jitter: float
    backoff_reset: float
    clock: Callable[[], float]
    sleep: Callable[[float], Awaitable[None]]
    random: Callable[[], float]


@dataclass(frozen=True)
class ByNamespace:
    """The selectors of one namespace in :attr:`ByObject.namespaces` (controller-runtime's
    ``cache.Config``). ``None`` inherits the kind's value (its :class:`ByObject` fields), which
    inherits the cache-wide one."""

    label_selector: LabelSelectorLike | None = None
    """Cache only matching objects of this namespace ("" for all)."""

    label_selectors: Sequence[LabelSelectorLike] | None = None
    """Cache the objects of this namespace that match any of these (one informer each)."""

    field_selector: str | None = None
    """Server-side field selector of this namespace ("" for none)."""


@dataclass(frozen=True)
class ByObject:
    """Scope and transform of one kind, overriding :class:`CacheOptions`' defaults.

    ``None`` inherits the cache-wide value; ``""`` lifts the restriction for this kind. A kind
    whose fields name several scopes (:attr:`namespaces`, :attr:`label_selectors`) gets one
    informer per scope behind one merged reader (see :class:`~runtime.cache.MultiScopeInformer`).
    """

    namespace: str | None = None
    """Cache only this namespace ("" for all). Defaults to ``CacheOptions.namespace``."""

    label_selector: LabelSelectorLike | None = None
    """Cache only matching objects ("" for all). Defaults to ``CacheOptions.label_selector``."""

    field_selector: str | None = None
    """Server-side field selector ("" for none). Defaults to ``CacheOptions.field_selector``."""

    transform: Transform | None = None
    """Applied to every object before it is cached. Defaults to ``CacheOptions.transform``."""

    namespaces: Mapping[str, ByNamespace] | None = None
    """Cache these namespaces ("" for all), each with its own selectors, instead of
    :attr:`namespace` (controller-runtime's ``ByObject.Namespaces``). Defaults to none."""

    label_selectors: Sequence[LabelSelectorLike] | None = None
    """Cache the union of the objects matching any of these, instead of :attr:`label_selector`:
    a label selector ANDs its terms, so "this label or that one" takes two. Defaults to none."""


@dataclass(frozen=True)
class Scope:
    """What one informer caches, resolved: None/empty means unrestricted."""

    namespace: str | None
    label_selector: str | None
    field_selector: str | None
    transform: Transform

    def covers(self, other: Scope) -> bool:
        """True when every object ``other`` caches is one this scope caches too (so ``other``
        would only hold copies): a wider or equal namespace, no label selector, and no field
        selector or the same one."""
        return (
            (self.namespace is None or self.namespace == other.namespace)
            and self.label_selector is None
            and (self.field_selector is None or self.field_selector == other.field_selector)
        )


@dataclass(frozen=True)
class CacheOptions:
    """What a :class:`Cache` caches and how it watches. ``None`` means "use the default"."""

    namespace: str | None = None
    """Cache namespaced kinds of this namespace only. Defaults to None: all namespaces."""

    label_selector: LabelSelectorLike | None = None
    """Cache only objects with matching labels (string or ``{key: value}``). Defaults to None: all."""

    field_selector: str | None = None
    """Server-side field selector for every kind. Defaults to None: all objects."""

    transform: Transform | None = None
    """Applied to every object before it is cached. Defaults to :func:`strip_managed_fields`."""

    by_object: Mapping[tuple[str, str], ByObject] | None = None
    """Per ``(api_version, kind)`` overrides of the four fields above. Defaults to none."""

    informer: InformerOptions | None = None
    """Timings of every informer's list/watch loop. Defaults to ``InformerOptions()``."""

    def with_defaults(self) -> ResolvedCacheOptions:
        """Resolve defaults and check selectors; the one place defaults are decided."""
        by_object: dict[tuple[str, str], ByObject] = {}
        for key, value in (self.by_object or {}).items():
            if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, str) for k in key)):
                raise ValueError(f"CacheOptions.by_object: key {key!r} must be (api_version, kind)")
            if not isinstance(value, ByObject):
                raise ValueError(f"CacheOptions.by_object[{key!r}] must be a ByObject, not {value!r}")
            by_object[key] = value
        resolved = ResolvedCacheOptions(
            namespace=self.namespace or None,
            label_selector=_selector_text(self.label_selector, "CacheOptions.label_selector"),
            field_selector=self.field_selector or None,
            transform=strip_managed_fields if self.transform is None else self.transform,
            by_object=by_object,
            informer=(self.informer or InformerOptions()).with_defaults(),
        )
        for key in by_object:
            resolved.scopes_for(*key)  # selector errors surface now, not when the kind is first read
        return resolved


@dataclass(frozen=True)
class ResolvedCacheOptions:
    """:class:`CacheOptions` with every default applied."""

    namespace: str | None
    label_selector: str | None
    field_selector: str | None
    transform: Transform
    by_object: Mapping[tuple[str, str], ByObject]
    informer: ResolvedInformerOptions

    def scope_for(self, api_version: str, kind: str) -> Scope:
        """The one scope of a kind; raises ``ValueError`` for a kind with several (:meth:`scopes_for`)."""
        scopes = self.scopes_for(api_version, kind)
        if len(scopes) != 1:
            raise ValueError(f"{api_version} {kind} is cached in {len(scopes)} scopes: use scopes_for")
        return scopes[0]

    def scopes_for(self, api_version: str, kind: str) -> tuple[Scope, ...]:
        """The scopes of one kind, one informer each: its ``by_object`` entry over the cache-wide values.

        Each namespace of :attr:`ByObject.namespaces` (else the one namespace) times each label
        selector that applies there (the namespace's own, else the kind's, else the cache's), in
        the order given. Equal scopes count once, and a scope another one covers
        (:meth:`Scope.covers`) is dropped: a union never caches the same objects twice for nothing.
        """
        where = f"by_object[{api_version}, {kind}]"
        override = self.by_object.get((api_version, kind)) or ByObject()
        transform = self.transform if override.transform is None else override.transform
        kind_labels = _selectors(override.label_selector, override.label_selectors, where)
        kind_fields = self.field_selector if override.field_selector is None else override.field_selector
        if override.namespaces is not None:
            if override.namespace is not None:
                raise ValueError(f"{where}: set namespace or namespaces, not both")
            if not override.namespaces:
                raise ValueError(f"{where}.namespaces: name at least one namespace")
            entries = list(override.namespaces.items())
        else:
            namespace = self.namespace if override.namespace is None else override.namespace
            entries = [(namespace or "", ByNamespace())]
        scopes: list[Scope] = []
        for namespace, config in entries:
            if not isinstance(config, ByNamespace):
                raise ValueError(f"{where}.namespaces[{namespace!r}] must be a ByNamespace, not {config!r}")
            here = f"{where}.namespaces[{namespace!r}]"
            labels = _selectors(config.label_selector, config.label_selectors, here)
            if labels is None:
                labels = kind_labels if kind_labels is not None else (self.label_selector,)
            fields = kind_fields if config.field_selector is None else config.field_selector
            for label in labels:
                scope = Scope(namespace or None, label or None, fields or None, transform)
                if scope not in scopes:
                    scopes.append(scope)
        return tuple(s for s in scopes if not any(o is not s and o.covers(s) for o in scopes))


def _selectors(
    one: LabelSelectorLike | None, several: Sequence[LabelSelectorLike] | None, where: str
) -> tuple[str | None, ...] | None:
    """The label selectors a level sets (None: it sets none, so the level above applies)."""
    if several is None:
        return None if one is None else (_selector_text(one, f"{where}.label_selector"),)
    if one is not None:
        raise ValueError(f"{where}: set label_selector or label_selectors, not both")
    if isinstance(several, str | Mapping) or not several:
        raise ValueError(f"{where}.label_selectors: give a list of at least one selector, not {several!r}")
    return tuple(_selector_text(value, f"{where}.label_selectors[{i}]") for i, value in enumerate(several))


def _selector_text(value: LabelSelectorLike | None, where: str) -> str | None:
    if value is None:
        return None
    try:
        return str(as_selector(value))
    except (ValueError, TypeError) as err:
        raise ValueError(f"{where}: {err}") from None
