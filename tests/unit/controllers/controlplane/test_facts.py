"""What the ControlPlane controller reads of a Machine and its Node
(controllers/controlplane/facts.py): when the Node stopped being Ready."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from api.controlplane import ControlPlaneSpec
from controllers.controlplane.facts import machine_info
from controllers.controlplane.status import (
    unready_beyond_grace,
)

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def test_the_controller_reads_when_a_machines_node_stopped_being_ready() -> None:
    spec = ControlPlaneSpec.model_validate(
        {
            "replicas": 3,
            "template": {"spec": {"providerSpec": {"value": {"kind": "LocalMachineProviderSpec"}}}},
        }
    )
    machine = {
        "metadata": {"name": "ma", "creationTimestamp": "2026-01-01T10:00:00Z"},
        "status": {"phase": "Running", "nodeRef": {"name": "node-a"}},
    }
    node = {
        "status": {
            "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T11:58:00Z"}]
        }
    }
    info = machine_info(spec, machine, {"node-a": node}, None)
    assert not info.ready and info.not_ready_since == datetime(2026, 1, 1, 11, 58, tzinfo=UTC)
    assert [u.name for u in unready_beyond_grace(1, [info], now=NOW)] == []
    assert [u.name for u in unready_beyond_grace(1, [info], now=NOW + timedelta(minutes=3))] == ["ma"]
    gone = machine_info(spec, machine, {}, None)
    assert gone.not_ready_since is None and gone.created == datetime(2026, 1, 1, 10, tzinfo=UTC)
