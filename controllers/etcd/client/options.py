"""How the etcd client connects: :class:`EtcdClientOptions`, their defaults, and endpoint checking."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

DEFAULT_TIMEOUT = 5.0
DEFAULT_HEALTH_KEY = "health"
DEFAULT_KEEPALIVE = 120.0


@dataclass
class EtcdClientOptions:
    """How :class:`EtcdClient` connects. ``None`` means "use the default" named per field."""

    timeout: float | None = None
    """Seconds one request to one endpoint may take. Defaults to 5."""

    ca_file: Path | str | None = None
    """CA bundle that signed the members' serving certificates. Defaults to none: the system CAs
    for ``https`` endpoints."""

    cert_file: Path | str | None = None
    """Client certificate for mutual TLS (needs ``key_file``). Defaults to none: no client certificate."""

    key_file: Path | str | None = None
    """Private key of ``cert_file``. Defaults to none."""

    ssl_context: ssl.SSLContext | None = None
    """A ready TLS context; replaces the three files above. Defaults to one built from them."""

    health_key: str | None = None
    """The key the health check reads. Defaults to ``"health"``, as etcdctl does."""

    keepalive: float | None = None
    """Seconds an idle connection to a member stays open for the next read. Defaults to 120:
    longer than the controllers' resync periods (15 s, 60 s), so the passes over a settled
    ControlPlane reuse one connection per member instead of opening one per request. 0 opens a
    connection per read as well."""

    def with_defaults(self) -> ResolvedEtcdClientOptions:
        """Fill in every unset field and check them; the one place where the defaults above are applied."""
        timeout = DEFAULT_TIMEOUT if self.timeout is None else float(self.timeout)
        if timeout <= 0:
            raise ValueError(f"EtcdClientOptions.timeout must be positive seconds, got {self.timeout!r}")
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError(
                "EtcdClientOptions: set both cert_file and key_file for a client certificate, or neither"
            )
        context = self.ssl_context
        if context is None and (self.ca_file is not None or self.cert_file is not None):
            for label, path in (
                ("ca_file", self.ca_file),
                ("cert_file", self.cert_file),
                ("key_file", self.key_file),
            ):
                if path is not None and not Path(path).is_file():
                    raise ValueError(f"EtcdClientOptions.{label}: {path} is not a file")
            context = ssl.create_default_context(
                cafile=str(self.ca_file) if self.ca_file is not None else None
            )
            if self.cert_file is not None and self.key_file is not None:
                context.load_cert_chain(str(self.cert_file), str(self.key_file))
        keepalive = DEFAULT_KEEPALIVE if self.keepalive is None else float(self.keepalive)
        if keepalive < 0:
            raise ValueError(f"EtcdClientOptions.keepalive must be 0 or more seconds, got {self.keepalive!r}")
        return ResolvedEtcdClientOptions(
            timeout=timeout,
            ssl_context=context,
            health_key=DEFAULT_HEALTH_KEY if self.health_key is None else self.health_key,
            keepalive=keepalive,
        )


@dataclass(frozen=True, slots=True)
class ResolvedEtcdClientOptions:
    """:class:`EtcdClientOptions` with every default applied."""

    timeout: float
    ssl_context: ssl.SSLContext | None
    health_key: str
    keepalive: float


def normalize_endpoint(endpoint: str) -> str:
    """``endpoint`` as ``scheme://host:port``; raises ``ValueError`` saying what is wrong with it."""
    text = endpoint.strip().rstrip("/")
    if "://" not in text:
        raise ValueError(f"etcd endpoint {endpoint!r} needs a scheme: write http://{text} or https://{text}")
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise ValueError(
            f"etcd endpoint {endpoint!r}: the scheme must be http or https, not {parts.scheme!r}"
        )
    if not parts.hostname:
        raise ValueError(f"etcd endpoint {endpoint!r} has no host")
    try:
        port = parts.port
    except ValueError as err:
        raise ValueError(f"etcd endpoint {endpoint!r}: {err}") from err
    if port is None:
        raise ValueError(f"etcd endpoint {endpoint!r} has no port (etcd's client port is usually 2379)")
    if parts.path:
        raise ValueError(f"etcd endpoint {endpoint!r} must not have a path")
    return f"{parts.scheme}://{parts.netloc}"
