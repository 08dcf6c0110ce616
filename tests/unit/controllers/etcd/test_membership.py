"""The one etcd membership model (controllers/etcd/membership.py): which Machine a member belongs to,
and the endpoints etcd is asked at."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from controllers.etcd.client import Alarm, Member
from controllers.etcd.membership import (
    CLIENT_URL_ANNOTATION,
    MEMBER_ID_ANNOTATION,
    PEER_URL_ANNOTATION,
    RANK_ADDRESS,
    RANK_ADDRESS_AND_NAME,
    RANK_EXACT,
    RANK_NAME,
    MachineIdentity,
    Membership,
    client_endpoints,
    map_members,
    member_client_url,
    member_node,
    member_owner,
    node_identity,
    ownership_rank,
)


def member(id_: int, name: str = "", peer: str = "https://10.0.0.1:2380", *, learner: bool = False) -> Member:
    clients = (peer.replace(":2380", ":2379"),) if name else ()
    return Member(id=id_, name=name, peer_urls=(peer,), client_urls=clients, is_learner=learner)


def test_the_contract_annotations_map_exactly_even_when_every_machine_shares_an_address() -> None:
    a = MachineIdentity("a", internal_ips=("127.0.0.1",), peer_url="http://127.0.0.1:2381")
    b = MachineIdentity("b", internal_ips=("127.0.0.1",), member_id="2")
    ma = member(1, "a", "http://127.0.0.1:2381")
    mb = member(2, "other-name", "http://127.0.0.1:2382")
    stray = member(3, "", "http://127.0.0.1:2399", learner=True)
    assert map_members([ma, mb, stray], [a, b]) == {1: "a", 2: "b", 3: None}
    assert ownership_rank(ma, a) == RANK_EXACT


@pytest.mark.parametrize(
    ("peer_host", "machine_ip", "rank"),
    [
        ("10.0.0.1", "10.0.0.1", RANK_ADDRESS),
        ("10.0.0.1", "10.0.0.2", None),
        ("fd00::1", "fd00:0:0:0:0:0:0:1", RANK_ADDRESS),
        ("fd00::0001", "fd00::1", RANK_ADDRESS),
        ("fd00::1", "fd00::2", None),
        ("etcd-0.example.com", "10.0.0.1", None),
    ],
    ids=[
        "the same IPv4 address matches",
        "another IPv4 address does not",
        "IPv6 written in full matches its short form",
        "IPv6 with leading zeros matches",
        "another IPv6 address does not",
        "a host name is never compared with an address",
    ],
)
def test_the_peer_url_host_is_compared_with_the_internal_ips_as_addresses(
    peer_host: str, machine_ip: str, rank: int | None
) -> None:
    literal = f"[{peer_host}]" if ":" in peer_host else peer_host
    m = member(1, "unrelated", f"https://{literal}:2380")
    assert ownership_rank(m, MachineIdentity("x", internal_ips=(machine_ip,))) == rank


def test_a_member_named_as_the_machine_or_its_node_belongs_to_it() -> None:
    by_node = MachineIdentity("cp-0", node_name="ip-10-0-0-5.ec2.internal")
    assert ownership_rank(member(1, "ip-10-0-0-5.ec2.internal", "https://etcd-0:2380"), by_node) == RANK_NAME
    assert ownership_rank(member(1, "cp-0", "https://etcd-0:2380"), by_node) == RANK_NAME
    assert ownership_rank(member(1, "", "https://etcd-0:2380"), by_node) is None  # not started: no name
    both = MachineIdentity("cp-0", internal_ips=("10.0.0.1",))
    assert ownership_rank(member(1, "cp-0"), both) == RANK_ADDRESS_AND_NAME


def test_an_old_member_stays_with_its_old_machine_when_the_replacement_reuses_the_address() -> None:
    old = MachineIdentity("cp-old", internal_ips=("10.0.0.1",), deleting=True)
    new = MachineIdentity("cp-new", internal_ips=("10.0.0.1",))
    old_member, new_member = member(1, "cp-old"), member(2, "cp-new")
    unstarted = member(3, "", learner=True)
    # Name and address beat address alone; at equal evidence the Machine that stays wins.
    assert map_members([old_member, new_member, unstarted], [old, new]) == {
        1: "cp-old",
        2: "cp-new",
        3: "cp-new",
    }


def test_the_answer_never_depends_on_the_order_of_the_machines() -> None:
    machines = [
        MachineIdentity("b", internal_ips=("10.0.0.1",)),
        MachineIdentity("a", internal_ips=("10.0.0.1",)),
        MachineIdentity("c", internal_ips=("10.0.0.1",), deleting=True),
    ]
    for order in itertools.permutations(machines):
        assert member_owner(member(1, "x"), order) == "a"


def test_a_machine_with_no_address_no_annotation_and_another_name_owns_nothing() -> None:
    assert member_owner(member(1, "etcd-1"), [MachineIdentity("x")]) is None


def machine(name: str, *, ips: tuple[str, ...] = (), node: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "annotations": extra.pop("annotations", {}),
            **({"deletionTimestamp": "2026-01-01T00:00:00Z"} if extra.pop("deleting", False) else {}),
            "creationTimestamp": extra.pop("created", ""),
        },
        "spec": {},
        "status": {
            "phase": extra.pop("phase", "Running"),
            "addresses": [{"type": "Hostname", "address": name}]
            + [{"type": "InternalIP", "address": ip} for ip in ips],
            **({"nodeRef": {"name": node}} if node else {}),
        },
    }


def test_machine_identity_reads_the_wire_form() -> None:
    identity = MachineIdentity.from_machine(
        machine(
            "m0",
            ips=("fd00::5",),
            node="n0",
            deleting=True,
            created="2026-01-01T00:00:00Z",
            annotations={MEMBER_ID_ANNOTATION: "ff", "other": "x"},
        )
    )
    assert identity == MachineIdentity(
        name="m0",
        node_name="n0",
        internal_ips=("fd00::5",),
        deleting=True,
        running=True,
        created="2026-01-01T00:00:00Z",
        member_id="ff",
    )
    assert identity.endpoint == "https://[fd00::5]:2379"


def test_endpoints_are_the_spec_else_the_oldest_running_machines_that_stay_first() -> None:
    def ident(name: str, created: str, **kwargs: Any) -> MachineIdentity:
        return MachineIdentity(name, created=created, client_url=f"http://{name}:2379", **kwargs)

    machines = [
        ident("a-new", "2026-01-01T00:05:00Z", running=True),
        ident("b-leaving", "2026-01-01T00:00:00Z", running=True, deleting=True),
        ident("c-booting", "2026-01-01T00:00:01Z"),
        ident("d-old", "2026-01-01T00:01:00Z", running=True),
        ident("e-unknown-age", "", running=True),
        MachineIdentity(
            "f-no-annotation", internal_ips=("10.0.0.6",), running=True, created="2026-01-01T00:09:00Z"
        ),
        MachineIdentity("g-nothing"),
    ]
    # A member that joined a moment ago refuses membership changes under etcd's strict
    # reconfiguration check, so the oldest member that stays is asked first.
    assert client_endpoints(None, machines) == [
        "http://d-old:2379",
        "http://a-new:2379",
        "https://10.0.0.6:2379",
        "http://e-unknown-age:2379",
        "http://c-booting:2379",
        "http://b-leaving:2379",
    ]
    assert client_endpoints(["https://etcd:2379", "https://etcd:2379"], machines) == ["https://etcd:2379"]


def test_a_member_is_asked_at_its_own_client_url_else_at_its_machine() -> None:
    started_without_urls = Member(1, "m1", ("https://10.0.0.1:2380",), (), False)
    with_machine = MachineIdentity("m1", internal_ips=("10.0.0.1",))
    assert member_client_url(member(1, "m1"), None) == "https://10.0.0.1:2379"
    assert member_client_url(started_without_urls, with_machine) == "https://10.0.0.1:2379"
    annotated = MachineIdentity("m1", client_url="http://127.0.0.1:2001")
    assert member_client_url(started_without_urls, annotated) == "http://127.0.0.1:2001"
    assert member_client_url(member(1, ""), with_machine) is None


def test_the_model_of_a_read() -> None:
    machines = [MachineIdentity(f"m{i}", internal_ips=(f"10.0.0.{i}",)) for i in (1, 2, 3)]
    members = [member(i, f"etcd-{i}", f"https://10.0.0.{i}:2380") for i in (1, 2)]
    members.append(member(3, "", "https://10.0.0.3:2380", learner=True))
    membership = Membership.of(
        members,
        machines,
        {1: (True, None), 2: (False, "context deadline exceeded")},
        alarms=[Alarm(member_id=2, alarm="NOSPACE")],
        leader=1,
    )
    assert [(m.machine, m.voter, m.healthy, m.error) for m in membership.members] == [
        ("m1", True, True, None),
        ("m2", True, False, "context deadline exceeded"),
        ("m3", False, False, "not asked"),
    ]
    assert membership.leader_machine == "m1"
    assert membership.quorum_lost is True  # 1 healthy of 2 voters, quorum 2
    assert [m.member.id for m in membership.of_machine("m3")] == [3]
    assert membership.voter_health() == {1: True, 2: False}


def test_contract_annotation_names_are_the_products_own() -> None:
    assert [CLIENT_URL_ANNOTATION, PEER_URL_ANNOTATION, MEMBER_ID_ANNOTATION] == [
        "etcd.cpo.dev/client-url",
        "etcd.cpo.dev/peer-url",
        "etcd.cpo.dev/member-id",
    ]


def node(name: str, *addresses: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"addresses": [{"type": "InternalIP", "address": a} for a in addresses]},
    }


NODE_CASES = [
    # (id, member name, member host, nodes, claimed, the Node that speaks for it)
    ("a Node named as the member speaks for it", "m2", "10.0.0.2", [node("m2", "10.9.9.9")], (), "m2"),
    (
        "a Node at the member's address speaks for it",
        "ip-10-0-0-2",
        "10.0.0.2",
        [node("n", "10.0.0.2")],
        (),
        "n",
    ),
    ("no Node of its name or address: none", "m2", "10.0.0.2", [node("m0", "10.0.0.0")], (), None),
    (
        "the Node of a Machine whose member is another one says nothing of a shared address",
        "m2",
        "127.0.0.1",
        [node("m0", "127.0.0.1"), node("m1", "127.0.0.1")],
        ("m0", "m1"),
        None,
    ),
    (
        "among shared-address Nodes the member's own unclaimed Node still speaks",
        "m2",
        "127.0.0.1",
        [node("m0", "127.0.0.1"), node("m2", "127.0.0.1")],
        ("m0",),
        "m2",
    ),
    ("IPv6 addresses compare as addresses", "x", "fd00::2", [node("n", "fd00:0:0::0002")], (), "n"),
]


@pytest.mark.parametrize(
    ("name", "host", "nodes", "claimed", "speaks"),
    [c[1:] for c in NODE_CASES],
    ids=[c[0] for c in NODE_CASES],
)
def test_which_node_speaks_for_a_member(
    name: str, host: str, nodes: list[dict[str, Any]], claimed: tuple[str, ...], speaks: str | None
) -> None:
    literal = f"[{host}]" if ":" in host else host
    assert (
        member_node(member(7, name, f"https://{literal}:2380"), [node_identity(n) for n in nodes], claimed)
        == speaks
    )
