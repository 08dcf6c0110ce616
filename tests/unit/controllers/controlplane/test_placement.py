"""Where a ControlPlane's Machines go and which are outdated (controllers/controlplane/placement.py):
the desired Machine, spec.rolloutAfter, failure domains and the scale-in choice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest

from api.controlplane import ControlPlaneSpec
from api.failuredomains import FAILURE_DOMAIN_LABEL, machine_domain
from api.machine import REASON_TEMPLATE_CHANGED
from controllers.common import parse_time
from controllers.controlplane.machines import (
    MachineInfo,
    controller_ref,
)
from controllers.controlplane.placement import (
    SPEC_HASH_ANNOTATION,
    SPEC_HASH_PREFIX,
    TEMPLATE_METADATA_ANNOTATION,
    applied_record,
    choose_failure_domain,
    desired_machine,
    hash_to_rewrite,
    is_outdated,
    new_machine,
    outdated_reason,
    previous_template_hash,
    rollout_after_due,
    seconds_until_rollout_after,
    select_for_scale_in,
    template_hash,
)
from controllers.controlplane.scale import next_step
from controllers.controlplane.status import StatusInputs, compute_status
from tests.support.controlplane_specs import CONTROLPLANE, spec_with
from tests.support.machine_rows import cp_machine

T0 = datetime(2026, 1, 1, tzinfo=UTC)


MASTER = {"machine.openshift.io/cluster-api-machine-role": "master"}


def spec(**extra: Any) -> ControlPlaneSpec:
    raw: dict[str, Any] = {
        "replicas": 3,
        "template": {"spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "size": 1}}}},
        "failureDomains": [
            {"name": "a", "providerSpec": {"value": {"failureDomain": "a"}}},
            {"name": "b", "providerSpec": {"value": {"failureDomain": "b"}}},
        ],
    }
    raw.update(extra)
    return ControlPlaneSpec.model_validate(raw)


m = partial(cp_machine, failure_domain="a")
"""A row of :func:`cp_machine` in failure domain a."""


def created_machine(
    s: ControlPlaneSpec, domain: str, created: str = "2026-01-01T00:00:00Z"
) -> dict[str, Any]:
    wanted = desired_machine(s, domain)
    return {
        "metadata": {
            "name": "x",
            "creationTimestamp": created,
            "labels": {**wanted["labels"], FAILURE_DOMAIN_LABEL: domain},
            "annotations": {**wanted["annotations"], SPEC_HASH_ANNOTATION: template_hash(s, domain)},
        },
        "spec": {"providerSpec": wanted["providerSpec"]},
    }


def test_desired_machine_merges_the_domain_over_the_template() -> None:
    s = spec()
    assert desired_machine(s, "b")["providerSpec"]["value"] == {
        "kind": "LocalMachineProviderSpec",
        "size": 1,
        "failureDomain": "b",
    }
    assert desired_machine(s, "b")["labels"] == MASTER  # defaults to the selector's matchLabels
    assert template_hash(s, "a") != template_hash(s, "b")


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({}, None),
        (
            {
                "template": {
                    "spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "size": 2}}}
                }
            },
            "its spec differs from the template",
        ),
        (
            {
                "template": {
                    "metadata": {"labels": MASTER, "annotations": {"team": "x"}},
                    "spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec", "size": 1}}},
                }
            },
            None,
        ),
        (
            {
                "failureDomains": [
                    {"name": "a", "providerSpec": {"value": {"failureDomain": "a", "rack": 7}}},
                    {"name": "b"},
                ]
            },
            "its spec differs from the template",
        ),
        (
            {"failureDomains": [{"name": "b"}, {"name": "c"}]},
            "failure domain a is not in spec.failureDomains",
        ),
        (
            {"rolloutAfter": "2026-01-02T00:00:00Z"},
            "it was created before spec.rolloutAfter, which has passed",
        ),
        ({"rolloutAfter": "2025-12-31T00:00:00Z"}, None),
    ],
    ids=[
        "a Machine made from the current spec is up to date",
        "a changed providerSpec outdates it",
        "new template metadata does not outdate it (it is written in place)",
        "a changed failure domain providerSpec outdates it",
        "a failure domain no longer configured outdates its Machines",
        "a passed rolloutAfter outdates a Machine created before it",
        "a rolloutAfter before its creation outdates nothing",
    ],
)
def test_is_outdated(change: dict[str, Any], why: str | None) -> None:
    machine = created_machine(spec(), "a")
    assert is_outdated(spec(**change), machine, now=datetime(2026, 6, 1, tzinfo=UTC)) == why


ROLLOUT_AFTER = "2026-03-01T12:00:00Z"


AT_ROLLOUT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("created", "now", "outdated"),
    [
        # Before the moment: nothing is outdated by it, however old the Machine.
        ("2026-01-01T00:00:00Z", AT_ROLLOUT - timedelta(hours=1), False),
        ("2026-01-01T00:00:00Z", AT_ROLLOUT - timedelta(seconds=1), False),
        # At and after the moment: Machines created before it are outdated ...
        ("2026-01-01T00:00:00Z", AT_ROLLOUT, True),
        ("2026-03-01T11:59:59Z", AT_ROLLOUT + timedelta(hours=2), True),
        # ... their replacements, created after it, are not (the rollout ends) ...
        ("2026-03-01T12:00:01Z", AT_ROLLOUT + timedelta(seconds=5), False),
        # ... nor one created in the very second it names (whole seconds, as the API stores).
        ("2026-03-01T12:00:00Z", AT_ROLLOUT + timedelta(seconds=5), False),
        # A sub-second clock reading in that second is still the moment itself.
        ("2026-01-01T00:00:00Z", AT_ROLLOUT + timedelta(microseconds=999_999), True),
    ],
    ids=[
        "an hour before the moment nothing is outdated",
        "a second before the moment nothing is outdated",
        "at the moment a Machine created before it is outdated",
        "after the moment a Machine created before it is outdated",
        "a replacement created after the moment is not outdated",
        "a Machine created in the very second it names is not outdated",
        "a sub-second reading within that second is the moment itself",
    ],
)
def test_rollout_after_outdates_only_machines_created_before_it_once_it_has_passed(
    created: str, now: datetime, outdated: bool
) -> None:
    s = spec(rolloutAfter=ROLLOUT_AFTER)
    assert rollout_after_due(s, parse_time(created), now=now) is outdated
    why = is_outdated(s, created_machine(s, "a", created=created), now=now)
    assert (why == "it was created before spec.rolloutAfter, which has passed") is outdated
    assert why is None or outdated


def test_rollout_after_ignores_sub_seconds_of_its_own_value() -> None:
    s = ControlPlaneSpec.model_validate(
        {**spec().model_dump(by_alias=True, exclude_none=True), "rolloutAfter": "2026-03-01T12:00:00.600Z"}
    )
    assert rollout_after_due(s, parse_time("2026-03-01T12:00:00Z"), now=AT_ROLLOUT) is False
    assert rollout_after_due(s, parse_time("2026-03-01T11:59:59Z"), now=AT_ROLLOUT) is True


def test_no_rollout_after_or_no_creation_time_outdates_nothing() -> None:
    assert rollout_after_due(spec(), parse_time("2026-01-01T00:00:00Z"), now=AT_ROLLOUT) is False
    assert rollout_after_due(spec(rolloutAfter=ROLLOUT_AFTER), None, now=AT_ROLLOUT) is False


@pytest.mark.parametrize(
    ("now", "wait"),
    [
        (AT_ROLLOUT - timedelta(hours=1), 3600.0),
        (AT_ROLLOUT - timedelta(seconds=15), 15.0),
        (AT_ROLLOUT - timedelta(seconds=1), 1.0),
        (AT_ROLLOUT - timedelta(microseconds=1), 1.0),  # same second: never a busy loop
        (AT_ROLLOUT, None),  # due: the rollout itself requeues
        (AT_ROLLOUT + timedelta(minutes=5), None),
    ],
    ids=[
        "an hour before it waits an hour",
        "fifteen seconds before it waits fifteen seconds",
        "a second before it waits a second",
        "within the same second it waits a whole second, never a busy loop",
        "at the moment it no longer waits",
        "after the moment it no longer waits",
    ],
)
def test_seconds_until_rollout_after(now: datetime, wait: float | None) -> None:
    assert seconds_until_rollout_after(spec(rolloutAfter=ROLLOUT_AFTER), now=now) == wait
    assert seconds_until_rollout_after(spec(), now=now) is None


def status_of(machines: list[MachineInfo], **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"replicas": 3, "selector": "role=master", "generation": 4, "machines": machines}
    args.update(kw)
    return compute_status(StatusInputs(**args))


def rolled_infos(s: ControlPlaneSpec, created: dict[str, str], now: datetime) -> list[MachineInfo]:
    """The Machines as the reconciler sees them at ``now``: outdated by :func:`is_outdated`."""
    return [
        m(
            name,
            created=parse_time(at),
            failure_domain=domain,
            outdated=is_outdated(s, created_machine(s, domain, created=at), now=now) is not None,
        )
        for (name, at), domain in zip(created.items(), ["a", "b", "a"], strict=True)
    ]


OLD_SET = {"m1": "2026-01-01T00:00:00Z", "m2": "2026-01-01T00:00:01Z", "m3": "2026-01-01T00:00:02Z"}


def test_a_future_rollout_after_replaces_nothing_and_counts_every_machine_updated() -> None:
    s = spec(rolloutAfter=ROLLOUT_AFTER)
    infos = rolled_infos(s, OLD_SET, AT_ROLLOUT - timedelta(hours=1))
    step = next_step(replicas=3, strategy="RollingUpdate", max_surge=1, domains=["a", "b"], machines=infos)
    assert step.action not in ("create", "delete"), step
    assert status_of(infos)["updatedReplicas"] == 3


def test_a_passed_rollout_after_replaces_each_old_machine_once_then_nothing() -> None:
    s = spec(rolloutAfter=ROLLOUT_AFTER)
    infos = rolled_infos(s, OLD_SET, AT_ROLLOUT)
    step = next_step(replicas=3, strategy="RollingUpdate", max_surge=1, domains=["a", "b"], machines=infos)
    assert step.action == "create" and status_of(infos)["updatedReplicas"] == 0
    # Replacements made during the rollout, one in the very second it names: none is outdated.
    replaced = {"r1": "2026-03-01T12:00:00Z", "r2": "2026-03-01T12:00:40Z", "r3": "2026-03-01T12:01:30Z"}
    infos = rolled_infos(s, replaced, AT_ROLLOUT + timedelta(hours=1))
    step = next_step(replicas=3, strategy="RollingUpdate", max_surge=1, domains=["a", "b"], machines=infos)
    assert step.action not in ("create", "delete"), step
    assert status_of(infos)["updatedReplicas"] == 3


def test_an_adopted_machine_without_the_annotation_is_compared_by_content() -> None:
    s = spec()
    machine = created_machine(s, "b")
    del machine["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
    del machine["metadata"]["labels"][FAILURE_DOMAIN_LABEL]
    assert is_outdated(s, machine, now=T0) is None
    machine["spec"]["providerSpec"]["value"]["size"] = 5
    assert is_outdated(s, machine, now=T0) is not None


PROVIDER_LABELS = {
    "machine.openshift.io/region": "local",
    "machine.openshift.io/zone": "b",
    "machine.openshift.io/instance-type": "local",
}
"""What a Machine API provider (the local one among them) labels a running Machine with."""


@pytest.mark.parametrize(
    "adopted",
    [
        pytest.param(False, id="when the ControlPlane created the Machine (spec-hash annotation)"),
        pytest.param(True, id="when the Machine was adopted (no annotation, no domain label)"),
    ],
)
def test_the_providers_region_zone_and_type_labels_outdate_nothing(adopted: bool) -> None:
    """The spec hash covers the template's labels only (an adopted Machine's observed hash reads
    only the keys the template sets), so the labels a provider adds never make a Machine outdated."""
    template = {"metadata": {"labels": MASTER}, "spec": spec().model_dump(by_alias=True)["template"]["spec"]}
    s = spec(template=template)
    assert s.template.metadata is not None and s.template.metadata.labels == MASTER
    machine = created_machine(s, "b")
    if adopted:
        del machine["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
        del machine["metadata"]["labels"][FAILURE_DOMAIN_LABEL]
    assert is_outdated(s, machine, now=T0) is None
    machine["metadata"]["labels"] |= PROVIDER_LABELS
    assert machine_domain(s, machine) == "b"
    assert is_outdated(s, machine, now=T0) is None


def test_an_adopted_machine_keeps_its_domain_after_the_template_changes() -> None:
    """Without the label, the domain whose own providerSpec the Machine carries names it, once
    the whole providerSpec no longer matches the template; a Machine that fits two domains has none."""
    s = spec()
    machine = created_machine(s, "b")
    del machine["metadata"]["labels"][FAILURE_DOMAIN_LABEL]
    assert machine_domain(s, machine) == "b"
    bigger = {"kind": "LocalMachineProviderSpec", "size": 2}
    changed = spec(template={"spec": {"providerSpec": {"value": bigger}}})
    assert machine_domain(changed, machine) == "b"
    assert outdated_reason(changed, machine, now=T0) == (
        REASON_TEMPLATE_CHANGED,
        "its spec differs from the template",
    )
    catch_all = {"name": "any", "providerSpec": {"value": {"kind": "LocalMachineProviderSpec"}}}
    both = spec(
        template={"spec": {"providerSpec": {"value": bigger}}},
        failureDomains=[*s.model_dump(by_alias=True)["failureDomains"], catch_all],
    )
    assert machine_domain(changed, machine) == "b" and machine_domain(both, machine) is None


@pytest.mark.parametrize(
    ("domains", "machines", "expected"),
    [
        ([], [], None),
        (["b", "a"], [], "a"),  # tie: alphabetical
        (["a", "b"], [m("1", failure_domain="a")], "b"),
        (["a", "b", "c"], [m("1", failure_domain="a"), m("2", failure_domain="c")], "b"),
        (["a", "b"], [m("1", failure_domain="a"), m("2", failure_domain="b", deleting=True)], "b"),
        (["a", "b"], [m("1", failure_domain="b"), m("2", failure_domain="gone")], "a"),
    ],
    ids=[
        "no domain configured gives none",
        "a tie goes to the first in alphabetical order",
        "the domain without a Machine is chosen",
        "the emptiest of three domains is chosen",
        "a deleting Machine does not count in its domain",
        "a Machine in a domain no longer configured counts in none",
    ],
)
def test_choose_failure_domain(domains: list[str], machines: list[MachineInfo], expected: str | None) -> None:
    assert choose_failure_domain(domains, machines) == expected


@pytest.mark.parametrize(
    ("machines", "prefer", "expected"),
    [
        # the replaced Machine's domain wins a tie for fewest (a rollout keeps the spread) ...
        ([m("b1", failure_domain="b"), m("c1", failure_domain="c")], ["a"], "a"),
        ([m("a1", failure_domain="a"), m("b1", failure_domain="b")], ["a"], "c"),  # ... not more
        ([m("a1", failure_domain="a"), m("b1", failure_domain="b"), m("c1", failure_domain="c")], ["b"], "b"),
        # a domain no longer configured is never preferred; the first preferred one among the fewest
        ([m("a1", failure_domain="a"), m("b1", failure_domain="b")], ["gone", "c"], "c"),
        ([m("a1", failure_domain="a")], [None, "c", "b"], "c"),
    ],
    ids=[
        "the replaced Machine's domain wins a tie for fewest",
        "the replaced Machine's domain does not win over an emptier one",
        "with one Machine in each domain the preferred one wins",
        "a domain no longer configured is never preferred",
        "the first preferred domain among the fewest wins",
    ],
)
def test_a_replacement_keeps_its_domain_only_on_a_tie(
    machines: list[MachineInfo], prefer: list[str | None], expected: str
) -> None:
    assert choose_failure_domain(["a", "b", "c"], machines, prefer=prefer) == expected


@pytest.mark.parametrize(
    ("machines", "expected"),
    [
        # class order: outdated+annotation > annotation > outdated+unhealthy > outdated > any
        ([m("any"), m("out", outdated=True), m("ann", delete_annotation=True)], "ann"),
        ([m("out", age=50, outdated=True, node_ready=False), m("ann", delete_annotation=True)], "ann"),
        ([m("ann", delete_annotation=True), m("both", outdated=True, delete_annotation=True)], "both"),
        ([m("out", age=50, outdated=True), m("sick", outdated=True, node_ready=False)], "sick"),
        ([m("sick", node_ready=False), m("out", outdated=True)], "out"),
        # a replacement that never became Ready, outdated by a newer template, before older ones
        (
            [
                m("old", age=50, outdated=True),
                m("new", phase="Provisioning", node_ready=False, outdated=True),
            ],
            "new",
        ),
        ([m("sick", marked_unhealthy=True), m("out", outdated=True, marked_unhealthy=True)], "out"),
        # an outdated Machine whose etcd voter fails its health read, though its Node is Ready,
        # before older outdated ones: the preflight refuses any other delete beside it
        (
            [
                m("old", age=50, outdated=True),
                m("etcd-down", age=1, outdated=True, etcd_healthy=False),
            ],
            "etcd-down",
        ),
        (
            [
                m("old", age=50, outdated=True),
                m("learner", outdated=True, etcd_voter=False, etcd_healthy=False),
            ],
            "old",
        ),
        # within a class: most populated domain, then oldest
        (
            [m("a1", age=1), m("a2", age=2), m("b1", age=50, failure_domain="b")],
            "a2",
        ),
        ([m("young", age=1), m("old", age=9)], "old"),
        ([m("gone", deleting=True, delete_annotation=True), m("x")], "x"),
    ],
    ids=[
        "a Machine with the delete annotation goes before an outdated one",
        "the annotation beats an older unhealthy outdated Machine",
        "outdated with the annotation beats the annotation alone",
        "an outdated unhealthy Machine goes before an older outdated one",
        "an outdated Machine goes before an unhealthy current one",
        "an outdated replacement that never became Ready goes before older ones",
        "among marked Machines the outdated one goes first",
        "an outdated Machine whose voter fails its health read goes before older outdated ones",
        "an outdated Machine without a member does not jump ahead of an older outdated voter",
        "within a class the most populated domain goes first, then the oldest",
        "within a class the oldest goes first",
        "a deleting Machine is never chosen again",
    ],
)
def test_select_for_scale_in(machines: list[MachineInfo], expected: str) -> None:
    chosen = select_for_scale_in(machines)
    assert chosen is not None and chosen.name == expected


def test_a_new_machine_carries_its_domain_hash_and_controller() -> None:
    spec = spec_with(failureDomains=[{"name": "a", "providerSpec": {"value": {"zone": "a"}}}])
    machine = new_machine(spec, "a", name="cluster-x1y2z", owner=CONTROLPLANE)
    assert machine["metadata"]["name"] == "cluster-x1y2z" and machine["metadata"]["namespace"] == "ns"
    assert machine["metadata"]["labels"][FAILURE_DOMAIN_LABEL] == "a"
    assert machine["metadata"]["annotations"][SPEC_HASH_ANNOTATION] == template_hash(spec, "a")
    assert machine["metadata"]["annotations"][TEMPLATE_METADATA_ANNOTATION] == applied_record(spec)
    assert machine["metadata"]["ownerReferences"] == [controller_ref(CONTROLPLANE)]
    assert machine["spec"]["providerSpec"] == {"value": {"zone": "a"}}
    assert (
        FAILURE_DOMAIN_LABEL
        not in new_machine(spec, None, name="n", owner=CONTROLPLANE)["metadata"]["labels"]
    )


@pytest.mark.parametrize(
    ("case", "machines", "expected"),
    [
        (
            "scaling 5 to 3: the Machine whose controller manager crash-loops goes first",
            [
                m("a1", age=50),
                m("a2", age=40),
                m("b1", age=30, failure_domain="b"),
                m("b2", age=1, failure_domain="b", components_unhealthy=("kube-controller-manager",)),
                m("c1", age=20, failure_domain="c"),
            ],
            "b2",
        ),
        (
            "a rollout's replacement whose scheduler crash-loops is not deleted before the outdated ones",
            [m("old", age=50, outdated=True), m("broken", age=1, components_unhealthy=("kube-scheduler",))],
            "old",
        ),
        (
            "an outdated replacement with a broken API server goes before everything but the annotation",
            [
                m("orig", age=50, components_unhealthy=("kube-scheduler",)),
                m("new", age=1, outdated=True, components_unhealthy=("kube-apiserver",)),
            ],
            "new",
        ),
        (
            "a component only not seen yet does not make a Machine jump ahead",
            [m("old", age=50), m("young", age=1, components_pending=("etcd",))],
            "old",
        ),
    ],
)
def test_scale_in_takes_machines_with_unhealthy_components_first(
    case: str, machines: list[MachineInfo], expected: str
) -> None:
    chosen = select_for_scale_in(machines)
    assert chosen is not None and chosen.name == expected, case


BASE_VALUE = {"kind": "LocalMachineProviderSpec", "size": 1}
LABELLED = {
    "template": {
        "metadata": {"labels": {**MASTER, "cost-centre": "cc-41"}},
        "spec": {"providerSpec": {"value": BASE_VALUE}},
    }
}
"""The same providerSpec under a template that also labelled its Machines."""
BIGGER = {"template": {"spec": {"providerSpec": {"value": {**BASE_VALUE, "size": 2}}}}}
"""Another providerSpec: what a Machine *is* changed."""
ONLY_B = {"failureDomains": [{"name": "b", "providerSpec": {"value": {"failureDomain": "b"}}}]}


def machine_made(created_from: dict[str, Any], hash_of: str | None) -> dict[str, Any]:
    """A Machine in domain a made from ``spec(**created_from)``, carrying the spec hash of the
    previous version (``"previous"``), of this one (``"current"``), or none (adopted)."""
    made = spec(**created_from)
    machine = created_machine(made, "a")
    annotations = machine["metadata"]["annotations"]
    if hash_of is None:
        del annotations[SPEC_HASH_ANNOTATION]
        del machine["metadata"]["labels"][FAILURE_DOMAIN_LABEL]
    else:
        hashed = previous_template_hash if hash_of == "previous" else template_hash
        annotations[SPEC_HASH_ANNOTATION] = hashed(made, "a")
    return machine


@pytest.mark.parametrize(
    ("created_from", "hash_of", "now", "outdated", "rewritten"),
    [
        ({}, "previous", {}, False, True),
        (LABELLED, "previous", {}, False, True),
        ({}, "previous", LABELLED, False, True),
        ({}, "previous", BIGGER, True, False),
        ({}, "previous", ONLY_B, True, False),
        ({}, "current", {}, False, False),
        ({}, "current", LABELLED, False, False),
        ({}, "current", BIGGER, True, False),
        (LABELLED, None, {}, False, False),
        ({}, None, BIGGER, True, False),
    ],
    ids=[
        "upgrade: the previous version's hash of this very template is up to date and rewritten",
        "upgrade: the previous hash under other labels, same providerSpec, is up to date and rewritten",
        "upgrade: labels added to the template since are no reason to replace, the hash is rewritten",
        "upgrade: the previous version's hash with another providerSpec is outdated and kept until replaced",
        "upgrade: the previous version's hash in a domain no longer configured is outdated and kept",
        "this version's hash of the template is up to date, nothing to rewrite",
        "a label added to the template outdates nothing",
        "a providerSpec change still rolls",
        "an adopted Machine with other labels is up to date by its providerSpec, and no hash is written",
        "an adopted Machine with another providerSpec is outdated",
    ],
)
def test_what_a_machine_is_decides_whether_it_is_outdated(
    created_from: dict[str, Any], hash_of: str | None, now: dict[str, Any], outdated: bool, rewritten: bool
) -> None:
    machine = machine_made(created_from, hash_of)
    judged = spec(**now)
    assert (is_outdated(judged, machine, now=T0) is not None) is outdated
    assert hash_to_rewrite(judged, machine) == (template_hash(judged, "a") if rewritten else None)


def test_a_hash_of_this_version_is_what_the_machine_was_created_from_not_its_edited_providerspec() -> None:
    """A Machine created before a providerSpec change whose own providerSpec was later edited by
    hand to the new one still runs the old instance: its hash, not its content, says so."""
    machine = machine_made({}, "current")
    machine["spec"]["providerSpec"]["value"]["size"] = 2
    assert is_outdated(spec(**BIGGER), machine, now=T0) == "its spec differs from the template"


def test_the_spec_hash_versions_are_told_apart_by_their_value() -> None:
    s = spec()
    assert template_hash(s, "a").startswith(SPEC_HASH_PREFIX)
    assert not previous_template_hash(s, "a").startswith(SPEC_HASH_PREFIX)
    assert len(previous_template_hash(s, "a")) == 16
    assert template_hash(spec(**LABELLED), "a") == template_hash(s, "a")
    assert previous_template_hash(spec(**LABELLED), "a") != previous_template_hash(s, "a")


PINNED = {
    "replicas": 3,
    "template": {
        "metadata": {
            "labels": {**MASTER, "example.com/cost-centre": "cc-41"},
            "annotations": {"example.com/owner": "team-a"},
        },
        "spec": {"providerSpec": {"value": BASE_VALUE}},
    },
    "failureDomains": [{"name": "a", "providerSpec": {"value": {"failureDomain": "a"}}}],
}


@pytest.mark.parametrize(
    ("raw", "domain", "written"),
    [
        (PINNED, "a", "8714eb7e1eba6360"),
        (PINNED, None, "c563932322a070b0"),
        (
            {"template": {"spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec"}}}}},
            None,
            "2698d39eb50d0a50",
        ),
    ],
    ids=[
        "template metadata and a domain",
        "the same template, no domain",
        "the selector's labels by default",
    ],
)
def test_the_previous_hash_is_the_one_the_previous_version_wrote(
    raw: dict[str, Any], domain: str | None, written: str
) -> None:
    """Pinned to the values the previous version wrote on its Machines for these specs: a change
    here would make every Machine of an upgraded fleet look outdated."""
    assert previous_template_hash(ControlPlaneSpec.model_validate(raw), domain) == written
