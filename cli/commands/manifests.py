"""``cpo manifests``: write the CRDs from the API models, or check them in CI.

Each CRD goes to the folder of the install component it belongs to (:data:`CRD_FOLDERS`): the
operator's own ControlPlane CRD to ``config/crd/`` (part of ``config/default``), the Machine API
CRDs to ``config/machine-api/`` (the opt-in component for clusters without a Machine API).
``--output-dir DIR`` writes (or checks) every CRD in one folder instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from api.meta import CRDInfo


def crd_folders(root: Path = Path()) -> dict[Path, tuple[CRDInfo, ...]]:
    """Folder (under ``root``, the repository) → the CRDs ``cpo manifests`` writes there."""
    from api import CONTROLPLANE_CRD, MACHINE_CRD, MACHINEHEALTHCHECK_CRD

    return {
        root / "config" / "crd": (CONTROLPLANE_CRD,),
        root / "config" / "machine-api": (MACHINE_CRD, MACHINEHEALTHCHECK_CRD),
    }


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="one folder for every CRD file, <group>_<plural>.yaml (default: the ControlPlane CRD "
        "in config/crd, the Machine API CRDs in config/machine-api)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 and name the files that differ from the models (for CI)",
    )


def run(args: argparse.Namespace) -> int:
    from api import ALL_CRDS
    from api.crdgen import stale_files, write_crds

    targets = crd_folders() if args.output_dir is None else {args.output_dir: ALL_CRDS}
    if args.check:
        stale = [folder / name for folder, crds in targets.items() for name in stale_files(folder, crds)]
        for path in stale:
            print(f"cpo manifests: {path} is out of date; run `cpo manifests`", file=sys.stderr)
        return 1 if stale else 0
    for folder, crds in targets.items():
        try:
            written = write_crds(folder, crds)
        except OSError as err:
            print(f"cpo manifests: cannot write {folder}: {err}", file=sys.stderr)
            return 1
        for path in written:
            print(path)
    return 0
