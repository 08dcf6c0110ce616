"""Fixtures for the tests with real etcd processes (``machine_crds``, ``kube`` and
``provider_state_dir``, which the end-to-end tests use too, are in tests/conftest.py).

``etcd_supervisor``  an :class:`~providers.localmachine.etcd_process.EtcdSupervisor` on a fresh state dir;
                     afterwards every member is stopped and the test fails if one survived.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from providers.localmachine.etcd_process import EtcdProcessOptions, EtcdSupervisor

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
