"""How the ControlPlane controller runs: :class:`ControlPlaneOptions` and their defaults.

The remediation retries of a lineage are bounded by default
(:func:`~controllers.controlplane.remediation.retry_rule`): where ``spec.remediation`` sets no
``retryPeriod``, retry n waits 30 s × 2^(n − 1), at most 10 min (30 s, 1 min, 2 min, 4 min,
8 min), and where it sets no ``maxRetry``, the 5th retry is the last: the replacement it makes
failing too stops them (``Degraded``, ``ReplacementsFailing``), about 16 minutes after the first
failure. The numbers are options (``cpo run --remediation-backoff-initial``,
``--remediation-backoff-factor``, ``--remediation-backoff-max``, ``--remediation-max-retry``),
resolved here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from api.nodes import control_plane_node_selectors
from controllers.controlplane.components import DEFAULT_GRACE_SECONDS, ComponentLayout, layout_named
from controllers.controlplane.remediation import RetryBackoff
from controllers.etcd.client import EtcdClientOptions
from controllers.etcdquorum.rules import DEFAULT_HOOK, Hook
from runtime.controller import ControllerOptions


@dataclass
class ControlPlaneOptions:
    """How the ControlPlane controller runs. ``None`` means "use the default" named per field."""

    preflight_backoff_initial: float | None = None
    """Seconds before looking again after a failed preflight; doubled per failure in a row.
    Defaults to 2."""
    preflight_backoff_max: float | None = None
    """Longest wait after failed preflights. Defaults to 60."""
    wait_period: float | None = None
    """Seconds between two looks while a step waits on something no watch reports (a learner's
    promotion, a member's removal). Defaults to 5."""
    resync_period: float | None = None
    """Seconds between two looks when nothing is going on (etcd health is not watched).
    Defaults to 60."""
    etcd: EtcdClientOptions | None = None
    """How to reach etcd for the preflight. Defaults to ``EtcdClientOptions(timeout=2)``."""
    controller: ControllerOptions | None = None
    """Options of the controller. Defaults to ``ControllerOptions()``."""
    etcd_guard_hook: Hook | None = None
    """This operator's hook identity: the preDrain hook its etcd-quorum-hook controller places
    (the configured name and owner). Releasing a Machine removes a hook of exactly this identity
    when the identity is the operator's own (:func:`controllers.controlplane.release.hook_at_release`).
    Defaults to the etcd-quorum-hook controller's default hook, which is also OpenShift's etcd
    operator's."""
    etcd_quorum_hook_runs: bool | None = None
    """Whether this operator's etcd-quorum-hook controller runs beside this controller. The default
    identity (``EtcdQuorumOperator``) is the operator's own only then: otherwise it is
    cluster-etcd-operator's, and a release leaves it. A name of the operator's own
    (``--etcd-hook-name``) is its own either way. Defaults to False (a release then never removes
    the default hook)."""
    control_plane_node_selectors: Sequence[str] | None = None
    """The label selectors that tell a control-plane Node (:mod:`api.nodes`), the same ones the
    operator's cache selects Nodes by. Defaults to ``node-role.kubernetes.io/control-plane`` or
    ``node-role.kubernetes.io/master``."""
    remediation_backoff_initial: float | None = None
    """Seconds the first remediation retry of a lineage waits after the remediation before it,
    where ``spec.remediation.retryPeriod`` is not set. Defaults to 30."""
    remediation_backoff_factor: float | None = None
    """What each further retry multiplies that wait by (at least 1). Defaults to 2."""
    remediation_backoff_max: float | None = None
    """The longest wait before a retry, in seconds. Defaults to 600 (10 min)."""
    remediation_max_retry: int | None = None
    """The retries a lineage gets where ``spec.remediation.maxRetry`` is not set (0: a failed
    replacement is never replaced again). Defaults to 5."""

    control_plane_components: str | None = None
    """Where the control-plane components' mirror Pods are
    (:mod:`~controllers.controlplane.components`): ``kubeadm``, ``openshift`` or ``off`` (not
    checked, and reported so). Defaults to ``kubeadm``."""
    components_grace: float | None = None
    """Seconds a Node must have been Ready before a missing component Pod on it counts as
    unhealthy, and before no Pod seen anywhere is reported as a misconfiguration. Defaults to 120."""

    def with_defaults(self) -> ResolvedControlPlaneOptions:
        """Every default applied and checked; raises ``ValueError`` saying what to change."""
        resolved = ResolvedControlPlaneOptions(
            preflight_backoff_initial=_positive(
                self.preflight_backoff_initial, 2.0, "preflight_backoff_initial"
            ),
            preflight_backoff_max=_positive(self.preflight_backoff_max, 60.0, "preflight_backoff_max"),
            wait_period=_positive(self.wait_period, 5.0, "wait_period"),
            resync_period=_positive(self.resync_period, 60.0, "resync_period"),
            etcd=self.etcd or EtcdClientOptions(timeout=2.0),
            controller=self.controller or ControllerOptions(),
            etcd_guard_hook=self.etcd_guard_hook or DEFAULT_HOOK,
            control_plane_node_selectors=control_plane_node_selectors(self.control_plane_node_selectors),
            etcd_quorum_hook_runs=bool(self.etcd_quorum_hook_runs),
            components_layout=layout_named(self.control_plane_components or "kubeadm"),
            components_grace=_positive(self.components_grace, DEFAULT_GRACE_SECONDS, "components_grace"),
            remediation_backoff=self._remediation_backoff(),
        )
        if resolved.preflight_backoff_max < resolved.preflight_backoff_initial:
            raise ValueError("ControlPlaneOptions.preflight_backoff_max must be ≥ preflight_backoff_initial")
        return resolved

    def _remediation_backoff(self) -> RetryBackoff:
        backoff = RetryBackoff(
            initial=_positive(self.remediation_backoff_initial, 30.0, "remediation_backoff_initial"),
            factor=2.0 if self.remediation_backoff_factor is None else float(self.remediation_backoff_factor),
            cap=_positive(self.remediation_backoff_max, 600.0, "remediation_backoff_max"),
            max_retry=5 if self.remediation_max_retry is None else int(self.remediation_max_retry),
        )
        name = "ControlPlaneOptions.remediation"
        if backoff.factor < 1:
            raise ValueError(f"{name}_backoff_factor must be ≥ 1, got {backoff.factor:g}")
        if backoff.cap < backoff.initial:
            raise ValueError(f"{name}_backoff_max must be ≥ remediation_backoff_initial")
        if backoff.max_retry < 0:
            raise ValueError(f"{name}_max_retry must be ≥ 0, got {backoff.max_retry}")
        return backoff


def _positive(value: float | None, default: float, name: str) -> float:
    result = default if value is None else float(value)
    if result <= 0:
        raise ValueError(f"ControlPlaneOptions.{name} must be positive seconds, got {value!r}")
    return result


@dataclass(frozen=True)
class ResolvedControlPlaneOptions:
    """:class:`ControlPlaneOptions` with every default applied."""

    preflight_backoff_initial: float
    preflight_backoff_max: float
    wait_period: float
    resync_period: float
    etcd: EtcdClientOptions
    controller: ControllerOptions
    etcd_guard_hook: Hook
    control_plane_node_selectors: tuple[str, ...]
    etcd_quorum_hook_runs: bool
    components_layout: ComponentLayout | None
    """None: the components check is off."""
    components_grace: float
    remediation_backoff: RetryBackoff
