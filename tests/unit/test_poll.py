"""The tests' one way of waiting, :func:`tests.support.poll.eventually`, and its mirror ``holds_for``."""

from __future__ import annotations

import itertools

import pytest

from tests.support.poll import eventually, holds_for


async def test_returns_the_first_truthy_value_of_a_plain_predicate() -> None:
    counter = itertools.count()
    assert await eventually(lambda: next(counter) >= 3 and "third", timeout=5, message="third") == "third"


async def test_awaits_a_coroutine_predicate_and_returns_its_value() -> None:
    calls: list[int] = []

    async def ready() -> list[int] | None:
        calls.append(len(calls))
        return calls if len(calls) == 3 else None

    assert await eventually(ready, timeout=5, message="three calls", interval=0) == [0, 1, 2]


async def test_fails_after_the_timeout_with_the_message_and_the_last_value() -> None:
    with pytest.raises(AssertionError, match=r"not within 0.05 s: nothing yet \(last value: 0\)"):
        await eventually(lambda: 0, timeout=0.05, message="nothing yet")


async def test_an_exception_is_polled_again_and_reported_when_time_runs_out() -> None:
    attempts = itertools.count()

    def flaky() -> bool:
        if next(attempts) < 2:
            raise ConnectionError("not listening yet")
        return True

    assert await eventually(flaky, timeout=5, message="listening") is True

    def broken() -> bool:
        raise ConnectionError("never listening")

    with pytest.raises(AssertionError, match="last error: ConnectionError") as failure:
        await eventually(broken, timeout=0.05, message="listening")
    assert isinstance(failure.value.__cause__, ConnectionError)


async def test_an_assertion_in_the_predicate_is_the_verdict_at_once() -> None:
    calls = itertools.count()

    def verdict() -> bool:
        next(calls)
        raise AssertionError("the process exited")

    with pytest.raises(AssertionError, match="the process exited"):
        await eventually(verdict, timeout=5, message="ready")
    assert next(calls) == 1


async def test_holds_for_fails_the_first_time_the_predicate_is_falsy() -> None:
    values = iter([True, True, False])

    async def holding() -> bool:
        return next(values)

    with pytest.raises(AssertionError, match="stopped holding: steady"):
        await holds_for(holding, duration=5, message="steady")
