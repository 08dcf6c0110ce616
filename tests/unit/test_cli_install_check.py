"""`cpo install-check`'s decision (cli/commands/install_check.py): which install fits a cluster."""

from __future__ import annotations

import pytest

from cli.commands.install_check import MACHINE_API_CRDS, PREREQUISITES, decide, facts_of, render

PREREQUISITE_CRDS = tuple(crd for crds in PREREQUISITES.values() for crd in crds)


@pytest.mark.parametrize(
    ("crds", "operators", "case"),
    [
        ((*MACHINE_API_CRDS, "clusteroperators.config.openshift.io"), ("machine-api", "etcd"), "openshift"),
        ((*MACHINE_API_CRDS, "clusteroperators.config.openshift.io"), ("etcd",), "openshift"),
        (MACHINE_API_CRDS, (), "machine-api"),
        ((), (), "standalone"),
        (MACHINE_API_CRDS[:1], (), None),
    ],
    ids=[
        "the machine api with openshift's operators is openshift",
        "one of openshift's operators is enough to keep out of its way",
        "a machine api without openshift's operators keeps its crds and runs every controller",
        "a cluster without a machine api gets the project's crds",
        "half a machine api fits no install",
    ],
)
def test_the_install_follows_the_machine_api_and_openshifts_operators(
    crds: tuple[str, ...], operators: tuple[str, ...], case: str | None
) -> None:
    verdict = decide(facts_of((*crds, *PREREQUISITE_CRDS), operators))
    assert verdict.case == case
    assert verdict.missing == ()
    assert verdict.exit_code == (0 if case else 2)
    text = render(verdict)
    assert text.startswith(f"case: {case or 'none'}\n")
    if case:
        assert f"install: kubectl apply -k config/install/{case}\n" in text


def test_a_missing_prerequisite_is_named_and_fails_the_check() -> None:
    verdict = decide(facts_of(("certificates.cert-manager.io",)))
    assert verdict.case == "standalone"
    assert verdict.missing == ("cert-manager", "the Prometheus Operator")
    assert verdict.exit_code == 2
    assert "missing: cert-manager" in render(verdict)
