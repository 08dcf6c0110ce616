"""The template's labels and annotations written onto Machines in place
(controllers/controlplane/template_metadata.py): what one merge patch changes on a Machine, what it
never touches, and that a Machine in step gets no write at all."""

from __future__ import annotations

import json
from typing import Any

import pytest

from api.failuredomains import FAILURE_DOMAIN_LABEL
from controllers.controlplane.placement import (
    SPEC_HASH_ANNOTATION,
    TEMPLATE_METADATA_ANNOTATION,
    new_machine,
    previous_template_hash,
    template_hash,
)
from controllers.controlplane.template_metadata import kept_labels, metadata_patch, recorded_keys
from tests.support.controlplane_specs import CONTROLPLANE, local_spec

MASTER = {"machine.openshift.io/cluster-api-machine-role": "master"}
VALUE = {"kind": "LocalMachineProviderSpec", "size": 1}


def template(
    labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """``spec.template`` with the role label plus ``labels``, and ``annotations``."""
    metadata: dict[str, Any] = {"labels": {**MASTER, **(labels or {})}}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": {"providerSpec": {"value": VALUE}}}


def made_by(
    labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """The Machine this version creates in domain a from such a template, as stored."""
    machine = new_machine(
        local_spec(template=template(labels, annotations)), "a", name="m", owner=CONTROLPLANE
    )
    machine["metadata"]["resourceVersion"] = "7"
    return machine


def record(labels: list[str], annotations: list[str]) -> str:
    return json.dumps({"labels": sorted(labels), "annotations": sorted(annotations)}, separators=(",", ":"))


ROLE = "machine.openshift.io/cluster-api-machine-role"
COST = "example.com/cost-centre"
NOTE = "example.com/owner"


def others_label(machine: dict[str, Any]) -> dict[str, Any]:
    machine["metadata"]["labels"]["example.com/team"] = "storage"
    machine["metadata"]["annotations"]["example.com/ticket"] = "OPS-7"
    return machine


def provider_zone(machine: dict[str, Any]) -> dict[str, Any]:
    machine["metadata"]["labels"]["machine.openshift.io/zone"] = "a"
    return machine


def previous_version(machine: dict[str, Any]) -> dict[str, Any]:
    """As the previous version left it: its hash, no record."""
    annotations = machine["metadata"]["annotations"]
    del annotations[TEMPLATE_METADATA_ANNOTATION]
    annotations[SPEC_HASH_ANNOTATION] = previous_template_hash(local_spec(template=template()), "a")
    return machine


def adopted(machine: dict[str, Any]) -> dict[str, Any]:
    annotations = machine["metadata"]["annotations"]
    del annotations[TEMPLATE_METADATA_ANNOTATION]
    del annotations[SPEC_HASH_ANNOTATION]
    del machine["metadata"]["labels"][FAILURE_DOMAIN_LABEL]
    return machine


def operator_keys(machine: dict[str, Any]) -> dict[str, Any]:
    """The operator's own keys, recorded as if the template had set them once."""
    machine["metadata"]["annotations"]["etcd.cpo.dev/peer"] = "x"
    machine["metadata"]["annotations"][TEMPLATE_METADATA_ANNOTATION] = record(
        [ROLE, "controlplane.cpo.dev/failure-domain"], ["etcd.cpo.dev/peer"]
    )
    return machine


def unreadable_record(machine: dict[str, Any]) -> dict[str, Any]:
    machine["metadata"]["annotations"][TEMPLATE_METADATA_ANNOTATION] = "{not json"
    return machine


CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any] | None]] = [
    ("a Machine in step with the template gets no write", made_by(), template(), None),
    (
        "a label added to the template is written on the Machine, and recorded",
        made_by(),
        template({COST: "cc-42"}),
        {"labels": {COST: "cc-42"}, "annotations": {TEMPLATE_METADATA_ANNOTATION: record([COST, ROLE], [])}},
    ),
    (
        "an annotation added to the template is written on the Machine, and recorded",
        made_by(),
        template(annotations={NOTE: "team-a"}),
        {"annotations": {NOTE: "team-a", TEMPLATE_METADATA_ANNOTATION: record([ROLE], [NOTE])}},
    ),
    (
        "a changed value in the template is written",
        made_by({COST: "cc-41"}),
        template({COST: "cc-42"}),
        {"labels": {COST: "cc-42"}},
    ),
    (
        "a label and an annotation removed from the template are removed from the Machine",
        made_by({COST: "cc-42"}, {NOTE: "team-a"}),
        template(),
        {
            "labels": {COST: None},
            "annotations": {NOTE: None, TEMPLATE_METADATA_ANNOTATION: record([ROLE], [])},
        },
    ),
    (
        "a label and an annotation someone else set on the Machine stay",
        others_label(made_by({COST: "cc-42"})),
        template(),
        {"labels": {COST: None}, "annotations": {TEMPLATE_METADATA_ANNOTATION: record([ROLE], [])}},
    ),
    (
        "a provider's label stays while the template does not set it",
        provider_zone(made_by()),
        template({COST: "cc-42"}),
        {"labels": {COST: "cc-42"}, "annotations": {TEMPLATE_METADATA_ANNOTATION: record([COST, ROLE], [])}},
    ),
    (
        "the template wins over a provider's value for a key it sets",
        provider_zone(made_by()),
        template({"machine.openshift.io/zone": "b"}),
        {
            "labels": {"machine.openshift.io/zone": "b"},
            "annotations": {TEMPLATE_METADATA_ANNOTATION: record([ROLE, "machine.openshift.io/zone"], [])},
        },
    ),
    (
        "the operator's own keys are neither written nor removed, nor recorded",
        operator_keys(made_by()),
        template(annotations={"controlplane.cpo.dev/spec-hash": "forged"}),
        {"annotations": {TEMPLATE_METADATA_ANNOTATION: record([ROLE], [])}},
    ),
    (
        "upgrade: a Machine of the previous version gets today's hash and a record, nothing removed",
        others_label(previous_version(made_by())),
        template(),
        {
            "annotations": {
                TEMPLATE_METADATA_ANNOTATION: record([ROLE], []),
                SPEC_HASH_ANNOTATION: template_hash(local_spec(template=template()), "a"),
            }
        },
    ),
    (
        "an adopted Machine gets the template's keys and a record, no hash, and loses nothing",
        others_label(adopted(made_by())),
        template({COST: "cc-42"}),
        {"labels": {COST: "cc-42"}, "annotations": {TEMPLATE_METADATA_ANNOTATION: record([COST, ROLE], [])}},
    ),
    (
        "an unreadable record removes nothing and is written anew",
        unreadable_record(made_by({COST: "cc-42"})),
        template(),
        {"annotations": {TEMPLATE_METADATA_ANNOTATION: record([ROLE], [])}},
    ),
]


@pytest.mark.parametrize(
    ("machine", "new_template", "changes"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_metadata_patch(
    machine: dict[str, Any], new_template: dict[str, Any], changes: dict[str, Any] | None
) -> None:
    patch = metadata_patch(local_spec(template=new_template), machine)
    if changes is None:
        assert patch is None
        return
    assert patch == {"metadata": {"resourceVersion": "7", **changes}}


def test_the_selector_and_role_labels_are_never_removed() -> None:
    """Even recorded and gone from the template, a label the selector names stays, and so does
    the control-plane role label the operator's cache selects Machines by."""
    selector = {
        "matchLabels": {**MASTER, "tier": "cp"},
        "matchExpressions": [{"key": "rack", "operator": "Exists"}],
    }
    machine = made_by({"tier": "cp", "rack": "r1", COST: "cc-42"})
    spec = local_spec(selector=selector, template={"spec": {"providerSpec": {"value": VALUE}}})
    assert kept_labels(spec) == {ROLE, "tier", "rack"}
    patch = metadata_patch(spec, machine)
    assert patch is not None and patch["metadata"]["labels"] == {COST: None}


def test_a_written_machine_is_in_step() -> None:
    """Idempotent: the Machine as the patch leaves it needs no other write."""
    machine = others_label(previous_version(made_by({COST: "cc-41"}, {NOTE: "team-a"})))
    spec = local_spec(template=template({COST: "cc-42", "example.com/env": "prod"}))
    patch = metadata_patch(spec, machine)
    assert patch is not None
    metadata = machine["metadata"]
    for section in ("labels", "annotations"):
        for key, value in (patch["metadata"].get(section) or {}).items():
            if value is None:
                metadata[section].pop(key, None)
            else:
                metadata[section][key] = value
    assert metadata_patch(spec, machine) is None
    assert metadata["labels"]["example.com/team"] == "storage"


@pytest.mark.parametrize(
    ("stored", "keys"),
    [
        (None, (set(), set())),
        (record(["a"], ["b"]), ({"a"}, {"b"})),
        ("{not json", (set(), set())),
        ('["a"]', (set(), set())),
        ('{"labels": "a", "annotations": [1, "b"]}', (set(), {"b"})),
    ],
    ids=["no record", "a record", "not JSON", "not an object", "wrong shapes keep only the strings listed"],
)
def test_recorded_keys(stored: str | None, keys: tuple[set[str], set[str]]) -> None:
    annotations = {} if stored is None else {TEMPLATE_METADATA_ANNOTATION: stored}
    assert recorded_keys({"metadata": {"annotations": annotations}}) == keys
