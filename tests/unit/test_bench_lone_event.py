"""``bench.lone_event`` still finds every probe's place in the runtime's code.

The bench places its timestamps by lines of ``runtime/`` and ``bench/``; when those lines move it
stops with the probe's name. Benchmarks are not run by the suite, so this test is what tells the
change that moved a line, not the next person to measure.
"""

from __future__ import annotations

import py_compile
from pathlib import Path

from bench import lone_event
from bench._common import copy_runtime_and_bench

ROOT = Path(__file__).resolve().parents[2]


def test_every_probe_is_placed_once_and_the_copy_compiles(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    copy_runtime_and_bench(tree)
    lone_event.instrument(tree)
    placed: dict[int, int] = {}
    for path in {path for path, *_ in lone_event.PROBES}:
        text = (tree / path).read_text()
        py_compile.compile(str(tree / path), doraise=True)
        for number in {number for *_, number in lone_event.PROBES}:
            placed[number] = placed.get(number, 0) + text.count(f"_P.append(({number}, _ns()))")
    assert placed == {number: 1 for number in range(len(lone_event.STEPS) + 1)}
    # The original tree is untouched.
    assert "_P.append" not in (ROOT / "runtime" / "controller" / "controller.py").read_text()
