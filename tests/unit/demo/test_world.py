"""The demo world's command lines: what :class:`demo.world.DemoWorld` passes to its provider."""

from __future__ import annotations

from pathlib import Path

from cli.__main__ import build_parser
from demo.world import DemoWorld


def provider_args(world: DemoWorld) -> dict[str, object]:
    argv = world.provider_argv()
    assert argv[1:4] == ["-m", "cli", "localmachine"]
    return vars(build_parser().parse_args(argv[3:]))


def test_a_capped_world_runs_its_provider_with_that_many_hosts_per_domain(tmp_path: Path) -> None:
    args = provider_args(DemoWorld(tmp_path, realistic=True, max_instances_per_domain=1))
    assert args["max_instances_per_domain"] == 1
    assert args["realistic"] is True


def test_a_world_has_no_host_limit_by_default(tmp_path: Path) -> None:
    args = provider_args(DemoWorld(tmp_path))
    assert args["max_instances_per_domain"] is None
    assert args["namespace"] == "demo"


def test_a_world_without_static_pods_runs_its_provider_with_no_static_pods(tmp_path: Path) -> None:
    assert provider_args(DemoWorld(tmp_path, static_pods=False))["static_pods"] is False
    assert provider_args(DemoWorld(tmp_path))["static_pods"] is True
