"""The etcd client certificate Secret as a TLS context: what a broken Secret is reported as."""

from __future__ import annotations

import base64
import ssl

import pytest

from controllers.etcd.tls import TLSSecretError, tls_context
from runtime.envtest.certs import CertificateAuthority


def secret(**data: bytes) -> dict[str, object]:
    return {
        "metadata": {"name": "etcd-client", "namespace": "ns"},
        "data": {key.replace("_", "."): base64.b64encode(value).decode() for key, value in data.items()},
    }


def test_a_complete_secret_makes_a_client_context() -> None:
    authority = CertificateAuthority.new("etcd-tls-unit-ca")
    client = authority.client_cert("operator")
    context = tls_context(secret(tls_crt=client.cert_pem, tls_key=client.key_pem, ca_crt=authority.cert_pem))
    assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_REQUIRED


def test_a_secret_without_a_key_names_what_it_lacks() -> None:
    with pytest.raises(TLSSecretError, match=r"etcd TLS Secret ns/etcd-client lacks tls.key \(it needs"):
        tls_context(secret(tls_crt=b"x", ca_crt=b"y"))


def test_a_secret_with_a_broken_certificate_is_reported_not_raised_as_is() -> None:
    authority = CertificateAuthority.new("etcd-tls-unit-ca")
    with pytest.raises(TLSSecretError, match="etcd TLS Secret ns/etcd-client: "):
        tls_context(secret(tls_crt=b"not a certificate", tls_key=b"nor a key", ca_crt=authority.cert_pem))
