"""Structured logs: JSON and console lines, and the per-reconcile keys on every line of a reconcile."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.controller import Controller, ControllerOptions
from runtime.event import GenericEvent
from runtime.handler import EnqueueRequestForObject
from runtime.log import configure_logging, current_context, current_reconcile_id, get_logger, log_context
from runtime.reconcile import Request, Result, reconciler_func
from runtime.source import Channel
from runtime.workqueue import FakeClock
from tests.support.poll import DEADLINE, eventually


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    """Root logging to a buffer in JSON for the test; the previous setup restored afterwards."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    buffer = io.StringIO()
    handler = configure_logging(format="json", level="debug", stream=buffer)
    yield buffer
    root.removeHandler(handler)
    root.setLevel(level)
    assert root.handlers == handlers


def lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_json_lines_carry_the_fields_the_keys_and_the_traceback(stream: io.StringIO) -> None:
    log = get_logger("example").with_values(component="demo")
    with log_context(controller="c1"):
        log.info("hello %s", replicas=3)  # no %-args: the message is kept verbatim
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("it failed", step="scale")
    logging.getLogger("plain").warning("no keys here")
    first, second, third = lines(stream)
    assert first["level"] == "info"
    assert first["logger"] == "example"
    assert first["msg"] == "hello %s"
    assert first["ts"].endswith("Z") and "T" in first["ts"]
    assert (first["controller"], first["component"], first["replicas"]) == ("c1", "demo", 3)
    assert second["level"] == "error"
    assert second["error"] == "ValueError: boom"
    assert second["stacktrace"].startswith("Traceback (most recent call last)")
    assert "raise ValueError" in second["stacktrace"]
    assert second["step"] == "scale"
    assert third == {k: third[k] for k in ("ts", "level", "logger", "msg")}
    assert third["msg"] == "no keys here"


def test_keys_that_collide_with_line_fields_are_kept_under_another_name(stream: io.StringIO) -> None:
    get_logger("x").info("real message", level_="ok", logger="mine")
    (line,) = lines(stream)
    assert line["logger"] == "x"
    assert line["logger_"] == "mine"


def test_console_format_is_tab_separated_with_keys_and_traceback() -> None:
    buffer = io.StringIO()
    target = f"console-{uuid.uuid4().hex[:8]}"
    configure_logging(format="console", level="info", stream=buffer, logger=target)
    log = get_logger(target)
    log.debug("dropped by the level")
    try:
        raise KeyError("k")
    except KeyError as err:
        log.error("bad", exc_info=err, key="v")
    text = buffer.getvalue()
    first_line, *rest = text.splitlines()
    _, level, name, msg, keys = first_line.split("\t")
    assert (level, name, msg, json.loads(keys)) == ("ERROR", target, "bad", {"key": "v"})
    assert rest[0].startswith("Traceback")
    assert "dropped" not in text


def test_configure_logging_refuses_unknown_formats_and_levels() -> None:
    with pytest.raises(ValueError, match="'json' or 'console'"):
        configure_logging(format="xml", logger="unused-xml")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown log level"):
        configure_logging(format="json", level="loud", logger="unused-level")


def test_configure_logging_twice_replaces_its_handler() -> None:
    target = f"twice-{uuid.uuid4().hex[:8]}"
    first, second = io.StringIO(), io.StringIO()
    configure_logging(format="json", stream=first, logger=target)
    configure_logging(format="json", stream=second, logger=target)
    logging.getLogger(target).info("once")
    assert first.getvalue() == ""
    assert len(second.getvalue().splitlines()) == 1


async def test_every_line_of_a_reconcile_carries_its_reconcile_id_and_object(stream: io.StringIO) -> None:
    name = f"logs-{uuid.uuid4().hex[:8]}"
    user_log = get_logger("user.reconciler")
    plain_log = logging.getLogger("user.plain")
    clock = FakeClock()
    attempts: dict[str, int] = {}
    both_running = asyncio.Event()
    running = 0
    ids: set[str | None] = set()

    async def helper(request: Request) -> None:
        # A task the reconciler starts inherits the reconcile's keys.
        user_log.info("from a sub-task", of=request.name)

    async def reconcile(request: Request) -> Result:
        nonlocal running
        attempts[request.name] = attempts.get(request.name, 0) + 1
        user_log.info("reconciling", of=request.name)
        ids.add(current_reconcile_id())
        running += 1
        if running == 2:
            both_running.set()
        await asyncio.wait_for(both_running.wait(), 5)  # the two keys interleave their lines
        plain_log.info("stdlib logger, of=%s", request.name)
        await asyncio.create_task(helper(request))
        running -= 1
        if request.name == "a" and attempts["a"] == 1:
            raise RuntimeError("first attempt of a fails")
        return Result()

    events: asyncio.Queue[GenericEvent] = asyncio.Queue()
    controller = Controller(
        name, reconciler_func(reconcile), ControllerOptions(max_concurrent_reconciles=2, clock=clock)
    )
    controller.watch(Channel(events, EnqueueRequestForObject()))
    stop = asyncio.Event()
    task = asyncio.create_task(controller.start(stop))
    events.put_nowait(GenericEvent.for_request(Request("a", "ns1")))
    events.put_nowait(GenericEvent.for_request(Request("b", "ns2")))
    await eventually(
        lambda: attempts == {"a": 1, "b": 1} and running == 0,
        timeout=DEADLINE,
        message="attempts == {'a': 1, 'b': 1} and running == 0",
    )
    both_running.clear()
    running = 1  # the retry of "a" runs alone: let it pass the rendezvous
    clock.advance(0.005)
    await eventually(
        lambda: attempts == {"a": 2, "b": 1}, timeout=DEADLINE, message="attempts == {'a': 2, 'b': 1}"
    )
    await eventually(
        lambda: controller.queue is not None and controller.queue.num_requeues(Request("a", "ns1")) == 0,
        timeout=DEADLINE,
        message="controller.queue is not None and controller.queue.num_requeues(Request('a', 'ns1')) == 0",
    )
    stop.set()
    await asyncio.wait_for(task, 5)

    reconcile_lines = [line for line in lines(stream) if "reconcileID" in line]
    by_id: dict[str, list[dict[str, Any]]] = {}
    for line in reconcile_lines:
        by_id.setdefault(line["reconcileID"], []).append(line)
    assert len(by_id) == 3, "three reconciles, three IDs"
    assert ids == set(by_id)
    assert current_reconcile_id() is None
    for group in by_id.values():
        objects = {(line["object"], line["namespace"], line["name"], line["controller"]) for line in group}
        assert len(objects) == 1, group
        (obj, namespace, obj_name, controller_name) = objects.pop()
        assert obj == f"{namespace}/{obj_name}"
        assert controller_name == name
        for line in group:  # every line names the object it was written for
            assert line.get("of", obj_name) == obj_name
            if line["logger"] == "user.plain":
                assert line["msg"].endswith(f"of={obj_name}")
        assert {line["msg"] for line in group} >= {
            "reconciling",
            "from a sub-task",
            f"stdlib logger, of={obj_name}",
        }
    errors = [line for line in reconcile_lines if line["level"] == "error"]
    assert len(errors) == 1
    assert errors[0]["msg"] == "Reconciler error"
    assert errors[0]["name"] == "a"
    assert errors[0]["error"] == "RuntimeError: first attempt of a fails"
    assert "Traceback" in errors[0]["stacktrace"]
    # Lines outside a reconcile carry the controller but no reconcile keys.
    outside = [line for line in lines(stream) if line.get("controller") == name and "reconcileID" not in line]
    assert outside and all("object" not in line for line in outside)


async def test_a_reconciles_keys_read_as_one_mapping_whose_id_never_changes() -> None:
    """The reconcile's context: the caller's keys, then object, namespace, name and reconcileID,
    the object's keys winning over a caller's of the same name; one ID for the whole reconcile,
    whoever reads it first (the reconciler, a nested log_context, a task or thread it starts)."""
    seen: list[dict[str, Any]] = []

    async def in_a_task() -> str | None:
        return current_reconcile_id()

    async def reconcile(request: Request) -> Result:
        context = current_context()
        first = dict(context)
        with log_context(step="inner"):
            nested = dict(current_context())
        from_task = await asyncio.create_task(in_a_task())
        from_thread = await asyncio.to_thread(current_reconcile_id)
        seen.append(
            {
                "first": first,
                "nested": nested,
                "task": from_task,
                "thread": from_thread,
                "again": current_reconcile_id(),
            }
        )
        assert len(context) == len(first) and set(context) == set(first)
        return Result()

    events: asyncio.Queue[GenericEvent] = asyncio.Queue()
    controller = Controller(f"keys-{uuid.uuid4().hex[:8]}", reconciler_func(reconcile))
    controller.watch(Channel(events, EnqueueRequestForObject()))
    stop = asyncio.Event()
    with log_context(caller="manager", name="shadowed by the object's"):
        task = asyncio.create_task(controller.start(stop))
    events.put_nowait(GenericEvent.for_request(Request("a", "ns1")))
    events.put_nowait(GenericEvent.for_request(Request("cluster-scoped")))
    await eventually(lambda: len(seen) == 2, timeout=DEADLINE, message="two reconciles")
    stop.set()
    await asyncio.wait_for(task, 5)

    first, second = sorted(seen, key=lambda s: str(s["first"]["name"]))
    assert list(first["first"]) == ["caller", "controller", "object", "namespace", "name", "reconcileID"]
    assert {k: first["first"][k] for k in ("caller", "object", "namespace", "name")} == {
        "caller": "manager",
        "object": "ns1/a",
        "namespace": "ns1",
        "name": "a",
    }
    assert second["first"]["object"] == "cluster-scoped" and second["first"]["namespace"] == ""
    for one in (first, second):
        rid = one["first"]["reconcileID"]
        assert uuid.UUID(rid).version == 4
        assert one["nested"] == {**one["first"], "step": "inner"}
        assert one["task"] == one["thread"] == one["again"] == rid
    assert first["first"]["reconcileID"] != second["first"]["reconcileID"]
