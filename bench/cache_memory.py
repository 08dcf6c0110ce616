"""Memory per cached object and read costs of the informer store, for a ~2 KB Machine-like object.

Not part of the test run. Feeds ``--objects`` Machine-like custom resources (about 2 KB of JSON
each once ``managedFields`` is dropped, ~2.5 KB as the server sends them) into an
:class:`~runtime.cache.Informer` exactly as its reflector does after a list (``replace``), and
measures with tracemalloc what the store keeps: the JSON text, the keys and the two built-in
indexes. It also times reads (a private copy each) against the alternatives. Run::

    .venv/bin/python -m bench.cache_memory [--objects 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import sys
import time
import tracemalloc
import uuid
from typing import Any

from kubernetes_asyncio.client import Configuration

from runtime.cache import Informer, ResourceEventHandlerFuncs
from runtime.client import Client


def machine(i: int, owner_uid: str) -> dict[str, Any]:
    """A control-plane Machine as the machine API stores it, managedFields included."""
    name = f"prod-abc12-master-{i:05d}"
    node = f"ip-10-0-{i % 250}-{i % 200}.ec2.internal"
    stamp = "2026-11-24T06:00:00Z"
    return {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "Machine",
        "metadata": {
            "name": name,
            "namespace": "openshift-machine-api",
            "uid": str(uuid.uuid4()),
            "resourceVersion": str(100000 + i),
            "generation": 3,
            "creationTimestamp": stamp,
            "labels": {
                "machine.openshift.io/cluster-api-cluster": "prod-abc12",
                "machine.openshift.io/cluster-api-machine-role": "master",
                "machine.openshift.io/cluster-api-machine-type": "master",
                "machine.openshift.io/zone": f"zone-{i % 3}",
            },
            "annotations": {
                "cpo.dev/spec-hash": uuid.uuid4().hex,
                "machine.openshift.io/instance-state": "running",
            },
            "finalizers": ["machine.machine.openshift.io"],
            "ownerReferences": [
                {
                    "apiVersion": "controlplane.cpo.dev/v1alpha1",
                    "kind": "ControlPlane",
                    "name": "cluster",
                    "uid": owner_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "controlplane-operator",
                    "operation": "Update",
                    "apiVersion": "machine.openshift.io/v1beta1",
                    "time": stamp,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:labels": {".": {}, "f:machine.openshift.io/zone": {}}},
                        "f:spec": {"f:providerSpec": {".": {}, "f:value": {}}},
                    },
                },
                {
                    "manager": "localmachine",
                    "operation": "Update",
                    "apiVersion": "machine.openshift.io/v1beta1",
                    "time": stamp,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {".": {}, "f:addresses": {}, "f:nodeRef": {}, "f:phase": {}}},
                    "subresource": "status",
                },
            ],
        },
        "spec": {
            "lifecycleHooks": {"preDrain": [{"name": "EtcdQuorumOperator", "owner": "clusteroperator/etcd"}]},
            "providerID": f"local:///{name}",
            "providerSpec": {
                "value": {
                    "apiVersion": "local.cpo.dev/v1",
                    "kind": "LocalMachineProviderSpec",
                    "instanceType": "m6i.xlarge",
                    "image": "rhcos-418.94.202410090804-0",
                    "zone": f"zone-{i % 3}",
                    "rootVolume": {"size": 120, "type": "gp3", "iops": 3000, "encrypted": True},
                    "userDataSecret": {"name": "master-user-data"},
                    "credentialsSecret": {"name": "local-credentials"},
                    "tags": [{"name": "kubernetes.io/cluster/prod-abc12", "value": "owned"}],
                    "subnet": {
                        "filters": [{"name": "tag:Name", "values": [f"prod-abc12-private-zone-{i % 3}"]}]
                    },
                }
            },
        },
        "status": {
            "phase": "Running",
            "providerStatus": {"instanceId": f"i-{uuid.uuid4().hex[:17]}", "instanceState": "running"},
            "nodeRef": {"kind": "Node", "name": node, "uid": str(uuid.uuid4())},
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{i % 250}.{i % 200}"},
                {"type": "InternalDNS", "address": node},
                {"type": "Hostname", "address": node},
            ],
            "lastUpdated": stamp,
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "lastTransitionTime": stamp,
                    "reason": "AsExpected",
                    "message": "",
                }
                for t in ("Drainable", "InstanceExists", "Terminable")
            ],
        },
    }


def per_call_us(fn: Any, arg: Any, rounds: int = 2000) -> float:
    started = time.perf_counter()
    for _ in range(rounds):
        fn(arg)
    return (time.perf_counter() - started) / rounds * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    args = parser.parse_args()
    owners = [str(uuid.uuid4()) for _ in range(max(1, args.objects // 3))]
    served = [
        json.dumps(machine(i, owners[i % len(owners)]), separators=(",", ":")) for i in range(args.objects)
    ]
    served_size = sum(map(len, served)) / len(served)

    async with Client(Configuration(host="http://127.0.0.1:9")) as client:  # never contacted
        # Speed first, without tracemalloc (which slows allocation several times over).
        timing = Informer(client, "machine.openshift.io/v1beta1", "Machine")
        batch = [json.loads(text) for text in served]
        started = time.perf_counter()
        timing.replace(batch, "1")
        fill_us = (time.perf_counter() - started) / args.objects * 1e6
        del timing, batch

        # Memory: what the store still holds once the decoded list the reflector had is gone.
        informer = Informer(client, "machine.openshift.io/v1beta1", "Machine")
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        decoded = [json.loads(text) for text in served]
        informer.replace(decoded, "1")
        del decoded
        per_object = (tracemalloc.get_traced_memory()[0] - before) / args.objects
        tracemalloc.stop()
        stripped_size = sum(len(json.dumps(o, separators=(",", ":"))) for o in informer.list()) / len(
            informer
        )
        key = informer.list_keys()[0]
        sample = informer.get_by_key(key)

        def recursive_copy(o: Any) -> Any:
            if type(o) is dict:
                return {k: recursive_copy(v) for k, v in o.items()}
            if type(o) is list:
                return [recursive_copy(v) for v in o]
            return o

        def interned(o: Any) -> Any:
            if type(o) is dict:
                return {sys.intern(k): interned(v) for k, v in o.items()}
            if type(o) is list:
                return [interned(v) for v in o]
            return o

        texts = [json.dumps(o, separators=(",", ":")) for o in informer.list()]
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        as_dicts = [interned(json.loads(text)) for text in texts]
        dict_per_object = (tracemalloc.get_traced_memory()[0] - before) / args.objects
        tracemalloc.stop()
        del as_dicts

        print(f"objects: {args.objects}")
        print(f"JSON size: {served_size:.0f} B as served, {stripped_size:.0f} B without managedFields")
        print(f"cache: {per_object:.0f} B per object (JSON text + key + namespace/owner indexes)")
        print(f"  for comparison, parsed dicts with interned keys: {dict_per_object:.0f} B per object")
        print(f"store fill from a list (transform, encode, index): {fill_us:.1f} µs per object")
        print(f"get_by_key (decode = private copy): {per_call_us(informer.get_by_key, key):.1f} µs")
        print(
            f"  copy.deepcopy: {per_call_us(copy.deepcopy, sample):.1f} µs, recursive copy: "
            f"{per_call_us(recursive_copy, sample):.1f} µs"
        )
        # One watch MODIFIED event through the store: transform, encode, decode the old state for
        # the handler and the indexes, re-index, call a no-op handler.
        informer.add_event_handler(ResourceEventHandlerFuncs(on_update=lambda old, new: None))
        updates = [json.loads(text) for text in served[:2000]]
        for n, update in enumerate(updates):
            update["metadata"]["resourceVersion"] = str(900000 + n)
        started = time.perf_counter()
        for update in updates:
            informer.apply("MODIFIED", update)
        print(f"apply(MODIFIED) with a no-op handler: {(time.perf_counter() - started) / 2000 * 1e6:.1f} µs")
        started = time.perf_counter()
        informer.list()
        print(f"list() of all objects: {(time.perf_counter() - started) / len(informer) * 1e6:.1f} µs/object")


if __name__ == "__main__":
    asyncio.run(main())
