"""One etcd client per etcd cluster, kept across passes, counted against real etcd.

Each pass of either controller reads the member list; the tests count passes by those reads and
clients by their construction (both spied on the real class, every call goes through), counting
only what the controllers (modules under ``controllers``) make and read, not the provider. The
etcd-quorum-hook controller, against etcd serving TLS with client certificates: many passes make
one client; a rotated certificate Secret (a new resourceVersion) makes one more and closes the
old; a deleted ControlPlane and a stopped manager leave no client open. The ControlPlane
controller, with the local provider: one client for a whole bootstrap and many passes after it.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.controlplane import API_VERSION as CP_API_VERSION
from api.machine import API_VERSION
from controllers.etcd.client import EtcdClient, Member
from controllers.etcd.membership import CLIENT_URL_ANNOTATION, PEER_URL_ANNOTATION
from runtime.client import Client
from tests.support.controlplane import controlplane as cp_of_local_machines
from tests.support.controlplane import get_cp, running_controlplane
from tests.support.etcd import tls_etcd
from tests.support.etcdquorum import (
    controlplane,
    cp_machine,
    etcd_condition,
    quick_options,
    running_quorum_controller,
)
from tests.support.localmachine import provider_options
from tests.support.poll import eventually

pytestmark = pytest.mark.slow


def _called_from_controllers(depth: int) -> bool:
    return str(sys._getframe(depth).f_globals.get("__name__", "")).startswith("controllers.")


class ClientSpy:
    """Every :class:`EtcdClient` the controllers made, and how many member lists they read."""

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
        if _called_from_controllers(2):
            found.clients.append(self)

    async def member_list(self: EtcdClient) -> list[Member]:
        if _called_from_controllers(2):
            found.member_lists += 1
        return await original_member_list(self)

    monkeypatch.setattr(EtcdClient, "__init__", init)
    monkeypatch.setattr(EtcdClient, "member_list", member_list)
    yield found


async def test_one_client_per_cluster_across_passes_renewed_only_with_the_secret(
    kube: Client, namespace: str, tmp_path: Path, spy: ClientSpy
) -> None:
    etcd = tls_etcd(tmp_path, "etcd-pool-test-ca")
    supervisor = etcd.supervisor
    secret = etcd.secret("etcd-client", namespace)
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

            await eventually(healthy, timeout=15, message="etcd read over TLS")
            first = spy.member_lists
            await eventually(
                lambda: _now(spy.member_lists >= first + 5), timeout=15, message="five more passes"
            )
            assert len(spy.clients) == 1, "one client for every pass"
            kept = spy.clients[0]

            # A rotated Secret (same data, new resourceVersion): one new client, the old one closed.
            await kube.patch(
                "v1", "Secret", "etcd-client", {"metadata": {"labels": {"rotated": "1"}}}, namespace
            )
            await eventually(
                lambda: _now(len(spy.clients) == 2), timeout=15, message="a client for the new Secret"
            )
            assert kept._session is None
            second = spy.member_lists
            await eventually(
                lambda: _now(spy.member_lists >= second + 3), timeout=15, message="three more passes"
            )
            assert len(spy.clients) == 2 and spy.open_clients() == [spy.clients[1]]

            # The ControlPlane goes away: its client is closed.
            await kube.delete(CP_API_VERSION, "ControlPlane", "pool", namespace)
            await eventually(
                lambda: _now(not spy.open_clients()),
                timeout=15,
                message="client closed with its ControlPlane",
            )

            # Back again, and then the manager stops: nothing is left open.
            await kube.create(controlplane("pool", namespace, 1) | {"spec": cp["spec"]})
            await eventually(lambda: _now(len(spy.open_clients()) == 1), timeout=15, message="a client again")
        assert spy.open_clients() == [], "the manager's stop closes every client"
        assert len(spy.clients) == 3
    finally:
        await supervisor.stop_all()


async def test_the_controlplane_controller_keeps_one_client_through_bootstrap_and_passes(
    kube: Client, namespace: str, provider_state_dir: Path, spy: ClientSpy
) -> None:
    name = f"cp{secrets.token_hex(3)}"
    async with running_controlplane(kube, namespace, provider_options(provider_state_dir)):
        await kube.create(cp_of_local_machines(name, namespace, replicas=1))

        async def available() -> bool:
            status = ((await get_cp(kube, name, namespace)) or {}).get("status") or {}
            return status.get("availableReplicas") == 1

        await eventually(available, timeout=60, message="one available replica")
        first = spy.member_lists
        await eventually(lambda: _now(spy.member_lists >= first + 5), timeout=30, message="five more passes")
        assert len(spy.clients) == 1, "one client for the bootstrap and every pass after it"
        assert len(spy.open_clients()) == 1
    assert spy.open_clients() == [], "the manager's stop closes the client"


async def _now(value: Any) -> Any:
    return value
