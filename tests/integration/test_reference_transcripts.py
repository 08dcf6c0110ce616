"""Replays every recorded kube-apiserver transcript against the embedded API server.

The transcripts in ``tests/testdata/kube-apiserver`` (read its ``INDEX.md``) were recorded in
one long session against a real kube-apiserver v1.32: later cases depend on the state earlier ones
left (namespace ``ref``, the Gadget CRD, objects, webhooks). This module drives one embedded
server through the same session and compares every answer; each recorded case is one test.

How the session is reproduced
-----------------------------
* **Order.** File names group the cases by topic, not by time; :func:`run_plan` runs them in the
  order the recording's resourceVersions and timestamps prove (e.g. ``02-crd-create`` before the
  ``01-*`` discovery of the group it creates, ``03-namespace-create`` before the Gadgets in it,
  sections 17 and 18 before 16).
* **Unrecorded steps.** The recorder also did things it did not record; the recorded answers show
  them (``g1`` carries a ``bump`` label by ``07-*``, the ``13-*`` lists contain only ``g1`` and
  ``l1``-``l4``, the watch events show ``w1``..``w4`` being created, patched and deleted, ...).
  :func:`run_plan` redoes each with :meth:`Replayer.setup` (same User-Agent and identity; not
  compared, but a failure is attached to the next case's result), says what evidence it rests on,
  and where the recording shows the resourceVersion such a step produced, maps it.
* **Environment.** Requests carry the recorder's headers (``User-Agent: reftool/...`` on every
  request after ``02-crd-create``), the admin client certificate (CN=admin, O=system:masters), a
  static bearer token for ``15-token-*``, no credentials for ``*-noauth-*``. The ``21-*`` cases
  run against a second server with ``anonymous_auth=False``. The webhook of ``16-*`` is a real
  HTTPS server (see ``transcripts.ReplayWebhook``) whose URL and CA replace the recorded
  ``https://127.0.0.1:9443`` and ``caBundle``; the apiserver's own address replaces ``127.0.0.1:6443``.
* **Time.** Watches the recorder held open for 60-75 s to see a BOOKMARK run against a server
  with ``bookmark_interval=1.0``; the event *sequence* is compared, not the timing (see
  ``transcripts.compare_events``). ``timeoutSeconds`` streams run their real length (2, 3, 10 s;
  the 10 s one overlaps other steps as it did in the recording).

What is compared (per case, unless its test says otherwise)
-----------------------------------------------------------
Status code; the ``Content-Type``, ``Warning`` and ``Retry-After`` headers; the body: same keys in
the same order, same list lengths, same scalar types, same values -- except where the normalized
transcript has a placeholder: there the live value must have the right format, server-set times
must be "now", client-sent times must come back unchanged, and uids / resourceVersions / continue
tokens / generated names must agree with what the same recorded value stood for earlier in the
run (a no-op PUT must answer the *same* live resourceVersion). Status ``reason`` / ``message`` /
``details`` are therefore compared exactly, with live names and versions substituted. Watches:
the sequence of event types and each event object. ``16-*``: also every AdmissionReview the
webhook received (path, ``?timeout=``, headers, body) against the recorded one.

Cases the real server cannot show us (they record an artefact of the recording environment) have
an explicit expectation of what our server does instead, built from the recorded case that shows
the real behaviour; see :data:`DERIVED`. ``DERIVED`` also repairs one gap of the normalizer: the
422 of a merge patch that leaves a Lease undecodable quotes the patched document, whose
resourceVersion was left literal (``"358"``); the expectation puts ``<rv>`` there, and the live
message must quote the live resourceVersion that recorded one stood for earlier in the run
(:data:`PATCHED_DOCUMENT_CASES`).
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from runtime.jsoncodec import JSON
from tests.integration.transcripts import (
    REFERENCE_DIR,
    CaseResult,
    Comparator,
    HttpClient,
    LiveValues,
    Replayer,
    ReplayWebhook,
    Servers,
    Transcript,
    certificate_sha256,
    compare_events,
    is_progress_bookmark,
    load_transcripts,
)

TRANSCRIPTS = load_transcripts(REFERENCE_DIR)
G = "/apis/ref.example.dev/v1/namespaces/ref/gadgets"
CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.ref.example.dev"
STATIC_TOKEN = "reftool-static-admin-token"
BOOKMARK_INTERVAL = 1.0
# Groups/paths of the recording cluster that came from other, unrelated CRDs installed there.
FOREIGN_GROUPS = ("check.example.dev", "example.realk8s.io")

COMPARED_PLAIN = (
    "status; Content-Type/Warning/Retry-After; body keys, key order, types and values "
    "(placeholders: format, 'now' for server times, consistency with earlier answers)"
)
COMPARED_WATCH = (
    "status; Content-Type; event types in order and every event object as a body; periodic "
    "BOOKMARKs independent of timing (at least one if recorded, shape, last one's resourceVersion)"
)
COMPARED_WEBHOOK = (
    COMPARED_PLAIN + "; every AdmissionReview the webhook received (path, query, headers, body)"
)


def gadget(name: str, *, labels: dict[str, str] | None = None, **extra: Any) -> JSON:
    """A Gadget body the way the recorder wrote its set-up objects."""
    metadata: JSON = {"name": name}
    if labels:
        metadata["labels"] = labels
    metadata.update(extra.pop("metadata", {}))
    return {
        "apiVersion": "ref.example.dev/v1",
        "kind": "Gadget",
        "metadata": metadata,
        "spec": extra.pop("spec", {"size": "small"}),
    }


# ------------------------------------------------------------------------ derived expectations

_SYNTHETIC_RV = iter(range(900001, 900100))


def _events(case: str, indices: slice | list[int]) -> tuple[list[Any], list[Any]]:
    t = TRANSCRIPTS[case]
    raw, norm = t.response["events"], t.response_normalized["events"]
    picked = list(range(len(raw)))[indices] if isinstance(indices, slice) else indices
    return [copy.deepcopy(raw[i]) for i in picked], [copy.deepcopy(norm[i]) for i in picked]


def _initial_events_bookmark() -> tuple[JSON, JSON]:
    """The watch-list end-of-initial-events BOOKMARK (as 20-* recorded it), with a fresh recorded rv.

    Its resourceVersion is the list snapshot's, which the recording of *this* moment does not
    show; a synthetic recorded value makes the harness learn it without tying it to anything.
    """
    raw, norm = _events("20-watch-no-rv-bookmarks-defaulted", [9])
    raw[0]["object"]["metadata"]["resourceVersion"] = str(next(_SYNTHETIC_RV))
    return raw[0], norm[0]


def _stream(raw_events: list[Any], norm_events: list[Any]) -> tuple[JSON, JSON]:
    headers = {
        "Cache-Control": "no-cache, private",
        "Content-Type": "application/json",
        "Transfer-Encoding": "chunked",
    }
    return (
        {"status": 200, "headers": headers, "events": raw_events},
        {"status": 200, "headers": headers, "events": norm_events},
    )


def _watch_list_14(selected: slice | list[int], bookmark: bool) -> Callable[[Transcript], Transcript]:
    """What a 1.32 server with a modern etcd answers instead of the etcd-3.5.1 ERROR of 14-*.

    INDEX.md: a watch without resourceVersion (or with sendInitialEvents=true) becomes a watch-list
    request; 20-* (re-recorded with etcd 3.5.16) show the real answer: an ADDED event per existing
    object, sorted, then -- with allowWatchBookmarks -- the initial-events-end BOOKMARK. At this
    point of the session the objects are those of 14-watch-rv0-initial-state (bm1, g1, l1..l4).
    """

    def build(case: Transcript) -> Transcript:
        raw, norm = _events("14-watch-rv0-initial-state", selected)
        if bookmark:
            mark_raw, mark_norm = _initial_events_bookmark()
            raw.append(mark_raw)
            norm.append(mark_norm)
        return case.with_response(*_stream(raw, norm))

    return build


def _after_restart(case: Transcript) -> Transcript:
    """20-watch-right-after-restart-429: our server has no watch cache that initializes after a
    restart, and nothing restarts here; the same request (a watch-list with bookmarks) gets the
    answer 20-watchlist-sendInitialEvents recorded for it: nine ADDED and the initial-events-end
    BOOKMARK (its live events after that are not part of this case)."""
    raw, norm = _events("20-watchlist-sendInitialEvents", slice(0, 9))
    mark_raw, mark_norm = _initial_events_bookmark()
    return case.with_response(*_stream([*raw, mark_raw], [*norm, mark_norm]))


def _protobuf_415(case: Transcript) -> Transcript:
    """15-post-protobuf: the real server panics and drops the connection (a bug, per its note);
    ours rejects the protobuf body as it rejects text/plain in 15-post-text-plain (same 415)."""
    other = TRANSCRIPTS["15-post-text-plain"]
    return case.with_response(other.response, other.response_normalized)


# The 422 for a merge patch whose result a built-in cannot decode quotes the whole patched
# document, the current object's resourceVersion included. The normalizer masked the uid and the
# times inside that quoted document but left the resourceVersion literal ("358").
_QUOTED_RV = re.compile(r'(\\"resourceVersion\\":\\")([0-9]+)(\\")')
PATCHED_DOCUMENT_CASES = (
    "17-lease-merge-patch-microtime-no-fraction-422",
    "17-lease-merge-patch-invalid-time-422",
    "17-lease-patch-renew-9digits",
)


def quoted_rv(case: Transcript) -> str:
    """The one resourceVersion quoted in the recorded 422 message (``358`` for invalid-time)."""
    found = set(_QUOTED_RV.findall(case.response["body"]["message"]))
    if len(found) != 1:
        raise ValueError(f"{case.name}: expected one quoted resourceVersion, found {sorted(found)}")
    return found.pop()[1]


def _patched_document_rv(case: Transcript) -> Transcript:
    """Put ``<rv>`` where the normalizer left the quoted resourceVersion literal.

    The live message must then carry exactly the live resourceVersion that the recorded one
    stood for earlier in the run (``run_plan`` also checks that it *was* seen earlier, so the
    placeholder cannot just learn an arbitrary number here). Everything else in the message,
    the quoted document's key order and every other byte, is compared as recorded.
    """
    recorded = quoted_rv(case)
    normalized = copy.deepcopy(case.response_normalized)
    body = normalized["body"]
    for holder in (body, *body["details"]["causes"]):
        holder["message"], count = _QUOTED_RV.subn(r"\g<1><rv>\g<3>", holder["message"])
        if count != 1:
            raise ValueError(
                f"{case.name}: expected the quoted resourceVersion {recorded} once, not {count}x"
            )
    return case.with_response(case.response, normalized)


def _seen_before(case: Transcript) -> Callable[[Comparator, Any], None]:
    """The recorded resourceVersion quoted in the message must already stand for a live one."""
    recorded = quoted_rv(case)

    def check(cmp: Comparator, live: Any) -> None:
        del live
        if cmp.values.known("rv", recorded) is None:
            cmp.add(
                "body.message",
                f"<the live resourceVersion for recorded {recorded}>",
                "<none learned>",
                "harness: no earlier answer showed the resourceVersion this message quotes",
            )

    return check


PATCHED_DOCUMENT_NOTE = (
    "the quoted patched document's resourceVersion, left literal by the normalizer, is expected "
    "as the live resourceVersion the recorded one stood for earlier in the run"
)

WATCH_LIST_NOTE = (
    "ENV-SPECIFIC in INDEX.md (etcd 3.5.1 without RequestWatchProgress); expected instead: what 1.32 "
    "with a modern etcd answers (20-*): an ADDED per existing object (bm1, g1, l1..l4 at this point, "
    "as 14-watch-rv0-initial-state shows them){}"
)
DERIVED: dict[str, tuple[Callable[[Transcript], Transcript], str]] = {
    "14-watch-no-rv-initial-state": (
        _watch_list_14(slice(0, 6), bookmark=False),
        WATCH_LIST_NOTE.format(", no BOOKMARK without allowWatchBookmarks (20-watch-no-rv-no-bookmarks)"),
    ),
    "14-watch-no-rv-bookmarks-defaulted-to-watchlist": (
        _watch_list_14([0], bookmark=True),
        WATCH_LIST_NOTE.format(" matching bm=yes (bm1), then the initial-events-end BOOKMARK"),
    ),
    "14-watch-sendInitialEvents": (
        _watch_list_14(slice(0, 6), bookmark=True),
        WATCH_LIST_NOTE.format(", then the initial-events-end BOOKMARK (20-watchlist-sendInitialEvents)"),
    ),
    "14-watch-sendInitialEvents-rv0": (
        _watch_list_14(slice(0, 6), bookmark=True),
        WATCH_LIST_NOTE.format(", then the initial-events-end BOOKMARK (20-watchlist-sendInitialEvents-rv0)"),
    ),
    "14-watch-sendInitialEvents-selector": (
        _watch_list_14([2, 3], bookmark=True),
        WATCH_LIST_NOTE.format(
            " matching a in (x,y) (l1, l2), then the initial-events-end BOOKMARK "
            "(20-watchlist-sendInitialEvents-selector)"
        ),
    ),
    "14-watch-sendInitialEvents-no-bookmarks": (
        _watch_list_14(slice(0, 6), bookmark=False),
        WATCH_LIST_NOTE.format(", and no BOOKMARK since allowWatchBookmarks is not set"),
    ),
    "20-watch-right-after-restart-429": (
        _after_restart,
        "the 429 is a property of a watch cache re-initializing after an apiserver restart; nothing "
        "restarts here, so the same request gets what 20-watchlist-sendInitialEvents recorded for it: "
        "nine ADDED and the initial-events-end BOOKMARK",
    ),
    "15-post-protobuf": (
        _protobuf_415,
        "the real server panics and drops the connection (a bug, per the note); ours rejects the "
        "protobuf body with the 415 of 15-post-text-plain",
    ),
    **{name: (_patched_document_rv, PATCHED_DOCUMENT_NOTE) for name in PATCHED_DOCUMENT_CASES},
}

DERIVED_NOTE = {name: note for name, (_, note) in DERIVED.items()}


def expected(name: str) -> Transcript:
    case = TRANSCRIPTS[name]
    derived = DERIVED.get(name)
    return derived[0](case) if derived else case


# ------------------------------------------------------------------------- trimmed recordings


def _keep(items: list[JSON], key: str, names: set[str]) -> list[JSON]:
    return [item for item in items if item.get(key) in names]


def _trim_api_v1(body: JSON) -> JSON:
    body["resources"] = _keep(body["resources"], "name", {"namespaces", "nodes"})
    return body


def _trim_apis(body: JSON) -> JSON:
    body["groups"] = _keep(body["groups"], "name", {"apps", "coordination.k8s.io", "ref.example.dev"})
    return body


def _trim_core_discovery(body: JSON) -> JSON:
    for item in body["items"]:
        for version in item["versions"]:
            version["resources"] = _keep(version["resources"], "resource", {"namespaces", "nodes", "pods"})
    return body


def _trim_group_discovery(body: JSON) -> JSON:
    body["items"] = [
        item
        for item in body["items"]
        if item.get("metadata", {}).get("name") in {"apps", "coordination.k8s.io", "ref.example.dev"}
    ]
    for item in body["items"]:
        if item["metadata"]["name"] == "apps":
            for version in item["versions"]:
                version["resources"] = _keep(version["resources"], "resource", {"deployments"})
    return body


def _trim_openapi_root(body: JSON) -> JSON:
    keep = {"api/v1", "apis/coordination.k8s.io/v1", "apis/ref.example.dev/v1"}
    body["paths"] = {k: v for k, v in body["paths"].items() if k in keep}
    return body


def _names_check(
    note_key: str, extract: Callable[[JSON], list[str]], case: str
) -> Callable[[Comparator, Any], None]:
    """The full list of names the trimmed recording's note gives, minus the recording's unrelated CRDs."""
    recorded = [n for n in TRANSCRIPTS[case].raw["note"][note_key] if not any(g in n for g in FOREIGN_GROUPS)]

    def check(cmp: Comparator, live: Any) -> None:
        try:
            got = extract(live)
        except (KeyError, TypeError):
            cmp.add(f"note.{note_key}", recorded, "<no such list>", "live body has another shape")
            return
        if got != recorded:
            missing = [n for n in recorded if n not in got]
            extra = [n for n in got if n not in recorded]
            cmp.add(
                f"note.{note_key}",
                recorded,
                got,
                f"names served differ from the untrimmed recording: missing {missing}, unexpected {extra}",
            )

    return check


# /version: the stand-in answers with the recorded release (major, minor, compared exactly) and
# keys, but with its own build identity, so these fields are compared by type only.
VERSION_BUILD_FIELDS = tuple(
    f"body.{k}"
    for k in ("gitVersion", "gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler", "platform")
)


# ------------------------------------------------------------------------------------- the plan


async def run_plan(r: Replayer) -> None:
    """The recorded session, in recorded order, with the unrecorded steps it implies."""

    async def case(name: str, **kwargs: Any) -> None:
        t = expected(name)
        kwargs.setdefault("compared", COMPARED_WEBHOOK if t.webhook_calls else COMPARED_PLAIN)
        if name in DERIVED_NOTE:
            kwargs["notes"] = [*kwargs.get("notes", []), f"expectation derived: {DERIVED_NOTE[name]}"]
        await r.replay(t, **kwargs)

    async def open_watch(name: str) -> None:
        t = expected(name)
        await r.open_watch(t, compared=COMPARED_WATCH)
        if name in DERIVED_NOTE:
            r.result_for(name).notes.append(f"expectation derived: {DERIVED_NOTE[name]}")

    async def watch(name: str, **kwargs: Any) -> None:
        await open_watch(name)
        await r.close_watch(name, **kwargs)

    async def create(name: str, *, rv: str | None = None, **kwargs: Any) -> None:
        await r.setup(f"create gadget {name}", "POST", G, gadget(name, **kwargs), recorded_rv=rv)

    async def merge(name: str, patch: JSON, *, rv: str | None = None, sub: str = "") -> None:
        path = f"{G}/{name}/{sub}" if sub else f"{G}/{name}"
        await r.setup(
            f"merge-patch {name}{'/' + sub if sub else ''} {json.dumps(patch)}",
            "PATCH",
            path,
            patch,
            content_type="application/merge-patch+json",
            recorded_rv=rv,
        )

    async def delete(name: str, base: str = G) -> None:
        await r.setup(f"delete {base}/{name}", "DELETE", f"{base}/{name}")

    # -- 02, then 01: discovery of ref.example.dev needs the CRD, so 01-* were recorded after 02.
    await case("02-crd-create", compared=COMPARED_PLAIN + "; sent without User-Agent (manager 'unknown')")
    await wait_established(r)
    await case("02-crd-get-established")
    await case("01-get-api")
    await case(
        "01-get-api-aggregated-discovery",
        trim=_trim_core_discovery,
        notes=["trimmed like the recording (INDEX.md): core resources nodes, namespaces, pods"],
    )
    await case(
        "01-get-api-v1",
        trim=_trim_api_v1,
        extra_check=_names_check(
            "all_resource_names_in_order", lambda b: [x["name"] for x in b["resources"]], "01-get-api-v1"
        ),
        notes=[
            "trimmed like the recording to nodes and namespaces; all resource names checked against the note"
        ],
    )
    await case(
        "01-get-apis",
        trim=_trim_apis,
        extra_check=_names_check(
            "all_group_names_in_order", lambda b: [g["name"] for g in b["groups"]], "01-get-apis"
        ),
        notes=[
            "trimmed to apps, coordination.k8s.io, ref.example.dev; group names checked against the note "
            "(minus check.example.dev / example.realk8s.io, CRDs of the recording cluster)"
        ],
    )
    await case(
        "01-get-apis-aggregated-discovery",
        trim=_trim_group_discovery,
        extra_check=_names_check(
            "all_group_names_in_order",
            lambda b: [i["metadata"]["name"] for i in b["items"]],
            "01-get-apis-aggregated-discovery",
        ),
        notes=["trimmed like the recording (its note); group names checked against the note"],
    )
    await case("01-get-apis-coordination-v1")
    await case("01-get-apis-ref-group")
    await case("01-get-apis-ref-v1")
    await case(
        "01-get-version",
        shape_only=VERSION_BUILD_FIELDS,
        # A known difference of identity, not of shape: the stand-in reports its own build.
        notes=["the stand-in's own build identity (gitVersion, gitCommit, buildDate, ...): compared by type"],
    )

    # -- 03..06: namespace, creates (resourceVersions 239-249 give the order), errors.
    await case("03-namespace-create")
    for name in (
        "03-gadget-create-defaulted",  # g1, rv 240
        "03-gadget-create-no-spec",  # 241
        "03-gadget-create-empty-spec",  # 242
        "03-gadget-create-size-null",  # 243
        "03-gadget-create-unknown-field-warn",  # 244
        "03-gadget-create-duplicate-field-warn",  # 245
        "03-gadget-create-fieldmanager",  # 246
        "03-gadget-create-dryrun",
        "03-gadget-get-after-dryrun",
        "03-gadget-create-bad-name",
        "03-gadget-create-kind-mismatch",
        "03-gadget-create-no-kind",
        "03-gadget-create-no-name",
        "03-gadget-create-ns-mismatch",
        "03-gadget-create-unknown-field-strict",
        "03-gadget-get",
        "04-gadget-create-generatename",  # 248
        "04-gadget-create-generatename-and-name",  # 249
        "05-gadget-create-duplicate",
        "06-core-configmap-get-missing",
        "06-gadget-create-missing-namespace",
        "06-gadget-delete-missing-namespace",
        "06-gadget-get-missing",
        "06-gadget-get-missing-namespace",
        "06-gadget-list-missing-namespace",
        "07-gadget-put-create-on-update",
        "07-gadget-put-missing-with-rv",
    ):
        await case(name)

    # -- 07: by now g1 carries label bump=1 at rv 251 (the PUT bodies of 07-* show it, managedFields
    # time 04:17:52, one reftool Update entry): an unrecorded update.
    await merge("g1", {"metadata": {"labels": {"bump": "1"}}}, rv="251")
    for name in (
        "07-gadget-put-invalid-rv",
        "07-gadget-put-name-mismatch",
        "07-gadget-put-no-rv",
        "07-gadget-put-stale-rv",  # sends rv 240, current 251
        "07-gadget-put-noop",
        # 08: validation.
        "08-gadget-create-invalid-all",
        "08-gadget-create-metadata-invalid-labels",
        "08-gadget-create-missing-size-no-default-path",  # nosize, 253
        "08-gadget-create-replicas-2.0",
        "08-gadget-create-replicas-float",
        "08-gadget-create-spec-not-object",
        "08-gadget-create-wrong-types",
        # 09: merge (255), json-patch (256, needed before the failing test op), no-op, errors,
        # apply conflict then force (257), apply-create (258).
        "09-gadget-patch-merge-spec",
        "09-gadget-patch-json-patch",
        "09-gadget-patch-merge-noop",
        "09-gadget-patch-json-patch-test-fail",
        "09-gadget-patch-json-patch-bad-path",
        "09-gadget-patch-json-patch-remove-missing",
        "09-gadget-patch-json-patch-invalid-json",
        "09-gadget-patch-merge-invalid-json",
        "09-gadget-patch-merge-invalid-value",
        "09-gadget-patch-merge-missing",
        "09-gadget-patch-merge-rv-precondition-stale",
        "09-gadget-patch-content-type-json",
        "09-gadget-patch-no-content-type",
        "09-gadget-patch-strategic-415",
        "09-gadget-patch-apply-no-fieldmanager",
        "09-gadget-patch-apply-yaml",
        "09-gadget-patch-apply-yaml-force",
        "09-gadget-patch-apply-create",
        # 10: status (rv 257 -> 261 -> 262 -> 263 -> 264).
        "10-gadget-put-main-with-status",
        "10-gadget-put-status",
        "10-gadget-put-status-changing-spec-and-labels",
        "10-gadget-get-after-status-put",
        "10-gadget-put-labels-only",
        "10-gadget-patch-status-merge",
        "10-gadget-patch-status-merge-spec",
        "10-gadget-get-status",
        "10-gadget-put-status-invalid",
        "10-gadget-get-bad-subresource",
        "10-gadget-get-status-missing",
        # 11: scale (264 -> 267 -> 268 -> 269).
        "11-gadget-get-scale",
        "11-gadget-put-scale",
        "11-gadget-put-scale-stale-rv",
        "11-gadget-patch-scale-merge",
        "11-gadget-get-after-scale",
        "11-gadget-patch-scale-zero",
        "11-gadget-patch-scale-negative",
        "11-gadget-put-scale-no-rv",
        "11-gadget-get-scale-missing",
        "11-gadget-get-scale-nospec",
    ):
        await case(name)
    # From 13-* on, g1 is at rv 270, generation 8, spec.replicas 5, the scale managedFields entry
    # owning spec.replicas: one more (unrecorded) scale write after 11-gadget-put-scale-no-rv (2).
    await merge("g1", {"spec": {"replicas": 5}}, sub="scale", rv="270")

    # -- 12: deletion. Objects from the recorded answers (all created 04:18:50).
    await create("g-fin", metadata={"finalizers": ["ref.example.dev/hold"]})
    for name in (
        "12-delete-with-finalizer",
        "12-delete-again-while-terminating",
        "12-get-after-delete-with-finalizer",
        "12-add-finalizer-while-terminating",
        "12-update-spec-while-terminating",
        "12-remove-finalizer",
        "12-get-after-finalizer-removed",
    ):
        await case(name)
    await create("g-del")
    await case("12-delete-no-finalizer")
    await case("12-delete-missing")
    await create("g-del2", rv="278")  # 12-delete-precondition-rv-mismatch: "in record (278)"
    for name in (
        "12-delete-dryrun",
        "12-delete-precondition-rv-mismatch",
        "12-delete-precondition-uid-mismatch",
        "12-delete-bad-propagation",
        "12-delete-gracePeriod",
    ):
        await case(name)
    await create("g-fg")
    await case("12-delete-foreground")
    await create("g-orph")
    await case("12-delete-orphan")
    # No garbage collector: the recorder removed these finalizers by hand (INDEX.md, "Not recorded").
    await merge("g-fg", {"metadata": {"finalizers": None}})
    await merge("g-orph", {"metadata": {"finalizers": None}})
    await create("dc1", labels={"dc": "yes"}, rv="286")
    await create("dc2", labels={"dc": "yes"}, rv="287")
    await case("12-deletecollection")

    # -- 13: the lists show only g1 and l1..l4 (rv 302-305, 04:19:17): the recorder deleted the rest.
    for name in (
        "g-nospec", "g-emptyspec", "g-sizenull", "g-unknown", "g-dupfield", "g-fm",
        "gen-qk99v", "explicit", "nosize", "g-applied",
    ):  # fmt: skip
        await delete(name)
    await create("l1", labels={"a": "x", "tier": "one"}, rv="302")
    await create("l2", labels={"a": "y"}, rv="303")
    await create("l3", labels={"a": "z"}, rv="304")
    await create("l4", labels={"other": "1"}, rv="305")
    for name in (
        "13-list-all",
        "13-list-all-namespaces",
        "13-list-field-name",
        "13-list-field-name-neq",
        "13-list-field-namespace",
        "13-list-field-in-op",
        "13-list-field-invalid-syntax",
        "13-list-field-unsupported",
        "13-list-label-eq",
        "13-list-label-double-eq",
        "13-list-label-exists",
        "13-list-label-in",
        "13-list-label-neq",
        "13-list-label-not-exists",
        "13-list-label-notin",
        "13-list-label-multi",
        "13-list-label-invalid",
        "13-list-label-invalid2",
        "13-list-label-invalid-value",
        "13-list-limit-0",
        "13-list-limit-1",  # its continue token is the one the next three send
        "13-list-limit-1-continue",
        "13-list-limit-last-page",
        "13-list-limit-continue-rv-conflict",
        "13-list-label-limit",
        "13-list-bad-limit",
        "13-list-continue-invalid",
        "13-list-rv-exact-old",
        "13-list-rv-notolderthan-future",
        "13-list-rv0",
        "13-list-rvmatch-without-rv",
        "13-list-yaml",
        "13-list-partial-metadata",
        "13-list-as-table",
        "13-list-as-table-includeObject",
        "13-get-accept-wildcard",
        "13-get-as-table",
        "13-get-protobuf-only",
    ):
        await case(name)
    await r.setup(
        "create configmap cm1 (13-core-list-configmaps shows it: data k=v, rv 309)",
        "POST",
        "/api/v1/namespaces/ref/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}, "data": {"k": "v"}},
        recorded_rv="309",
    )
    await case("13-core-list-configmaps")
    await case("13-core-list-configmaps-limit")

    # -- 14: watches. bm1 (label bm=yes) appears at rv 313 = the list rv the watches start from.
    await create("bm1", labels={"bm": "yes"}, rv="313")
    await open_watch("14-watch-bookmarks-timeout10")  # ran alongside 14-watch-from-list-rv (bookmark rv 320)
    await open_watch("14-watch-from-list-rv")
    # The note's actions; bodies as the event objects show them (w1 label w=1; w2 size large + finalizer).
    await create("w1", labels={"w": "1"}, rv="314")
    await merge("w1", {"spec": {"replicas": 2}}, rv="315")
    await merge("w1", {"status": {"replicas": 2}}, sub="status", rv="316")
    await delete("w1")
    await create("w2", rv="318", spec={"size": "large"}, metadata={"finalizers": ["ref.example.dev/hold"]})
    await delete("w2")
    await merge("w2", {"metadata": {"finalizers": None}})
    await r.close_watch("14-watch-from-list-rv")
    # No gadget writes until the 10 s watch has ended: its BOOKMARK must still say rv 320.
    await watch("14-watch-rv0-initial-state")
    for name in (
        "14-watch-no-rv-initial-state",
        "14-watch-no-rv-bookmarks-defaulted-to-watchlist",
        "14-watch-sendInitialEvents",
        "14-watch-sendInitialEvents-rv0",
        "14-watch-sendInitialEvents-selector",
        "14-watch-sendInitialEvents-no-bookmarks",
        "14-watch-invalid-rv",
        "14-watch-rv-too-old",
    ):
        await watch(name, pattern_only=("events[0].object.message",) if name == "14-watch-rv-too-old" else ())
    r.result_for("14-watch-rv-too-old").notes.append(
        "the '(N)' of 'too old resource version: 1 (N)' is the oldest version the watch cache holds: "
        "its format is checked, not its value"
    )
    await watch("14-watch-rv-too-large", grace=1.0)
    r.result_for("14-watch-rv-too-large").notes.append(
        "held open 1 s (recorded: 15 s) with no event expected"
    )
    for name in ("14-watch-legacy-path-named", "14-watch-all-namespaces"):
        await watch(name)
    for name in (
        "14-get-named-with-watch-param",
        "14-list-sendInitialEvents-not-watch",
        "14-watch-sendInitialEvents-no-rvmatch",
    ):
        await case(name)
    await r.close_watch("14-watch-bookmarks-timeout10", deadline=15.0)
    await r.current_rv("324", G)  # the list rv both 324-watches start from
    await watch("14-watch-timeoutSeconds-3")
    await open_watch("14-watch-label-selector-transitions")
    await create("w3", labels={"sel": "out"})
    await merge("w3", {"metadata": {"labels": {"sel": "in"}}}, rv="326")
    await merge("w3", {"spec": {"replicas": 3}}, rv="327")
    await merge("w3", {"metadata": {"labels": {"sel": "out"}}}, rv="328")
    await delete("w3")
    await r.close_watch("14-watch-label-selector-transitions")
    await r.current_rv("329", G)
    await open_watch("14-watch-field-selector-name")
    await create("w4", rv="331")
    await delete("w4")
    await r.close_watch("14-watch-field-selector-name")

    # -- 15 (and 17) ran while the two 75 s bookmark watches (from rv 342) were open: their events
    # are 15-*'s creations and the recorder's deletions right after each (rv 345-354).
    await r.current_rv("342", G)
    await open_watch("14-watch-bookmarks-long")
    await open_watch("14-watch-bookmarks-long-noselector")
    for name in (
        "15-token-list-gadgets",  # list rv 344: before noct
        "15-token-selfsubjectreview",
        "15-cert-selfsubjectreview",
        "15-noauth-api",
        "15-noauth-healthz",
        "15-noauth-list-gadgets",
        "15-noauth-selfsubjectreview",
        "15-noauth-version",
        "15-badtoken-list-gadgets",
        "15-badtoken-version",
    ):
        await case(name, shape_only=VERSION_BUILD_FIELDS if name == "15-noauth-version" else ())
    await case("15-post-no-content-type")  # noct 345
    await delete("noct")
    await case("15-post-yaml")  # fromyaml 347
    await delete("fromyaml")
    for name in (
        "15-post-cbor",
        "15-post-empty-body",
        "15-post-json-array",
        "15-post-not-json",
        "15-post-protobuf",
        "15-post-text-plain",
        "15-post-truncated-json",
        "15-post-to-named-url-existing",
        "15-post-to-named-url-new",  # pnamed 351
        "15-post-to-named-url-mismatch",  # bodyname 352
    ):
        await case(name)
    await delete("pnamed")
    await delete("bodyname")
    for name in (
        "15-put-collection",
        "15-put-text-plain",
        "15-put-yaml",
        "15-core-post-to-named-url",
        "15-core-put-collection",
        "15-delete-collection-core-namespaces",
        "15-get-status-on-core-without-status",
        "15-namespaced-resource-without-namespace-named",
        "15-random-path",
        "15-unknown-core-resource",
        "15-unknown-group",
        "15-unknown-group-root",
        "15-unknown-resource",
        "15-unknown-resource-named",
        "15-unknown-version",
        "15-unknown-version-resource",
    ):
        await case(name)

    # -- 17: leases (rv 356-368; ref-lock's versions order them).
    for name in (
        "17-lease-create",  # 356
        "17-lease-put-microtime-1-fraction-digit-400",
        "17-lease-put-microtime-6-digits-ok",  # 357
        "17-lease-merge-patch-microtime-no-fraction-422",  # shows the 357 state
        "17-lease-strategic-patch",  # 358
        "17-lease-get",
        "17-lease-merge-patch-invalid-time-422",  # shows the 358 state
        "17-lease-in-kube-node-lease-create",  # 359
        "17-lease-list-kube-system",
        "17-lease-unknown-field",  # ref-lock2, 361
        "17-lease-unknown-field-strict",
        "17-lease-delete",
        "17-lease-create-microtime-3digits",
        "17-lease-update-holder",  # sends 358 -> 365
        "17-lease-update-stale",  # sends 358 again
        "17-lease-patch-renew-offset",  # 366
        "17-lease-patch-renew-9digits",  # shows the 366 state
        "17-lease-patch-renew-ok",  # 367
        "17-lease-patch-clear-holder",  # 368
        "17-lease-invalid-duration",
    ):
        await case(
            name,
            extra_check=_seen_before(TRANSCRIPTS[name]) if name in PATCHED_DOCUMENT_CASES else None,
            shape_only=("body.items[0]",) if name == "17-lease-list-kube-system" else (),
            notes=[
                "the kube-apiserver identity lease is the apiserver's own (name, holder, hostname, times): "
                "compared by shape"
            ]
            if name == "17-lease-list-kube-system"
            else [],
        )
    # The recorder closed the 75 s watches at ~04:23:39, after the leases and before the events.
    await r.close_watch("14-watch-bookmarks-long", fresh_bookmark=True)
    await r.close_watch("14-watch-bookmarks-long-noselector", fresh_bookmark=True)

    # -- 18: events (rv 370-373).
    for name in (
        "18-events-v1-create",  # g1.ev1, 370
        "18-core-event-create",  # g1.core1, 371
        "18-core-event-create-minimal",  # min.core, 372
        "18-core-event-create-ns-mismatch",
        "18-core-event-no-involved",
        "18-events-v1-create-minimal-invalid",
        "18-core-event-get-via-events-v1",
        "18-events-v1-get-via-core",
        "18-core-events-list-fieldselector",
        "18-events-list-v1",
        "18-events-v1-fieldselector-regarding",
        "18-events-v1-series-update",  # 373
        "18-events-v1-update-immutable",
    ):
        await case(name)

    # -- 16: webhooks (rv 378-395).
    for name in (
        "16-webhookconfig-invalid",
        "16-mutatingwebhookconfiguration-create",  # 378
        "16-validatingwebhookconfiguration-create",  # 379
        "16-wh-create-allowed-mutated",  # wh1, 381
        "16-wh-create-warning",  # wh9, 382
        "16-wh-create-denied-even",
        "16-wh-create-denied-code403",
        "16-wh-update-merge-patch",  # 383
        "16-wh-update-put",  # 384
        "16-wh-update-put-denied",
        "16-wh-scale-put",  # 385
        "16-wh-scale-patch-denied",
        "16-wh-create-generatename",  # 386
        "16-wh-create-dryrun",
        "16-wh-status-update-not-called",  # 387
        "16-wh-create-with-fieldmanager",  # whfm, 388
    ):
        await case(name)
    await case(
        "16-wh-create-slow-timeout",
        webhook_delays={"/validate": 3.0},
        notes=["the webhook answers /validate after 3 s (recorded: 4 s), past timeoutSeconds 2"],
    )
    await r.servers.webhook.drained(10.0)
    # "Webhook down": the recorder stopped its webhook server; ours now refuses connections.
    await r.servers.webhook.stop()
    await case("16-wh-down-create-both")
    await case("16-wh-down-delete-mutating")
    for name in ("16-wh-down-create-validating", "16-wh-down-scale", "16-wh-down-delete-not-affected"):
        await case(name)
    # 16-wh-down-failurepolicy-ignore: "failurePolicy Ignore" -- the recorder switched the
    # remaining (validating) webhook to Ignore first.
    await r.setup(
        "set failurePolicy Ignore on validate.ref.example.dev",
        "PATCH",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/validate.ref.example.dev",
        [{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}],
        content_type="application/json-patch+json",
    )
    await case("16-wh-down-failurepolicy-ignore")  # whdown3, 395
    await delete("whdown3")  # absent from every later list
    await case("16-wh-delete-validating")

    # -- 19: a namespace to terminate (created 04:25:16, rv ~400).
    await r.setup(
        "create namespace ref-term",
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ref-term"}},
    )
    for name in (
        "19-namespace-create-invalid-name",
        "19-namespace-delete",
        "19-namespace-get-terminating",
        "19-create-in-terminating-namespace",
        "19-namespace-finalize",
        "19-namespace-get-after-finalize",
    ):
        await case(name)

    # -- 20: watch-list as a 1.32 server with a modern etcd answers it (same server, no restart).
    for name in (
        "20-watch-right-after-restart-429",
        "20-watch-no-rv-no-bookmarks",
        "20-watch-no-rv-bookmarks-defaulted",
        "20-watchlist-sendInitialEvents-rv0",
        "20-watchlist-sendInitialEvents-selector",
    ):
        await watch(name)
    await case("20-list-sendInitialEvents-rejected")
    await open_watch("20-watch-sendInitialEvents-false")
    await create("wl-new", labels={"a": "x"}, rv="413")
    await delete("wl-new")
    await r.close_watch("20-watch-sendInitialEvents-false")
    await watch("20-watch-rv0-bookmarks")
    await watch("20-watchlist-sendInitialEvents-explicit-rv")
    await open_watch("20-watchlist-sendInitialEvents")
    await r.wait_events("20-watchlist-sendInitialEvents", 10)  # initial events first, then the live ones
    await create("wl-new", labels={"a": "x"}, rv="417")
    await delete("wl-new")
    await r.close_watch("20-watchlist-sendInitialEvents")

    # -- 21: the second server, --anonymous-auth=false.
    for name in (
        "21-badtoken-anon-disabled",
        "21-noauth-anon-disabled-api",
        "21-noauth-anon-disabled-healthz",
        "21-noauth-anon-disabled-list",
        "21-noauth-anon-disabled-post",
        "21-noauth-anon-disabled-version",
    ):
        await case(name)

    # -- 22: extras (rv 423-428).
    for name in (
        "22-crd-create-name-mismatch",
        "22-crd-create-nonstructural",
        "22-create-with-resourceversion",
        "22-create-with-uid-and-timestamp",  # c-uid, 423
    ):
        await case(name)
    await delete("c-uid")  # absent from the 22-* watch tables
    for name in (
        "22-put-changing-creationtimestamp-generation",  # l1 stays at 302
        "22-put-changing-uid",
        "22-patch-port-bool",
        "22-patch-port-string",  # 426
        "22-openapi-v3-root",
        "22-openapi-v3-ref-group",
    ):
        await case(
            name,
            trim=_trim_openapi_root if name == "22-openapi-v3-root" else None,
            extra_check=_names_check("all_paths", lambda b: sorted(b["paths"]), "22-openapi-v3-root")
            if name == "22-openapi-v3-root"
            else None,
            notes=[
                "trimmed like the recording to api/v1, coordination.k8s.io/v1, ref.example.dev/v1; all "
                "paths checked against the note"
            ]
            if name == "22-openapi-v3-root"
            else [],
        )
    # Both watches start at 426; the events show l2 patched to replicas 4 (427) and whfm deleted (428).
    await open_watch("22-watch-as-table")
    await open_watch("22-watch-as-partialobjectmetadata")
    await merge("l2", {"spec": {"replicas": 4}}, rv="427")
    await delete("whfm")
    await r.close_watch("22-watch-as-partialobjectmetadata")
    await r.close_watch("22-watch-as-table")


async def wait_established(r: Replayer, deadline: float = 5.0) -> None:
    """The recorder polled the CRD until Established (note of 02-crd-get-established)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while loop.time() < end:
        crd = await r.raw_request("GET", CRD, expect=(200,), describe=None)
        conditions = ((crd or {}).get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            return
        await asyncio.sleep(0.02)  # the poll interval of a client waiting for Established


# ----------------------------------------------------------------------------------- running it


async def replay_session() -> tuple[dict[str, CaseResult], list[JSON]]:
    from apiserver.server import EmbeddedAPIServer, EmbeddedServerOptions

    main = EmbeddedAPIServer(EmbeddedServerOptions(bookmark_interval=BOOKMARK_INTERVAL))
    secondary = EmbeddedAPIServer(EmbeddedServerOptions(anonymous_auth=False))
    webhook = ReplayWebhook()
    await main.start()
    await secondary.start()
    await webhook.start()
    cert = main.ca.client_cert("admin", ["system:masters"])
    add_token = main.add_token
    if "uid" in inspect.signature(add_token).parameters:
        add_token(STATIC_TOKEN, "admin-token", ["system:masters"], uid="admin-token-uid")  # type: ignore[call-arg]
    else:
        add_token(STATIC_TOKEN, "admin-token", ["system:masters"])
    main_client = HttpClient(main.url, main.ca_pem, (cert.cert_pem, cert.key_pem))
    secondary_client = HttpClient(secondary.url, secondary.ca_pem, None)
    servers = Servers(main_client, main.url.removeprefix("https://"), webhook, STATIC_TOKEN, secondary_client)
    replayer = Replayer(TRANSCRIPTS, servers)
    learn_environment(replayer, webhook, servers.main_address, cert.cert_pem)
    try:
        await run_plan(replayer)
    finally:
        await main_client.close()
        await secondary_client.close()
        await webhook.stop()
        webhook.close()
        await secondary.stop()
        await main.stop()
    if replayer.setup_problems:
        for result in replayer.results.values():
            if result.differences:
                result.notes.append(f"{len(replayer.setup_problems)} set-up step(s) failed in this run")
    return replayer.results, replayer.trace


def learn_environment(r: Replayer, webhook: ReplayWebhook, main_address: str, cert_pem: bytes) -> None:
    """Values of the recording environment that stand for facts of ours from the start."""
    r.values.environment = [
        ("https://127.0.0.1:9443", webhook.url),
        ("127.0.0.1:9443", f"127.0.0.1:{webhook.port}"),
        ("127.0.0.1:6443", main_address),
    ]
    for name in ("16-mutatingwebhookconfiguration-create", "16-validatingwebhookconfiguration-create"):
        recorded = TRANSCRIPTS[name].request["body"]["webhooks"][0]["clientConfig"]["caBundle"]
        r.values.learn("caBundle", recorded, webhook.ca_bundle)
    extra = TRANSCRIPTS["15-cert-selfsubjectreview"].response["body"]["status"]["userInfo"]["extra"]
    recorded_id = extra["authentication.kubernetes.io/credential-id"][0].removeprefix("X509SHA256=")
    r.values.learn("sha256", recorded_id, certificate_sha256(cert_pem))


@pytest.fixture(scope="module")
def replay() -> dict[str, CaseResult]:
    """The whole recorded session, replayed once (in its own thread and event loop) for all tests."""
    try:
        import apiserver.server  # noqa: F401
    except ImportError as exc:
        pytest.fail(f"the embedded API server does not import: {exc!r}")
    with ThreadPoolExecutor(max_workers=1) as pool:
        results, trace = pool.submit(asyncio.run, replay_session()).result()
    # Optional artefacts for whoever fixes the server: every difference, and what went over the wire.
    report_path = os.environ.get("CPO_TRANSCRIPT_REPORT")
    if report_path:
        lines = [res.report() for name, res in sorted(results.items()) if res.differences]
        Path(report_path).write_text("\n\n".join(lines) + "\n")
    trace_path = os.environ.get("CPO_TRANSCRIPT_TRACE")
    if trace_path:
        Path(trace_path).write_text("\n".join(json.dumps(entry) for entry in trace) + "\n")
    return results


# Cases where the embedded server knowingly differs from the recording, each with the reason.
# The test still runs and compares them: a listed case that starts matching FAILS, so the list
# can only shrink. Nothing here loosens a comparison.
KNOWN_DIFFERENCES: dict[str, str] = {
    "01-get-api-v1": "core/v1 resources no controller here uses (endpoints, PVs, ...) are not served",
    "01-get-apis": "built-in groups no controller here uses (apps, batch, rbac, storage...) are not served",
    "01-get-apis-aggregated-discovery": "built-in groups no controller here uses are not served",
    "22-openapi-v3-root": "the root lists only the groups served (see 01-get-apis)",
    "22-openapi-v3-ref-group": "OpenAPI descriptions are our own wording: upstream prose is not copied",
}


@pytest.mark.parametrize("name", list(TRANSCRIPTS), ids=list(TRANSCRIPTS))
def test_reference_transcript(name: str, replay: dict[str, CaseResult]) -> None:
    result = replay.get(name)
    if result is None:
        pytest.fail(
            f"{name} is not part of the replay plan (run_plan) -- add it in recorded order", pytrace=False
        )
    known = KNOWN_DIFFERENCES.get(name)
    if known is not None:
        if not result.differences:
            pytest.fail(f"{name} now matches the recording: remove it from KNOWN_DIFFERENCES", pytrace=False)
        pytest.xfail(f"known difference: {known}\n{result.report()}")
    if result.differences:
        pytest.fail(result.report(), pytrace=False)


@pytest.mark.parametrize("name", PATCHED_DOCUMENT_CASES)
def test_patched_document_expectation_masks_only_the_quoted_rv(name: str) -> None:
    """The derived expectation changes nothing but the quoted resourceVersion, which must then be
    the live one the recorded value stood for (and nothing else)."""
    case = TRANSCRIPTS[name]
    derived = expected(name).response_normalized["body"]
    original = case.response_normalized["body"]
    recorded = quoted_rv(case)
    for got, was in (
        (derived, original),
        (derived["details"]["causes"][0], original["details"]["causes"][0]),
    ):
        assert got["message"] == was["message"].replace(
            f'\\"resourceVersion\\":\\"{recorded}\\"', '\\"resourceVersion\\":\\"<rv>\\"'
        )
    values = LiveValues()
    values.learn("rv", recorded, "42")
    raw = case.response["body"]
    right = Comparator(values, datetime.now(UTC))
    right.compare(
        raw["message"], derived["message"], raw["message"].replace(f'\\"{recorded}\\"', '\\"42\\"'), "m"
    )
    assert right.differences == []
    wrong = Comparator(values, datetime.now(UTC))
    wrong.compare(
        raw["message"], derived["message"], raw["message"].replace(f'\\"{recorded}\\"', '\\"43\\"'), "m"
    )
    assert len(wrong.differences) == 1


def test_progress_bookmarks_are_recognised() -> None:
    """The watch comparison hinges on telling periodic BOOKMARKs from the watch-list end marker."""
    periodic = TRANSCRIPTS["14-watch-bookmarks-long"].response["events"][0]
    end_marker = TRANSCRIPTS["20-watchlist-sendInitialEvents"].response["events"][9]
    assert is_progress_bookmark(periodic)
    assert not is_progress_bookmark(end_marker)
    assert end_marker["type"] == "BOOKMARK"


# ------------------------------------------------------------- the comparison itself (no server)


def _comparator() -> Comparator:
    return Comparator(LiveValues(), datetime.now(UTC))


def test_key_order_and_missing_keys_are_differences() -> None:
    cmp = _comparator()
    cmp.compare({"a": 1, "b": 2}, {"a": 1, "b": 2}, {"b": 2, "a": 1}, "body")
    cmp.compare({"a": 1, "b": 2}, {"a": 1, "b": 2}, {"a": 1}, "other")
    assert [d.why for d in cmp.differences] == ["key order differs", "missing ['b'], unexpected []"]


def test_scalar_types_are_strict() -> None:
    cmp = _comparator()
    cmp.compare({"n": 2}, {"n": 2}, {"n": 2.0}, "body")
    cmp.compare({"b": True}, {"b": True}, {"b": 1}, "body")
    assert len(cmp.differences) == 2


def test_resource_versions_map_to_live_values_and_must_stay_consistent() -> None:
    values = LiveValues()
    first = Comparator(values, datetime.now(UTC))
    first.compare({"resourceVersion": "251"}, {"resourceVersion": "<rv>"}, {"resourceVersion": "17"}, "body")
    assert not first.differences
    assert values.substitute(
        {"metadata": {"resourceVersion": "251"}}, {"metadata": {"resourceVersion": "<rv>"}}
    ) == {"metadata": {"resourceVersion": "17"}}
    again = Comparator(values, datetime.now(UTC))
    again.compare({"resourceVersion": "251"}, {"resourceVersion": "<rv>"}, {"resourceVersion": "18"}, "body")
    assert len(again.differences) == 1
    assert "stood for live '17'" in again.differences[0].why


def test_placeholders_inside_messages_are_checked_piecewise() -> None:
    values = LiveValues()
    values.learn("uid", "4c9d86d2-47ee-483a-a7f8-a30d6902ea12", "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee")
    recorded = "the UID in record (4c9d86d2-47ee-483a-a7f8-a30d6902ea12). The object might have been deleted"
    normalized = "the UID in record (<uid>). The object might have been deleted"
    ok = Comparator(values, datetime.now(UTC))
    ok.compare(
        recorded,
        normalized,
        recorded.replace("4c9d86d2-47ee-483a-a7f8-a30d6902ea12", "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"),
        "m",
    )
    assert not ok.differences
    wrong = Comparator(values, datetime.now(UTC))
    wrong.compare(recorded, normalized, recorded.replace("deleted", "removed"), "m")
    assert wrong.differences


def test_server_times_must_be_now_and_client_times_unchanged() -> None:
    cmp = _comparator()
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    cmp.compare(
        {"creationTimestamp": "2026-11-22T04:17:36Z"},
        {"creationTimestamp": "<timestamp>"},
        {"creationTimestamp": now},
        "a",
    )
    assert not cmp.differences
    cmp.compare(
        {"creationTimestamp": "2026-11-22T04:17:36Z"},
        {"creationTimestamp": "<timestamp>"},
        {"creationTimestamp": "2000-01-01T00:00:00Z"},
        "b",
    )
    cmp.compare(
        {"renewTime": "2026-11-22T04:31:00.000000Z"}, {"renewTime": "<microtime>"}, {"renewTime": now}, "c"
    )
    assert [d.where for d in cmp.differences] == ["b.creationTimestamp", "c.renewTime"]


def _bookmark(rv: str) -> JSON:
    return {
        "type": "BOOKMARK",
        "object": {"apiVersion": "v", "kind": "K", "metadata": {"resourceVersion": rv}},
    }


def test_periodic_bookmarks_are_compared_independently_of_their_number() -> None:
    values = LiveValues()
    values.learn("rv", "354", "88")
    norm = [_bookmark("<rv>")]
    ok = Comparator(values, datetime.now(UTC))
    compare_events(ok, [_bookmark("354")], norm, [_bookmark("80"), _bookmark("88")], bookmarks_allowed=True)
    assert not ok.differences
    stale = Comparator(values, datetime.now(UTC))
    compare_events(
        stale, [_bookmark("354")], norm, [_bookmark("88"), _bookmark("80")], bookmarks_allowed=True
    )
    assert stale.differences
    none = Comparator(values, datetime.now(UTC))
    compare_events(none, [_bookmark("354")], norm, [], bookmarks_allowed=True)
    assert none.differences
    unasked = Comparator(values, datetime.now(UTC))
    compare_events(unasked, [], [], [_bookmark("88")], bookmarks_allowed=False)
    assert unasked.differences
