"""Every package of the operator's controllers has a guide (its docstring) whose module map names
each of its modules, so that a reader finds every module from the guide."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDED = ("controllers",)
"""Trees whose every package's docstring maps its modules."""


def packages() -> list[Path]:
    found = [init.parent for tree in GUIDED for init in sorted((ROOT / tree).rglob("__init__.py"))]
    assert found, f"no package under {GUIDED}: the test would check nothing"
    return found


def modules_of(package: Path) -> list[str]:
    names = [p.stem for p in package.glob("*.py") if p.name != "__init__.py"]
    names += [p.name for p in package.iterdir() if (p / "__init__.py").is_file()]
    return sorted(names)


def unmapped(package: Path) -> list[str]:
    guide = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    mapped = set(re.findall(r":mod:`~?[\w.]*?\.?(\w+)`", guide))
    return [name for name in modules_of(package) if name not in mapped]


@pytest.mark.parametrize("package", packages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_package_guide_maps_every_module(package: Path) -> None:
    assert not unmapped(package), f"{package.relative_to(ROOT)}/__init__.py does not name {unmapped(package)}"
