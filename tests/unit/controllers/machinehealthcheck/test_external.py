"""External remediation requests: where the template is, what is created from it, what an attempt says."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.machinehealthcheck.external import (
    ExternalOutcome,
    TemplateRef,
    external_remediation_request,
    request_kind,
    template_ref,
)


def test_the_external_remediation_request_is_stamped_from_the_template() -> None:
    template = {
        "apiVersion": "infra.example.io/v1",
        "kind": "RebootRemediationTemplate",
        "metadata": {"name": "reboot", "namespace": "ns"},
        "spec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {"timeout": "5m"}}},
    }
    machine = {"metadata": {"name": "m-1", "namespace": "ns", "uid": "uid-1"}}
    assert external_remediation_request(template, machine) == {
        "apiVersion": "infra.example.io/v1",
        "kind": "RebootRemediation",
        "metadata": {
            "name": "m-1",
            "namespace": "ns",
            "labels": {"a": "b"},
            "annotations": {
                "cluster.x-k8s.io/cloned-from-name": "reboot",
                "cluster.x-k8s.io/cloned-from-groupkind": "RebootRemediationTemplate.infra.example.io",
            },
            "ownerReferences": [
                {
                    "apiVersion": "machine.openshift.io/v1beta1",
                    "kind": "Machine",
                    "name": "m-1",
                    "uid": "uid-1",
                }
            ],
        },
        "spec": {"timeout": "5m"},
    }


@pytest.mark.parametrize(
    ("template_kind", "kind"),
    [
        pytest.param(
            "Metal3RemediationTemplate", "Metal3Remediation", id="when the kind ends in Template it drops it"
        ),
        pytest.param("Template", "Template", id="when the kind is only Template it keeps it"),
        pytest.param("Reboot", "Reboot", id="when the kind has no Template suffix it keeps it"),
    ],
)
def test_the_request_kind_is_the_template_kind_without_template(template_kind: str, kind: str) -> None:
    assert request_kind(template_kind) == kind


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        pytest.param(
            {"apiVersion": "infra.example.io/v1", "kind": "RebootRemediationTemplate", "name": "reboot"},
            TemplateRef("infra.example.io/v1", "RebootRemediationTemplate", "reboot", "ns"),
            id="when the reference has no namespace it is the MachineHealthCheck's",
        ),
        pytest.param(
            {"apiVersion": "v1", "kind": "RebootRemediationTemplate", "name": "reboot", "namespace": "other"},
            TemplateRef("v1", "RebootRemediationTemplate", "reboot", "other"),
            id="when the reference names a namespace it is that one",
        ),
    ],
)
def test_the_template_reference(reference: dict[str, Any], expected: TemplateRef) -> None:
    mhc = {"metadata": {"name": "mhc", "namespace": "ns"}, "spec": {"remediationTemplate": reference}}
    assert template_ref(mhc) == expected
    assert expected.request_kind == "RebootRemediation"
    assert expected.describe() == f"RebootRemediationTemplate {expected.namespace}/reboot"


@pytest.mark.parametrize(
    ("outcome", "error"),
    [
        pytest.param(
            ExternalOutcome("T ns/t", "R ns/m"), None, id="when the request was created it is no error"
        ),
        pytest.param(
            ExternalOutcome("T ns/t", "R ns/m", template_error="not found"),
            "remediation template T ns/t: not found",
            id="when the template could not be read the error names the template",
        ),
        pytest.param(
            ExternalOutcome("T ns/t", "R ns/m", create_error="forbidden"),
            "creating R ns/m: forbidden",
            id="when the create was refused the error names the request",
        ),
    ],
)
def test_an_outcome_says_what_failed(outcome: ExternalOutcome, error: str | None) -> None:
    assert outcome.error == error
