"""One etcd client per etcd cluster, kept across passes: the etcd-quorum-hook controller against a
real etcd serving TLS with client certificates, counting the clients it makes.

Each pass reads the member list; the test counts passes by those reads and clients by their
construction (both spied on the real class, calls go through). Many passes make one client; a
rotated certificate Secret (a new resourceVersion) makes one more and closes the old; a deleted
ControlPlane and a stopped manager leave no client open.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.controlplane import API_VERSION as CP_API_VERSION
from api.machine import API_VERSION
from controllers.etcd.client import EtcdClient, EtcdClientOptions, Member
from controllers.etcd.membership import CLIENT_URL_ANNOTATION, PEER_URL_ANNOTATION
from providers.localmachine.etcd_process import EtcdProcessOptions, EtcdServerTLS, EtcdSupervisor
from runtime.client import Client
from runtime.envtest.certs import CertificateAuthority
from tests.support.etcd import etcd_serving_cert
from tests.support.etcdquorum import (
    controlplane,
    cp_machine,
    etcd_condition,
    quick_options,
    running_quorum_controller,
)
from tests.support.localmachine import eventually

pytestmark = pytest.mark.slow


class ClientSpy:
    """Every :class:`EtcdClient` made, and how many member lists were read, while installed."""

    def __init__(self) -> None:
        self.clients: list[EtcdClient] = []
        self.member_lists = 0

    def open_clients(self) -> list[EtcdClient]:
        return [c for c in self.clients if c._session is not None and not c._session.closed]


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[ClientSpy]:
    found = ClientSpy()
    original_init = EtcdClient.__init__
    original_member_list = EtcdClient.member_list

    def init(self: EtcdClient, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        found.clients.append(self)

    async def member_list(self: EtcdClient) -> list[Member]:
        found.member_lists += 1
        return await original_member_list(self)

    monkeypatch.setattr(EtcdClient, "__init__", init)
    monkeypatch.setattr(EtcdClient, "member_list", member_list)
    yield found


async def test_one_client_per_cluster_across_passes_renewed_only_with_the_secret(
    kube: Client, namespace: str, tmp_path: Path, spy: ClientSpy
) -> None:
    authority = CertificateAuthority.new("etcd-pool-test-ca")
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(authority.cert_pem)
    serving_cert, serving_key = etcd_serving_cert(authority).write(tmp_path / "server")
    client = authority.client_cert("etcd-quorum-hook")
    client_cert, client_key = client.write(tmp_path / "client")
    supervisor = EtcdSupervisor(
        tmp_path / "etcd",
        EtcdProcessOptions(
            stop_grace_period=2,
            client_tls=EtcdServerTLS(serving_cert, serving_key, client_ca_file=ca_file),
            client_options=EtcdClientOptions(ca_file=ca_file, cert_file=client_cert, key_file=client_key),
        ),
    )
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "etcd-client", "namespace": namespace},
        "type": "kubernetes.io/tls",
        "data": {
            "tls.crt": base64.b64encode(client.cert_pem).decode(),
            "tls.key": base64.b64encode(client.key_pem).decode(),
            "ca.crt": base64.b64encode(authority.cert_pem).decode(),
        },
    }
    try:
        member = await supervisor.bootstrap("pool0")
        await kube.create(secret)
        cp = controlplane("pool", namespace, 1)
        cp["spec"]["etcd"] = {"tlsSecretRef": {"name": "etcd-client"}}
        await kube.create(cp)
        obj = cp_machine("pool0", namespace)
        # No spec.etcd.endpoints: the endpoint comes from the Machine.
        obj["metadata"]["annotations"] = {
            CLIENT_URL_ANNOTATION: member.client_url,
            PEER_URL_ANNOTATION: member.peer_url,
        }
        await kube.create(obj)
        await kube.patch_status(API_VERSION, "Machine", "pool0", {"status": {"phase": "Running"}}, namespace)
        spy.clients.clear()
        async with running_quorum_controller(kube, namespace, quick_options()):

            async def healthy() -> bool:
                return (await etcd_condition(kube, "pool", namespace)).get("status") == "True"

            await eventually(healthy, within=15, what="etcd read over TLS")
            first = spy.member_lists
            await eventually(lambda: _now(spy.member_lists >= first + 5), within=15, what="five more passes")
            assert len(spy.clients) == 1, "one client for every pass"
            kept = spy.clients[0]

            # A rotated Secret (same data, new resourceVersion): one new client, the old one closed.
            await kube.patch(
                "v1", "Secret", "etcd-client", {"metadata": {"labels": {"rotated": "1"}}}, namespace
            )
            await eventually(
                lambda: _now(len(spy.clients) == 2), within=15, what="a client for the new Secret"
            )
            assert kept._session is None
            second = spy.member_lists
            await eventually(
                lambda: _now(spy.member_lists >= second + 3), within=15, what="three more passes"
            )
            assert len(spy.clients) == 2 and spy.open_clients() == [spy.clients[1]]

            # The ControlPlane goes away: its client is closed.
            await kube.delete(CP_API_VERSION, "ControlPlane", "pool", namespace)
            await eventually(
                lambda: _now(not spy.open_clients()), within=15, what="client closed with its ControlPlane"
            )

            # Back again, and then the manager stops: nothing is left open.
            await kube.create(controlplane("pool", namespace, 1) | {"spec": cp["spec"]})
            await eventually(lambda: _now(len(spy.open_clients()) == 1), within=15, what="a client again")
        assert spy.open_clients() == [], "the manager's stop closes every client"
        assert len(spy.clients) == 3
    finally:
        await supervisor.stop_all()


async def _now(value: Any) -> Any:
    return value
