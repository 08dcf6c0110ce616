"""The transcript folder is found beside the checkout, beside a worktree's main checkout, or by env."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import reference


def _layout(tmp_path: Path) -> tuple[Path, Path]:
    main = tmp_path / "main"
    (main / ".git" / "worktrees" / "x").mkdir(parents=True)
    worktree = tmp_path / "wt" / "x"
    worktree.mkdir(parents=True)
    (worktree / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'x'}\n")
    shared = tmp_path / "shared" / "reference" / "kube-apiserver"
    shared.mkdir(parents=True)
    return worktree, shared


def test_a_worktree_finds_the_folder_beside_its_main_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worktree, shared = _layout(tmp_path)
    monkeypatch.delenv("CPO_REFERENCE_DIR", raising=False)
    monkeypatch.setattr(reference, "REPO_ROOT", worktree)
    assert reference.reference_dir() == shared
    monkeypatch.setenv("CPO_REFERENCE_DIR", str(tmp_path / "elsewhere"))
    assert reference.reference_dir() == tmp_path / "elsewhere"


def test_a_plain_checkout_looks_only_beside_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = tmp_path / "repo"
    (checkout / ".git").mkdir(parents=True)
    monkeypatch.delenv("CPO_REFERENCE_DIR", raising=False)
    monkeypatch.setattr(reference, "REPO_ROOT", checkout)
    assert reference.reference_dir() == tmp_path / "shared" / "reference" / "kube-apiserver"
    assert reference._main_checkout(checkout) is None
