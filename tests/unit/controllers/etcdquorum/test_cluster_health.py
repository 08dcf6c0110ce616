"""The EtcdClusterHealthy summary (controllers/etcdquorum/cluster_health.py): healthy, members
unhealthy, quorum lost, members without a Machine."""

from __future__ import annotations

from controllers.etcdquorum.cluster_health import cluster_health
from controllers.etcdquorum.rules import (
    MemberState,
)
from tests.support.machine_rows import MemberRow as M
from tests.support.machine_rows import quorum_cluster as cluster


def test_cluster_health() -> None:
    members, _ = cluster(M(0), M(1), M(2))
    health = cluster_health(members, [])
    assert (health.status, health.reason) == ("True", "EtcdHealthy")
    assert health.message.startswith("3 members: 3 voters (3 healthy, quorum 2), 0 learners")
    members, _ = cluster(M(0), M(1, healthy=False), M(2))
    health = cluster_health(members, ["NOSPACE on 100"])
    assert (health.status, health.reason) == ("False", "MembersUnhealthy")
    assert "unhealthy: m1 (101)" in health.message and "alarms: NOSPACE on 100" in health.message
    members, _ = cluster(M(0, healthy=False), M(1, healthy=False), M(2))
    assert cluster_health(members, []).reason == "QuorumLost"
    members, _ = cluster(M(0), M(1), M(2))
    members[2] = MemberState(members[2].member, None, True)
    assert cluster_health(members, []).reason == "MembersWithoutMachine"
