"""Membership with real etcd processes: learners join, get promoted once in sync, and leave.

Each test builds its own small cluster on loopback through :class:`EtcdSupervisor`.
"""

from __future__ import annotations

import base64
from pathlib import Path

import aiohttp
import pytest

from controllers.etcd.client import (
    Alarm,
    EtcdClient,
    EtcdClientOptions,
    LearnerNotInSync,
    Member,
    MemberNotFound,
    NotALearner,
    PeerURLExists,
    TooManyLearners,
    Unavailable,
    UnhealthyCluster,
)
from providers.localmachine.etcd_process import EtcdServerTLS, EtcdSupervisor
from runtime.envtest.certs import CertificateAuthority
from tests.integration.conftest import etcd_options
from tests.support.etcd import etcd_serving_cert, join_when_healthy, promote_when_in_sync
from tests.support.poll import eventually

pytestmark = pytest.mark.slow


def learner_limit_supervisor(state_dir: Path) -> tuple[EtcdSupervisor, int]:
    """A supervisor allowing two learners when the etcd binary can, and the learner limit in force."""
    try:
        return EtcdSupervisor(state_dir, etcd_options(max_learners=2)), 2
    except ValueError:
        return EtcdSupervisor(state_dir, etcd_options()), 1  # etcd < 3.6: one learner at a time


async def test_learners_join_then_are_promoted_into_a_three_voter_cluster(tmp_path: Path) -> None:
    supervisor, learner_limit = learner_limit_supervisor(tmp_path / "etcd")
    try:
        first = await supervisor.bootstrap("m0")
        async with EtcdClient([first.client_url]) as etcd:
            m1 = await supervisor.join("m1", etcd)
            assert m1.member_id is not None and m1.learner

            if learner_limit >= 2:
                m2 = await join_when_healthy(supervisor, "m2", etcd)
                members = {member.name: member for member in await etcd.member_list()}
                assert sorted(members) == ["m0", "m1", "m2"]
                assert [name for name, member in sorted(members.items()) if member.is_learner] == ["m1", "m2"]
            else:
                # etcd 3.5 refuses a second learner before the member is added or any process started.
                with pytest.raises(TooManyLearners):
                    await supervisor.join("m2", etcd)
                assert supervisor.get("m2") is None
                members = {member.name: member for member in await etcd.member_list()}
                assert sorted(members) == ["m0", "m1"]
                assert members["m1"].is_learner and not members["m0"].is_learner
                assert members["m1"].client_urls == (m1.client_url,)
                assert members["m1"].peer_urls == (m1.peer_url,)

            await promote_when_in_sync(etcd, m1.member_id)
            if learner_limit < 2:
                m2 = await join_when_healthy(supervisor, "m2", etcd)
                members = {member.name: member for member in await etcd.member_list()}
                assert sorted(members) == ["m0", "m1", "m2"]
                assert [name for name, member in sorted(members.items()) if member.is_learner] == ["m2"]
            assert m2.member_id is not None
            await promote_when_in_sync(etcd, m2.member_id)

            voters = await etcd.member_list()
            assert sorted(member.name for member in voters) == ["m0", "m1", "m2"]
            assert not any(member.is_learner for member in voters)

            # Every member answers, agrees on one leader, and its health read (linearizable) passes.
            endpoints = [member.client_url for member in supervisor.members()]
            statuses = [await etcd.endpoint_status(endpoint) for endpoint in endpoints]
            assert {status.member_id for status in statuses} == {member.id for member in voters}
            assert len({status.leader for status in statuses}) == 1
            assert sum(status.is_leader for status in statuses) == 1
            assert all(status.raft_index > 0 and status.db_size > 0 for status in statuses)
            health = await etcd.health(endpoints)
            assert all(check.healthy for check in health), health

            # With two of three voters frozen, the third cannot read linearizably: unhealthy.
            leader = next(status for status in statuses if status.is_leader)
            others = [member.name for member in supervisor.members() if member.member_id != leader.member_id]
            for name in others:
                assert await supervisor.pause(name)
            async with EtcdClient([leader.endpoint], EtcdClientOptions(timeout=1.0)) as short:
                [check] = await short.health()
                assert not check.healthy and check.error, check
            for name in others:
                assert await supervisor.resume(name)

            async def all_healthy() -> bool:
                return all(check.healthy for check in await etcd.health(endpoints))

            await eventually(all_healthy, timeout=20, message="all three members healthy again after SIGCONT")

            # Removing a voter shrinks the member list; the process is the caller's to stop. etcd
            # refuses ("unhealthy cluster") until every voter has been connected for 5 s again.
            removed = supervisor.get("m2")
            assert removed is not None and removed.member_id is not None
            member_id = removed.member_id

            async def remove() -> list[Member] | None:
                try:
                    return await etcd.remove(member_id)
                except UnhealthyCluster:
                    return None

            after = await eventually(remove, timeout=20, message="m2 removed")
            assert sorted(member.name for member in after) == ["m0", "m1"]
            with pytest.raises(MemberNotFound):
                await etcd.remove(removed.member_id)
    finally:
        await supervisor.stop_all()


async def test_promotion_of_a_learner_that_has_not_caught_up_is_refused(
    etcd_supervisor: EtcdSupervisor,
) -> None:
    first = await etcd_supervisor.bootstrap("m0")
    async with EtcdClient([first.client_url]) as etcd:
        # A learner whose process never starts has replicated nothing: etcd must refuse it.
        added = await etcd.add_learner(["http://127.0.0.1:1"])
        assert added.member.is_learner and not added.member.started
        initial_cluster = added.initial_cluster("late").split(",")
        assert sorted(initial_cluster) == sorted([f"m0={first.peer_url}", "late=http://127.0.0.1:1"])
        with pytest.raises(LearnerNotInSync) as refused:
            await etcd.promote(added.member.id)
        assert "in sync with leader" in refused.value.message
        assert [member.is_learner for member in await etcd.member_list() if member.id == added.member.id] == [
            True
        ]

        with pytest.raises(PeerURLExists):
            await etcd.add_learner(["http://127.0.0.1:1"])
        assert first.member_id is not None
        with pytest.raises(NotALearner):
            await etcd.promote(first.member_id)
        with pytest.raises(MemberNotFound):
            await etcd.promote(12345)

        remaining = await etcd.remove(added.member.id)
        assert [member.name for member in remaining] == ["m0"]


async def test_status_alarms_health_and_endpoint_failover(etcd_supervisor: EtcdSupervisor) -> None:
    first = await etcd_supervisor.bootstrap("m0")
    assert first.member_id is not None
    async with EtcdClient([first.client_url]) as etcd:
        status = await etcd.endpoint_status(first.client_url)
        assert status.member_id == first.member_id == status.leader and status.is_leader
        assert status.version.split(".")[0] == "3"
        assert status.raft_term >= 1 and status.raft_index >= status.raft_applied_index > 0
        assert status.db_size >= status.db_size_in_use > 0
        assert status.errors == () and not status.is_learner
        assert await etcd.alarms() == []
        [check] = await etcd.health()
        assert check.healthy and check.error is None and not check.learner

        [member] = await etcd.member_list()
        assert (member.id, member.name, member.is_learner) == (first.member_id, "m0", False)
        assert member.client_urls == (first.client_url,) and member.peer_urls == (first.peer_url,)

    # A dead endpoint first in the list: calls move on to the next endpoint.
    dead = "http://127.0.0.1:1"
    async with EtcdClient([dead, first.client_url], EtcdClientOptions(timeout=2.0)) as etcd:
        assert [member.name for member in await etcd.member_list()] == ["m0"]
        checks = {check.endpoint: check for check in await etcd.health()}
        assert not checks[dead].healthy and checks[dead].error
        assert checks[first.client_url].healthy

    # A frozen member: every call times out per its timeout and says which endpoints failed.
    assert await etcd_supervisor.pause("m0")
    try:
        async with EtcdClient([dead, first.client_url], EtcdClientOptions(timeout=0.5)) as etcd:
            with pytest.raises(Unavailable) as unavailable:
                await etcd.member_list()
            assert set(unavailable.value.errors) == {dead, first.client_url}
            assert "0.5s" in unavailable.value.errors[first.client_url]
            with pytest.raises(Unavailable):
                await etcd.endpoint_status(first.client_url)
    finally:
        await etcd_supervisor.resume("m0")


async def test_tls_with_client_certificates(tmp_path: Path) -> None:
    authority = CertificateAuthority.new("etcd-test-ca")
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(authority.cert_pem)
    serving_cert, serving_key = etcd_serving_cert(authority).write(tmp_path / "server")
    client_cert, client_key = authority.client_cert("root").write(tmp_path / "client")
    trusted = EtcdClientOptions(ca_file=ca_file, cert_file=client_cert, key_file=client_key)
    supervisor = EtcdSupervisor(
        tmp_path / "etcd",
        etcd_options(
            client_tls=EtcdServerTLS(serving_cert, serving_key, client_ca_file=ca_file),
            client_options=trusted,
        ),
    )
    try:
        member = await supervisor.bootstrap("m0")
        assert member.client_url.startswith("https://127.0.0.1:")
        async with EtcdClient([member.client_url], trusted) as etcd:
            assert [m.name for m in await etcd.member_list()] == ["m0"]
            [check] = await etcd.health()
            assert check.healthy
            assert (await etcd.endpoint_status(member.client_url)).member_id == member.member_id

        # Without a client certificate etcd refuses the handshake.
        async with EtcdClient(
            [member.client_url], EtcdClientOptions(ca_file=ca_file, timeout=2)
        ) as anonymous:
            with pytest.raises(Unavailable):
                await anonymous.member_list()
        # A client that does not trust the serving certificate's CA refuses the server.
        other = tmp_path / "other-ca.crt"
        other.write_bytes(CertificateAuthority.new("other").cert_pem)
        untrusting = EtcdClientOptions(ca_file=other, cert_file=client_cert, key_file=client_key, timeout=2)
        async with EtcdClient([member.client_url], untrusting) as etcd:
            with pytest.raises(Unavailable) as refused:
                await etcd.member_list()
            assert "certificate" in str(refused.value).lower()
    finally:
        await supervisor.stop_all()


async def test_a_full_backend_raises_the_nospace_alarm(tmp_path: Path) -> None:
    quota = 256 * 1024
    supervisor = EtcdSupervisor(
        tmp_path / "etcd", etcd_options(extra_flags={"quota-backend-bytes": str(quota)})
    )
    try:
        member = await supervisor.bootstrap("m0")
        value = base64.b64encode(b"x" * 32 * 1024).decode()
        async with aiohttp.ClientSession() as http, EtcdClient([member.client_url]) as etcd:
            assert await etcd.alarms() == []
            for index in range(200):  # bounded: the quota is reached after a few dozen puts
                key = base64.b64encode(f"filler/{index}".encode()).decode()
                async with http.post(
                    f"{member.client_url}/v3/kv/put", json={"key": key, "value": value}
                ) as put:
                    if put.status != 200:
                        assert "database space exceeded" in await put.text()
                        break
            else:
                pytest.fail(f"{quota} bytes of quota never ran out")
            assert await etcd.alarms() == [Alarm(member_id=member.member_id or 0, alarm="NOSPACE")]
            status = await etcd.endpoint_status(member.client_url)
            assert any("NOSPACE" in error for error in status.errors), status.errors
    finally:
        await supervisor.stop_all()
