"""How the ``localmachine`` provider runs: :class:`LocalMachineOptions`, resolved in one place.

Example:

>>> from pathlib import Path
>>> from providers.localmachine.options import LocalMachineOptions
>>> resolved = LocalMachineOptions(state_dir=Path("/tmp/cpo-machines"), heartbeat_period=2.0).with_defaults()
>>> resolved.health_timeout      # half the heartbeat period, at most 2 s
1.0
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, get_args

from controllers.etcd.client import EtcdClientOptions
from providers.localmachine.etcd_process import EtcdProcessOptions, ResolvedEtcdProcessOptions
from providers.localmachine.realistic import DEFAULT_CLIENT_SECRET, AddressBlock, EtcdPKI
from providers.localmachine.static_pods import BACKOFF_INITIAL, BACKOFF_MAX
from runtime.controller import ControllerOptions

DEFAULT_HEARTBEAT_PERIOD: Final = 10.0
DEFAULT_STOP_GRACE_PERIOD: Final = 10.0
DEFAULT_JOIN_BACKOFF_INITIAL: Final = 0.5
DEFAULT_JOIN_BACKOFF_MAX: Final = 10.0
DEFAULT_MAX_CONCURRENT_RECONCILES: Final = 4
MAX_DEFAULT_HEALTH_TIMEOUT: Final = 2.0
DEFAULT_CRASH_LOOP_BACKOFF_INITIAL: Final = BACKOFF_INITIAL
DEFAULT_CRASH_LOOP_BACKOFF_MAX: Final = BACKOFF_MAX

NodeRoleLabels = Literal["both", "control-plane", "master"]
"""Which role labels the provider puts on its Nodes: ``both`` (``node-role.kubernetes.io/master``
and ``node-role.kubernetes.io/control-plane``, as OpenShift 4 labels its masters),
``control-plane`` (that label only, as kubeadm labels control-plane Nodes since Kubernetes 1.24)
or ``master`` (that label only, as OpenShift 3 and kubeadm before 1.20 did)."""
NODE_ROLE_LABELS: Final[tuple[str, ...]] = get_args(NodeRoleLabels)


@dataclass
class LocalMachineOptions:
    """Settings of the provider. ``None`` means "use the default" named per field."""

    state_dir: Path | str | None = None
    """Folder for the members' data, logs and state files (``<state_dir>/<namespace>/<machine>/``).
    Required: there is no default, because a provider restarted on the same folder re-attaches to
    the members recorded there."""

    heartbeat_period: float | None = None
    """Seconds between two health checks of a machine (its Node's Ready condition and
    ``lastHeartbeatTime`` are written each time). Defaults to 10, kubelet's node status period."""

    health_timeout: float | None = None
    """Seconds a member may take to answer its health read before its Node goes NotReady.
    Defaults to half the heartbeat period, at most 2."""

    stop_grace_period: float | None = None
    """Seconds between SIGTERM and SIGKILL when a deleted machine's etcd is stopped. Defaults to 10."""

    join_backoff_initial: float | None = None
    """First wait before asking etcd again when it refuses a join (another learner ahead, cluster
    settling after a start or promotion, unreachable); doubled per refusal. Defaults to 0.5 s."""

    join_backoff_max: float | None = None
    """Longest wait between two join attempts. Defaults to 10 s."""

    etcd: EtcdProcessOptions | None = None
    """How members run (binary, host, learner limit, TLS...). Defaults to ``EtcdProcessOptions()``
    with ``die_with_parent`` off: members outlive a provider crash as real machines outlive their
    cloud controller, and the restarted provider re-attaches through the state files. Setting
    ``die_with_parent=True`` explicitly is honoured (then a provider crash kills every member)."""

    controller: ControllerOptions | None = None
    """Options of the Machine controller. Defaults to 4 concurrent reconciles, so that one slow
    member start does not delay the other machines' heartbeats."""

    node_role_labels: NodeRoleLabels | None = None
    """Which role labels its Nodes carry (see :data:`NodeRoleLabels`). Defaults to ``"both"``;
    ``"control-plane"`` makes the Nodes a kubeadm cluster has, so tests run the operator both ways.
    Labels are only ever added: a Node that already carries another role label keeps it."""

    realistic: bool | None = None
    """Show the operator only what a cloud shows it: each member on a loopback address of its own
    (its Node's InternalIP) at ports 2379/2380, etcd over TLS with client-certificate auth, Nodes
    named after the address, and no annotation saying where a member is (see the package
    docstring). Defaults to False: every member on 127.0.0.1 at free ports, plain HTTP, and the
    location annotations written."""

    address_block: str | None = None
    """Realistic mode: the loopback /24 of this provider's members, as ``127.X.Y``. Defaults to the
    block recorded in the state directory, else one drawn at random whose first addresses are free."""

    etcd_client_secret: str | None = None
    """Realistic mode: name of the Secret, in each Machines' namespace, with the etcd client
    certificate (``tls.crt``, ``tls.key``, ``ca.crt``); the ControlPlane names it in
    ``spec.etcd.tlsSecretRef``. Defaults to ``etcd-client-tls``."""

    max_instances_per_domain: int | None = None
    """Hosts per failure domain (``providerSpec.value.failureDomain``, else ``.zone``; the Machines
    without one form a pool of their own) in each cluster (namespace): at most this many instances
    at once, as on bare metal with a fixed set of hosts. A Machine beyond it stays
    ``Provisioning`` with ``EtcdMemberStarted=False``, reason ``WaitingForHost``, until a host of
    its domain is freed (its Machine deleted and its instance gone). In realistic mode each domain
    has that many addresses and a replacement takes the freed one. Defaults to None: no limit
    (see the package docstring, "Host pools")."""

    static_pods: bool = True
    """Play kubelet for the control-plane static pods too: keep each Node's mirror Pods
    ``etcd-<node>``, ``kube-apiserver-<node>``, ``kube-controller-manager-<node>`` and
    ``kube-scheduler-<node>`` in ``kube-system`` with their status (see
    :mod:`providers.localmachine.static_pods`). False (``cpo localmachine --no-static-pods``): no
    Pod is written, as before the provider made any."""

    crash_loop_backoff_initial: float | None = None
    """Seconds before a crash-looping static pod's container (a ``*-notready`` fault) restarts
    the second time; doubled after each restart. Defaults to 10, kubelet's."""

    crash_loop_backoff_max: float | None = None
    """Longest crash-loop back-off. Defaults to 300 s, kubelet's."""

    def with_defaults(self) -> ResolvedLocalMachineOptions:
        """Every default applied and checked; raises ``ValueError`` saying what to change.

        Resolves the etcd options too, which runs ``etcd --help`` once. In realistic mode this
        also records the address block and creates the CA under ``state_dir`` (kept for restarts).
        """
        if self.state_dir is None or str(self.state_dir) == "":
            raise ValueError(
                "LocalMachineOptions.state_dir is required: the folder where the provider keeps its "
                "etcd members (e.g. --state-dir /tmp/cpo-machines)"
            )
        heartbeat = (
            DEFAULT_HEARTBEAT_PERIOD if self.heartbeat_period is None else float(self.heartbeat_period)
        )
        if not heartbeat > 0:
            raise ValueError(
                f"LocalMachineOptions.heartbeat_period must be positive seconds, got {heartbeat}"
            )
        health_timeout = (
            min(MAX_DEFAULT_HEALTH_TIMEOUT, heartbeat / 2)
            if self.health_timeout is None
            else float(self.health_timeout)
        )
        if not health_timeout > 0:
            raise ValueError(
                f"LocalMachineOptions.health_timeout must be positive seconds, got {health_timeout}"
            )
        grace = DEFAULT_STOP_GRACE_PERIOD if self.stop_grace_period is None else float(self.stop_grace_period)
        if grace < 0:
            raise ValueError(f"LocalMachineOptions.stop_grace_period must be ≥ 0 seconds, got {grace}")
        backoff_initial = (
            DEFAULT_JOIN_BACKOFF_INITIAL
            if self.join_backoff_initial is None
            else float(self.join_backoff_initial)
        )
        backoff_max = (
            DEFAULT_JOIN_BACKOFF_MAX if self.join_backoff_max is None else float(self.join_backoff_max)
        )
        if not 0 < backoff_initial <= backoff_max:
            raise ValueError(
                "LocalMachineOptions: join_backoff_initial must be positive and at most join_backoff_max, "
                f"got {backoff_initial} and {backoff_max}"
            )
        etcd = self.etcd or EtcdProcessOptions()
        etcd = dataclasses.replace(
            etcd,
            die_with_parent=False if etcd.die_with_parent is None else etcd.die_with_parent,
            stop_grace_period=grace,
        )
        controller = self.controller or ControllerOptions()
        if controller.max_concurrent_reconciles is None:
            controller = dataclasses.replace(
                controller, max_concurrent_reconciles=DEFAULT_MAX_CONCURRENT_RECONCILES
            )
        controller.with_defaults()  # checked now, not when the controller starts
        role_labels = self.node_role_labels or "both"
        if role_labels not in NODE_ROLE_LABELS:
            raise ValueError(
                f"LocalMachineOptions.node_role_labels {role_labels!r}: "
                f"use one of {', '.join(NODE_ROLE_LABELS)}"
            )
        cap = self.max_instances_per_domain
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ValueError(
                f"LocalMachineOptions.max_instances_per_domain {cap!r}: give a whole number of hosts "
                "per failure domain, at least 1 (or None for no limit)"
            )
        crash_initial = (
            DEFAULT_CRASH_LOOP_BACKOFF_INITIAL
            if self.crash_loop_backoff_initial is None
            else float(self.crash_loop_backoff_initial)
        )
        crash_max = (
            DEFAULT_CRASH_LOOP_BACKOFF_MAX
            if self.crash_loop_backoff_max is None
            else float(self.crash_loop_backoff_max)
        )
        if not 0 < crash_initial <= crash_max:
            raise ValueError(
                "LocalMachineOptions: crash_loop_backoff_initial must be positive and at most "
                f"crash_loop_backoff_max, got {crash_initial} and {crash_max}"
            )
        realistic = bool(self.realistic)
        block: AddressBlock | None = None
        pki: EtcdPKI | None = None
        if not realistic and (self.address_block is not None or self.etcd_client_secret is not None):
            raise ValueError("LocalMachineOptions: address_block and etcd_client_secret need realistic=True")
        if realistic:
            if etcd.host is not None or etcd.client_tls is not None:
                raise ValueError(
                    "LocalMachineOptions.realistic gives every member its own address and certificate: "
                    "leave etcd.host and etcd.client_tls unset"
                )
            state_dir = Path(self.state_dir)
            block = AddressBlock.for_state_dir(state_dir, self.address_block)
            pki = EtcdPKI(state_dir)
            if etcd.client_options is None:
                etcd = dataclasses.replace(etcd, client_options=pki.client_options(timeout=2.0))
        resolved_etcd = etcd.with_defaults()
        return ResolvedLocalMachineOptions(
            state_dir=Path(self.state_dir),
            heartbeat_period=heartbeat,
            health_timeout=health_timeout,
            stop_grace_period=grace,
            join_backoff_initial=backoff_initial,
            join_backoff_max=backoff_max,
            etcd=resolved_etcd,
            client_options=resolved_etcd.client_options,
            controller=controller,
            address_block=block,
            pki=pki,
            etcd_client_secret=self.etcd_client_secret or DEFAULT_CLIENT_SECRET,
            node_role_labels=role_labels,
            max_instances_per_domain=cap,
            static_pods=bool(self.static_pods),
            crash_loop_backoff_initial=crash_initial,
            crash_loop_backoff_max=crash_max,
        )


@dataclass(frozen=True)
class ResolvedLocalMachineOptions:
    """:class:`LocalMachineOptions` with every default applied."""

    state_dir: Path
    heartbeat_period: float
    health_timeout: float
    stop_grace_period: float
    join_backoff_initial: float
    join_backoff_max: float
    etcd: ResolvedEtcdProcessOptions
    client_options: EtcdClientOptions
    """How the provider's own etcd calls (joins, health reads) connect: the etcd options' client
    options; health reads use ``health_timeout`` instead of their timeout."""
    controller: ControllerOptions
    address_block: AddressBlock | None = None
    """Realistic mode: the block the members' addresses come from; None in the default mode."""
    pki: EtcdPKI | None = None
    """Realistic mode: the CA and certificates of the members; None in the default mode."""
    etcd_client_secret: str = DEFAULT_CLIENT_SECRET
    node_role_labels: NodeRoleLabels = "both"
    max_instances_per_domain: int | None = None
    """Hosts per failure domain and cluster; None: no limit."""
    static_pods: bool = True
    crash_loop_backoff_initial: float = DEFAULT_CRASH_LOOP_BACKOFF_INITIAL
    crash_loop_backoff_max: float = DEFAULT_CRASH_LOOP_BACKOFF_MAX

    @property
    def realistic(self) -> bool:
        return self.address_block is not None
