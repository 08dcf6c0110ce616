"""A quorum monitor: watch an etcd cluster's membership and health over time, for tests and benchmarks.

:class:`QuorumMonitor` polls the member list and every member's health (every 100 ms by
default) in the background and records one :class:`QuorumSample` per poll: how many voters and
learners there are, how many voters answer a linearizable read, who leads, and whether the
cluster has a quorum (:attr:`QuorumSample.has_quorum`). A test wraps a whole scenario in it and
asserts on the record::

    from demo.monitor import QuorumMonitor

    async with QuorumMonitor(["http://127.0.0.1:2379"]) as monitor:
        await monitor.next_sample()          # the cluster is being watched from here on
        ...                                  # scale, replace, kill members
    monitor.assert_never_lost_quorum()
    assert monitor.low("voters") >= 3 and monitor.peak("voters") <= 4
    print(monitor.timeline())                # [{"at": 0.0, "voters": 3, ...}, ...]

The endpoints it asks follow the cluster: besides the ones given, every client URL the member
list announces is used, so a monitor started on the first member keeps working after that member
is removed. When the member list cannot be read (no quorum, or no endpoint answers), the sample
counts the voters of the last list read and judges them as always; :attr:`QuorumSample.error`
then says what failed. A leader election leaves a live quorum without a leader: the sample tells
it from a loss by the voters still answering a status read (:attr:`QuorumSample.electing`).
:meth:`QuorumMonitor.assert_never_lost_quorum` reports only a loss that lasts ``longer_than``
(2.5 s by default): one poll's timeouts must not make a blink a loss.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal

from api.quorum import quorum
from controllers.etcd.client import EtcdClient, EtcdClientOptions, EtcdError, Member

DEFAULT_INTERVAL = 0.1
DEFAULT_TIMEOUT = 2.0
DEFAULT_ELECTION_GRACE = 2.5
"""Seconds without a healthy quorum that :meth:`QuorumMonitor.assert_never_lost_quorum` takes for
a leader election rather than a quorum loss (etcd's default election timeout is 1 s, randomised
up to 2 s)."""

SampleField = Literal["voters", "learners", "healthy_voters"]


@dataclass(frozen=True, slots=True)
class QuorumSample:
    """What the cluster looked like at one poll."""

    at: float
    """Seconds since the monitor started (monotonic clock) when the member list's answer arrived."""
    voters: int
    learners: int
    healthy_voters: int
    """Voters that answered a linearizable read."""
    leader: str | None
    """Name (or hex id, before it has a name) of the leader; None when no member named one."""
    has_quorum: bool
    """A quorum of the voters is up: a voter served a linearizable read at this poll, or, when none
    did, a quorum of the voters still answered a status read (:attr:`electing`).

    A linearizable read served anywhere proves it: etcd answers one (on the leader, or on a
    follower through it) only after the leader has confirmed its leadership with heartbeats
    acknowledged by a quorum of voters (raft's ReadIndex; etcd's default, not a lease). So a voter
    that acknowledges the leader but answers its clients late (applying a backlog, or starved of
    CPU) costs nothing, though it fails its own read at the timeout. Counting the voters that
    answered would call that a loss, and the timeout itself would make it last long enough to
    count (see :func:`quorum_losses`).

    When no voter serves one, there is no leader: the quorum is gone, or a leader election is on.
    The members tell which: a member answers a status read (``/v3/maintenance/status``) from its
    own state, leader or not, so a quorum of voters answering one is a quorum of members alive,
    which raft elects a leader among; fewer is a loss. An election on a starved machine can outlast
    any fixed grace, and the operator does not cause it (it removes members, it does not pause
    them): what the operator must never do is leave fewer voters up than a quorum, and that is what
    this counts. The monitor cannot see a network partition between live members (the local
    worlds have none)."""
    machines: tuple[str, ...]
    """Every member's name (the local provider names a member after its Machine), sorted; a member
    that has not started yet appears as its hex id. Learners carry a ``~`` suffix."""
    error: str | None = None
    """Why the member list could not be read at this poll; None when it was."""
    unhealthy_voters: tuple[str, ...] = ()
    """The names (as in ``machines``) of the voters that did not answer the health read."""
    electing: bool = False
    """No voter served a linearizable read, but a quorum of voters answered a status read: a leader
    election, with the quorum there (see :attr:`has_quorum`)."""


def _label(member: Member) -> str:
    return member.name or member.id_hex


async def _answers_status(etcd: EtcdClient, endpoint: str) -> bool:
    """Whether the member at ``endpoint`` answers a status read (it is up, leader or not)."""
    try:
        await etcd.endpoint_status(endpoint)
    except (EtcdError, ValueError):
        return False
    return True


class QuorumMonitor:
    """Polls a cluster in the background while the ``async with`` block runs (see the module docstring)."""

    def __init__(
        self,
        endpoints: Sequence[str],
        *,
        interval: float = DEFAULT_INTERVAL,
        client_options: EtcdClientOptions | None = None,
    ) -> None:
        if isinstance(endpoints, str):
            raise TypeError("QuorumMonitor takes a list of endpoints, not one string: write [endpoint]")
        if not interval > 0:
            raise ValueError(f"interval must be positive seconds, got {interval!r}")
        self.interval = interval
        options = client_options or EtcdClientOptions()
        if options.timeout is None:
            options = dataclasses.replace(options, timeout=DEFAULT_TIMEOUT)
        self._options = options
        self._seeds = tuple(endpoints)
        self._known: list[Member] = []
        self.samples: list[QuorumSample] = []
        self._started = 0.0
        self._task: asyncio.Task[None] | None = None
        self._new_sample = asyncio.Event()

    async def __aenter__(self) -> QuorumMonitor:
        self._started = time.monotonic()
        self._task = asyncio.create_task(self._run(), name="quorum-monitor")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    # ------------------------------------------------------------------------------ polling

    def _endpoints(self) -> list[str]:
        found = list(self._seeds)
        for member in self._known:
            for url in member.client_urls:
                if url not in found:
                    found.append(url)
        return found

    async def _run(self) -> None:
        while True:
            started = time.monotonic()
            sample = await self._poll()
            self.samples.append(sample)
            self._new_sample.set()
            self._new_sample = asyncio.Event()
            spent = time.monotonic() - started
            await asyncio.sleep(max(0.0, self.interval - spent))  # allow-sleep: the poll period

    async def _poll(self) -> QuorumSample:
        async with EtcdClient(self._endpoints(), self._options) as etcd:
            error: str | None = None
            try:
                members = await etcd.member_list()
                self._known = members
            except EtcdError as err:
                members = self._known
                error = str(err)
            # The list was true at some moment before its answer arrived: never later than this.
            at = time.monotonic() - self._started
            voters = [m for m in members if not m.is_learner]
            reachable = [m for m in voters if m.client_urls]
            health = await etcd.health([m.client_urls[0] for m in reachable]) if reachable else []
            # Each voter beside its health answer, so the sample can name the ones that failed.
            answered = [(m, h) for m, h in zip(reachable, health, strict=True) if h.healthy and not h.learner]
            healthy = [h for _, h in answered]
            leader: str | None = None
            for answer in healthy:
                with contextlib.suppress(EtcdError, ValueError):
                    status = await etcd.endpoint_status(answer.endpoint)
                    leader_member = next((m for m in members if m.id == status.leader), None)
                    leader = _label(leader_member) if leader_member else None
                    break
            electing = False
            if voters and not healthy:
                alive = await asyncio.gather(*(_answers_status(etcd, m.client_urls[0]) for m in reachable))
                electing = sum(alive) >= quorum(len(voters))
        return QuorumSample(
            at=round(at, 3),
            voters=len(voters),
            learners=len(members) - len(voters),
            healthy_voters=len(healthy),
            leader=leader,
            has_quorum=bool(healthy) or electing,
            machines=tuple(sorted(_label(m) + ("~" if m.is_learner else "") for m in members)),
            error=error,
            unhealthy_voters=tuple(sorted(_label(m) for m in voters if all(m is not a for a, _ in answered))),
            electing=electing,
        )

    async def next_sample(self) -> QuorumSample:
        """Wait for the next sample to be recorded and return it (bound it with ``asyncio.timeout``)."""
        await self._new_sample.wait()
        return self.samples[-1]

    # ------------------------------------------------------------------------------ the record

    @property
    def started_at(self) -> float:
        """``time.monotonic()`` when the monitor started: ``started_at + sample.at`` is a sample's
        time on the monotonic clock, to compare with other records."""
        return self._started

    def first(self, predicate: Callable[[QuorumSample], bool]) -> QuorumSample | None:
        """The first sample for which ``predicate`` holds, or None."""
        return next((s for s in self.samples if predicate(s)), None)

    def mark(self) -> float:
        """The current time on the samples' clock, for ``since=`` below."""
        return time.monotonic() - self._started

    def _window(self, since: float | None) -> list[QuorumSample]:
        chosen = [s for s in self.samples if since is None or s.at >= since]
        if not chosen:
            raise AssertionError("the quorum monitor recorded no sample in that window")
        return chosen

    def peak(self, field: SampleField, *, since: float | None = None) -> int:
        """The highest value of ``field`` over the samples (from ``since`` on)."""
        return max(int(getattr(s, field)) for s in self._window(since))

    def low(self, field: SampleField, *, since: float | None = None) -> int:
        """The lowest value of ``field`` over the samples (from ``since`` on)."""
        return min(int(getattr(s, field)) for s in self._window(since))

    def assert_never_lost_quorum(
        self, *, since: float | None = None, longer_than: float = DEFAULT_ELECTION_GRACE
    ) -> None:
        """Fail, showing the samples around it, if a healthy quorum of voters was missing for
        ``longer_than`` seconds or more (from the first such sample to the next good one, or to the
        last sample).

        A leader election (after the leader is removed, or stalls on a starved machine) leaves the
        members without answers for a second or two although a quorum is alive: that is not a
        quorum loss. ``longer_than=0`` counts every sample.
        """
        window = self._window(since)
        for start, end in quorum_losses(window, longer_than=longer_than):
            until = window[end].at if end < len(window) else window[-1].at
            around = window[max(0, start - 2) : end + 2]
            raise AssertionError(
                f"etcd lost quorum at {window[start].at:.3f}s for {until - window[start].at:.3f}s: "
                + "; ".join(str(dataclasses.asdict(s)) for s in around[:12])
            )

    def timeline(self) -> list[dict[str, Any]]:
        """Every sample as a plain dict, in order."""
        return [dataclasses.asdict(sample) for sample in self.samples]

    def changes(self) -> list[dict[str, Any]]:
        """The samples whose membership (``machines``) differs from the previous one, as dicts."""
        out: list[dict[str, Any]] = []
        previous: tuple[str, ...] | None = None
        for sample in self.samples:
            if sample.machines != previous:
                out.append(dataclasses.asdict(sample))
                previous = sample.machines
        return out


def quorum_losses(
    samples: Sequence[QuorumSample], *, longer_than: float = DEFAULT_ELECTION_GRACE
) -> list[tuple[int, int]]:
    """The stretches of ``samples`` without a healthy quorum that count as a loss, as index ranges
    ``(first bad sample, first good sample after it or len(samples))``.

    A stretch counts when it lasts ``longer_than`` seconds or more, measured from its first sample
    to the next good one (or to the last sample): shorter ones are leader elections (see
    :meth:`QuorumMonitor.assert_never_lost_quorum`).
    """
    losses: list[tuple[int, int]] = []
    index = 0
    while index < len(samples):
        if samples[index].has_quorum:
            index += 1
            continue
        end = index
        while end < len(samples) and not samples[end].has_quorum:
            end += 1
        until = samples[end].at if end < len(samples) else samples[-1].at
        if until - samples[index].at >= longer_than:
            losses.append((index, end))
        index = end
    return losses


__all__ = ["QuorumMonitor", "QuorumSample", "quorum_losses"]
