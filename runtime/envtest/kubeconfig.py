"""Kubeconfig documents for test environments: build one, write one, and read a user's one.

Every back end of :class:`runtime.envtest.Environment` ends with the same two artefacts: a
kubeconfig *dict* (handed to ``kubernetes_asyncio``) and a kubeconfig *file* (handed to kubectl and
to subprocesses). The dict is always self-contained: one context, one cluster, one user, with
certificates inlined as ``*-data`` fields, so it can be copied anywhere and still work -- the same
result as ``kubectl config view --minify --flatten``.
"""

from __future__ import annotations

import base64
import copy
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

Kubeconfig = dict[str, Any]

# Fields that name a file and the inline field that can replace it (kubectl's --flatten does the same).
_CLUSTER_FILE_FIELDS = {"certificate-authority": "certificate-authority-data"}
_USER_FILE_FIELDS = {"client-certificate": "client-certificate-data", "client-key": "client-key-data"}


class KubeconfigError(ValueError):
    """A kubeconfig cannot be read or does not contain what was asked for."""


def build_kubeconfig(
    server: str,
    ca_pem: bytes,
    *,
    token: str | None = None,
    client_cert_pem: bytes | None = None,
    client_key_pem: bytes | None = None,
    name: str = "envtest",
    user: str = "envtest-admin",
) -> Kubeconfig:
    """A one-context kubeconfig for ``server`` that trusts ``ca_pem`` and sends a token or client cert."""
    credentials: dict[str, Any] = {}
    if token is not None:
        credentials["token"] = token
    if (client_cert_pem is None) != (client_key_pem is None):
        raise ValueError("a client certificate needs both its certificate and its key")
    if client_cert_pem is not None and client_key_pem is not None:
        credentials["client-certificate-data"] = _b64(client_cert_pem)
        credentials["client-key-data"] = _b64(client_key_pem)
    if not credentials:
        raise ValueError("a kubeconfig user needs a token or a client certificate")
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [
            {"name": name, "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)}}
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
        "current-context": name,
    }


def write_kubeconfig(config: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``config`` as YAML to ``path``, readable by the owner only, and return the path.

    The file appears atomically (written next to the target, then renamed), so a process polling for
    it never reads half a document.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(dict(config), default_flow_style=False, sort_keys=False)
    fd, partial = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(partial, 0o600)
        os.replace(partial, target)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return target


def load_kubeconfig(path: str | os.PathLike[str], context: str | None = None) -> Kubeconfig:
    """Read a kubeconfig file and reduce it to one self-contained context.

    ``context`` defaults to the file's ``current-context``. File references (CA, client certificate
    and key) are read and inlined; relative paths are resolved against the kubeconfig's folder, as
    kubectl does. Exec and auth-provider users are kept as they are.
    """
    source = Path(path).expanduser()
    try:
        document = yaml.safe_load(source.read_text(encoding="utf-8"))
    except OSError as err:
        raise KubeconfigError(f"cannot read kubeconfig {source}: {err.strerror or err}") from err
    except yaml.YAMLError as err:
        raise KubeconfigError(f"kubeconfig {source} is not valid YAML: {err}") from err
    if not isinstance(document, dict):
        raise KubeconfigError(f"kubeconfig {source} is not a mapping")
    return minify(document, context=context, base_dir=source.parent, origin=str(source))


def minify(
    document: Mapping[str, Any],
    *,
    context: str | None = None,
    base_dir: Path | None = None,
    origin: str = "kubeconfig",
) -> Kubeconfig:
    """Keep only ``context`` (default: the current one) with its cluster and user, file references inlined."""
    context_name = context or document.get("current-context") or ""
    if not context_name:
        raise KubeconfigError(f"{origin} has no current-context and none was given")
    context_body = _named(document, "contexts", context_name, origin)
    cluster_name = context_body.get("cluster", "")
    user_name = context_body.get("user", "")
    cluster = _inline_files(
        _named(document, "clusters", cluster_name, origin), _CLUSTER_FILE_FIELDS, base_dir
    )
    if "server" not in cluster:
        raise KubeconfigError(f'cluster "{cluster_name}" in {origin} has no server')
    user = (
        _inline_files(_named(document, "users", user_name, origin), _USER_FILE_FIELDS, base_dir)
        if user_name
        else {}
    )
    if "tokenFile" in user and base_dir is not None:
        # A token file may be rotated by its owner, so keep referring to it rather than inlining it.
        user["tokenFile"] = str(base_dir / user["tokenFile"])
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": [{"name": user_name, "user": user}],
        "contexts": [{"name": context_name, "context": dict(context_body)}],
        "current-context": context_name,
    }


def server_url(config: Mapping[str, Any]) -> str:
    """The API server URL of ``config``'s current context."""
    context = _named(config, "contexts", config.get("current-context", ""), "kubeconfig")
    cluster = _named(config, "clusters", context.get("cluster", ""), "kubeconfig")
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise KubeconfigError("the current context's cluster has no server")
    return server


def _named(document: Mapping[str, Any], section: str, name: str, origin: str) -> dict[str, Any]:
    singular = section[:-1]
    for entry in document.get(section) or []:
        if isinstance(entry, Mapping) and entry.get("name") == name:
            body = entry.get(singular)
            return copy.deepcopy(dict(body)) if isinstance(body, Mapping) else {}
    raise KubeconfigError(f'{origin} has no {singular} named "{name}"')


def _inline_files(body: dict[str, Any], fields: Mapping[str, str], base_dir: Path | None) -> dict[str, Any]:
    for file_field, data_field in fields.items():
        reference = body.pop(file_field, None)
        if not reference or data_field in body:
            continue
        file_path = Path(reference).expanduser()
        if not file_path.is_absolute() and base_dir is not None:
            file_path = base_dir / file_path
        try:
            body[data_field] = _b64(file_path.read_bytes())
        except OSError as err:
            raise KubeconfigError(f"cannot read {file_field} {file_path}: {err.strerror or err}") from err
    return body


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
