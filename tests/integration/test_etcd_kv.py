"""Keys and values with a real etcd: what the demo's writer and the chaos campaign's read-back use."""

from __future__ import annotations

from controllers.etcd.client import EtcdClient
from providers.localmachine.etcd_process import EtcdSupervisor


async def test_put_get_and_a_paged_prefix_read(etcd_supervisor: EtcdSupervisor) -> None:
    member = await etcd_supervisor.bootstrap("kv0")
    async with EtcdClient([member.client_url]) as etcd:
        revisions = [await etcd.put(f"/p/{index:03d}", f"v{index}") for index in range(25)]
        await etcd.put("/q/outside", "not under the prefix")
        assert revisions == sorted(revisions) and len(set(revisions)) == 25
        assert await etcd.get("/p/007") == ("v7", revisions[7])
        assert await etcd.get("/p/missing") is None

        whole = await etcd.get_prefix("/p/")
        paged = await etcd.get_prefix("/p/", page=4)
        assert paged == whole
        assert sorted(whole) == [f"/p/{index:03d}" for index in range(25)]
        assert whole["/p/024"] == ("v24", revisions[24])
