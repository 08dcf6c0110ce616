"""The ``cpo`` command line (:mod:`cli.__main__`): ``cpo run`` runs the operator; the development
commands (``dev-apiserver``, ``localmachine``) import the stand-in and the provider only when run.

* :mod:`cli.__main__` — the dispatch table (:data:`~cli.__main__.SUBCOMMANDS`) and the entry points;
* :mod:`cli.commands` — one module per sub-command (``run``, ``dev-apiserver``, ``localmachine``,
  ``manifests``, ``demo``): its arguments and what it runs;
* :mod:`cli.explain` — ``cpo explain`` (and ``kubectl cpo explain``).
"""
