"""REST semantics of the embedded API server: create, read, update, patch, delete, list, watch.

This module is the equivalent of kube-apiserver's generic registry plus its REST handlers. It works
on decoded JSON and raises :class:`~.errors.StatusError`; the HTTP layer (``server.py``) parses
requests and writes responses. The order of steps in each verb follows the real server because
clients can observe it: defaulting before mutating admission, name generation after it, schema
and metadata validation before validating admission, AlreadyExists last.

What is deliberately not here, as in controller-runtime's envtest: no garbage collector (owner
references are stored but nothing cascades), no namespace controller (a deleted namespace stays
Terminating until its ``spec.finalizers`` are cleared through ``/finalize``), no kubelet.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from runtime import jsoncodec
from runtime.goformat import go_quote
from runtime.jsoncodec import JSON

from . import admission as admission_mod
from . import builtins, decode, objectmeta, patch, schema, selectors
from .errors import (
    OPTIMISTIC_LOCK,
    FieldError,
    GoRepr,
    StatusError,
    Warnings,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    internal_error,
    invalid,
    invalid_object,
    not_found,
    not_supported,
    required,
)
from .registry import Registry, ResourceType
from .store import Store

SCALE_GROUP_KIND = ("autoscaling", "v1", "Scale")
# The first item of every accepted watch (see Handlers.watch).
WATCH_ACCEPTED = "ACCEPTED"
# Most events one watch stream writes at once.
WATCH_BATCH = 256
# What Handlers.watch yields: the (type, object) events ready at one moment.
WatchBatch = list[tuple[str, JSON]]
WEBHOOK_CONFIG_RESOURCES = {
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): False,
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): True,
}


_now_text: tuple[int, str] = (0, "")


def _seconds_later(stamp: str, seconds: int) -> str:
    """An RFC 3339 time (whole seconds) ``seconds`` after ``stamp``."""
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return (moment + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339() -> str:
    """The current time with second precision, as kube stamps metadata (formatted once a second)."""
    global _now_text
    second = int(time.time())
    if _now_text[0] != second:
        _now_text = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _now_text[1]


@dataclass
class Caller:
    """Who sent the request and how: user, field manager default, options from the query."""

    username: str
    groups: list[str]
    uid: str = ""
    user_agent: str = ""
    query: dict[str, str] = field(default_factory=dict)
    warnings: Warnings = field(default_factory=Warnings)
    extra: dict[str, list[str]] | None = None

    @property
    def dry_run(self) -> bool:
        return self.query.get("dryRun") == "All"

    def field_manager(self) -> str:
        return self.query.get("fieldManager") or objectmeta.manager_from_user_agent(self.user_agent)

    def user_info(self) -> JSON:
        info: JSON = {"username": self.username}
        if self.uid:
            info["uid"] = self.uid
        info["groups"] = list(self.groups)
        if self.extra:
            info["extra"] = {k: list(v) for k, v in self.extra.items()}
        return info


def _meta(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def _key(rt: ResourceType, namespace: str, name: str) -> tuple[str, str]:
    return (namespace if rt.namespaced else "", name)


def _spec_part(obj: JSON) -> JSON:
    """Everything whose change bumps metadata.generation: all but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _parse_rv(text: str) -> int:
    try:
        value = int(text)
        if value < 0 or not text.isdigit():
            raise ValueError
        return value
    except ValueError:
        raise StatusError(500, None, f"strconv.ParseUint: parsing {go_quote(text)}: invalid syntax") from None


class Handlers:
    """The verbs, over one :class:`Store` and one :class:`Registry`."""

    def __init__(
        self,
        registry: Registry,
        store: Store,
        admission: admission_mod.Admission,
        *,
        on_crd_change: Callable[[JSON, JSON | None], None] | None = None,
    ) -> None:
        self.registry = registry
        self.store = store
        self.admission = admission
        # Called with (crd, old) after a CRD is written and with ({}, old) after it is removed.
        self.on_crd_change = on_crd_change

    # ----------------------------------------------------------------------------------- helpers

    def _namespace_object(self, name: str) -> JSON | None:
        return self.store.get(("", "namespaces"), ("", name))

    def _check_namespace_for_create(self, rt: ResourceType, namespace: str, name: str) -> None:
        ns = self._namespace_object(namespace)
        q = rt.qualified
        if ns is None:
            raise StatusError(
                404,
                "NotFound",
                f'namespaces "{namespace}" not found',
                {"name": namespace, "kind": "namespaces"},
            )
        if ns["metadata"].get("deletionTimestamp"):
            details: JSON = {}
            if name:
                details["name"] = name
            if q.group:
                details["group"] = q.group
            details["kind"] = q.resource
            details["causes"] = [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            ]
            raise StatusError(
                403,
                "Forbidden",
                f'{q.by_resource()} "{name}" is forbidden: unable to create new content in namespace '
                f"{namespace} because it is being terminated",
                details,
            )

    def _webhook_configs(self, mutating: bool) -> list[JSON]:
        resource = "mutatingwebhookconfigurations" if mutating else "validatingwebhookconfigurations"
        return self.store.list(("admissionregistration.k8s.io", resource))

    async def _admit(
        self,
        rt: ResourceType,
        *,
        operation: str,
        obj: JSON | None,
        old: JSON | None,
        caller: Caller,
        namespace: str,
        name: str,
        subresource: str = "",
        kind: tuple[str, str, str] | None = None,
        options: JSON | None,
        mutate: bool,
    ) -> JSON | None:
        """Run mutating (when ``mutate``) or validating webhooks; returns the possibly mutated object."""
        configs = self._webhook_configs(mutate)
        if not configs:
            return obj
        group, version, kind_name = kind or (rt.group, rt.version, rt.kind)
        ns_labels: dict[str, str] | None = None
        if namespace:
            ns_obj = self._namespace_object(namespace)
            ns_labels = dict(ns_obj["metadata"].get("labels") or {}) if ns_obj else None
        attrs = admission_mod.AdmissionAttributes(
            operation=operation,
            group=group,
            version=version,
            kind=kind_name,
            resource_group=rt.group,
            resource_version=rt.version,
            resource=rt.resource,
            sub_resource=subresource,
            name=name,
            namespace=namespace,
            object=obj,
            old_object=old,
            options=options,
            dry_run=caller.dry_run,
            user_info=caller.user_info(),
            namespace_labels=ns_labels,
            defaulter=self._defaulter(rt) if mutate and kind is None else None,
        )
        # Warnings go straight into the caller's collection so that they reach the client even when
        # a later webhook denies the request.
        if mutate:
            mutated, _ = await self.admission.mutate(attrs, configs, warnings=caller.warnings)
            return mutated
        await self.admission.validate(attrs, configs, warnings=caller.warnings)
        return obj

    def _defaulter(self, rt: ResourceType) -> Callable[[JSON], None] | None:
        """What fills in defaults on an object a mutating webhook patched (no pruning, no decode)."""
        if rt.builtin:
            return lambda obj: self._default_builtin(rt, obj)
        crd_schema = rt.schema
        if crd_schema is None:
            return None
        return lambda obj: schema.apply_defaults(crd_schema, obj)

    def _create_options(self, caller: Caller) -> JSON:
        opts: JSON = {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
        return self._with_common_options(opts, caller)

    def _update_options(self, caller: Caller) -> JSON:
        opts: JSON = {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}
        return self._with_common_options(opts, caller)

    @staticmethod
    def _with_common_options(opts: JSON, caller: Caller) -> JSON:
        if caller.dry_run:
            opts["dryRun"] = ["All"]
        if caller.query.get("fieldManager"):
            opts["fieldManager"] = caller.query["fieldManager"]
        if caller.query.get("fieldValidation"):
            opts["fieldValidation"] = caller.query["fieldValidation"]
        return opts

    def _prepare_body(
        self,
        rt: ResourceType,
        obj: JSON,
        caller: Caller,
        *,
        status_only: bool = False,
        patched_from: tuple[JSON, str, Any] | None = None,
    ) -> JSON:
        """Pruning, unknown-field handling and defaulting of a decoded body; returns the object to use.

        ``patched_from`` is ``(current object, patch kind, patch document)`` when ``obj`` is the
        result of a PATCH: a built-in that the patch left undecodable (a malformed time, a
        strict-mode unknown field) is then the 422 kube-apiserver gives for a patch rather than
        the 400 of a request body.
        """
        mode = caller.query.get("fieldValidation", "Warn")
        if rt.builtin:
            try:
                decoded, warnings = builtins.decode_builtin(rt, obj, strict=mode == "Strict")
            except builtins.DecodeError as exc:
                if patched_from is not None:
                    current, patch_kind, patch_doc = patched_from
                    if patch_kind in ("merge", "json"):
                        raise builtins.patch_decode_error(
                            rt, current, patch_kind, patch_doc, obj, exc.message
                        ) from None
                    if patch_kind == "strategic":
                        raise builtins.strategic_patch_decode_error(patch_doc, exc.message) from None
                raise bad_request(builtins.decode_error_message(rt, exc.message)) from None
            if mode != "Ignore":
                for w in warnings:
                    caller.warnings.add(w)
            return decoded
        if rt.schema is None:
            return obj
        pruned = schema.prune(rt.schema, obj)
        if pruned and mode == "Strict":
            detail = ", ".join(f'unknown field "{p}"' for p in pruned)
            raise bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                f"strict decoding error: {detail}"
            )
        if mode != "Ignore":
            for path in pruned:
                caller.warnings.add(f'unknown field "{path}"')
        schema.apply_defaults(rt.schema, obj)
        return obj

    def _validate(
        self, rt: ResourceType, obj: JSON, old: JSON | None, *, status: bool = False
    ) -> list[FieldError]:
        errors: list[FieldError] = []
        meta = _meta(obj)
        if old is None:
            errors += objectmeta.validate_object_meta_create(
                meta, namespaced=rt.namespaced, name_rule=builtins.name_rule(rt)
            )
        else:
            errors += objectmeta.validate_object_meta_update(obj, old, namespaced=rt.namespaced)
        if rt.schema is not None:
            errors += schema.validate(rt.schema, obj, root_is_status=status, old=old)
            errors += schema.scale_accessor_errors(rt.scale, obj, include_spec=not status)
            errors += schema.list_type_errors(rt.schema, obj)
        if (rt.group, rt.resource) == ("apiextensions.k8s.io", "customresourcedefinitions"):
            # The complete CRD validation; the type's quick checks would repeat some of its causes.
            errors += schema.validate_crd(obj, old=old)
        elif rt.validate is not None:
            errors += rt.validate(obj, old)
        elif (rt.group, rt.resource) in WEBHOOK_CONFIG_RESOURCES:
            errors += admission_mod.validate_webhook_configuration(
                obj, WEBHOOK_CONFIG_RESOURCES[(rt.group, rt.resource)]
            )
        return errors

    def _default_builtin(self, rt: ResourceType, obj: JSON) -> None:
        if rt.default is not None:
            rt.default(obj)
        if (rt.group, rt.resource) in WEBHOOK_CONFIG_RESOURCES:
            admission_mod.default_webhook_configuration(
                obj, WEBHOOK_CONFIG_RESOURCES[(rt.group, rt.resource)]
            )

    def _after_write(self, rt: ResourceType, obj: JSON | None, old: JSON | None) -> None:
        if (rt.group, rt.resource) == (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
        ) and self.on_crd_change:
            self.on_crd_change(obj or {}, old)

    # ------------------------------------------------------------------------------------- read

    def get(self, rt: ResourceType, namespace: str, name: str) -> JSON:
        obj = self.store.get(rt.key, _key(rt, namespace, name))
        if obj is None:
            raise not_found(rt.qualified, name)
        return obj

    async def list(self, rt: ResourceType, namespace: str | None, query: dict[str, str]) -> JSON:
        """A list as kube returns it; items sorted by namespace/name; ``limit``/``continue`` paging.

        ``resourceVersion`` semantics: unset or "0" -> the current state; ``N`` with
        ``resourceVersionMatch=Exact`` -> the state at N, rebuilt from the watch history (410 once
        that history is gone); ``N`` otherwise -> at least as fresh as N, waiting up to 3 s for a
        version from the future before answering 504 with Retry-After, as kube-apiserver does.
        """
        rv_text = query.get("resourceVersion", "")
        rv_match = query.get("resourceVersionMatch", "")
        problems: list[FieldError] = []
        if rv_match and not rv_text:
            problems.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if query.get("sendInitialEvents"):
            problems.append(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
        if problems:
            raise invalid_object(_meta_options_q("ListOptions"), "", problems)
        label_sel, field_sel = self._selectors(rt, query)
        limit = decode_int_param("limit", query.get("limit"))
        token = query.get("continue")
        if token and rv_text and rv_text != "0":
            raise bad_request("specifying resource version is not allowed when using continue")
        list_rv = self.store.rv
        # The current state is decoded only as far as the page needs (the store holds bytes).
        past: list[JSON] | None = None
        if rv_text and rv_text != "0" and not token:
            wanted = _parse_rv(rv_text)
            if rv_match == "Exact":
                past = list(self._state_at(rt, namespace, wanted))
                list_rv = wanted
            elif wanted > self.store.rv:
                await self._wait_for_rv(wanted)
                list_rv = self.store.rv
        start_after = ""
        if token:
            list_rv, start_after = _decode_continue(token)
        if past is not None:
            candidates: list[tuple[str, Callable[[], JSON]]] = [
                (_ns_name(o), lambda o=o: o)  # type: ignore[misc]
                for o in past
            ]
        else:
            candidates = [
                (f"{key[0]}/{key[1]}", lambda key=key: self._stored(rt, key))  # type: ignore[misc]
                for key in self.store.keys(rt.key, namespace)
            ]
        if start_after:
            candidates = [c for c in candidates if c[0] > start_after]
        unfiltered = label_sel is None and field_sel is None
        want = limit + 1 if limit and limit > 0 else None
        matching: list[JSON] = []
        if unfiltered and want is not None:
            matching = [load() for _, load in candidates[:want]]
        else:
            for _, load in candidates:
                obj = load()
                if self._matches(rt, obj, label_sel, field_sel):
                    matching.append(obj)
                    if want is not None and len(matching) >= want:
                        break
        meta: JSON = {"resourceVersion": str(list_rv)}
        page = matching
        if limit and limit > 0 and len(matching) > limit:
            page = matching[:limit]
            meta["continue"] = _encode_continue(list_rv, _ns_name(page[-1]))
            if unfiltered:
                meta["remainingItemCount"] = len(candidates) - limit
        return {"kind": rt.list_kind, "apiVersion": rt.group_version, "metadata": meta, "items": page}

    def _stored(self, rt: ResourceType, key: tuple[str, str]) -> JSON:
        obj = self.store.get(rt.key, key)
        assert obj is not None  # listed a moment ago, and nothing awaits in between
        return obj

    def _state_at(self, rt: ResourceType, namespace: str | None, rv: int) -> Sequence[JSON]:
        """The objects of a resource as they were at ``rv``, by undoing the newer history."""
        rs = self.store.resource(rt.key)
        if rv < rs.start_rv and rs.trimmed:
            raise StatusError(410, "Expired", f"too old resource version: {rv} ({rs.start_rv})", {})
        state = {_ns_name(o): o for o in self.store.list(rt.key, None)}
        for change in reversed(list(rs.changes_since(rv))):
            key = _ns_name(change.object)
            if change.type == "ADDED":
                state.pop(key, None)
            elif change.type == "MODIFIED" and change.old_object is not None:
                state[key] = change.old_object
            elif change.type == "DELETED":
                previous = dict(change.object)
                state[key] = previous
        objs = [state[k] for k in sorted(state)]
        return [
            o for o in objs if namespace is None or (o.get("metadata") or {}).get("namespace") == namespace
        ]

    async def _wait_for_rv(self, rv: int, limit: float = 3.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        while self.store.rv < rv:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise StatusError(
                    504,
                    "Timeout",
                    f"Timeout: Too large resource version: {rv}, current: {self.store.rv}",
                    {
                        "causes": [
                            {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                        ],
                        "retryAfterSeconds": 1,
                    },
                    headers={"Retry-After": "1"},
                )
            advanced = self.store.rv_advanced
            try:
                await asyncio.wait_for(advanced.wait(), remaining)
            except TimeoutError:
                continue

    def _selectors(
        self, rt: ResourceType, query: dict[str, str]
    ) -> tuple[selectors.LabelSelector | None, selectors.FieldSelector | None]:
        label_text = query.get("labelSelector", "")
        field_text = query.get("fieldSelector", "")
        label_sel = selectors.parse_label_selector(label_text) if label_text else None
        field_sel = (
            selectors.parse_field_selector(field_text, builtins.supported_field_selectors(rt), rt)
            if field_text
            else None
        )
        if label_sel is not None and label_sel.empty:
            label_sel = None
        return label_sel, field_sel

    def _matches(
        self,
        rt: ResourceType,
        obj: JSON,
        label_sel: selectors.LabelSelector | None,
        field_sel: selectors.FieldSelector | None,
    ) -> bool:
        meta = obj.get("metadata") or {}
        if label_sel is not None and not label_sel.matches(meta.get("labels") or {}):
            return False
        return field_sel is None or field_sel.matches(builtins.field_selector_fields(rt, obj))

    # ------------------------------------------------------------------------------------ watch

    async def watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        query: dict[str, str],
        *,
        name: str | None = None,
        stopping: asyncio.Event,
    ) -> AsyncGenerator[WatchBatch, None]:
        """Yield batches of ``(type, object)`` watch events until the timeout, the client or the
        server ends it.

        Raises StatusError before anything else for a request the server refuses outright; once the
        request is accepted the first batch is ``[(WATCH_ACCEPTED, {})]`` so that the HTTP layer can
        send its 200 headers at once, before any event exists (clients wait for the headers).
        A batch is every event that is ready at that moment (at most :data:`WATCH_BATCH`), so
        that a busy stream goes out in a few large writes instead of one write per event.

        Progress BOOKMARKs (with ``allowWatchBookmarks``) follow kube-apiserver's watch cache
        (``k8s.io/apiserver/pkg/storage/cacher``: ``cacheWatcher.nextBookmarkTime`` in
        ``cache_watcher.go``, the bookmark timer of ``Cacher.dispatchEvents`` in ``cacher.go``),
        as measured on 1.32 (tests/testdata/kube-apiserver/FACTS.md):

        * They are due every :attr:`bookmark_interval` (kube: ``defaultBookmarkFrequency``, one
          minute) and, with ``timeoutSeconds``, once more just before the deadline: at deadline - 2 s
          (:data:`BOOKMARK_BEFORE_DEADLINE`), whichever comes first. Nothing is due after that:
          a watch of 2 s or less gets none at all, and the stream ends at the timeout with no
          final event.
        * A due bookmark goes out only if the resource type was written (in any namespace) since
          the watch began, and carries the type's newest resourceVersion, cluster-wide, even to a
          watcher whose selector matched none of those writes.
        * kube keeps watchers in one-second buckets and pops them on a timer of 1-1.25 s, so its
          pre-deadline bookmark arrives within about a second either side of deadline - 2 s, and
          when it fires early the watcher is requeued for the same instant and gets a second one on
          the next tick (measured: T=4 gave 1.27 s and 2.43 s; never more than two). That second
          one is an artefact of the bucketing no client may count on, so this server sends exactly
          one, at deadline - 2 s: the instant the real one scatters around.
        """
        rv_text = query.get("resourceVersion", "")
        rv_match = query.get("resourceVersionMatch", "")
        send_initial_text = query.get("sendInitialEvents")
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        if send_initial_text is not None and send_initial_text not in ("true", "false"):
            raise bad_request(f'sendInitialEvents: invalid value "{send_initial_text}"')
        send_initial = send_initial_text == "true"
        if send_initial and rv_match != "NotOlderThan":
            raise invalid_object(
                _meta_options_q("ListOptions"),
                "",
                [
                    forbidden(
                        "resourceVersionMatch",
                        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                    )
                ],
            )
        start_rv = _parse_rv_field(rv_text) if rv_text not in ("", "0") else 0
        label_sel, field_sel = self._selectors(rt, query)
        if name is not None:
            extra = selectors.parse_field_selector(f"metadata.name={name}", {"metadata.name"}, rt)
            field_sel = extra if field_sel is None else _and_field(field_sel, extra)
        timeout = decode_int_param("timeoutSeconds", query.get("timeoutSeconds"))

        def predicate(obj: JSON) -> bool:
            if namespace is not None and (obj.get("metadata") or {}).get("namespace") != namespace:
                return False
            return self._matches(rt, obj, label_sel, field_sel)

        rs = self.store.resource(rt.key)
        # Bookmarks report progress made while the watch is open. kube-apiserver 1.32 sends none for
        # writes made before the watch began, even after the version the watch starts from
        # (measured with timeoutSeconds 3, 5 and 10 and a selector matching nothing): the version
        # the resource had when the watch was accepted is the mark to pass, taken before the 200
        # goes out so that a write the client makes once it has the headers counts as "during".
        began_version = rs.last_rv
        yield [(WATCH_ACCEPTED, {})]
        # 1.32's WatchList default: a watch from "now" (no RV or 0) that allows bookmarks is served as
        # a watch-list; an explicit sendInitialEvents always decides.
        if send_initial_text is None:
            initial = rv_text in ("", "0")
            initial_end_bookmark = initial and bookmarks
        else:
            initial = send_initial
            initial_end_bookmark = send_initial and bookmarks
        from .store import Watcher

        watcher = Watcher(predicate)
        backlog: list[tuple[str, JSON]] = []
        if initial:
            for obj in self.store.list(rt.key, namespace):
                if predicate(obj):
                    backlog.append(("ADDED", obj))
            if initial_end_bookmark:
                backlog.append(("BOOKMARK", self._initial_events_end(rt, max(self.store.rv, start_rv))))
        elif start_rv:
            if start_rv < rs.start_rv:
                backlog.append(("ERROR", _expired(start_rv, rs.start_rv)))
                watcher = None  # type: ignore[assignment]
            else:
                for change in rs.changes_since(start_rv):
                    Watcher.offer(_BacklogSink(backlog, predicate), change)  # type: ignore[arg-type]
        if watcher is None:
            for start in range(0, len(backlog), WATCH_BATCH):
                yield backlog[start : start + WATCH_BATCH]
            return
        rs.watchers.add(watcher)
        # Bookmarks: see the docstring (due every bookmark_interval and at deadline - 2 s, sent
        # only after a write of the type since the watch began, with the type's newest version).
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout if timeout else None
        interval = self.bookmark_interval
        next_bookmark = _next_bookmark_time(loop.time(), interval, deadline) if bookmarks else None
        queue = watcher.queue
        try:
            for start in range(0, len(backlog), WATCH_BATCH):
                yield backlog[start : start + WATCH_BATCH]
            while not stopping.is_set():
                now = loop.time()
                waits = [next_bookmark - now] if next_bookmark is not None else []
                if deadline is not None:
                    waits.append(deadline - now)
                wait = max(0.0, min(waits)) if waits else None
                if (wait is None or wait > 0) and not queue.empty():
                    # Ready now: no timer (a due bookmark or deadline takes the path below).
                    item = queue.get_nowait()
                else:
                    try:
                        item = await asyncio.wait_for(queue.get(), wait)
                    except TimeoutError:
                        item = _TICK
                if item is None:
                    return
                if item is not _TICK:
                    batch = [item]
                    ended = False
                    while len(batch) < WATCH_BATCH and not queue.empty():
                        more = queue.get_nowait()
                        if more is None:
                            ended = True
                            break
                        batch.append(more)
                    yield batch
                    if ended:
                        return
                    continue
                now = loop.time()
                if deadline is not None and now >= deadline:
                    return
                if next_bookmark is not None and now >= next_bookmark:
                    next_bookmark = _next_bookmark_time(now, interval, deadline)
                    if rs.last_rv > began_version:
                        yield [("BOOKMARK", self._bookmark(rt, rs.last_rv))]
        finally:
            rs.watchers.discard(watcher)

    bookmark_interval: float = 60.0

    @staticmethod
    def _bookmark(rt: ResourceType, rv: int) -> JSON:
        """A progress BOOKMARK: a custom resource's carries only the resourceVersion; a built-in's is
        an empty typed object, so Go's encoder adds ``"creationTimestamp": null`` (measured on 1.32)."""
        if rt.builtin:
            meta: JSON = {"resourceVersion": str(rv), "creationTimestamp": None}
            return {"kind": rt.kind, "apiVersion": rt.group_version, "metadata": meta}
        return {"apiVersion": rt.group_version, "kind": rt.kind, "metadata": {"resourceVersion": str(rv)}}

    @staticmethod
    def _initial_events_end(rt: ResourceType, rv: int) -> JSON:
        blueprint = json.dumps(
            {"apiVersion": rt.group_version, "items": [], "kind": rt.list_kind}, separators=(",", ":")
        )
        return {
            "apiVersion": rt.group_version,
            "kind": rt.kind,
            "metadata": {
                "annotations": {
                    "k8s.io/initial-events-end": "true",
                    "kubernetes.io/initial-events-list-blueprint": base64.b64encode(
                        (blueprint + "\n").encode()
                    ).decode(),
                },
                "resourceVersion": str(rv),
            },
        }

    # ----------------------------------------------------------------------------------- create

    async def create(
        self, rt: ResourceType, namespace: str, obj: JSON, caller: Caller, *, apply_config: JSON | None = None
    ) -> JSON:
        """POST: returns the stored object (or, for dryRun, what would have been stored)."""
        if (rt.group, rt.resource) == ("authentication.k8s.io", "selfsubjectreviews"):
            # Not stored: the answer echoes who the caller is.
            return builtins.self_subject_review(
                caller.username, caller.groups, caller.uid, caller.extra, now=now_rfc3339()
            )
        meta = _meta(obj)
        q = rt.qualified
        body_kind = obj.get("kind")
        if body_kind != rt.kind:
            from .errors import Qualified

            wrong = Qualified(rt.group, rt.resource, str(body_kind))
            raise invalid_object(
                wrong, str(meta.get("name") or ""), [invalid("kind", body_kind, f"must be {rt.kind}")]
            )
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise StatusError(500, None, "resourceVersion should not be set on objects to be created")
        obj = self._prepare_body(rt, obj, caller)
        self._create_rules(rt, obj)
        meta = _meta(obj)
        meta.pop("managedFields", None)
        self._default_builtin(rt, obj)
        if apply_config is not None:
            entries, obj = objectmeta.apply_managed_fields(
                None,
                None,
                obj,
                apply_config,
                manager=caller.field_manager(),
                api_version=rt.group_version,
                time=now_rfc3339(),
                force=caller.query.get("force") == "true",
                rules=builtins.field_rules(rt),
            )
            meta = _meta(obj)
        else:
            entries = objectmeta.update_managed_fields(
                None,
                None,
                obj,
                manager=caller.field_manager(),
                operation="Update",
                api_version=rt.group_version,
                subresource="",
                time=now_rfc3339(),
                rules=builtins.field_rules(rt),
            )
        if entries:
            meta["managedFields"] = entries
        if rt.builtin:
            builtins.prepare_for_create(rt, obj)
            builtins.admit_create(rt, obj)
            refusal = builtins.admission_refusal(rt, obj)
            if refusal is not None:
                denied = str(meta.get("name") or "")
                raise StatusError(
                    403,
                    "Forbidden",
                    f'{q.by_resource()} "{denied}" is forbidden: {refusal}',
                    {"name": denied, **({"group": q.group} if q.group else {}), "kind": q.resource},
                )
        name = str(meta.get("name") or "")
        if rt.namespaced:
            self._check_namespace_for_create(rt, namespace, name)
        mutated = await self._admit(
            rt,
            operation="CREATE",
            obj=obj,
            old=None,
            caller=caller,
            namespace=namespace if rt.namespaced else "",
            name=name,
            options=self._create_options(caller),
            mutate=True,
        )
        if mutated is not None and mutated is not obj:
            # The strategy runs after mutating admission: what a webhook set that a new object may
            # not carry (status behind a status subresource, system metadata) goes too.
            obj = mutated
            self._create_rules(rt, obj)
            if rt.builtin:
                builtins.prepare_for_create(rt, obj)
        meta = _meta(obj)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = objectmeta.generate_name(str(meta["generateName"]))
        name = str(meta.get("name") or "")
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if rt.tracks_generation:
            meta["generation"] = 1
        errors = self._validate(rt, obj, None)
        if errors:
            raise invalid_object(q, name, errors)
        await self._admit(
            rt,
            operation="CREATE",
            obj=obj,
            old=None,
            caller=caller,
            namespace=namespace if rt.namespaced else "",
            name=name,
            options=self._create_options(caller),
            mutate=False,
        )
        key = _key(rt, namespace, name)
        if self.store.resource_version(rt.key, key) is not None:
            raise already_exists(q, name)
        if caller.dry_run:
            return obj
        stored = self.store.put(rt.key, key, obj, None)
        self._after_write(rt, stored, None)
        return stored

    @staticmethod
    def _create_rules(rt: ResourceType, obj: JSON) -> None:
        """Drop (in place) what a new object may not bring: the metadata the server sets, and
        status where a status subresource owns it."""
        meta = _meta(obj)
        for server_owned in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            meta.pop(server_owned, None)
        if rt.has_status:
            obj.pop("status", None)

    # ---------------------------------------------------------------------------- update, patch

    async def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: JSON,
        caller: Caller,
        *,
        subresource: str = "",
    ) -> JSON:
        """PUT of the main resource or of its ``status`` subresource."""
        meta = _meta(body)
        q = rt.qualified
        body_name = meta.get("name")
        if body_name and body_name != name:
            raise bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        if body.get("kind") != rt.kind:
            from .errors import Qualified

            wrong = Qualified(rt.group, rt.resource, str(body.get("kind")))
            raise invalid_object(wrong, name, [invalid("kind", body.get("kind"), f"must be {rt.kind}")])
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
        rv_text = meta.get("resourceVersion")
        current = self.store.get(rt.key, _key(rt, namespace, name))
        if current is None:
            raise not_found(q, name)
        if not rv_text:
            raise invalid_object(
                q,
                name,
                [invalid("metadata.resourceVersion", GoRepr("0x0"), "must be specified for an update")],
                by_resource=True,
            )
        expected = _parse_rv(str(rv_text))
        if str(expected) != current["metadata"]["resourceVersion"]:
            raise conflict(q, name, OPTIMISTIC_LOCK)
        body_uid = meta.get("uid")
        if body_uid and body_uid != current["metadata"].get("uid"):
            raise conflict(
                q,
                name,
                f"StorageError: invalid object, Code: 4, Key: /registry/{rt.group + '/' if rt.group else ''}"
                f"{rt.resource}/{namespace + '/' if rt.namespaced else ''}{name}, ResourceVersion: 0, "
                f"AdditionalErrorMsg: Precondition failed: UID in precondition: {body_uid}, "
                f"UID in object meta: {current['metadata'].get('uid')}",
            )
        body = self._prepare_body(rt, body, caller, status_only=subresource == "status")
        return await self._commit_update(rt, namespace, name, current, body, caller, subresource=subresource)

    async def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        raw: bytes,
        caller: Caller,
        *,
        subresource: str = "",
    ) -> tuple[JSON, bool]:
        """PATCH; returns (object, created) -- apply patches may create."""
        q = rt.qualified
        kind = patch.patch_kind(content_type, strategic=rt.builtin)
        if kind == "apply" and not caller.query.get("fieldManager"):
            raise invalid_object(
                _meta_options_q("PatchOptions"), "", [required("fieldManager", "is required for apply patch")]
            )
        patch_doc = patch.decode_patch(kind, raw)
        for _attempt in range(8):
            current = self.store.get(rt.key, _key(rt, namespace, name))
            if current is None:
                if kind == "apply" and not subresource:
                    obj = copy.deepcopy(patch_doc)
                    if not isinstance(obj, dict):
                        raise bad_request("apply patch must be an object")
                    return await self.create(rt, namespace, obj, caller, apply_config=patch_doc), True
                raise not_found(q, name)
            # The patch functions copy what they patch, so the stored object itself is the target.
            target = self.scale_of(rt, current) if subresource == "scale" else current
            if kind == "merge":
                patched = patch.merge_patch(target, patch_doc)
            elif kind == "json":
                patched = patch.json_patch(target, patch_doc)
            elif kind == "strategic":
                patched = patch.strategic_merge_patch(target, patch_doc, rt.merge_keys)
            else:
                patched = patch.merge_patch(target, patch_doc)
            if not isinstance(patched, dict):
                raise bad_request("the patched object is not a JSON object")
            wanted_rv = (patched.get("metadata") or {}).get("resourceVersion")
            if wanted_rv and wanted_rv != target.get("metadata", {}).get("resourceVersion"):
                raise conflict(q, name, OPTIMISTIC_LOCK)
            if subresource == "scale":
                patched = self._scale_to_object(rt, current, patched)
            patched = self._prepare_body(
                rt,
                patched,
                caller,
                status_only=subresource == "status",
                patched_from=(target, kind, patch_doc),
            )
            try:
                result = await self._commit_update(
                    rt,
                    namespace,
                    name,
                    current,
                    patched,
                    caller,
                    subresource=subresource,
                    operation="Apply" if kind == "apply" else "Update",
                    expect_rv=current["metadata"]["resourceVersion"],
                    apply_config=patch_doc if kind == "apply" else None,
                )
            except _Retry:
                continue
            return result, False
        raise conflict(q, name, OPTIMISTIC_LOCK)

    async def update_scale(
        self, rt: ResourceType, namespace: str, name: str, body: JSON, caller: Caller
    ) -> JSON:
        """PUT /scale: an autoscaling/v1 Scale in, the new Scale out; a missing resourceVersion is allowed."""
        q = rt.qualified
        current = self.store.get(rt.key, _key(rt, namespace, name))
        if current is None:
            raise not_found(q, name)
        rv_text = (body.get("metadata") or {}).get("resourceVersion")
        if rv_text and str(_parse_rv(str(rv_text))) != current["metadata"]["resourceVersion"]:
            raise conflict(q, name, OPTIMISTIC_LOCK)
        new = self._scale_to_object(rt, current, body)
        return await self._commit_update(rt, namespace, name, current, new, caller, subresource="scale")

    def _update_rules(
        self, rt: ResourceType, new: JSON, current: JSON, subresource: str, namespace: str, name: str
    ) -> JSON:
        """``new`` with what this endpoint may not change taken from ``current``: status on the
        main resource, everything but status on /status, and the system metadata (uid, times,
        generation, name, namespace, resourceVersion). Returns the object to use."""
        old_meta = current["metadata"]
        if rt.builtin and subresource != "scale":
            builtins.prepare_for_update(rt, new, current, subresource)
        elif subresource == "status":
            merged = jsoncodec.clone(current)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            new = merged
        else:
            if rt.has_status:
                if "status" in current:
                    new["status"] = jsoncodec.clone(current["status"])
                else:
                    new.pop("status", None)
        meta = _meta(new)
        new["apiVersion"] = rt.group_version
        new["kind"] = rt.kind
        for carried in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            if carried in old_meta:
                meta[carried] = old_meta[carried]
            else:
                meta.pop(carried, None)
        meta["name"] = name
        if rt.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        return new

    async def _commit_update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        current: JSON,
        new: JSON,
        caller: Caller,
        *,
        subresource: str,
        operation: str = "Update",
        expect_rv: str | None = None,
        apply_config: JSON | None = None,
    ) -> JSON:
        """The shared tail of PUT and PATCH: carry over what the endpoint may not change, mutating
        admission, bump generation, validate, validating admission, detect no-ops, honour
        finalizers, store."""
        q = rt.qualified
        old_meta = current["metadata"]
        # Field ownership is worked out from what the client sent, before the endpoint drops what it
        # may not change (a label sent to /status stays owned, as the real server records it).
        # Only /status needs that copy (every other endpoint attributes the final object).
        submitted = jsoncodec.clone(new) if subresource == "status" else new
        new = self._update_rules(rt, new, current, subresource, namespace, name)
        meta = _meta(new)
        scale_kind = SCALE_GROUP_KIND if subresource == "scale" else None
        admit_obj = self.scale_of(rt, new) if subresource == "scale" else new
        admit_old = self.scale_of(rt, current) if subresource == "scale" else current
        ns = namespace if rt.namespaced else ""
        mutated = await self._admit(
            rt,
            operation="UPDATE",
            obj=admit_obj,
            old=admit_old,
            caller=caller,
            namespace=ns,
            name=name,
            subresource=subresource,
            kind=scale_kind,
            options=self._update_options(caller),
            mutate=True,
        )
        if mutated is not None and mutated is not admit_obj:
            if subresource == "scale":
                replicas = (mutated.get("spec") or {}).get("replicas")
                _set_path(new, rt.scale.spec_replicas_path, replicas)  # type: ignore[union-attr]
            else:
                # What a webhook changed is subject to the endpoint's rules too (the real strategy
                # runs after mutating admission): status on the main resource, spec on /status
                # and the system metadata stay as they were.
                new = self._update_rules(rt, mutated, current, subresource, namespace, name)
                meta = _meta(new)
        # Generation moves in the strategy's PrepareForUpdate: after mutating admission (whose webhooks
        # still see the old generation), before validating admission.
        if rt.tracks_generation and "generation" in old_meta and _spec_part(new) != _spec_part(current):
            meta["generation"] = int(old_meta["generation"]) + 1
        # The admission chain is mutating webhooks -> validation of the result -> validating
        # webhooks: a webhook may repair an invalid object, and what it makes invalid is refused.
        errors = self._validate(rt, new, current, status=subresource == "status")
        if errors:
            raise invalid_object(q, name, errors)
        await self._admit(
            rt,
            operation="UPDATE",
            obj=self.scale_of(rt, new) if subresource == "scale" else new,
            old=admit_old,
            caller=caller,
            namespace=ns,
            name=name,
            subresource=subresource,
            kind=scale_kind,
            options=self._update_options(caller),
            mutate=False,
        )
        latest_rv = self.store.resource_version(rt.key, _key(rt, namespace, name))
        if latest_rv is None:
            raise not_found(q, name)
        if latest_rv != old_meta["resourceVersion"]:
            if expect_rv is not None:
                raise _Retry()
            raise conflict(q, name, OPTIMISTIC_LOCK)
        if apply_config is not None:
            entries, new = objectmeta.apply_managed_fields(
                old_meta.get("managedFields"),
                current,
                new,
                apply_config,
                manager=caller.field_manager(),
                api_version=rt.group_version,
                subresource=subresource,
                time=now_rfc3339(),
                force=caller.query.get("force") == "true",
                rules=builtins.field_rules(rt),
            )
            meta = _meta(new)
        else:
            entries = objectmeta.update_managed_fields(
                old_meta.get("managedFields"),
                current,
                submitted if subresource == "status" else new,
                manager=caller.field_manager(),
                operation=operation,
                api_version=rt.group_version,
                subresource=subresource,
                time=None if subresource == "scale" else now_rfc3339(),
                rules=builtins.field_rules(rt),
            )
        if entries:
            meta["managedFields"] = entries
        else:
            meta.pop("managedFields", None)
        if _same_ignoring_managed_fields(new, current):
            return current
        if (
            old_meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not old_meta.get("deletionGracePeriodSeconds")
        ):
            # The last finalizer gone: the object goes, unless it waits out a grace period (a Pod
            # its kubelet still stops; kube's store deletes during an update only at grace 0).
            meta.pop("finalizers", None)
            if caller.dry_run:
                return new
            self.store.delete(rt.key, _key(rt, namespace, name), current)
            self._after_write(rt, None, current)
            return new
        if caller.dry_run:
            return new
        stored = self.store.put(rt.key, _key(rt, namespace, name), new, current)
        self._after_write(rt, stored, current)
        return stored

    # ------------------------------------------------------------------------------------ scale

    def scale_of(self, rt: ResourceType, obj: JSON) -> JSON:
        """The autoscaling/v1 Scale view of a custom resource with a scale subresource."""
        assert rt.scale is not None
        meta = obj["metadata"]
        spec_replicas = _get_path(obj, rt.scale.spec_replicas_path)
        if spec_replicas is _MISSING:
            raise internal_error(f'the spec replicas field "{rt.scale.spec_replicas_path}" does not exist')
        status_replicas = _get_path(obj, rt.scale.status_replicas_path)
        status: JSON = {"replicas": 0 if status_replicas is _MISSING else status_replicas}
        if rt.scale.label_selector_path:
            selector = _get_path(obj, rt.scale.label_selector_path)
            if isinstance(selector, str):
                status["selector"] = selector
        scale_meta: JSON = {"name": meta["name"]}
        if meta.get("namespace"):
            scale_meta["namespace"] = meta["namespace"]
        scale_meta["uid"] = meta.get("uid")
        scale_meta["resourceVersion"] = meta.get("resourceVersion")
        scale_meta["creationTimestamp"] = meta.get("creationTimestamp")
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": scale_meta,
            "spec": {"replicas": spec_replicas},
            "status": status,
        }

    def _scale_to_object(self, rt: ResourceType, current: JSON, scale: JSON) -> JSON:
        assert rt.scale is not None
        # Range problems (negative replicas) surface through schema.scale_accessor_errors on the result.
        replicas = (scale.get("spec") or {}).get("replicas", 0)
        new = jsoncodec.clone(current)
        _set_path(new, rt.scale.spec_replicas_path, replicas)
        return new

    # ----------------------------------------------------------------------------------- delete

    async def delete(
        self, rt: ResourceType, namespace: str, name: str, options: JSON, caller: Caller
    ) -> tuple[JSON, bool]:
        """DELETE; returns (body, is_status). Objects with finalizers are only marked for deletion."""
        q = rt.qualified
        policy = options.get("propagationPolicy")
        if policy is not None and policy not in ("Foreground", "Background", "Orphan"):
            raise invalid_object(
                _meta_options_q("DeleteOptions"),
                "",
                [not_supported("propagationPolicy", policy, ["Foreground", "Background", "Orphan", "nil"])],
            )
        current = self.store.get(rt.key, _key(rt, namespace, name))
        if current is None:
            raise not_found(q, name)
        pre = options.get("preconditions") or {}
        cur_meta = current["metadata"]
        if pre.get("uid") and pre["uid"] != cur_meta.get("uid"):
            raise conflict(
                q,
                name,
                f"the UID in the precondition ({pre['uid']}) does not match the UID in record "
                f"({cur_meta.get('uid')}). The object might have been deleted and then recreated",
                by_kind=True,
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != cur_meta.get("resourceVersion"):
            raise conflict(
                q,
                name,
                f"the ResourceVersion in the precondition ({pre['resourceVersion']}) does not match the "
                f"ResourceVersion in record ({cur_meta.get('resourceVersion')}). "
                "The object might have been modified",
                by_kind=True,
            )
        delete_options: JSON = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}
        for k in ("gracePeriodSeconds", "propagationPolicy", "preconditions", "dryRun"):
            if k in options:
                delete_options[k] = options[k]
        if caller.dry_run:
            delete_options["dryRun"] = ["All"]
        ns = namespace if rt.namespaced else ""
        await self._admit(
            rt,
            operation="DELETE",
            obj=None,
            old=current,
            caller=caller,
            namespace=ns,
            name=name,
            options=delete_options,
            mutate=True,
        )
        await self._admit(
            rt,
            operation="DELETE",
            obj=None,
            old=current,
            caller=caller,
            namespace=ns,
            name=name,
            options=delete_options,
            mutate=False,
        )
        if cur_meta.get("deletionTimestamp"):
            shorter = builtins.shortened_grace_period(rt, current, options)
            if shorter is None:
                return current, False
            if shorter > 0 or cur_meta.get("finalizers"):
                marked = jsoncodec.clone(current)
                m = marked["metadata"]
                m["deletionTimestamp"] = _seconds_later(
                    str(m["deletionTimestamp"]), shorter - int(m["deletionGracePeriodSeconds"])
                )
                m["deletionGracePeriodSeconds"] = shorter
                if caller.dry_run:
                    return marked, False
                return self.store.put(rt.key, _key(rt, namespace, name), marked, current), False
            return self._delete_now(rt, namespace, name, current, caller)
        period = builtins.graceful_delete_period(rt, current, options)
        finalizers = list(cur_meta.get("finalizers") or [])
        if policy == "Orphan" and "orphan" not in finalizers:
            finalizers.append("orphan")
        if policy == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        namespace_pending = (
            rt.resource == "namespaces" and not rt.group and (current.get("spec") or {}).get("finalizers")
        )
        if finalizers or namespace_pending or period > 0:
            marked = jsoncodec.clone(current)
            m = marked["metadata"]
            if finalizers:
                m["finalizers"] = finalizers
            # A Pod bound to a Node waits its grace period for the kubelet (which deletes it with
            # grace 0 once its containers stopped); nothing else does.
            m["deletionTimestamp"] = _seconds_later(now_rfc3339(), period) if period else now_rfc3339()
            if finalizers or period:
                # A namespace held only by its spec.finalizers gets no grace period, as recorded.
                m["deletionGracePeriodSeconds"] = period
            if rt.tracks_generation and "generation" in m:
                m["generation"] = int(m["generation"]) + 1
            if namespace_pending:
                marked.setdefault("status", {})["phase"] = "Terminating"
            if caller.dry_run:
                return marked, False
            stored = self.store.put(rt.key, _key(rt, namespace, name), marked, current)
            return stored, False
        return self._delete_now(rt, namespace, name, current, caller)

    def _delete_now(
        self, rt: ResourceType, namespace: str, name: str, current: JSON, caller: Caller
    ) -> tuple[JSON, bool]:
        """Remove ``current`` from the store; the answer is a Status, or the object for the types
        whose storage answers a delete with it (namespaces, pods)."""
        cur_meta = current["metadata"]
        status: JSON = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {
                "name": name,
                **({"group": rt.group} if rt.group else {}),
                "kind": rt.resource,
                "uid": cur_meta.get("uid"),
            },
        }
        if caller.dry_run:
            return status, True
        self.store.delete(rt.key, _key(rt, namespace, name), current)
        self._after_write(rt, None, current)
        return (
            (status, True)
            if not rt.builtin or rt.resource not in ("namespaces", "pods")
            else (current, False)
        )

    async def delete_collection(
        self, rt: ResourceType, namespace: str | None, options: JSON, caller: Caller
    ) -> JSON:
        listed = await self.list(
            rt, namespace, {k: v for k, v in caller.query.items() if k in ("labelSelector", "fieldSelector")}
        )
        deleted: list[JSON] = []
        for obj in listed["items"]:
            body, is_status = await self.delete(
                rt, obj["metadata"].get("namespace", ""), obj["metadata"]["name"], options, caller
            )
            deleted.append(obj if is_status else body)
        listed["items"] = deleted
        return listed

    # ------------------------------------------------------------------------- namespace finalize

    async def finalize_namespace(self, rt: ResourceType, name: str, body: JSON, caller: Caller) -> JSON:
        current = self.store.get(rt.key, ("", name))
        if current is None:
            raise not_found(rt.qualified, name)
        new = jsoncodec.clone(current)
        new["spec"] = copy.deepcopy(body.get("spec") or {})
        if not new["spec"].get("finalizers"):
            new["spec"].pop("finalizers", None)
        if (
            current["metadata"].get("deletionTimestamp")
            and not new["spec"].get("finalizers")
            and not current["metadata"].get("finalizers")
        ):
            self.store.delete(rt.key, ("", name), current)
            return new
        return self.store.put(rt.key, ("", name), new, current)


class _Retry(Exception):
    """A patch raced another writer; recompute it against the newer object."""


class _BacklogSink:
    """Duck-typed stand-in for a Watcher whose queue is a plain list (history replay)."""

    def __init__(self, backlog: list[tuple[str, JSON]], predicate: Callable[[JSON], bool]) -> None:
        self.predicate = predicate
        self.queue = _ListQueue(backlog)


class _ListQueue:
    def __init__(self, backlog: list[tuple[str, JSON]]) -> None:
        self.backlog = backlog

    def put_nowait(self, item: tuple[str, JSON]) -> None:
        self.backlog.append(item)


_TICK: Any = object()

BOOKMARK_BEFORE_DEADLINE = 2.0
"""Seconds before a watch's ``timeoutSeconds`` deadline its last bookmark is due (kube-apiserver's
``cacheWatcher.nextBookmarkTime`` schedules it 2 s before the deadline)."""


def _next_bookmark_time(now: float, interval: float, deadline: float | None) -> float | None:
    """When a watch's next bookmark is due, or None when none is any more: ``interval`` from now,
    but no later than :data:`BOOKMARK_BEFORE_DEADLINE` before the deadline, and never once that
    instant has come (so a watch of 2 s or less has none, and the pre-deadline one is the last)."""
    due = now + interval
    if deadline is not None:
        due = min(due, deadline - BOOKMARK_BEFORE_DEADLINE)
        if due <= now:
            return None
    return due


_MISSING: Any = object()


def _ns_name(obj: JSON) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _encode_continue(rv: int, start_after: str) -> str:
    raw = json.dumps(
        {"v": "meta.k8s.io/v1", "rv": rv, "start": start_after + "\u0000"}, separators=(",", ":")
    )
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        raw = base64.urlsafe_b64decode(padded.encode())
        data = json.loads(raw)
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError(
                "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
            )
        return int(data["rv"]), str(data["start"]).rstrip("\u0000")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        detail = str(exc) if str(exc).startswith("continue key") else _go_json_detail(token)
        raise bad_request(f"invalid continue token: {detail}") from None


def _go_json_detail(token: str) -> str:
    try:
        padded = token + "=" * (-len(token) % 4)
        raw = base64.urlsafe_b64decode(padded.encode())
        first = raw[:1]
    except (ValueError, TypeError):
        return "continue key is not valid: illegal base64 data"
    char = first.decode("latin-1") if first else ""
    escaped = json.dumps(char)[1:-1] if char.isprintable() else f"\\x{first.hex()}"
    return f"continue key is not valid: invalid character '{escaped}' looking for beginning of value"


def _expired(requested: int, oldest: int) -> JSON:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"too old resource version: {requested} ({oldest})",
        "reason": "Expired",
        "code": 410,
    }


def _parse_rv_field(text: str) -> int:
    try:
        if not text.isdigit():
            raise ValueError
        return int(text)
    except ValueError:
        raise StatusError(
            500,
            None,
            f"resourceVersion: Invalid value: {go_quote(text)}: "
            f"strconv.ParseUint: parsing {go_quote(text)}: invalid syntax",
        ) from None


def decode_int_param(name: str, text: str | None) -> int:
    """An integer query parameter; absent means 0, anything Go's ParseInt refuses is a 400."""
    if text is None:
        return 0
    return decode.parse_int_param(name, text)


def _meta_options_q(kind: str) -> Any:
    from .errors import Qualified

    return Qualified("meta.k8s.io", kind, kind)


def _and_field(a: selectors.FieldSelector, b: selectors.FieldSelector) -> selectors.FieldSelector:
    return selectors.FieldSelector.conjunction(a, b)


def _get_path(obj: JSON, path: str) -> Any:
    cur: Any = obj
    for part in path.lstrip(".").split("."):
        if not isinstance(cur, dict) or part not in cur:
            return _MISSING
        cur = cur[part]
    return cur


def _set_path(obj: JSON, path: str, value: Any) -> None:
    parts = path.lstrip(".").split(".")
    cur = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            cur[part] = nxt
        cur = nxt
    cur[parts[-1]] = value


def _same_ignoring_managed_fields(a: JSON, b: JSON) -> bool:
    """A write that changes nothing but managedFields timestamps is a no-op (no new resourceVersion)."""

    def strip(o: JSON) -> JSON:
        c = dict(o)
        m = dict(c.get("metadata") or {})
        m.pop("managedFields", None)
        m.pop("resourceVersion", None)
        c["metadata"] = m
        return c

    return strip(a) == strip(b)
