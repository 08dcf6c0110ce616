"""Option resolution and validation of the manager and leader election (no server needed)."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from runtime.leaderelection import LeaderElectionOptions, default_identity
from runtime.manager import ManagerOptions, parse_bind_address
from runtime.signals import remove_signal_handler, setup_signal_handler


def test_leader_election_defaults_are_controller_runtimes() -> None:
    resolved = LeaderElectionOptions().with_defaults()
    assert (resolved.lease_duration, resolved.renew_deadline, resolved.retry_period) == (15, 10, 2)
    assert resolved.request_timeout == 5
    assert resolved.release_on_cancel is True
    host, _, suffix = resolved.identity.rpartition("_")
    assert host and len(suffix) == 36


def test_identities_are_unique_per_call() -> None:
    assert default_identity() != default_identity()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            LeaderElectionOptions(lease_duration=10, renew_deadline=10),
            "lease_duration .* greater than renew_deadline",
        ),
        (LeaderElectionOptions(renew_deadline=2.4, retry_period=2), r"renew_deadline .* 1.2 × retry_period"),
        (LeaderElectionOptions(retry_period=0), "retry_period must be > 0"),
        (LeaderElectionOptions(request_timeout=10), "request_timeout .* below renew_deadline"),
    ],
)
def test_bad_leader_election_timings_are_refused_with_a_clear_message(
    options: LeaderElectionOptions, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        options.with_defaults()


def test_manager_defaults() -> None:
    resolved = ManagerOptions().with_defaults()
    assert resolved.metrics_bind == (None, 8080)
    assert resolved.health_probe_bind == (None, 8081)
    assert resolved.leader_election is False
    assert resolved.graceful_shutdown_timeout == 30


@pytest.mark.parametrize(
    ("address", "parsed"),
    [("0", None), (":8080", (None, 8080)), ("127.0.0.1:0", ("127.0.0.1", 0)), ("[::1]:9000", ("::1", 9000))],
)
def test_bind_addresses(address: str, parsed: object) -> None:
    assert parse_bind_address(address, "metrics_bind_address") == parsed


@pytest.mark.parametrize("address", ["8080", "localhost", ":http", ":70000", ""])
def test_bad_bind_addresses_name_the_option(address: str) -> None:
    with pytest.raises(ValueError, match=r"health_probe_bind_address .* '0' to disable"):
        ManagerOptions(health_probe_bind_address=address).with_defaults()


def test_leader_election_needs_a_lease_name_and_namespace() -> None:
    with pytest.raises(ValueError, match="leader_election_id"):
        ManagerOptions(leader_election=True).with_defaults()
    with pytest.raises(ValueError, match="leader_election_namespace"):
        ManagerOptions(leader_election=True, leader_election_id="x").with_defaults()
    with pytest.raises(ValueError, match="renew_deadline"):
        ManagerOptions(
            leader_election=True, leader_election_id="x", leader_election_namespace="ns", renew_deadline=20
        ).with_defaults()


def test_negative_grace_period_is_refused() -> None:
    with pytest.raises(ValueError, match="graceful_shutdown_timeout"):
        ManagerOptions(graceful_shutdown_timeout=-1).with_defaults()


async def test_first_signal_sets_the_stop_event() -> None:
    stop = setup_signal_handler(signals=(signal.SIGUSR1,))
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        await asyncio.wait_for(stop.wait(), 5)
    finally:
        remove_signal_handler(signals=(signal.SIGUSR1,))
