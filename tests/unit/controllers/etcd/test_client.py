"""The etcd client's pure parts: error mapping, JSON decoding, endpoint and option checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.etcd.client import (
    EndpointStatus,
    EtcdClient,
    EtcdClientOptions,
    EtcdError,
    LearnerNotInSync,
    Member,
    MemberAddResult,
    MemberNotFound,
    NotALearner,
    NotEnoughStartedMembers,
    NotSupportedForLearner,
    PeerURLExists,
    TooManyLearners,
    Unavailable,
    UnhealthyCluster,
    error_from_response,
    normalize_endpoint,
)

ENDPOINT = "http://127.0.0.1:2379"


@pytest.mark.parametrize(
    ("message", "code", "expected"),
    [
        ("etcdserver: can only promote a learner member which is in sync with leader", 9, LearnerNotInSync),
        ("etcdserver: can only promote a learner member", 9, NotALearner),
        ("etcdserver: member not found", 5, MemberNotFound),
        ("etcdserver: too many learner members in cluster", 9, TooManyLearners),
        ("etcdserver: Peer URLs already exists", 9, PeerURLExists),
        ("etcdserver: member ID already exist", 9, PeerURLExists),
        ("etcdserver: re-configuration failed due to not enough started members", 9, NotEnoughStartedMembers),
        ("etcdserver: unhealthy cluster", 14, UnhealthyCluster),
        ("etcdserver: rpc not supported for learner", 14, NotSupportedForLearner),
        ("etcdserver: request timed out", 14, Unavailable),
        ("etcdserver: leader changed", 14, Unavailable),
        ("etcdserver: permission denied", 7, EtcdError),
    ],
    ids=[
        "promoting an unsynced learner is LearnerNotInSync",
        "promoting a voter is NotALearner",
        "an unknown member is MemberNotFound",
        "too many learners is TooManyLearners",
        "an existing peer URL is PeerURLExists",
        "an existing member ID is PeerURLExists too",
        "too few started members is NotEnoughStartedMembers",
        "an unhealthy cluster is UnhealthyCluster",
        "a request a learner cannot serve is NotSupportedForLearner",
        "a timeout is Unavailable",
        "a leader change is Unavailable",
        "any other refusal is a plain EtcdError",
    ],
)
def test_etcd_refusals_become_typed_errors(message: str, code: int, expected: type[EtcdError]) -> None:
    error = error_from_response(400, {"error": message, "code": code, "message": message}, ENDPOINT)
    assert type(error) is expected
    assert error.message == message and error.code == code


def test_an_answer_without_an_etcd_message_still_says_what_happened() -> None:
    error = error_from_response(502, None, ENDPOINT)
    assert type(error) is EtcdError and "HTTP 502" in str(error)


def test_zero_values_left_out_by_the_gateway_decode_as_zero() -> None:
    unstarted = Member.from_json(
        {"ID": "837882356099965150", "peerURLs": ["http://127.0.0.1:2380"], "isLearner": True}
    )
    assert unstarted == Member(837882356099965150, "", ("http://127.0.0.1:2380",), (), True)
    assert not unstarted.started and unstarted.id_hex == "ba0c19046e7e0de"
    status = EndpointStatus.from_json(ENDPOINT, {"header": {"member_id": "5"}, "version": "3.5.1"})
    assert (status.leader, status.raft_index, status.db_size, status.is_leader) == (0, 0, 0, False)


def test_initial_cluster_names_the_new_member() -> None:
    voter = Member(1, "m0", ("http://127.0.0.1:1",), ("http://127.0.0.1:2",), False)
    new = Member(2, "", ("http://127.0.0.1:3",), (), True)
    assert (
        MemberAddResult(new, (voter, new)).initial_cluster("m1")
        == "m0=http://127.0.0.1:1,m1=http://127.0.0.1:3"
    )


@pytest.mark.parametrize(
    ("endpoint", "fragment"),
    [
        ("127.0.0.1:2379", "needs a scheme"),
        ("grpc://127.0.0.1:2379", "http or https"),
        ("http://127.0.0.1", "no port"),
        ("http://127.0.0.1:2379/v3", "must not have a path"),
        ("http://:2379", "no host"),
    ],
    ids=[
        "an endpoint without a scheme is refused",
        "a scheme other than http or https is refused",
        "an endpoint without a port is refused",
        "an endpoint with a path is refused",
        "an endpoint without a host is refused",
    ],
)
def test_bad_endpoints_are_refused_with_what_to_change(endpoint: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        normalize_endpoint(endpoint)


def test_endpoints_are_normalized() -> None:
    assert normalize_endpoint(" https://[::1]:2379/ ") == "https://[::1]:2379"
    assert EtcdClient(["http://127.0.0.1:2379/"]).endpoints == ("http://127.0.0.1:2379",)


def test_client_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="list of endpoints"):
        EtcdClient("http://127.0.0.1:2379")
    with pytest.raises(ValueError, match="at least one endpoint"):
        EtcdClient([])


def test_client_options_are_checked(tmp_path: Path) -> None:
    assert EtcdClientOptions().with_defaults().timeout == 5.0
    assert EtcdClientOptions().with_defaults().ssl_context is None
    with pytest.raises(ValueError, match="timeout must be positive"):
        EtcdClientOptions(timeout=0).with_defaults()
    with pytest.raises(ValueError, match="both cert_file and key_file"):
        EtcdClientOptions(cert_file=tmp_path / "c").with_defaults()
    with pytest.raises(ValueError, match=r"ca_file: .* is not a file"):
        EtcdClientOptions(ca_file=tmp_path / "missing.crt").with_defaults()
