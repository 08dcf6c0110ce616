"""The Machine reconciler of the ``localmachine`` provider (see the package docstring for the guide).

:class:`LocalMachineReconciler` turns a Machine into an etcd member process and a Node, keeps the
Node's Ready condition in step with the process, applies fault annotations and honours the
lifecycle hooks on deletion. :func:`setup_with_manager` wires it into a manager (the package
docstring runs one)."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from api.failuredomains import ZONE_LABEL
from api.machine import (
    API_VERSION,
    PHASE_DELETING,
    PHASE_FAILED,
    PHASE_PROVISIONED,
    PHASE_PROVISIONING,
    PHASE_RUNNING,
    NodeAddress,
)
from controllers.common import now
from controllers.conditions import changes, condition, set_conditions
from controllers.etcd.client import (
    EtcdClient,
    EtcdError,
    TooManyLearners,
    UnhealthyCluster,
)
from controllers.etcd.membership import CLIENT_URL_ANNOTATION, MEMBER_ID_ANNOTATION, PEER_URL_ANNOTATION
from providers.localmachine.etcd_process import (
    EtcdProcessError,
    EtcdSupervisor,
    MemberPlacement,
    MemberProcess,
)
from providers.localmachine.hosts import NO_DOMAIN, HostPools, HostsFull
from providers.localmachine.mirror_pods import MirrorPods
from providers.localmachine.options import LocalMachineOptions, ResolvedLocalMachineOptions
from providers.localmachine.realistic import AddressAllocator, node_name, recorded_hosts
from providers.localmachine.static_pods import POD_FAULTS
from runtime.builder import ControllerBuilder
from runtime.cache import Cache
from runtime.client import Client
from runtime.controller import Controller
from runtime.errors import AlreadyExists, Conflict, NotFound
from runtime.event import GenericEvent
from runtime.events import EventRecorder
from runtime.handler import EnqueueRequestForObject
from runtime.jsoncodec import JSON
from runtime.log import get_logger
from runtime.manager import Manager
from runtime.predicate import new_predicate_funcs
from runtime.reconcile import Request, Result
from runtime.source import Channel

PROVIDER_SPEC_KIND: Final = "LocalMachineProviderSpec"
FINALIZER: Final = "local.cpo.dev/machine"
FAULT_ANNOTATION: Final = "local.cpo.dev/fault"
FAULTS: Final = ("kill", "stop", "stop-member", "notready", "fail-provision", *POD_FAULTS)
"""Every fault a Machine may carry (the package docstring says what each does)."""
ETCD_CLIENT_URL_ANNOTATION: Final = CLIENT_URL_ANNOTATION
"""The operator's contract annotations (:mod:`controllers.etcd.membership`), which this provider
writes because all its members share one address: only these tell them apart."""
ETCD_PEER_URL_ANNOTATION: Final = PEER_URL_ANNOTATION
ETCD_MEMBER_ID_ANNOTATION: Final = MEMBER_ID_ANNOTATION
NODE_MACHINE_ANNOTATION: Final = "machine.openshift.io/machine"
"""On the Node: ``<namespace>/<name>`` of its Machine (OpenShift's machine controller sets the same)."""
LABEL_MASTER: Final = "node-role.kubernetes.io/master"
LABEL_CONTROL_PLANE: Final = "node-role.kubernetes.io/control-plane"
LABEL_ZONE: Final = "topology.kubernetes.io/zone"
LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
LABEL_MACHINE_REGION: Final = "machine.openshift.io/region"
"""On the Machine: its region (``kubectl get machines`` prints it as REGION)."""
LABEL_MACHINE_ZONE: Final = ZONE_LABEL
"""On the Machine: its zone (the ZONE column); the operator maps it onto a configured failure
domain only through that domain's providerSpec (:func:`api.failuredomains.machine_domain`)."""
LABEL_MACHINE_INSTANCE_TYPE: Final = "machine.openshift.io/instance-type"
"""On the Machine: its instance type (the TYPE column)."""
DEFAULT_REGION: Final = "local"
"""The region of a Machine whose providerSpec names none: every instance runs on this host."""
DEFAULT_INSTANCE_TYPE: Final = "local"
"""The instance type of a Machine whose providerSpec names none: one etcd process."""

CONDITION_ETCD_MEMBER: Final = "EtcdMemberStarted"
CONDITION_DRAINABLE: Final = "Drainable"
CONDITION_TERMINABLE: Final = "Terminable"
CONDITION_NODE: Final = "NodeOwned"
PROVIDER_CONDITIONS: Final = frozenset(
    {CONDITION_ETCD_MEMBER, CONDITION_DRAINABLE, CONDITION_TERMINABLE, CONDITION_NODE}
)
"""The Machine conditions this provider writes. Every other type on a Machine is another writer's
(the health check's marks, the operator's per-Machine conditions) and is never overwritten."""
STATIC_POD_RESYNC_HEARTBEATS: Final = 10
"""The mirror Pods of a Node are read again every this many heartbeats (in between, the provider
trusts its memory of what it stored: a settled machine costs no Pod request)."""
STATUS_WRITE_ATTEMPTS: Final = 3
"""Writes of the conditions tried against a fresh read when another writer got in between; after
that the Conflict goes to the controller, which retries the whole reconcile with backoff."""

REASON_WAITING_FOR_LEARNER: Final = "WaitingForLearnerPromotion"
REASON_CLUSTER_SETTLING: Final = "WaitingForEtcdCluster"
REASON_ETCD_UNAVAILABLE: Final = "EtcdUnavailable"
REASON_START_FAILED: Final = "EtcdStartFailed"
REASON_HOOK_PRESENT: Final = "HookPresent"
REASON_WAITING_FOR_HOST: Final = "WaitingForHost"
"""Every host of the Machine's failure domain is in use (``max_instances_per_domain``)."""

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

_log = get_logger("providers.localmachine")


class _Waiting(Exception):
    """Provisioning cannot go on yet; ``reason``/``message`` go into the EtcdMemberStarted condition."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class _InvalidConfiguration(ValueError):
    """The Machine's providerSpec cannot be served; the Machine fails with this message."""


def is_local_machine(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is a Machine this provider serves (``providerSpec.value.kind``)."""
    value = ((obj.get("spec") or {}).get("providerSpec") or {}).get("value")
    return isinstance(value, Mapping) and value.get("kind") == PROVIDER_SPEC_KIND


def machine_faults(machine: Mapping[str, Any]) -> frozenset[str]:
    """The faults in force on ``machine``: its ``local.cpo.dev/fault`` annotation (one fault, or
    several separated by commas, set and removed on a live Machine) and its
    ``providerSpec.value.faults`` (a list, fixed for the Machine's life: the template's way to
    fault every new Machine, applied from the moment its instance starts). Raises
    :class:`_InvalidConfiguration` for a providerSpec fault not in :data:`FAULTS` (an unknown
    annotation value is logged and ignored, as before).

    >>> both = {FAULT_ANNOTATION: "notready, kube-scheduler-notready"}
    >>> sorted(machine_faults({"metadata": {"annotations": both}}))
    ['kube-scheduler-notready', 'notready']
    """
    listed = _provider_spec_value(machine).get("faults") or []
    if not isinstance(listed, list) or any(f not in FAULTS for f in listed):
        raise _InvalidConfiguration(
            f"providerSpec.value.faults {listed!r}: give a list of faults among {', '.join(FAULTS)}"
        )
    annotated = (machine.get("metadata", {}).get("annotations") or {}).get(FAULT_ANNOTATION) or ""
    return frozenset([*listed, *(part.strip() for part in str(annotated).split(",") if part.strip())])


def _provider_spec_value(machine: Mapping[str, Any]) -> Mapping[str, Any]:
    value = ((machine.get("spec") or {}).get("providerSpec") or {}).get("value") or {}
    return value if isinstance(value, Mapping) else {}


def _label_field(value: Mapping[str, Any], key: str, *, what: str = "a label value") -> str | None:
    """``providerSpec.value[key]`` when set (None when absent or empty); a value that cannot be a
    label value fails the Machine with InvalidConfiguration, as it would land in a label."""
    found = value.get(key)
    if found is None:
        return None
    if not isinstance(found, str) or len(found) > 63 or not _LABEL_VALUE.match(found):
        raise _InvalidConfiguration(
            f"providerSpec.value.{key} {found!r} cannot be {what}: use at most 63 letters, "
            "digits, '-', '_' or '.', starting and ending with a letter or digit"
        )
    return found or None


def failure_domain(machine: Mapping[str, Any]) -> str | None:
    """The zone of ``machine``: ``providerSpec.value.failureDomain``, else ``.zone``, else None."""
    value = _provider_spec_value(machine)
    for key in ("failureDomain", "zone"):
        if value.get(key) is not None:
            return _label_field(value, key, what="a Node label value")
    return None


def instance_labels(machine: Mapping[str, Any]) -> dict[str, str]:
    """The labels this provider puts on a Machine whose instance exists, as a Machine API
    provider does: :data:`LABEL_MACHINE_REGION` from ``providerSpec.value.region`` (default
    :data:`DEFAULT_REGION`), :data:`LABEL_MACHINE_ZONE` from :func:`failure_domain` (left out when
    the providerSpec names no zone) and :data:`LABEL_MACHINE_INSTANCE_TYPE` from
    ``.instanceType`` (default :data:`DEFAULT_INSTANCE_TYPE`).

    A value that cannot be a label value raises the provider's InvalidConfiguration.

    >>> labels = instance_labels({"spec": {"providerSpec": {"value": {"failureDomain": "zone-a"}}}})
    >>> labels[LABEL_MACHINE_REGION], labels[LABEL_MACHINE_ZONE], labels[LABEL_MACHINE_INSTANCE_TYPE]
    ('local', 'zone-a', 'local')
    """
    value = _provider_spec_value(machine)
    labels = {
        LABEL_MACHINE_REGION: _label_field(value, "region") or DEFAULT_REGION,
        LABEL_MACHINE_INSTANCE_TYPE: _label_field(value, "instanceType") or DEFAULT_INSTANCE_TYPE,
    }
    zone = failure_domain(machine)
    if zone is not None:
        labels[LABEL_MACHINE_ZONE] = zone
    return labels


def missing_labels(machine: Mapping[str, Any], wanted: Mapping[str, str]) -> dict[str, str]:
    """The entries of ``wanted`` that ``machine``'s labels lack or hold another value for."""
    labels = (machine.get("metadata") or {}).get("labels") or {}
    return {key: value for key, value in wanted.items() if labels.get(key) != value}


def _now() -> str:
    # metav1.Time has whole seconds on the wire, as a real API server stores it.
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _set_condition(
    conditions: Sequence[Mapping[str, Any]] | None,
    type_: str,
    status: str,
    reason: str,
    message: str,
    *,
    severity: str | None = None,
) -> tuple[list[JSON], bool]:
    """``conditions`` with ``type_`` set by the operator's condition rules
    (:mod:`controllers.conditions`), and whether that changed anything."""
    current = [dict(condition) for condition in conditions or ()]
    wanted = {type_: condition(type_, status, reason, message, severity or "")}
    if not changes(current, wanted):
        return current, False
    return set_conditions(current, wanted, now()), True


def merge_own_conditions(
    stored: Sequence[Mapping[str, Any]] | None, ours: Sequence[Mapping[str, Any]]
) -> list[JSON]:
    """The Machine's ``stored`` conditions with each of ``ours`` (already set, with their
    transition times, by :func:`_set_condition`) put in by type.

    Conditions of other types stay as stored, in their place, so the provider never erases
    another writer's; one of ours whose status equals the stored one keeps the stored
    ``lastTransitionTime`` (ours may have been computed from an older read), one whose status
    changed keeps the time it was computed at.
    """
    wanted = {str(c.get("type")): dict(c) for c in ours}
    merged: list[JSON] = []
    for present in stored or ():
        type_ = str(present.get("type"))
        mine = wanted.pop(type_, None)
        if mine is None:
            merged.append(dict(present))
            continue
        if mine.get("status") == present.get("status") and present.get("lastTransitionTime"):
            mine["lastTransitionTime"] = present["lastTransitionTime"]
        merged.append(mine)
    merged.extend(wanted.values())
    return merged


def _hook_names(hooks: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(f"{hook.get('name')} (owner {hook.get('owner')})" for hook in hooks)


def _hook_gate(
    conditions: Sequence[Mapping[str, Any]] | None,
    hooks: Sequence[Mapping[str, Any]],
    hook_kind: str,
    type_: str,
    blocked_what: str,
    open_reason: str,
) -> tuple[list[JSON], bool, bool]:
    """One lifecycle-hook gate of a deletion (preDrain before the drain, preTerminate before the stop).

    Returns the conditions with ``type_`` set, whether they changed, and whether the hooks still
    hold the machine: while any hook is listed the condition is False and names them.
    """
    if hooks:
        conditions, changed = _set_condition(
            conditions,
            type_,
            "False",
            REASON_HOOK_PRESENT,
            f"{blocked_what} blocked by {hook_kind} hooks: {_hook_names(hooks)}",
            severity="Warning",
        )
        return conditions, changed, True
    conditions, changed = _set_condition(conditions, type_, "True", open_reason, f"no {hook_kind} hooks")
    return conditions, changed, False


@dataclasses.dataclass(frozen=True, slots=True)
class _Readiness:
    status: str
    reason: str
    message: str
    alive: bool
    """Whether the "kubelet" is posting: False leaves ``lastHeartbeatTime`` where it was, and
    the mirror Pods' status as last posted but for ``Ready``, turned False (the node lifecycle
    controller's part)."""
    member_healthy: bool = False
    """Whether the member answered its health read: the etcd mirror Pod's readiness."""


class LocalMachineReconciler:
    """Reconciles Machines whose ``providerSpec.value.kind`` is ``LocalMachineProviderSpec``."""

    def __init__(
        self,
        client: Client,
        cache: Cache,
        options: LocalMachineOptions | ResolvedLocalMachineOptions,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.options = (
            options if isinstance(options, ResolvedLocalMachineOptions) else options.with_defaults()
        )
        self.recorder = recorder
        self._supervisors: dict[str, EtcdSupervisor] = {}
        self._cluster_locks: dict[str, asyncio.Lock] = {}
        self._join_attempts: dict[tuple[str, str], int] = {}
        self._secrets_written: set[str] = set()
        state_dir = self.options.state_dir
        block = self.options.address_block
        self._hosts = HostPools(state_dir, self.options.max_instances_per_domain)
        self._allocator = (
            None
            if block is None
            else AddressAllocator(
                state_dir, block, lambda: [*recorded_hosts(state_dir), *self._hosts.reserved_addresses()]
            )
        )
        if self._allocator is not None:
            self._hosts.new_address = self._allocator.allocate
        self._waiting_for_host: dict[tuple[str, str], set[str]] = {}
        self.host_freed: asyncio.Queue[GenericEvent] = asyncio.Queue()
        """Requests for the Machines waiting for a host of a domain where one was just freed
        (:func:`setup_with_manager` feeds them to the controller through a Channel)."""
        self.mirror_pods = (
            MirrorPods(
                client,
                resync_period=STATIC_POD_RESYNC_HEARTBEATS * self.options.heartbeat_period,
                backoff_initial=self.options.crash_loop_backoff_initial,
                backoff_max=self.options.crash_loop_backoff_max,
            )
            if self.options.static_pods
            else None
        )
        """The Nodes' mirror Pods (None with ``static_pods`` off)."""
        self._swept: set[str] = set()
        """Clusters whose leftover mirror Pods were swept since this process started."""

    def _member_placement(self, cluster: str) -> MemberPlacement | None:
        """Realistic mode: each member on an address of the block (its host's, when host pools
        hold one for it), named after its Node, with TLS."""
        allocator, pki = self._allocator, self.options.pki
        if allocator is None or pki is None:
            return None

        def allocate_host(name: str) -> str:
            claim = self._hosts.claim_of(cluster, name)
            return claim.address if claim is not None and claim.address else allocator.allocate()

        return MemberPlacement(
            allocate_host=allocate_host,
            member_name=node_name,
            tls_flags=lambda directory, host, name: pki.member_certificate(directory, host, name).flags(),
        )

    # ------------------------------------------------------------------------------ clusters

    def supervisor(self, cluster: str) -> EtcdSupervisor:
        """The supervisor of one cluster's members (``<state_dir>/<cluster>/``)."""
        supervisor = self._supervisors.get(cluster)
        if supervisor is None:
            supervisor = EtcdSupervisor(
                self.options.state_dir / cluster, self.options.etcd, self._member_placement(cluster)
            )
            self._supervisors[cluster] = supervisor
        return supervisor

    @staticmethod
    def cluster_of(machine: Mapping[str, Any]) -> str:
        """The etcd cluster a Machine belongs to: its namespace (one cluster per namespace)."""
        return str(machine["metadata"].get("namespace") or "default")

    # ------------------------------------------------------------------------------ reconcile

    async def reconcile(self, request: Request) -> Result:
        try:
            machine = await self.cache.get(API_VERSION, "Machine", request.name, request.namespace)
        except NotFound:
            self._join_attempts.pop((request.namespace, request.name), None)
            self._forget_gone(request.namespace or "default", request.name)
            await self._sweep_mirror_pods(request.namespace or "default", always=True)
            return Result()
        if not is_local_machine(machine):
            return Result()
        await self._sweep_mirror_pods(self.cluster_of(machine))
        if machine["metadata"].get("deletionTimestamp"):
            return await self._reconcile_delete(machine)
        if FINALIZER not in (machine["metadata"].get("finalizers") or ()):
            machine = await self._add_finalizer(machine)
        status = machine.get("status") or {}
        if status.get("phase") == PHASE_FAILED:
            return Result()  # terminal, as with OpenShift's machine controller: delete the Machine
        try:
            zone = failure_domain(machine)
            machine_faults(machine)
            labels = instance_labels(machine)
        except _InvalidConfiguration as err:
            await self._fail(machine, "InvalidConfiguration", str(err))
            return Result()
        if not machine.get("spec", {}).get("providerID"):
            # The cache may lag our own last write: provisioning twice would rewind the phase, and
            # a Machine deleted or failed meanwhile must not get a member.
            machine = await self.client.get(API_VERSION, "Machine", request.name, request.namespace)
            if machine["metadata"].get("deletionTimestamp"):
                return await self._reconcile_delete(machine)
            if (machine.get("status") or {}).get("phase") == PHASE_FAILED:
                return Result()
        if not machine.get("spec", {}).get("providerID"):
            outcome = await self._provision(machine, zone, labels)
            if isinstance(outcome, Result):
                return outcome
            machine = outcome
        return await self._run(machine, zone, labels)

    # ------------------------------------------------------------------------------ provisioning

    async def _provision(self, machine: JSON, zone: str | None, labels: Mapping[str, str]) -> JSON | Result:
        """Take a host of the Machine's domain, start (bootstrap or join) the member; returns the
        updated Machine, or a Result to wait. The write that records the instance
        (``spec.providerID``) puts :func:`instance_labels` on the Machine with it."""
        name, namespace = machine["metadata"]["name"], self.cluster_of(machine)
        supervisor = self.supervisor(namespace)
        if "fail-provision" in machine_faults(machine) and supervisor.get(name) is None:
            await self._fail(machine, "CreateError", "provisioning failed on purpose: fault fail-provision")
            return Result()
        if (machine.get("status") or {}).get("phase") != PHASE_PROVISIONING:
            await self._patch_status(machine, {"phase": PHASE_PROVISIONING})
        await self._ensure_client_secret(namespace)
        full = self._take_host(namespace, name, zone, supervisor.get(name))
        if full is not None:
            return await self._wait_to_join(machine, _Waiting(REASON_WAITING_FOR_HOST, full.message))
        try:
            member = await self._ensure_member(supervisor, name, announce=self._announcer(machine))
        except _Waiting as waiting:
            return await self._wait_to_join(machine, waiting)
        self._join_attempts.pop((namespace, name), None)
        provider_id = f"local:///{name}"
        patch: JSON = {"spec": {"providerID": provider_id}, "metadata": {"labels": dict(labels)}}
        if not self.options.realistic:
            # All members share 127.0.0.1 here, so the address alone names none of them.
            patch["metadata"] |= {
                "annotations": {
                    ETCD_CLIENT_URL_ANNOTATION: member.client_url,
                    ETCD_PEER_URL_ANNOTATION: member.peer_url,
                    ETCD_MEMBER_ID_ANNOTATION: f"{member.member_id or 0:x}",
                }
            }
        patched = await self.client.patch(API_VERSION, "Machine", name, patch, namespace)
        kind = "joined as a learner" if member.learner else "bootstrapped a new etcd cluster"
        conditions, _ = _set_condition(
            (patched.get("status") or {}).get("conditions"),
            CONDITION_ETCD_MEMBER,
            "True",
            "Started",
            f"etcd member {member.member_id or 0:x} {kind}; "
            f"client {member.client_url}, peer {member.peer_url}",
        )
        status = {
            "phase": PHASE_PROVISIONED,
            "addresses": self._addresses(machine, member),
            "conditions": conditions,
            "errorReason": None,
            "errorMessage": None,
        }
        patched = await self._patch_status(patched, status)
        self._event(patched, "Normal", "Provisioned", f"etcd member {member.member_id or 0:x} {kind}")
        _log.info(
            "provisioned",
            member=f"{member.member_id or 0:x}",
            learner=member.learner,
            client_url=member.client_url,
            pid=member.pid,
        )
        return patched

    def _announcer(self, machine: JSON) -> Callable[[MemberProcess], Awaitable[None]]:
        """Publish a joining member's peer URL on its Machine before etcd has the member.

        The etcd-quorum hook maps members to Machines by that annotation and lets a deleting
        Machine go once no member maps to it. A member added (and maybe started) before its
        Machine named it would be nobody's if this provider died before naming it and the Machine
        were deleted meanwhile: its hook would come off and the member stay in etcd for good.
        Naming it first changes nothing else: until the add lands no member has that peer URL,
        so the annotation maps no member to the Machine.
        In realistic mode the Machine's addresses say it instead, as a cloud reports an instance's
        private address before anything runs on it: the member's peer URL host is that InternalIP.
        """
        name, namespace = machine["metadata"]["name"], self.cluster_of(machine)

        async def announce(member: MemberProcess) -> None:
            if self.options.realistic:
                await self._patch_status(machine, {"addresses": self._addresses(machine, member)})
                return
            await self.client.patch(
                API_VERSION,
                "Machine",
                name,
                {"metadata": {"annotations": {ETCD_PEER_URL_ANNOTATION: member.peer_url}}},
                namespace,
            )

        return announce

    async def _ensure_member(
        self,
        supervisor: EtcdSupervisor,
        name: str,
        *,
        announce: Callable[[MemberProcess], Awaitable[None]] | None = None,
    ) -> MemberProcess:
        """The member of ``name``, started: re-attached, restarted, bootstrapped or joined
        (``announce``: see :meth:`EtcdSupervisor.join`)."""
        cluster = supervisor.state_dir.name
        lock = self._cluster_locks.setdefault(cluster, asyncio.Lock())
        # One bootstrap-or-join decision at a time per cluster: two first machines must not both
        # bootstrap, and etcd takes one membership change at a time anyway.
        async with lock:
            try:
                existing = supervisor.get(name)
                others = [member for member in supervisor.members() if member.name != name]
                reachable = [member for member in others if member.running and not member.paused]
                if existing is not None and not existing.adding:
                    # Re-attach to a live member, or finish a start a crash interrupted; only a
                    # member that never served needs the membership of now (see start).
                    if existing.running or not reachable or supervisor.has_served(name):
                        return await supervisor.start(name)
                    async with EtcdClient(
                        [member.client_url for member in reachable], self.options.client_options
                    ) as etcd:
                        return await supervisor.start(name, etcd)
                # A record still ``adding`` (a crash around the member add) is finished by join.
                if not others:
                    return await supervisor.bootstrap(name)
                if not reachable:
                    raise _Waiting(
                        REASON_ETCD_UNAVAILABLE,
                        f"no running member of cluster {cluster!r} to join through "
                        f"(members: {', '.join(member.name for member in others)})",
                    )
                async with EtcdClient(
                    [member.client_url for member in reachable], self.options.client_options
                ) as etcd:
                    try:
                        return await supervisor.join(name, etcd, announce=announce)
                    except TooManyLearners as err:
                        ahead = await self._learners(etcd, others)
                        raise _Waiting(
                            REASON_WAITING_FOR_LEARNER,
                            f"etcd refused another learner ({err.message}): waiting for the learner ahead "
                            f"of this one ({ahead}) to be promoted",
                        ) from err
                    except UnhealthyCluster as err:
                        raise _Waiting(
                            REASON_CLUSTER_SETTLING,
                            f"etcd refused the member add ({err.message}); it accepts one once every "
                            "voter has been connected for 5 s after a start or promotion",
                        ) from err
            except EtcdProcessError as err:
                raise _Waiting(REASON_START_FAILED, str(err)) from err
            except EtcdError as err:
                raise _Waiting(REASON_ETCD_UNAVAILABLE, str(err)) from err

    @staticmethod
    async def _learners(etcd: EtcdClient, records: Sequence[MemberProcess]) -> str:
        try:
            members = await etcd.member_list()
        except EtcdError as err:
            return f"member list failed: {err}"
        by_peer = {record.peer_url: record.name for record in records}
        names = []
        for member in members:
            if member.is_learner:
                known = next((by_peer[url] for url in member.peer_urls if url in by_peer), None)
                names.append(member.name or known or f"member {member.id_hex}")
        return ", ".join(names) or "none any more"

    async def _wait_to_join(self, machine: JSON, waiting: _Waiting) -> Result:
        key = (self.cluster_of(machine), machine["metadata"]["name"])
        attempts = self._join_attempts.get(key, 0)
        self._join_attempts[key] = attempts + 1
        delay = min(self.options.join_backoff_max, self.options.join_backoff_initial * 2**attempts)
        conditions, changed = _set_condition(
            (machine.get("status") or {}).get("conditions"),
            CONDITION_ETCD_MEMBER,
            "False",
            waiting.reason,
            waiting.message,
            severity="Info",
        )
        if changed:
            await self._patch_status(machine, {"conditions": conditions})
        _log.info("waiting to provision", reason=waiting.reason, detail=waiting.message, retry_in=delay)
        return Result(requeue_after=delay)

    async def _fail(self, machine: JSON, reason: str, message: str) -> None:
        await self._patch_status(
            machine, {"phase": PHASE_FAILED, "errorReason": reason, "errorMessage": message}
        )
        self._event(machine, "Warning", "FailedCreate", message)

    # ------------------------------------------------------------------------------ host pools

    def _take_host(
        self, cluster: str, name: str, zone: str | None, member: MemberProcess | None
    ) -> HostsFull | None:
        """Give the Machine a host of its domain (see :mod:`providers.localmachine.hosts`); a
        HostsFull when none is free. An instance that exists already holds its host whatever the
        cap (one recorded before the state directory had host claims)."""
        if member is not None:
            if self._hosts.claim_of(cluster, name) is None:
                self._hosts.adopt(cluster, name, zone, member.host if self.options.realistic else None)
            return None
        claim = self._hosts.claim(cluster, name, zone)
        waiting = self._waiting_for_host.setdefault((cluster, zone or NO_DOMAIN), set())
        if isinstance(claim, HostsFull):
            waiting.add(name)
            return claim
        waiting.discard(name)
        return None

    def _release_host(self, cluster: str, name: str) -> None:
        """Free the Machine's host and wake the Machines waiting for one in its domain."""
        released = self._hosts.release(cluster, name)
        if released is None:
            return
        for waiter in sorted(self._waiting_for_host.get((cluster, released.domain or NO_DOMAIN), ())):
            self._join_attempts.pop((cluster, waiter), None)
            self.host_freed.put_nowait(GenericEvent.for_request(Request(waiter, cluster)))

    def _forget_gone(self, cluster: str, name: str) -> None:
        """A Machine gone from the API server: stop waiting for it, and free its host if its
        instance is gone too (its finalizer was dropped behind the provider's back otherwise)."""
        for (waiting_cluster, _), waiting in self._waiting_for_host.items():
            if waiting_cluster == cluster:
                waiting.discard(name)
        try:
            gone = self.supervisor(cluster).get(name) is None
        except (EtcdProcessError, ValueError):
            gone = False  # an unreadable record: its instance may still run, so it keeps the host
        if gone:
            self._release_host(cluster, name)

    # ------------------------------------------------------------------------------ running

    async def _run(self, machine: JSON, zone: str | None, labels: Mapping[str, str]) -> Result:
        """Keep a provisioned Machine's instance, Node and status in step; its
        :func:`instance_labels` are put back whenever they are missing or differ (a merge patch
        of those keys alone: other labels are left as they are)."""
        name, namespace = machine["metadata"]["name"], self.cluster_of(machine)
        supervisor = self.supervisor(namespace)
        member = supervisor.get(name)
        if member is None:
            await self._fail(
                machine,
                "InstanceMissing",
                f"the etcd member of this machine has no record under {supervisor.state_dir}: its "
                "instance is gone (was the state directory removed?)",
            )
            return Result()
        self._take_host(namespace, name, zone, member)
        missing = missing_labels(machine, labels)
        if missing:
            machine = await self.client.patch(
                API_VERSION, "Machine", name, {"metadata": {"labels": missing}}, namespace
            )
        await self._apply_faults(machine, supervisor, member)
        node = await self._ensure_node(machine, member, zone)
        if node is None:
            return Result(requeue_after=self.options.heartbeat_period)
        await self._heartbeat(machine, supervisor, node)
        status = machine.get("status") or {}
        node_ref = {"kind": "Node", "name": node["metadata"]["name"], "uid": node["metadata"].get("uid")}
        addresses = self._addresses(machine, member)
        if (
            status.get("phase") != PHASE_RUNNING
            or status.get("nodeRef") != node_ref
            or status.get("addresses") != addresses
        ):
            await self._patch_status(
                machine, {"phase": PHASE_RUNNING, "nodeRef": node_ref, "addresses": addresses}
            )
        return Result(requeue_after=self.options.heartbeat_period)

    async def _apply_faults(self, machine: JSON, supervisor: EtcdSupervisor, member: MemberProcess) -> None:
        """Act on the Machine's faults (:func:`machine_faults`, the package docstring); a fault is
        state, not an order."""
        name = member.name
        faults = machine_faults(machine)
        if "kill" in faults:
            if member.running and await supervisor.kill(name):
                self._event(
                    machine, "Warning", "FaultInjected", f"etcd member process {member.pid} SIGKILLed"
                )
        elif faults & {"stop", "stop-member"}:
            if member.running and not member.paused and await supervisor.pause(name):
                self._event(
                    machine, "Warning", "FaultInjected", f"etcd member process {member.pid} SIGSTOPped"
                )
        elif member.paused and await supervisor.resume(name):
            self._event(machine, "Normal", "FaultCleared", f"etcd member process {member.pid} SIGCONTed")
        if unknown := faults - set(FAULTS):
            _log.info("unknown fault ignored", fault=sorted(unknown), known=list(FAULTS))

    def _node_name(self, machine: Mapping[str, Any], member: MemberProcess | None) -> str:
        """The Machine's Node name: the Machine's own name, or in realistic mode the one a cloud
        gives an instance, from its address (the etcd member has that name too); a deleting
        Machine whose member record is gone keeps the name its ``status.nodeRef`` recorded."""
        if not self.options.realistic:
            return str(machine["metadata"]["name"])
        if member is not None:
            return member.etcd_name
        return str(((machine.get("status") or {}).get("nodeRef") or {}).get("name") or "")

    async def _ensure_node(self, machine: JSON, member: MemberProcess, zone: str | None) -> JSON | None:
        """The Machine's Node, created if missing; None when that Node belongs to another Machine."""
        machine_name, namespace = machine["metadata"]["name"], self.cluster_of(machine)
        name = self._node_name(machine, member)
        owner = f"{namespace}/{machine_name}"
        labels = {LABEL_HOSTNAME: name}
        if self.options.node_role_labels in ("both", "master"):
            labels[LABEL_MASTER] = ""
        if self.options.node_role_labels in ("both", "control-plane"):
            labels[LABEL_CONTROL_PLANE] = ""
        if zone is not None:
            labels[LABEL_ZONE] = zone
        try:
            node = await self.client.get("v1", "Node", name)
        except NotFound:
            body = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels, "annotations": {NODE_MACHINE_ANNOTATION: owner}},
                "spec": {"providerID": f"local:///{machine_name}"},
            }
            try:
                node = await self.client.create(body)
            except AlreadyExists:
                node = await self.client.get("v1", "Node", name)
        claimed = (node["metadata"].get("annotations") or {}).get(NODE_MACHINE_ANNOTATION)
        conditions = (machine.get("status") or {}).get("conditions")
        if claimed != owner:
            updated, changed = _set_condition(
                conditions,
                CONDITION_NODE,
                "False",
                "NodeNameTaken",
                f"Node {name} belongs to {claimed or 'no Machine'} ({NODE_MACHINE_ANNOTATION}); "
                "rename this Machine or delete that Node",
                severity="Error",
            )
            if changed:
                await self._patch_status(machine, {"conditions": updated})
            return None
        missing = {
            key: value
            for key, value in labels.items()
            if (node["metadata"].get("labels") or {}).get(key) != value
        }
        if missing:
            node = await self.client.patch("v1", "Node", name, {"metadata": {"labels": missing}})
        return node

    async def _readiness(self, machine: JSON, supervisor: EtcdSupervisor) -> _Readiness:
        name = machine["metadata"]["name"]
        member = supervisor.get(name)
        faults = machine_faults(machine)
        if member is None or not member.running:
            return _Readiness(
                "Unknown",
                "NodeStatusUnknown",
                "etcd member process is not running (crashed or killed)",
                False,
            )
        if member.paused and "stop-member" in faults:
            return _Readiness(
                "True",
                "KubeletReady",
                f"kubelet posts Ready; etcd member process {member.pid} is stopped "
                "(fault injected: stop-member)",
                True,
            )
        if member.paused:
            return _Readiness(
                "Unknown",
                "NodeStatusUnknown",
                f"etcd member process {member.pid} is stopped (SIGSTOP) and answers nothing",
                False,
            )
        options = dataclasses.replace(self.options.client_options, timeout=self.options.health_timeout)
        async with EtcdClient([member.client_url], options) as etcd:
            (health,) = await etcd.health()
        if "notready" in faults:
            return _Readiness("False", "KubeletNotReady", "fault injected: notready", True, health.healthy)
        if not health.healthy:
            return _Readiness("False", "EtcdUnhealthy", f"etcd health read failed: {health.error}", True)
        role = "learner" if health.learner else "voter"
        return _Readiness("True", "KubeletReady", f"etcd member answers its health read ({role})", True, True)

    async def _heartbeat(self, machine: JSON, supervisor: EtcdSupervisor, node: JSON) -> None:
        """Write the Node's Ready condition from the member's state, as kubelet posts node status,
        then its mirror Pods' (:mod:`providers.localmachine.mirror_pods`) while it posts."""
        readiness = await self._readiness(machine, supervisor)
        await self._post_node_status(machine, supervisor, node, readiness)
        if self.mirror_pods is not None and not readiness.alive:
            await self.mirror_pods.mark_not_ready(node["metadata"]["name"])
        elif self.mirror_pods is not None:
            member = supervisor.get(machine["metadata"]["name"])
            await self.mirror_pods.sync(
                node,
                f"{self.cluster_of(machine)}/{machine['metadata']['name']}",
                faults=machine_faults(machine),
                etcd_healthy=readiness.member_healthy,
                host_ip=str(self._addresses(machine, member)[0]["address"]),
            )

    async def _post_node_status(
        self, machine: JSON, supervisor: EtcdSupervisor, node: JSON, readiness: _Readiness
    ) -> None:
        """Write the Node's Ready condition (and addresses) when it changed."""
        now = _now()
        conditions = [dict(c) for c in (node.get("status") or {}).get("conditions") or ()]
        previous = next((c for c in conditions if c.get("type") == "Ready"), None)
        transition = (
            previous.get("lastTransitionTime")
            if previous is not None and previous.get("status") == readiness.status
            else None
        ) or now
        heartbeat = now if readiness.alive or previous is None else previous.get("lastHeartbeatTime") or now
        ready = {
            "type": "Ready",
            "status": readiness.status,
            "reason": readiness.reason,
            "message": readiness.message,
            "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": transition,
        }
        if previous == ready:
            return
        member = supervisor.get(machine["metadata"]["name"])
        await self.client.patch_status(
            "v1",
            "Node",
            node["metadata"]["name"],
            {
                "status": {
                    "conditions": [c for c in conditions if c.get("type") != "Ready"] + [ready],
                    "addresses": self._addresses(machine, member),
                }
            },
        )

    # ------------------------------------------------------------------------------ deletion

    async def _reconcile_delete(self, machine: JSON) -> Result:
        """Deleting → (preDrain hooks) → cordon → (preTerminate hooks) → stop, remove data, Node, finalizer.

        Membership is never changed here: removing the member is the etcd-quorum-hook controller's
        job, which holds the preDrain hook until it has done so.
        """
        metadata = machine["metadata"]
        if FINALIZER not in (metadata.get("finalizers") or ()):
            return Result()
        name, namespace = metadata["name"], self.cluster_of(machine)
        supervisor = self.supervisor(namespace)
        status = machine.get("status") or {}
        if status.get("phase") != PHASE_DELETING:
            machine = await self._patch_status(machine, {"phase": PHASE_DELETING})
        member = supervisor.get(name)
        node = await self._get_own_node(machine, member)
        if member is not None:
            await self._apply_faults(machine, supervisor, member)
        hooks = (machine.get("spec") or {}).get("lifecycleHooks") or {}
        conditions = (machine.get("status") or {}).get("conditions")
        conditions, drain_changed, held = _hook_gate(
            conditions, hooks.get("preDrain") or [], "preDrain", CONDITION_DRAINABLE, "drain", "Drained"
        )
        if held:
            return await self._hold_for_hooks(machine, supervisor, member, node, conditions, drain_changed)
        if node is not None and not (node.get("spec") or {}).get("unschedulable"):
            node = await self.client.patch(
                "v1", "Node", node["metadata"]["name"], {"spec": {"unschedulable": True}}
            )
        conditions, terminate_changed, held = _hook_gate(
            conditions,
            hooks.get("preTerminate") or [],
            "preTerminate",
            CONDITION_TERMINABLE,
            "termination",
            "Terminating",
        )
        changed = drain_changed or terminate_changed
        if held:
            return await self._hold_for_hooks(machine, supervisor, member, node, conditions, changed)
        if changed:
            machine = await self._patch_status(machine, {"conditions": conditions})
        # Stop (SIGTERM, then SIGKILL after the grace period) and remove the data; the etcd member,
        # if still listed, stays listed: the quorum hook owns membership.
        await supervisor.remove(name)
        if node is not None:
            if self.mirror_pods is not None:
                # No garbage collector runs on the embedded API server: the Node's mirror Pods go
                # first, so a crash in between leaves none without their Node (else the sweep).
                await self.mirror_pods.remove(node["metadata"]["name"])
            try:
                await self.client.delete("v1", "Node", node["metadata"]["name"])
            except NotFound:
                pass
        # The instance is gone (process, data, Node): its host may serve another Machine now.
        self._release_host(namespace, name)
        await self._remove_finalizer(machine)
        self._join_attempts.pop((namespace, name), None)
        self._event(machine, "Normal", "Deleted", "etcd member process stopped, data and Node removed")
        _log.info("deleted: etcd member process stopped, data and Node removed")
        return Result()

    async def _sweep_mirror_pods(self, cluster: str, *, always: bool = False) -> None:
        """Delete the cluster's mirror Pods whose Node is gone (:meth:`MirrorPods.sweep`): on the
        first reconcile of the cluster in this process (a crash may have left some), and, with
        ``always``, each time one of its Machines has gone from the API server."""
        if self.mirror_pods is None or (cluster in self._swept and not always):
            return
        await self.mirror_pods.sweep([cluster])
        self._swept.add(cluster)

    async def _hold_for_hooks(
        self,
        machine: JSON,
        supervisor: EtcdSupervisor,
        member: MemberProcess | None,
        node: JSON | None,
        conditions: list[JSON],
        changed: bool,
    ) -> Result:
        """Wait while lifecycle hooks hold a deleting machine: it is still a machine, so its Node
        keeps reporting; the condition naming the hooks is written when it changed."""
        if member is not None and node is not None:
            await self._heartbeat(machine, supervisor, node)
        if changed:
            await self._patch_status(machine, {"conditions": conditions})
        return Result(requeue_after=self.options.heartbeat_period)

    async def _get_own_node(self, machine: JSON, member: MemberProcess | None) -> JSON | None:
        name, namespace = machine["metadata"]["name"], self.cluster_of(machine)
        node_name = self._node_name(machine, member)
        if not node_name:
            return None
        try:
            node = await self.client.get("v1", "Node", node_name)
        except NotFound:
            return None
        claimed = (node["metadata"].get("annotations") or {}).get(NODE_MACHINE_ANNOTATION)
        return node if claimed == f"{namespace}/{name}" else None

    # ------------------------------------------------------------------------------ writes

    async def _add_finalizer(self, machine: JSON) -> JSON:
        metadata = machine["metadata"]
        fresh = await self.client.get(API_VERSION, "Machine", metadata["name"], metadata.get("namespace"))
        finalizers = list(fresh["metadata"].get("finalizers") or [])
        if FINALIZER in finalizers:
            return fresh
        fresh["metadata"]["finalizers"] = [*finalizers, FINALIZER]
        return await self.client.update(fresh)  # Conflict: retried by the controller

    async def _remove_finalizer(self, machine: JSON) -> None:
        metadata = machine["metadata"]
        try:
            fresh = await self.client.get(API_VERSION, "Machine", metadata["name"], metadata.get("namespace"))
        except NotFound:
            return
        finalizers = list(fresh["metadata"].get("finalizers") or [])
        if FINALIZER not in finalizers:
            return
        fresh["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
        await self.client.update(fresh)

    async def _patch_status(self, machine: JSON, status: JSON) -> JSON:
        """Merge-patch ``status``. Its ``conditions``, when present, are ours merged by type over
        the stored list (:func:`merge_own_conditions`) under the read's resourceVersion: a JSON
        merge patch replaces a list whole, so without the lock a condition another writer added
        after our read would be erased."""
        metadata = machine["metadata"]
        name, namespace = metadata["name"], metadata.get("namespace")
        if "conditions" not in status:
            return await self.client.patch_status(API_VERSION, "Machine", name, {"status": status}, namespace)
        ours = [c for c in status["conditions"] or () if c.get("type") in PROVIDER_CONDITIONS]
        stored = machine
        for _ in range(STATUS_WRITE_ATTEMPTS - 1):
            try:
                return await self._patch_conditions(stored, status, ours)
            except Conflict:
                stored = await self.client.get(API_VERSION, "Machine", name, namespace)
        return await self._patch_conditions(stored, status, ours)

    async def _patch_conditions(self, stored: JSON, status: JSON, ours: Sequence[Mapping[str, Any]]) -> JSON:
        """One write of ``status`` with ``ours`` merged over ``stored``'s conditions, valid only if
        the Machine is still at ``stored``'s resourceVersion (else :class:`Conflict`)."""
        metadata = stored["metadata"]
        merged = merge_own_conditions((stored.get("status") or {}).get("conditions"), ours)
        patch: JSON = {
            "metadata": {"resourceVersion": metadata.get("resourceVersion")},
            "status": {**status, "conditions": merged},
        }
        return await self.client.patch_status(
            API_VERSION, "Machine", metadata["name"], patch, metadata.get("namespace")
        )

    def _addresses(self, machine: Mapping[str, Any], member: MemberProcess | None) -> list[JSON]:
        """The Machine's (and its Node's) addresses: InternalIP where its member listens, Hostname
        its Node name."""
        host = member.host if member is not None and self.options.realistic else self.options.etcd.host
        return [
            NodeAddress(type="InternalIP", address=host).to_dict(),
            NodeAddress(type="Hostname", address=self._node_name(machine, member)).to_dict(),
        ]

    async def _ensure_client_secret(self, namespace: str) -> None:
        """Realistic mode: the Secret with the etcd client certificate in ``namespace``, written
        once per namespace and process (an existing one is brought up to date)."""
        pki = self.options.pki
        if pki is None or namespace in self._secrets_written:
            return
        secret = pki.client_secret(self.options.etcd_client_secret, namespace)
        try:
            await self.client.create(secret)
        except AlreadyExists:
            await self.client.patch(
                "v1", "Secret", self.options.etcd_client_secret, {"data": secret["data"]}, namespace
            )
        self._secrets_written.add(namespace)

    def _event(self, machine: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        if reason.startswith("Fault"):
            _log.info(message, reason=reason)
        if self.recorder is not None:
            self.recorder.event(machine, type_, reason, message)


def setup_with_manager(
    manager: Manager, options: LocalMachineOptions | ResolvedLocalMachineOptions
) -> Controller:
    """Add the provider's Machine controller to ``manager`` and return it."""
    resolved = options if isinstance(options, ResolvedLocalMachineOptions) else options.with_defaults()
    reconciler = LocalMachineReconciler(
        manager.client, manager.cache, resolved, manager.get_event_recorder("localmachine")
    )
    return (
        ControllerBuilder(manager)
        .named("localmachine")
        .for_(API_VERSION, "Machine", new_predicate_funcs(is_local_machine))
        .watches_source(Channel(reconciler.host_freed, EnqueueRequestForObject()))
        .with_options(resolved.controller)
        .complete(reconciler)
    )
