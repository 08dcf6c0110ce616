"""etcd's quorum arithmetic: the one place every layer (controllers, webhooks, ``cpo explain``, the
demo's monitor) takes its numbers from.

etcd (Raft) commits a write once a strict majority of its *voting* members has it; learners do
not vote and are not counted. Everything the operator decides about removing, replacing or
adding a member follows from that majority:

======================================  ===============================================================
:func:`quorum`                          votes a cluster of n voters needs: n // 2 + 1
:func:`fault_tolerance`                 voters that may fail while the rest keep a quorum: (n − 1) // 2
:func:`quorum_lost`                     the healthy voters are fewer than their quorum
:func:`quorum_kept_without`             the voters other than one still hold a quorum of themselves
:data:`MIN_REPLICAS_FOR_NO_SURGE`       the fewest members a delete-before-create rollout survives
======================================  ===============================================================

>>> quorum(3), fault_tolerance(3), quorum(4), fault_tolerance(4)
(2, 1, 3, 1)
>>> quorum_kept_without({"a": True, "b": True, "c": False}, "c")
True
>>> quorum_kept_without({"a": True, "b": True, "c": False}, "a")
False
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Final, TypeVar

__all__ = [
    "MIN_REPLICAS_FOR_NO_SURGE",
    "fault_tolerance",
    "quorum",
    "quorum_kept_without",
    "quorum_lost",
]

K = TypeVar("K", bound=Hashable)

MIN_REPLICAS_FOR_NO_SURGE: Final = 3
"""``maxSurge: 0`` deletes a Machine before its replacement exists, so for a while the cluster has
one voter fewer. Three voters survive that (two of two keep a quorum of 2 while the third is
replaced); with one, nothing is left, so below three replicas a rollout always surges."""


def quorum(voters: int) -> int:
    """Votes a cluster of ``voters`` voting members needs to commit anything: a strict majority."""
    return voters // 2 + 1


def fault_tolerance(voters: int) -> int:
    """How many of ``voters`` voting members may fail while the rest keep a quorum: (n − 1) / 2."""
    return (voters - 1) // 2 if voters > 0 else 0


def quorum_lost(voters: Mapping[K, bool]) -> bool:
    """Whether the healthy voters of ``voters`` (voter → healthy) are fewer than their quorum: etcd
    cannot commit anything. A cluster without voters has lost nothing (there is none yet)."""
    return bool(voters) and sum(voters.values()) < quorum(len(voters))


def quorum_kept_without(voters: Mapping[K, bool], member: K) -> bool:
    """Whether the voters other than ``member`` (voter → healthy) hold a quorum of themselves
    among their healthy ones: removing ``member`` (or losing it) keeps etcd writable. False when
    no voter would be left."""
    remaining = {key: healthy for key, healthy in voters.items() if key != member}
    return bool(remaining) and sum(remaining.values()) >= quorum(len(remaining))
