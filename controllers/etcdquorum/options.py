"""How the etcd-quorum-hook controller runs: :class:`EtcdQuorumOptions`, every default resolved in
:meth:`EtcdQuorumOptions.with_defaults`.

The hook's name and owner are options because the hook is a contract with whoever else drains
Machines: on OpenShift the etcd operator writes a preDrain hook of that very name and owner, and
two writers of one hook would each believe the other's hook is theirs. There, run the operator
without this controller (``cpo run --controllers=*,-etcd-quorum-hook``), or give the hook a name
of its own (``--etcd-hook-name``) so both guards hold the Machine side by side.

>>> from controllers.etcdquorum.options import EtcdQuorumOptions
>>> resolved = EtcdQuorumOptions().with_defaults()
>>> resolved.hook.name, resolved.hook.owner, resolved.busy_period
('EtcdQuorumOperator', 'clusteroperator/etcd', 1.0)
>>> EtcdQuorumOptions(hook_name="x").with_defaults()
Traceback (most recent call last):
ValueError: EtcdQuorumOptions.hook_name 'x': a lifecycle hook name is 3 to 256 characters, ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from api.machine import LIFECYCLE_HOOK_NAME_PATTERN
from controllers.etcdquorum.rules import HOOK_NAME, HOOK_OWNER, Hook
from runtime.controller import ControllerOptions

DEFAULT_RESYNC_PERIOD: Final = 15.0
DEFAULT_BUSY_PERIOD: Final = 1.0
DEFAULT_ABANDONED_LEARNER_GRACE: Final = 300.0
DEFAULT_MEMBER_WITHOUT_MACHINE_GRACE: Final = 120.0
DEFAULT_WAIT_EVENT_AFTER: Final = 60.0
DEFAULT_ETCD_TIMEOUT: Final = 3.0
DEFAULT_MEMBER_CHANGE_INTERVAL: Final = 2.0


@dataclass(frozen=True)
class EtcdQuorumOptions:
    """How the controller runs. ``None`` means "use the default" named per field."""

    resync_period: float | None = None
    """Seconds between two looks at a quiet cluster (health, metrics, condition). Defaults to 15."""
    busy_period: float | None = None
    """Seconds between two passes while something is in progress (a learner, a deleting Machine,
    a wait): etcd membership is not watchable through the API server, so it is polled. Defaults to 1."""
    abandoned_learner_grace: float | None = None
    """Seconds a never-started learner that belongs to no Machine is left alone before it is
    removed (a provider adds a member and then starts it). Defaults to 300."""
    member_without_machine_grace: float | None = None
    """Seconds a started member that belongs to no Machine and no Node must have been unhealthy
    before it is removed (:mod:`controllers.etcdquorum.members_without_machine`): long enough that
    a member restarting, or a Machine the cache has not shown yet, is not taken for a dead one.
    A restart of the controller starts the count over (a later removal, never an earlier one).
    Defaults to 120."""
    wait_event_after: float | None = None
    """A change waiting longer than this many seconds gets a Warning event on the Machine and the
    ControlPlane, repeated at that interval. Defaults to 60."""
    etcd_timeout: float | None = None
    """Seconds one etcd request may take. Defaults to 3."""
    member_change_interval: float | None = None
    """Seconds between two membership changes of one cluster (promotion or removal): each change
    reaches every member and shows in their health before the next one is decided, and each
    step shows in monitoring. Defaults to 2."""
    hook_name: str | None = None
    """Name of the preDrain lifecycle hook this controller places and removes. Defaults to
    ``"EtcdQuorumOperator"``, the name OpenShift's etcd operator uses: on a cluster where that
    operator runs, pick another name or do not run this controller (see the module docstring)."""
    hook_owner: str | None = None
    """Owner written in the hook. Defaults to ``"clusteroperator/etcd"``."""
    controller: ControllerOptions | None = None
    """Options of the controller (workers, rate limiter). Defaults to ``ControllerOptions()``."""

    def with_defaults(self) -> ResolvedEtcdQuorumOptions:
        """Every default applied and checked; raises ``ValueError`` saying what to change."""

        def positive(value: float | None, default: float, name: str, *, zero: bool = False) -> float:
            result = default if value is None else float(value)
            if result < 0 or (result == 0 and not zero):
                raise ValueError(f"EtcdQuorumOptions.{name} must be positive seconds, got {value!r}")
            return result

        hook = Hook(self.hook_name or HOOK_NAME, self.hook_owner or HOOK_OWNER)
        if not re.fullmatch(LIFECYCLE_HOOK_NAME_PATTERN, hook.name) or not 3 <= len(hook.name) <= 256:
            raise ValueError(
                f"EtcdQuorumOptions.hook_name {hook.name!r}: a lifecycle hook name is 3 to 256 "
                "characters, a qualified name such as EtcdQuorumOperator or example.com/etcd-guard"
            )
        if not 3 <= len(hook.owner) <= 512:
            raise ValueError(f"EtcdQuorumOptions.hook_owner {hook.owner!r}: use 3 to 512 characters")
        return ResolvedEtcdQuorumOptions(
            resync_period=positive(self.resync_period, DEFAULT_RESYNC_PERIOD, "resync_period"),
            busy_period=positive(self.busy_period, DEFAULT_BUSY_PERIOD, "busy_period"),
            abandoned_learner_grace=positive(
                self.abandoned_learner_grace,
                DEFAULT_ABANDONED_LEARNER_GRACE,
                "abandoned_learner_grace",
                zero=True,
            ),
            member_without_machine_grace=positive(
                self.member_without_machine_grace,
                DEFAULT_MEMBER_WITHOUT_MACHINE_GRACE,
                "member_without_machine_grace",
                zero=True,
            ),
            wait_event_after=positive(
                self.wait_event_after, DEFAULT_WAIT_EVENT_AFTER, "wait_event_after", zero=True
            ),
            etcd_timeout=positive(self.etcd_timeout, DEFAULT_ETCD_TIMEOUT, "etcd_timeout"),
            member_change_interval=positive(
                self.member_change_interval,
                DEFAULT_MEMBER_CHANGE_INTERVAL,
                "member_change_interval",
                zero=True,
            ),
            hook=hook,
            controller=self.controller or ControllerOptions(),
        )


@dataclass(frozen=True)
class ResolvedEtcdQuorumOptions:
    """:class:`EtcdQuorumOptions` with every default applied."""

    resync_period: float
    busy_period: float
    abandoned_learner_grace: float
    member_without_machine_grace: float
    wait_event_after: float
    etcd_timeout: float
    member_change_interval: float
    hook: Hook
    controller: ControllerOptions
