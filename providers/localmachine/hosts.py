"""The ``localmachine`` provider's host pools: at most N instances per failure domain.

With :attr:`~providers.localmachine.options.LocalMachineOptions.max_instances_per_domain` set
(``cpo localmachine --max-instances-per-domain N``) the provider models bare metal: each failure
domain of a cluster (namespace) has N hosts, and a Machine gets an instance only on a free one.
The package docstring ("Host pools") tells what a user sees; this module holds the rule and its
record.

* :func:`choose_host` is the rule, pure: a Machine already holding a host keeps it; one more is
  granted while fewer than N are held; in realistic mode a granted Machine takes the first
  address of its pool no holder has (a replacement takes the freed host's address), or a new
  one while the pool has fewer than N.
* :class:`HostPools` records who holds which host in ``<state_dir>/hosts.json`` (written
  atomically, at each change), so a restarted provider counts the hosts in use. A host is held
  from the moment its Machine is given it until the provider has stopped the member, removed its
  data and deleted its Node (then the provider releases it and drops its finalizer): an address
  is only handed to another Machine once nothing of the old instance is left.
  Its methods are synchronous: the provider's reconciles run concurrently on one event loop, and
  no other coroutine runs between a claim's read of the record and its write, so two Machines
  racing for a domain's last host never both get it.

>>> choose_host("a2", holders={"a1": "127.5.3.1"}, pool=["127.5.3.1"], cap=1)
HostChoice(granted=False, address=None, holders=('a1',))
>>> choose_host("a2", holders={}, pool=["127.5.3.1"], cap=1)
HostChoice(granted=True, address='127.5.3.1', holders=())
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

HOSTS_FILE: Final = "hosts.json"
"""``<state_dir>/hosts.json``: the claims and pools of every cluster of one provider."""
NO_DOMAIN: Final = ""
"""The pool key of the Machines without a failure domain (no domain is the empty string)."""


@dataclass(frozen=True, slots=True)
class HostChoice:
    """What :func:`choose_host` decided for one Machine."""

    granted: bool
    address: str | None = None
    """A granted Machine's address from its pool; None when it needs a new one (realistic mode
    with a pool of fewer than N addresses) or has none (default mode: all members share a host)."""
    holders: tuple[str, ...] = ()
    """The Machines holding the pool's hosts (when not granted: whom the Machine waits for)."""


def choose_host(
    machine: str, holders: Mapping[str, str | None], pool: Sequence[str], cap: int | None
) -> HostChoice:
    """The host rule of one pool (see the module docstring).

    ``holders`` maps each Machine holding a host of the pool to its address (None in default
    mode); ``pool`` lists the pool's addresses in the order it got them; ``cap`` is N, or None for
    no limit. A Machine that already holds a host gets it again, so a claim can be repeated.
    """
    if machine in holders:
        return HostChoice(True, holders[machine], tuple(sorted(holders)))
    if cap is not None and len(holders) >= cap:
        return HostChoice(False, None, tuple(sorted(holders)))
    held = set(holders.values())
    free = next((address for address in pool if address not in held), None)
    return HostChoice(True, free, tuple(sorted(holders)))


@dataclass(frozen=True, slots=True)
class HostClaim:
    """A host held by a Machine: its pool (failure domain) and, in realistic mode, its address."""

    machine: str
    domain: str | None
    address: str | None


@dataclass(frozen=True, slots=True)
class HostsFull:
    """No host of the pool is free: the Machine waits (the message names domain, cap, holders)."""

    domain: str | None
    cap: int
    holders: tuple[str, ...]

    @property
    def message(self) -> str:
        pool = (
            f"failure domain {self.domain!r}"
            if self.domain
            else "the pool of Machines without a failure domain"
        )
        return (
            f"no free host in {pool}: all {self.cap} (max instances per domain) are held by "
            f"{', '.join(self.holders)}; waiting for one of them to be deleted and its instance gone"
        )


class HostPools:
    """The hosts in use per (cluster, failure domain), recorded in ``<state_dir>/hosts.json``.

    ``cap`` is the hosts per domain (None: no limit, the claims are still recorded so that a
    provider restarted with a cap counts them). ``new_address`` (realistic mode with a cap) hands
    out a fresh address of the provider's block when a pool has fewer than ``cap`` addresses.
    """

    def __init__(
        self,
        state_dir: Path,
        cap: int | None,
        new_address: Callable[[], str] | None = None,
    ) -> None:
        self.path = state_dir / HOSTS_FILE
        self.cap = cap
        self.new_address = new_address

    # -- the record

    def _read(self) -> dict[str, Any]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"clusters": {}}
        return raw if isinstance(raw, dict) and isinstance(raw.get("clusters"), dict) else {"clusters": {}}

    def _write(self, raw: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(raw, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(temporary, self.path)  # atomic: a provider killed mid-write leaves the old or the new

    @staticmethod
    def _cluster(raw: dict[str, Any], cluster: str) -> dict[str, Any]:
        entry: dict[str, Any] = raw["clusters"].setdefault(cluster, {})
        entry.setdefault("claims", {})
        entry.setdefault("pools", {})
        return entry

    # -- reading

    def claim_of(self, cluster: str, machine: str) -> HostClaim | None:
        """The host ``machine`` holds, or None."""
        found = ((self._read()["clusters"].get(cluster) or {}).get("claims") or {}).get(machine)
        if found is None:
            return None
        return HostClaim(machine, found.get("domain"), found.get("address"))

    def holders(self, cluster: str, domain: str | None) -> dict[str, str | None]:
        """The Machines holding a host of ``domain`` in ``cluster``, with their addresses."""
        claims = (self._read()["clusters"].get(cluster) or {}).get("claims") or {}
        return {
            name: claim.get("address")
            for name, claim in claims.items()
            if (claim.get("domain") or NO_DOMAIN) == (domain or NO_DOMAIN)
        }

    def reserved_addresses(self) -> list[str]:
        """Every address of every pool: the block's allocator hands none of them to another pool."""
        return [
            address
            for cluster in self._read()["clusters"].values()
            for pool in (cluster.get("pools") or {}).values()
            for address in pool
        ]

    # -- changing

    def claim(self, cluster: str, machine: str, domain: str | None) -> HostClaim | HostsFull:
        """Give ``machine`` a host of its domain (again, if it holds one), or say the pool is full."""
        raw = self._read()
        entry = self._cluster(raw, cluster)
        claims: dict[str, Any] = entry["claims"]
        key = domain or NO_DOMAIN
        pool: list[str] = entry["pools"].setdefault(key, []) if self.cap is not None else []
        holders = {
            name: claim.get("address")
            for name, claim in claims.items()
            if (claim.get("domain") or NO_DOMAIN) == key
        }
        existing = claims.get(machine)
        if existing is not None and (existing.get("domain") or NO_DOMAIN) == key:
            return HostClaim(machine, domain, existing.get("address"))
        choice = choose_host(machine, holders, pool, self.cap)
        if not choice.granted:
            assert self.cap is not None
            return HostsFull(domain, self.cap, choice.holders)
        address = choice.address
        if address is None and self.cap is not None and self.new_address is not None:
            address = self.new_address()
            pool.append(address)
        claims[machine] = {"domain": domain, "address": address}
        self._write(raw)
        return HostClaim(machine, domain, address)

    def adopt(self, cluster: str, machine: str, domain: str | None, address: str | None) -> None:
        """Record the host of an instance that exists without a claim, whatever the cap: one
        recorded before its state directory had host claims. An instance holds its host: the
        cap only keeps new instances out."""
        raw = self._read()
        entry = self._cluster(raw, cluster)
        if machine in entry["claims"]:
            return
        entry["claims"][machine] = {"domain": domain, "address": address}
        if self.cap is not None and address is not None:
            pool: list[str] = entry["pools"].setdefault(domain or NO_DOMAIN, [])
            if address not in pool:
                pool.append(address)
        self._write(raw)

    def release(self, cluster: str, machine: str) -> HostClaim | None:
        """Free the host of ``machine`` (its instance is gone); returns the claim it had."""
        raw = self._read()
        entry = raw["clusters"].get(cluster) or {}
        found = (entry.get("claims") or {}).pop(machine, None)
        if found is None:
            return None
        self._write(raw)
        return HostClaim(machine, found.get("domain"), found.get("address"))


__all__ = ["HOSTS_FILE", "HostChoice", "HostClaim", "HostPools", "HostsFull", "choose_host"]
