"""Controllers on the embedded API server: Kind sources through the informer cache, and the builder's
for_/owns/watches wiring end to end, with event filters and predicates applied per event."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

from runtime.builder import ControllerBuilder
from runtime.cache import Cache, CacheOptions
from runtime.client import Client
from runtime.controller import Controller, ControllerOptions
from runtime.handler import EnqueueRequestForObject, EnqueueRequestsFromMapFunc
from runtime.predicate import GenerationChangedPredicate, new_predicate_funcs
from runtime.reconcile import Request, Result, reconciler_func
from runtime.runnable import Runnable
from runtime.source import Kind
from tests.support.crds import GROUP, VERSION, widget
from tests.support.poll import DEADLINE, eventually

WIDGET_API = f"{GROUP}/{VERSION}"


class MiniManager:
    """The three things the builder needs of a manager, and a way to run what was added.

    Runs the cache and the controllers side by side, as the manager does once it leads.
    """

    def __init__(self, client: Client, namespace: str) -> None:
        self.client = client
        self.cache = Cache(client, CacheOptions(namespace=namespace))
        self.runnables: list[Runnable] = []
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def add(self, runnable: Runnable) -> None:
        self.runnables.append(runnable)

    async def __aenter__(self) -> MiniManager:
        for runnable in (self.cache, *self.runnables):
            self._tasks.append(asyncio.create_task(runnable.start(self._stop)))
        await asyncio.wait_for(self.cache.wait_for_cache_sync(), 10)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        await asyncio.wait_for(asyncio.gather(*self._tasks), 10)


def config_map(
    name: str, namespace: str, labels: dict[str, str] | None = None, **data: str
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "data": data,
    }


def secret(
    name: str, namespace: str, owner: dict[str, Any] | None, controller: bool = True
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner is not None:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": controller,
            }
        ]
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "stringData": {"k": "v"}}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Recorder:
    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()

    async def reconcile(self, request: Request) -> Result:
        self.seen[request.name] += 1
        return Result()


async def test_a_kind_source_replays_the_cache_then_follows_changes_with_predicates(
    client: Client, namespace: str
) -> None:
    await client.create(config_map("before-start", namespace))
    await client.create(config_map("before-start-ignored", namespace, labels={"ignore": "yes"}))
    recorder = Recorder()
    cache = Cache(client, CacheOptions(namespace=namespace))
    not_ignored = new_predicate_funcs(lambda o: (o["metadata"].get("labels") or {}).get("ignore") != "yes")
    controller = Controller(unique("kind"), recorder)
    controller.watch(Kind(cache, "v1", "ConfigMap", EnqueueRequestForObject(), not_ignored))
    stop = asyncio.Event()
    tasks = [asyncio.create_task(cache.start(stop)), asyncio.create_task(controller.start(stop))]
    try:
        # Objects that existed before the start arrive through the informer's initial list.
        await eventually(
            lambda: recorder.seen["before-start"] == 1,
            timeout=DEADLINE,
            message="recorder.seen['before-start'] == 1",
        )
        await client.create(config_map("created", namespace))
        await eventually(
            lambda: recorder.seen["created"] == 1, timeout=DEADLINE, message="recorder.seen['created'] == 1"
        )
        await client.patch("v1", "ConfigMap", "created", {"data": {"k": "2"}}, namespace=namespace)
        await eventually(
            lambda: recorder.seen["created"] == 2, timeout=DEADLINE, message="recorder.seen['created'] == 2"
        )
        await client.delete("v1", "ConfigMap", "created", namespace=namespace)
        await eventually(
            lambda: recorder.seen["created"] == 3, timeout=DEADLINE, message="recorder.seen['created'] == 3"
        )
        # Events of one informer arrive in order: once "marker" is seen, the ignored ones were
        # judged by the predicate already.
        await client.create(config_map("created-ignored", namespace, labels={"ignore": "yes"}))
        await client.create(config_map("marker", namespace))
        await eventually(
            lambda: recorder.seen["marker"] == 1, timeout=DEADLINE, message="recorder.seen['marker'] == 1"
        )
        assert recorder.seen["before-start-ignored"] == 0
        assert recorder.seen["created-ignored"] == 0
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)


async def test_the_builder_wires_for_owns_watches_and_event_filters(client: Client, namespace: str) -> None:
    manager = MiniManager(client, namespace)
    recorder = Recorder()

    def parent_of_service_account(sa: dict[str, Any]) -> list[Request]:
        parent = (sa["metadata"].get("annotations") or {}).get("example.dev/parent")
        return [Request(parent, sa["metadata"]["namespace"])] if parent else []

    skip_label = new_predicate_funcs(lambda o: (o["metadata"].get("labels") or {}).get("skip") != "yes")
    name = unique("builder")
    controller = (
        ControllerBuilder(manager)
        .named(name)
        .for_("v1", "ConfigMap")
        .owns("v1", "Secret")
        .watches("v1", "ServiceAccount", EnqueueRequestsFromMapFunc(parent_of_service_account))
        .with_event_filter(skip_label)
        .with_options(ControllerOptions(max_concurrent_reconciles=2))
        .complete(reconciler_func(recorder.reconcile))
    )
    assert manager.runnables == [controller]
    assert controller.name == name
    assert controller.options.log_values == {"controllerGroup": "", "controllerKind": "ConfigMap"}

    async with manager:
        parent = await client.create(config_map("parent", namespace))
        await eventually(
            lambda: recorder.seen["parent"] == 1, timeout=DEADLINE, message="for_: the object's own event"
        )

        # owns: a Secret controlled by the ConfigMap wakes it, on create and on update.
        await client.create(secret("child", namespace, parent))
        await eventually(
            lambda: recorder.seen["parent"] == 2,
            timeout=DEADLINE,
            message="owns: the controlled child's create",
        )
        await client.patch("v1", "Secret", "child", {"metadata": {"labels": {"v": "2"}}}, namespace=namespace)
        await eventually(
            lambda: recorder.seen["parent"] == 3,
            timeout=DEADLINE,
            message="owns: the controlled child's update",
        )

        # owns matches the controller reference only; the filter applies to owned objects too.
        other = await client.create(config_map("other", namespace))
        await eventually(
            lambda: recorder.seen["other"] == 1, timeout=DEADLINE, message="recorder.seen['other'] == 1"
        )
        await client.create(secret("not-controlled", namespace, other, controller=False))
        skipped = secret("skipped-child", namespace, other)
        skipped["metadata"]["labels"] = {"skip": "yes"}
        await client.create(skipped)
        await client.create(secret("marker-child", namespace, parent))
        await eventually(lambda: recorder.seen["parent"] == 4, timeout=DEADLINE, message="owns: marker")
        assert recorder.seen["other"] == 1

        # watches: any handler, here a map function over an annotation.
        await client.create(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {
                    "name": "sa",
                    "namespace": namespace,
                    "annotations": {"example.dev/parent": "mapped-target"},
                },
            }
        )
        await eventually(
            lambda: recorder.seen["mapped-target"] == 1,
            timeout=DEADLINE,
            message="watches: the mapped request",
        )

        # with_event_filter: dropped for the for_ type as well.
        await client.create(config_map("filtered", namespace, labels={"skip": "yes"}))
        await client.create(config_map("marker", namespace))
        await eventually(
            lambda: recorder.seen["marker"] == 1, timeout=DEADLINE, message="recorder.seen['marker'] == 1"
        )
        assert recorder.seen["filtered"] == 0
        # Nothing reconciled what it should not have.
        assert set(recorder.seen) == {"parent", "other", "mapped-target", "marker"}


async def test_the_builder_names_the_controller_after_the_for_kind(client: Client, namespace: str) -> None:
    manager = MiniManager(client, namespace)
    controller = (
        ControllerBuilder(manager)
        .for_("v1", "ConfigMap")
        .with_options(ControllerOptions(skip_name_validation=True))
        .complete(Recorder())
    )
    assert controller.name == "configmap"


async def test_status_writes_of_the_reconciler_do_not_retrigger_it_behind_generation_changed(
    client: Client, namespace: str, widgets_installed: None
) -> None:
    """The everyday shape: reconcile on spec changes, write status, and do not loop on that write."""
    manager = MiniManager(client, namespace)
    passes: Counter[str] = Counter()

    async def reconcile(request: Request) -> Result:
        passes[request.name] += 1
        widget_now = await manager.cache.get(WIDGET_API, "Widget", request.name, request.namespace)
        await client.patch_status(
            WIDGET_API,
            "Widget",
            request.name,
            {"status": {"replicas": widget_now["spec"]["replicas"], "phase": f"pass-{passes[request.name]}"}},
            namespace=request.namespace,
        )
        return Result()

    (
        ControllerBuilder(manager)
        .named(unique("widgets"))
        .for_(WIDGET_API, "Widget", GenerationChangedPredicate())
        .complete(reconciler_func(reconcile))
    )
    async with manager:
        await client.create(widget("w", namespace, replicas=1))
        await eventually(lambda: passes["w"] == 1, timeout=DEADLINE, message="passes['w'] == 1")
        await client.patch(WIDGET_API, "Widget", "w", {"spec": {"replicas": 3}}, namespace=namespace)
        await eventually(lambda: passes["w"] == 2, timeout=DEADLINE, message="passes['w'] == 2")
        # The status write of pass 2 reaches the informer before this marker's create does.
        await eventually(
            lambda: (
                (manager.cache.informer_for(WIDGET_API, "Widget").get_by_key(f"{namespace}/w") or {})
                .get("status", {})
                .get("phase")
                == "pass-2"
            ),
            timeout=DEADLINE,
            message="the informer holds the status of pass 2 of w",
        )
        await client.create(widget("marker", namespace))
        await eventually(lambda: passes["marker"] == 1, timeout=DEADLINE, message="passes['marker'] == 1")
        assert passes["w"] == 2, "a status-only write re-triggered the reconcile"
