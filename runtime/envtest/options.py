"""How to build a test environment: its options, and the one place their defaults are decided."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..localproc import FlagOverrides
from .backends import (
    ATTACH_OUTPUT,
    BACKENDS,
    KUBEBUILDER_ASSETS,
    START_TIMEOUT,
    STOP_TIMEOUT,
    TEST_KUBECONFIG,
    BackendChoice,
    BackendName,
    BackendSelectionError,
    EmbeddedServerFactory,
    _existing_kubeconfig,
    find_binaries,
    select_backend,
)
from .manifests import ManifestSource

DEFAULT_START_TIMEOUT = 60.0
DEFAULT_STOP_TIMEOUT = 20.0
DEFAULT_CRD_INSTALL_TIMEOUT = 30.0


@dataclass(frozen=True)
class EnvironmentOptions:
    """How to build an :class:`Environment`. Every field may stay unset; see :meth:`with_defaults`."""

    crd_paths: Sequence[str | os.PathLike[str]] = ()
    """Files or folders (non-recursive; ``.yaml``, ``.yml``, ``.json``) of CRDs installed at start."""
    crds: Sequence[Mapping[str, Any]] = ()
    """CRD objects installed at start, in addition to ``crd_paths``."""
    error_if_crd_path_missing: bool | None = None
    """A ``crd_paths`` entry that does not exist fails the start (False: it is skipped). Default True."""
    crd_install_timeout: float | None = None
    """Seconds to wait for CRDs to be Established and served. Default 30."""
    backend: BackendName | None = None
    """Force a back end. Default: :func:`select_backend` decides from the environment variables."""
    use_existing_cluster: bool | None = None
    """Attach to an existing cluster (controller-runtime's flag); the same as ``backend="existing"``.
    Default False.
    Nothing is torn down at stop except the namespaces made with :meth:`Environment.create_namespace`."""
    existing_kubeconfig: str | os.PathLike[str] | None = None
    """Kubeconfig of the existing cluster. Default ``CPO_TEST_KUBECONFIG``, else the first file of
    ``KUBECONFIG``, else ``~/.kube/config``."""
    existing_context: str | None = None
    """Context of ``existing_kubeconfig`` to use. Default: its current-context."""
    start_timeout: float | None = None
    """Seconds each real binary may take to become ready. Default
    ``KUBEBUILDER_CONTROLPLANE_START_TIMEOUT`` (a Go duration such as ``90s``), else 60."""
    stop_timeout: float | None = None
    """Seconds a real binary gets after SIGTERM before SIGKILL. Default
    ``KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT``, else 20."""
    attach_control_plane_output: bool | None = None
    """Let the real binaries write to our stdout/stderr instead of log files. Default
    ``KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT=true``, else False."""
    kube_apiserver_flags: FlagOverrides | None = None
    """Real kube-apiserver only: flags to add or replace (``{"v": "4"}``); a ``None`` value drops a
    default flag. Default: none."""
    embedded: EmbeddedServerFactory | None = None
    """The embedded back end's server (its options, e.g. ``apiserver.EmbeddedServerOptions()``).
    The framework ships no API server of its own: without this the embedded back end is refused
    with an error saying which back ends remain."""
    embedded_in_thread: bool | None = None
    """Embedded back end only: serve from a background thread with its own event loop, so test code
    that blocks (``subprocess.run(["kubectl", ...])``, a synchronous test) cannot stall the server.
    False serves from the caller's loop, which must then keep running while clients wait. Default
    True."""
    environ: Mapping[str, str] | None = None
    """The environment variables consulted. Default ``os.environ``."""

    def with_defaults(self) -> ResolvedOptions:
        """Fill every unset field: explicit option, then environment variable, then built-in default."""
        environ = dict(os.environ if self.environ is None else self.environ)
        if self.use_existing_cluster and self.backend not in (None, "existing"):
            raise ValueError(f"use_existing_cluster=True contradicts backend={self.backend!r}")
        wanted: BackendName | None = "existing" if self.use_existing_cluster else self.backend
        if wanted is not None and wanted not in BACKENDS:
            raise ValueError(f"unknown back end {wanted!r}; expected one of {', '.join(BACKENDS)}")
        if wanted is None:
            choice = select_backend(environ)
        elif wanted == "binaries":
            choice = BackendChoice("binaries", "requested by EnvironmentOptions", find_binaries(environ))
        elif wanted == "embedded":
            choice = BackendChoice("embedded", "requested by EnvironmentOptions")
        else:
            choice = BackendChoice("existing", "requested by EnvironmentOptions")
        if choice.backend == "existing" and (
            self.existing_kubeconfig is not None or choice.kubeconfig_path is None
        ):
            path, source = _existing_kubeconfig(self.existing_kubeconfig, environ)
            choice = BackendChoice(
                "existing", f"{choice.reason}; kubeconfig {path} ({source})", kubeconfig_path=path
            )

        embedded = self.embedded
        if embedded is None and choice.backend == "embedded":
            raise BackendSelectionError(
                f"the embedded back end was chosen ({choice.reason}) but EnvironmentOptions.embedded "
                f"names no server: pass one (e.g. apiserver.EmbeddedServerOptions()), or set "
                f"{KUBEBUILDER_ASSETS} (real binaries) or {TEST_KUBECONFIG} (an existing cluster)"
            )
        return ResolvedOptions(
            choice=choice,
            crd_sources=(*self.crd_paths, *self.crds),
            error_if_crd_path_missing=self.error_if_crd_path_missing is not False,
            crd_install_timeout=_first(self.crd_install_timeout, None, DEFAULT_CRD_INSTALL_TIMEOUT),
            start_timeout=_first(
                self.start_timeout, _duration(environ, START_TIMEOUT), DEFAULT_START_TIMEOUT
            ),
            stop_timeout=_first(self.stop_timeout, _duration(environ, STOP_TIMEOUT), DEFAULT_STOP_TIMEOUT),
            attach_control_plane_output=(
                self.attach_control_plane_output
                if self.attach_control_plane_output is not None
                else environ.get(ATTACH_OUTPUT, "").lower() == "true"
            ),
            kube_apiserver_flags=dict(self.kube_apiserver_flags or {}),
            embedded=embedded,
            embedded_in_thread=self.embedded_in_thread is not False,
            existing_context=self.existing_context,
        )


@dataclass(frozen=True)
class ResolvedOptions:
    """:class:`EnvironmentOptions` with every default filled in; what :class:`Environment` runs on."""

    choice: BackendChoice
    crd_sources: tuple[ManifestSource, ...]
    error_if_crd_path_missing: bool
    crd_install_timeout: float
    start_timeout: float
    stop_timeout: float
    attach_control_plane_output: bool
    kube_apiserver_flags: FlagOverrides
    embedded: EmbeddedServerFactory | None
    embedded_in_thread: bool
    existing_context: str | None


def parse_duration(text: str) -> float:
    """Seconds in a Go-style duration (``90s``, ``1m30s``, ``500ms``) or a plain number of seconds."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)", text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise ValueError(f"invalid duration {text!r}")
    return sum(float(number) * units[unit] for number, unit in parts)


def _duration(environ: Mapping[str, str], variable: str) -> float | None:
    value = environ.get(variable)
    if not value:
        return None
    try:
        return parse_duration(value)
    except ValueError as err:
        raise ValueError(f"{variable}: {err}") from None


def _first(*values: float | None) -> float:
    for value in values:
        if value is not None:
            return value
    raise ValueError("no value")
