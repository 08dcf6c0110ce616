"""``bench.compiled`` still finds what it compiles and the one line it edits.

Compiling takes a minute, so the suite does not build the copy; it checks the bench's inputs, so
that the change that renames a hot module or that line learns it, not the next person to measure.
"""

from __future__ import annotations

from pathlib import Path

from bench import compiled

ROOT = Path(__file__).resolve().parents[2]


def test_every_hot_module_exists_and_the_edited_line_is_there_once() -> None:
    missing = [module for module in compiled.HOT_MODULES if not (ROOT / module).is_file()]
    assert missing == []
    path, line, replacement = compiled.WEAK_REGISTRY
    assert (ROOT / path).read_text().count(line) == 1
    assert path in compiled.HOT_MODULES and line != replacement
