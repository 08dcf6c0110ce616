"""How to build a manager: its options, their defaults, and the bind addresses they name."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..cache import Cache, CacheOptions
from ..client import Client
from ..leaderelection import LeaderElectionOptions
from .filters import FilterProvider, with_authentication_and_authorization

DEFAULT_METRICS_BIND_ADDRESS: Final = ":8080"
DEFAULT_HEALTH_PROBE_BIND_ADDRESS: Final = ":8081"
DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: Final = 30.0
CACHES_SYNCED_CHECK: Final = "caches-synced"
IN_CLUSTER_NAMESPACE_FILE: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def parse_bind_address(address: str, option: str) -> tuple[str | None, int] | None:
    """``"host:port"``/``":port"``/``"[v6]:port"`` → (host or None for all interfaces, port);
    ``"0"`` → None (disabled). Raises ``ValueError`` naming ``option`` on anything else."""
    if address == "0":
        return None
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(
            f"{option} {address!r}: use 'host:port' or ':port' (port 0-65535; port 0 picks a free "
            "one), or '0' to disable the server"
        )
    host = host.removeprefix("[").removesuffix("]")
    return (host or None), int(port_text)


@dataclass(frozen=True)
class ManagerOptions:
    """How to build a :class:`Manager`; every default is applied in :meth:`with_defaults`."""

    client: Client | None = None
    """An existing client to use (the manager does not close it). Defaults to one built from
    ``kubeconfig``."""
    kubeconfig: str | os.PathLike[str] | Mapping[str, Any] | None = None
    """Kubeconfig path or document when no ``client`` is given. Defaults to ``$KUBECONFIG``, else
    the pod's service account (in-cluster)."""
    kubeconfig_context: str | None = None
    """Context of ``kubeconfig`` to use. Defaults to its current context."""
    metrics_bind_address: str | None = None
    """Where ``/metrics`` is served. Defaults to ``":8080"``; ``"0"`` disables it."""
    metrics_secure: bool | None = None
    """Serve ``/metrics`` over HTTPS, each request checked by ``metrics_filter_provider``'s filter.
    Defaults to False: plain HTTP, readable by anyone who reaches the port."""
    metrics_cert_dir: str | os.PathLike[str] | None = None
    """With ``metrics_secure``: the directory holding ``tls.crt`` and ``tls.key`` (reloaded when
    they change). Defaults to none: a self-signed certificate generated at start."""
    metrics_filter_provider: FilterProvider | None = None
    """With ``metrics_secure``: builds the request filter from the manager's client. Defaults to
    :func:`~runtime.manager.filters.with_authentication_and_authorization` (TokenReview, then a
    SubjectAccessReview for ``get`` on the path); ``metrics_secure`` without a filter is not
    offered, as TLS alone would let anyone read the metrics."""
    health_probe_bind_address: str | None = None
    """Where ``/healthz`` and ``/readyz`` are served. Defaults to ``":8081"``; ``"0"`` disables it."""
    leader_election: bool | None = None
    """Run leader runnables only while holding the Lease. Defaults to False."""
    leader_election_id: str | None = None
    """Name of the Lease. Defaults to none; required with ``leader_election``."""
    leader_election_namespace: str | None = None
    """Namespace of the Lease. Defaults to the pod's namespace when in a cluster; required otherwise."""
    lease_duration: float | None = None
    """See :class:`~runtime.leaderelection.LeaderElectionOptions`. Defaults to 15 s."""
    renew_deadline: float | None = None
    """See :class:`~runtime.leaderelection.LeaderElectionOptions`. Defaults to 10 s."""
    retry_period: float | None = None
    """See :class:`~runtime.leaderelection.LeaderElectionOptions`. Defaults to 2 s."""
    leader_election_identity: str | None = None
    """This candidate's holder identity. Defaults to ``<hostname>_<uuid4>``."""
    leader_election_watch_lease: bool | None = None
    """Watch the Lease while campaigning (faster, exact hand-over); False polls like client-go.
    Defaults to True."""
    leader_election_release_on_cancel: bool | None = None
    """Release the Lease on a clean stop. Defaults to True (the manager exits right after)."""
    graceful_shutdown_timeout: float | None = None
    """Seconds runnables get to wind down after stop before they are cancelled. Defaults to 30."""
    cache: Cache | None = None
    """An existing cache to use as :attr:`Manager.cache`. Defaults to a :class:`~runtime.cache.Cache`
    built on first use from ``client`` and ``cache_options``."""
    cache_options: CacheOptions | None = None
    """Options of the default cache (namespace, selectors, transform...). Defaults to
    ``CacheOptions()``: every namespace, managedFields stripped."""
    logger: logging.Logger | None = None
    """Where the manager logs. Defaults to ``logging.getLogger("runtime.manager")``."""

    def with_defaults(self) -> ResolvedManagerOptions:
        """Every default filled in and checked; raises ``ValueError`` saying what to change."""
        metrics_bind, metrics_secure, metrics_cert_dir, filter_provider = self._metrics_serving()
        probe_address = (
            DEFAULT_HEALTH_PROBE_BIND_ADDRESS
            if self.health_probe_bind_address is None
            else self.health_probe_bind_address
        )
        probe_bind = parse_bind_address(probe_address, "health_probe_bind_address")
        grace = (
            DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT
            if self.graceful_shutdown_timeout is None
            else float(self.graceful_shutdown_timeout)
        )
        if grace < 0:
            raise ValueError(f"graceful_shutdown_timeout must be ≥ 0 seconds, got {grace}")
        namespace, le_options = self._leader_election()
        kubeconfig = self.kubeconfig
        if self.client is None and kubeconfig is None and os.environ.get("KUBECONFIG"):
            kubeconfig = os.environ["KUBECONFIG"].split(os.pathsep)[0]
        return ResolvedManagerOptions(
            client=self.client,
            kubeconfig=kubeconfig,
            kubeconfig_context=self.kubeconfig_context,
            metrics_bind=metrics_bind,
            metrics_secure=metrics_secure,
            metrics_cert_dir=metrics_cert_dir,
            metrics_filter_provider=filter_provider,
            health_probe_bind=probe_bind,
            leader_election=bool(self.leader_election),
            leader_election_id=self.leader_election_id or "",
            leader_election_namespace=namespace or "",
            leader_election_options=le_options,
            graceful_shutdown_timeout=grace,
            cache=self.cache,
            cache_options=self.cache_options,
            logger=self.logger or logging.getLogger("runtime.manager"),
        )

    def _metrics_serving(
        self,
    ) -> tuple[tuple[str | None, int] | None, bool, str | None, FilterProvider | None]:
        """Where ``/metrics`` is served, whether over HTTPS, with which certificate folder and which
        filter: the bind address, ``metrics_secure``, ``metrics_cert_dir``, the filter provider."""
        metrics_address = (
            DEFAULT_METRICS_BIND_ADDRESS if self.metrics_bind_address is None else self.metrics_bind_address
        )
        metrics_bind = parse_bind_address(metrics_address, "metrics_bind_address")
        metrics_secure = bool(self.metrics_secure)
        if not metrics_secure and (self.metrics_cert_dir is not None or self.metrics_filter_provider):
            raise ValueError("metrics_cert_dir and metrics_filter_provider need metrics_secure=True")
        metrics_cert_dir = os.fspath(self.metrics_cert_dir) if self.metrics_cert_dir is not None else None
        filter_provider = (
            (self.metrics_filter_provider or with_authentication_and_authorization)
            if metrics_secure
            else None
        )
        return metrics_bind, metrics_secure, metrics_cert_dir, filter_provider

    def _leader_election(self) -> tuple[str | None, LeaderElectionOptions | None]:
        """The Lease's namespace and the elector's options (checked now, not at start); no options
        without leader election."""
        namespace = self.leader_election_namespace
        if not self.leader_election:
            return namespace, None
        if not self.leader_election_id:
            raise ValueError("leader_election needs leader_election_id, the name of the Lease")
        if not namespace:
            namespace = _in_cluster_namespace()
        if not namespace:
            raise ValueError(
                "leader_election needs leader_election_namespace when not running in a cluster "
                f"({IN_CLUSTER_NAMESPACE_FILE} not found)"
            )
        le_options = LeaderElectionOptions(
            lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline,
            retry_period=self.retry_period,
            identity=self.leader_election_identity,
            release_on_cancel=self.leader_election_release_on_cancel,
            watch_lease=self.leader_election_watch_lease,
        )
        le_options.with_defaults()  # validate now, not at start
        return namespace, le_options


@dataclass(frozen=True)
class ResolvedManagerOptions:
    """:class:`ManagerOptions` with every default applied."""

    client: Client | None
    kubeconfig: str | os.PathLike[str] | Mapping[str, Any] | None
    kubeconfig_context: str | None
    metrics_bind: tuple[str | None, int] | None
    metrics_secure: bool
    metrics_cert_dir: str | None
    metrics_filter_provider: FilterProvider | None
    health_probe_bind: tuple[str | None, int] | None
    leader_election: bool
    leader_election_id: str
    leader_election_namespace: str
    leader_election_options: LeaderElectionOptions | None
    graceful_shutdown_timeout: float
    cache: Cache | None
    cache_options: CacheOptions | None
    logger: logging.Logger


def _in_cluster_namespace() -> str | None:
    try:
        return IN_CLUSTER_NAMESPACE_FILE.read_text().strip() or None
    except OSError:
        return None
