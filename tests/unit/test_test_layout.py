"""Every unit test file of the controllers sits beside the module it tests: for
tests/unit/controllers/<pkg>/test_<mod>.py there is controllers/<pkg>/<mod>.py (or a package)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests" / "unit" / "controllers"
PRODUCT = ROOT / "controllers"

CROSS_MODULE = {
    # One model fed to several controllers' decisions at once: no single module is their subject.
    "test_etcd_one_model.py",
    "test_machines_one_model.py",
}
"""Test files under tests/unit/controllers/ (relative paths) exempt from the rule."""


def misplaced() -> list[str]:
    """The test files that sit beside no module of their name and are not exempt."""
    wrong = []
    for test in sorted(TESTS.rglob("test_*.py")):
        relative = test.relative_to(TESTS)
        if relative.as_posix() in CROSS_MODULE:
            continue
        module = PRODUCT.joinpath(
            *relative.parts[:-1], relative.name.removeprefix("test_").removesuffix(".py")
        )
        if not (module.with_suffix(".py").is_file() or (module / "__init__.py").is_file()):
            wrong.append(f"{test.relative_to(ROOT)}: no {module.relative_to(ROOT)}.py nor package")
    return wrong


def test_the_controllers_tests_are_where_their_tests_will_be_looked_for() -> None:
    assert TESTS.is_dir(), f"{TESTS} is missing: the controllers' unit tests moved away"
    assert list(TESTS.rglob("test_*.py")), f"no test file under {TESTS}"
    assert misplaced() == [], "move each test to the file named after the module it tests"


def test_every_test_folder_is_a_package() -> None:
    """Test files of the same name in two folders need each folder to be a package."""
    folders = {test.parent for test in TESTS.rglob("test_*.py")}
    assert sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file()) == []
