"""The ControlPlane controller on the embedded API server with the local provider (real etcd).

These scenarios need no learner promotion: one replica, adoption of a cluster the test built and
promoted itself, deletion, pause and a preflight failure.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api.controlplane import API_VERSION as CP_API_VERSION
from api.controlplane_reasons import REASON_MACHINE_NOT_WATCHED
from api.machine import API_VERSION
from controllers.controlplane import FAILURE_DOMAIN_LABEL, FINALIZER, SPEC_HASH_ANNOTATION
from controllers.etcd.client import EtcdClient
from controllers.etcdquorum.rules import DEFAULT_HOOK
from controllers.operator import OperatorOptions, webhook_server
from demo.monitor import QuorumMonitor
from demo.writer import EtcdWriter
from providers.localmachine import ETCD_CLIENT_URL_ANNOTATION, ETCD_MEMBER_ID_ANNOTATION
from providers.localmachine.etcd_process import EtcdSupervisor
from runtime.client import JSON, Client
from runtime.errors import Invalid, NotFound
from runtime.manager import Manager
from runtime.metrics import generate_latest
from runtime.webhook import mutate_path, validate_path
from tests.integration.conftest import etcd_options
from tests.support.controlplane import (
    MASTER_LABELS,
    MachineCount,
    controlplane,
    cp_condition,
    events_for,
    first_client_url,
    get_cp,
    machines_of,
    our_hooks,
    owned_by,
    running_controlplane,
    settled,
)
from tests.support.etcd import promote_when_in_sync
from tests.support.localmachine import (
    get_machine,
    get_node,
    machine,
    provider_options,
    ready_condition,
    set_fault,
)
from tests.support.poll import eventually, holds_for
from tests.support.webhooks import (
    ServingCerts,
    controlplane_webhook_configurations,
    registered_webhooks,
    running_webhook_server,
)

pytestmark = pytest.mark.slow


async def test_one_replica_is_created_owned_labelled_and_reported_available(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"cp{secrets.token_hex(3)}"
    async with running_controlplane(kube, namespace, provider_options(provider_state_dir)):
        await kube.create(controlplane(name, namespace, replicas=1, domains=["zone-a", "zone-b"]))

        async def available() -> dict | None:
            cp = await get_cp(kube, name, namespace)
            status = (cp or {}).get("status") or {}
            return cp if status.get("availableReplicas") == 1 and status.get("phase") == "Running" else None

        cp = await eventually(available, timeout=30, message="one available replica")
        machines = await machines_of(kube, namespace)
        assert len(machines) == 1
        only = machines[0]
        assert (
            only["metadata"]["name"].startswith(f"{name}-") and len(only["metadata"]["name"]) == len(name) + 6
        )
        assert owned_by(only, cp)
        assert only["metadata"]["labels"][FAILURE_DOMAIN_LABEL] == "zone-a"  # fewest, then alphabetical
        assert only["metadata"]["labels"]["machine.openshift.io/cluster-api-machine-role"] == "master"
        assert only["spec"]["providerSpec"]["value"]["failureDomain"] == "zone-a"
        assert only["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
        status = cp["status"]
        assert status["replicas"] == status["readyReplicas"] == status["updatedReplicas"] == 1
        assert (
            status["unavailableReplicas"] == 0
            and status["observedGeneration"] == cp["metadata"]["generation"]
        )
        assert status["selector"] == "machine.openshift.io/cluster-api-machine-role=master"
        assert cp_condition(cp, "Available")["status"] == "True"
        assert cp_condition(cp, "MachinesReady")["status"] == "True"
        assert FINALIZER in cp["metadata"]["finalizers"]

        mhc = await kube.get(API_VERSION, "MachineHealthCheck", f"{name}-mhc", namespace)
        assert mhc["spec"]["maxUnhealthy"] == 0
        assert mhc["spec"]["selector"] == {"matchLabels": MASTER_LABELS}
        assert owned_by(mhc, cp)
        metrics = generate_latest().decode()
        assert (
            f'cpo_controlplane_replicas{{controlplane="{namespace}/{name}",state="available"}} 1.0' in metrics
        )
        assert (
            f'cpo_controlplane_operations_total{{controlplane="{namespace}/{name}",operation="create"}} 1.0'
            in metrics
        )
        reasons = {e["reason"] for e in await events_for(kube, namespace, name)}
        assert {"MachineCreated", "MachineHealthCheckCreated"} <= reasons

        # A settled ControlPlane stays as it is (no condition timestamp churn), although it is
        # reconciled again every second (resync).
        version = (await get_cp(kube, name, namespace) or {})["metadata"]["resourceVersion"]

        async def unchanged() -> bool:
            return (await get_cp(kube, name, namespace) or {})["metadata"]["resourceVersion"] == version

        await holds_for(unchanged, duration=2.5, message="no write to a settled ControlPlane")

        # Turning autorepair off deletes the MachineHealthCheck.
        await kube.patch(
            CP_API_VERSION, "ControlPlane", name, {"spec": {"enableAutorepair": False}}, namespace
        )

        async def mhc_gone() -> bool:
            try:
                await kube.get(API_VERSION, "MachineHealthCheck", f"{name}-mhc", namespace)
            except NotFound:
                return True
            return False

        await eventually(mhc_gone, timeout=10, message="MachineHealthCheck deleted with autorepair off")


async def build_cluster(kube: Client, namespace: str, names: list[str], zones: list[str]) -> None:
    """Three Machines as a user would have them, every learner promoted by the test."""
    for index, (name, zone) in enumerate(zip(names, zones, strict=True)):
        body = machine(name, namespace, zone=zone)
        body["metadata"]["labels"] = dict(MASTER_LABELS)
        await kube.create(body)

        async def provisioned(name: str = name) -> dict | None:
            obj = await get_machine(kube, name, namespace)
            annotations = (obj or {}).get("metadata", {}).get("annotations") or {}
            return obj if annotations.get(ETCD_MEMBER_ID_ANNOTATION) else None

        obj = await eventually(provisioned, timeout=30, message=f"{name} provisioned")
        if index:
            url = obj["metadata"]["annotations"][ETCD_CLIENT_URL_ANNOTATION]
            first = await get_machine(kube, names[0], namespace)
            assert first is not None
            async with EtcdClient(
                [first["metadata"]["annotations"][ETCD_CLIENT_URL_ANNOTATION], url]
            ) as etcd:
                await promote_when_in_sync(
                    etcd, int(obj["metadata"]["annotations"][ETCD_MEMBER_ID_ANNOTATION], 16)
                )

        async def running(name: str = name) -> bool:
            obj = await get_machine(kube, name, namespace)
            return ((obj or {}).get("status") or {}).get("phase") == "Running"

        await eventually(running, timeout=30, message=f"{name} Running")


async def test_three_existing_machines_are_adopted_without_a_rollout_and_released_on_deletion(
    kube: Client, namespace: str, provider_state_dir: Path, tmp_path: Path
) -> None:
    """Adopted as they are, released on deletion; then adopted again the cautious way (an Inactive
    ControlPlane, activated: :func:`adopt_inactive_then_activate`), released again, and a
    released Machine deleted."""
    name = f"cp{secrets.token_hex(3)}"
    zones = ["zone-a", "zone-b", "zone-c"]
    names = [f"master-{i}" for i in range(3)]
    provider = provider_options(provider_state_dir)
    async with running_controlplane(kube, namespace, provider, hooks=True) as manager:
        await build_cluster(kube, namespace, names, zones)
        urls = {
            machine_name: (await get_machine(kube, machine_name, namespace) or {})["metadata"]["annotations"][
                ETCD_CLIENT_URL_ANNOTATION
            ]
            for machine_name in names
        }
        async with QuorumMonitor(list(urls.values())) as monitor, MachineCount(kube, namespace) as count:
            await kube.create(controlplane(name, namespace, replicas=3, domains=zones))

            async def adopted() -> dict | None:
                cp = await get_cp(kube, name, namespace)
                status = (cp or {}).get("status") or {}
                return (
                    cp
                    if status.get("availableReplicas") == 3 and status.get("updatedReplicas") == 3
                    else None
                )

            cp = await eventually(
                adopted, timeout=30, message="three adopted, up-to-date, available replicas"
            )
            assert cp["status"]["phase"] == "Running"
            assert all(owned_by(m, cp) for m in await machines_of(kube, namespace))

            async def same_three() -> bool:
                return [m["metadata"]["name"] for m in await machines_of(kube, namespace)] == names

            await holds_for(same_three, duration=2.0, message="no Machine created or deleted after adoption")
            reasons = [e["reason"] for e in await events_for(kube, namespace, name)]
            assert reasons.count("MachineAdopted") == 3
            mhc = await kube.get(API_VERSION, "MachineHealthCheck", f"{name}-mhc", namespace)
            assert mhc["spec"]["maxUnhealthy"] == 1

            async def all_guarded() -> bool:
                return all(our_hooks(m) for m in await machines_of(kube, namespace))

            await eventually(all_guarded, timeout=30, message="the etcd guard hook on every Machine")

            # Deleting the ControlPlane releases the Machines, deletes only the MachineHealthCheck,
            # and removes the etcd guard hook nothing would manage any more.
            await kube.delete(CP_API_VERSION, "ControlPlane", name, namespace)

            async def gone() -> bool:
                return await get_cp(kube, name, namespace) is None

            await eventually(gone, timeout=15, message="ControlPlane deleted once its Machines are released")
            machines = await machines_of(kube, namespace)
            assert [m["metadata"]["name"] for m in machines] == names
            assert all(not m["metadata"].get("ownerReferences") for m in machines)
            assert all(not m["metadata"].get("deletionTimestamp") for m in machines)
            with pytest.raises(NotFound):
                await kube.get(API_VERSION, "MachineHealthCheck", f"{name}-mhc", namespace)

            async def unguarded() -> bool:
                return not any(our_hooks(m) for m in await machines_of(kube, namespace))

            # The hook controller, still running, must not put them back.
            await holds_for(unguarded, duration=2.0, message="no etcd guard hook on a released Machine")
            for machine_name in names:
                released = [
                    e
                    for e in await events_for(kube, namespace, machine_name)
                    if e["reason"] == "EtcdGuardReleased"
                ]
                assert released and DEFAULT_HOOK.name in released[0]["message"], machine_name
            assert monitor.peak("voters") == 3 and count.peak == 3, "adoption replaced nothing"

            async with operator_webhooks(kube, namespace, manager, tmp_path):
                await adopt_inactive_then_activate(kube, namespace, zones, monitor)
            machines = await machines_of(kube, namespace)
            names = [m["metadata"]["name"] for m in machines]
            urls = {
                m["metadata"]["name"]: m["metadata"]["annotations"][ETCD_CLIENT_URL_ANNOTATION]
                for m in machines
            }

            # Deleting a released Machine drains it at once; etcd keeps a quorum and takes writes.
            async with EtcdClient([urls[names[0]]]) as etcd:
                leader = (await etcd.endpoint_status(urls[names[0]])).leader
            victim = next(
                n
                for n in names
                if int(machines[names.index(n)]["metadata"]["annotations"][ETCD_MEMBER_ID_ANNOTATION], 16)
                != leader
            )
            survivors = [urls[n] for n in names if n != victim]
            async with EtcdWriter(lambda: survivors, prefix=f"/{name}/w/") as writer:
                await eventually(
                    lambda: len(writer.stats.acknowledged) >= 10, timeout=10, message="writes before"
                )
                await kube.delete(API_VERSION, "Machine", victim, namespace)

                async def victim_gone() -> bool:
                    return await get_machine(kube, victim, namespace) is None

                await eventually(victim_gone, timeout=60, message=f"released Machine {victim} gone")
                after = len(writer.stats.acknowledged)
                await eventually(
                    lambda: len(writer.stats.acknowledged) >= after + 10, timeout=10, message="writes after"
                )
            assert writer.stats.unknown == 0 and writer.stats.refused == 0, writer.stats
            assert (await writer.verify(survivors)).lost == []
        monitor.assert_never_lost_quorum()
        # The one replacement (after the activation) added a voter before removing one.
        assert monitor.low("voters") == 3 and monitor.peak("voters") <= 4 and count.peak <= 4


@contextlib.asynccontextmanager
async def operator_webhooks(
    kube: Client, namespace: str, manager: Manager, directory: Path
) -> AsyncIterator[None]:
    """The operator's own admission webhooks (:func:`controllers.operator.webhook_server`, reading
    ControlPlanes and Machines through ``manager``'s cache, as ``cpo run`` does), called by the API
    server for the ControlPlanes of ``namespace`` while the block runs."""
    certs = ServingCerts(directory / "certs")
    certs.write()
    options = OperatorOptions(
        kubeconfig="unused", webhook_host="127.0.0.1", webhook_port=0, webhook_cert_dir=str(certs.directory)
    ).with_defaults()
    server = webhook_server(options, manager)
    group, version = CP_API_VERSION.split("/")
    paths = {
        "ValidatingWebhookConfiguration": validate_path(group, version, "ControlPlane"),
        "MutatingWebhookConfiguration": mutate_path(group, version, "ControlPlane"),
    }
    async with running_webhook_server(server):
        configurations = controlplane_webhook_configurations(
            f"https://127.0.0.1:{server.port}", certs.ca.cert_pem, namespace, paths=paths, name="adoption"
        )
        async with registered_webhooks(kube, *configurations):
            yield


async def adopt_inactive_then_activate(
    kube: Client, namespace: str, zones: list[str], monitor: QuorumMonitor
) -> None:
    """Issue 26, case 4, on three running, unowned Machines (one per zone of ``zones``): a
    ControlPlane without replicas is refused (it would delete two); created Inactive, it writes
    nothing on them while reporting what it would do; it cannot be activated with 1 replica, nor
    with 3 while it leaves out the zone one of them runs in (it would replace that one at once);
    listing all three it is activated and adopts them as they are; then the user swaps that zone
    for another and the Machine in it is replaced; it cannot go back to Inactive; deleted, it
    releases them."""
    name = f"cp{secrets.token_hex(3)}"
    body = controlplane(name, namespace, domains=[zones[0], zones[1], "zone-d"])
    del body["spec"]["replicas"]
    with pytest.raises(Invalid) as refused:
        await kube.create(body)
    assert (
        "spec.replicas: Invalid value: 1: 3 control-plane Machine(s) matching spec.selector exist and "
        "spec.replicas is 1: an Active ControlPlane would delete 2 of them; set spec.replicas to 3"
    ) in str(refused.value), refused.value

    body["spec"]["state"] = "Inactive"
    await kube.create(body)

    async def observed() -> dict | None:
        cp = await get_cp(kube, name, namespace)
        status = (cp or {}).get("status") or {}
        reported = status.get("replicas") == 3 and status.get("availableReplicas") == 3
        return cp if reported and cp_condition(cp, "Progressing").get("reason") == "Inactive" else None

    cp = await eventually(observed, timeout=15, message="an Inactive ControlPlane's status written")
    assert "if Active, it would delete a Machine" in cp_condition(cp, "Progressing")["message"]
    assert cp["status"]["phase"] == "Running"
    names = [m["metadata"]["name"] for m in await machines_of(kube, namespace)]

    async def untouched() -> bool:
        machines = await machines_of(kube, namespace)
        if [m["metadata"]["name"] for m in machines] != names:
            return False
        if any(m["metadata"].get("ownerReferences") or our_hooks(m) for m in machines):
            return False
        try:
            await kube.get(API_VERSION, "MachineHealthCheck", f"{name}-mhc", namespace)
        except NotFound:
            return True
        return False

    await holds_for(untouched, duration=10.0, message="an Inactive ControlPlane writes nothing on Machines")

    with pytest.raises(Invalid) as refused:
        await kube.patch(CP_API_VERSION, "ControlPlane", name, {"spec": {"state": "Active"}}, namespace)
    assert "set spec.replicas to 3 to adopt them as they are, or keep spec.state Inactive" in str(
        refused.value
    )

    with pytest.raises(Invalid) as refused:
        await kube.patch(
            CP_API_VERSION, "ControlPlane", name, {"spec": {"state": "Active", "replicas": 3}}, namespace
        )
    assert (
        f"spec.failureDomains: Forbidden: spec.failureDomains lists [{zones[0]}, {zones[1]}, zone-d] and "
        "the control-plane Machines matching spec.selector run in "
        f"[{zones[0]}, {zones[1]}, zone {zones[2]}]: an Active ControlPlane would replace {names[2]} "
        f"(zone {zones[2]}) at once"
    ) in str(refused.value), refused.value

    since = monitor.mark()
    listed = controlplane(name, namespace, domains=zones)["spec"]["failureDomains"]
    activate = {"spec": {"state": "Active", "replicas": 3, "failureDomains": listed}}
    await kube.patch(CP_API_VERSION, "ControlPlane", name, activate, namespace)

    async def adopted() -> bool:
        cp = await get_cp(kube, name, namespace)
        machines = await machines_of(kube, namespace)
        status = (cp or {}).get("status") or {}
        return (
            [m["metadata"]["name"] for m in machines] == names
            and all(owned_by(m, cp) for m in machines)
            and status.get("updatedReplicas") == 3
        )

    await eventually(adopted, timeout=30, message="activated: the three Machines adopted as they are")
    swapped = controlplane(name, namespace, domains=[zones[0], zones[1], "zone-d"])["spec"]["failureDomains"]
    await kube.patch(CP_API_VERSION, "ControlPlane", name, {"spec": {"failureDomains": swapped}}, namespace)

    async def rolled() -> dict | None:
        cp = await get_cp(kube, name, namespace)
        status = (cp or {}).get("status") or {}
        machines = await machines_of(kube, namespace)
        domains = sorted(m["spec"]["providerSpec"]["value"]["failureDomain"] for m in machines)
        settled = status.get("updatedReplicas") == 3 and status.get("availableReplicas") == 3
        return cp if settled and domains == [zones[0], zones[1], "zone-d"] else None

    cp = await eventually(rolled, timeout=90, message="activated: adopted, the zone-c Machine replaced")
    machines = await machines_of(kube, namespace)
    assert all(owned_by(m, cp) for m in machines)
    assert [n for n in names if n in {m["metadata"]["name"] for m in machines}] == names[:2]
    reasons = [e["reason"] for e in await events_for(kube, namespace, name)]
    assert reasons.count("MachineAdopted") == 3 and reasons.count("MachineCreated") == 1, reasons
    assert monitor.low("voters", since=since) >= 3 and monitor.peak("voters", since=since) <= 4, (
        monitor.changes()
    )
    assert monitor.peak("learners", since=since) <= 1, "one Machine joins at a time"
    monitor.assert_never_lost_quorum()

    with pytest.raises(Invalid) as refused:
        await kube.patch(CP_API_VERSION, "ControlPlane", name, {"spec": {"state": "Inactive"}}, namespace)
    assert "spec.state: Forbidden: cannot go back to Inactive once Active" in str(refused.value), (
        refused.value
    )

    await kube.delete(CP_API_VERSION, "ControlPlane", name, namespace)

    async def released() -> bool:
        machines = await machines_of(kube, namespace)
        unowned = not any(m["metadata"].get("ownerReferences") or our_hooks(m) for m in machines)
        return await get_cp(kube, name, namespace) is None and unowned

    await eventually(
        released, timeout=15, message="the activated ControlPlane deleted, its Machines released"
    )


async def test_adopted_machines_are_replaced_in_their_own_zones_after_a_template_change(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    """An adopted Machine has no failure-domain label, and once the template changes its
    providerSpec matches no template; it still names its zone. The rollout's first step replaces
    the oldest Machine, in zone-c, with a Machine in zone-c (not in zone-a, the first by name,
    which would put two of the three voters there and none in zone-c)."""
    name = f"cp{secrets.token_hex(3)}"
    zones = ["zone-c", "zone-a", "zone-b"]
    names = [f"{name}-m{i}" for i in range(3)]  # Node names are cluster-wide: unique per test
    async with running_controlplane(kube, namespace, provider_options(provider_state_dir), hooks=True):
        await build_cluster(kube, namespace, names, zones)
        async with QuorumMonitor([await first_client_url(kube, namespace)]) as monitor:
            await kube.create(controlplane(name, namespace, replicas=3, domains=sorted(zones)))

            async def adopted() -> bool:
                status = ((await get_cp(kube, name, namespace)) or {}).get("status") or {}
                return status.get("availableReplicas") == 3 and status.get("updatedReplicas") == 3

            await eventually(adopted, timeout=30, message="three Machines adopted, up to date")
            template = {"spec": {"providerSpec": {"value": {"size": "large"}}}}
            await kube.patch(
                CP_API_VERSION, "ControlPlane", name, {"spec": {"template": template}}, namespace
            )

            async def first_replacement() -> JSON | None:
                return next(
                    (m for m in await machines_of(kube, namespace) if m["metadata"]["name"] not in names),
                    None,
                )

            replacement = await eventually(first_replacement, timeout=30, message="the first replacement")
            assert replacement["metadata"]["labels"][FAILURE_DOMAIN_LABEL] == "zone-c", replacement[
                "metadata"
            ]
            assert replacement["spec"]["providerSpec"]["value"]["failureDomain"] == "zone-c"

            async def oldest_deleted() -> bool:
                machine = await get_machine(kube, names[0], namespace)
                return machine is None or bool(machine["metadata"].get("deletionTimestamp"))

            await eventually(oldest_deleted, timeout=60, message=f"{names[0]} (zone-c) replaced")
            for other in names[1:]:
                machine = await get_machine(kube, other, namespace)
                assert machine is not None and not machine["metadata"].get("deletionTimestamp"), other
            monitor.assert_never_lost_quorum()


def selected_controlplane(name: str, namespace: str) -> JSON:
    """3 replicas whose selector (and template) adds a label of their own to the role label, so
    that a Machine's selector labels can be edited while it stays a control-plane Machine."""
    labels = {**MASTER_LABELS, "cluster": name}
    return controlplane(
        name,
        namespace,
        replicas=3,
        selector={"matchLabels": labels},
        template={
            "metadata": {"labels": labels},
            "spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec"}}},
        },
    )


async def test_an_owned_machine_whose_selector_labels_were_edited_keeps_its_hook_and_its_member_goes_safely(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    """A Machine the ControlPlane owns whose selector labels are edited (its control-plane role
    label kept, so the operator still caches it) is still the ControlPlane's: the etcd-quorum hook
    is put back when taken off, and when the Machine is deleted its member is removed only once
    its replacement votes. Over the whole run voters never drop below 3 once bootstrapped, never
    exceed 4, and quorum is never lost."""
    name = f"cp{secrets.token_hex(3)}"
    async with running_controlplane(kube, namespace, provider_options(provider_state_dir), hooks=True):
        await kube.create(selected_controlplane(name, namespace))
        async with QuorumMonitor([await first_client_url(kube, namespace)]) as monitor:
            await settled(kube, name, namespace, 3, within=90)
            since = monitor.mark()
            relabelled = (await machines_of(kube, namespace))[0]["metadata"]["name"]
            await kube.patch(
                API_VERSION,
                "Machine",
                relabelled,
                {"metadata": {"labels": {"cluster": "elsewhere"}}},
                namespace,
            )
            await kube.patch(
                API_VERSION,
                "Machine",
                relabelled,
                [{"op": "remove", "path": "/spec/lifecycleHooks/preDrain"}],
                namespace,
                patch_type="json",
            )

            async def hooked() -> bool:
                machine = await get_machine(kube, relabelled, namespace)
                return machine is not None and bool(our_hooks(machine))

            await eventually(hooked, timeout=15, message=f"the hook put back on relabelled {relabelled}")
            await kube.delete(API_VERSION, "Machine", relabelled, namespace)

            async def member_gone() -> bool:
                sample = monitor.samples[-1] if monitor.samples else None
                return sample is not None and sample.error is None and relabelled not in sample.machines

            await eventually(member_gone, timeout=60, message=f"{relabelled}'s member removed")

            async def machine_gone() -> bool:
                return await get_machine(kube, relabelled, namespace) is None

            await eventually(machine_gone, timeout=30, message=f"{relabelled} gone")
            await settled(kube, name, namespace, 3, within=60)
            assert monitor.low("voters", since=since) >= 3, "a voter was removed before its replacement voted"
            assert monitor.peak("voters", since=since) <= 4
            monitor.assert_never_lost_quorum(since=since)


async def test_a_machine_that_lost_the_role_label_is_reported_and_nothing_replaces_it(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    """A Machine the ControlPlane owns whose control-plane role label is removed leaves the
    operator's cache: the ControlPlane counts one Machine fewer (``status.replicas`` 2 of 3), says
    so in ``Degraded`` (reason ``MachineNotWatched``, naming the Machine and the label to put
    back) and with a Warning Event, and creates no replacement while that Machine's member still
    votes. Once the label is back, the Machine is counted again and ``Degraded`` clears. Over the
    whole run voters stay 3 and quorum is never lost."""
    name = f"cp{secrets.token_hex(3)}"
    async with running_controlplane(kube, namespace, provider_options(provider_state_dir), hooks=True):
        await kube.create(selected_controlplane(name, namespace))
        async with QuorumMonitor([await first_client_url(kube, namespace)]) as monitor:
            await settled(kube, name, namespace, 3, within=90)
            since = monitor.mark()
            unwatched = (await machines_of(kube, namespace))[0]["metadata"]["name"]
            role_key = next(iter(MASTER_LABELS))
            await kube.patch(
                API_VERSION, "Machine", unwatched, {"metadata": {"labels": {role_key: None}}}, namespace
            )

            async def reported() -> bool:
                cp = await get_cp(kube, name, namespace)
                degraded = cp_condition(cp, "Degraded")
                return (
                    degraded.get("status") == "True"
                    and degraded.get("reason") == REASON_MACHINE_NOT_WATCHED
                    and unwatched in str(degraded.get("message"))
                    and role_key in str(degraded.get("message"))
                    and ((cp or {}).get("status") or {}).get("replicas") == 2
                )

            await eventually(reported, timeout=30, message=f"the ControlPlane reports {unwatched} unwatched")
            events = await events_for(kube, namespace, name)
            assert any(
                e.get("reason") == REASON_MACHINE_NOT_WATCHED and e.get("type") == "Warning" for e in events
            )

            async def three_machines() -> bool:
                return len(await machines_of(kube, namespace)) == 3

            await holds_for(three_machines, duration=5, message="no replacement for the unwatched Machine")
            await kube.patch(
                API_VERSION,
                "Machine",
                unwatched,
                {"metadata": {"labels": {role_key: MASTER_LABELS[role_key]}}},
                namespace,
            )

            async def cleared() -> bool:
                cp = await get_cp(kube, name, namespace)
                return cp_condition(cp, "Degraded").get("status") == "False"

            await eventually(cleared, timeout=30, message="Degraded cleared once the label is back")
            await settled(kube, name, namespace, 3, within=60)
            assert monitor.low("voters", since=since) >= 3
            assert monitor.peak("voters", since=since) <= 3, "a replacement joined for the unwatched Machine"
            monitor.assert_never_lost_quorum(since=since)


async def test_paused_creates_nothing_until_resumed(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"cp{secrets.token_hex(3)}"
    async with running_controlplane(kube, namespace, provider_options(provider_state_dir)):
        await kube.create(controlplane(name, namespace, replicas=1, paused=True))

        async def paused_reported() -> bool:
            cp = await get_cp(kube, name, namespace)
            return cp_condition(cp, "Progressing").get("reason") == "Paused"

        await eventually(paused_reported, timeout=10, message="Progressing reason Paused")

        async def no_machine() -> bool:
            return not await machines_of(kube, namespace)

        await holds_for(no_machine, duration=1.5, message="no Machine while paused")

        # A control-plane Node no Machine accounts for is reported.
        stray = f"stray-{secrets.token_hex(3)}"
        await kube.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": stray, "labels": {"node-role.kubernetes.io/master": ""}},
            }
        )
        try:

            async def unmanaged_reported() -> bool:
                degraded = cp_condition(await get_cp(kube, name, namespace), "Degraded")
                return degraded.get("reason") == "UnmanagedNodes" and stray in degraded.get("message", "")

            await eventually(
                unmanaged_reported, timeout=10, message="Degraded reason UnmanagedNodes naming the Node"
            )
        finally:
            await kube.delete("v1", "Node", stray)
        await kube.patch(CP_API_VERSION, "ControlPlane", name, {"spec": {"paused": False}}, namespace)

        async def one_machine() -> bool:
            return len(await machines_of(kube, namespace)) == 1

        await eventually(one_machine, timeout=10, message="a Machine once resumed")


async def test_a_failed_preflight_is_reported_holds_the_step_and_recovers(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"cp{secrets.token_hex(3)}"
    async with running_controlplane(kube, namespace, provider_options(provider_state_dir)):
        await kube.create(controlplane(name, namespace, replicas=1))

        async def available() -> bool:
            cp = await get_cp(kube, name, namespace)
            return ((cp or {}).get("status") or {}).get("availableReplicas") == 1

        await eventually(available, timeout=30, message="one available replica")
        url = await first_client_url(kube, namespace)
        async with QuorumMonitor([url]) as monitor, MachineCount(kube, namespace) as count:
            (first,) = await machines_of(kube, namespace)
            first_name = first["metadata"]["name"]
            await set_fault(kube, first_name, namespace, "notready")

            async def not_ready() -> bool:
                return ready_condition(await get_node(kube, first_name)).get("status") == "False"

            await eventually(not_ready, timeout=10, message="the Node NotReady")
            await kube.patch(CP_API_VERSION, "ControlPlane", name, {"spec": {"replicas": 3}}, namespace)

            async def reported() -> dict | None:
                cp = await get_cp(kube, name, namespace)
                progressing = cp_condition(cp, "Progressing")
                return cp if progressing.get("reason") == "MachineNotReady" else None

            cp = await eventually(reported, timeout=10, message="Progressing reason MachineNotReady")
            assert "MachineNodesReady" in cp_condition(cp, "Progressing")["message"]
            assert first_name in cp_condition(cp, "Progressing")["message"]

            async def still_one() -> bool:
                return len(await machines_of(kube, namespace)) == 1

            await holds_for(still_one, duration=1.5, message="no Machine created while the preflight fails")
            # One Warning event for the blocked plan, in its words; not one per refused pass.
            events = [e for e in await events_for(kube, namespace, name) if e["reason"] == "MachineNotReady"]
            assert len(events) == 1 and events[0]["type"] == "Warning", events
            assert events[0]["message"] == cp_condition(cp, "Progressing")["message"], events
            metrics = generate_latest().decode()
            assert (
                f'cpo_controlplane_preflight_failures_total{{check="MachineNodesReady",controlplane="{namespace}/{name}"}}'
                in metrics
                or (
                    f'cpo_controlplane_preflight_failures_total{{controlplane="{namespace}/{name}",check="MachineNodesReady"}}'
                    in metrics
                )
            )

            await set_fault(kube, first_name, namespace, None)

            async def scaled() -> bool:
                return len(await machines_of(kube, namespace)) == 2

            await eventually(scaled, timeout=15, message="the scale-out goes on once the Node is Ready again")
        monitor.assert_never_lost_quorum()
        assert monitor.peak("voters") == 1 and count.peak == 2  # nobody promotes without the hook


async def test_external_etcd_skips_the_etcd_preflight_and_allows_an_even_count(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"cp{secrets.token_hex(3)}"
    async with running_controlplane(kube, namespace, provider_options(provider_state_dir)):
        # The local provider still starts a member per Machine; nobody promotes the second one,
        # which would hold a stacked control plane in preflight (EtcdNoPendingLearner) forever.
        await kube.create(controlplane(name, namespace, replicas=2, etcd={"external": True}))

        async def two_available() -> bool:
            cp = await get_cp(kube, name, namespace)
            status = (cp or {}).get("status") or {}
            return status.get("availableReplicas") == 2 and status.get("phase") == "Running"

        await eventually(two_available, timeout=30, message="two available replicas with external etcd")
        mhc = await kube.get(API_VERSION, "MachineHealthCheck", f"{name}-mhc", namespace)
        assert mhc["spec"]["maxUnhealthy"] == 0


async def test_a_missing_etcd_tls_secret_fails_the_preflight_by_name(
    kube: Client, namespace: str, provider_state_dir: Path
) -> None:
    name = f"cp{secrets.token_hex(3)}"
    async with running_controlplane(kube, namespace, provider_options(provider_state_dir)):
        await kube.create(
            controlplane(name, namespace, replicas=1, etcd={"tlsSecretRef": {"name": "etcd-client"}})
        )

        async def one_machine() -> bool:
            return len(await machines_of(kube, namespace)) == 1

        await eventually(one_machine, timeout=10, message="the first Machine (nothing to ask etcd yet)")
        await kube.patch(CP_API_VERSION, "ControlPlane", name, {"spec": {"replicas": 3}}, namespace)

        async def reported() -> bool:
            progressing = cp_condition(await get_cp(kube, name, namespace), "Progressing")
            return (
                "EtcdReachable" in progressing.get("message", "") and "etcd-client" in progressing["message"]
            )

        await eventually(reported, timeout=30, message="EtcdReachable names the missing Secret")
        assert len(await machines_of(kube, namespace)) == 1


async def test_etcd_at_the_endpoints_with_members_of_no_owned_machine_holds_the_first_create(
    kube: Client, namespace: str, provider_state_dir: Path, tmp_path: Path
) -> None:
    """Before it owns a Machine, the ControlPlane reads etcd at ``spec.etcd.endpoints``: a member
    there runs on a Machine it does not select, so it creates none and names the member."""
    name = f"cp{secrets.token_hex(3)}"
    supervisor = EtcdSupervisor(tmp_path / "etcd-elsewhere", etcd_options())
    try:
        member = await supervisor.bootstrap("elsewhere-0")
        async with running_controlplane(kube, namespace, provider_options(provider_state_dir)):
            body = controlplane(name, namespace, replicas=1, etcd={"endpoints": [member.client_url]})
            await kube.create(body)

            async def reported() -> bool:
                progressing = cp_condition(await get_cp(kube, name, namespace), "Progressing")
                message = progressing.get("message", "")
                return progressing.get("reason") == "EtcdMembersMismatch" and (
                    "EtcdMembersMatchMachines" in message and "elsewhere-0" in message
                )

            await eventually(reported, timeout=30, message="EtcdMembersMatchMachines names elsewhere-0")

            async def none_created() -> bool:
                return not await machines_of(kube, namespace)

            await holds_for(none_created, duration=1.5, message="no Machine created into that etcd")
    finally:
        await supervisor.stop_all()
