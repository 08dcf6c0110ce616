"""Where the transcripts recorded from a real kube-apiserver are, for the tests that read them.

They live outside the repository, in ``shared/reference/kube-apiserver`` next to the checkout
(that is how CI lays them out). A git worktree (``git worktree add ../wt/x``) has no such folder
beside it, so the folder next to the worktree's main checkout counts too, and
``CPO_REFERENCE_DIR`` overrides both::

    CPO_REFERENCE_DIR=/data/kube-apiserver python -m pytest -q tests/integration

Tests that need the transcripts skip (or the replay module skips) when the folder is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
_RELATIVE = Path("shared") / "reference" / "kube-apiserver"


def _main_checkout(repo: Path) -> Path | None:
    """The main working tree when ``repo`` is a linked git worktree (its ``.git`` is a file)."""
    dot_git = repo / ".git"
    if not dot_git.is_file():
        return None
    text = dot_git.read_text().strip()
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text.removeprefix("gitdir:").strip())
    if not gitdir.is_absolute():
        gitdir = (repo / gitdir).resolve()
    # <main>/.git/worktrees/<name>  ->  <main>
    if gitdir.parent.name != "worktrees" or gitdir.parent.parent.name != ".git":
        return None
    return gitdir.parent.parent.parent


def reference_dir() -> Path:
    """The transcript folder: ``CPO_REFERENCE_DIR``, else beside the checkout, else beside the
    main checkout of this worktree; the first candidate that exists (the plain one if none does)."""
    override = os.environ.get("CPO_REFERENCE_DIR")
    if override:
        return Path(override)
    beside = REPO_ROOT.parent / _RELATIVE
    main = _main_checkout(REPO_ROOT)
    if not beside.is_dir() and main is not None and (main.parent / _RELATIVE).is_dir():
        return main.parent / _RELATIVE
    return beside


REFERENCE_DIR = reference_dir()
