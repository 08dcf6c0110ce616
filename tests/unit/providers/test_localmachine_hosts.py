"""The host pools of the ``localmachine`` provider: the pure rule, its record, the option and flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.__main__ import main
from providers.localmachine import LocalMachineOptions
from providers.localmachine.hosts import HOSTS_FILE, HostChoice, HostClaim, HostPools, HostsFull, choose_host
from providers.localmachine.realistic import AddressAllocator, AddressBlock

A1, A2, A3 = "127.5.3.1", "127.5.3.2", "127.5.3.3"


@pytest.mark.parametrize(
    ("machine", "holders", "pool", "cap", "expected"),
    [
        pytest.param("a2", {}, [], 1, HostChoice(True, None, ()), id="under the cap: a new host"),
        pytest.param(
            "a2",
            {"a1": A1},
            [A1],
            2,
            HostChoice(True, None, ("a1",)),
            id="under the cap, pool all held: new address",
        ),
        pytest.param(
            "a2",
            {"a1": A1},
            [A1],
            1,
            HostChoice(False, None, ("a1",)),
            id="at the cap: waits, naming the holder",
        ),
        pytest.param(
            "a3", {"a2": A2, "a1": A1}, [A1, A2], 2, HostChoice(False, None, ("a1", "a2")), id="at a cap of 2"
        ),
        pytest.param("a2", {}, [A1], 1, HostChoice(True, A1, ()), id="freed host reused with same address"),
        pytest.param(
            "a3",
            {"a1": A1},
            [A1, A2],
            2,
            HostChoice(True, A2, ("a1",)),
            id="the free address of the pool, not a held one",
        ),
        pytest.param("a1", {"a1": A1}, [A1], 1, HostChoice(True, A1, ("a1",)), id="a holder keeps its host"),
        pytest.param(
            "a9",
            {f"a{i}": None for i in range(5)},
            [],
            None,
            HostChoice(True, None, tuple(f"a{i}" for i in range(5))),
            id="cap None: no limit",
        ),
        pytest.param(
            "m1", {"m0": None}, [], 1, HostChoice(False, None, ("m0",)), id="default mode: the count only"
        ),
    ],
)
def test_choose_host(
    machine: str, holders: dict[str, str | None], pool: list[str], cap: int | None, expected: HostChoice
) -> None:
    assert choose_host(machine, holders, pool, cap) == expected


def test_each_domain_and_the_machines_without_one_are_pools_of_their_own(tmp_path: Path) -> None:
    pools = HostPools(tmp_path, cap=1)
    assert pools.claim("ns", "a1", "zone-a") == HostClaim("a1", "zone-a", None)
    assert pools.claim("ns", "b1", "zone-b") == HostClaim("b1", "zone-b", None)
    assert pools.claim("ns", "n1", None) == HostClaim("n1", None, None)
    assert pools.claim("other", "a1", "zone-a") == HostClaim("a1", "zone-a", None), (
        "namespaces: clusters apart"
    )
    full = pools.claim("ns", "n2", None)
    assert full == HostsFull(None, 1, ("n1",))
    assert isinstance(full, HostsFull) and "without a failure domain" in full.message
    full = pools.claim("ns", "a2", "zone-a")
    assert isinstance(full, HostsFull)
    assert "'zone-a'" in full.message and "all 1 " in full.message and "a1" in full.message


def test_a_restarted_provider_counts_the_recorded_claims_and_a_release_frees_the_host(tmp_path: Path) -> None:
    HostPools(tmp_path, cap=1).claim("ns", "a1", "zone-a")
    restarted = HostPools(tmp_path, cap=1)
    assert restarted.holders("ns", "zone-a") == {"a1": None}
    assert isinstance(restarted.claim("ns", "a2", "zone-a"), HostsFull)
    assert restarted.release("ns", "a1") == HostClaim("a1", "zone-a", None)
    assert restarted.release("ns", "a1") is None
    assert restarted.claim("ns", "a2", "zone-a") == HostClaim("a2", "zone-a", None)


def test_realistic_pools_take_addresses_from_the_block_and_hand_a_freed_one_to_the_replacement(
    tmp_path: Path,
) -> None:
    block = AddressBlock.parse("127.5.3")
    (tmp_path / "address-block.json").write_text('{"block": "127.5.3", "next": 1}\n')
    pools = HostPools(tmp_path, cap=1)
    allocator = AddressAllocator(tmp_path, block, pools.reserved_addresses)
    pools.new_address = allocator.allocate
    assert pools.claim("ns", "a1", "zone-a") == HostClaim("a1", "zone-a", A1)
    assert pools.claim("ns", "b1", "zone-b") == HostClaim("b1", "zone-b", A2)
    pools.release("ns", "a1")
    # The freed address stays zone-a's: nobody else gets it, the replacement does.
    assert pools.claim("ns", "c1", "zone-c") == HostClaim("c1", "zone-c", A3)
    assert pools.claim("ns", "a2", "zone-a") == HostClaim("a2", "zone-a", A1)
    assert sorted(HostPools(tmp_path, cap=1).reserved_addresses()) == [A1, A2, A3]


def test_an_instance_without_a_claim_is_adopted_whatever_the_cap(tmp_path: Path) -> None:
    pools = HostPools(tmp_path, cap=1)
    pools.claim("ns", "a1", "zone-a")
    pools.adopt("ns", "a0", "zone-a", A2)
    assert pools.holders("ns", "zone-a") == {"a1": None, "a0": A2}
    assert pools.reserved_addresses() == [A2]
    assert (tmp_path / HOSTS_FILE).is_file()


@pytest.mark.parametrize("cap", [0, -1, 1.5, True])
def test_the_cap_must_be_a_whole_number_of_hosts(tmp_path: Path, cap: object) -> None:
    with pytest.raises(ValueError, match=r"max_instances_per_domain .*at least 1"):
        LocalMachineOptions(state_dir=tmp_path, max_instances_per_domain=cap).with_defaults()  # type: ignore[arg-type]


def test_the_cap_is_resolved_and_unlimited_by_default(tmp_path: Path) -> None:
    assert LocalMachineOptions(state_dir=tmp_path).with_defaults().max_instances_per_domain is None
    resolved = LocalMachineOptions(state_dir=tmp_path, max_instances_per_domain=3).with_defaults()
    assert resolved.max_instances_per_domain == 3


def test_the_cli_refuses_a_cap_below_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["localmachine", "--state-dir", str(tmp_path), "--max-instances-per-domain", "0"])
    assert code == 2
    assert "max_instances_per_domain 0" in capsys.readouterr().err
