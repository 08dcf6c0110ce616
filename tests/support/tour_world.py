"""One whole world per end-to-end module, as a user has it, with what its tests drive it by.

:func:`tour_world` starts a :class:`demo.world.DemoWorld` (the embedded API server, ``cpo
localmachine`` and ``cpo run``, each a subprocess), opens a client, the observer (the quorum
monitor included) and a :class:`demo.tour.Tour` of ``replicas`` Machines on it, and stops it all
when the block ends, however it ends. The etcd client certificate is the world's own in realistic
mode. ::

    @pytest_asyncio.fixture(scope="module", loop_scope="module")
    async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[TourWorld]:
        async with tour_world(DemoWorld(tmp_path_factory.mktemp("w"), namespace="ns")) as started:
            yield started
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from demo.observer import Observer
from demo.tour import CONTROLPLANE, Tour
from demo.world import DemoWorld
from runtime.client import Client
from tests.support.localmachine import track_state_dir


@dataclass
class TourWorld:
    """A started world and what its tests drive it by."""

    world: DemoWorld
    client: Client
    observer: Observer
    tour: Tour


@contextlib.asynccontextmanager
async def tour_world(
    world: DemoWorld, *, replicas: int = 3, step_budget: float = 180.0
) -> AsyncIterator[TourWorld]:
    """``world`` started, with a client, the observer of ControlPlane ``demo`` and a fast tour of
    ``replicas`` Machines (``step_budget`` seconds per step); everything stopped afterwards."""
    track_state_dir(world.state_dir)
    try:
        await world.start()
        async with (
            await Client.from_kubeconfig(str(world.kubeconfig_path)) as client,
            Observer(
                client, world.namespace, controlplane=CONTROLPLANE, tls_secret=world.etcd_client_secret
            ) as observer,
        ):
            tour = Tour(
                world.kubeconfig_path,
                world.namespace,
                observer,
                replicas=replicas,
                fast=True,
                step_budget=step_budget,
                tls_secret=world.etcd_client_secret,
            )
            yield TourWorld(world, client, observer, tour)
    finally:
        await world.stop()
