"""The realistic mode's pieces: address blocks, their allocation, the PKI and the options."""

from __future__ import annotations

import base64
import ipaddress
import json
import random
import socket
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from providers.localmachine import LocalMachineOptions
from providers.localmachine.etcd_process import EtcdProcessOptions
from providers.localmachine.realistic import (
    BLOCK_FILE,
    DEFAULT_CLIENT_SECRET,
    AddressAllocator,
    AddressBlock,
    EtcdPKI,
    node_name,
)


def test_a_node_is_named_after_its_address_as_clouds_name_instances() -> None:
    assert node_name("127.5.3.1") == "ip-127-5-3-1"


@pytest.mark.parametrize("text", ["127.5.3", "127.5.3.0/24", " 127.200.0 "])
def test_blocks_parse_as_a_loopback_slash_24(text: str) -> None:
    assert AddressBlock.parse(text).address(7).startswith("127.")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("10.0.0", "loopback /24"),
        ("127.5", "loopback /24"),
        ("127.5.300", "loopback /24"),
        ("127.0.0", "127.0.0.1"),
    ],
)
def test_bad_blocks_are_refused_saying_why(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AddressBlock.parse(text)


def test_a_picked_block_is_recorded_and_kept_by_a_restarted_provider(tmp_path: Path) -> None:
    first = AddressBlock.for_state_dir(tmp_path, None)
    assert json.loads((tmp_path / BLOCK_FILE).read_text())["block"] == first.prefix
    assert AddressBlock.for_state_dir(tmp_path, None) == first
    other = "127.9.9" if first.prefix != "127.9.9" else "127.9.8"
    with pytest.raises(ValueError, match="already holds members"):
        AddressBlock.for_state_dir(tmp_path, other)


def test_random_picks_differ_and_skip_blocks_whose_first_address_is_taken(tmp_path: Path) -> None:
    rng = random.Random(1)
    taken = AddressBlock.pick(random.Random(1))
    with socket.socket() as holder:
        holder.bind((taken.address(1), 2379))
        holder.listen()
        assert not taken.first_addresses_free()
        assert AddressBlock.pick(rng) != taken
        with pytest.raises(ValueError, match="taken"):
            AddressBlock.for_state_dir(tmp_path, taken.prefix)


def test_addresses_go_round_the_block_and_skip_those_members_hold(tmp_path: Path) -> None:
    block = AddressBlock.for_state_dir(tmp_path, "127.77.1")
    held = {"127.77.1.2"}
    allocator = AddressAllocator(tmp_path, block, lambda: held)
    assert allocator.allocate() == "127.77.1.1"
    assert allocator.allocate() == "127.77.1.3"  # .2 is held
    held.clear()
    # A freed address is not handed out at once: the next comes after the last one given.
    assert allocator.allocate() == "127.77.1.4"
    held.update(block.address(host) for host in range(1, 255))
    with pytest.raises(RuntimeError, match="every address"):
        allocator.allocate()


def test_the_pki_issues_member_certificates_for_their_address_and_a_client_secret(tmp_path: Path) -> None:
    pki = EtcdPKI(tmp_path)
    member = pki.member_certificate(tmp_path / "m0", "127.77.1.5", "ip-127-77-1-5")
    cert = x509.load_pem_x509_certificate(member.cert_file.read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.77.1.5") in sans.get_values_for_type(x509.IPAddress)
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH} <= set(usages)
    flags = member.flags()
    assert flags["client-cert-auth"] == ["true"] and flags["peer-client-cert-auth"] == ["true"]

    secret = pki.client_secret(DEFAULT_CLIENT_SECRET, "ns")
    assert secret["metadata"] == {"name": "etcd-client-tls", "namespace": "ns"}
    assert base64.b64decode(secret["data"]["ca.crt"]) == pki.ca_file.read_bytes()
    assert set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}
    # A restarted provider keeps its CA (the members' certificates must stay valid).
    assert EtcdPKI(tmp_path).ca_file.read_bytes() == pki.ca_file.read_bytes()


def test_realistic_options_resolve_tls_client_options_and_refuse_mixed_settings(tmp_path: Path) -> None:
    resolved = LocalMachineOptions(
        state_dir=tmp_path, realistic=True, address_block="127.77.2"
    ).with_defaults()
    assert resolved.realistic and resolved.address_block == AddressBlock("127.77.2")
    assert resolved.etcd_client_secret == DEFAULT_CLIENT_SECRET
    assert resolved.client_options.cert_file is not None and resolved.client_options.ca_file is not None
    with pytest.raises(ValueError, match="need realistic=True"):
        LocalMachineOptions(state_dir=tmp_path, address_block="127.77.2").with_defaults()
    with pytest.raises(ValueError, match=r"leave etcd\.host"):
        LocalMachineOptions(
            state_dir=tmp_path / "other", realistic=True, etcd=EtcdProcessOptions(host="127.0.0.1")
        ).with_defaults()
    assert not LocalMachineOptions(state_dir=tmp_path).with_defaults().realistic
