"""Example operators built on ``runtime/`` alone (not installed with the package; run from the repo)."""
