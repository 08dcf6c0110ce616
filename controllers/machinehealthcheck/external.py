"""External remediation requests: what a MachineHealthCheck with ``spec.remediationTemplate``
creates for an unhealthy Machine, for an external remediator (bare metal reboot, …) to act on.

==================================  ==============================================================
:class:`TemplateRef`,               where ``spec.remediationTemplate`` points (namespace defaults
:func:`template_ref`                to the MachineHealthCheck's)
:func:`request_kind`                the kind a template stamps out (``…Template`` without the suffix)
:func:`external_remediation_request`  the request created from the template for one Machine
:class:`ExternalOutcome`            what one attempt came to (template missing, create refused,
                                    created), which :mod:`~controllers.machinehealthcheck.status`
                                    turns into the MachineHealthCheck's conditions
==================================  ==============================================================

Pure, as the machine-api-operator's ``external remediation`` path: the request is named after
the Machine, in its namespace, owned by it (it goes with it), and deleted once the Machine is
healthy again; the reconciler does the reading, creating and deleting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from api.machine import API_VERSION
from runtime.jsoncodec import JSON

TEMPLATE_SUFFIX = "Template"
CLONED_FROM_NAME_ANNOTATION = "cluster.x-k8s.io/cloned-from-name"
CLONED_FROM_GROUP_KIND_ANNOTATION = "cluster.x-k8s.io/cloned-from-groupkind"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class TemplateRef:
    """``spec.remediationTemplate`` of a MachineHealthCheck."""

    api_version: str
    kind: str
    """The template's kind (``Metal3RemediationTemplate``)."""
    name: str
    namespace: str

    @property
    def request_kind(self) -> str:
        """The kind of the requests it stamps out."""
        return request_kind(self.kind)

    def describe(self) -> str:
        """``Kind namespace/name``, as messages name the template."""
        return f"{self.kind} {self.namespace}/{self.name}"


def template_ref(mhc: Mapping[str, Any]) -> TemplateRef:
    """Where ``spec.remediationTemplate`` points; its namespace defaults to the MachineHealthCheck's."""
    ref = _mapping(_mapping(mhc.get("spec")).get("remediationTemplate"))
    namespace = ref.get("namespace") or _mapping(mhc.get("metadata")).get("namespace") or ""
    return TemplateRef(
        api_version=str(ref.get("apiVersion") or ""),
        kind=str(ref.get("kind") or ""),
        name=str(ref.get("name") or ""),
        namespace=str(namespace),
    )


def request_kind(template_kind: str) -> str:
    """The kind a template stamps out: ``Metal3RemediationTemplate`` → ``Metal3Remediation``."""
    return template_kind.removesuffix(TEMPLATE_SUFFIX) if template_kind != TEMPLATE_SUFFIX else template_kind


def external_remediation_request(template: Mapping[str, Any], machine: Mapping[str, Any]) -> JSON:
    """The remediation request for ``machine``, generated from the remediation ``template``.

    Named after the Machine, in its namespace, of the template's kind without ``Template``; its
    labels, annotations and spec come from the template's ``spec.template``; it is owned by the
    Machine (so it goes with it) and says which template it was cloned from.
    """
    meta = _mapping(machine.get("metadata"))
    template_meta = _mapping(template.get("metadata"))
    body = _mapping(_mapping(template.get("spec")).get("template"))
    body_meta = _mapping(body.get("metadata"))
    api_version = str(template.get("apiVersion") or "")
    kind = str(template.get("kind") or "")
    annotations = {str(k): str(v) for k, v in _mapping(body_meta.get("annotations")).items()}
    annotations[CLONED_FROM_NAME_ANNOTATION] = str(template_meta.get("name") or "")
    annotations[CLONED_FROM_GROUP_KIND_ANNOTATION] = f"{kind}.{api_version.rpartition('/')[0]}"
    request: JSON = {
        "apiVersion": api_version,
        "kind": request_kind(kind),
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "labels": {str(k): str(v) for k, v in _mapping(body_meta.get("labels")).items()},
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": API_VERSION,
                    "kind": "Machine",
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                }
            ],
        },
    }
    if "spec" in body:
        request["spec"] = body["spec"]
    return request


@dataclass(frozen=True)
class ExternalOutcome:
    """What one attempt to create an external remediation request came to.

    At most one of the errors is set: a template that could not be read stops the attempt
    before the create.
    """

    template: str
    """The template, ``Kind namespace/name``."""
    request: str
    """The request, ``Kind namespace/name``."""
    template_error: str | None = None
    """Why the template could not be read (None: it was read)."""
    create_error: str | None = None
    """Why the API refused the create (None: created, or not tried)."""

    @property
    def error(self) -> str | None:
        """The failure in the words of the reconcile's error, or None when the request was created."""
        if self.template_error is not None:
            return f"remediation template {self.template}: {self.template_error}"
        if self.create_error is not None:
            return f"creating {self.request}: {self.create_error}"
        return None
