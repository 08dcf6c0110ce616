"""Fixtures for the tests with real etcd processes.

``etcd_supervisor``  an :class:`~providers.localmachine.etcd_process.EtcdSupervisor` on a fresh state dir;
                     afterwards every member is stopped and the test fails if one survived.
``machine_crds``     the project's CRDs (config/crd: Machine, MachineHealthCheck, ControlPlane)
                     installed once per session.
``kube``             the ``client`` fixture (tests/conftest.py) with ``machine_crds`` installed.
``provider_state_dir``  a fresh state directory for a ``localmachine`` provider, registered for the
                     session-end leak check; afterwards every member recorded there is killed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from providers.localmachine.etcd_process import EtcdProcessOptions, EtcdSupervisor
from runtime.client import Client
from runtime.envtest import Environment
from tests.support.localmachine import CRD_DIR, kill_recorded, track_state_dir

# Quick stops: members hold nothing worth a long graceful shutdown in tests.
TEST_GRACE_PERIOD = 5.0


def etcd_options(**overrides: object) -> EtcdProcessOptions:
    """Options for test members: a short stop grace period."""
    options = EtcdProcessOptions(stop_grace_period=TEST_GRACE_PERIOD)
    for field, value in overrides.items():
        setattr(options, field, value)
    return options


@pytest_asyncio.fixture
async def etcd_supervisor(tmp_path: Path) -> AsyncIterator[EtcdSupervisor]:
    supervisor = EtcdSupervisor(tmp_path / "etcd", etcd_options())
    try:
        yield supervisor
    finally:
        await supervisor.stop_all()
        survivors = [member.name for member in supervisor.members() if member.running]
        assert not survivors, f"etcd members still running after stop_all: {survivors}"


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def machine_crds(env: Environment) -> None:
    await env.install_crds([CRD_DIR])


@pytest_asyncio.fixture(loop_scope="session")
async def kube(client: Client, machine_crds: None) -> Client:
    return client


@pytest_asyncio.fixture(loop_scope="session")
async def provider_state_dir(tmp_path: Path) -> AsyncIterator[Path]:
    state_dir = track_state_dir(tmp_path / "machines")
    try:
        yield state_dir
    finally:
        await kill_recorded(state_dir)
