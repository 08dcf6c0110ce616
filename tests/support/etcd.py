"""Helpers for tests with real etcd members: deadline polls, retry loops, a process count, a TLS cert."""

from __future__ import annotations

import base64
import ipaddress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from controllers.etcd.client import (
    EtcdClient,
    EtcdClientOptions,
    EtcdCluster,
    LearnerNotInSync,
    Member,
    MemberAddResult,
    Unavailable,
    UnhealthyCluster,
)
from providers.localmachine.etcd_process import (
    EtcdProcessOptions,
    EtcdServerTLS,
    EtcdSupervisor,
    MemberProcess,
)
from runtime.envtest.certs import CertificateAuthority, CertPair
from tests.support.poll import eventually


async def promote_when_in_sync(cluster: EtcdCluster, member_id: int, *, within: float = 20.0) -> list[Member]:
    """Promote ``member_id``, retrying while etcd says the learner has not caught up."""

    async def attempt() -> list[Member] | None:
        try:
            return await cluster.promote(member_id)
        except LearnerNotInSync:
            return None

    return await eventually(attempt, timeout=within, message=f"learner {member_id:x} caught up and promoted")


def etcd_processes_for(data_dir: Path) -> list[int]:
    """Pids of every live etcd process on this machine whose command line has ``--data-dir=<data_dir>``."""
    wanted = f"--data-dir={data_dir}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if wanted in arguments and state != "Z":
            pids.append(int(entry.name))
    return pids


async def join_when_healthy(
    supervisor: EtcdSupervisor, name: str, cluster: EtcdCluster, *, within: float = 20.0
) -> MemberProcess:
    """Join ``name`` as a learner, retrying while etcd refuses a member add as "unhealthy cluster".

    etcd (strict reconfiguration check) adds a member only once every voter has been connected to
    it for 5 s, so a join right after a start or promotion is refused for a few seconds.
    """

    async def attempt() -> MemberProcess | None:
        try:
            return await supervisor.join(name, cluster)
        except UnhealthyCluster:
            return None

    return await eventually(attempt, timeout=within, message=f"{name} joined")


def etcd_serving_cert(authority: CertificateAuthority, host: str = "127.0.0.1") -> CertPair:
    """A serving certificate for ``host`` that is valid for client authentication too.

    etcd 3.5's JSON gateway calls the member's own gRPC server with the serving certificate, so with
    ``--client-cert-auth`` that certificate must carry the clientAuth usage as well (etcd's TLS guide
    asks the same of its server certificates).
    """
    ca_key = serialization.load_pem_private_key(authority.key_pem, password=None)
    ca_cert = x509.load_pem_x509_certificate(authority.cert_pem)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return CertPair(cert.public_bytes(serialization.Encoding.PEM), key_pem)


class AddAnswerLost:
    """A real cluster whose member add reaches etcd (``reaches=True``) or not, and whose answer
    the caller never gets: what a provider killed while the add is on the wire leaves behind."""

    def __init__(self, etcd: EtcdClient, *, reaches: bool) -> None:
        self.etcd, self.reaches = etcd, reaches

    async def add_learner(self, peer_urls: list[str]) -> MemberAddResult:
        if self.reaches:
            await self.etcd.add_learner(peer_urls)
        raise Unavailable("the caller died before the answer")

    async def member_list(self) -> list[Member]:
        return await self.etcd.member_list()

    async def remove(self, member_id: int) -> list[Member]:
        return await self.etcd.remove(member_id)


@dataclass(frozen=True)
class TLSEtcd:
    """A supervisor whose members serve TLS with client-certificate auth, from a CA of its own."""

    supervisor: EtcdSupervisor
    authority: CertificateAuthority
    client: CertPair
    """A client certificate etcd trusts."""

    def secret(self, name: str, namespace: str) -> dict[str, object]:
        """The Secret a ControlPlane's ``spec.etcd.tlsSecretRef`` names: the client pair and the CA."""
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "type": "kubernetes.io/tls",
            "data": {
                "tls.crt": base64.b64encode(self.client.cert_pem).decode(),
                "tls.key": base64.b64encode(self.client.key_pem).decode(),
                "ca.crt": base64.b64encode(self.authority.cert_pem).decode(),
            },
        }


def tls_etcd(folder: Path, ca_name: str) -> TLSEtcd:
    """A :class:`TLSEtcd` keeping its certificates and members' data under ``folder``."""
    authority = CertificateAuthority.new(ca_name)
    ca_file = folder / "ca.crt"
    folder.mkdir(parents=True, exist_ok=True)
    ca_file.write_bytes(authority.cert_pem)
    serving_cert, serving_key = etcd_serving_cert(authority).write(folder / "server")
    client = authority.client_cert("etcd-quorum-hook")
    client_cert, client_key = client.write(folder / "client")
    supervisor = EtcdSupervisor(
        folder / "etcd",
        EtcdProcessOptions(
            stop_grace_period=2,
            client_tls=EtcdServerTLS(serving_cert, serving_key, client_ca_file=ca_file),
            client_options=EtcdClientOptions(ca_file=ca_file, cert_file=client_cert, key_file=client_key),
        ),
    )
    return TLSEtcd(supervisor, authority, client)
