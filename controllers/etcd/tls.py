"""The etcd client certificate a ControlPlane names in ``spec.etcd.tlsSecretRef``, as an SSL context.

Both the ControlPlane controller (its preflight) and the etcd-quorum-hook controller talk to etcd
with the same certificate: the Secret's ``tls.crt`` and ``tls.key`` (the client's pair) and
``ca.crt`` (the CA etcd's serving certificate is checked against).
"""

from __future__ import annotations

import base64
import ssl
import tempfile
from pathlib import Path
from typing import Final

from runtime.client import Client
from runtime.errors import NotFound
from runtime.jsoncodec import JSON

SECRET_KEYS: Final = ("tls.crt", "tls.key", "ca.crt")


class TLSSecretError(Exception):
    """The etcd client certificate Secret is missing or incomplete; the message says which."""


async def read_tls_secret(client: Client, namespace: str, secret_name: str) -> JSON:
    """Secret ``namespace/secret_name`` as the API server has it now; raises :class:`TLSSecretError`
    when it does not exist."""
    try:
        return await client.get("v1", "Secret", secret_name, namespace)
    except NotFound as err:
        raise TLSSecretError(f"etcd TLS Secret {namespace}/{secret_name} not found") from err


def tls_context(secret: JSON) -> ssl.SSLContext:
    """The client TLS context of ``secret``; raises :class:`TLSSecretError` naming the Secret and
    what it lacks."""
    metadata = secret.get("metadata") or {}
    where = f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"
    data = secret.get("data") or {}
    missing = [key for key in SECRET_KEYS if key not in data]
    if missing:
        raise TLSSecretError(
            f"etcd TLS Secret {where} lacks {', '.join(missing)} (it needs {', '.join(SECRET_KEYS)})"
        )
    try:
        cert, key, ca = (base64.b64decode(data[name]) for name in SECRET_KEYS)
        context = ssl.create_default_context(cadata=ca.decode())
        # load_cert_chain reads files only: the pair is on disk for the duration of that call.
        with tempfile.TemporaryDirectory(prefix="cpo-etcd-tls-") as folder:
            cert_file, key_file = Path(folder) / "tls.crt", Path(folder) / "tls.key"
            cert_file.write_bytes(cert)
            key_file.write_bytes(key)
            key_file.chmod(0o600)
            context.load_cert_chain(str(cert_file), str(key_file))
    except (ssl.SSLError, ValueError) as err:  # a bad certificate, key or base64
        raise TLSSecretError(f"etcd TLS Secret {where}: {err}") from err
    return context


async def tls_context_from_secret(client: Client, namespace: str, secret_name: str) -> ssl.SSLContext:
    """The client TLS context of Secret ``namespace/secret_name``; raises :class:`TLSSecretError`
    naming the Secret and what it lacks."""
    return tls_context(await read_tls_secret(client, namespace, secret_name))
