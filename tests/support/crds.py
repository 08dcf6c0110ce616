"""A small CRD used by the API-server behaviour tests: status + scale subresources, defaults, limits."""

from __future__ import annotations

from typing import Any

GROUP = "test.cpo.dev"
VERSION = "v1"
PLURAL = "widgets"


def widget_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "plural": PLURAL,
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
                "shortNames": ["wd"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".status.selector",
                        },
                    },
                    "additionalPrinterColumns": [
                        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "required": ["size"],
                                    "properties": {
                                        "replicas": {
                                            "type": "integer",
                                            "minimum": 0,
                                            "maximum": 9,
                                            "default": 1,
                                        },
                                        "size": {
                                            "type": "string",
                                            "enum": ["small", "large"],
                                            "default": "small",
                                        },
                                        "port": {"x-kubernetes-int-or-string": True},
                                        "name": {"type": "string", "pattern": "^[a-z]+$"},
                                        "extra": {
                                            "type": "object",
                                            "x-kubernetes-preserve-unknown-fields": True,
                                        },
                                    },
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {
                                        "replicas": {"type": "integer"},
                                        "selector": {"type": "string"},
                                        "phase": {"type": "string"},
                                    },
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


def widget(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def widgets_path(namespace: str | None, name: str | None = None, sub: str | None = None) -> str:
    path = f"/apis/{GROUP}/{VERSION}"
    if namespace is not None:
        path += f"/namespaces/{namespace}"
    path += f"/{PLURAL}"
    if name:
        path += f"/{name}"
    if sub:
        path += f"/{sub}"
    return path
