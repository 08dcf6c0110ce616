"""Which Machines are a ControlPlane's (:mod:`api.ownership`): the controller-owner rule and each
relation, one table each."""

from __future__ import annotations

from typing import Any

import pytest

from api.ownership import ControlPlaneMachines, Relation, controller_owner, controlling_controlplane, relate

UID = "cp-uid"
SELECTOR = {"matchLabels": {"role": "master", "cluster": "a"}}
MATCHED = {"role": "master", "cluster": "a"}


def with_owners(*refs: Any) -> dict[str, Any]:
    return {"metadata": {"name": "m", "ownerReferences": list(refs)}}


def machine(
    name: str = "m",
    *,
    labels: dict[str, str] | None = None,
    controller: str | None = None,
    other_refs: tuple[str, ...] = (),
    deleting: bool = False,
) -> dict[str, Any]:
    refs: list[dict[str, Any]] = [{"uid": uid, "kind": "X", "name": "x"} for uid in other_refs]
    if controller is not None:
        refs.append({"uid": controller, "kind": "ControlPlane", "name": "cp", "controller": True})
    metadata: dict[str, Any] = {"name": name, "labels": dict(MATCHED if labels is None else labels)}
    if refs:
        metadata["ownerReferences"] = refs
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": metadata}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            with_owners({"uid": "a"}, {"uid": "b", "controller": True}),
            "b",
            id="when one reference says controller true it is the controller",
        ),
        pytest.param(
            with_owners({"uid": "a", "controller": False}), None, id="when controller is false there is none"
        ),
        pytest.param(
            with_owners({"uid": "a", "controller": "true"}),
            None,
            id="when controller is the string true it does not count (only the boolean, as in Kubernetes)",
        ),
        pytest.param(
            with_owners({"uid": "a", "controller": 1}),
            None,
            id="when controller is a number it does not count",
        ),
        pytest.param(
            with_owners("not-a-reference", {"uid": "c", "controller": True}),
            "c",
            id="when an entry is not an object it is skipped",
        ),
        pytest.param({"metadata": {}}, None, id="when there are no references there is none"),
        pytest.param({}, None, id="when there is no metadata there is none"),
    ],
)
def test_controller_owner_is_the_reference_with_controller_true(obj: Any, expected: str | None) -> None:
    owner = controller_owner(obj)
    assert (owner or {}).get("uid") == expected


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        pytest.param(
            {"apiVersion": "controlplane.cpo.dev/v1alpha1", "kind": "ControlPlane", "name": "cp"},
            "cp",
            id="when a ControlPlane of this version controls it, that one is named",
        ),
        pytest.param(
            {"apiVersion": "controlplane.cpo.dev/v1beta1", "kind": "ControlPlane", "name": "cp"},
            "cp",
            id="when a ControlPlane of another version of the group controls it, that one is named",
        ),
        pytest.param(
            {"apiVersion": "other.io/v1", "kind": "ControlPlane", "name": "cp"},
            None,
            id="when a kind of the same name in another group controls it, none is named",
        ),
        pytest.param(
            {"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet", "name": "ms"},
            None,
            id="when a MachineSet controls it, none is named",
        ),
    ],
)
def test_controlling_controlplane_is_read_by_group_and_kind(
    ref: dict[str, Any], expected: str | None
) -> None:
    assert controlling_controlplane(with_owners({**ref, "uid": "u", "controller": True})) == expected
    assert controlling_controlplane(with_owners({**ref, "uid": "u", "controller": False})) is None


@pytest.mark.parametrize(
    ("obj", "relation", "guarded", "counted", "referenced"),
    [
        pytest.param(
            machine(controller=UID), Relation.OWNED, True, True, True, id="when it controls it, owned"
        ),
        pytest.param(
            machine(labels={"role": "master", "cluster": "b"}, controller=UID),
            Relation.OWNED,
            True,
            False,
            True,
            id="when its selector labels were edited it stays owned and guarded",
        ),
        pytest.param(
            machine(controller=UID, deleting=True),
            Relation.OWNED,
            True,
            False,
            True,
            id="when an owned one is being deleted it stays owned and guarded, and is not counted",
        ),
        pytest.param(
            machine(), Relation.ADOPTABLE, True, True, False, id="when nobody controls it, adoptable"
        ),
        pytest.param(
            machine(deleting=True),
            Relation.UNRELATED,
            True,
            False,
            False,
            id="when an unowned one is being deleted it is not adopted but still guarded",
        ),
        pytest.param(
            machine(controller="other"),
            Relation.FOREIGN,
            True,
            True,
            False,
            id="when another controller controls a matched one, foreign and guarded",
        ),
        pytest.param(
            machine(labels={"role": "worker"}),
            Relation.UNRELATED,
            False,
            False,
            False,
            id="when the selector does not match and nobody controls it, unrelated",
        ),
        pytest.param(
            machine(labels={"role": "worker"}, controller="other"),
            Relation.UNRELATED,
            False,
            False,
            False,
            id="when another controller controls an unmatched one, unrelated",
        ),
        pytest.param(
            machine(other_refs=(UID,)),
            Relation.ADOPTABLE,
            True,
            True,
            True,
            id="when only a non-controller reference names it, it is adoptable and referenced",
        ),
    ],
)
def test_relation_of_a_machine_to_a_controlplane(
    obj: dict[str, Any], relation: Relation, guarded: bool, counted: bool, referenced: bool
) -> None:
    found = relate(UID, SELECTOR, obj)
    assert (found.relation, found.guarded, found.counted, found.referenced) == (
        relation,
        guarded,
        counted,
        referenced,
    )


def test_a_controlplane_not_created_yet_owns_nothing_and_every_controlled_match_is_foreign() -> None:
    assert relate(None, SELECTOR, machine(controller=UID)).relation is Relation.FOREIGN
    assert not relate(None, SELECTOR, machine(other_refs=(UID,))).referenced


def test_each_filter_keeps_the_order_it_was_given() -> None:
    machines = [machine("z", controller=UID), machine("a"), machine("m", controller="other")]
    classified = ControlPlaneMachines.of(UID, SELECTOR, machines)
    assert [m["metadata"]["name"] for m in classified.guarded] == ["z", "a", "m"]
    assert classified.names(classified.guarded) == ["a", "m", "z"]
