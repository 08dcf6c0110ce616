"""The ``cpo`` command line (:mod:`cli.__main__`): ``cpo run`` runs the operator; the development
commands (``dev-apiserver``, ``localmachine``) import the stand-in and the provider only when run."""
