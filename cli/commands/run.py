"""``cpo run``: the operator's command-line flags and the call that runs it (:mod:`controllers.operator`).

The flags mirror a controller-runtime manager's (``--metrics-bind-address``, ``--leader-elect``,
``--health-probe-bind-address``...), declared in groups, one function each, in the order
``cpo run --help`` lists them. Every default is None here and applied in
:meth:`~controllers.operator.OperatorOptions.with_defaults` (one place); the help texts name them.
"""

from __future__ import annotations

import argparse

from runtime import eventloop


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig of the cluster to manage (default: $KUBECONFIG, else the pod's service account)",
    )
    _add_metrics_and_probe_arguments(parser)
    _add_leader_election_arguments(parser)
    _add_webhook_arguments(parser)
    _add_process_arguments(parser)
    _add_controller_arguments(parser)
    _add_remediation_arguments(parser)


def _add_metrics_and_probe_arguments(parser: argparse.ArgumentParser) -> None:
    """Where /metrics, /healthz and /readyz are served, and how /metrics is secured."""
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


def _add_leader_election_arguments(parser: argparse.ArgumentParser) -> None:
    """Whether controllers run only while holding the Lease, and which Lease."""
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


def _add_webhook_arguments(parser: argparse.ArgumentParser) -> None:
    """Whether the admission webhooks are served, and where and with which certificate."""
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


def _add_process_arguments(parser: argparse.ArgumentParser) -> None:
    """The process itself: its logs, its shutdown grace and its event loop."""
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


def _add_controller_arguments(parser: argparse.ArgumentParser) -> None:
    """Which controllers run, the etcd-quorum-hook controller's hook, and which Nodes are the
    control plane's."""
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
        "operator's. A ControlPlane's release removes a hook of this name of its own; the default "
        "one only while etcd-quorum-hook runs (default: EtcdQuorumOperator)",
    )
    parser.add_argument(
        "--etcd-hook-owner",
        metavar="OWNER",
        help="owner written in that hook (default: clusteroperator/etcd)",
    )
    parser.add_argument(
        "--etcd-member-without-machine-grace",
        type=float,
        metavar="SECONDS",
        help="how long a started etcd member of no Machine and no Node must have been unhealthy "
        "before the etcd-quorum-hook controller removes it (default: 120)",
    )
    parser.add_argument(
        "--control-plane-node-selector",
        action="append",
        metavar="SELECTOR",
        help="label selector of control-plane Nodes; repeat it: a Node any of them matches is one, "
        "and only those are watched; given, it replaces the default (default: "
        "node-role.kubernetes.io/control-plane and node-role.kubernetes.io/master)",
    )
    parser.add_argument(
        "--control-plane-components",
        choices=("kubeadm", "openshift", "off"),
        help="where the kube-apiserver, kube-controller-manager, kube-scheduler and etcd static "
        "pods' mirror Pods are, whose readiness gates every ControlPlane step: kubeadm "
        "(kube-system, component=<name>,tier=control-plane), openshift (openshift-kube-apiserver, "
        "...), or off (not checked, and reported so) (default: kubeadm)",
    )
    parser.add_argument(
        "--control-plane-components-grace",
        type=float,
        metavar="SECONDS",
        help="how long a Node must have been Ready before a component Pod missing on it counts as "
        "unhealthy, and before no Pod seen anywhere is reported as a misconfiguration (default: 120)",
    )


def _add_remediation_arguments(parser: argparse.ArgumentParser) -> None:
    """How the ControlPlane bounds the remediation retries of a lineage where its
    ``spec.remediation`` sets no ``retryPeriod`` or ``maxRetry`` (a ControlPlane's own values win)."""
    parser.add_argument(
        "--remediation-backoff-initial",
        type=float,
        metavar="SECONDS",
        help="wait before the first remediation retry of a Machine's replacement, where "
        "spec.remediation.retryPeriod is not set (default: 30)",
    )
    parser.add_argument(
        "--remediation-backoff-factor",
        type=float,
        metavar="FACTOR",
        help="what each further retry multiplies that wait by, at least 1 (default: 2)",
    )
    parser.add_argument(
        "--remediation-backoff-max",
        type=float,
        metavar="SECONDS",
        help="longest wait before a remediation retry (default: 600)",
    )
    parser.add_argument(
        "--remediation-max-retry",
        type=int,
        metavar="N",
        help="remediation retries of a lineage where spec.remediation.maxRetry is not set; then the "
        "ControlPlane is Degraded (ReplacementsFailing) until the template changes or the "
        "annotation controlplane.cpo.dev/resume-remediation is set (default: 5)",
    )


def _flag_bool(text: str) -> bool:
    """A boolean flag's value as Go's flag package reads it: ``--flag=false``, ``--flag=true``."""
    value = text.strip().lower()
    if value in ("1", "t", "true"):
        return True
    if value in ("0", "f", "false"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean: use true or false")


def run(args: argparse.Namespace) -> int:
    # Imported here: `cpo --help` must not pay for the operator's imports.
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
        etcd_member_without_machine_grace=args.etcd_member_without_machine_grace,
        control_plane_node_selectors=(
            tuple(args.control_plane_node_selector) if args.control_plane_node_selector else None
        ),
        control_plane_components=args.control_plane_components,
        control_plane_components_grace=args.control_plane_components_grace,
        remediation_backoff_initial=args.remediation_backoff_initial,
        remediation_backoff_factor=args.remediation_backoff_factor,
        remediation_backoff_max=args.remediation_backoff_max,
        remediation_max_retry=args.remediation_max_retry,
    )
    return eventloop.run(run_operator(options), loop=args.event_loop)
