"""``cpo dev-apiserver``: the embedded API server on its own, for kubectl sessions and trying the
operator by hand.

The server (:mod:`apiserver`) is a development tool: it is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import signal
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig-out",
        type=Path,
        required=True,
        metavar="PATH",
        help="where to write the admin kubeconfig (written once the server is ready)",
    )
    parser.add_argument("--port", type=int, default=0, help="HTTPS port (default: a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument(
        "--crd",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="CRD file or folder to install before the kubeconfig is written (repeatable)",
    )
    parser.add_argument(
        "--enforce-rbac",
        action="store_true",
        help="authorize every request with the stored Roles, ClusterRoles and bindings, as "
        "kube-apiserver's --authorization-mode=RBAC (default: every authenticated identity may "
        "do everything); the admin kubeconfig's user is in system:masters either way, and the "
        "tokens of `kubectl create token` act as their ServiceAccount",
    )


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_serve(args))


async def _serve(args: argparse.Namespace) -> int:
    from apiserver.server import EmbeddedServerOptions
    from runtime.envtest import Environment, EnvironmentOptions
    from runtime.envtest.kubeconfig import write_kubeconfig

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # Installed before the server starts, so a signal that arrives during start-up still ends us cleanly.
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    options = EnvironmentOptions(
        backend="embedded",
        embedded=EmbeddedServerOptions(host=args.host, port=args.port, enforce_rbac=args.enforce_rbac),
        # This process does nothing but serve, so the server can have the main loop to itself.
        embedded_in_thread=False,
        crd_paths=list(args.crd),
    )
    try:
        async with Environment(options) as env:
            # Everything up to here (modules, the built-in schemas, discovery) lives as long as
            # the process: out of the collector's sight, full collections only walk what requests
            # create, and stay short (the store holds objects as bytes for the same reason).
            gc.collect()
            gc.freeze()
            path = write_kubeconfig(env.kubeconfig, args.kubeconfig_out).absolute()
            print(
                f"Embedded API server listening on {env.url}\n"
                f"Admin kubeconfig written to {path}\n\n"
                f"Try:\n"
                f"  kubectl --kubeconfig {path} get ns\n"
                f"  export KUBECONFIG={path}\n\n"
                f"Stop with Ctrl-C (or SIGTERM).",
                flush=True,
            )
            await stop.wait()
    except (OSError, ValueError, TimeoutError) as err:
        print(f"cpo dev-apiserver: {err}", file=sys.stderr)
        return 1
    print("Embedded API server stopped.", flush=True)
    return 0
