"""Helpers for tests with real etcd members: a deadline poll, a promotion loop, a process count."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from controllers.etcd.client import EtcdCluster, LearnerNotInSync, Member, UnhealthyCluster
from controllers.etcd.process import EtcdSupervisor, MemberProcess

T = TypeVar("T")

POLL_INTERVAL = 0.05


async def eventually(check: Callable[[], Awaitable[T | None]], *, within: float, what: str) -> T:
    """Poll ``check`` until it returns something other than None/False; fail after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        result = await check()
        if result is not None and result is not False:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {within:g}s: {what}")
        await asyncio.sleep(POLL_INTERVAL)  # allow-sleep: poll interval of a deadline loop


async def promote_when_in_sync(cluster: EtcdCluster, member_id: int, *, within: float = 20.0) -> list[Member]:
    """Promote ``member_id``, retrying while etcd says the learner has not caught up."""

    async def attempt() -> list[Member] | None:
        try:
            return await cluster.promote(member_id)
        except LearnerNotInSync:
            return None

    return await eventually(attempt, within=within, what=f"learner {member_id:x} caught up and promoted")


def etcd_processes_for(data_dir: Path) -> list[int]:
    """Pids of every live etcd process on this machine whose command line has ``--data-dir=<data_dir>``."""
    wanted = f"--data-dir={data_dir}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if wanted in arguments and state != "Z":
            pids.append(int(entry.name))
    return pids


async def join_when_healthy(
    supervisor: EtcdSupervisor, name: str, cluster: EtcdCluster, *, within: float = 20.0
) -> MemberProcess:
    """Join ``name`` as a learner, retrying while etcd refuses a member add as "unhealthy cluster".

    etcd (strict reconfiguration check) adds a member only once every voter has been connected to
    it for 5 s, so a join right after a start or promotion is refused for a few seconds.
    """

    async def attempt() -> MemberProcess | None:
        try:
            return await supervisor.join(name, cluster)
        except UnhealthyCluster:
            return None

    return await eventually(attempt, within=within, what=f"{name} joined")
