"""What a controller relies on from the API server, asserted over HTTP on whichever back end runs.

These tests talk to the server only through its REST API, so they pass unchanged on the embedded
server, on real kube_http-apiserver binaries (``KUBEBUILDER_ASSETS``) and on an existing cluster
(``CPO_TEST_KUBECONFIG``). The transcript replay suite checks exact wording against recordings;
this module checks the semantics one behaviour at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.support.crds import GROUP, PLURAL, VERSION, widget, widget_crd, widgets_path
from tests.support.kubehttp import KubeHTTP
from tests.support.measured import TimedEvents, bookmark_problems, bookmark_shape, measured, recorded_watch

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.usefixtures("widgets_installed")]


async def _create(kube_http: KubeHTTP, ns: str, name: str, **spec: Any) -> dict[str, Any]:
    reply = await kube_http.post(widgets_path(ns), widget(name, ns, **spec))
    assert reply.status == 201, reply.text
    return dict(reply.body)


# ------------------------------------------------------------------------------ discovery


async def test_discovery_lists_builtins_and_installed_crd(kube_http: KubeHTTP) -> None:
    core = await kube_http.get("/api/v1")
    names = {r["name"] for r in core.body["resources"]}
    assert {"namespaces", "nodes", "pods", "events", "secrets", "configmaps", "services"} <= names
    groups = await kube_http.get("/apis")
    group_names = {g["name"] for g in groups.body["groups"]}
    assert {"coordination.k8s.io", "policy", "events.k8s.io", "apiextensions.k8s.io", GROUP} <= group_names
    rl = await kube_http.get(f"/apis/{GROUP}/{VERSION}")
    by_name = {r["name"]: r for r in rl.body["resources"]}
    assert by_name[PLURAL]["kind"] == "Widget" and by_name[PLURAL]["namespaced"] is True
    assert by_name[PLURAL]["shortNames"] == ["wd"]
    assert (
        by_name[f"{PLURAL}/scale"]["kind"] == "Scale" and by_name[f"{PLURAL}/scale"]["group"] == "autoscaling"
    )
    assert f"{PLURAL}/status" in by_name
    version = await kube_http.get("/version")
    assert version.status == 200 and "gitVersion" in version.body


# ------------------------------------------------------------------------------- CRUD


async def test_create_fills_server_fields_and_generate_name(kube_http: KubeHTTP, namespace: str) -> None:
    body = widget("", namespace, size="large")
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "gen-"
    reply = await kube_http.post(widgets_path(namespace), body)
    assert reply.status == 201, reply.text
    meta = reply.body["metadata"]
    assert meta["name"].startswith("gen-") and len(meta["name"]) == len("gen-") + 5
    assert meta["uid"] and meta["creationTimestamp"] and meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0
    assert reply.body["spec"] == {"replicas": 1, "size": "large"}  # defaulted


async def test_resource_version_is_global_and_increasing(kube_http: KubeHTTP, namespace: str) -> None:
    a = await _create(kube_http, namespace, "rv-a", size="small")
    cm = await kube_http.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "rv-b"}, "data": {"k": "v"}},
    )
    b = await _create(kube_http, namespace, "rv-c", size="small")
    rvs = [
        int(a["metadata"]["resourceVersion"]),
        int(cm.body["metadata"]["resourceVersion"]),
        int(b["metadata"]["resourceVersion"]),
    ]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


async def test_generation_bumps_on_spec_changes_only(kube_http: KubeHTTP, namespace: str) -> None:
    await _create(kube_http, namespace, "gen", size="small")
    path = widgets_path(namespace, "gen")
    labels = await kube_http.patch(path, {"metadata": {"labels": {"x": "y"}}})
    assert labels.body["metadata"]["generation"] == 1
    spec = await kube_http.patch(path, {"spec": {"replicas": 3}})
    assert spec.body["metadata"]["generation"] == 2
    noop = await kube_http.patch(path, {"spec": {"replicas": 3}})
    assert noop.body["metadata"]["resourceVersion"] == spec.body["metadata"]["resourceVersion"]


async def test_stale_update_conflicts_and_duplicate_create_exists(
    kube_http: KubeHTTP, namespace: str
) -> None:
    first = await _create(kube_http, namespace, "occ", size="small")
    path = widgets_path(namespace, "occ")
    fresh = dict(first, spec={"size": "large", "replicas": 1})
    ok = await kube_http.put(path, fresh)
    assert ok.status == 200, ok.text
    stale = await kube_http.put(path, dict(first, spec={"size": "small", "replicas": 2}))
    assert stale.status == 409 and stale.body["reason"] == "Conflict"
    dup = await kube_http.post(widgets_path(namespace), widget("occ", namespace, size="small"))
    assert dup.status == 409 and dup.body["reason"] == "AlreadyExists"
    assert dup.body["details"] == {"name": "occ", "group": GROUP, "kind": PLURAL}


async def test_not_found_and_missing_namespace(kube_http: KubeHTTP, namespace: str) -> None:
    missing = await kube_http.get(widgets_path(namespace, "nope"))
    assert missing.status == 404 and missing.body["reason"] == "NotFound"
    assert missing.body["message"] == f'{PLURAL}.{GROUP} "nope" not found'
    no_ns = await kube_http.post(widgets_path("no-such-ns-xyz"), widget("w", "no-such-ns-xyz", size="small"))
    assert no_ns.status == 404 and no_ns.body["details"] == {"name": "no-such-ns-xyz", "kind": "namespaces"}


async def test_invalid_object_is_422_with_causes(kube_http: KubeHTTP, namespace: str) -> None:
    body = widget("bad", namespace, size="medium", replicas=12)
    body["spec"]["name"] = "ABC"
    reply = await kube_http.post(widgets_path(namespace), body)
    assert reply.status == 422 and reply.body["reason"] == "Invalid"
    fields = sorted(c["field"] for c in reply.body["details"]["causes"])
    assert fields == ["spec.name", "spec.replicas", "spec.size"]
    assert reply.body["message"].startswith('Widget.test.cpo.dev "bad" is invalid: [')


async def test_cluster_scoped_objects_have_no_namespace(kube_http: KubeHTTP) -> None:
    reply = await kube_http.post(
        "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-scope-test"}}
    )
    assert reply.status == 201, reply.text
    assert "namespace" not in reply.body["metadata"]
    got = await kube_http.get("/api/v1/nodes/node-scope-test")
    assert got.status == 200
    await kube_http.delete("/api/v1/nodes/node-scope-test")


# ------------------------------------------------------------------------------ PATCH


async def test_merge_and_json_patch_on_custom_resource(kube_http: KubeHTTP, namespace: str) -> None:
    await _create(kube_http, namespace, "p", size="small", extra={"a": 1, "b": 2})
    path = widgets_path(namespace, "p")
    merged = await kube_http.patch(path, {"spec": {"extra": {"a": None, "c": 3}}})
    assert merged.body["spec"]["extra"] == {"b": 2, "c": 3}
    jp = await kube_http.patch(
        path, [{"op": "replace", "path": "/spec/replicas", "value": 5}], patch_type="json"
    )
    assert jp.status == 200 and jp.body["spec"]["replicas"] == 5
    failed = await kube_http.patch(
        path, [{"op": "test", "path": "/spec/replicas", "value": 1}], patch_type="json"
    )
    assert failed.status == 422
    smp = await kube_http.patch(path, {"spec": {"replicas": 1}}, patch_type="strategic")
    assert smp.status == 415 and smp.body["reason"] == "UnsupportedMediaType"


async def test_strategic_merge_patch_on_builtin_merges_lists_by_key(
    kube_http: KubeHTTP, namespace: str
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "smp"},
        "spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]},
    }
    created = await kube_http.post(f"/api/v1/namespaces/{namespace}/pods", pod)
    assert created.status == 201, created.text
    patched = await kube_http.patch(
        f"/api/v1/namespaces/{namespace}/pods/smp",
        {"spec": {"containers": [{"name": "b", "image": "b:2"}]}},
        patch_type="strategic",
    )
    assert patched.status == 200, patched.text
    images = {c["name"]: c["image"] for c in patched.body["spec"]["containers"]}
    assert images == {"a": "a:1", "b": "b:2"}


async def test_patch_that_leaves_a_builtin_undecodable_is_422_on_the_patch(
    kube_http: KubeHTTP, namespace: str
) -> None:
    # A malformed time in a request body is a 400; the same time arriving through a patch is a
    # 422 whose one cause is the field "patch" quoting the patched document (merge, JSON patch).
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "bad-time"},
        "spec": {"holderIdentity": "a", "renewTime": "2026-11-22T04:30:00.000000Z"},
    }
    created = await kube_http.post(leases, lease)
    assert created.status == 201, created.text
    path = f"{leases}/bad-time"
    for patch_type, body in (
        ("merge", {"spec": {"renewTime": "yesterday"}}),
        ("json", [{"op": "replace", "path": "/spec/renewTime", "value": "yesterday"}]),
    ):
        reply = await kube_http.patch(path, body, patch_type=patch_type)
        assert reply.status == 422, (patch_type, reply.text)
        assert reply.body["reason"] == "Invalid"
        [cause] = reply.body["details"]["causes"]
        assert cause["field"] == "patch" and cause["reason"] == "FieldValueInvalid"
        assert '\\"renewTime\\":\\"yesterday\\"' in cause["message"]
        assert 'parsing time "yesterday"' in cause["message"]
    # A strategic merge patch quotes the patch (Go's %+v of the decoded map), not the result.
    strategic = await kube_http.patch(path, {"spec": {"renewTime": "yesterday"}}, patch_type="strategic")
    assert strategic.status == 422, strategic.text
    [cause] = strategic.body["details"]["causes"]
    assert cause["field"] == "patch"
    assert cause["message"].startswith('Invalid value: "map[spec:map[renewTime:yesterday]]": ')
    assert 'parsing time "yesterday"' in cause["message"]
    put = await kube_http.put(path, dict(created.body, spec={"renewTime": "yesterday"}))
    assert put.status == 400 and put.body["reason"] == "BadRequest", put.text
    unchanged = await kube_http.get(path)
    assert unchanged.body["metadata"]["resourceVersion"] == created.body["metadata"]["resourceVersion"]


# ----------------------------------------------------------------------- subresources


async def test_status_changes_only_through_status_subresource(kube_http: KubeHTTP, namespace: str) -> None:
    created = await _create(kube_http, namespace, "st", size="small")
    path = widgets_path(namespace, "st")
    ignored = await kube_http.put(path, dict(created, status={"phase": "Running"}))
    assert ignored.status == 200 and "status" not in ignored.body
    via_status = await kube_http.put(
        widgets_path(namespace, "st", "status"),
        dict(ignored.body, status={"phase": "Running"}, spec={"size": "large"}),
    )
    assert via_status.status == 200, via_status.text
    assert via_status.body["status"] == {"phase": "Running"}
    assert via_status.body["spec"]["size"] == "small"
    assert via_status.body["metadata"]["generation"] == 1


async def test_scale_subresource_reads_and_writes_replicas(kube_http: KubeHTTP, namespace: str) -> None:
    await _create(kube_http, namespace, "sc", size="small", replicas=3)
    scale_path = widgets_path(namespace, "sc", "scale")
    scale = await kube_http.get(scale_path)
    assert scale.body["kind"] == "Scale" and scale.body["apiVersion"] == "autoscaling/v1"
    assert scale.body["spec"] == {"replicas": 3}
    updated = await kube_http.patch(scale_path, {"spec": {"replicas": 5}})
    assert updated.status == 200 and updated.body["spec"]["replicas"] == 5
    obj = await kube_http.get(widgets_path(namespace, "sc"))
    assert obj.body["spec"]["replicas"] == 5 and obj.body["metadata"]["generation"] == 2


# ------------------------------------------------------------------------------ delete


async def test_delete_with_finalizer_marks_then_removes(kube_http: KubeHTTP, namespace: str) -> None:
    body = widget("fin", namespace, size="small")
    body["metadata"]["finalizers"] = ["test.cpo.dev/hold"]
    await kube_http.post(widgets_path(namespace), body)
    path = widgets_path(namespace, "fin")
    marked = await kube_http.delete(path)
    assert marked.status == 200 and marked.body["metadata"]["deletionTimestamp"]
    still = await kube_http.get(path)
    assert still.status == 200
    added = await kube_http.patch(path, {"metadata": {"finalizers": ["test.cpo.dev/hold", "another"]}})
    assert added.status == 422
    await kube_http.patch(path, {"metadata": {"finalizers": None}})
    gone = await kube_http.get(path)
    assert gone.status == 404


async def test_delete_preconditions_and_propagation_policy(kube_http: KubeHTTP, namespace: str) -> None:
    created = await _create(kube_http, namespace, "pre", size="small")
    path = widgets_path(namespace, "pre")
    wrong_uid = await kube_http.delete(
        path, {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": "nope"}}
    )
    assert wrong_uid.status == 409
    ok = await kube_http.delete(
        path,
        {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": "Background",
            "preconditions": {"uid": created["metadata"]["uid"]},
        },
    )
    assert ok.status == 200 and ok.body["status"] == "Success"


# -------------------------------------------------------------------------------- list


async def test_label_selectors_with_every_operator(kube_http: KubeHTTP, namespace: str) -> None:
    for name, labels in {"l1": {"tier": "a", "env": "x"}, "l2": {"tier": "b"}, "l3": {}}.items():
        body = widget(name, namespace, size="small")
        body["metadata"]["labels"] = labels
        await kube_http.post(widgets_path(namespace), body)

    async def names(selector: str) -> list[str]:
        reply = await kube_http.get(widgets_path(namespace), params={"labelSelector": selector})
        assert reply.status == 200, reply.text
        return [i["metadata"]["name"] for i in reply.body["items"]]

    assert await names("tier=a") == ["l1"]
    assert await names("tier==b") == ["l2"]
    assert await names("tier!=a") == ["l2", "l3"]
    assert await names("tier in (a,b)") == ["l1", "l2"]
    assert await names("tier notin (a)") == ["l2", "l3"]
    assert await names("env") == ["l1"]
    assert await names("!env") == ["l2", "l3"]
    assert await names("tier,env=x") == ["l1"]
    bad = await kube_http.get(widgets_path(namespace), params={"labelSelector": "tier in (a"})
    assert bad.status == 400


async def test_field_selectors_and_pagination(kube_http: KubeHTTP, namespace: str) -> None:
    for i in range(5):
        await _create(kube_http, namespace, f"pg{i}", size="small")
    by_name = await kube_http.get(widgets_path(namespace), params={"fieldSelector": "metadata.name=pg3"})
    assert [i["metadata"]["name"] for i in by_name.body["items"]] == ["pg3"]
    by_ns = await kube_http.get(
        widgets_path(None), params={"fieldSelector": f"metadata.namespace={namespace}"}
    )
    assert {i["metadata"]["name"] for i in by_ns.body["items"]} >= {f"pg{i}" for i in range(5)}
    unsupported = await kube_http.get(widgets_path(namespace), params={"fieldSelector": "spec.size=small"})
    assert unsupported.status == 400
    seen: list[str] = []
    params = {"limit": "2"}
    pages = 0
    while True:
        page = await kube_http.get(widgets_path(namespace), params=params)
        pages += 1
        seen += [i["metadata"]["name"] for i in page.body["items"]]
        token = page.body["metadata"].get("continue")
        if not token:
            break
        params = {"limit": "2", "continue": token}
    assert seen == [f"pg{i}" for i in range(5)] and pages == 3


# ------------------------------------------------------------------------------- watch


async def _collect(
    kube_http: KubeHTTP, path: str, params: dict[str, str], until: int, limit: float = 10.0
) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []

    async def run() -> None:
        async for ev in kube_http.watch(path, params):
            events.append(ev)
            if len(events) >= until:
                return

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(run(), limit)
    return events


async def test_watch_resumes_from_resource_version(kube_http: KubeHTTP, namespace: str) -> None:
    first = await _create(kube_http, namespace, "w1", size="small")
    rv = first["metadata"]["resourceVersion"]
    await kube_http.patch(widgets_path(namespace, "w1"), {"spec": {"replicas": 2}})
    await _create(kube_http, namespace, "w2", size="small")
    await kube_http.delete(widgets_path(namespace, "w1"))
    events = await _collect(kube_http, widgets_path(namespace), {"resourceVersion": rv}, until=3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "w1"),
        ("ADDED", "w2"),
        ("DELETED", "w1"),
    ]
    deleted_rv = int(events[2]["object"]["metadata"]["resourceVersion"])
    assert deleted_rv > int(events[1]["object"]["metadata"]["resourceVersion"])


async def test_watch_with_expired_resource_version_gets_410(kube_http: KubeHTTP, namespace: str) -> None:
    await _create(kube_http, namespace, "old", size="small")
    events = await _collect(kube_http, widgets_path(namespace), {"resourceVersion": "1"}, until=1)
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"


async def test_watch_from_a_list_version_works_for_a_resource_listed_before_any_write(
    env: Any, kube_http: KubeHTTP, namespace: str
) -> None:
    # A fresh type whose first request is the list: other writes between the list and the watch
    # must not make the list's version "too old" for the watch (an informer's list -> watch).
    crd = widget_crd()
    crd["metadata"]["name"] = f"gizmos.{GROUP}"
    crd["spec"]["names"] = {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"}
    await env.install_crds([crd])
    try:
        gizmos = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/gizmos"
        listed = await kube_http.get(gizmos)
        assert listed.status == 200, listed.text
        list_rv = listed.body["metadata"]["resourceVersion"]
        other = await kube_http.post(
            f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "bump"}}
        )
        assert other.status == 201, other.text
        gizmo = {**widget("g1", namespace, size="small"), "kind": "Gizmo"}
        created = await kube_http.post(gizmos, gizmo)
        assert created.status == 201, created.text
        events = await _collect(kube_http, gizmos, {"resourceVersion": list_rv}, until=1)
        assert [(e["type"], e["object"]["metadata"].get("name")) for e in events] == [("ADDED", "g1")]
    finally:
        await env.uninstall_crds([crd])


async def _timed_collect(
    kube_http: KubeHTTP, path: str, params: dict[str, str], *, opened: asyncio.Event | None = None
) -> tuple[list[tuple[float, dict[str, Any]]], float]:
    """Every event of a watch the server ends (at its timeoutSeconds) with the seconds after the
    request it arrived at, and how long the watch lasted."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    events: list[tuple[float, dict[str, Any]]] = []

    async def run() -> None:
        async for ev in kube_http.watch(path, params, opened=opened):
            events.append((loop.time() - started, ev))
            if len(events) >= 15:
                return

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(run(), 15)
    return events, loop.time() - started


def _bookmark_watch(resource_version: str, timeout: int) -> dict[str, str]:
    """Watch parameters that allow bookmarks and match no object (only a BOOKMARK can arrive)."""
    return {
        "resourceVersion": resource_version,
        "allowWatchBookmarks": "true",
        "timeoutSeconds": str(timeout),
        "labelSelector": "nothing-matches-this=1",
    }


async def _write_during_watch(
    kube_http: KubeHTTP, path: str, params: dict[str, str], write: Any, *, at: float = 0.0
) -> tuple[list[tuple[float, dict[str, Any]]], float, Any]:
    """Open the watch, make ``write()`` once the server has answered 200 (the watch is then
    established) and ``at`` seconds have passed since the request, and collect the watch until
    the server ends it."""
    loop = asyncio.get_running_loop()
    requested = loop.time()
    opened = asyncio.Event()
    watching = asyncio.create_task(_timed_collect(kube_http, path, params, opened=opened))
    opened_or_done = asyncio.create_task(opened.wait())
    await asyncio.wait({watching, opened_or_done}, return_when=asyncio.FIRST_COMPLETED)
    opened_or_done.cancel()
    assert opened.is_set(), "the watch ended before it opened"
    pause = requested + at - loop.time()
    if pause > 0:
        await asyncio.sleep(pause)  # allow-sleep: the write comes when the measurement made it
    written = await write()
    events, lasted = await watching
    return events, lasted, written


async def _replay_measured_watch(
    kube_http: KubeHTTP,
    namespace: str,
    case: dict[str, Any],
    *,
    collection: str | None = None,
    create: Callable[[str], Awaitable[dict[str, Any]]] | None = None,
) -> tuple[TimedEvents, float, int, str | None]:
    """Replay a measured watch case (tests/testdata/kube-apiserver/measured) in ``namespace``: its
    writes before the watch, the watch (its query, from the first write's resourceVersion), its
    writes during the watch at their times. Objects go to the case's collection, or are made by
    ``create(name)`` in ``collection``. Returns what :func:`~tests.support.measured.recorded_watch`
    returns for the case: events with arrival times, the stream's length, the timeout and the
    resourceVersion of the newest write made during the watch."""
    path = collection or case["request"]["path"].replace("/namespaces/x/", f"/namespaces/{namespace}/")

    async def make(write: dict[str, Any]) -> dict[str, Any]:
        if create is not None:
            return await create(write["request"]["body"]["metadata"]["name"])
        reply = await kube_http.post(path, write["request"]["body"])
        assert reply.status == 201, reply.text
        return dict(reply.body)

    writes = case.get("writes", [])
    before = [await make(w) for w in writes if w["at_seconds"] is None]
    during = [w for w in writes if w["at_seconds"] is not None]
    params = {k: v for k, v in case["request"]["query"].items() if k != "watch"}
    params["resourceVersion"] = before[0]["metadata"]["resourceVersion"]
    timeout = int(params["timeoutSeconds"])
    if not during:
        events, lasted = await _timed_collect(kube_http, path, params)
        return events, lasted, timeout, None
    assert len(during) == 1, "measured cases make one write during the watch"
    events, lasted, written = await _write_during_watch(
        kube_http, path, params, lambda: make(during[0]), at=during[0]["at_seconds"]
    )
    return events, lasted, timeout, written["metadata"]["resourceVersion"]


# Short watches and their BOOKMARKs, measured on kube-apiserver 1.32 (tests/support/measured.py
# states the rule, tests/testdata/kube-apiserver/measured holds the measured cases): nothing
# written since the watch began, or a timeout of 2 s or less, gives no BOOKMARK; a write gives one
# or two, the first 3.2-0.8 s before the timeout, carrying the newest resourceVersion of the type;
# the stream ends at the timeout. Each test also holds the measured answer to the rule it asserts.


async def test_watch_without_a_write_or_of_two_seconds_gets_no_bookmark_and_ends(
    kube_http: KubeHTTP, namespace: str
) -> None:
    nothing_written = measured("watch-no-write-timeout3")
    two_seconds = measured("watch-written-during-timeout2")
    for case in (nothing_written, two_seconds):
        assert bookmark_problems(*recorded_watch(case)) == [], case["case"]

    async def create_widget(name: str) -> dict[str, Any]:
        return await _create(kube_http, namespace, name, size="small")

    # Both at once, in one 3 s wait: the unwritten watch on Widgets, so that the ConfigMap the 2 s
    # watch's case writes is no write of its resource type.
    unwritten, short = await asyncio.gather(
        _replay_measured_watch(
            kube_http, namespace, nothing_written, collection=widgets_path(namespace), create=create_widget
        ),
        _replay_measured_watch(kube_http, namespace, two_seconds),
    )
    assert unwritten[0] == [] and short[0] == []
    assert bookmark_problems(*unwritten) == []
    assert bookmark_problems(*short) == []


async def test_watch_written_during_it_gets_one_or_two_bookmarks_about_two_seconds_before_the_timeout(
    kube_http: KubeHTTP, namespace: str
) -> None:
    case = measured("watch-written-during-timeout4")
    assert bookmark_problems(*recorded_watch(case)) == []

    async def create_widget(name: str) -> dict[str, Any]:
        return await _create(kube_http, namespace, name, size="small")

    # The measured case watched ConfigMaps; the watch cache is the same for a custom resource.
    events, lasted, timeout, newest = await _replay_measured_watch(
        kube_http, namespace, case, collection=widgets_path(namespace), create=create_widget
    )
    assert bookmark_problems(events, lasted, timeout, newest) == [], events
    # A custom resource's BOOKMARK is apiVersion, kind and the resourceVersion alone (recorded:
    # 14-watch-bookmarks-timeout10, a 10 s watch of Gadgets, its BOOKMARK at 8.2 s).
    for _, event in events:
        mark = event["object"]
        assert list(mark) == ["apiVersion", "kind", "metadata"] and mark["kind"] == "Widget"
        assert list(mark["metadata"]) == ["resourceVersion"]


async def test_bookmark_of_a_built_in_is_an_empty_typed_object(kube_http: KubeHTTP, namespace: str) -> None:
    # Measured on 1.32: {"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"4235",
    # "creationTimestamp":null}} -- Go encodes the empty ConfigMap's zero creation time as null.
    case = measured("watch-written-during-timeout3")
    assert bookmark_problems(*recorded_watch(case)) == []
    events, lasted, timeout, newest = await _replay_measured_watch(kube_http, namespace, case)
    assert bookmark_problems(events, lasted, timeout, newest) == [], events
    recorded_shape = bookmark_shape(case["response"]["events"][0])
    assert [bookmark_shape(event) for _, event in events] == [recorded_shape] * len(events)
    assert events[0][1]["object"]["metadata"] == {"resourceVersion": newest, "creationTimestamp": None}


async def test_write_before_the_watch_sends_no_bookmark(kube_http: KubeHTTP, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    first = await kube_http.post(
        path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nb-a"}}
    )
    second = await kube_http.post(
        path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nb-b"}}
    )
    assert first.status == second.status == 201
    # The watch replays the second write as an initial event its selector filters out; that
    # version is where the watch begins, so nothing is written after it (FACTS.md, fact 4).
    params = _bookmark_watch(first.body["metadata"]["resourceVersion"], 3)
    events, lasted = await _timed_collect(kube_http, path, params)
    assert events == []
    assert bookmark_problems(events, lasted, 3, None) == []


async def test_watch_label_selector_transitions(kube_http: KubeHTTP, namespace: str) -> None:
    created = await _create(kube_http, namespace, "tr", size="small")
    rv = created["metadata"]["resourceVersion"]
    path = widgets_path(namespace, "tr")
    await kube_http.patch(path, {"metadata": {"labels": {"sel": "in"}}})
    await kube_http.patch(path, {"spec": {"replicas": 2}})
    await kube_http.patch(path, {"metadata": {"labels": {"sel": "out"}}})
    events = await _collect(
        kube_http, widgets_path(namespace), {"resourceVersion": rv, "labelSelector": "sel=in"}, until=3
    )
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert events[2]["object"]["metadata"]["labels"] == {"sel": "in"}


# -------------------------------------------------------------------------------- CRDs


async def test_crd_is_served_quickly_and_validates(env: Any, kube_http: KubeHTTP, namespace: str) -> None:
    crd = widget_crd()
    crd["metadata"]["name"] = "gizmos.test.cpo.dev"
    crd["spec"]["names"] = {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"}
    loop = asyncio.get_running_loop()
    started = loop.time()
    created = await kube_http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert created.status == 201, created.text
    deadline = started + 5
    while loop.time() < deadline:
        reply = await kube_http.get(f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/gizmos")
        if reply.status == 200:
            break
        await asyncio.sleep(0.05)
    served_after = loop.time() - started
    assert reply.status == 200 and served_after < 1.0, (reply.status, served_after)
    bad = await kube_http.post(
        f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/gizmos",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Gizmo",
            "metadata": {"name": "g"},
            "spec": {"replicas": "x"},
        },
    )
    assert bad.status == 422
    await kube_http.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.test.cpo.dev")


async def test_unknown_fields_are_pruned_with_warning(kube_http: KubeHTTP, namespace: str) -> None:
    body = widget("unk", namespace, size="small")
    body["spec"]["bogus"] = 1
    reply = await kube_http.post(widgets_path(namespace), body)
    assert reply.status == 201
    assert "bogus" not in reply.body["spec"]
    assert any('unknown field \\"spec.bogus\\"' in w for w in reply.warnings())


async def test_a_mirror_pod_lives_as_kubelet_drives_it(kube_http: KubeHTTP, namespace: str) -> None:
    """kubelet's mirror Pod: created without a service account (ServiceAccount admission refuses
    one), its priority from system-node-critical (Priority admission), its status written through
    pods/status, deleted at once with grace period 0 and its uid as precondition."""
    pods = f"/api/v1/namespaces/{namespace}/pods"
    mirror = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "etcd-n0", "annotations": {"kubernetes.io/config.mirror": "ab12"}},
        "spec": {
            "nodeName": "n0",
            "containers": [{"name": "etcd", "image": "etcd:local"}],
            "priorityClassName": "system-node-critical",
            "hostNetwork": True,
            "serviceAccountName": "default",
        },
    }
    refused = await kube_http.post(pods, mirror)
    assert refused.status == 403, refused.text
    assert refused.body["reason"] == "Forbidden"
    assert refused.body["message"] == (
        'pods "etcd-n0" is forbidden: a mirror pod may not reference service accounts'
    )
    del mirror["spec"]["serviceAccountName"]
    created = await kube_http.post(pods, mirror)
    assert created.status == 201, created.text
    assert created.body["spec"]["priority"] == 2000001000
    assert created.body["status"]["phase"] == "Pending"

    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    written = await kube_http.patch(
        f"{pods}/etcd-n0/status", {"status": status, "spec": {"nodeName": "n1"}}, patch_type="merge"
    )
    assert written.status == 200, written.text
    assert written.body["status"]["phase"] == "Running"
    assert written.body["status"]["conditions"][0]["status"] == "True"
    assert written.body["spec"]["nodeName"] == "n0"  # /status changes no spec

    uid = created.body["metadata"]["uid"]
    wrong = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
    stale = await kube_http.delete(f"{pods}/etcd-n0", {**wrong, "preconditions": {"uid": "other"}})
    assert stale.status == 409, stale.text
    deleted = await kube_http.delete(f"{pods}/etcd-n0", {**wrong, "preconditions": {"uid": uid}})
    assert deleted.status == 200, deleted.text
    assert (await kube_http.get(f"{pods}/etcd-n0")).status == 404


async def test_a_pod_bound_to_a_node_waits_its_grace_period(kube_http: KubeHTTP, namespace: str) -> None:
    """kube's pod strategy: a DELETE of a Pod bound to a Node marks it (deletionTimestamp now + the
    grace period, deletionGracePeriodSeconds); a later DELETE may only shorten the period, and
    grace 0 removes it, as its kubelet does. An unbound Pod goes at once."""
    pods = f"/api/v1/namespaces/{namespace}/pods"

    def body(name: str, node: str | None) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "containers": [{"name": "c", "image": "c:1"}],
            "terminationGracePeriodSeconds": 30,
        }
        if node:
            spec["nodeName"] = node
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}

    assert (await kube_http.post(pods, body("unbound", None))).status == 201
    assert (await kube_http.delete(f"{pods}/unbound")).status == 200
    assert (await kube_http.get(f"{pods}/unbound")).status == 404

    assert (await kube_http.post(pods, body("bound", "n0"))).status == 201
    marked = await kube_http.delete(f"{pods}/bound")
    assert marked.status == 200, marked.text
    first = marked.body["metadata"]
    assert first["deletionGracePeriodSeconds"] == 30 and first["deletionTimestamp"]
    longer = await kube_http.delete(f"{pods}/bound", {"gracePeriodSeconds": 60})
    assert longer.body["metadata"]["deletionGracePeriodSeconds"] == 30
    shorter = await kube_http.delete(f"{pods}/bound", {"gracePeriodSeconds": 10})
    assert shorter.body["metadata"]["deletionGracePeriodSeconds"] == 10
    assert shorter.body["metadata"]["deletionTimestamp"] < first["deletionTimestamp"]
    status = await kube_http.patch(f"{pods}/bound/status", {"status": {"phase": "Running"}})
    assert status.status == 200, status.text  # still there while its grace period runs
    assert (await kube_http.delete(f"{pods}/bound", {"gracePeriodSeconds": 0})).status == 200
    assert (await kube_http.get(f"{pods}/bound")).status == 404
