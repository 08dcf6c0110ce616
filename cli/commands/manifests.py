"""``cpo manifests``: write the CRDs (``config/crd/``) from the API models, or check them in CI."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=Path("config/crd"),
        metavar="DIR",
        help="folder for the CRD files, <group>_<plural>.yaml (default: %(default)s)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 and name the files that differ from the models (for CI)",
    )


def run(args: argparse.Namespace) -> int:
    from api.crdgen import stale_files, write_crds

    if args.check:
        stale = stale_files(args.output_dir)
        for name in stale:
            print(
                f"cpo manifests: {args.output_dir / name} is out of date; run `cpo manifests`",
                file=sys.stderr,
            )
        return 1 if stale else 0
    try:
        written = write_crds(args.output_dir)
    except OSError as err:
        print(f"cpo manifests: cannot write {args.output_dir}: {err}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0
