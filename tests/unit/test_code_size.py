"""The product stays readable as it grows: no module over 500 lines, no function over 60.

For every ``.py`` file under the product packages (:data:`PACKAGES`, recursively): at most
:data:`MAX_FILE_LINES` lines, and every function or method (nested ones included) at most
:data:`MAX_FUNCTION_LINES` lines, measured with :mod:`ast` from its ``def`` line to its last line
(decorators aside) *without its docstring*: a rule's docstring says what the rule is and why it is
safe, and that is never too long. A function that is a table or a declaration, not logic, may be
listed in :data:`EXEMPT` with the reason; keep that list short (it is empty today).

A package that moves or empties makes the test fail rather than pass on nothing:
:func:`test_every_product_package_holds_python_files` checks each one, and the parametrized tests
fail at collection if they have no files at all (``empty_parameter_set_mark`` in pyproject.toml).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PACKAGES = ("runtime", "api", "controllers", "webhooks", "cli")
"""The product packages this test keeps in shape (pyproject.toml's comment on packages says why
``apiserver``, ``providers`` and ``demo`` are not product)."""

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 60

EXEMPT: dict[str, str] = {}
"""``"path::qualified.name"`` of a function allowed to be longer, with the reason (tables and
declarations only)."""


def _files() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def _docstring_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    first = node.body[0] if node.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and first.end_lineno is not None
    ):
        return first.end_lineno - first.lineno + 1
    return 0


def function_lengths(path: Path) -> list[tuple[str, int]]:
    """``(qualified name, lines without the docstring)`` of every function in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                length = (child.end_lineno or child.lineno) - child.lineno + 1 - _docstring_lines(child)
                found.append((name, length))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("path", _files(), ids=_relative)
def test_no_product_module_is_over_500_lines(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_FILE_LINES, (
        f"{_relative(path)} has {lines} lines (at most {MAX_FILE_LINES}): split it along its ideas"
    )


@pytest.mark.parametrize("path", _files(), ids=_relative)
def test_no_product_function_is_over_60_lines(path: Path) -> None:
    long = [
        f"{name} ({length} lines)"
        for name, length in function_lengths(path)
        if length > MAX_FUNCTION_LINES and f"{_relative(path)}::{name}" not in EXEMPT
    ]
    assert not long, (
        f"{_relative(path)}: over {MAX_FUNCTION_LINES} lines (docstring aside): {', '.join(long)}; "
        "break them into named steps or sub-rules"
    )


@pytest.mark.parametrize("package", PACKAGES)
def test_every_product_package_holds_python_files(package: str) -> None:
    directory = ROOT / package
    assert directory.is_dir(), f"{package} is not a directory: update PACKAGES if it moved"
    assert any(directory.rglob("*.py")), f"{package} holds no .py files: update PACKAGES if it moved"


def test_the_measure_counts_lines_without_the_docstring(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    source.write_text(
        "class A:\n"
        "    def f(self):\n"
        '        """Two\n'
        '        lines."""\n'
        "        def inner():\n"
        "            return 1\n"
        "        return inner()\n"
        "\n"
        "async def g():\n"
        "    return 2\n"
    )
    assert function_lengths(source) == [("A.f", 4), ("A.f.inner", 2), ("g", 2)]


def test_every_exemption_names_a_function_that_exists() -> None:
    known = {f"{_relative(path)}::{name}" for path in _files() for name, _ in function_lengths(path)}
    assert not set(EXEMPT) - known, f"stale exemptions: {sorted(set(EXEMPT) - known)}"
