"""Protobuf request bodies over HTTP, as client-go sends them: create, update, status, delete.

The bodies are built with the ``protobuf`` package (:mod:`tests.support.protobuf_messages`) and
sent with client-go's ``Accept: application/vnd.kubernetes.protobuf,application/json``.
kube_http-apiserver serves the first type it supports, so the answers for these built-ins are protobuf
(measured on 1.32 for ConfigMaps and Leases); each is read by its Content-Type. These are what
kube_http-apiserver does too, so the module runs on any back end.
"""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.protobuf import decode_envelope
from runtime.jsoncodec import JSON
from tests.support.kubehttp import KubeHTTP, Reply
from tests.support.measured import measured
from tests.support.protobuf_messages import K8S, envelope

pytestmark = pytest.mark.asyncio(loop_scope="session")

PROTOBUF = "application/vnd.kubernetes.protobuf"
CLIENT_GO_ACCEPT = {"Accept": "application/vnd.kubernetes.protobuf,application/json"}


async def send(
    kube_http: KubeHTTP, method: str, path: str, api_version: str, kind: str, message: Any
) -> Reply:
    return await kube_http.request(
        method,
        path,
        raw=envelope(api_version, kind, message),
        content_type=PROTOBUF,
        headers=CLIENT_GO_ACCEPT,
    )


def decoded(reply: Reply) -> JSON:
    """The object of a built-in's answer to client-go's Accept header: protobuf, read as such."""
    assert reply.headers["Content-Type"] == PROTOBUF, (reply.status, reply.headers["Content-Type"])
    return decode_envelope(reply.content)


def pod(name: str, **meta: Any) -> Any:
    container = K8S["Container"](
        name="app",
        image="nginx:1.27",
        resources=K8S["ResourceRequirements"](limits={"memory": K8S["Quantity"](string="64Mi")}),
    )
    return K8S["Pod"](
        metadata=K8S["ObjectMeta"](name=name, **meta), spec=K8S["PodSpec"](containers=[container])
    )


async def test_pod_create_status_and_delete(kube_http: KubeHTTP, namespace: str) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"

    created = await send(kube_http, "POST", pods, "v1", "Pod", pod("pb", labels={"app": "web"}))
    assert created.status == 201, created.text
    body = decoded(created)
    assert (body["kind"], body["apiVersion"]) == ("Pod", "v1")
    assert body["metadata"]["labels"] == {"app": "web"}
    assert body["spec"]["containers"][0]["resources"]["limits"] == {"memory": "64Mi"}
    rv = body["metadata"]["resourceVersion"]

    status = pod("pb", resourceVersion=rv)
    status.status.phase = "Running"
    status.status.podIP = "10.1.2.3"
    status.status.conditions.add(
        type="Ready", status="True", lastTransitionTime=K8S["Time"](seconds=1_700_000_000)
    )
    reported = await send(kube_http, "PUT", f"{pods}/pb/status", "v1", "Pod", status)
    assert reported.status == 200, reported.text
    status_body = decoded(reported)["status"]
    assert status_body["phase"] == "Running"
    assert status_body["podIP"] == "10.1.2.3"
    (condition,) = status_body["conditions"]
    assert (condition["type"], condition["status"]) == ("Ready", "True")
    assert condition["lastTransitionTime"] == "2023-11-14T22:13:20Z"

    options = K8S["DeleteOptions"](gracePeriodSeconds=0)
    deleted = await send(kube_http, "DELETE", f"{pods}/pb", "meta.k8s.io/v1", "DeleteOptions", options)
    assert deleted.status == 200, deleted.text
    assert decoded(deleted)["metadata"]["name"] == "pb"
    missing = await kube_http.get(f"{pods}/pb", headers=CLIENT_GO_ACCEPT)
    assert missing.status == 404
    assert decoded(missing)["reason"] == "NotFound"  # a Status, in protobuf too


async def test_configmap_create_and_update(kube_http: KubeHTTP, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    cm = K8S["ConfigMap"](
        metadata=K8S["ObjectMeta"](name="pb"), data={"a": "1"}, binaryData={"raw": b"\x00\x01"}
    )
    created = await send(kube_http, "POST", path, "v1", "ConfigMap", cm)
    assert created.status == 201, created.text
    body = decoded(created)
    assert (body["data"], body["binaryData"]) == ({"a": "1"}, {"raw": "AAE="})

    cm.metadata.resourceVersion = body["metadata"]["resourceVersion"]
    cm.data["b"] = "2"
    cm.immutable = True
    updated = await send(kube_http, "PUT", f"{path}/pb", "v1", "ConfigMap", cm)
    assert updated.status == 200, updated.text
    body = decoded(updated)
    assert body["data"] == {"a": "1", "b": "2"}
    assert body["immutable"] is True

    got = decoded(await kube_http.get(f"{path}/pb", headers=CLIENT_GO_ACCEPT))
    assert got["metadata"]["resourceVersion"] == body["metadata"]["resourceVersion"]
    listed = decoded(await kube_http.get(path, headers=CLIENT_GO_ACCEPT))
    assert (listed["kind"], listed["apiVersion"]) == ("ConfigMapList", "v1")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["pb"]


async def test_node_and_lease_keep_quantities_and_micro_times(kube_http: KubeHTTP, namespace: str) -> None:
    name = f"{namespace}-node"
    node = K8S["Node"](
        metadata=K8S["ObjectMeta"](name=name, labels={"kubernetes.io/hostname": name}),
        spec=K8S["NodeSpec"](taints=[K8S["Taint"](key="dedicated", value="cp", effect="NoSchedule")]),
    )
    created = await send(kube_http, "POST", "/api/v1/nodes", "v1", "Node", node)
    assert created.status == 201, created.text
    body = decoded(created)
    # Its own taint, then the one kube-apiserver's TaintNodesByCondition admission plugin puts on
    # every new Node (measured: tests/testdata/kube-apiserver/measured/node-create-not-ready-taint).
    case = measured("node-create-not-ready-taint")
    assert case["request"]["body"]["spec"]["taints"] == [
        {"key": "dedicated", "value": "cp", "effect": "NoSchedule"}
    ]
    tainted = case["response"]["body"]["spec"]["taints"]
    assert body["spec"]["taints"] == tainted
    node.metadata.resourceVersion = body["metadata"]["resourceVersion"]
    node.status.capacity["cpu"].string = "4"
    node.status.capacity["memory"].string = "8Gi"
    reported = await send(kube_http, "PUT", f"/api/v1/nodes/{name}/status", "v1", "Node", node)
    assert reported.status == 200, reported.text
    assert decoded(reported)["status"]["capacity"] == {"cpu": "4", "memory": "8Gi"}
    assert decoded(reported)["spec"]["taints"] == tainted  # a status update keeps the spec
    assert (await kube_http.delete(f"/api/v1/nodes/{name}")).status == 200

    lease = K8S["Lease"](
        metadata=K8S["ObjectMeta"](name="leader"),
        spec=K8S["LeaseSpec"](
            holderIdentity="me",
            leaseDurationSeconds=15,
            renewTime=K8S["Time"](seconds=1_700_000_000, nanos=250_000_000),
        ),
    )
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    created = await send(kube_http, "POST", path, "coordination.k8s.io/v1", "Lease", lease)
    assert created.status == 201, created.text
    assert decoded(created)["spec"] == {
        "holderIdentity": "me",
        "leaseDurationSeconds": 15,
        "renewTime": "2023-11-14T22:13:20.250000Z",
    }
    listed = decoded(await kube_http.get(path, headers=CLIENT_GO_ACCEPT))
    assert (listed["kind"], listed["apiVersion"]) == ("LeaseList", "coordination.k8s.io/v1")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["leader"]


async def test_strict_field_validation_does_not_apply_to_protobuf(
    kube_http: KubeHTTP, namespace: str
) -> None:
    # kubectl create sends fieldValidation=Strict; protobuf has no unknown-field detection, so a
    # field the server does not serve is dropped without an error or a warning.
    name = f"{namespace}-strict"
    node = K8S["Node"](
        metadata=K8S["ObjectMeta"](name=name), status=K8S["NodeStatus"](declaredFeatures=["X"])
    )
    reply = await kube_http.request(
        "POST",
        "/api/v1/nodes",
        raw=envelope("v1", "Node", node),
        content_type=PROTOBUF,
        params={"fieldValidation": "Strict"},
        headers=CLIENT_GO_ACCEPT,
    )
    assert reply.status == 201, reply.text
    assert decoded(reply)["metadata"]["name"] == name
    assert reply.warnings() == []
    assert (await kube_http.delete(f"/api/v1/nodes/{name}")).status == 200


async def test_corrupt_protobuf_body_is_a_400(kube_http: KubeHTTP, namespace: str) -> None:
    raw = envelope("v1", "ConfigMap", K8S["Pod"](metadata=K8S["ObjectMeta"](name="cut")))[:-2]
    reply = await kube_http.request(
        "POST", f"/api/v1/namespaces/{namespace}/configmaps", raw=raw, content_type=PROTOBUF
    )
    assert reply.status == 400, reply.text
    assert reply.body["reason"] == "BadRequest"
