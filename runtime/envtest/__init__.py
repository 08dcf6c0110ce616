"""Test environments: a real Kubernetes API server for tests, without a cluster.

This is the Python counterpart of controller-runtime's ``envtest``. One :class:`Environment`
gives a test suite an API server to talk to, and the same suite runs unchanged against each of
three back ends.

Choosing the back end
---------------------
:func:`select_backend` reads the environment, in this order:

1. ``KUBEBUILDER_ASSETS=/path`` -- a folder holding ``kube-apiserver`` and ``etcd`` (what
   ``setup-envtest use -p path`` prints). Both run as child processes on loopback with generated
   certificates, RBAC on and the ServiceAccount admission plugin off, as controller-runtime does.
   ``ETCD_BINARY`` may point at another etcd. A folder without the binaries is an error.
2. ``CPO_TEST_KUBECONFIG=/path/kubeconfig`` -- attach to that cluster (kind, a dev cluster...).
   It is never torn down; only the namespaces the tests create are deleted at the end.
3. Neither -- an embedded, in-process API server, the one ``EnvironmentOptions.embedded`` names
   (any :class:`EmbeddedServerFactory`; this project's stand-in for kube-apiserver is
   ``apiserver.EmbeddedServerOptions``: HTTPS, watches, CRDs, admission webhooks, starts in
   milliseconds and needs nothing installed). The framework ships no server of its own, so
   production code never carries one.

``EnvironmentOptions(backend=...)`` forces one instead.

Using it directly
-----------------
``EnvironmentOptions(crd_paths=["config/crd"], embedded=apiserver.EmbeddedServerOptions())``
starts the project's embedded server with the CRDs installed; here the environment attaches to
the API server of ``kubeconfig`` instead:

>>> import asyncio
>>> from runtime.envtest import Environment, EnvironmentOptions, unique_namespace_name
>>> async def main() -> None:
...     options = EnvironmentOptions(backend="existing", existing_kubeconfig=kubeconfig)
...     async with Environment(options) as env:
...         namespace = await env.create_namespace(unique_namespace_name("envtest example"))
...         print(env.backend, env.owns_cluster, namespace["metadata"]["name"].startswith("envtest-example-"))
...         print(env.url.startswith("https://"), env.kubeconfig_path.is_file())
...         async with env.client() as api:  # a kubernetes_asyncio ApiClient
...             print(type(api).__name__)
...     # Stopped: the namespaces it created are deleted; an existing cluster stays up.
>>> asyncio.run(main())
existing False True
True True
ApiClient

``env.kubeconfig_path`` is what subprocesses need (``kubectl --kubeconfig <path> get crds``).
``env.install_crds(...)`` returns once the CRDs are Established *and* listed in discovery, so a
client may use them at once; ``env.install_webhook_configurations(...)``,
``env.create_namespace(...)`` and ``env.uninstall_crds(...)`` complete the set.

With pytest
-----------
``tests/conftest.py`` provides ``env`` (one environment per session), ``namespace`` (a fresh
namespace per test), ``api_client`` and ``kubeconfig_path``. Async tests that use them run in the
session's event loop automatically.

Running the embedded server by hand
-----------------------------------
``cpo dev-apiserver --kubeconfig-out /tmp/kc`` then ``kubectl --kubeconfig /tmp/kc get ns``.

Useful variables: ``KUBEBUILDER_CONTROLPLANE_START_TIMEOUT`` / ``..._STOP_TIMEOUT`` (Go
durations, real binaries), ``KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT=true`` (show the binaries'
logs instead of keeping them in the working folder).
"""

from .backends import (
    BackendChoice,
    BackendName,
    BackendSelectionError,
    EmbeddedServer,
    EmbeddedServerFactory,
    find_binaries,
    select_backend,
)
from .binaries import ControlPlaneBinaries, ProcessStartError
from .environment import Environment, unique_namespace_name
from .kubeconfig import KubeconfigError, build_kubeconfig, load_kubeconfig, write_kubeconfig
from .manifests import load_manifests
from .options import EnvironmentOptions, ResolvedOptions

__all__ = [
    "BackendChoice",
    "BackendName",
    "BackendSelectionError",
    "ControlPlaneBinaries",
    "EmbeddedServer",
    "EmbeddedServerFactory",
    "Environment",
    "EnvironmentOptions",
    "KubeconfigError",
    "ProcessStartError",
    "ResolvedOptions",
    "build_kubeconfig",
    "find_binaries",
    "load_kubeconfig",
    "load_manifests",
    "select_backend",
    "unique_namespace_name",
    "write_kubeconfig",
]
