"""How to run a webhook server: its options and their defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

DEFAULT_HOST: Final = ""
DEFAULT_PORT: Final = 9443
DEFAULT_CERT_DIR: Final = os.path.join("/tmp", "k8s-webhook-server", "serving-certs")
DEFAULT_CERT_NAME: Final = "tls.crt"
DEFAULT_KEY_NAME: Final = "tls.key"
DEFAULT_MAX_BODY_BYTES: Final = 7 * 1024 * 1024
DEFAULT_REQUEST_TIMEOUT: Final = 30.0
DEFAULT_CERT_POLL_INTERVAL: Final = 5.0


@dataclass(frozen=True)
class WebhookServerOptions:
    """How to run a :class:`WebhookServer`. ``None`` means "use the default" named per field."""

    host: str | None = None
    """Address to listen on. Defaults to ``""``: every interface (IPv4 and IPv6), which a server
    in a Pod needs so the Service can reach it. Tests pass ``"127.0.0.1"``."""

    port: int | None = None
    """TCP port. Defaults to 9443 (kubebuilder's). 0 picks a free port; read :attr:`WebhookServer.port`
    after start."""

    cert_dir: str | None = None
    """Directory holding the serving certificate and key. Defaults to
    ``/tmp/k8s-webhook-server/serving-certs`` (controller-runtime's)."""

    cert_name: str | None = None
    """File name of the PEM certificate (chain) in ``cert_dir``. Defaults to ``tls.crt``."""

    key_name: str | None = None
    """File name of the PEM private key in ``cert_dir``. Defaults to ``tls.key``."""

    max_body_bytes: int | None = None
    """Largest request body accepted; larger ones get 413. Defaults to 7 MiB: kube-apiserver
    accepts objects up to 3 MiB, and an UPDATE review carries the object and the old object plus
    the envelope (controller-runtime's limit for the same reason)."""

    request_timeout: float | None = None
    """Seconds allowed for reading a body and answering it. Defaults to 30, the longest
    ``timeoutSeconds`` a webhook configuration may set, so an answer the API server still waits
    for is never cut short."""

    cert_poll_interval: float | None = None
    """Seconds between checks of the certificate files for changes. Defaults to 5."""

    def with_defaults(self) -> ResolvedWebhookServerOptions:
        """Fill in every unset field and check the rest; the one place the defaults are applied."""
        port = DEFAULT_PORT if self.port is None else self.port
        if not 0 <= port <= 65535:
            raise ValueError(f"webhook server port {port} is out of range: use 0 (any free port) to 65535")
        max_body = DEFAULT_MAX_BODY_BYTES if self.max_body_bytes is None else self.max_body_bytes
        if max_body <= 0:
            raise ValueError(f"max_body_bytes must be positive, got {max_body}")
        timeout = DEFAULT_REQUEST_TIMEOUT if self.request_timeout is None else self.request_timeout
        if timeout <= 0:
            raise ValueError(f"request_timeout must be positive seconds, got {timeout}")
        poll = DEFAULT_CERT_POLL_INTERVAL if self.cert_poll_interval is None else self.cert_poll_interval
        if poll <= 0:
            raise ValueError(f"cert_poll_interval must be positive seconds, got {poll}")
        return ResolvedWebhookServerOptions(
            host=DEFAULT_HOST if self.host is None else self.host,
            port=port,
            cert_dir=DEFAULT_CERT_DIR if self.cert_dir is None else self.cert_dir,
            cert_name=DEFAULT_CERT_NAME if self.cert_name is None else self.cert_name,
            key_name=DEFAULT_KEY_NAME if self.key_name is None else self.key_name,
            max_body_bytes=max_body,
            request_timeout=timeout,
            cert_poll_interval=poll,
        )


@dataclass(frozen=True, slots=True)
class ResolvedWebhookServerOptions:
    """:class:`WebhookServerOptions` with every default applied."""

    host: str
    port: int
    cert_dir: str
    cert_name: str
    key_name: str
    max_body_bytes: int
    request_timeout: float
    cert_poll_interval: float
