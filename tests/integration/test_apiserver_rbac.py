"""The embedded API server's identities and RBAC: service-account tokens, TokenReview,
SubjectAccessReview, the rbac.authorization.k8s.io types, enforcement and access recording."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from apiserver import EmbeddedAPIServer
from apiserver.rbac import Access
from tests.support.kubehttp import KubeHTTP

RBAC = "/apis/rbac.authorization.k8s.io/v1"
NS = "default"


def as_token(server: EmbeddedAPIServer, token: str) -> KubeHTTP:
    kubeconfig: Any = copy.deepcopy(server.kubeconfig())
    kubeconfig["users"][0]["user"]["token"] = token
    return KubeHTTP(kubeconfig)


@pytest_asyncio.fixture
async def server() -> AsyncIterator[EmbeddedAPIServer]:
    async with EmbeddedAPIServer() as started:
        yield started


def reader_role(name: str, rules: list[dict[str, Any]], *, kind: str = "ClusterRole") -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "rules": rules,
    }


def binding(name: str, role_kind: str, role: str, subject: dict[str, Any], *, kind: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [subject],
    }


async def test_service_account_tokens_and_the_two_reviews(server: EmbeddedAPIServer) -> None:
    async with KubeHTTP(server.kubeconfig()) as admin:
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "prometheus"}}
        assert (await admin.post(f"/api/v1/namespaces/{NS}/serviceaccounts", sa)).status == 201
        minted = await admin.post(
            f"/api/v1/namespaces/{NS}/serviceaccounts/prometheus/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
        )
        assert minted.status == 201, minted.text
        token = minted.body["status"]["token"]
        missing = await admin.post(f"/api/v1/namespaces/{NS}/serviceaccounts/nobody/token", {})
        assert missing.status == 404

        review = await admin.post(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
        )
        assert review.status == 201, review.text
        user = review.body["status"]["user"]
        assert review.body["status"]["authenticated"] is True
        assert user["username"] == "system:serviceaccount:default:prometheus"
        assert {"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"} <= set(
            user["groups"]
        )
        bogus = await admin.post(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "nope"}},
        )
        assert bogus.body["status"].get("authenticated") is not True

        async def allowed(user: str, groups: list[str], **attributes: Any) -> bool:
            key = "nonResourceAttributes" if "path" in attributes else "resourceAttributes"
            reply = await admin.post(
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                {
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SubjectAccessReview",
                    "spec": {"user": user, "groups": groups, key: attributes},
                },
            )
            assert reply.status == 201, reply.text
            return bool(reply.body["status"]["allowed"])

        name = "system:serviceaccount:default:prometheus"
        assert not await allowed(name, [], verb="get", path="/metrics")
        role = reader_role("metrics-reader", [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}])
        assert (await admin.post(f"{RBAC}/clusterroles", role)).status == 201
        subject = {"kind": "ServiceAccount", "name": "prometheus", "namespace": NS}
        crb = binding(
            "prometheus-metrics", "ClusterRole", "metrics-reader", subject, kind="ClusterRoleBinding"
        )
        assert (await admin.post(f"{RBAC}/clusterrolebindings", crb)).status == 201
        assert await allowed(name, [], verb="get", path="/metrics")
        assert not await allowed(name, [], verb="get", path="/healthz/x")
        assert not await allowed("someone-else", ["g"], verb="get", path="/metrics")
        assert not await allowed(name, [], verb="list", group="", resource="pods", namespace=NS)

        pods = reader_role(
            "pod-reader", [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}], kind="Role"
        )
        assert (await admin.post(f"{RBAC}/namespaces/{NS}/roles", pods)).status == 201
        rb = binding(
            "read-pods", "Role", "pod-reader", {"kind": "Group", "name": "readers"}, kind="RoleBinding"
        )
        assert (await admin.post(f"{RBAC}/namespaces/{NS}/rolebindings", rb)).status == 201
        assert await allowed("x", ["readers"], verb="list", group="", resource="pods", namespace=NS)
        assert not await allowed(
            "x", ["readers"], verb="list", group="", resource="pods", namespace="kube-system"
        )
        assert not await allowed(
            "x", ["readers"], verb="get", group="", resource="pods", subresource="log", namespace=NS
        )
        assert await allowed("admin", ["system:masters"], verb="delete", group="", resource="nodes")
        listed = await admin.get(f"{RBAC}/clusterroles")
        assert [r["metadata"]["name"] for r in listed.body["items"]] == ["metrics-reader"]


async def test_rbac_is_enforced_and_recorded_only_for_the_identities_asked_for(
    server: EmbeddedAPIServer,
) -> None:
    token = server.service_account_token(NS, "operator")
    user = "system:serviceaccount:default:operator"
    async with KubeHTTP(server.kubeconfig()) as admin, as_token(server, token) as operator:
        # Not enforced: an authenticated identity may do everything, as before.
        assert (await operator.get(f"/api/v1/namespaces/{NS}/configmaps")).status == 200
        server.enforce_rbac(user)
        recorder = server.record_access(user)
        denied = await operator.get(f"/api/v1/namespaces/{NS}/configmaps")
        assert denied.status == 403
        assert denied.body["message"] == (
            f'configmaps is forbidden: User "{user}" cannot list resource "configmaps" in API group "" '
            f'in the namespace "{NS}"'
        )
        assert (await operator.get("/apis")).status == 200  # discovery: the bootstrap roles
        role = reader_role(
            "cm",
            [
                {"verbs": ["list", "watch"], "apiGroups": [""], "resources": ["configmaps"]},
                {"verbs": ["update"], "apiGroups": [""], "resources": ["configmaps/status"]},
            ],
        )
        assert (await admin.post(f"{RBAC}/clusterroles", role)).status == 201
        crb = binding("cm", "ClusterRole", "cm", {"kind": "User", "name": user}, kind="ClusterRoleBinding")
        assert (await admin.post(f"{RBAC}/clusterrolebindings", crb)).status == 201
        assert (await operator.get(f"/api/v1/namespaces/{NS}/configmaps")).status == 200
        assert (await operator.get("/api/v1/configmaps")).status == 200
        assert (await operator.get(f"/api/v1/namespaces/{NS}/configmaps/x")).status == 403
        assert (await admin.get(f"/api/v1/namespaces/{NS}/secrets")).status == 200
        resources = {a for a in recorder.used if a.group != "<non-resource>"}
        assert resources == {
            Access("list", "", "configmaps", "", NS),
            Access("list", "", "configmaps", "", None),
            Access("get", "", "configmaps", "", NS),
        }


@pytest.mark.parametrize("path", ["/api/v1/namespaces/default/serviceaccounts/x/token"])
async def test_token_request_of_a_missing_account_is_not_found(server: EmbeddedAPIServer, path: str) -> None:
    async with KubeHTTP(server.kubeconfig()) as admin:
        assert (await admin.post(path, {"kind": "TokenRequest"})).status == 404
