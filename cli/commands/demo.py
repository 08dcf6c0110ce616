"""``cpo demo``: the operator's main job end to end on this machine, with a report (:mod:`demo`)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--replicas", type=int, default=None, help="odd replica count to start with (default: 3)"
    )
    parser.add_argument(
        "--steps",
        default=None,
        metavar="NAMES",
        help="comma-separated steps to run, in tour order (default: all: "
        "bootstrap,even,scale-out,kill,rollout,scale-in)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, metavar="DIR", help="where the report goes (default: ./demo-out)"
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="after the report, keep everything running (and print how to reach it) until Ctrl-C, "
        "SIGTERM or SIGHUP",
    )
    parser.add_argument(
        "--fast", action="store_true", help="health-check timeouts of seconds instead of minutes (for CI)"
    )
    parser.add_argument(
        "--realistic",
        action="store_true",
        help="run the provider with --realistic: a loopback address per member, etcd over TLS with "
        "client certificates, no annotation saying where a member is",
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="plain log lines even in a terminal (default: a live panel there)",
    )


def run(args: argparse.Namespace) -> int:
    from demo import DemoOptions, run_demo

    try:
        options = DemoOptions(
            replicas=args.replicas,
            steps=tuple(args.steps.split(",")) if args.steps else None,
            out=args.out,
            keep=args.keep,
            fast=args.fast,
            realistic=args.realistic,
            live=False if args.plain else None,
        )
        options.with_defaults()
    except ValueError as err:
        print(f"cpo demo: {err}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(run_demo(options))
    except KeyboardInterrupt:
        print("cpo demo: interrupted; every process it started is stopped", file=sys.stderr)
        return 130
