"""``EtcdClient.move_leader`` hands etcd leadership to another voter, on a real two-member cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.etcd.client import EtcdClient, EtcdError
from providers.localmachine.etcd_process import EtcdSupervisor
from tests.integration.conftest import etcd_options
from tests.support.etcd import promote_when_in_sync
from tests.support.poll import eventually

pytestmark = pytest.mark.slow


async def test_move_leader_hands_leadership_to_the_target_and_a_follower_refuses(tmp_path: Path) -> None:
    supervisor = EtcdSupervisor(tmp_path / "etcd", etcd_options())
    try:
        first = await supervisor.bootstrap("m0")
        async with EtcdClient([first.client_url]) as etcd:
            second = await supervisor.join("m1", etcd)
            assert second.member_id is not None
            await promote_when_in_sync(etcd, second.member_id)
            endpoints = [first.client_url, second.client_url]
            statuses = [await etcd.endpoint_status(endpoint) for endpoint in endpoints]
            leader = next(status for status in statuses if status.is_leader)
            follower = next(status for status in statuses if not status.is_leader)

            with pytest.raises(EtcdError):
                await etcd.move_leader(follower.endpoint, leader.member_id)  # only the leader may

            await etcd.move_leader(leader.endpoint, follower.member_id)

            async def moved() -> bool:
                return (await etcd.endpoint_status(follower.endpoint)).is_leader

            await eventually(moved, timeout=10, message="leadership on the former follower")
    finally:
        await supervisor.stop_all()
