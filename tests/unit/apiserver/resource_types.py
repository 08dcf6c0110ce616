"""Resource types for the apiserver unit tests: built-ins by group/version/kind and a custom resource."""

from __future__ import annotations

from apiserver.registry import ResourceType


def builtin(group: str, version: str, kind: str, resource: str) -> ResourceType:
    return ResourceType(
        group=group,
        version=version,
        resource=resource,
        kind=kind,
        singular=kind.lower(),
        namespaced=True,
        builtin=True,
    )


NAMESPACES = builtin("", "v1", "Namespace", "namespaces")
PODS = builtin("", "v1", "Pod", "pods")
NODES = builtin("", "v1", "Node", "nodes")
CONFIGMAPS = builtin("", "v1", "ConfigMap", "configmaps")
CRDS = builtin("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions")
GADGETS = ResourceType(
    group="ref.example.dev",
    version="v1",
    resource="gadgets",
    kind="Gadget",
    singular="gadget",
    namespaced=True,
)
