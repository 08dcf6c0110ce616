"""The etcd client counts its requests and connections, against a real etcd member; its reads keep
their connections.

``cpo_etcd_client_requests_total`` moves by one per HTTP request, labelled with the controller
whose reconcile sent it, the gRPC method and the result; an endpoint that does not answer counts as
``unreachable``, an etcd refusal as ``refused``. ``cpo_etcd_client_connections_opened_total`` moves
with the TCP connections the client opens.
"""

from __future__ import annotations

import pytest

from controllers.etcd.client import EtcdClient, MemberNotFound
from providers.localmachine.etcd_process import EtcdSupervisor
from runtime.localproc import free_port
from runtime.log import log_context
from runtime.metrics import registry

CONTROLLER = "etcd-metrics-test"


def requests(method: str, result: str) -> float:
    value = registry.get_sample_value(
        "cpo_etcd_client_requests_total", {"controller": CONTROLLER, "method": method, "result": result}
    )
    return value or 0.0


def connections_opened() -> float:
    return (
        registry.get_sample_value("cpo_etcd_client_connections_opened_total", {"controller": CONTROLLER})
        or 0.0
    )


async def test_requests_are_counted_by_controller_method_and_result(etcd_supervisor: EtcdSupervisor) -> None:
    member = await etcd_supervisor.bootstrap("count0")
    before = {
        key: requests(*key)
        for key in (
            ("MemberList", "ok"),
            ("Range", "ok"),
            ("MemberRemove", "refused"),
            ("Status", "unreachable"),
        )
    }
    opened = connections_opened()
    async with EtcdClient([member.client_url]) as etcd:
        with log_context(controller=CONTROLLER):
            for _ in range(3):
                await etcd.member_list()
            await etcd.health()
            with pytest.raises(MemberNotFound):
                await etcd.remove(0xDEAD)
            with pytest.raises(Exception, match="no status"):
                await etcd.endpoint_status(f"http://127.0.0.1:{free_port()}")
        # Outside a reconcile the controller label is empty: not counted under ours.
        await etcd.member_list()

    assert requests("MemberList", "ok") - before[("MemberList", "ok")] == 3
    assert requests("Range", "ok") - before[("Range", "ok")] == 1
    assert requests("MemberRemove", "refused") - before[("MemberRemove", "refused")] == 1
    assert requests("Status", "unreachable") - before[("Status", "unreachable")] == 1
    # Five requests reached etcd under our label, each on a connection of its own or a kept one.
    assert 1 <= connections_opened() - opened <= 5


async def test_reads_keep_one_connection_per_member_and_changes_open_their_own(
    etcd_supervisor: EtcdSupervisor,
) -> None:
    """A settled ControlPlane is read every few seconds: a connection per read is what came back
    if reads stop reusing their connection. A restarted member does not make a read fail."""
    member = await etcd_supervisor.bootstrap("keep0")
    async with EtcdClient([member.client_url]) as etcd:
        with log_context(controller=CONTROLLER):
            opened = connections_opened()
            for _ in range(10):
                await etcd.member_list()
                await etcd.health()
                await etcd.alarms()
                await etcd.endpoint_status(member.client_url)
            assert connections_opened() - opened == 1

            # A change goes on a connection of its own; the reads' connection stays.
            await etcd.put("/keep/one", "1")
            await etcd.member_list()
            assert connections_opened() - opened == 2

            # The member goes away and comes back on the same port: the next read is served.
            await etcd_supervisor.stop("keep0", grace_period=5)
            await etcd_supervisor.start("keep0")
            failed_before = requests("MemberList", "unreachable")
            members = await etcd.member_list()
            assert [m.name for m in members] == ["keep0"]
            assert requests("MemberList", "unreachable") == failed_before
            (health,) = await etcd.health()
            assert health.healthy, health.error
    # Closing the client closes both sessions.
    assert etcd._session is None and etcd._fresh_session is None
