"""One namespace of Machines, fed to every user of the one model of a ControlPlane's Machines.

The ControlPlane controller (what it manages, adopts and reports), the etcd-quorum-hook controller
(whose members it guards, and in which failure domain each Machine is), a ControlPlane's release
(which Machines lose its reference), the admission webhook (what it counts and refuses) and the
MachineHealthCheck controller (whose Machines it only marks) must agree on which Machines are the
ControlPlane's. Each test feeds the same Machines to each user's own filter, the function that
user calls, and checks that their answers agree.
"""

from __future__ import annotations

from typing import Any

import pytest

from api.controlplane import ControlPlaneSpec
from api.failuredomains import ZONE_LABEL, machine_domain
from controllers.controlplane.machines import classify_machines
from controllers.controlplane.release import released_machines
from controllers.etcdquorum.reconciler import guarded_machines
from controllers.etcdquorum.rules import machine_info
from controllers.machinehealthcheck.marks import is_owned_by_controlplane
from webhooks.adoption import controlled_elsewhere, existing_machines

UID = "cp-uid"
ROLE = {"machine.openshift.io/cluster-api-machine-role": "master"}
MATCHED = {**ROLE, "cluster": "a"}
TEMPLATE = {"kind": "LocalMachineProviderSpec"}
SPEC = ControlPlaneSpec.model_validate(
    {
        "replicas": 3,
        "selector": {"matchLabels": MATCHED},
        "template": {
            "metadata": {"labels": MATCHED},
            "spec": {"providerSpec": {"value": TEMPLATE}},
        },
        "failureDomains": [
            {"name": name, "providerSpec": {"value": {"zone": f"us-1{name}"}}} for name in ("a", "b", "c")
        ],
    }
)
CP = {"metadata": {"name": "cp", "namespace": "ns", "uid": UID}, "spec": SPEC.model_dump(by_alias=True)}


def machine(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    controller: str | None = None,
    deleting: bool = False,
    zone: str | None = None,
    zone_label: str | None = None,
    referenced_by: str | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "labels": dict(MATCHED if labels is None else labels),
    }
    if zone_label is not None:
        metadata["labels"][ZONE_LABEL] = zone_label
    if controller is not None:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "controlplane.cpo.dev/v1alpha1",
                "kind": "ControlPlane",
                "name": "cp" if controller == UID else "other",
                "uid": controller,
                "controller": True,
            }
        ]
    if referenced_by is not None:
        # An ownerReference that is not the controller's (a tool's, or one a release left).
        metadata["ownerReferences"] = [
            {
                "apiVersion": "controlplane.cpo.dev/v1alpha1",
                "kind": "ControlPlane",
                "name": "cp",
                "uid": referenced_by,
            }
        ]
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    value = {**TEMPLATE, **({"zone": zone} if zone else {})}
    return {"metadata": metadata, "spec": {"providerSpec": {"value": value}}}


MACHINES = [
    machine("owned", controller=UID, zone="us-1a"),
    machine("owned-relabelled", labels={**ROLE, "cluster": "b"}, controller=UID, zone="us-1b"),
    machine("owned-deleting", controller=UID, deleting=True, zone="us-1a"),
    machine("theirs", controller="other-uid", zone="us-1b"),
    machine("unowned-deleting", deleting=True, zone="us-1c"),
    machine("adopted-unlabelled-zone", zone_label="us-1c"),
    machine("worker", labels={"machine.openshift.io/cluster-api-machine-role": "worker"}),
    machine("referenced-not-controlled", referenced_by=UID, zone="us-1c"),
]


def names(machines: list[Any]) -> set[str]:
    return {m["metadata"]["name"] for m in machines}


def test_every_machine_the_controlplane_manages_or_adopts_is_guarded_by_the_hook() -> None:
    ownership = classify_machines(UID, SPEC.selector.to_dict(), MACHINES)
    guarded = names(guarded_machines(CP, SPEC, MACHINES))
    assert names(ownership.owned) == {"owned", "owned-relabelled", "owned-deleting"}
    assert names(ownership.adoptable) == {"adopted-unlabelled-zone", "referenced-not-controlled"}
    # A Machine whose selector labels were edited is still scaled and rolled by the ControlPlane:
    # its member must be guarded like the others, or its deletion would lose it unguarded.
    assert names(ownership.owned) | names(ownership.adoptable) <= guarded
    # The hook also keeps members of Machines being deleted and of another controller's Machines
    # mapped; nothing the selector does not match and the ControlPlane does not own.
    assert guarded == names(MACHINES) - {"worker"}


def test_the_webhook_counts_and_refuses_what_the_controller_would_adopt_and_report() -> None:
    ownership = classify_machines(UID, SPEC.selector.to_dict(), MACHINES)
    counted = set(existing_machines(CP["spec"], MACHINES))
    # What an Active ControlPlane would adopt is counted; so is every matched Machine it owns.
    assert names(ownership.adoptable) <= counted
    assert counted == {"owned", "theirs", "adopted-unlabelled-zone", "referenced-not-controlled"}
    foreign = {name for name, _ in controlled_elsewhere(CP["spec"], MACHINES, UID)}
    assert foreign == names(ownership.owned_by_others) == {"theirs"}


def test_a_release_drops_the_reference_of_every_owned_machine_whatever_its_labels() -> None:
    ownership = classify_machines(UID, SPEC.selector.to_dict(), MACHINES)
    # Every reference to the ControlPlane goes with it, a controller's or not.
    assert names(released_machines(CP, MACHINES)) == names(ownership.owned) | {"referenced-not-controlled"}


@pytest.mark.parametrize(
    "obj",
    [pytest.param(m, id=f"when the Machine is {m['metadata']['name']}") for m in MACHINES],
)
def test_the_health_check_marks_instead_of_deleting_exactly_the_controlplane_controlled(obj: Any) -> None:
    controlled_by_this = obj["metadata"]["name"] in names(
        classify_machines(UID, SPEC.selector.to_dict(), MACHINES).owned
    )
    controlled_by_other = obj["metadata"]["name"] == "theirs"
    assert is_owned_by_controlplane(obj) == (controlled_by_this or controlled_by_other)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(MACHINES[0], "a", id="when the providerSpec names a configured domain's zone"),
        pytest.param(MACHINES[5], "c", id="when only the zone label names a configured domain's zone"),
        pytest.param(
            machine("elsewhere", zone_label="eu-2a"), None, id="when the zone is no configured domain's"
        ),
    ],
)
def test_both_controllers_read_the_same_failure_domain(obj: Any, expected: str | None) -> None:
    assert machine_domain(SPEC, obj) == expected
    assert machine_info(obj, cp_spec=SPEC).failure_domain == expected
