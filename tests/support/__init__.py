"""The test toolkit: one way to do each thing the integration and end-to-end tests keep doing.

- Waiting: :func:`tests.support.poll.eventually` (``predicate, *, timeout, message``) polls a plain
  or async predicate and returns its first truthy value; :func:`tests.support.poll.holds_for`
  checks that something stays true. No test sleeps to wait for something.
- Talking to the API server: the ``client`` fixture (tests/conftest.py, options from the
  ``client_options`` fixture a module may override) and ``kube`` (``client`` with the project's
  CRDs installed, ``machine_crds``).
- Controllers in this process: :func:`tests.support.manager.running_manager` with the setup
  functions of the controllers to run; ``running_provider``, ``running_quorum_controller`` and
  ``running_controlplane`` only choose the setups.
- Child processes (``cpo run``, ``cpo localmachine``, the example operator):
  :mod:`tests.support.processes` starts them from this tree, keeps their log and stops them;
  :mod:`tests.support.manager_process` is a bare manager in a child, for leader-election tests.
"""
