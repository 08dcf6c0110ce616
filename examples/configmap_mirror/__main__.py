"""``python -m examples.configmap_mirror --kubeconfig PATH``: run the operator until SIGTERM/SIGINT."""

import asyncio
import sys

from examples.configmap_mirror.mirror import main

if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
