"""Where the transcripts recorded from a real kube-apiserver are, for the tests that read them.

They are fixtures of this repository, in ``tests/testdata/kube-apiserver`` (``INDEX.md`` there
says how they were recorded and what each file holds). A test that needs them and cannot find
them fails: :func:`transcript_dir` raises instead of letting a suite pass on nothing.
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

REFERENCE_DIR = REPO_ROOT / "tests" / "testdata" / "kube-apiserver"
"""The transcript folder."""


def transcript_dir(directory: Path = REFERENCE_DIR) -> Path:
    """``directory``, checked to hold the recorded transcripts; ``FileNotFoundError`` says what is missing."""
    if not directory.is_dir() or not any(directory.glob("*.json")):
        raise FileNotFoundError(
            f"no reference transcripts in {directory}: they are part of the repository "
            "(tests/testdata/kube-apiserver); restore them with `git checkout -- tests/testdata`"
        )
    return directory
