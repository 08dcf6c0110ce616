"""The ``localmachine`` provider's realistic mode: one loopback address per Machine, etcd over mutual TLS.

In this mode the provider shows the operator only what a cloud shows it (see the package
docstring, "Realistic mode"). This module holds the two pieces that mode adds:

* :class:`AddressBlock`: the block of loopback addresses ``127.X.Y.1`` … ``127.X.Y.254`` of one
  provider (one "world"), recorded in ``<state_dir>/address-block.json`` so a restarted provider
  keeps it. Every member gets an address of its own and listens on the standard ports, 2379 for
  clients and 2380 for peers. Linux routes the whole of 127.0.0.0/8 to ``lo``, so no setup is
  needed. Addresses are handed out in turn through the block, and an address is handed out again
  only once no member record holds it (the record goes when the Machine's member is gone) and no
  host pool keeps it (:mod:`providers.localmachine.hosts`: a capped domain's addresses stay its own).
* :class:`EtcdPKI`: the CA of the provider's etcd clusters (``<state_dir>/_pki/``), a certificate
  per member for its address (serving and peer, both ways authenticated), and the client
  certificate the provider itself and the operator use, handed to the operator in a Secret.

>>> block = AddressBlock.parse("127.5.3")
>>> block.address(1), node_name("127.5.3.1")
('127.5.3.1', 'ip-127-5-3-1')
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import random
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from controllers.etcd.client import EtcdClientOptions
from runtime.envtest.certs import CertificateAuthority, CertPair
from runtime.jsoncodec import JSON

ETCD_CLIENT_PORT: Final = 2379
ETCD_PEER_PORT: Final = 2380
DEFAULT_CLIENT_SECRET: Final = "etcd-client-tls"
"""Name of the Secret (in each Machines' namespace) with the etcd client certificate, unless the
provider is told another (``--etcd-client-secret``). The ControlPlane names it in
``spec.etcd.tlsSecretRef``."""
BLOCK_FILE: Final = "address-block.json"
PKI_DIR: Final = "_pki"
"""Not a valid namespace name, so no cluster folder (``<state_dir>/<namespace>/``) can be it."""
CERTIFICATE_LIFETIME: Final = timedelta(days=365)
_HOSTS_PER_BLOCK: Final = 254
_PROBED_HOSTS: Final = 4
"""How many of a new block's first addresses must be free (both ports) before it is taken."""
_PICK_ATTEMPTS: Final = 64


def node_name(address: str) -> str:
    """The Node (and etcd member) name of the machine at ``address``, as clouds name instances by
    their private address (``127.5.3.1`` → ``ip-127-5-3-1``)."""
    return "ip-" + address.replace(".", "-")


def _ports_free(address: str) -> bool:
    """Whether both etcd ports can be bound on ``address`` right now."""
    for port in (ETCD_CLIENT_PORT, ETCD_PEER_PORT):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((address, port))
            except OSError:
                return False
    return True


@dataclass(frozen=True)
class AddressBlock:
    """A /24 of loopback addresses, ``127.X.Y.0/24``, written as ``127.X.Y``."""

    prefix: str

    @classmethod
    def parse(cls, text: str) -> AddressBlock:
        """``127.X.Y`` (or ``127.X.Y.0/24``) → the block; raises ``ValueError`` saying what is wrong."""
        cleaned = text.strip().removesuffix(".0/24")
        parts = cleaned.split(".")
        try:
            network = ipaddress.IPv4Network(f"{cleaned}.0/24") if len(parts) == 3 else None
        except ValueError:
            network = None
        if network is None or not network.subnet_of(ipaddress.IPv4Network("127.0.0.0/8")):
            raise ValueError(f"address block {text!r}: give three numbers of a loopback /24, like 127.5.3")
        if cleaned == "127.0.0":
            raise ValueError(
                "address block 127.0.0 holds 127.0.0.1, which every other tool uses: pick another"
            )
        return cls(cleaned)

    def address(self, host: int) -> str:
        return f"{self.prefix}.{host}"

    def first_addresses_free(self) -> bool:
        return all(_ports_free(self.address(host)) for host in range(1, _PROBED_HOSTS + 1))

    @classmethod
    def pick(cls, rng: random.Random | None = None) -> AddressBlock:
        """A block whose first addresses are free on both etcd ports, drawn at random (seeded by the
        pid, so two providers started at once draw differently)."""
        rng = rng or random.Random(os.getpid() ^ int.from_bytes(os.urandom(4), "big"))
        for _ in range(_PICK_ATTEMPTS):
            block = cls(f"127.{rng.randint(1, 254)}.{rng.randint(0, 255)}")
            if block.first_addresses_free():
                return block
        raise RuntimeError(f"no free loopback address block found in {_PICK_ATTEMPTS} draws")

    @classmethod
    def for_state_dir(cls, state_dir: Path, requested: str | None) -> AddressBlock:
        """The block recorded under ``state_dir`` (a restarted provider keeps its members' addresses),
        else ``requested``, else one picked at random; a new block is checked free and recorded."""
        record = state_dir / BLOCK_FILE
        if record.is_file():
            recorded = cls.parse(str(json.loads(record.read_text())["block"]))
            if requested is not None and cls.parse(requested) != recorded:
                raise ValueError(
                    f"--address-block {requested}: {state_dir} already holds members in {recorded.prefix}; "
                    "use that block or another state directory"
                )
            return recorded
        if requested is not None:
            block = cls.parse(requested)
            if not block.first_addresses_free():
                raise ValueError(
                    f"--address-block {requested}: ports {ETCD_CLIENT_PORT}/{ETCD_PEER_PORT} are taken on "
                    f"{block.address(1)} … {block.address(_PROBED_HOSTS)} (another world?): "
                    "pick another block"
                )
        else:
            block = cls.pick()
        state_dir.mkdir(parents=True, exist_ok=True)
        _write_json(record, {"block": block.prefix, "next": 1})
        return block


class AddressAllocator:
    """Hands out the addresses of one provider's :class:`AddressBlock` (see the module docstring).

    ``in_use`` lists the addresses member records hold right now. :meth:`allocate` is synchronous,
    so within one event loop two allocations never see the same free address.
    """

    def __init__(self, state_dir: Path, block: AddressBlock, in_use: Callable[[], Iterable[str]]) -> None:
        self.block = block
        self._record = state_dir / BLOCK_FILE
        self._in_use = in_use

    def allocate(self) -> str:
        raw = json.loads(self._record.read_text())
        start = int(raw.get("next", 1))
        taken = set(self._in_use())
        for offset in range(_HOSTS_PER_BLOCK):
            host = (start - 1 + offset) % _HOSTS_PER_BLOCK + 1
            address = self.block.address(host)
            if address not in taken:
                _write_json(self._record, {"block": self.block.prefix, "next": host % _HOSTS_PER_BLOCK + 1})
                return address
        raise RuntimeError(f"every address of {self.block.prefix}.0/24 holds a member")


@dataclass(frozen=True)
class MemberCertificate:
    """A member's certificate files: serving on both ports and authenticating to its peers."""

    cert_file: Path
    key_file: Path
    ca_file: Path

    def flags(self) -> dict[str, list[str]]:
        """etcd's flags for TLS with client-certificate auth on the client and the peer port."""
        return {
            "cert-file": [str(self.cert_file)],
            "key-file": [str(self.key_file)],
            "trusted-ca-file": [str(self.ca_file)],
            "client-cert-auth": ["true"],
            "peer-cert-file": [str(self.cert_file)],
            "peer-key-file": [str(self.key_file)],
            "peer-trusted-ca-file": [str(self.ca_file)],
            "peer-client-cert-auth": ["true"],
        }


class EtcdPKI:
    """The CA of one provider's etcd clusters, kept under ``<state_dir>/_pki/`` across restarts."""

    def __init__(self, state_dir: Path) -> None:
        self.directory = state_dir / PKI_DIR
        self.ca_file = self.directory / "ca.crt"
        self.client_cert_file = self.directory / "client.crt"
        self.client_key_file = self.directory / "client.key"
        ca_key = self.directory / "ca.key"
        if self.ca_file.is_file() and ca_key.is_file():
            self._ca = CertificateAuthority.load(
                self.ca_file.read_bytes(), ca_key.read_bytes(), valid_for=CERTIFICATE_LIFETIME
            )
        else:
            self._ca = CertificateAuthority.new("cpo-localmachine-etcd-ca", valid_for=CERTIFICATE_LIFETIME)
            CertPair(self._ca.cert_pem, self._ca.key_pem).write(self.directory, "ca.crt", "ca.key")
        if not (self.client_cert_file.is_file() and self.client_key_file.is_file()):
            self._ca.client_cert("cpo-etcd-client").write(self.directory, "client.crt", "client.key")

    def member_certificate(self, directory: Path, address: str, name: str) -> MemberCertificate:
        """The certificate of the member at ``address`` in its folder, issued when missing.

        It names ``127.0.0.1`` beside the member's address: Linux sends every connection between
        loopback addresses from 127.0.0.1, and a member checks a peer's certificate against the
        address the connection comes from.
        """
        cert_file, key_file = directory / "tls" / "member.crt", directory / "tls" / "member.key"
        if not (cert_file.is_file() and key_file.is_file()):
            self._ca.peer_cert([address, "127.0.0.1"], name).write(
                directory / "tls", "member.crt", "member.key"
            )
        return MemberCertificate(cert_file, key_file, self.ca_file)

    def client_options(self, timeout: float) -> EtcdClientOptions:
        """How the provider's own etcd calls authenticate: the client certificate of the Secret."""
        return EtcdClientOptions(
            timeout=timeout,
            ca_file=self.ca_file,
            cert_file=self.client_cert_file,
            key_file=self.client_key_file,
        )

    def client_secret(self, name: str, namespace: str) -> JSON:
        """The Secret handing the operator the client certificate (``tls.crt``, ``tls.key``) and
        the CA (``ca.crt``), the keys :mod:`controllers.etcd.tls` reads."""
        data = {
            "tls.crt": self.client_cert_file.read_bytes(),
            "tls.key": self.client_key_file.read_bytes(),
            "ca.crt": self.ca_file.read_bytes(),
        }
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "type": "kubernetes.io/tls",
            "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
        }


def recorded_hosts(state_dir: Path) -> list[str]:
    """The addresses the member records under ``state_dir`` (``<cluster>/<member>/member.json``) hold."""
    hosts = []
    for state_file in state_dir.glob("*/*/member.json"):
        try:
            hosts.append(urlsplit(str(json.loads(state_file.read_text())["clientURL"])).hostname or "")
        except (OSError, ValueError, KeyError):
            continue  # a record being written or removed right now; its member holds no address yet
    return hosts


def _write_json(path: Path, value: JSON) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(value) + "\n", encoding="utf-8")
    os.replace(temporary, path)  # atomic: a provider killed mid-write leaves the old or the new file


__all__ = [
    "DEFAULT_CLIENT_SECRET",
    "ETCD_CLIENT_PORT",
    "ETCD_PEER_PORT",
    "AddressAllocator",
    "AddressBlock",
    "EtcdPKI",
    "MemberCertificate",
    "node_name",
    "recorded_hosts",
]
