"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

Several replicas of an operator run at once; only the one holding the Lease may act. A
:class:`LeaderElector` campaigns for the Lease, renews it while it leads, and stops leading **at
once** when it cannot renew before its renew deadline, so that two replicas never act together.

How it stays safe without trusting clocks (as client-go does):

- Validity is judged on this process's *monotonic* clock, from the moment it last *saw the record
  change* (``observed_time``), never from the ``renewTime`` written by another machine. A candidate
  takes a held Lease only after it has watched the record stay unchanged for the holder's
  ``leaseDurationSeconds``.
- The leader counts its renew deadline from the moment it *sent* its last successful renew, which
  is before any other candidate can have observed that renew. As ``renew_deadline <
  lease_duration``, the leader has stopped before anyone else may take over.
- Every Lease call has a timeout below the renew deadline, so a hung connection cannot hold the
  leader past its deadline.
- Writes carry ``metadata.resourceVersion``: two candidates racing for a free Lease cannot both
  win; the loser gets a 409 Conflict and tries again later.

- A leader that reads another holder in the Lease (someone took it) stops leading at once
  rather than at its deadline.

Where it differs from client-go: a candidate also *watches* the Lease while it campaigns (on top
of client-go's jittered polling, which stays as the fallback). Watching observes each renew as it
happens, so a candidate's idea of "last change" is not up to a jittered retry period late, and it
schedules an attempt for the very moment the holder's lease runs out: a killed leader is replaced
about ``lease_duration`` after its last renew, within ``lease_duration + retry_period`` of its
death. Turn it off with ``LeaderElectionOptions(watch_lease=False)``.

On a clean stop the leader *releases* the Lease (``holderIdentity`` cleared, ``leaseDurationSeconds``
1); watching candidates see that and take over within milliseconds, polling ones at their next
retry. ``leader_election_master_status{name}`` reports 1 while leading, 0 otherwise.

Example: campaign, lead, then stop cleanly (``run`` raises :class:`LeaderElectionLost` instead
when the Lease is lost: the process must then stop acting at once and exit, a new leader is
coming):

>>> import asyncio
>>> from runtime.client import Client
>>> from runtime.leaderelection import LeaderElector
>>> async def lead_once() -> None:
...     async with await Client.from_kubeconfig(kubeconfig) as client:
...         stop = asyncio.Event()
...
...         def started() -> None:
...             print("leading")
...             stop.set()  # done with the work: release the Lease
...
...         elector = LeaderElector(
...             client,
...             "leaderelection-example",
...             "default",
...             on_started_leading=started,
...             on_stopped_leading=lambda: print("stopped leading"),
...         )
...         await elector.run(stop)  # returns once stop is set, after releasing the Lease
>>> asyncio.run(lead_once())
leading
stopped leading

Modules: :mod:`runtime.leaderelection.elector` (:class:`LeaderElector`: campaigning, renewing,
releasing, and the Lease read-modify-write underneath) and :mod:`runtime.leaderelection.options`
(:class:`LeaderElectionOptions`: the timings, their defaults and the rules that keep them safe).
"""

from .elector import LEASE_API_VERSION, Callback, LeaderElectionLost, LeaderElector
from .options import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    JITTER_FACTOR,
    LeaderElectionOptions,
    ResolvedLeaderElectionOptions,
    default_identity,
)

__all__ = [
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "JITTER_FACTOR",
    "LEASE_API_VERSION",
    "Callback",
    "LeaderElectionLost",
    "LeaderElectionOptions",
    "LeaderElector",
    "ResolvedLeaderElectionOptions",
    "default_identity",
]
