"""The ControlPlane controller (placeholder docstring, replaced below)."""

from controllers.controlplane.reconciler import (
    CONTROLLER_NAME,
    FINALIZER,
    ControlPlaneOptions,
    ControlPlaneReconciler,
    ResolvedControlPlaneOptions,
    setup_with_manager,
)
from controllers.controlplane.rules import FAILURE_DOMAIN_LABEL, SPEC_HASH_ANNOTATION

__all__ = [
    "CONTROLLER_NAME",
    "FAILURE_DOMAIN_LABEL",
    "FINALIZER",
    "SPEC_HASH_ANNOTATION",
    "ControlPlaneOptions",
    "ControlPlaneReconciler",
    "ResolvedControlPlaneOptions",
    "setup_with_manager",
]
