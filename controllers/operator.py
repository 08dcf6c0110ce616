"""``cpo run``: the operator's main process, one manager hosting the webhook server and the controllers.

What runs, and on which ports (the defaults match ``config/manager/manager.yaml``):

* ``/metrics`` on ``:8443`` (Prometheus text: controller-runtime's metric families and the operator's own),
  over HTTPS (the pair in ``--metrics-cert-dir``, else a self-signed certificate generated at start),
  readable only with a bearer token the API server authenticates (TokenReview) and authorises to
  ``get`` the non-resource URL ``/metrics`` (SubjectAccessReview), as kubebuilder projects serve it;
  ``--metrics-secure=false`` serves plain HTTP for local use;
* ``/healthz`` and ``/readyz`` on ``:8081``; ``/readyz`` passes once the caches are synced and
  the webhook server completes a TLS handshake;
* the admission webhook server on ``:9443`` (HTTPS, key and certificate read from
  ``--webhook-cert-dir`` and reloaded when they change): the ControlPlane validator at
  ``/validate-controlplane-cpo-dev-v1alpha1-controlplane`` (which also sees
  ``controlplanes/scale``), the defaulter at ``/mutate-controlplane-cpo-dev-v1alpha1-controlplane``
  and, only while the ``machinehealthcheck`` controller runs, the MachineHealthCheck validator at
  ``/validate-machine-openshift-io-v1beta1-machinehealthcheck``, the paths
  ``config/webhook/manifests.yaml`` and ``config/machinehealthcheck/`` name;
* leader election on the Lease ``controlplane-operator.cpo.dev``, on by default inside a cluster
  (in the pod's namespace), off elsewhere: only the leader runs controllers, every replica serves
  webhooks;
* the controllers, registered in :func:`setup_controllers`: ``controlplane``, ``etcd-quorum-hook``
  and ``machinehealthcheck``. ``--controllers`` picks them as kube-controller-manager does: a
  comma-separated list of ``*`` (every controller), ``name`` (enable) and ``-name`` (disable),
  e.g. ``--controllers=*,-machinehealthcheck`` beside another MachineHealthCheck controller; an
  unknown name is refused at start with the list of valid ones. ``--etcd-hook-name`` and
  ``--etcd-hook-owner`` name the preDrain hook the etcd-quorum-hook controller writes (default
  ``EtcdQuorumOperator``, owner ``clusteroperator/etcd``), so that it never becomes a second
  writer of another operator's hook (``docs/operations.md``, "Beside OpenShift's operators").
  ``--remediation-backoff-initial``, ``--remediation-backoff-factor``,
  ``--remediation-backoff-max`` and ``--remediation-max-retry`` bound the ControlPlane's
  remediation retries where its ``spec.remediation`` sets no ``retryPeriod`` or ``maxRetry``
  (30 s doubling to 600 s, 5 retries; ``docs/operations.md``, "Replacements that keep failing").

Logs are structured (:mod:`runtime.log`): JSON inside a cluster, console lines elsewhere.
SIGTERM or SIGINT stops the manager gracefully (the Lease is released) and the process exits 0;
a second signal exits at once with 1. A start-up problem (no kubeconfig, no serving certificate,
a bad flag) ends the process with 1 and one log line saying what to change.

Every option is a field of :class:`OperatorOptions`, resolved in one place,
:meth:`OperatorOptions.with_defaults`; the command line only fills the fields in:

>>> from controllers.operator import OperatorOptions
>>> options = OperatorOptions(kubeconfig=kubeconfig, webhooks=False, metrics_bind_address=":0")
>>> resolved = options.with_defaults()
>>> resolved.metrics_bind_address, resolved.health_probe_bind_address, resolved.leader_election
(':0', ':8081', False)
>>> OperatorOptions(leader_election=True, kubeconfig=kubeconfig).with_defaults()
Traceback (most recent call last):
ValueError: --leader-elect outside a cluster needs --leader-election-namespace (the Lease's ...
>>> only = OperatorOptions(kubeconfig=kubeconfig, controllers="*,-machinehealthcheck").with_defaults()
>>> sorted(only.controllers)
['controlplane', 'etcd-quorum-hook']
>>> OperatorOptions(kubeconfig=kubeconfig, controllers="*,-mhc").with_defaults()
Traceback (most recent call last):
ValueError: --controllers: unknown controller 'mhc'; the controllers are controlplane, etcd-quorum-hook, ...

``asyncio.run(run_operator(options))`` then runs the operator until SIGTERM or SIGINT and returns
the exit code, as ``cpo run`` does.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from api.nodes import DEFAULT_CONTROL_PLANE_NODE_SELECTORS, control_plane_node_selectors
from controllers.cache_scope import operator_cache_options

if TYPE_CHECKING:
    from controllers.controlplane import ControlPlaneOptions
    from controllers.controlplane.remediation import RetryBackoff
    from controllers.etcdquorum.options import EtcdQuorumOptions
    from runtime.manager import Manager
    from runtime.webhook import WebhookServer

LogFormat = Literal["json", "console"]

DEFAULT_METRICS_BIND_ADDRESS: Final = ":8443"
DEFAULT_HEALTH_PROBE_BIND_ADDRESS: Final = ":8081"
DEFAULT_LEADER_ELECTION_ID: Final = "controlplane-operator.cpo.dev"
DEFAULT_WEBHOOK_PORT: Final = 9443
DEFAULT_WEBHOOK_CERT_DIR: Final = "/tmp/k8s-webhook-server/serving-certs"
DEFAULT_LOG_LEVEL: Final = "info"
DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: Final = 30.0
DEFAULT_CONTROLLERS: Final = "*"

CONTROLLER_NAMES: Final = ("controlplane", "etcd-quorum-hook", "machinehealthcheck")
"""Every controller ``cpo run`` can run, by the name it reports itself by (the ``controller`` label
of its metrics and logs)."""

CONTROLPLANE_API_VERSION: Final = "controlplane.cpo.dev/v1alpha1"
CONTROLPLANE_KIND: Final = "ControlPlane"

log = logging.getLogger("cpo.operator")


def in_cluster() -> bool:
    """True inside a pod: the kubelet sets ``KUBERNETES_SERVICE_HOST`` in every container."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


@dataclass(frozen=True)
class OperatorOptions:
    """How to run the operator; ``None`` means "the default" named per field (:meth:`with_defaults`)."""

    kubeconfig: str | None = None
    """Kubeconfig file to reach the API server with. Defaults to ``$KUBECONFIG``, else the pod's
    service account."""
    metrics_bind_address: str | None = None
    """Where ``/metrics`` is served, ``host:port`` or ``:port``. Defaults to ``":8443"``; ``"0"``
    disables it and ``":0"`` picks a free port."""
    metrics_secure: bool | None = None
    """Serve ``/metrics`` over HTTPS to authenticated, authorised callers only (TokenReview and
    SubjectAccessReview of their bearer token). Defaults to True; False serves plain HTTP to anyone
    (local runs, tests)."""
    metrics_cert_dir: str | None = None
    """Directory holding the metrics server's ``tls.crt`` and ``tls.key`` (reloaded when they
    change). Defaults to none: a self-signed certificate generated at start."""
    health_probe_bind_address: str | None = None
    """Where ``/healthz`` and ``/readyz`` are served. Defaults to ``":8081"``; ``"0"`` disables them."""
    leader_election: bool | None = None
    """Run controllers only while holding the Lease. Defaults to True inside a cluster (so a
    second replica waits instead of fighting), False elsewhere."""
    leader_election_id: str | None = None
    """Name of the Lease. Defaults to ``"controlplane-operator.cpo.dev"``."""
    leader_election_namespace: str | None = None
    """Namespace of the Lease. Defaults to the pod's namespace; required outside a cluster."""
    webhooks: bool | None = None
    """Serve the admission webhooks. Defaults to True; turn it off to run controllers only (a
    cluster without the webhook configurations, or a dev session without certificates)."""
    webhook_host: str | None = None
    """Address the webhook server listens on. Defaults to ``""``: every interface, which the
    Service needs."""
    webhook_port: int | None = None
    """Port of the webhook server. Defaults to 9443 (the Service's targetPort); 0 picks a free port."""
    webhook_cert_dir: str | None = None
    """Directory holding ``tls.crt`` and ``tls.key`` (the mounted cert-manager Secret). Defaults to
    ``/tmp/k8s-webhook-server/serving-certs``."""
    log_format: LogFormat | None = None
    """``"json"`` or ``"console"``. Defaults to JSON inside a cluster, console elsewhere."""
    log_level: str | None = None
    """``debug``, ``info``, ``warning`` or ``error``. Defaults to ``info``."""
    graceful_shutdown_timeout: float | None = None
    """Seconds the controllers get to finish after SIGTERM. Defaults to 30 (below the pod's
    default 30 s termination grace period plus the Lease release)."""
    controllers: str | None = None
    """Which controllers run, as kube-controller-manager's ``--controllers``: a comma-separated
    list of ``*`` (every controller of :data:`CONTROLLER_NAMES`), ``name`` (enable it) and
    ``-name`` (disable it); without ``*`` only the named ones run. Defaults to ``"*"``."""
    etcd_hook_name: str | None = None
    """Name of the preDrain hook the etcd-quorum-hook controller places. Defaults to
    ``"EtcdQuorumOperator"`` (see :class:`controllers.etcdquorum.EtcdQuorumOptions`). With its
    owner it is the operator's hook identity, which a ControlPlane's release also reads: a name of
    its own is removed at release whichever controllers run; the default only while
    ``etcd-quorum-hook`` runs (:func:`controllers.controlplane.release.hook_at_release`)."""
    etcd_hook_owner: str | None = None
    """Owner written in that hook. Defaults to ``"clusteroperator/etcd"``."""
    etcd_member_without_machine_grace: float | None = None
    """Seconds a started etcd member of no Machine and no Node must have been unhealthy before the
    etcd-quorum-hook controller removes it. Defaults to 120
    (:attr:`controllers.etcdquorum.EtcdQuorumOptions.member_without_machine_grace`)."""
    control_plane_node_selectors: tuple[str, ...] | None = None
    """Label selectors of the control-plane Nodes: a Node any of them matches is one, and only
    those are cached (one watch each). Defaults to ``node-role.kubernetes.io/control-plane`` and
    ``node-role.kubernetes.io/master`` (:mod:`api.nodes`)."""
    control_plane_components: str | None = None
    """Where the control-plane components' mirror Pods are: ``kubeadm``, ``openshift`` or ``off``
    (:mod:`controllers.controlplane.components`); only those Pods are cached, one scope per
    namespace. Defaults to ``kubeadm``."""
    control_plane_components_grace: float | None = None
    """Seconds a Node must have been Ready before a missing component Pod counts as unhealthy.
    Defaults to 120 (:attr:`controllers.controlplane.ControlPlaneOptions.components_grace`)."""
    remediation_backoff_initial: float | None = None
    """Seconds before a lineage's first remediation retry where a ControlPlane sets no
    ``retryPeriod``. Defaults to 30 (:class:`controllers.controlplane.ControlPlaneOptions`)."""
    remediation_backoff_factor: float | None = None
    """What each further retry multiplies that wait by. Defaults to 2."""
    remediation_backoff_max: float | None = None
    """The longest wait before a retry, in seconds. Defaults to 600."""
    remediation_max_retry: int | None = None
    """The retries of a lineage where a ControlPlane sets no ``maxRetry``. Defaults to 5."""

    def controlplane_options(self) -> ControlPlaneOptions:
        """The ControlPlane controller's options these name (the rest its defaults, or set by
        :func:`setup_controllers`)."""
        from controllers.controlplane import ControlPlaneOptions

        return ControlPlaneOptions(
            control_plane_node_selectors=self.control_plane_node_selectors,
            control_plane_components=self.control_plane_components,
            components_grace=self.control_plane_components_grace,
            remediation_backoff_initial=self.remediation_backoff_initial,
            remediation_backoff_factor=self.remediation_backoff_factor,
            remediation_backoff_max=self.remediation_backoff_max,
            remediation_max_retry=self.remediation_max_retry,
        )

    def etcd_quorum_options(self) -> EtcdQuorumOptions:
        """The etcd-quorum-hook controller's options these name (the rest its defaults)."""
        from controllers.etcdquorum.options import EtcdQuorumOptions

        return EtcdQuorumOptions(
            hook_name=self.etcd_hook_name,
            hook_owner=self.etcd_hook_owner,
            member_without_machine_grace=self.etcd_member_without_machine_grace,
        )

    def _checked_controller_options(self) -> tuple[str, RetryBackoff]:
        """Check the options the controllers resolve themselves (raising ``ValueError`` saying
        what to change); the components layout's name and the remediation retry bound."""
        self.etcd_quorum_options().with_defaults()
        controlplane = self.controlplane_options().with_defaults()  # the layout and its grace too
        return self.control_plane_components or "kubeadm", controlplane.remediation_backoff

    def _logging(self, cluster: bool) -> tuple[LogFormat, str]:
        """The log format (JSON inside a cluster, console lines elsewhere) and level, checked."""
        log_format = self.log_format or ("json" if cluster else "console")
        if log_format not in ("json", "console"):
            raise ValueError(f"log format {log_format!r}: use 'json' or 'console'")
        log_level = (self.log_level or DEFAULT_LOG_LEVEL).lower()
        if log_level not in ("debug", "info", "warning", "error"):
            raise ValueError(f"log level {log_level!r}: use debug, info, warning or error")
        return log_format, log_level

    def with_defaults(self) -> ResolvedOperatorOptions:
        """Every default filled in and checked; raises ``ValueError`` saying what to change."""
        cluster = in_cluster()
        if self.kubeconfig is None and not os.environ.get("KUBECONFIG") and not cluster:
            raise ValueError(
                "no API server to talk to: pass --kubeconfig PATH or set KUBECONFIG (inside a pod "
                "the service account is used)"
            )
        leader_election = cluster if self.leader_election is None else self.leader_election
        namespace = self.leader_election_namespace
        if leader_election and not namespace and not cluster:
            raise ValueError(
                "--leader-elect outside a cluster needs --leader-election-namespace (the Lease's "
                "namespace); or run without --leader-elect"
            )
        log_format, log_level = self._logging(cluster)
        port = DEFAULT_WEBHOOK_PORT if self.webhook_port is None else self.webhook_port
        if not 0 <= port <= 65535:
            raise ValueError(f"webhook port {port} is out of range: use 0 (any free port) to 65535")
        grace = (
            DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT
            if self.graceful_shutdown_timeout is None
            else self.graceful_shutdown_timeout
        )
        if grace < 0:
            raise ValueError(f"graceful shutdown timeout must be ≥ 0 seconds, got {grace}")
        metrics_secure = True if self.metrics_secure is None else self.metrics_secure
        if self.metrics_cert_dir and not metrics_secure:
            raise ValueError("--metrics-cert-dir needs --metrics-secure (plain HTTP has no certificate)")
        enabled = enabled_controllers(self.controllers or DEFAULT_CONTROLLERS)
        components, remediation = self._checked_controller_options()
        return ResolvedOperatorOptions(
            kubeconfig=self.kubeconfig,
            metrics_bind_address=self.metrics_bind_address or DEFAULT_METRICS_BIND_ADDRESS,
            metrics_secure=metrics_secure,
            metrics_cert_dir=self.metrics_cert_dir or None,
            health_probe_bind_address=self.health_probe_bind_address or DEFAULT_HEALTH_PROBE_BIND_ADDRESS,
            leader_election=leader_election,
            leader_election_id=self.leader_election_id or DEFAULT_LEADER_ELECTION_ID,
            # None inside a cluster: the manager reads the pod's namespace from the service account.
            leader_election_namespace=namespace or None,
            webhooks=True if self.webhooks is None else self.webhooks,
            webhook_host="" if self.webhook_host is None else self.webhook_host,
            webhook_port=port,
            webhook_cert_dir=self.webhook_cert_dir or DEFAULT_WEBHOOK_CERT_DIR,
            log_format=log_format,
            log_level=log_level,
            graceful_shutdown_timeout=float(grace),
            controllers=enabled,
            etcd_hook_name=self.etcd_hook_name,
            etcd_hook_owner=self.etcd_hook_owner,
            etcd_member_without_machine_grace=self.etcd_member_without_machine_grace,
            control_plane_node_selectors=control_plane_node_selectors(self.control_plane_node_selectors),
            control_plane_components=components,
            control_plane_components_grace=self.control_plane_components_grace,
            remediation_backoff=remediation,
        )


def enabled_controllers(spec: str) -> frozenset[str]:
    """The controllers a ``--controllers`` value enables; raises ``ValueError`` naming the valid
    names for an unknown one. Later entries win: ``*,-a`` is every controller but ``a``."""
    enabled: set[str] = set()
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        name = item.removeprefix("-")
        if item == "*":
            enabled.update(CONTROLLER_NAMES)
        elif name not in CONTROLLER_NAMES:
            raise ValueError(
                f"--controllers: unknown controller {name!r}; the controllers are "
                f"{', '.join(CONTROLLER_NAMES)} ('*' is all of them, '-name' disables one)"
            )
        elif item.startswith("-"):
            enabled.discard(name)
        else:
            enabled.add(name)
    return frozenset(enabled)


@dataclass(frozen=True)
class ResolvedOperatorOptions:
    """:class:`OperatorOptions` with every default applied."""

    kubeconfig: str | None
    metrics_bind_address: str
    metrics_secure: bool
    metrics_cert_dir: str | None
    health_probe_bind_address: str
    leader_election: bool
    leader_election_id: str
    leader_election_namespace: str | None
    webhooks: bool
    webhook_host: str
    webhook_port: int
    webhook_cert_dir: str
    log_format: LogFormat
    log_level: str
    graceful_shutdown_timeout: float
    controllers: frozenset[str]
    etcd_hook_name: str | None
    etcd_hook_owner: str | None
    etcd_member_without_machine_grace: float | None
    control_plane_node_selectors: tuple[str, ...] = DEFAULT_CONTROL_PLANE_NODE_SELECTORS
    control_plane_components: str = "kubeadm"
    control_plane_components_grace: float | None = None
    remediation_backoff: RetryBackoff | None = None
    """How remediation retries are bounded by default; None: the ControlPlane controller's
    defaults."""


def webhook_server(options: ResolvedOperatorOptions, manager: Manager | None = None) -> WebhookServer:
    """The webhook server with every admission webhook of the operator registered.

    With a ``manager`` the ControlPlane validator reads ControlPlanes (for ``controlplanes/scale``)
    and Machines (for the adoption rule of :mod:`webhooks.adoption`) through the manager's cache,
    whose informers are created here so that ``/readyz`` waits for them. The cache runs in every
    replica, leader or not (it is not a leader-election runnable), as the webhook does. Without a
    manager (tests of the paths) the validator assumes stacked etcd and checks no adoption.
    """
    from api.machine import GROUP as MACHINE_GROUP
    from api.machine import VERSION as MACHINE_VERSION
    from runtime.webhook import WebhookServer, WebhookServerOptions
    from webhooks.adoption import machines_from_reader
    from webhooks.controlplane_admission import (
        ControlPlaneDefaulter,
        ControlPlaneValidator,
        getter_from_reader,
    )
    from webhooks.machinehealthcheck import KIND as MHC_KIND
    from webhooks.machinehealthcheck import MachineHealthCheckValidator

    server = WebhookServer(
        WebhookServerOptions(
            host=options.webhook_host, port=options.webhook_port, cert_dir=options.webhook_cert_dir
        )
    )
    getter, lister = None, None
    if manager is not None:
        manager.cache.informer_for(CONTROLPLANE_API_VERSION, CONTROLPLANE_KIND)
        manager.cache.informer_for(f"{MACHINE_GROUP}/{MACHINE_VERSION}", "Machine")
        getter, lister = getter_from_reader(manager.cache), machines_from_reader(manager.cache)
    group, version = CONTROLPLANE_API_VERSION.split("/")
    server.register_validator(group, version, CONTROLPLANE_KIND, ControlPlaneValidator(getter, lister))
    server.register_defaulter(group, version, CONTROLPLANE_KIND, ControlPlaneDefaulter())
    if "machinehealthcheck" in options.controllers:
        # The MachineHealthCheck rules are this controller's: without it, another one judges.
        server.register_validator(MACHINE_GROUP, MACHINE_VERSION, MHC_KIND, MachineHealthCheckValidator())
    return server


def setup_controllers(manager: Manager, options: ResolvedOperatorOptions) -> None:
    """THE place controllers join the manager: build each with ``ControllerBuilder(manager)``.

    They run only while this process holds the Lease (when leader election is on), and only those
    ``options.controllers`` enables.
    """
    from controllers import controlplane, etcdquorum, machinehealthcheck

    etcd_quorum_options = etcdquorum.EtcdQuorumOptions(
        hook_name=options.etcd_hook_name,
        hook_owner=options.etcd_hook_owner,
        member_without_machine_grace=options.etcd_member_without_machine_grace,
    )
    if "controlplane" in options.controllers:
        # The operator's hook identity: the hook the etcd-quorum-hook controller places, its own
        # when its name is, or while that controller runs (a release removes only such a hook).
        controlplane.setup_with_manager(
            manager,
            controlplane.ControlPlaneOptions(
                etcd_guard_hook=etcd_quorum_options.with_defaults().hook,
                etcd_quorum_hook_runs="etcd-quorum-hook" in options.controllers,
                control_plane_node_selectors=options.control_plane_node_selectors,
                control_plane_components=options.control_plane_components,
                components_grace=options.control_plane_components_grace,
                **_remediation_fields(options.remediation_backoff),
            ),
        )
    if "etcd-quorum-hook" in options.controllers:
        etcdquorum.setup_with_manager(manager, etcd_quorum_options)
    if "machinehealthcheck" in options.controllers:
        machinehealthcheck.setup_with_manager(manager, machinehealthcheck.MachineHealthCheckOptions())


def _remediation_fields(backoff: RetryBackoff | None) -> dict[str, Any]:
    """The ControlPlaneOptions fields that carry ``backoff`` (none: their defaults)."""
    if backoff is None:
        return {}
    return {
        "remediation_backoff_initial": backoff.initial,
        "remediation_backoff_factor": backoff.factor,
        "remediation_backoff_max": backoff.cap,
        "remediation_max_retry": backoff.max_retry,
    }


async def build_manager(options: ResolvedOperatorOptions) -> Manager:
    """The manager with its webhook server and controllers added, not started."""
    from runtime.manager import Manager, ManagerOptions

    manager = await Manager.create(
        ManagerOptions(
            kubeconfig=options.kubeconfig,
            cache_options=operator_cache_options(
                options.control_plane_node_selectors, options.control_plane_components
            ),
            metrics_bind_address=options.metrics_bind_address,
            metrics_secure=options.metrics_secure,
            metrics_cert_dir=options.metrics_cert_dir,
            health_probe_bind_address=options.health_probe_bind_address,
            leader_election=options.leader_election,
            leader_election_id=options.leader_election_id,
            leader_election_namespace=options.leader_election_namespace,
            graceful_shutdown_timeout=options.graceful_shutdown_timeout,
        )
    )
    if options.webhooks:
        # The manager makes the server's started_checker the readyz check "webhook".
        manager.add(webhook_server(options, manager))
    setup_controllers(manager, options)
    return manager


async def run_operator(options: OperatorOptions) -> int:
    """Configure logging, build the manager and run it until SIGTERM; the process exit code."""
    from runtime.client import ConfigException
    from runtime.eventloop import loop_name
    from runtime.log import configure_logging

    try:
        resolved = options.with_defaults()
    except ValueError as err:
        configure_logging(format=options.log_format, level="info")
        log.error("cpo run: %s", err)
        return 1
    configure_logging(format=resolved.log_format, level=resolved.log_level)
    # The event loop is named as the process found it (uvloop or asyncio's), not as configured:
    # the image is meant to run on uvloop, and its check (hack/image) reads this line.
    log.info(
        "starting controlplane-operator on the %s event loop (controllers %s; metrics %s%s, "
        "probes %s, webhooks %s, leader election %s)",
        loop_name(),
        ", ".join(name for name in CONTROLLER_NAMES if name in resolved.controllers) or "none",
        resolved.metrics_bind_address,
        " over HTTPS, authenticated" if resolved.metrics_secure else " over plain HTTP",
        resolved.health_probe_bind_address,
        f"port {resolved.webhook_port}, certs {resolved.webhook_cert_dir}" if resolved.webhooks else "off",
        f"on, Lease {resolved.leader_election_id}" if resolved.leader_election else "off",
    )
    try:
        manager = await build_manager(resolved)
    except (ValueError, OSError, ConfigException) as err:
        log.error("cpo run: cannot start: %s", err)
        return 1
    return await manager.run()
