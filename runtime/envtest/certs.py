"""A throw-away certificate authority for test environments.

The embedded API server, the operator's webhook server and the real-binaries back end all need TLS:
a serving certificate the clients trust, and client certificates whose subject the API server turns
into a user (common name) and groups (organisations). :class:`CertificateAuthority` mints both from
one in-memory CA. Keys are ECDSA P-256 because generating them is nearly free, which matters when
every test session builds its own CA.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_SERVING_HOSTS = ("127.0.0.1", "localhost", "::1")
# Certificates start a little in the past so a peer whose clock lags slightly still accepts them.
_CLOCK_SKEW = timedelta(minutes=5)


@dataclass(frozen=True)
class CertPair:
    """A PEM certificate and its PEM (PKCS#8, unencrypted) private key."""

    cert_pem: bytes
    key_pem: bytes

    def write(
        self, directory: str | os.PathLike[str], cert_name: str = "tls.crt", key_name: str = "tls.key"
    ) -> tuple[Path, Path]:
        """Write both files into ``directory`` (created if missing); the key is readable by the owner only."""
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        cert_path = folder / cert_name
        key_path = folder / key_name
        cert_path.write_bytes(self.cert_pem)
        # Create the key file with restrictive permissions from the start rather than chmod-ing later.
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as key_file:
            key_file.write(self.key_pem)
        return cert_path, key_path


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _subject_alternative_names(hosts: list[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


class CertificateAuthority:
    """A self-signed CA that issues serving and client certificates."""

    def __init__(self, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate, valid_for: timedelta) -> None:
        self._key = key
        self._cert = cert
        self._valid_for = valid_for
        self.cert_pem: bytes = cert.public_bytes(serialization.Encoding.PEM)
        self.key_pem: bytes = _key_pem(key)

    @classmethod
    def new(
        cls, common_name: str = "cpo-envtest-ca", *, valid_for: timedelta = timedelta(days=1)
    ) -> CertificateAuthority:
        key = _new_key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        cert = _builder(name, name, key.public_key(), valid_for, ca=True).sign(key, hashes.SHA256())
        return cls(key, cert, valid_for)

    @classmethod
    def load(
        cls, cert_pem: bytes, key_pem: bytes, *, valid_for: timedelta = timedelta(days=1)
    ) -> CertificateAuthority:
        """The CA written earlier as ``cert_pem``/``key_pem`` (a tool that keeps its CA across restarts);
        ``valid_for`` is how long the certificates it issues from now on stay valid."""
        key = serialization.load_pem_private_key(key_pem, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("the CA key is not an ECDSA key written by CertificateAuthority")
        return cls(key, x509.load_pem_x509_certificate(cert_pem), valid_for)

    def peer_cert(self, hosts: list[str], common_name: str) -> CertPair:
        """A certificate for ``hosts`` that serves and also authenticates as a client (both usages),
        as etcd members need: each is a server to its clients and a client of its peers."""
        return self._issue(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]),
            [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
            _subject_alternative_names(hosts),
        )

    def serving_cert(self, hosts: list[str] | None = None) -> CertPair:
        """A TLS server certificate for ``hosts``: IP literals become IP SANs, anything else DNS SANs."""
        names = list(hosts) if hosts is not None else list(DEFAULT_SERVING_HOSTS)
        common_name = names[0] if names else "cpo-envtest-serving"
        return self._issue(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]),
            [ExtendedKeyUsageOID.SERVER_AUTH],
            _subject_alternative_names(names),
        )

    def client_cert(self, user: str, groups: list[str] | None = None) -> CertPair:
        """A TLS client certificate that kube-apiserver maps to ``user`` (CN) in ``groups`` (one O each)."""
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups or []]
        attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
        return self._issue(x509.Name(attributes), [ExtendedKeyUsageOID.CLIENT_AUTH], [])

    def _issue(
        self,
        subject: x509.Name,
        usages: list[x509.ObjectIdentifier],
        alternative_names: list[x509.GeneralName],
    ) -> CertPair:
        key = _new_key()
        builder = (
            _builder(subject, self._cert.subject, key.public_key(), self._valid_for, ca=False)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False
            )
        )
        if alternative_names:
            builder = builder.add_extension(x509.SubjectAlternativeName(alternative_names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return CertPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    valid_for: timedelta,
    *,
    ca: bool,
) -> x509.CertificateBuilder:
    """What a CA and the certificates it issues have in common: names, key, validity from a little
    in the past, basic constraints and key usage (a CA signs certificates, a leaf only handshakes)."""
    now = datetime.now(UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + valid_for)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=ca,
                crl_sign=ca,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )
