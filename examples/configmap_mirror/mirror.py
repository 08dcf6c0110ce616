"""A whole operator on ``runtime/``: every labelled ConfigMap gets an owned copy, kept in step.

Label a ConfigMap ``mirror.example.com/enabled=true`` and the operator creates ``<name>-mirror``
beside it, with the same ``data`` and a controller ``ownerReference`` back to it (so Kubernetes'
garbage collector deletes the copy with its source). Edit the source and the copy follows; edit
or delete the copy and it is put back. The shape is controller-runtime's getting-started:

1. a :class:`~runtime.manager.Manager` owns the client, the shared cache and the run loop;
2. a reconciler says how to bring one object to its desired state, reading from the cache and
   writing through the client, and answers with a :class:`~runtime.reconcile.Result`;
3. :class:`~runtime.builder.ControllerBuilder` says what to watch: ``for_`` the ConfigMaps it
   mirrors, ``owns`` the copies (an event on a copy enqueues its owner).

Run it against the embedded API server::

    cpo dev-apiserver --kubeconfig-out /tmp/kc &
    python -m examples.configmap_mirror --kubeconfig /tmp/kc
    kubectl --kubeconfig /tmp/kc create configmap app --from-literal=colour=blue
    kubectl --kubeconfig /tmp/kc label configmap app mirror.example.com/enabled=true
    kubectl --kubeconfig /tmp/kc get configmap app-mirror -o yaml
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from runtime.builder import ControllerBuilder
from runtime.client import Client
from runtime.errors import AlreadyExists, Conflict, NotFound
from runtime.log import configure_logging, get_logger
from runtime.manager import Manager, ManagerOptions
from runtime.predicate import new_predicate_funcs
from runtime.reconcile import Request, Result

SOURCE_LABEL = "mirror.example.com/enabled"
MIRROR_SUFFIX = "-mirror"

log = get_logger("configmap-mirror")


def is_source(obj: dict[str, Any]) -> bool:
    """ConfigMaps that asked to be mirrored (copies never carry the label)."""
    return (obj.get("metadata", {}).get("labels") or {}).get(SOURCE_LABEL) == "true"


def desired_mirror(source: dict[str, Any]) -> dict[str, Any]:
    meta = source["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": meta["name"] + MIRROR_SUFFIX,
            "namespace": meta["namespace"],
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": dict(source.get("data") or {}),
    }


class MirrorReconciler:
    """Brings ``<name>-mirror`` in line with ConfigMap ``<name>``."""

    def __init__(self, client: Client, cache: Any) -> None:
        self.client = client  # writes go to the API server
        self.cache = cache  # reads come from the informers (copies, safe to change)

    async def reconcile(self, request: Request) -> Result:
        try:
            source = await self.cache.get("v1", "ConfigMap", request.name, request.namespace)
        except NotFound:
            return Result()  # gone: the garbage collector removes its copy through the ownerReference
        if not is_source(source):
            return Result()
        desired = desired_mirror(source)
        name = desired["metadata"]["name"]
        try:
            mirror = await self.cache.get("v1", "ConfigMap", name, request.namespace)
        except NotFound:
            try:
                await self.client.create(desired)
            except AlreadyExists:
                # Our cache has not seen the copy yet: look again with backoff.
                return Result(requeue=True)
            log.info("created mirror", mirror=name)
            return Result()
        owners = mirror["metadata"].get("ownerReferences") or []
        if not any(o.get("uid") == source["metadata"]["uid"] and o.get("controller") for o in owners):
            # Someone else's ConfigMap has the name we need: never take it over; check back later.
            log.warning("a ConfigMap not owned by us is in the way", mirror=name)
            return Result(requeue_after=60)
        if mirror.get("data") == desired["data"]:
            return Result()
        mirror["data"] = desired["data"]
        try:
            await self.client.update(mirror)
        except Conflict:
            # The copy changed after our cache saw it; the next attempt reads the newer one.
            return Result(requeue=True)
        log.info("updated mirror", mirror=name)
        return Result()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="configmap-mirror", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, else in-cluster)")
    parser.add_argument("--metrics-bind-address", default="0", help="'host:port' for /metrics, '0' = off")
    parser.add_argument("--health-probe-bind-address", default="0", help="'host:port' for probes, '0' = off")
    return parser.parse_args(argv)


async def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging("console", "info")
    manager = await Manager.create(
        ManagerOptions(
            kubeconfig=args.kubeconfig,
            metrics_bind_address=args.metrics_bind_address,
            health_probe_bind_address=args.health_probe_bind_address,
        )
    )
    (
        ControllerBuilder(manager)
        .named("configmap-mirror")
        .for_("v1", "ConfigMap", new_predicate_funcs(is_source))
        .owns("v1", "ConfigMap")
        .complete(MirrorReconciler(manager.client, manager.cache))
    )
    log.info("starting")
    return await manager.run()  # until SIGTERM/SIGINT; 0 after a clean stop
