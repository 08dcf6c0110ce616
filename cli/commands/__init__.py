"""The ``cpo`` sub-commands other than ``explain`` (:mod:`cli.explain`), one module each.

Each module has ``configure(parser)``, which declares the command's arguments, and
``run(args) -> exit code``; :data:`cli.__main__.SUBCOMMANDS` lists them. A module imports at its
top only what ``configure`` needs, and the rest inside ``run``, so that ``cpo --help`` stays fast
and loads no development tool (``tests/unit/test_layers.py``).

* :mod:`cli.commands.run` — ``cpo run``, the operator;
* :mod:`cli.commands.dev_apiserver` — ``cpo dev-apiserver``, the embedded API server alone;
* :mod:`cli.commands.localmachine` — ``cpo localmachine``, the local machine provider;
* :mod:`cli.commands.manifests` — ``cpo manifests``, the CRDs from the API models;
* :mod:`cli.commands.demo` — ``cpo demo``, the tour with a report.
"""
