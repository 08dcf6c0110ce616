"""The etcd-quorum-hook controller (placeholder docstring, replaced below)."""

from controllers.etcdquorum.reconciler import (
    CONTROLLER_NAME,
    EtcdQuorumOptions,
    EtcdQuorumReconciler,
    ResolvedEtcdQuorumOptions,
    setup_with_manager,
)
from controllers.etcdquorum.rules import HOOK_NAME, HOOK_OWNER

__all__ = [
    "CONTROLLER_NAME",
    "HOOK_NAME",
    "HOOK_OWNER",
    "EtcdQuorumOptions",
    "EtcdQuorumReconciler",
    "ResolvedEtcdQuorumOptions",
    "setup_with_manager",
]
