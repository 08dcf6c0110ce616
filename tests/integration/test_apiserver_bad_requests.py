"""Bad requests get the right 4xx Status, never a 500 or a crash, and the server keeps serving."""

from __future__ import annotations

import pytest

from tests.support.crds import GROUP, VERSION, widget, widgets_path
from tests.support.kubehttp import KubeHTTP

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.usefixtures("widgets_installed")]


async def _still_serving(kube_http: KubeHTTP, namespace: str) -> None:
    reply = await kube_http.get(widgets_path(namespace))
    assert reply.status == 200, reply.text


async def test_unknown_resources_are_404(kube_http: KubeHTTP, namespace: str) -> None:
    for path in (
        f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/nothings",
        f"/apis/{GROUP}/v9/namespaces/{namespace}/widgets",
        "/apis/nope.example.dev/v1/things",
        f"/api/v1/namespaces/{namespace}/nothings",
        "/foo/bar",
    ):
        reply = await kube_http.get(path)
        assert reply.status == 404, (path, reply.status, reply.text)
    await _still_serving(kube_http, namespace)


async def test_malformed_json_is_400(kube_http: KubeHTTP, namespace: str) -> None:
    for raw in (
        b"{not json",
        b'{"apiVersion": "test.cpo.dev/v1", "kind": "Widget", "metadata": {"name": "x"',
        b"",
        b"[1,2]",
    ):
        reply = await kube_http.request(
            "POST", widgets_path(namespace), raw=raw, content_type="application/json"
        )
        assert reply.status == 400, (raw, reply.status, reply.text)
        assert reply.body["kind"] == "Status" and reply.body["reason"] == "BadRequest"
    await _still_serving(kube_http, namespace)


async def test_wrong_content_type_is_415(kube_http: KubeHTTP, namespace: str) -> None:
    reply = await kube_http.request("POST", widgets_path(namespace), raw=b"hello", content_type="text/plain")
    assert reply.status == 415 and reply.body["reason"] == "UnsupportedMediaType"
    patch = await kube_http.request(
        "PATCH", widgets_path(namespace, "whatever"), raw=b"{}", content_type="application/json"
    )
    assert patch.status == 415
    await _still_serving(kube_http, namespace)


async def test_too_large_object_is_413(kube_http: KubeHTTP, namespace: str) -> None:
    body = widget("huge", namespace, size="small")
    body["metadata"]["annotations"] = {"blob": "x" * (4 * 1024 * 1024)}
    reply = await kube_http.post(widgets_path(namespace), body)
    assert reply.status == 413, reply.text[:300]
    await _still_serving(kube_http, namespace)


async def test_invalid_query_parameters_are_400(kube_http: KubeHTTP, namespace: str) -> None:
    for params in (
        {"limit": "abc"},
        {"continue": "garbage", "limit": "1"},
        {"fieldSelector": "metadata.name"},
    ):
        reply = await kube_http.get(widgets_path(namespace), params=params)
        assert reply.status == 400, (params, reply.status, reply.text)
    await _still_serving(kube_http, namespace)
