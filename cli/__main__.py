"""The ``cpo`` command line: one executable, one sub-command per job.

``cpo run`` is the operator itself (see :mod:`controllers.operator`). ``cpo dev-apiserver`` runs
the embedded API server on its own, for kubectl sessions and for trying the operator by hand;
``cpo localmachine`` runs the local machine provider; ``cpo manifests`` writes the CRDs; ``cpo
explain`` shows one ControlPlane as the operator sees it (:mod:`cli.explain`). The same table is
installed a second time as ``kubectl-cpo`` (:func:`kubectl_main`), so ``kubectl cpo explain NAME``
works once the package is on PATH. Every
sub-command plugs into the same table: write a ``configure(parser)`` that declares the arguments
and a ``run(args) -> exit code``, and add a :class:`Subcommand` to :data:`SUBCOMMANDS`.
Sub-commands import what they need inside ``run`` so that ``cpo --help`` stays fast and one broken
sub-command cannot break the others.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime import eventloop


@dataclass(frozen=True)
class Subcommand:
    """One entry of the dispatch table."""

    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    configures_logging: bool = False
    """True when ``run`` sets up logging itself (``main`` then leaves the root logger alone)."""


# ------------------------------------------------------------------------------ dev-apiserver


def _configure_dev_apiserver(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig-out",
        type=Path,
        required=True,
        metavar="PATH",
        help="where to write the admin kubeconfig (written once the server is ready)",
    )
    parser.add_argument("--port", type=int, default=0, help="HTTPS port (default: a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument(
        "--crd",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="CRD file or folder to install before the kubeconfig is written (repeatable)",
    )


def _run_dev_apiserver(args: argparse.Namespace) -> int:
    return asyncio.run(_serve_dev_apiserver(args))


async def _serve_dev_apiserver(args: argparse.Namespace) -> int:
    from apiserver.server import EmbeddedServerOptions
    from runtime.envtest import Environment, EnvironmentOptions
    from runtime.envtest.kubeconfig import write_kubeconfig

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # Installed before the server starts, so a signal that arrives during start-up still ends us cleanly.
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    options = EnvironmentOptions(
        backend="embedded",
        embedded=EmbeddedServerOptions(host=args.host, port=args.port),
        # This process does nothing but serve, so the server can have the main loop to itself.
        embedded_in_thread=False,
        crd_paths=list(args.crd),
    )
    try:
        async with Environment(options) as env:
            # Everything up to here (modules, the built-in schemas, discovery) lives as long as
            # the process: out of the collector's sight, full collections only walk what requests
            # create, and stay short (the store holds objects as bytes for the same reason).
            gc.collect()
            gc.freeze()
            path = write_kubeconfig(env.kubeconfig, args.kubeconfig_out).absolute()
            print(
                f"Embedded API server listening on {env.url}\n"
                f"Admin kubeconfig written to {path}\n\n"
                f"Try:\n"
                f"  kubectl --kubeconfig {path} get ns\n"
                f"  export KUBECONFIG={path}\n\n"
                f"Stop with Ctrl-C (or SIGTERM).",
                flush=True,
            )
            await stop.wait()
    except (OSError, ValueError, TimeoutError) as err:
        print(f"cpo dev-apiserver: {err}", file=sys.stderr)
        return 1
    print("Embedded API server stopped.", flush=True)
    return 0


# ---------------------------------------------------------------------------------- manifests


def _configure_manifests(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=Path("config/crd"),
        metavar="DIR",
        help="folder for the CRD files, <group>_<plural>.yaml (default: %(default)s)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 and name the files that differ from the models (for CI)",
    )


def _run_manifests(args: argparse.Namespace) -> int:
    from api.crdgen import stale_files, write_crds

    if args.check:
        stale = stale_files(args.output_dir)
        for name in stale:
            print(
                f"cpo manifests: {args.output_dir / name} is out of date; run `cpo manifests`",
                file=sys.stderr,
            )
        return 1 if stale else 0
    try:
        written = write_crds(args.output_dir)
    except OSError as err:
        print(f"cpo manifests: cannot write {args.output_dir}: {err}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


# -------------------------------------------------------------------------------- localmachine


def _configure_localmachine(parser: argparse.ArgumentParser) -> None:
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


def _run_localmachine(args: argparse.Namespace) -> int:
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
        print(f"localmachine provider running; members under {options.state_dir}{where}", flush=True)
        return await manager.run()

    return asyncio.run(serve())


# ------------------------------------------------------------------------------------------ run


def _configure_run(parser: argparse.ArgumentParser) -> None:
    # Every default is None here and applied in OperatorOptions.with_defaults (one place); the help
    # texts name them. Imported lazily: `cpo --help` must not pay for the operator's imports.
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig of the cluster to manage (default: $KUBECONFIG, else the pod's service account)",
    )
    parser.add_argument(
        "--metrics-bind-address",
        metavar="ADDR",
        help="where /metrics is served, host:port or :port; '0' disables it (default: :8443)",
    )
    parser.add_argument(
        "--metrics-secure",
        nargs="?",
        const=True,
        type=_flag_bool,
        metavar="BOOL",
        help="serve /metrics over HTTPS to callers whose bearer token the API server authenticates "
        "and authorises (get on /metrics); --metrics-secure=false serves plain HTTP (default: true)",
    )
    parser.add_argument(
        "--metrics-cert-dir",
        metavar="DIR",
        help="folder with tls.crt and tls.key of the metrics server, reloaded when they change "
        "(default: none, a self-signed certificate generated at start)",
    )
    parser.add_argument(
        "--health-probe-bind-address",
        metavar="ADDR",
        help="where /healthz and /readyz are served; '0' disables them (default: :8081)",
    )
    parser.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run controllers only while holding the Lease (default: on inside a cluster, off elsewhere)",
    )
    parser.add_argument(
        "--leader-election-id",
        metavar="NAME",
        help="name of the Lease (default: controlplane-operator.cpo.dev)",
    )
    parser.add_argument(
        "--leader-election-namespace",
        metavar="NS",
        help="namespace of the Lease (default: the pod's namespace; required outside a cluster)",
    )
    parser.add_argument(
        "--webhooks",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve the admission webhooks (ControlPlane, MachineHealthCheck) (default: on)",
    )
    parser.add_argument(
        "--webhook-host", metavar="ADDR", help="address of the webhook server (default: every interface)"
    )
    parser.add_argument(
        "--webhook-port",
        type=int,
        metavar="PORT",
        help="port of the webhook server; 0 = a free one (default: 9443)",
    )
    parser.add_argument(
        "--webhook-cert-dir",
        metavar="DIR",
        help="folder with tls.crt and tls.key, reloaded when they change "
        "(default: /tmp/k8s-webhook-server/serving-certs)",
    )
    parser.add_argument(
        "--log-format",
        choices=["json", "console"],
        help="log line format (default: json inside a cluster, console elsewhere)",
    )
    parser.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        type=str.upper,
        default=argparse.SUPPRESS,  # absent: the global `cpo --log-level` (INFO) stands
        help="log verbosity (default: INFO)",
    )
    parser.add_argument(
        "--graceful-shutdown-timeout",
        type=float,
        metavar="SECONDS",
        help="how long controllers get to finish after SIGTERM (default: 30)",
    )
    parser.add_argument(
        "--event-loop",
        choices=eventloop.LOOP_KINDS,
        default="auto",
        help="asyncio event loop: uvloop when installed (auto), or force one (default: auto)",
    )
    parser.add_argument(
        "--controllers",
        metavar="LIST",
        help="controllers to run, comma-separated: '*' every one, 'name' enables, '-name' disables; "
        "names: controlplane, etcd-quorum-hook, machinehealthcheck; e.g. *,-machinehealthcheck "
        "(default: *)",
    )
    parser.add_argument(
        "--etcd-hook-name",
        metavar="NAME",
        help="name of the preDrain hook the etcd-quorum-hook controller places; never another "
        "operator's (default: EtcdQuorumOperator)",
    )
    parser.add_argument(
        "--etcd-hook-owner",
        metavar="OWNER",
        help="owner written in that hook (default: clusteroperator/etcd)",
    )


def _flag_bool(text: str) -> bool:
    """A boolean flag's value as Go's flag package reads it: ``--flag=false``, ``--flag=true``."""
    value = text.strip().lower()
    if value in ("1", "t", "true"):
        return True
    if value in ("0", "f", "false"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean: use true or false")


def _run_operator(args: argparse.Namespace) -> int:
    from controllers.operator import OperatorOptions, run_operator

    options = OperatorOptions(
        kubeconfig=args.kubeconfig,
        metrics_bind_address=args.metrics_bind_address,
        metrics_secure=args.metrics_secure,
        metrics_cert_dir=args.metrics_cert_dir,
        health_probe_bind_address=args.health_probe_bind_address,
        leader_election=args.leader_elect,
        leader_election_id=args.leader_election_id,
        leader_election_namespace=args.leader_election_namespace,
        webhooks=args.webhooks,
        webhook_host=args.webhook_host,
        webhook_port=args.webhook_port,
        webhook_cert_dir=args.webhook_cert_dir,
        log_format=args.log_format,
        log_level=args.log_level,
        graceful_shutdown_timeout=args.graceful_shutdown_timeout,
        controllers=args.controllers,
        etcd_hook_name=args.etcd_hook_name,
        etcd_hook_owner=args.etcd_hook_owner,
    )
    return eventloop.run(run_operator(options), loop=args.event_loop)


# ----------------------------------------------------------------------------------------- demo


def _configure_demo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--replicas", type=int, default=None, help="odd replica count to start with (default: 3)"
    )
    parser.add_argument(
        "--steps",
        default=None,
        metavar="NAMES",
        help="comma-separated steps to run, in tour order (default: all: "
        "bootstrap,even,scale-out,kill,rollout,scale-in)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, metavar="DIR", help="where the report goes (default: ./demo-out)"
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="after the report, keep everything running (and print how to reach it) until Ctrl-C, "
        "SIGTERM or SIGHUP",
    )
    parser.add_argument(
        "--fast", action="store_true", help="health-check timeouts of seconds instead of minutes (for CI)"
    )
    parser.add_argument(
        "--realistic",
        action="store_true",
        help="run the provider with --realistic: a loopback address per member, etcd over TLS with "
        "client certificates, no annotation saying where a member is",
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="plain log lines even in a terminal (default: a live panel there)",
    )


def _run_demo(args: argparse.Namespace) -> int:
    from demo import DemoOptions, run_demo

    try:
        options = DemoOptions(
            replicas=args.replicas,
            steps=tuple(args.steps.split(",")) if args.steps else None,
            out=args.out,
            keep=args.keep,
            fast=args.fast,
            realistic=args.realistic,
            live=False if args.plain else None,
        )
        options.with_defaults()
    except ValueError as err:
        print(f"cpo demo: {err}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(run_demo(options))
    except KeyboardInterrupt:
        print("cpo demo: interrupted; every process it started is stopped", file=sys.stderr)
        return 130


# -------------------------------------------------------------------------------------- explain


def _configure_explain(parser: argparse.ArgumentParser) -> None:
    from cli.explain import configure

    configure(parser)


def _run_explain(args: argparse.Namespace) -> int:
    from cli.explain import run

    return run(args)


# ------------------------------------------------------------------------------------ dispatch

SUBCOMMANDS: dict[str, Subcommand] = {
    "demo": Subcommand(
        help="the operator's main job end to end on this machine: scale, kill, roll out, with a report",
        configure=_configure_demo,
        run=_run_demo,
    ),
    "dev-apiserver": Subcommand(
        help="run the embedded Kubernetes API server standalone (for kubectl and manual testing)",
        configure=_configure_dev_apiserver,
        run=_run_dev_apiserver,
    ),
    "explain": Subcommand(
        help="one ControlPlane as the operator sees it: Machines, etcd, remediation, the plan and "
        "what holds it (-o json for scripts, --watch to follow)",
        configure=_configure_explain,
        run=_run_explain,
    ),
    "localmachine": Subcommand(
        help="run the localmachine provider: each Machine becomes a local etcd member and a Node",
        configure=_configure_localmachine,
        run=_run_localmachine,
    ),
    "manifests": Subcommand(
        help="generate the CRDs (config/crd/) from the API models in api/",
        configure=_configure_manifests,
        run=_run_manifests,
    ),
    "run": Subcommand(
        help="run the operator: manager, admission webhooks, metrics, probes, leader election",
        configure=_configure_run,
        run=_run_operator,
        configures_logging=True,
    ),
}


def build_parser(prog: str = "cpo") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="controlplane-operator: quorum-safe control-plane Machine management."
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        type=str.upper,
        help="log verbosity (default: %(default)s)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, subcommand in SUBCOMMANDS.items():
        subparser = subparsers.add_parser(name, help=subcommand.help, description=subcommand.help)
        subcommand.configure(subparser)
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = "cpo") -> int:
    """Entry point of the ``cpo`` console script; returns the process exit code."""
    args = build_parser(prog).parse_args(argv)
    subcommand = SUBCOMMANDS[args.command]
    if not subcommand.configures_logging:
        logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return subcommand.run(args)


def kubectl_main() -> int:
    """Entry point of the ``kubectl-cpo`` console script: kubectl runs it for ``kubectl cpo ...``
    with the words after ``cpo`` as its arguments."""
    return main(prog="kubectl cpo")


if __name__ == "__main__":
    sys.exit(main())
