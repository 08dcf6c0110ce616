"""The builder refuses incomplete or contradictory declarations with a message saying what to change.
(Its wiring is tested end to end on the API server in tests/integration/test_controller_builder.py.)"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from runtime.builder import ControllerBuilder
from runtime.controller import ControllerOptions
from runtime.handler import EnqueueRequestForObject
from runtime.reconcile import Request, Result, reconciler_func
from runtime.runnable import Runnable
from runtime.source import Channel


class NotStartedCache:
    """Builders only construct sources; nothing here may reach the cache."""

    def informer_for(self, api_version: str, kind: str) -> Any:
        raise AssertionError("the builder must not touch the cache before the controller starts")


class Manager:
    def __init__(self) -> None:
        self.client: Any = None
        self.cache = NotStartedCache()
        self.added: list[Runnable] = []

    def add(self, runnable: Runnable) -> None:
        self.added.append(runnable)


async def noop(request: Request) -> Result:
    return Result()


def unique() -> str:
    return f"b-{uuid.uuid4().hex[:8]}"


def test_owns_needs_for() -> None:
    with pytest.raises(ValueError, match=r"owns\(\) needs for_\(\)"):
        ControllerBuilder(Manager()).named(unique()).owns("v1", "Secret").complete(reconciler_func(noop))


def test_a_controller_without_for_needs_a_name() -> None:
    builder = ControllerBuilder(Manager()).watches("v1", "Secret", EnqueueRequestForObject())
    with pytest.raises(ValueError, match=r"call named\(\)"):
        builder.complete(reconciler_func(noop))


def test_for_only_once() -> None:
    with pytest.raises(ValueError, match="use watches"):
        ControllerBuilder(Manager()).for_("v1", "ConfigMap").for_("v1", "Secret")


def test_types_and_options_are_checked() -> None:
    with pytest.raises(ValueError, match="apiVersion and a kind"):
        ControllerBuilder(Manager()).for_("v1", "")
    with pytest.raises(TypeError, match="ControllerOptions"):
        ControllerBuilder(Manager()).with_options({"max_concurrent_reconciles": 2})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty controller name"):
        ControllerBuilder(Manager()).named(" ")


def test_complete_builds_once_and_adds_the_controller_with_every_watch() -> None:
    manager = Manager()
    name = unique()
    builder = (
        ControllerBuilder(manager)
        .named(name)
        .for_("cpo.dev/v1alpha1", "ControlPlane")
        .owns("machine.openshift.io/v1beta1", "Machine")
        .watches("v1", "Node", EnqueueRequestForObject())
        .watches_source(Channel(asyncio.Queue(), EnqueueRequestForObject()))
        .with_options(ControllerOptions(max_concurrent_reconciles=3, need_leader_election=False))
    )
    controller = builder.complete(reconciler_func(noop))
    assert manager.added == [controller]
    assert controller.name == name
    assert controller.options.max_concurrent_reconciles == 3
    assert controller.need_leader_election() is False
    assert controller.options.log_values == {"controllerGroup": "cpo.dev", "controllerKind": "ControlPlane"}
    assert [repr(s) for s in controller._pending] == [
        "Kind(cpo.dev/v1alpha1, ControlPlane)",
        "Kind(machine.openshift.io/v1beta1, Machine)",
        "Kind(v1, Node)",
        "Channel(Queue)",
    ]
    with pytest.raises(RuntimeError, match="already built"):
        builder.complete(reconciler_func(noop))
