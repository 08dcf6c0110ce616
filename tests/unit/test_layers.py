"""Layers point one way: ``runtime`` is a framework and imports nothing of the operator built on it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("api", "controllers", "webhooks", "tests")


def _imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_runtime_imports_nothing_from_the_operator() -> None:
    offenders = []
    files = sorted((ROOT / "runtime").rglob("*.py"))
    assert files, "runtime/ has no Python files"
    for path in files:
        for module in _imported_modules(path):
            if module.split(".")[0] in FORBIDDEN:
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offenders == []


def test_the_layer_check_catches_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from controllers.controlplane import reconcile\nimport webhooks\n")
    assert [m for m in _imported_modules(bad) if m.split(".")[0] in FORBIDDEN] == [
        "controllers.controlplane",
        "webhooks",
    ]
