"""The runtime's hot path compiled to C, a contender for ``bench.vs_kopf``: ``python -m bench.compiled DIR``.

Is the CPU of a lone event at a steady rate the interpreter running our code, or the process
waking up with cold caches and touching memory? This builds the answer's instrument: it copies
``runtime/`` and ``bench/`` into ``DIR`` and compiles, with mypyc (it comes with mypy), every
module a watch event passes through from the socket to the end of its reconcile
(:data:`HOT_MODULES`). Then

    python -m bench.vs_kopf --kopf-modes event --together --stages --baseline DIR

runs that compiled copy beside the interpreted runtime on the same patches (``runtime@base``).
The repository is not changed.

mypyc needs one change to the copy: its compiled classes cannot be weakly referenced, so the
registry of controller names (a ``WeakValueDictionary``, which forgets a controller nobody holds)
becomes a plain dict; the bench makes one controller and keeps it. ``runtime/source.py`` (an async
generator) and the two modules whose ``runtime_checkable`` protocols mypyc rejects stay
interpreted; what they do per event is a few calls.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from bench._common import copy_runtime_and_bench

HOT_MODULES = (
    "runtime/client/watchstream.py",
    "runtime/jsoncodec.py",
    "runtime/cache/reflector.py",
    "runtime/cache/informer.py",
    "runtime/cache/indexers.py",
    "runtime/workqueue/queue.py",
    "runtime/workqueue/ratelimiter.py",
    "runtime/workqueue/metrics.py",
    "runtime/controller/controller.py",
    "runtime/controller/logkeys.py",
    "runtime/controller/options.py",
)
"""The modules compiled: the watch stream's read callback, the codec, the reflector and informer,
the workqueue with its rate limiter and metrics, and the controller's worker with the log keys of
a reconcile and the options it reads."""

WEAK_REGISTRY = (
    "runtime/controller/controller.py",
    "_names: weakref.WeakValueDictionary[str, Controller] = weakref.WeakValueDictionary()\n",
    "_names: dict[str, Controller] = {}\n",
)
"""(file, line, replacement): the one edit mypyc needs (see the module docstring)."""


def build(tree: Path) -> list[Path]:
    """Copy ``runtime/`` and ``bench/`` into ``tree`` and compile :data:`HOT_MODULES` there; returns
    the extension modules made. Raises ``SystemExit`` with mypyc's output when it fails."""
    if tree.exists():
        raise SystemExit(f"{tree} exists: name a new directory")
    copy_runtime_and_bench(tree)
    path, line, replacement = WEAK_REGISTRY
    text = (tree / path).read_text()
    if text.count(line) != 1:
        raise SystemExit(f"{path}: the line to replace is gone; update bench.compiled.WEAK_REGISTRY:\n{line}")
    (tree / path).write_text(text.replace(line, replacement))
    done = subprocess.run(
        [sys.executable, "-m", "mypyc", *HOT_MODULES], cwd=tree, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"mypyc failed:\n{done.stdout[-4000:]}{done.stderr[-4000:]}")
    shutil.rmtree(tree / "build", ignore_errors=True)
    # Each compiled module must be what `import` finds in that tree, not its .py beside it.
    names = [m.removesuffix(".py").replace("/", ".") for m in HOT_MODULES]
    check = "import importlib, sys\nfor n in sys.argv[1:]: print(importlib.import_module(n).__file__)"
    found = subprocess.run(
        [sys.executable, "-c", check, *names], cwd=tree, capture_output=True, text=True, check=True
    ).stdout.split()
    interpreted = [f for f in found if not f.endswith(".so")]
    if interpreted:
        raise SystemExit(f"not compiled after all: {interpreted}")
    return [Path(f) for f in found]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, help="a new directory for the compiled copy")
    args = parser.parse_args()
    tree = args.dir.resolve()
    compiled = build(tree)
    print(f"bench.compiled: {len(compiled)} modules compiled with mypyc in {tree}:")
    for path in compiled:
        print(f"  {path.relative_to(tree)}")
    print(f"now: {sys.executable} -m bench.vs_kopf --kopf-modes event --together --stages --baseline {tree}")


if __name__ == "__main__":
    main()
