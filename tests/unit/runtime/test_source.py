"""Channel sources: external events through predicates and handlers into a real workqueue."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from runtime.event import GenericEvent
from runtime.handler import EnqueueRequestForObject, EnqueueRequestsFromMapFunc
from runtime.predicate import new_predicate_funcs
from runtime.reconcile import Request
from runtime.source import Channel, Kind
from runtime.workqueue import WorkQueue
from tests.support.poll import DEADLINE, eventually, let_other_tasks_run


def event(name: str, **labels: str) -> GenericEvent:
    return GenericEvent({"metadata": {"name": name, "namespace": "ns", "labels": labels}})


async def drain(queue: WorkQueue[Request], n: int) -> list[Request]:
    got = []
    for _ in range(n):
        item = await asyncio.wait_for(queue.get(), 5)
        queue.done(item)
        got.append(item)
    return got


async def test_channel_from_an_asyncio_queue_applies_predicates_and_accepts_requests() -> None:
    events: asyncio.Queue[Any] = asyncio.Queue()
    only_blue = new_predicate_funcs(lambda o: o["metadata"].get("labels", {}).get("color", "blue") == "blue")
    source = Channel(events, EnqueueRequestForObject(), only_blue)
    queue: WorkQueue[Request] = WorkQueue()
    await source.start(queue)
    await source.wait_for_sync()
    events.put_nowait(event("red", color="red"))
    events.put_nowait(event("blue", color="blue"))
    events.put_nowait(Request("bare", "ns"))  # a bare request has no labels: the default passes
    events.put_nowait("not an event")  # logged and skipped
    events.put_nowait(event("after-junk"))
    assert await drain(queue, 3) == [
        Request("blue", "ns"),
        Request("bare", "ns"),
        Request("after-junk", "ns"),
    ]
    await source.stop()
    queue.shutdown()


async def test_channel_survives_a_failing_handler() -> None:
    def fussy(obj: dict[str, Any]) -> list[Request]:
        if obj["metadata"]["name"] == "bad":
            raise KeyError("no such machine")
        return [Request(obj["metadata"]["name"], "ns")]

    events: asyncio.Queue[Any] = asyncio.Queue()
    source = Channel(events, EnqueueRequestsFromMapFunc(fussy))
    queue: WorkQueue[Request] = WorkQueue()
    await source.start(queue)
    events.put_nowait(event("bad"))
    events.put_nowait(event("good"))
    assert await drain(queue, 1) == [Request("good", "ns")]
    await source.stop()
    queue.shutdown()


async def test_channel_from_an_async_iterator_reads_until_it_ends() -> None:
    async def member_changes() -> AsyncIterator[GenericEvent]:
        for name in ("m1", "m2"):
            yield event(name)

    source = Channel(member_changes(), EnqueueRequestForObject())
    queue: WorkQueue[Request] = WorkQueue()
    await source.start(queue)
    assert await drain(queue, 2) == [Request("m1", "ns"), Request("m2", "ns")]
    await eventually(
        lambda: source._task is not None and source._task.done(), timeout=DEADLINE, message="reader finished"
    )
    await source.stop()
    queue.shutdown()


async def test_channel_stop_ends_the_reader_and_a_channel_starts_once() -> None:
    events: asyncio.Queue[Any] = asyncio.Queue()
    source = Channel(events, EnqueueRequestForObject())
    queue: WorkQueue[Request] = WorkQueue()
    await source.start(queue)
    with pytest.raises(RuntimeError, match="started twice"):
        await source.start(queue)
    await source.stop()
    events.put_nowait(event("after-stop"))
    await let_other_tasks_run()  # loop turns in which a live reader would take the event
    assert events.qsize() == 1
    queue.shutdown()


def test_sources_check_their_arguments() -> None:
    with pytest.raises(TypeError, match=r"asyncio\.Queue or an async iterator"):
        Channel([event("x")], EnqueueRequestForObject())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not an event handler"):
        Channel(asyncio.Queue(), lambda e, q: None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a predicate"):
        Channel(asyncio.Queue(), EnqueueRequestForObject(), lambda e: True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="apiVersion and a kind"):
        Kind(object(), "", "ConfigMap", EnqueueRequestForObject())  # type: ignore[arg-type]
