"""Long, mostly waiting end-to-end scenarios, run beside their module's other tests.

Some scenarios spend most of their time proving that nothing happens: a settled control plane
writes nothing for 30 s, a converged spread stays still for 30 s. While they wait, the API server,
etcd and the operator are nearly idle, so the suite runs them in the background: a module starts
each of its background scenarios when the module starts, in a namespace and a provider state
directory of its own, and the test that owns the scenario awaits its end (and so reports its
failure, with the scenario's own traceback). Only *when* the scenario runs changes: its code,
its world and its assertions are those it would have in a test of its own.

A module opts in with a fixture per scenario and one autouse fixture that starts the scenarios
its selected tests ask for (a test deselected with ``-k`` starts nothing)::

    @pytest_asyncio.fixture(scope="module", loop_scope="session")
    async def rollout_run(env: Environment, machine_crds: None,
                          tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Task[None]]:
        async with run_in_background(env, tmp_path_factory, "rollout", rollout_scenario) as task:
            yield task

    start_background = background_starter("rollout_run")

    async def test_rollout(rollout_run: Task[None]) -> None:
        await rollout_run

Background scenarios run in the session's event loop, so they advance whenever a test of the
module awaits; keep them to scenarios whose waits are long and whose timeouts are generous, and
keep a module's foreground tests free of blocking calls. Their log records are captured with
whichever test is running at the time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from runtime.client import Client
from runtime.envtest import Environment, unique_namespace_name
from tests.support.localmachine import kill_recorded, track_state_dir

Scenario = Callable[[Client, str, Path], Coroutine[Any, Any, None]]
"""A scenario: it gets a client, its namespace and its provider state directory."""


@contextlib.asynccontextmanager
async def run_in_background(
    env: Environment, tmp_path_factory: pytest.TempPathFactory, hint: str, scenario: Scenario
) -> AsyncIterator[asyncio.Task[None]]:
    """``scenario`` started as a task in a namespace and a provider state directory of its own;
    when the block ends, a scenario still running is cancelled, its etcd members are killed and
    (on a cluster the session did not create) its namespace is deleted."""
    namespace = unique_namespace_name(hint)
    await env.create_namespace(namespace, labels={"cpo.dev/test": "true"})
    state_dir = track_state_dir(tmp_path_factory.mktemp(hint) / "machines")
    async with await Client.from_kubeconfig(env.kubeconfig) as client:
        task = asyncio.create_task(scenario(client, namespace, state_dir), name=f"background {hint}")
        try:
            yield task
        finally:
            if not task.done():
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await kill_recorded(state_dir)
    if not env.owns_cluster:
        await env.delete_namespace(namespace)


def background_starter(*fixtures: str) -> Any:
    """An autouse module fixture that starts, when the module starts, each of ``fixtures`` (the
    names of background-scenario fixtures) that a selected test of the module uses."""

    @pytest.fixture(scope="module", autouse=True)
    def start_background_scenarios(request: pytest.FixtureRequest) -> None:
        wanted = {
            name
            for item in request.session.items
            if getattr(item, "module", None) is request.module
            for name in getattr(item, "fixturenames", ())
            if name in fixtures
        }
        for name in sorted(wanted):
            request.getfixturevalue(name)

    return start_background_scenarios
