"""The adoption rules of the ControlPlane webhook (issue 26, case 4): spec.state, and replicas
against the existing Machines, at creation and at activation only."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import runtime.webhook as webhook
from api.failuredomains import FAILURE_DOMAIN_LABEL, ZONE_LABEL
from tests.unit.webhooks.test_controlplane import MASTER, cp
from tests.unit.webhooks.test_controlplane_adapters import request
from webhooks.adoption import (
    activates,
    adoption_errors,
    controlled_elsewhere,
    controlled_elsewhere_errors,
    counted_machines,
    existing_machines,
    machine_places,
    machines_from_reader,
    state_errors,
    state_transition_errors,
    unlisted_domain_errors,
)
from webhooks.controlplane import validate_controlplane_create, validate_controlplane_update
from webhooks.controlplane_admission import ControlPlaneDefaulter, ControlPlaneValidator


def machine(name: str, labels: dict[str, str] | None = None, deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "labels": dict(MASTER if labels is None else labels),
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine", "metadata": metadata}


THREE = [machine("m0"), machine("m1"), machine("m2")]


# ---------------------------------------------------------------------------------- the pure rules


@pytest.mark.parametrize(
    ("machines", "expected"),
    [
        (THREE, ["m0", "m1", "m2"]),
        ([*THREE, machine("gone", deleting=True)], ["m0", "m1", "m2"]),  # being deleted: not adopted
        (
            [*THREE, machine("worker", {"machine.openshift.io/cluster-api-machine-role": "worker"})],
            ["m0", "m1", "m2"],
        ),
        ([], []),
    ],
    ids=["three", "deleting-left-out", "not-matched-left-out", "none"],
)
def test_existing_machines_are_the_matched_ones_not_being_deleted(
    machines: list[dict[str, Any]], expected: list[str]
) -> None:
    assert existing_machines(cp()["spec"], machines) == expected


@pytest.mark.parametrize(
    ("replicas", "existing", "refused"),
    [
        (1, 3, True),  # the default replicas over a running three-member control plane
        (3, 3, False),
        (5, 3, True),
        (3, 1, True),
        (1, 0, False),  # an empty cluster bootstraps with no extra step
        (3, 0, False),
    ],
)
def test_replicas_must_equal_the_existing_machines_unless_there_are_none(
    replicas: int, existing: int, refused: bool
) -> None:
    names = [f"m{i}" for i in range(existing)]
    errors = adoption_errors({"replicas": replicas}, names, activating=False)
    assert bool(errors) is refused
    if refused:
        message = str(errors[0])
        assert message.startswith(
            f"spec.replicas: Invalid value: {replicas}: {existing} control-plane Machine(s)"
        )
        assert f"spec.replicas is {replicas}" in message
        assert f"set spec.replicas to {existing} to adopt them as they are" in message
        assert "or create the ControlPlane with spec.state Inactive" in message


def test_the_message_says_what_an_active_controlplane_would_do() -> None:
    assert "would delete 2 of them" in str(
        adoption_errors({"replicas": 1}, ["a", "b", "c"], activating=False)[0]
    )
    assert "would create 2 more at once" in str(
        adoption_errors({"replicas": 5}, ["a", "b", "c"], activating=False)[0]
    )
    activation = str(adoption_errors({"replicas": 1}, ["a", "b", "c"], activating=True)[0])
    assert activation.endswith(
        "set spec.replicas to 3 to adopt them as they are, or keep spec.state Inactive"
    )


@pytest.mark.parametrize("activating", [False, True])
def test_an_even_stacked_count_is_not_advised_as_replicas(activating: bool) -> None:
    """Two stacked Machines: the webhook refuses replicas 2 (even), so the advice is to make the
    count odd while Inactive, then activate with that count; external etcd keeps the plain advice."""
    message = str(adoption_errors({"replicas": 3}, ["a", "b"], activating=activating)[0])
    assert "set spec.replicas to 2" not in message
    assert "an even number of stacked etcd members cannot be adopted as it is" in message
    assert "make the count odd while the ControlPlane is Inactive" in message
    external = {"replicas": 3, "etcd": {"external": True}}
    assert "set spec.replicas to 2 to adopt them as they are" in str(
        adoption_errors(external, ["a", "b"], activating=activating)[0]
    )


@pytest.mark.parametrize(
    ("old", "new", "checked"),
    [
        (None, None, True),  # created without state: Active by default
        (None, "Active", True),
        (None, "Inactive", False),
        ("Inactive", "Active", True),  # activation
        ("Inactive", None, True),
        ("Inactive", "Inactive", False),
        ("Active", "Active", False),  # later scale changes are not compared with the Machines
        (None, "Bogus", False),
    ],
)
def test_machines_are_counted_only_when_the_request_activates(
    old: str | None, new: str | None, checked: bool
) -> None:
    old_spec = None if old is None else ({"state": old} if old else {})
    new_spec = {} if new is None else {"state": new}
    if old_spec is None:
        assert activates(None, new_spec) is checked
    else:
        assert activates(old_spec, new_spec) is checked


@pytest.mark.parametrize(
    ("old", "new", "refused"),
    [("Active", "Inactive", True), (None, "Inactive", True), ("Inactive", "Active", False),
     ("Inactive", "Inactive", False), ("Active", "Active", False)],
)  # fmt: skip
def test_active_never_goes_back_to_inactive(old: str | None, new: str, refused: bool) -> None:
    old_spec = {} if old is None else {"state": old}
    errors = state_transition_errors(old_spec, {"state": new})
    assert bool(errors) is refused
    if refused:
        assert str(errors[0]) == (
            "spec.state: Forbidden: cannot go back to Inactive once Active; to make the controller stop "
            "acting on these Machines, delete the ControlPlane (its Machines are released and stay)"
        )


def test_state_is_active_or_inactive() -> None:
    assert state_errors({"state": "Active"}) == [] and state_errors({"state": "Inactive"}) == []
    assert state_errors({}) == []
    assert str(state_errors({"state": "Paused"})[0]) == (
        'spec.state: Unsupported value: "Paused": supported values: "Active", "Inactive"'
    )
    errors, _ = validate_controlplane_create(cp(state="Paused"))
    assert [e.field for e in errors] == ["spec.state"]


def test_an_update_from_active_to_inactive_is_refused_and_an_unchanged_one_is_not() -> None:
    errors, _ = validate_controlplane_update(cp(state="Active"), cp(state="Inactive"))
    assert [str(e).split(":")[0] for e in errors] == ["spec.state"]
    assert validate_controlplane_update(cp(state="Inactive"), cp(state="Inactive")) == ([], [])


# ---------------------------------------------------------------------------------- the adapter


class Lister:
    """The Machines of each namespace, counting reads."""

    def __init__(self, machines: list[dict[str, Any]]) -> None:
        self.machines = machines
        self.reads = 0

    async def __call__(self, namespace: str) -> list[dict[str, Any]]:
        self.reads += 1
        return [m for m in self.machines if m["metadata"]["namespace"] == namespace]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def defaulted(**spec: Any) -> dict[str, Any]:
    body = cp(**spec)
    run(ControlPlaneDefaulter().default(body, request("CREATE")))
    return body


def test_create_over_three_machines_without_replicas_is_refused_with_both_numbers() -> None:
    validator = ControlPlaneValidator(list_machines=Lister(THREE))
    with pytest.raises(webhook.Denied) as denied:
        run(validator.validate_create(defaulted(replicas=None), request("CREATE")))
    assert denied.value.code == 422
    assert str(denied.value).startswith(
        'ControlPlane.controlplane.cpo.dev "cluster" is invalid: spec.replicas: Invalid value: 1: '
        "3 control-plane Machine(s) matching spec.selector exist and spec.replicas is 1"
    )


def test_create_inactive_or_matching_or_on_an_empty_namespace_is_accepted() -> None:
    assert run(ControlPlaneValidator(list_machines=Lister(THREE)).validate_create(
        defaulted(replicas=None, state="Inactive"), request("CREATE"))) == []  # fmt: skip
    assert run(ControlPlaneValidator(list_machines=Lister(THREE)).validate_create(
        defaulted(replicas=3), request("CREATE"))) == []  # fmt: skip
    other_namespace = [dict(m, metadata={**m["metadata"], "namespace": "other"}) for m in THREE]
    assert run(ControlPlaneValidator(list_machines=Lister(other_namespace)).validate_create(
        defaulted(replicas=None), request("CREATE"))) == []  # fmt: skip


def test_activation_is_checked_and_later_scale_changes_are_not() -> None:
    lister = Lister(THREE)
    validator = ControlPlaneValidator(list_machines=lister)
    with pytest.raises(webhook.Denied) as denied:
        run(validator.validate_update(cp(replicas=1, state="Inactive"), cp(replicas=1, state="Active"),
                                      request("UPDATE")))  # fmt: skip
    assert "or keep spec.state Inactive" in str(denied.value)
    assert run(validator.validate_update(cp(replicas=3, state="Inactive"), cp(replicas=3, state="Active"),
                                         request("UPDATE"))) == []  # fmt: skip
    reads = lister.reads
    assert run(validator.validate_update(cp(replicas=3, state="Active"), cp(replicas=5, state="Active"),
                                         request("UPDATE"))) == []  # fmt: skip
    assert lister.reads == reads, "a scale change of an Active ControlPlane reads no Machine"


def test_an_invalid_request_is_refused_without_reading_machines() -> None:
    lister = Lister(THREE)
    with pytest.raises(webhook.Denied):
        run(
            ControlPlaneValidator(list_machines=lister).validate_create(
                defaulted(replicas=4), request("CREATE")
            )
        )
    assert lister.reads == 0


class CacheLike:
    async def list(
        self, api_version: str, kind: str, *, namespace: str | None = None
    ) -> list[dict[str, Any]]:
        assert (api_version, kind) == ("machine.openshift.io/v1beta1", "Machine")
        return [m for m in THREE if m["metadata"]["namespace"] == namespace]


class ClientLike:
    async def list(self, api_version: str, kind: str, *, namespace: str | None = None) -> dict[str, Any]:
        return {"items": await CacheLike().list(api_version, kind, namespace=namespace)}


@pytest.mark.parametrize("reader", [CacheLike(), ClientLike()], ids=["cache", "client"])
def test_machines_from_reader_reads_a_cache_or_a_client(reader: Any) -> None:
    assert [m["metadata"]["name"] for m in run(machines_from_reader(reader)("ns"))] == ["m0", "m1", "m2"]


# ------------------------------------------------------------ Machines another controller controls


def controlled(m: dict[str, Any], kind: str, name: str, uid: str) -> dict[str, Any]:
    ref = {"apiVersion": "controlplane.cpo.dev/v1alpha1", "kind": kind, "name": name, "uid": uid,
           "controller": True}  # fmt: skip
    return dict(m, metadata={**m["metadata"], "ownerReferences": [ref]})


OWNED_BY_OLD = [controlled(m, "ControlPlane", "old", "uid-old") for m in THREE]


def test_create_over_machines_another_controlplane_controls_is_refused() -> None:
    """Such Machines are never adopted (controller ownerReference): an Active ControlPlane would
    create replicas Machines of its own beside them, so "3 = 3" must not pass as an adoption."""
    validator = ControlPlaneValidator(list_machines=Lister(OWNED_BY_OLD))
    with pytest.raises(webhook.Denied) as denied:
        run(validator.validate_create(defaulted(replicas=3), request("CREATE")))
    assert denied.value.code == 422
    message = str(denied.value)
    assert message.startswith(
        'ControlPlane.controlplane.cpo.dev "cluster" is invalid: spec.selector: Forbidden: '
        "Machine(s) m0, m1, m2 matching spec.selector are controlled by ControlPlane old"
    )
    assert "would create 3 Machine(s) of its own beside them" in message
    assert "delete ControlPlane old first (its Machines are released and stay)" in message
    assert "or create this ControlPlane with spec.state Inactive" in message
    # Inactive acts on nothing: accepted as before.
    assert run(validator.validate_create(defaulted(replicas=3, state="Inactive"), request("CREATE"))) == []


def test_activation_over_machines_another_controller_controls_is_refused() -> None:
    one_foreign = [OWNED_BY_OLD[0], *THREE[1:]]
    validator = ControlPlaneValidator(list_machines=Lister(one_foreign))
    with pytest.raises(webhook.Denied) as denied:
        run(validator.validate_update(cp(replicas=3, state="Inactive"), cp(replicas=3, state="Active"),
                                      request("UPDATE")))  # fmt: skip
    message = str(denied.value)
    assert (
        "spec.selector: Forbidden: Machine(s) m0 matching spec.selector are controlled by ControlPlane old"
        in message
    )
    assert message.endswith("or keep spec.state Inactive")


def test_machines_this_controlplane_controls_or_being_deleted_are_not_foreign() -> None:
    mine = [controlled(m, "ControlPlane", "cluster", "uid-mine") for m in THREE]
    body = cp(replicas=3, state="Active")
    body["metadata"]["uid"] = "uid-mine"
    old = cp(replicas=3, state="Inactive")
    old["metadata"]["uid"] = "uid-mine"
    validator = ControlPlaneValidator(list_machines=Lister(mine))
    assert run(validator.validate_update(old, body, request("UPDATE"))) == []
    dying = controlled(machine("gone", deleting=True), "ControlPlane", "old", "uid-old")
    assert run(ControlPlaneValidator(list_machines=Lister([*THREE, dying])).validate_create(
        defaulted(replicas=3), request("CREATE"))) == []  # fmt: skip


def test_machines_of_another_kind_of_controller_are_released_with_an_orphan_delete() -> None:
    by_machineset = [controlled(m, "MachineSet", "masters", "uid-ms") for m in THREE]
    errors = controlled_elsewhere_errors(
        {"replicas": 3}, controlled_elsewhere(cp()["spec"], by_machineset), 0, activating=False
    )
    assert "release them first (delete MachineSet masters with --cascade=orphan)" in str(errors[0])
    assert controlled_elsewhere(cp()["spec"], by_machineset, "uid-ms") == []


# ------------------------------------- round two of "does what its user means", case 3: domains

ZONES = [
    {"name": "zone-a", "providerSpec": {"value": {"failureDomain": "us-1a"}}},
    {"name": "zone-b", "providerSpec": {"value": {"failureDomain": "us-1b"}}},
]
ZONE_C = {"name": "zone-c", "providerSpec": {"value": {"failureDomain": "us-1c"}}}


def placed(name: str, *, domain: str | None = None, zone: str | None = None, spec_zone: str | None = None,
           deleting: bool = False) -> dict[str, Any]:  # fmt: skip
    """A master Machine with the ControlPlane's domain label ``domain``, the provider's zone label
    ``zone``, and/or a providerSpec naming ``spec_zone``."""
    obj = machine(name, deleting=deleting)
    if domain is not None:
        obj["metadata"]["labels"][FAILURE_DOMAIN_LABEL] = domain
    if zone is not None:
        obj["metadata"]["labels"][ZONE_LABEL] = zone
    value = {} if spec_zone is None else {"failureDomain": spec_zone}
    obj["spec"] = {"providerSpec": {"value": value}}
    return obj


@pytest.mark.parametrize(
    ("machines", "places"),
    [
        ([placed("m0", domain="zone-a"), placed("m1", domain="zone-b")], None),
        (
            [placed("m0", domain="zone-a"), placed("m1", spec_zone="us-1b"), placed("m2", zone="us-1a")],
            [("m0", "zone-a", True), ("m1", "zone-b", True), ("m2", "zone-a", True)],
        ),
        ([placed("m2", domain="zone-c")], [("m2", "zone-c", False)]),
        ([placed("m3", zone="us-1d")], [("m3", "zone us-1d", False)]),
        ([placed("m3", spec_zone="us-1d")], [("m3", "zone us-1d", False)]),
        ([placed("m4")], [("m4", "unknown", False)]),
    ],
    ids=[
        "case3-no-failure-domains-nothing-to-compare",
        "case3-label-providerspec-and-zone-label-all-listed",
        "case3-labelled-with-an-unlisted-domain",
        "case3-zone-label-no-listed-domain-names",
        "case3-providerspec-zone-no-listed-domain-names",
        "case3-domain-cannot-be-told",
    ],
)
def test_case3_machine_places(
    machines: list[dict[str, Any]], places: list[tuple[str, str, bool]] | None
) -> None:
    spec = cp(failureDomains=None if places is None else ZONES)["spec"]
    found = machine_places(spec, counted_machines(spec, machines))
    assert (None if found is None else [(p.machine, p.place, p.listed) for p in found]) == places


@pytest.mark.parametrize(
    ("domains", "machines", "refused"),
    [
        (ZONES, [placed("m0", domain="zone-a"), placed("m1", domain="zone-b")], None),
        (None, [placed("m0", domain="zone-a"), placed("m2", domain="zone-c")], None),
        ([*ZONES, ZONE_C], [placed("m0", domain="zone-a")], None),  # a listed domain no Machine uses
        (ZONES, [placed("m0", domain="zone-a"), placed("m2", domain="zone-c", deleting=True)], None),
        (
            ZONES,
            [placed("m0", domain="zone-a"), placed("m1", domain="zone-b"), placed("m2", domain="zone-c")],
            "spec.failureDomains lists [zone-a, zone-b] and the control-plane Machines matching "
            "spec.selector run in [zone-a, zone-b, zone-c]: an Active ControlPlane would replace m2 "
            "(zone-c) at once",
        ),
        (
            ZONES,
            [placed("m0", domain="zone-a"), placed("m3", zone="us-1d"), placed("m4")],
            "run in [zone-a, zone us-1d, unknown]: an Active ControlPlane would replace m3 (zone us-1d), "
            "m4 (its failure domain cannot be told) at once",
        ),
    ],
    ids=[
        "case3-every-machine-in-a-listed-domain",
        "case3-no-failure-domains-configured",
        "case3-a-listed-domain-without-machines-is-fine",
        "case3-a-machine-being-deleted-is-not-adopted",
        "case3-unlisted-domain-refused-with-both-lists",
        "case3-unlisted-zone-and-unknown-domain-named",
    ],
)
def test_case3_machines_in_unlisted_domains_are_refused(
    domains: list[dict[str, Any]] | None, machines: list[dict[str, Any]], refused: str | None
) -> None:
    spec = cp(failureDomains=domains)["spec"]
    errors = unlisted_domain_errors(
        spec, machine_places(spec, counted_machines(spec, machines)), activating=False
    )
    if refused is None:
        assert errors == []
        return
    assert [str(e) for e in errors] == [str(errors[0])] and str(errors[0]).startswith(
        "spec.failureDomains: Forbidden: "
    )
    assert refused in str(errors[0]), errors[0]
    assert str(errors[0]).endswith(
        "or create the ControlPlane with spec.state Inactive to see first what it would do"
    )


THREE_ZONES = [placed("m0", domain="zone-a"), placed("m1", domain="zone-b"), placed("m2", domain="zone-c")]


def test_case3_create_is_refused_inactive_create_accepted_and_activation_refused() -> None:
    validator = ControlPlaneValidator(list_machines=Lister(THREE_ZONES))
    with pytest.raises(webhook.Denied) as denied:
        run(validator.validate_create(defaulted(failureDomains=ZONES), request("CREATE")))
    assert denied.value.code == 422
    assert str(denied.value).startswith(
        'ControlPlane.controlplane.cpo.dev "cluster" is invalid: spec.failureDomains: Forbidden: '
        "spec.failureDomains lists [zone-a, zone-b] and the control-plane Machines matching spec.selector "
        "run in [zone-a, zone-b, zone-c]"
    ), denied.value
    inactive = defaulted(failureDomains=ZONES, state="Inactive")
    assert run(validator.validate_create(inactive, request("CREATE"))) == []
    with pytest.raises(webhook.Denied) as denied:
        run(validator.validate_update(inactive, cp(failureDomains=ZONES, state="Active"), request("UPDATE")))
    assert "run in [zone-a, zone-b, zone-c]" in str(denied.value)
    assert "or keep spec.state Inactive" in str(denied.value)
    listed = cp(failureDomains=[*ZONES, ZONE_C], state="Active")
    assert run(validator.validate_update(inactive, listed, request("UPDATE"))) == []
    assert run(validator.validate_create(defaulted(failureDomains=[*ZONES, ZONE_C]), request("CREATE"))) == []


def test_case3_a_wrong_count_and_an_unlisted_domain_are_both_reported() -> None:
    validator = ControlPlaneValidator(list_machines=Lister(THREE_ZONES))
    with pytest.raises(webhook.Denied) as denied:
        run(validator.validate_create(defaulted(replicas=1, failureDomains=ZONES), request("CREATE")))
    message = str(denied.value)
    assert "spec.replicas: Invalid value: 1: 3 control-plane Machine(s)" in message
    assert "spec.failureDomains: Forbidden: spec.failureDomains lists [zone-a, zone-b]" in message


def test_case3_later_domain_changes_of_an_active_controlplane_are_not_compared() -> None:
    """Removing a domain from an Active ControlPlane is a rebalance the user asks for."""
    validator = ControlPlaneValidator(list_machines=Lister(THREE_ZONES))
    old = cp(failureDomains=[*ZONES, ZONE_C], state="Active")
    assert (
        run(validator.validate_update(old, cp(failureDomains=ZONES, state="Active"), request("UPDATE"))) == []
    )
