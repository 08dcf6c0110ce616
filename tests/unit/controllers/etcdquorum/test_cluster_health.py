"""The EtcdClusterHealthy summary (controllers/etcdquorum/cluster_health.py): healthy, members
unhealthy, quorum lost, members without a Machine."""

from __future__ import annotations

from controllers.etcdquorum.cluster_health import cluster_health
from controllers.etcdquorum.members_without_machine import KEPT_HEALTHY, Kept
from controllers.etcdquorum.rules import (
    WAIT_HEALTHY_VOTERS,
    MemberState,
    Wait,
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


def test_a_member_of_no_machine_that_stays_is_named_with_why_before_the_waits() -> None:
    members, _ = cluster(M(0), M(1), M(2))
    orphan = MemberState(members[2].member, None, True)
    kept = Kept(orphan, KEPT_HEALTHY, "member m2 (102) has no Machine but is healthy")
    waits = [Wait("m0", WAIT_HEALTHY_VOTERS, "held")]
    health = cluster_health([*members[:2], orphan], [], waits, [kept])
    assert (health.status, health.reason) == ("False", "MembersWithoutMachine")
    assert "no Machine, kept (Healthy): member m2 (102) has no Machine but is healthy" in health.message
    assert health.message.index("kept (Healthy)") < health.message.index("waiting (")
