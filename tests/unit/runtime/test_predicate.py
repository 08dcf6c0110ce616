"""Predicates pass exactly the events they describe; and_/or_/not_ combine them."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from runtime.predicate import (
    AnnotationChangedPredicate,
    GenerationChangedPredicate,
    LabelChangedPredicate,
    Predicate,
    ResourceVersionChangedPredicate,
    and_,
    label_selector_predicate,
    new_predicate_funcs,
    not_,
    or_,
    predicate_funcs,
)


def obj(
    generation: int = 1, rv: str = "1", labels: dict[str, str] | None = None, annotations: Any = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": "x",
        "namespace": "ns",
        "generation": generation,
        "resourceVersion": rv,
    }
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"metadata": metadata}


def all_kinds(p: Predicate, o: dict[str, Any]) -> list[bool]:
    return [p.create(CreateEvent(o)), p.delete(DeleteEvent(o)), p.generic(GenericEvent(o))]


def test_generation_changed_passes_spec_changes_only() -> None:
    p = GenerationChangedPredicate()
    assert p.update(UpdateEvent(obj(generation=1), obj(generation=2)))
    assert not p.update(UpdateEvent(obj(generation=1, rv="1"), obj(generation=1, rv="2")))
    assert all_kinds(p, obj()) == [True, True, True]


def test_resource_version_changed_drops_resync_updates() -> None:
    p = ResourceVersionChangedPredicate()
    assert p.update(UpdateEvent(obj(rv="1"), obj(rv="2")))
    assert not p.update(UpdateEvent(obj(rv="1"), obj(rv="1")))
    assert all_kinds(p, obj()) == [True, True, True]


def test_label_changed_treats_absent_and_empty_as_equal() -> None:
    p = LabelChangedPredicate()
    assert p.update(UpdateEvent(obj(labels={"a": "1"}), obj(labels={"a": "2"})))
    assert p.update(UpdateEvent(obj(), obj(labels={"a": "1"})))
    assert not p.update(UpdateEvent(obj(labels={}), obj()))
    assert not p.update(UpdateEvent(obj(labels={"a": "1"}, rv="1"), obj(labels={"a": "1"}, rv="2")))
    assert all_kinds(p, obj()) == [True, True, True]


def test_annotation_changed() -> None:
    p = AnnotationChangedPredicate()
    assert p.update(UpdateEvent(obj(annotations={"a": "1"}), obj(annotations={"a": "2"})))
    assert not p.update(UpdateEvent(obj(annotations={}), obj()))
    assert not p.update(UpdateEvent(obj(labels={"l": "1"}), obj(labels={"l": "2"})))


@pytest.mark.parametrize(
    "predicate",
    [
        GenerationChangedPredicate(),
        ResourceVersionChangedPredicate(),
        LabelChangedPredicate(),
        AnnotationChangedPredicate(),
    ],
)
def test_updates_without_objects_pass_no_changed_predicate(predicate: Predicate) -> None:
    assert not predicate.update(UpdateEvent({}, obj()))
    assert not predicate.update(UpdateEvent(obj(), {"kind": "NoMetadata"}))


TRUE = predicate_funcs()
FALSE = predicate_funcs(
    create=lambda e: False, update=lambda e: False, delete=lambda e: False, generic=lambda e: False
)


def test_predicate_funcs_pass_kinds_without_a_function() -> None:
    only_creates = predicate_funcs(update=lambda e: False, delete=lambda e: False, generic=lambda e: False)
    assert all_kinds(only_creates, obj()) == [True, False, False]
    assert not only_creates.update(UpdateEvent(obj(), obj()))
    assert all_kinds(TRUE, obj()) == [True, True, True]


def test_new_predicate_funcs_filters_the_new_object_of_an_update() -> None:
    p = new_predicate_funcs(lambda o: o["metadata"]["generation"] > 1)
    assert p.update(UpdateEvent(obj(generation=1), obj(generation=2)))
    assert not p.update(UpdateEvent(obj(generation=2), obj(generation=1)))
    assert all_kinds(p, obj(generation=2)) == [True, True, True]
    assert all_kinds(p, obj(generation=1)) == [False, False, False]


def test_and_or_not() -> None:
    event = UpdateEvent(obj(generation=1, labels={"a": "1"}), obj(generation=2, labels={"a": "1"}))
    generation, labels = GenerationChangedPredicate(), LabelChangedPredicate()
    assert not and_(generation, labels).update(event)
    assert or_(generation, labels).update(event)
    assert not or_(labels, labels).update(event)
    assert and_(generation, not_(labels)).update(event)
    assert not not_(generation).update(event)
    for kind in range(3):
        assert all_kinds(and_(TRUE, TRUE), obj())[kind]
        assert not all_kinds(and_(TRUE, FALSE), obj())[kind]
        assert all_kinds(or_(FALSE, TRUE), obj())[kind]
        assert not all_kinds(or_(FALSE, FALSE), obj())[kind]
        assert all_kinds(not_(FALSE), obj())[kind]
        assert not all_kinds(not_(TRUE), obj())[kind]
    assert all_kinds(and_(), obj()) == [True, True, True]
    assert all_kinds(or_(), obj()) == [False, False, False]


def test_combinators_refuse_what_is_not_a_predicate() -> None:
    with pytest.raises(TypeError, match="predicate_funcs"):
        and_(lambda e: True)  # type: ignore[arg-type]


def test_label_selector_predicate() -> None:
    p = label_selector_predicate(
        {
            "matchLabels": {"role": "master"},
            "matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["a", "b"]},
                {"key": "skip", "operator": "DoesNotExist"},
                {"key": "tier", "operator": "NotIn", "values": ["x"]},
            ],
        }
    )
    assert p.create(CreateEvent(obj(labels={"role": "master", "zone": "a"})))
    assert not p.create(CreateEvent(obj(labels={"role": "master", "zone": "c"})))
    assert not p.create(CreateEvent(obj(labels={"role": "master", "zone": "a", "skip": ""})))
    assert not p.create(CreateEvent(obj(labels={"role": "master", "zone": "a", "tier": "x"})))
    assert not p.create(CreateEvent(obj(labels={"zone": "a"})))
    assert not p.create(CreateEvent(obj()))
    assert label_selector_predicate({}).create(CreateEvent(obj()))
    exists = label_selector_predicate({"matchExpressions": [{"key": "k", "operator": "Exists"}]})
    assert exists.delete(DeleteEvent(obj(labels={"k": ""})))
    assert not exists.delete(DeleteEvent(obj(labels={})))


@pytest.mark.parametrize(
    "selector",
    [
        {"matchExpressions": [{"key": "k", "operator": "Maybe"}]},
        {"matchExpressions": [{"key": "k", "operator": "In"}]},
        {"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["v"]}]},
    ],
)
def test_invalid_label_selectors_are_refused_up_front(selector: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"label selector: matchExpressions\[0\]"):
        label_selector_predicate(selector)
