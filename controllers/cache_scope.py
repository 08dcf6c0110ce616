"""What the operator's cache holds: control-plane Machines, Nodes and component Pods only.

Every controller reads through one shared cache (:mod:`runtime.cache`), scoped on the server so
that a cluster's thousands of worker Machines, Nodes and Pods cost the operator nothing:
:func:`operator_cache_options` is that scope, the one ``cpo run`` starts its manager with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from api.nodes import DEFAULT_CONTROL_PLANE_NODE_SELECTORS, control_plane_node_selectors
from controllers.controlplane.components import layout_named

if TYPE_CHECKING:
    from runtime.cache import CacheOptions

MACHINE_ROLE_SELECTOR: Final = "machine.openshift.io/cluster-api-machine-role=master"
"""Which Machines the operator caches: control-plane ones only (server-side), so thousands of
worker Machines cost it nothing. Every controller reads Machines through this one informer."""
# Which Nodes it caches: control-plane ones only (server-side), for the same reason; the selectors
# that tell them are api.nodes' (OperatorOptions.control_plane_node_selectors).


def operator_cache_options(
    node_selectors: Sequence[str] = DEFAULT_CONTROL_PLANE_NODE_SELECTORS,
    components: str = "kubeadm",
) -> CacheOptions:
    """The manager's cache scope: Machines, Nodes and Pods restricted to the control plane, the rest whole.

    Nodes: one scope per selector of ``node_selectors`` (by default the two role labels: a label
    selector cannot say "this label or that one"), read as one; never every Node. Pods: only the
    control-plane components' mirror Pods of the ``components`` layout, one scope per namespace
    and selector (:meth:`~controllers.controlplane.components.ComponentLayout.scopes`); none with
    ``off`` (no Pod is watched then).
    """
    from runtime.cache import ByNamespace, ByObject, CacheOptions

    by_object = {
        ("machine.openshift.io/v1beta1", "Machine"): ByObject(label_selector=MACHINE_ROLE_SELECTOR),
        ("v1", "Node"): ByObject(label_selectors=control_plane_node_selectors(node_selectors)),
    }
    layout = layout_named(components)
    if layout is not None:
        namespaces = {ns: ByNamespace(label_selectors=selectors) for ns, selectors in layout.scopes().items()}
        by_object[("v1", "Pod")] = ByObject(namespaces=namespaces)
    return CacheOptions(by_object=by_object)
