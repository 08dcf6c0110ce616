"""When the ControlPlane controller looks at a ControlPlane again, when no watch event will say.

Watch events (the ControlPlane, its Machines, their Nodes) wake the reconciler for every change
the API shows. What they never show: etcd's health (polled every resync period), and moments
that come with time alone: a future ``spec.rolloutAfter`` passing, an unready Machine's grace
ending, a remediation's retry wait ending. :func:`next_look` makes the requeue the earliest of
those.
"""

from __future__ import annotations

from controllers.common import jittered
from runtime.reconcile import Result


def next_look(
    result: Result | None,
    *,
    resync_period: float,
    paused: bool,
    rollout_after_in: float | None,
    degraded_in: float | None = None,
    retry_in: float | None = None,
) -> Result:
    """When to reconcile again: the step's requeue, made the earliest of it, the resync period
    (etcd health is not watched), ``rollout_after_in`` (seconds until a future
    ``spec.rolloutAfter``), ``degraded_in`` (seconds until an unready Machine's grace ends) and
    ``retry_in`` (seconds until a remediation's retry wait ends): no watch event marks these
    moments, and what they change (the rollout starts, Degraded turns True, the retry goes)
    happens then, not up to a resync period or a step's longer wait (a preflight backoff) later.
    A paused ControlPlane waits for its next change (its status is still reported when it
    changes).

    The resync period is :func:`~controllers.common.jittered` (up to 10 % longer), so
    ControlPlanes created together do not all poll etcd at the same moment for ever."""
    resync = jittered(resync_period)
    if result is None or (result.requeue_after == 0 and not paused):
        result = Result(requeue_after=resync)
    later = min(result.requeue_after, resync)
    for moment in (rollout_after_in, degraded_in, retry_in):
        if moment is not None and not paused:
            later = min(later, moment)
    return Result(requeue_after=later)
