"""Built-in types an operator's own install holds but no controller here runs: ``apps/v1``
Deployment and ``networking.k8s.io/v1`` NetworkPolicy.

The embedded server stores them so that an install (``kubectl apply -k config/install/...``) can
be applied to it as to a cluster; nothing acts on them (no Deployment controller, no kubelet, no
network plugin). The spec fields kubectl and kustomize write are described; the rest are kept as
they come (open structs).
"""

from __future__ import annotations

from ..gostruct import ALWAYS, ANY, BOOL, I32, I64, POINTER, STR, F, ListOf, struct
from .structs import LABEL_SELECTOR, META_TOP, METADATA, OBJECT_META, POD

_POD_SPEC = POD.get("spec")
assert _POD_SPEC is not None
POD_TEMPLATE_SPEC = struct(
    "PodTemplateSpec", F("metadata", OBJECT_META, ALWAYS), F("spec", _POD_SPEC.type, ALWAYS)
)
DEPLOYMENT = struct(
    "Deployment",
    *META_TOP,
    METADATA,
    F(
        "spec",
        struct(
            "DeploymentSpec",
            F("replicas", I32, POINTER),
            F("selector", LABEL_SELECTOR, POINTER),
            F("template", POD_TEMPLATE_SPEC, ALWAYS),
            F("strategy", ANY),
            F("minReadySeconds", I32),
            F("revisionHistoryLimit", I32, POINTER),
            F("paused", BOOL),
            F("progressDeadlineSeconds", I32, POINTER),
            open=True,
        ),
        ALWAYS,
    ),
    F(
        "status",
        struct(
            "DeploymentStatus",
            F("observedGeneration", I64),
            F("replicas", I32),
            F("updatedReplicas", I32),
            F("readyReplicas", I32),
            F("availableReplicas", I32),
            F("unavailableReplicas", I32),
            F("conditions", ListOf(ANY, "map", ("type",), merge_key="type")),
            open=True,
        ),
        ALWAYS,
    ),
)
NETWORK_POLICY = struct(
    "NetworkPolicy",
    *META_TOP,
    METADATA,
    F(
        "spec",
        struct(
            "NetworkPolicySpec",
            F("podSelector", LABEL_SELECTOR, ALWAYS),
            F("ingress", ListOf(ANY)),
            F("egress", ListOf(ANY)),
            F("policyTypes", ListOf(STR)),
            open=True,
        ),
        ALWAYS,
    ),
)
