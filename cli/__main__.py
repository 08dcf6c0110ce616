"""The ``cpo`` command line: one executable, one sub-command per job.

``cpo run`` is the operator itself (see :mod:`controllers.operator`). ``cpo dev-apiserver`` runs
the embedded API server on its own, for kubectl sessions and for trying the operator by hand;
``cpo localmachine`` runs the local machine provider; ``cpo manifests`` writes the CRDs; ``cpo
install-check`` says which install a cluster needs (:mod:`cli.commands.install_check`); ``cpo
explain`` shows one ControlPlane as the operator sees it (:mod:`cli.explain`). The same table is
installed a second time as ``kubectl-cpo`` (:func:`kubectl_main`), so ``kubectl cpo explain NAME``
works once the package is on PATH. Every
sub-command plugs into the same table: write a ``configure(parser)`` that declares the arguments
and a ``run(args) -> exit code`` (a module of :mod:`cli.commands`, or a package such as
:mod:`cli.explain`), and add a :class:`Subcommand` to :data:`SUBCOMMANDS`.
Sub-commands import what they need inside ``run`` so that ``cpo --help`` stays fast and one broken
sub-command cannot break the others.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cli.commands import demo, dev_apiserver, install_check, localmachine, manifests, run


@dataclass(frozen=True)
class Subcommand:
    """One entry of the dispatch table."""

    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    configures_logging: bool = False
    """True when ``run`` sets up logging itself (``main`` then leaves the root logger alone)."""


# -------------------------------------------------------------------------------------- explain


def _configure_explain(parser: argparse.ArgumentParser) -> None:
    from cli.explain import configure

    configure(parser)


def _run_explain(args: argparse.Namespace) -> int:
    from cli.explain import run

    return run(args)


# ------------------------------------------------------------------------------------ dispatch

SUBCOMMANDS: dict[str, Subcommand] = {
    "demo": Subcommand(
        help="the operator's main job end to end on this machine: scale, kill, roll out, with a report",
        configure=demo.configure,
        run=demo.run,
    ),
    "dev-apiserver": Subcommand(
        help="run the embedded Kubernetes API server standalone (for kubectl and manual testing)",
        configure=dev_apiserver.configure,
        run=dev_apiserver.run,
    ),
    "explain": Subcommand(
        help="one ControlPlane as the operator sees it: Machines, etcd, remediation, the plan and "
        "what holds it (-o json for scripts, --watch to follow)",
        configure=_configure_explain,
        run=_run_explain,
    ),
    "install-check": Subcommand(
        help="which install a cluster needs (OpenShift, a Machine API without it, an empty cluster), "
        "read before installing; writes nothing",
        configure=install_check.configure,
        run=install_check.run,
    ),
    "localmachine": Subcommand(
        help="run the localmachine provider: each Machine becomes a local etcd member and a Node",
        configure=localmachine.configure,
        run=localmachine.run,
    ),
    "manifests": Subcommand(
        help="generate the CRDs (config/crd/, config/machine-api/) from the API models in api/",
        configure=manifests.configure,
        run=manifests.run,
    ),
    "run": Subcommand(
        help="run the operator: manager, admission webhooks, metrics, probes, leader election",
        configure=run.configure,
        run=run.run,
        configures_logging=True,
    ),
}


def build_parser(prog: str = "cpo") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="controlplane-operator: quorum-safe control-plane Machine management."
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        type=str.upper,
        help="log verbosity (default: %(default)s)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, subcommand in SUBCOMMANDS.items():
        subparser = subparsers.add_parser(name, help=subcommand.help, description=subcommand.help)
        subcommand.configure(subparser)
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = "cpo") -> int:
    """Entry point of the ``cpo`` console script; returns the process exit code."""
    args = build_parser(prog).parse_args(argv)
    subcommand = SUBCOMMANDS[args.command]
    if not subcommand.configures_logging:
        logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return subcommand.run(args)


def kubectl_main() -> int:
    """Entry point of the ``kubectl-cpo`` console script: kubectl runs it for ``kubectl cpo ...``
    with the words after ``cpo`` as its arguments."""
    return main(prog="kubectl cpo")


if __name__ == "__main__":
    sys.exit(main())
