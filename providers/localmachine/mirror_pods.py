"""Writing a local machine's mirror Pods as kubelet does (what they are: :mod:`~.static_pods`).

:class:`MirrorPods` keeps, per Node, the four mirror Pods in ``kube-system``: created when
missing, deleted and recreated when the stored one is not the manifest's (another hash, another
owner Node uid, as kubelet's ``pkg/kubelet/pod/mirror_client.go`` recreates a mirror Pod that
does not match its static pod), and their status written through ``pods/status`` only when it
changes. It remembers each Pod as last stored, so a settled machine costs no request at all; it
reads them again every ``resync_period`` seconds (a Pod deleted behind its back comes back then,
or at once when a status write finds it gone).

Deleting: :meth:`MirrorPods.remove` deletes a Node's mirror Pods (grace period 0 and the Pod's uid
as precondition, as kubelet deletes a mirror Pod: kube-apiserver would otherwise only mark a Pod
bound to a Node for graceful deletion and wait for a kubelet). The embedded API server runs no
garbage collector, so the provider deletes them itself, before the Node. A crash between the two,
or a Machine whose finalizer went behind the provider's back, leaves Pods whose Node is gone:
:meth:`MirrorPods.sweep` deletes the Pods this provider made (:func:`static_pods.is_ours`) whose
controller Node no longer exists or is another Node of that name (another uid).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from api.components import ETCD, TIER, TIER_LABEL
from providers.localmachine import static_pods as sp
from runtime.client import Client
from runtime.errors import AlreadyExists, Conflict, NotFound
from runtime.jsoncodec import JSON
from runtime.log import get_logger

_log = get_logger("providers.localmachine.mirrorpods")


def _wall() -> str:
    # metav1.Time has whole seconds on the wire.
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class MirrorPods:
    """The mirror Pods of every Node of one provider (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        *,
        resync_period: float,
        backoff_initial: float = sp.BACKOFF_INITIAL,
        backoff_max: float = sp.BACKOFF_MAX,
    ) -> None:
        self.client = client
        self.resync_period = resync_period
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self._pods: dict[str, JSON] = {}
        """Pod name → the Pod as last stored (read, created or status-written)."""
        self._loops: dict[str, sp.CrashLoop] = {}
        self._read_at: dict[str, float] = {}
        """Node name → monotonic time its Pods were last read from the server."""

    async def sync(
        self,
        node: Mapping[str, Any],
        machine_key: str,
        *,
        faults: frozenset[str],
        etcd_healthy: bool,
        host_ip: str,
    ) -> None:
        """One kubelet status pass over ``node``'s mirror Pods: create what is missing, replace
        what does not match, write each status that changed (``etcd_healthy``: the member's
        health read; ``faults``: the Machine's, of which the ``*-notready`` ones count)."""
        node_name = str(node["metadata"]["name"])
        clock, wall = time.monotonic(), _wall()
        if clock - self._read_at.get(node_name, float("-inf")) >= self.resync_period:
            for component in sp.COMPONENTS:
                self._pods.pop(sp.pod_name(component, node_name), None)
            self._read_at[node_name] = clock
        failing = sp.faulted_components(faults)
        for component in sp.COMPONENTS:
            desired = sp.desired_pod(component, node, machine_key)
            pod = await self._ensure(component, desired)
            name = sp.pod_name(component, node_name)
            loop = sp.advance(
                self._loops.get(name, sp.CrashLoop()),
                failing=component in failing,
                clock=clock,
                wall=wall,
                backoff_initial=self.backoff_initial,
                backoff_max=self.backoff_max,
            )
            self._loops[name] = loop
            ready = etcd_healthy if component == ETCD else True
            wanted = sp.pod_status(pod, loop, ready=ready, host_ip=host_ip, wall=wall)
            if not sp.status_changes(pod, wanted):
                continue
            try:
                self._pods[name] = await self.client.patch_status(
                    "v1", "Pod", name, {"status": wanted}, sp.NAMESPACE
                )
            except NotFound:
                self._forget(name)  # deleted behind our back: created again on the next pass

    async def mark_not_ready(self, node_name: str) -> None:
        """``node_name``'s kubelet stopped posting: turn its mirror Pods' ``Ready`` False, once
        (:func:`static_pods.marked_not_ready`); Pods that do not exist are not made."""
        wall = _wall()
        for component in sp.COMPONENTS:
            name = sp.pod_name(component, node_name)
            pod = self._pods.get(name) or await self._get(name)
            if pod is None:
                continue
            self._pods[name] = pod
            conditions = sp.marked_not_ready(pod, wall)
            if conditions is None:
                continue
            try:
                self._pods[name] = await self.client.patch_status(
                    "v1", "Pod", name, {"status": {"conditions": conditions}}, sp.NAMESPACE
                )
            except NotFound:
                self._forget(name)

    async def _ensure(self, component: str, desired: JSON) -> JSON:
        """The stored mirror Pod ``desired`` describes: remembered, read, or (re)created."""
        name = str(desired["metadata"]["name"])
        pod = self._pods.get(name)
        if pod is None:
            pod = await self._get(name)
            if pod is not None and name not in self._loops:
                self._loops[name] = sp.loop_from_status(pod, component, self.backoff_initial)
        if pod is not None and (not sp.matches(pod, desired) or pod["metadata"].get("deletionTimestamp")):
            _log.info("mirror pod replaced", pod=name, reason="manifest or owner Node changed")
            await self._delete(pod)
            pod = None
        if pod is None:
            self._loops.pop(name, None)  # a new Pod is a new container: no restarts yet
            try:
                pod = await self._create(desired)
            except AlreadyExists:
                # Another writer got in between: take it as it is; the next pass checks it.
                pod = await self.client.get("v1", "Pod", name, sp.NAMESPACE)
        self._pods[name] = pod
        return pod

    async def _create(self, desired: JSON) -> JSON:
        """Create ``desired``; a cluster without ``kube-system`` (none a kubeadm cluster lacks)
        gets it first."""
        try:
            return await self.client.create(desired)
        except NotFound:
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": sp.NAMESPACE}}
            with contextlib.suppress(AlreadyExists):
                await self.client.create(namespace)
            return await self.client.create(desired)

    async def _get(self, name: str) -> JSON | None:
        try:
            return await self.client.get("v1", "Pod", name, sp.NAMESPACE)
        except NotFound:
            return None

    async def _delete(self, pod: Mapping[str, Any]) -> None:
        """Delete ``pod`` now (grace period 0), only if it is still the one read (its uid)."""
        metadata = pod["metadata"]
        try:
            await self.client.delete(
                "v1",
                "Pod",
                metadata["name"],
                sp.NAMESPACE,
                preconditions={"uid": metadata["uid"]} if metadata.get("uid") else None,
                grace_period_seconds=0,
            )
        except (NotFound, Conflict):
            pass  # gone already, or another Pod of that name now: not the one meant
        self._forget(str(metadata["name"]))

    def _forget(self, name: str) -> None:
        self._pods.pop(name, None)
        self._loops.pop(name, None)

    async def remove(self, node_name: str) -> None:
        """Delete ``node_name``'s mirror Pods (before its Node goes) and forget them."""
        for component in sp.COMPONENTS:
            name = sp.pod_name(component, node_name)
            pod = self._pods.get(name) or await self._get(name)
            if pod is not None:
                await self._delete(pod)
            self._forget(name)
        self._read_at.pop(node_name, None)

    async def sweep(self, clusters: Iterable[str]) -> list[str]:
        """Delete the mirror Pods this provider made for ``clusters`` (namespaces) whose
        controller Node is gone or is another Node of that name; returns their names."""
        served = frozenset(clusters)
        listed = await self.client.list("v1", "Pod", sp.NAMESPACE, label_selector=f"{TIER_LABEL}={TIER}")
        nodes: dict[str, str | None] = {}
        removed: list[str] = []
        for pod in listed.get("items") or ():
            owner = sp.owner_node(pod)
            if not sp.is_ours(pod, served) or owner is None:
                continue
            node_name, uid = owner
            if node_name not in nodes:
                try:
                    node = await self.client.get("v1", "Node", node_name)
                    nodes[node_name] = node["metadata"].get("uid")
                except NotFound:
                    nodes[node_name] = None
            if nodes[node_name] == uid:
                continue
            await self._delete(pod)
            removed.append(str(pod["metadata"]["name"]))
        if removed:
            _log.info("mirror pods of gone Nodes deleted", pods=removed)
        return removed
