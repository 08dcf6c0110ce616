"""The test CA: its serving certificates pass real TLS verification; its client certificates name a user."""

from __future__ import annotations

import asyncio
import ipaddress
import ssl
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from runtime.envtest.certs import CertificateAuthority, CertPair


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority.new()


def _server_context(
    pair: CertPair, directory: Path, *, client_ca: CertificateAuthority | None = None
) -> ssl.SSLContext:
    cert_path, key_path = pair.write(directory)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cadata=client_ca.cert_pem.decode())
    return context


def _client_context(ca: CertificateAuthority) -> ssl.SSLContext:
    # create_default_context enables hostname checking and, on newer Pythons, strict X.509 checks.
    context = ssl.create_default_context(cadata=ca.cert_pem.decode())
    return context


async def _handshake(
    server_context: ssl.SSLContext, client_context: ssl.SSLContext, server_hostname: str, host: str
) -> str:
    """Serve one TLS connection on ``host`` and return the peer subject the server saw ("" if none)."""
    seen: list[str] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peercert")
        if peer:
            seen.append(repr(peer["subject"]))
        writer.write(b"ok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, host, 0, ssl=server_context)
    port = server.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.open_connection(
            host, port, ssl=client_context, server_hostname=server_hostname
        )
        assert await reader.read() == b"ok"
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
    return seen[0] if seen else ""


@pytest.mark.parametrize(
    ("host", "server_hostname"), [("127.0.0.1", "127.0.0.1"), ("127.0.0.1", "localhost")]
)
async def test_serving_cert_verifies_against_the_ca(
    ca: CertificateAuthority, tmp_path: Path, host: str, server_hostname: str
) -> None:
    server_context = _server_context(ca.serving_cert(), tmp_path)
    await _handshake(server_context, _client_context(ca), server_hostname, host)


async def test_serving_cert_is_rejected_for_a_name_it_does_not_carry(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    server_context = _server_context(ca.serving_cert(["127.0.0.1"]), tmp_path)
    with pytest.raises(ssl.SSLCertVerificationError):
        await _handshake(server_context, _client_context(ca), "other.example", "127.0.0.1")


async def test_serving_cert_is_rejected_by_a_client_trusting_another_ca(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    server_context = _server_context(ca.serving_cert(), tmp_path)
    with pytest.raises(ssl.SSLCertVerificationError):
        await _handshake(
            server_context, _client_context(CertificateAuthority.new("other")), "127.0.0.1", "127.0.0.1"
        )


async def test_client_cert_authenticates_to_a_server_requiring_the_ca(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    server_context = _server_context(ca.serving_cert(), tmp_path / "server", client_ca=ca)
    client_pair = ca.client_cert("admin", ["system:masters"])
    cert_path, key_path = client_pair.write(tmp_path / "client", "client.crt", "client.key")
    client_context = _client_context(ca)
    client_context.load_cert_chain(cert_path, key_path)
    subject = await _handshake(server_context, client_context, "127.0.0.1", "127.0.0.1")
    assert "'commonName', 'admin'" in subject and "'organizationName', 'system:masters'" in subject


def test_serving_cert_puts_ips_and_names_in_the_right_san_kinds(ca: CertificateAuthority) -> None:
    cert = x509.load_pem_x509_certificate(ca.serving_cert(["10.0.0.1", "svc.ns.svc", "::1"]).cert_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("10.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    assert sans.get_values_for_type(x509.DNSName) == ["svc.ns.svc"]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_default_serving_hosts_cover_loopback(ca: CertificateAuthority) -> None:
    cert = x509.load_pem_x509_certificate(ca.serving_cert().cert_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "::1"}


def test_client_cert_subject_is_user_and_groups(ca: CertificateAuthority) -> None:
    cert = x509.load_pem_x509_certificate(ca.client_cert("alice", ["dev", "ops"]).cert_pem)
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)] == ["alice"]
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["dev", "ops"]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_keys_are_p256_and_validity_follows_the_ca(tmp_path: Path) -> None:
    short = CertificateAuthority.new("short", valid_for=timedelta(hours=2))
    ca_cert = x509.load_pem_x509_certificate(short.cert_pem)
    leaf = x509.load_pem_x509_certificate(short.serving_cert().cert_pem)
    for cert in (ca_cert, leaf):
        lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
        assert timedelta(hours=2) <= lifetime <= timedelta(hours=2, minutes=10)
    key = load_pem_private_key(short.key_pem, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    assert ca_cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert leaf.issuer == ca_cert.subject


def test_write_creates_the_directory_and_keeps_the_key_private(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    cert_path, key_path = ca.serving_cert().write(tmp_path / "nested" / "certs")
    assert cert_path.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")
    assert key_path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert key_path.stat().st_mode & 0o777 == 0o600
