"""What a ``MemberRemoved`` event says about etcd leadership (controllers/etcdquorum/report.py,
:func:`removal_leadership`)."""

from __future__ import annotations

from controllers.etcd.client import EndpointStatus
from controllers.etcdquorum.report import removal_leadership
from tests.support.machine_rows import MemberRow as M
from tests.support.machine_rows import quorum_cluster as cluster


def status(leader: int, term: int) -> EndpointStatus:
    return EndpointStatus(
        endpoint="https://10.0.0.1:2379",
        member_id=0x101,
        leader=leader,
        raft_index=10,
        raft_term=term,
        raft_applied_index=10,
        db_size=0,
        db_size_in_use=0,
        version="3.5.0",
        is_learner=False,
        errors=(),
    )


def test_it_names_the_leader_and_the_terms_before_and_after() -> None:
    members, _ = cluster(M(0), M(1), M(2))
    assert (
        removal_leadership(members, status(members[1].member.id, 7), status(members[1].member.id, 7))
        == f"leader before: {members[1].label}, term 7 → 7"
    )


def test_an_election_shows_as_a_later_term() -> None:
    members, _ = cluster(M(0), M(1), M(2))
    said = removal_leadership(members, status(members[0].member.id, 7), status(members[2].member.id, 8))
    assert said == f"leader before: {members[0].label}, term 7 → 8"


def test_reads_that_named_no_leader_say_so() -> None:
    members, _ = cluster(M(0), M(1), M(2))
    assert removal_leadership(members, None, None) == "leader before: unknown, term ? → ?"
    assert removal_leadership([], status(0xABC, 3), None) == "leader before: abc, term 3 → ?"
