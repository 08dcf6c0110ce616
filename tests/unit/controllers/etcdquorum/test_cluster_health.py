"""The EtcdClusterHealthy summary (controllers/etcdquorum/cluster_health.py): healthy, members
unhealthy, quorum lost, members without a Machine."""

from __future__ import annotations

from dataclasses import dataclass

from controllers.etcd.client import Member
from controllers.etcdquorum.cluster_health import cluster_health
from controllers.etcdquorum.rules import (
    HOOK_OWNER,
    GuardedMachine,
    MemberState,
)


def member(index: int, *, learner: bool = False, started: bool = True, host: str = "10.0.0.{i}") -> Member:
    address = host.format(i=index)
    literal = f"[{address}]" if ":" in address else address
    return Member(
        id=0x100 + index,
        name=f"m{index}" if started else "",
        peer_urls=(f"https://{literal}:2380",),
        client_urls=(f"https://{literal}:2379",) if started else (),
        is_learner=learner,
    )


@dataclass(frozen=True)
class M:
    """One row of a removal table: a member and its Machine."""

    index: int
    learner: bool = False
    healthy: bool = True
    deleting: bool = False
    hook: bool = True
    zone: str | None = None


def cluster(*rows: M) -> tuple[list[MemberState], dict[str, GuardedMachine]]:
    members = [MemberState(member(r.index, learner=r.learner), f"m{r.index}", r.healthy) for r in rows]
    machines = {
        f"m{r.index}": GuardedMachine(
            name=f"m{r.index}",
            deleting=r.deleting,
            running=True,
            hook_owner=HOOK_OWNER if r.hook else None,
            failure_domain=r.zone,
        )
        for r in rows
    }
    return members, machines


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
