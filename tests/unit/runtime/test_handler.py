"""Event handlers enqueue the right requests, each at most once per event."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from runtime.handler import (
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
    handler_funcs,
)
from runtime.reconcile import Request


class Recorder:
    """Records every add, duplicates included (a WorkQueue would hide a handler's duplicates)."""

    def __init__(self) -> None:
        self.added: list[Request] = []

    def add(self, item: Request) -> None:
        self.added.append(item)


def obj(name: str, namespace: str = "ns", owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if owners is not None:
        metadata["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "Thing", "metadata": metadata}


def owner_ref(
    name: str,
    api_version: str = "cpo.dev/v1alpha1",
    kind: str = "ControlPlane",
    controller: bool | None = True,
) -> dict[str, Any]:
    ref: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}"}
    if controller is not None:
        ref["controller"] = controller
    return ref


# --- EnqueueRequestForObject ---


def test_enqueue_for_object_enqueues_the_object_itself() -> None:
    h, q = EnqueueRequestForObject(), Recorder()
    h.create(CreateEvent(obj("a")), q)
    h.update(UpdateEvent(obj("old"), obj("new")), q)
    h.delete(DeleteEvent(obj("d")), q)
    h.generic(GenericEvent(obj("cluster-scoped", namespace="")), q)
    assert q.added == [
        Request("a", "ns"),
        Request("new", "ns"),
        Request("d", "ns"),
        Request("cluster-scoped"),
    ]


def test_enqueue_for_object_skips_objects_without_a_name() -> None:
    h, q = EnqueueRequestForObject(), Recorder()
    h.create(CreateEvent({"metadata": {}}), q)
    h.generic(GenericEvent({}), q)
    assert q.added == []


# --- EnqueueRequestForOwner ---


def test_owner_handler_enqueues_the_controller_owner_matching_group_and_kind() -> None:
    h, q = EnqueueRequestForOwner("cpo.dev/v1alpha1", "ControlPlane"), Recorder()
    h.create(
        CreateEvent(
            obj(
                "m1",
                owners=[
                    owner_ref("not-controller", controller=False),
                    owner_ref("other-kind", kind="MachineSet"),
                    owner_ref("other-group", api_version="other.dev/v1alpha1"),
                    # Another version of the same group matches: ownership is by group and kind.
                    owner_ref("cp", api_version="cpo.dev/v1beta1"),
                ],
            )
        ),
        q,
    )
    assert q.added == [Request("cp", "ns")]


def test_owner_handler_without_only_controller_enqueues_every_matching_owner() -> None:
    h, q = EnqueueRequestForOwner("cpo.dev/v1alpha1", "ControlPlane", only_controller=False), Recorder()
    h.delete(
        DeleteEvent(
            obj("m1", owners=[owner_ref("a", controller=False), owner_ref("b"), owner_ref("x", kind="Other")])
        ),
        q,
    )
    assert q.added == [Request("a", "ns"), Request("b", "ns")]


def test_owner_handler_update_enqueues_old_and_new_owner_once_each() -> None:
    h, q = EnqueueRequestForOwner("cpo.dev/v1alpha1", "ControlPlane"), Recorder()
    h.update(UpdateEvent(obj("m", owners=[owner_ref("old-cp")]), obj("m", owners=[owner_ref("new-cp")])), q)
    assert q.added == [Request("old-cp", "ns"), Request("new-cp", "ns")]
    q.added.clear()
    h.update(UpdateEvent(obj("m", owners=[owner_ref("cp")]), obj("m", owners=[owner_ref("cp")])), q)
    assert q.added == [Request("cp", "ns")]


def test_owner_handler_core_group_and_cluster_scoped_owners() -> None:
    q = Recorder()
    core = EnqueueRequestForOwner("v1", "ConfigMap")
    core.generic(GenericEvent(obj("x", owners=[owner_ref("cm", api_version="v1", kind="ConfigMap")])), q)
    cluster = EnqueueRequestForOwner("v1", "Namespace", owner_namespaced=False)
    cluster.generic(GenericEvent(obj("y", owners=[owner_ref("ns1", api_version="v1", kind="Namespace")])), q)
    assert q.added == [Request("cm", "ns"), Request("ns1")]


def test_owner_handler_ignores_objects_without_owners() -> None:
    h, q = EnqueueRequestForOwner("cpo.dev/v1alpha1", "ControlPlane"), Recorder()
    h.create(CreateEvent(obj("a")), q)
    h.create(CreateEvent(obj("b", owners=[])), q)
    assert q.added == []


def test_owner_handler_needs_a_type() -> None:
    with pytest.raises(ValueError, match="apiVersion and kind"):
        EnqueueRequestForOwner("", "ControlPlane")


# --- EnqueueRequestsFromMapFunc ---


def test_map_handler_dedupes_within_one_event() -> None:
    def machines_of(node: dict[str, Any]) -> list[Request]:
        names = node["metadata"].get("machines", [])
        return [Request(n, "ns") for n in names] + [Request(n, "ns") for n in names]

    h, q = EnqueueRequestsFromMapFunc(machines_of), Recorder()
    node = {"metadata": {"name": "n", "machines": ["m1", "m2"]}}
    h.create(CreateEvent(node), q)
    assert q.added == [Request("m1", "ns"), Request("m2", "ns")]
    # Across events nothing is deduped here (that is the workqueue's job).
    h.generic(GenericEvent(node), q)
    assert q.added == [Request("m1", "ns"), Request("m2", "ns")] * 2


def test_map_handler_update_maps_old_and_new_and_dedupes_the_union() -> None:
    h, q = (
        EnqueueRequestsFromMapFunc(lambda o: [Request(m, "ns") for m in o["metadata"]["machines"]]),
        Recorder(),
    )
    h.update(
        UpdateEvent({"metadata": {"machines": ["m1", "m2"]}}, {"metadata": {"machines": ["m2", "m3"]}}), q
    )
    assert q.added == [Request("m1", "ns"), Request("m2", "ns"), Request("m3", "ns")]
    q.added.clear()
    h.delete(DeleteEvent({"metadata": {"machines": ["m4"]}}), q)
    assert q.added == [Request("m4", "ns")]


def test_map_handler_refuses_results_that_are_not_requests() -> None:
    h = EnqueueRequestsFromMapFunc(lambda o: ["ns/name"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"must return runtime\.reconcile\.Request"):
        h.create(CreateEvent(obj("a")), Recorder())


def test_handler_funcs_call_only_the_functions_given() -> None:
    q = Recorder()
    h = handler_funcs(create=lambda e, queue: queue.add(Request("created")))
    h.create(CreateEvent(obj("a")), q)
    h.update(UpdateEvent(obj("a"), obj("a")), q)
    h.delete(DeleteEvent(obj("a")), q)
    h.generic(GenericEvent(obj("a")), q)
    assert q.added == [Request("created")]
