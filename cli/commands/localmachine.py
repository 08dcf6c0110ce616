"""``cpo localmachine``: the local machine provider's flags and the manager that runs it.

The provider itself (each Machine a local etcd member and a Node) is :mod:`providers.localmachine`,
a development tool: it is imported only when the command runs, never by ``cpo --help``.

By default it also keeps each Node's control-plane mirror Pods in ``kube-system`` (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler), as kubelet does for static pods;
``--no-static-pods`` turns that off.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    _add_cluster_arguments(parser)
    _add_timing_arguments(parser)
    _add_realistic_arguments(parser)
    _add_serving_arguments(parser)


def _add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the members live, and which API server and namespace the provider serves."""
    parser.add_argument(
        "--state-dir",
        type=Path,
        required=True,
        metavar="DIR",
        help="folder for the etcd members (data, logs, state files); a restart on it re-attaches",
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        default=None,
        metavar="PATH",
        help="kubeconfig of the API server (default: $KUBECONFIG, else in-cluster)",
    )
    parser.add_argument(
        "--namespace",
        default=None,
        help="serve only the Machines of this namespace (default: every namespace)",
    )
    parser.add_argument(
        "--max-instances-per-domain",
        type=int,
        default=None,
        metavar="N",
        help="hosts per failure domain (providerSpec failureDomain, else zone; Machines without one "
        "form a pool of their own) in each namespace: a Machine beyond N waits in Provisioning "
        "(EtcdMemberStarted=False, reason WaitingForHost) until a host of its domain is freed; with "
        "--realistic a replacement takes the freed host's address (default: no limit)",
    )
    parser.add_argument(
        "--no-static-pods",
        dest="static_pods",
        action="store_false",
        help="make no mirror Pods: by default each Node gets etcd-, kube-apiserver-, "
        "kube-controller-manager- and kube-scheduler-<node> in kube-system, with their status, as "
        "kubelet shows a control-plane node's static pods",
    )
    parser.add_argument(
        "--node-role-labels",
        choices=["both", "control-plane", "master"],
        default=None,
        help="role labels of the Nodes: both node-role.kubernetes.io/master and .../control-plane "
        "(as OpenShift 4), control-plane only (as kubeadm since 1.24), or master only (default: both)",
    )


def _add_timing_arguments(parser: argparse.ArgumentParser) -> None:
    """Heartbeats, health reads, stopping a member and joining etcd: how long each may take."""
    parser.add_argument(
        "--heartbeat-period",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds between two Node heartbeats (default: 10)",
    )
    parser.add_argument(
        "--health-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds a member may take to answer its health read (default: half the heartbeat, at most 2)",
    )
    parser.add_argument(
        "--stop-grace-period",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds between SIGTERM and SIGKILL when a machine's etcd is stopped (default: 10)",
    )
    parser.add_argument(
        "--join-backoff-max",
        type=float,
        default=None,
        metavar="SECONDS",
        help="longest wait between two attempts to join etcd (default: 10)",
    )


def _add_realistic_arguments(parser: argparse.ArgumentParser) -> None:
    """``--realistic``: members as a cloud shows them, with its address block and client Secret."""
    parser.add_argument(
        "--realistic",
        action="store_true",
        help="show the operator only what a cloud shows: each member on its own loopback address "
        "(its Node's InternalIP) at ports 2379/2380, etcd over TLS with client certificates, Nodes "
        "named ip-127-X-Y-Z, no annotation saying where a member is",
    )
    parser.add_argument(
        "--address-block",
        default=None,
        metavar="127.X.Y",
        help="with --realistic: the loopback /24 of this provider's members (default: the one "
        "recorded in --state-dir, else a free one drawn at random)",
    )
    parser.add_argument(
        "--etcd-client-secret",
        default=None,
        metavar="NAME",
        help="with --realistic: the Secret, in each Machines' namespace, holding the etcd client "
        "certificate (tls.crt, tls.key, ca.crt) for the ControlPlane's spec.etcd.tlsSecretRef "
        "(default: etcd-client-tls)",
    )


def _add_serving_arguments(parser: argparse.ArgumentParser) -> None:
    """The provider's log lines, /metrics and health probes."""
    parser.add_argument(
        "--log-format",
        choices=["json", "console"],
        default=None,
        help="structured log lines as JSON or for humans (default: json in a pod, console otherwise)",
    )
    parser.add_argument(
        "--metrics-bind-address",
        default="0",
        metavar="ADDRESS",
        help="where /metrics is served, ':8080' for example (default: %(default)s, disabled)",
    )
    parser.add_argument(
        "--health-probe-bind-address",
        default="0",
        metavar="ADDRESS",
        help="where /healthz and /readyz are served (default: %(default)s, disabled)",
    )


def run(args: argparse.Namespace) -> int:
    from providers.localmachine import LocalMachineOptions, setup_with_manager
    from runtime.cache import CacheOptions
    from runtime.log import configure_logging
    from runtime.manager import Manager, ManagerOptions

    try:
        options = LocalMachineOptions(
            state_dir=args.state_dir,
            heartbeat_period=args.heartbeat_period,
            health_timeout=args.health_timeout,
            stop_grace_period=args.stop_grace_period,
            join_backoff_max=args.join_backoff_max,
            realistic=args.realistic,
            address_block=args.address_block,
            etcd_client_secret=args.etcd_client_secret,
            node_role_labels=args.node_role_labels,
            max_instances_per_domain=args.max_instances_per_domain,
            static_pods=args.static_pods,
        ).with_defaults()
    except (ValueError, RuntimeError) as err:
        print(f"cpo localmachine: {err}", file=sys.stderr)
        return 2

    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)  # main()'s plain format: our lines carry structured keys
    configure_logging(args.log_format, args.log_level)

    async def serve() -> int:
        try:
            manager = await Manager.create(
                ManagerOptions(
                    kubeconfig=str(args.kubeconfig) if args.kubeconfig is not None else None,
                    metrics_bind_address=args.metrics_bind_address,
                    health_probe_bind_address=args.health_probe_bind_address,
                    cache_options=CacheOptions(namespace=args.namespace),
                )
            )
        except (OSError, ValueError) as err:
            print(f"cpo localmachine: {err}", file=sys.stderr)
            return 1
        setup_with_manager(manager, options)
        where = (
            f"; addresses {options.address_block.prefix}.0/24, "
            f"etcd client Secret {options.etcd_client_secret}"
            if options.address_block is not None
            else ""
        )
        if not options.static_pods:
            where += "; no mirror Pods"
        if options.max_instances_per_domain is not None:
            where += f"; at most {options.max_instances_per_domain} hosts per failure domain"
        print(f"localmachine provider running; members under {options.state_dir}{where}", flush=True)
        return await manager.run()

    return asyncio.run(serve())
