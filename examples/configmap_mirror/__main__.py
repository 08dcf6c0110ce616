"""``python -m examples.configmap_mirror --kubeconfig PATH``: run the operator until SIGTERM/SIGINT."""

import asyncio
import sys

from examples.configmap_mirror.mirror import main

sys.exit(asyncio.run(main()))
