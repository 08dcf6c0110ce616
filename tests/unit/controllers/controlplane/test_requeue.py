"""When the ControlPlane controller looks again (controllers/controlplane/requeue.py): the earliest
of its step's wait, the jittered resync and the moments it waits for."""

from __future__ import annotations

import pytest

from controllers.controlplane.requeue import next_look
from runtime.reconcile import Result

RESYNC = (60.0, 66.0)
"""The resync period of these cases, 60 s, and its longest jittered value."""


@pytest.mark.parametrize(
    ("step_requeue", "paused", "rollout_after_in", "expected"),
    [
        (None, False, 3600.0, RESYNC),  # capped by the resync period
        (None, False, 15.0, 15.0),  # the rolloutAfter moment comes first
        (Result(requeue_after=5.0), False, 15.0, 5.0),  # a step's own wait comes first
        (Result(requeue_after=5.0), False, 2.0, 2.0),
        (Result(), False, 15.0, 15.0),  # nothing to wait for but the moment
        (Result(), False, None, RESYNC),
        (Result(), True, 15.0, 0.0),  # paused: nothing until the next change
    ],
    ids=[
        "the resync period caps a far moment",
        "the rolloutAfter moment comes before the resync",
        "a step's own wait comes before the moment",
        "a moment sooner than the step's wait comes first",
        "with no step wait the moment decides",
        "with nothing to wait for the resync decides",
        "a paused ControlPlane waits for the next change",
    ],
)
def test_next_look_is_the_earliest_of_the_step_the_resync_and_the_moments(
    step_requeue: Result | None,
    paused: bool,
    rollout_after_in: float | None,
    expected: float | tuple[float, float],
) -> None:
    low, high = expected if isinstance(expected, tuple) else (expected, expected)
    result = next_look(step_requeue, resync_period=60.0, paused=paused, rollout_after_in=rollout_after_in)
    assert low <= result.requeue_after <= high
    # an unready Machine's grace ending is a moment like rolloutAfter's
    graced = next_look(
        step_requeue, resync_period=60.0, paused=paused, rollout_after_in=None, degraded_in=rollout_after_in
    )
    assert low <= graced.requeue_after <= high


def test_control_planes_created_together_come_due_for_their_resync_apart() -> None:
    """Up to 10 % longer, never shorter: many ControlPlanes created together spread their polls
    of etcd instead of queueing them at one moment for ever."""
    looks = [
        next_look(None, resync_period=60.0, paused=False, rollout_after_in=None).requeue_after
        for _ in range(50)
    ]
    assert all(60.0 <= look <= 66.0 for look in looks)
    assert len(set(looks)) > 40


def test_a_remediations_retry_wait_ends_before_a_longer_preflight_backoff() -> None:
    """The failed replacement holds the preflight (its backoff grows to a minute) while its
    remediation waits a shorter retry period: the controller looks again when that wait ends, so
    the retry goes on time."""
    preflight_backoff = Result(requeue_after=32.0)
    look = next_look(preflight_backoff, resync_period=60.0, paused=False, rollout_after_in=None, retry_in=4.0)
    assert look.requeue_after == 4.0
    later = next_look(
        Result(requeue_after=5.0), resync_period=60.0, paused=False, rollout_after_in=None, retry_in=30.0
    )
    assert later.requeue_after == 5.0
    paused = next_look(Result(), resync_period=60.0, paused=True, rollout_after_in=None, retry_in=4.0)
    assert paused.requeue_after == 0.0
