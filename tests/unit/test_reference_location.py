"""The kube-apiserver transcripts are fixtures of the repository, and a missing one fails loudly."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import reference


def test_the_transcripts_are_in_the_repository() -> None:
    folder = reference.transcript_dir()
    assert folder == reference.REPO_ROOT / "tests" / "testdata" / "kube-apiserver"
    assert (folder / "INDEX.md").is_file()
    assert len(list(folder.glob("*.json"))) > 500


def test_a_missing_folder_is_an_error_not_a_skip(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no reference transcripts"):
        reference.transcript_dir(tmp_path / "absent")
    with pytest.raises(FileNotFoundError, match="tests/testdata/kube-apiserver"):
        reference.transcript_dir(tmp_path)
