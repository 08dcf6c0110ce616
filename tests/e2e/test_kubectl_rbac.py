"""kubectl's RBAC and token commands against the API server: they send protobuf bodies (typed
clients), and the answers must be the ones a cluster gives. (``kubectl auth can-i --as`` needs
impersonation and SelfSubjectAccessReview, which the embedded server does not serve: reviews are
created directly instead.)"""

from __future__ import annotations

from typing import Any

from tests.e2e.test_kubectl import Kubectl


async def allowed(k: Kubectl, user: str, attributes: str) -> str:
    """``status.allowed`` of a SubjectAccessReview kubectl creates (``attributes``: YAML)."""
    review = (
        "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\n"
        f"spec:\n  user: {user}\n  {attributes}\n"
    )
    # --validate=false: kubectl's client-side schema lookup of the review kinds falls back to
    # /openapi/v2, which the embedded server does not serve.
    out = await k.run(
        "create", "--validate=false", "-f", "-", "-o", "jsonpath={.status.allowed}", stdin=review
    )
    return out.strip()


async def test_create_roles_bindings_tokens_and_review_access(env: Any, namespace: str) -> None:
    k = Kubectl(env.kubeconfig_path, namespace)
    await k.run("create", "serviceaccount", "scraper")
    await k.run("create", "role", "pod-reader", "--verb=get,list", "--resource=pods")
    await k.run(
        "create", "rolebinding", "scraper-reads", "--role=pod-reader", f"--serviceaccount={namespace}:scraper"
    )
    who = f"system:serviceaccount:{namespace}:scraper"
    pods = f"namespace: {namespace}, resource: pods"
    assert await allowed(k, who, f"resourceAttributes: {{verb: list, {pods}}}") == "true"
    assert await allowed(k, who, f"resourceAttributes: {{verb: delete, {pods}}}") == "false"
    token = (await k.run("create", "token", "scraper")).strip()
    assert token
    await k.run("create", "clusterrole", f"reader-{namespace}", "--verb=get", "--non-resource-url=/metrics")
    await k.run(
        "create",
        "clusterrolebinding",
        f"reader-{namespace}",
        f"--clusterrole=reader-{namespace}",
        f"--serviceaccount={namespace}:scraper",
    )
    try:
        assert await allowed(k, who, "nonResourceAttributes: {verb: get, path: /metrics}") == "true"
        roles = await k.run("get", "roles,rolebindings", "-o", "name")
        assert "role.rbac.authorization.k8s.io/pod-reader" in roles, roles
    finally:
        await k.run("delete", "clusterrolebinding", f"reader-{namespace}", check=False)
        await k.run("delete", "clusterrole", f"reader-{namespace}", check=False)
