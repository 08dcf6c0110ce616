"""Shared pytest fixtures: one API server per test session, a fresh namespace per test.

Fixtures
--------
``env``             the session's :class:`runtime.envtest.Environment` (back end chosen from the
                    environment variables, see ``runtime/envtest/__init__.py``); started on first use.
``namespace``       a new namespace named after the test; deleted afterwards on an existing cluster.
``api_client``      a ``kubernetes_asyncio`` ApiClient for ``env``, closed after the test.
``client``          a :class:`runtime.client.Client` for ``env``, closed after the test; built with
                    the ``client_options`` fixture (None: the defaults), which a test module overrides
                    when it needs other options (a field manager of its own, say).
``kubeconfig_path`` the kubeconfig file of ``env``, for kubectl and other subprocesses.
``kube_http``       a :class:`tests.support.kubehttp.KubeHTTP` (raw HTTP) for ``env``, closed after the test.
``widgets_installed``  the test-only Widget CRD (tests/support/crds.py) installed once per session.
``machine_crds``    the project's CRDs (config/crd: ControlPlane; config/machine-api: Machine,
                    MachineHealthCheck) installed once per session; a CRD of the same name the
                    harness did not create (an existing cluster's own) is used as it is, or the
                    fixture stops saying which CRD and why (tests/support/crd_install.py). Never
                    replaced.
``kube``            the ``client`` fixture with ``machine_crds`` installed.
``provider_state_dir``  a fresh state directory for a ``localmachine`` provider, registered for the
                    session-end leak check; afterwards every member recorded there is killed.
``signals_left_as_found``  autouse: a test that leaves the process's stop-signal handling changed
                    (a disposition, the blocked mask, the wakeup fd) fails by its name, and the
                    handling is put back, so a later test in the same worker does not inherit it.

At the end of the session, :func:`pytest_sessionfinish` fails the run if any etcd process that a
test started (:func:`providers.localmachine.etcd_process.spawned_processes`, plus the members recorded in the
provider state directories registered with :func:`tests.support.localmachine.track_state_dir`)
is still alive.

Event loops (pytest-asyncio 1.x): ``env`` lives in the session-scoped loop, so everything that
touches it must run there too. :func:`pytest_collection_modifyitems` marks every async test that
(directly or through other fixtures) uses ``env`` with ``asyncio(loop_scope="session")``, so tests
need no marker of their own. An async fixture of yours that depends on these fixtures needs
``@pytest_asyncio.fixture(loop_scope="session")``.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from kubernetes_asyncio.client import ApiClient

from apiserver import EmbeddedServerOptions
from runtime.client import Client, ClientOptions
from runtime.envtest import Environment, EnvironmentOptions, unique_namespace_name
from tests.support.crds import widget_crd
from tests.support.kubehttp import KubeHTTP

# Fixtures whose values belong to the session loop: a test using any of them must run in that loop.
SESSION_LOOP_FIXTURES = frozenset({"env", "namespace", "api_client"})


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _signal_handling() -> tuple[object, ...]:
    """The process's handling of the stop signals: dispositions, the main thread's blocked mask,
    and the wakeup fd (read by setting it back at once; no loop runs between tests)."""
    wakeup = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(wakeup)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    return (*(signal.getsignal(s) for s in STOP_SIGNALS), frozenset(blocked) & set(STOP_SIGNALS), wakeup)


@pytest.fixture(autouse=True)
def signals_left_as_found() -> Iterator[None]:
    before = _signal_handling()
    handlers = [signal.getsignal(s) for s in STOP_SIGNALS]
    yield
    after = _signal_handling()
    if after != before:
        for signum, handler in zip(STOP_SIGNALS, handlers, strict=True):
            signal.signal(signum, handler)  # type: ignore[arg-type]
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        signal.set_wakeup_fd(before[-1])  # type: ignore[arg-type]
        pytest.fail(f"the test left the stop-signal handling changed: {before} -> {after}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    session_loop = pytest.mark.asyncio(loop_scope="session")
    for item in items:
        if not pytest_asyncio.is_async_test(item):
            continue
        if SESSION_LOOP_FIXTURES.isdisjoint(getattr(item, "fixturenames", ())):
            continue
        marker = item.get_closest_marker("asyncio")
        if marker is not None and ("loop_scope" in marker.kwargs or "scope" in marker.kwargs):
            continue  # the test chose its loop explicitly; a mismatch will be reported by pytest-asyncio
        # Prepended so it is the closest asyncio marker, ahead of the one auto mode adds.
        item.add_marker(session_loop, append=False)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def env() -> AsyncIterator[Environment]:
    async with Environment(EnvironmentOptions(embedded=EmbeddedServerOptions())) as environment:
        yield environment


@pytest.fixture(scope="session")
def kubeconfig_path(env: Environment) -> Path:
    return env.kubeconfig_path


@pytest_asyncio.fixture(loop_scope="session")
async def namespace(env: Environment, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    name = unique_namespace_name(request.node.name)
    await env.create_namespace(name, labels={"cpo.dev/test": "true"})
    yield name
    if not env.owns_cluster:
        # Clusters we created are thrown away whole; a shared cluster must not collect test namespaces.
        await env.delete_namespace(name)


@pytest_asyncio.fixture(loop_scope="session")
async def api_client(env: Environment) -> AsyncIterator[ApiClient]:
    async with env.client() as client:
        yield client


@pytest.fixture
def client_options() -> ClientOptions | None:
    return None


@pytest_asyncio.fixture(loop_scope="session")
async def client(env: Environment, client_options: ClientOptions | None) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(env.kubeconfig, options=client_options) as opened:
        yield opened


@pytest_asyncio.fixture(loop_scope="session")
async def kube_http(env: Environment) -> AsyncIterator[KubeHTTP]:
    async with KubeHTTP(env.kubeconfig) as opened:
        yield opened


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def widgets_installed(env: Environment) -> None:
    await env.install_crds([widget_crd()])


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def machine_crds(env: Environment) -> None:
    from tests.support.crd_install import ForeignCRD, install_own_crds
    from tests.support.localmachine import CRD_DIRS  # imported on use: see pytest_sessionfinish

    try:
        await install_own_crds(env, CRD_DIRS)
    except ForeignCRD as err:
        pytest.fail(str(err), pytrace=False)


@pytest_asyncio.fixture(loop_scope="session")
async def kube(client: Client, machine_crds: None) -> Client:
    return client


@pytest_asyncio.fixture(loop_scope="session")
async def provider_state_dir(tmp_path: Path) -> AsyncIterator[Path]:
    from tests.support.localmachine import kill_recorded, track_state_dir

    state_dir = track_state_dir(tmp_path / "machines")
    try:
        yield state_dir
    finally:
        await kill_recorded(state_dir)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session if an etcd process our tests started is still alive, and kill it.

    Scoped to the processes this Python process spawned (other etcds on the machine are not ours).
    The module is looked up, not imported: a session that never started an etcd has nothing to check.
    """
    process_module = sys.modules.get("providers.localmachine.etcd_process")
    if process_module is None:
        return
    survivors = [process for process in process_module.spawned_processes() if process.alive()]
    # Members a provider started in another process (a `cpo localmachine` subprocess) are known
    # only from the state files of the directories the tests registered.
    localmachine_support = sys.modules.get("tests.support.localmachine")
    if localmachine_support is not None:
        survivors += [
            process for process in localmachine_support.tracked_processes() if process not in survivors
        ]
    if not survivors:
        return
    for process in survivors:
        process.signal(signal.SIGKILL)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = (
        f"etcd processes started by the tests outlived them (killed now): "
        f"{', '.join(str(process.pid) for process in survivors)}"
    )
    if reporter is not None:
        reporter.write_line(message, red=True)
    else:
        print(message, file=sys.stderr)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
