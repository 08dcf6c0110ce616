"""Every docstring example of the project runs, as controller-runtime compiles its ``example_test.go``.

Each module of the project packages whose docstrings hold ``>>>`` examples is one test: its
examples (module, class and function docstrings) run with :mod:`doctest`, with ``ELLIPSIS`` and
``NORMALIZE_WHITESPACE``. Collection only reads the files; a module is imported when its test runs.

Names an example may use without defining them (on top of pytest's ``doctest_namespace``):

``kubeconfig``  path (``str``) of the admin kubeconfig of the session's API server (the ``env``
                fixture, started only when an example uses the name), with the project's CRDs
                (``config/crd``) installed;
``namespace``   a fresh namespace in that server, for the examples of one module;
``tmp_path``    a fresh directory (:class:`~pathlib.Path`) for the examples of one module.

Examples that need a server run their own event loop (``asyncio.run(...)``): the session's
embedded API server serves from its own thread, so it answers while the example runs. Shell
sessions in docstrings stay ``::`` blocks; only ``>>>`` examples run.
"""

from __future__ import annotations

import doctest
import importlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

PACKAGES = ("runtime", "api", "controllers", "webhooks", "cli", "apiserver", "providers", "examples")
"""The project packages whose docstring examples run."""

OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

FIXTURE_NAMES = {"kubeconfig": "kubeconfig_path", "namespace": "namespace", "tmp_path": "tmp_path"}
"""Names an example may use -> the fixture that provides them."""

SERVER_FIXTURES = ("machine_crds",)
"""Requested with ``kubeconfig`` or ``namespace``: the server has the project's CRDs installed."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(marker: str = ">>>") -> list[str]:
    """The project modules whose source holds ``marker``, without importing them."""
    return sorted(
        _module_name(path)
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if marker in path.read_text()
    )


def _uses(tests: list[doctest.DocTest], name: str) -> bool:
    """Whether an example reads ``name`` (a keyword argument or a string of that name does not count)."""
    word = re.compile(rf"(?<![\w.\"']){name}(?![\w\"']|\s*=[^=])")
    return any(word.search(example.source) for test in tests for example in test.examples)


@pytest.mark.parametrize("module_name", _modules())
def test_docstring_examples_run(
    module_name: str, doctest_namespace: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    module = importlib.import_module(module_name)
    tests = [test for test in doctest.DocTestFinder().find(module, module_name) if test.examples]
    assert tests, f"{module_name} mentions '>>>' but has no docstring example"
    names = dict(doctest_namespace)
    for name, fixture in FIXTURE_NAMES.items():
        if _uses(tests, name):
            value = request.getfixturevalue(fixture)
            names[name] = str(value) if isinstance(value, Path) and name == "kubeconfig" else value
            if name in ("kubeconfig", "namespace"):
                for needed in SERVER_FIXTURES:
                    request.getfixturevalue(needed)
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report = io.StringIO()
    for test in tests:
        test.globs.update(names)
        runner.run(test, out=report.write)
    assert runner.failures == 0, report.getvalue()


def test_importing_every_module_starts_nothing() -> None:
    """Collecting examples imports modules: none may start a thread, a process or a server."""
    modules = sorted(_module_name(path) for package in PACKAGES for path in (ROOT / package).rglob("*.py"))
    probe = (
        "import importlib, json, threading, multiprocessing, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps([threading.active_count(), len(multiprocessing.active_children())]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout.splitlines()[-1]) == [1, 0]
