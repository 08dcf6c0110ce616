"""Unit tests of runtime.envtest: back-end selection, option defaults, kubeconfigs, manifests,
the real-binaries argument building and child-process handling. No API server is started here."""

from __future__ import annotations

import base64
import json
import os
import re
import stat
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from cli.__main__ import SUBCOMMANDS, build_parser
from runtime.envtest import (
    BackendSelectionError,
    EnvironmentOptions,
    KubeconfigError,
    build_kubeconfig,
    load_kubeconfig,
    load_manifests,
    select_backend,
    unique_namespace_name,
    write_kubeconfig,
)
from runtime.envtest.binaries import (
    BinaryControlPlane,
    ControlPlaneBinaries,
    ManagedProcess,
    ProcessStartError,
    etcd_flags,
)
from runtime.envtest.kubeconfig import server_url
from runtime.envtest.options import parse_duration
from runtime.localproc import render_flags


def make_executable(path: Path, body: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def assets(tmp_path: Path) -> Path:
    folder = tmp_path / "assets"
    make_executable(folder / "kube-apiserver")
    make_executable(folder / "etcd")
    return folder


@pytest.fixture
def kubeconfig_file(tmp_path: Path) -> Path:
    return write_kubeconfig(build_kubeconfig("https://127.0.0.1:6443", b"CA", token="t"), tmp_path / "kc")


# ---------------------------------------------------------------------------- select_backend


def test_no_variables_select_the_embedded_server() -> None:
    choice = select_backend({})
    assert choice.backend == "embedded"
    assert choice.binaries is None and choice.kubeconfig_path is None


def test_empty_variables_count_as_unset() -> None:
    assert select_backend({"KUBEBUILDER_ASSETS": "", "CPO_TEST_KUBECONFIG": ""}).backend == "embedded"


def test_assets_folder_with_both_binaries_selects_real_binaries(assets: Path) -> None:
    choice = select_backend({"KUBEBUILDER_ASSETS": str(assets)})
    assert choice.backend == "binaries"
    assert choice.binaries == ControlPlaneBinaries(assets / "kube-apiserver", assets / "etcd")
    assert str(assets) in choice.reason


def test_real_binaries_win_over_an_existing_cluster(assets: Path, kubeconfig_file: Path) -> None:
    environ = {"KUBEBUILDER_ASSETS": str(assets), "CPO_TEST_KUBECONFIG": str(kubeconfig_file)}
    assert select_backend(environ).backend == "binaries"


def test_etcd_binary_variable_overrides_the_assets_etcd(assets: Path, tmp_path: Path) -> None:
    other_etcd = make_executable(tmp_path / "elsewhere" / "etcd")
    (assets / "etcd").unlink()
    choice = select_backend({"KUBEBUILDER_ASSETS": str(assets), "ETCD_BINARY": str(other_etcd)})
    assert choice.binaries is not None
    assert choice.binaries.etcd == other_etcd


def test_etcd_binary_may_be_a_command_name_on_path(assets: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    make_executable(bin_dir / "my-etcd")
    environ = {"KUBEBUILDER_ASSETS": str(assets), "ETCD_BINARY": "my-etcd", "PATH": str(bin_dir)}
    choice = select_backend(environ)
    assert choice.binaries is not None and choice.binaries.etcd == bin_dir / "my-etcd"


def test_missing_kube_apiserver_is_an_error_not_a_fallback(assets: Path) -> None:
    (assets / "kube-apiserver").unlink()
    with pytest.raises(BackendSelectionError, match=r"holds no executable 'kube-apiserver'"):
        select_backend({"KUBEBUILDER_ASSETS": str(assets)})


def test_missing_etcd_is_an_error(assets: Path) -> None:
    (assets / "etcd").unlink()
    with pytest.raises(BackendSelectionError, match=r"holds no executable 'etcd'"):
        select_backend({"KUBEBUILDER_ASSETS": str(assets)})


def test_non_executable_binary_is_an_error(assets: Path) -> None:
    (assets / "etcd").chmod(0o644)
    with pytest.raises(BackendSelectionError, match="etcd"):
        select_backend({"KUBEBUILDER_ASSETS": str(assets)})


def test_assets_variable_naming_no_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(BackendSelectionError, match="is not a folder"):
        select_backend({"KUBEBUILDER_ASSETS": str(tmp_path / "nope")})


def test_bad_etcd_binary_variable_is_an_error(assets: Path, tmp_path: Path) -> None:
    with pytest.raises(BackendSelectionError, match="ETCD_BINARY="):
        select_backend({"KUBEBUILDER_ASSETS": str(assets), "ETCD_BINARY": str(tmp_path / "missing-etcd")})


def test_test_kubeconfig_selects_the_existing_cluster(kubeconfig_file: Path) -> None:
    choice = select_backend({"CPO_TEST_KUBECONFIG": str(kubeconfig_file)})
    assert choice.backend == "existing"
    assert choice.kubeconfig_path == kubeconfig_file


def test_test_kubeconfig_naming_a_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(BackendSelectionError, match="does not exist"):
        select_backend({"CPO_TEST_KUBECONFIG": str(tmp_path / "missing")})


# ------------------------------------------------------------------------- option resolution


def test_resolve_fills_the_built_in_defaults() -> None:
    resolved = EnvironmentOptions(
        backend="existing", existing_kubeconfig=__file__, environ={}
    ).with_defaults()
    assert (resolved.start_timeout, resolved.stop_timeout, resolved.crd_install_timeout) == (60.0, 20.0, 30.0)
    assert resolved.attach_control_plane_output is False
    assert resolved.error_if_crd_path_missing is True


def test_resolve_reads_controller_runtime_variables_and_explicit_options_win() -> None:
    environ = {
        "KUBEBUILDER_CONTROLPLANE_START_TIMEOUT": "1m30s",
        "KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT": "5",
        "KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT": "true",
    }
    from_environ = EnvironmentOptions(
        backend="existing", existing_kubeconfig=__file__, environ=environ
    ).with_defaults()
    assert (from_environ.start_timeout, from_environ.stop_timeout) == (90.0, 5.0)
    assert from_environ.attach_control_plane_output is True
    explicit = EnvironmentOptions(
        backend="existing",
        existing_kubeconfig=__file__,
        environ=environ,
        start_timeout=7.0,
        attach_control_plane_output=False,
    ).with_defaults()
    assert explicit.start_timeout == 7.0
    assert explicit.attach_control_plane_output is False


def test_forced_backend_ignores_the_variables(assets: Path) -> None:
    resolved = EnvironmentOptions(
        backend="existing", existing_kubeconfig=__file__, environ={"KUBEBUILDER_ASSETS": str(assets)}
    ).with_defaults()
    assert resolved.choice.backend == "existing"
    assert resolved.choice.kubeconfig_path == Path(__file__)


def test_use_existing_cluster_falls_back_to_kubeconfig_variable(kubeconfig_file: Path) -> None:
    environ = {"KUBECONFIG": f"{kubeconfig_file}{os.pathsep}/ignored"}
    resolved = EnvironmentOptions(use_existing_cluster=True, environ=environ).with_defaults()
    assert resolved.choice.backend == "existing"
    assert resolved.choice.kubeconfig_path == kubeconfig_file


def test_use_existing_cluster_contradicting_backend_is_rejected() -> None:
    with pytest.raises(ValueError, match="contradicts"):
        EnvironmentOptions(use_existing_cluster=True, backend="embedded", environ={}).with_defaults()


def test_forcing_binaries_without_assets_explains_what_is_missing() -> None:
    with pytest.raises(BackendSelectionError, match="KUBEBUILDER_ASSETS"):
        EnvironmentOptions(backend="binaries", environ={}).with_defaults()


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90.0), ("1m30s", 90.0), ("500ms", 0.5), ("2h", 7200.0), ("12", 12.0)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "10x", "5s garbage"])
def test_parse_duration_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


# ------------------------------------------------------------------------------- kubeconfig


def test_build_and_write_kubeconfig_round_trip(tmp_path: Path) -> None:
    config = build_kubeconfig("https://127.0.0.1:1234", b"CA PEM", client_cert_pem=b"C", client_key_pem=b"K")
    path = write_kubeconfig(config, tmp_path / "sub" / "kubeconfig")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["kubeconfig"]  # no leftover partial file
    loaded = load_kubeconfig(path)
    assert loaded == config
    assert server_url(loaded) == "https://127.0.0.1:1234"
    user = loaded["users"][0]["user"]
    assert base64.b64decode(user["client-certificate-data"]) == b"C"


def test_build_kubeconfig_needs_credentials() -> None:
    with pytest.raises(ValueError):
        build_kubeconfig("https://x", b"CA")
    with pytest.raises(ValueError):
        build_kubeconfig("https://x", b"CA", client_cert_pem=b"C")


def test_load_kubeconfig_minifies_and_inlines_relative_files(tmp_path: Path) -> None:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.crt").write_bytes(b"the CA")
    (tmp_path / "certs" / "me.key").write_bytes(b"my key")
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "other",
        "clusters": [
            {"name": "c1", "cluster": {"server": "https://one", "certificate-authority": "certs/ca.crt"}},
            {"name": "c2", "cluster": {"server": "https://two"}},
        ],
        "users": [
            {"name": "u1", "user": {"client-certificate-data": "Qw==", "client-key": "certs/me.key"}},
            {"name": "u2", "user": {"token": "x"}},
        ],
        "contexts": [
            {"name": "mine", "context": {"cluster": "c1", "user": "u1", "namespace": "ns"}},
            {"name": "other", "context": {"cluster": "c2", "user": "u2"}},
        ],
    }
    (tmp_path / "config").write_text(yaml.safe_dump(document))
    loaded = load_kubeconfig(tmp_path / "config", context="mine")
    assert loaded["current-context"] == "mine"
    assert [c["name"] for c in loaded["clusters"]] == ["c1"]
    cluster = loaded["clusters"][0]["cluster"]
    assert "certificate-authority" not in cluster
    assert base64.b64decode(cluster["certificate-authority-data"]) == b"the CA"
    assert base64.b64decode(loaded["users"][0]["user"]["client-key-data"]) == b"my key"
    assert loaded["contexts"][0]["context"]["namespace"] == "ns"
    assert server_url(load_kubeconfig(tmp_path / "config")) == "https://two"


def test_load_kubeconfig_reports_unknown_context_and_missing_files(
    tmp_path: Path, kubeconfig_file: Path
) -> None:
    with pytest.raises(KubeconfigError, match='no context named "nope"'):
        load_kubeconfig(kubeconfig_file, context="nope")
    with pytest.raises(KubeconfigError, match="cannot read kubeconfig"):
        load_kubeconfig(tmp_path / "absent")


# -------------------------------------------------------------------------------- manifests

CRD_A = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "a.x"},
}
CRD_B: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "b.x"},
}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}


def test_load_manifests_reads_folders_files_multi_documents_and_lists(tmp_path: Path) -> None:
    folder = tmp_path / "crds"
    folder.mkdir()
    (folder / "1.yaml").write_text(yaml.safe_dump_all([CRD_A, SERVICE]))
    (folder / "2.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [CRD_B]}))
    (folder / "notes.txt").write_text("not a manifest")
    (folder / "nested").mkdir()
    (folder / "nested" / "3.yaml").write_text(yaml.safe_dump(CRD_A))
    found = load_manifests([folder, CRD_B], kinds={"CustomResourceDefinition"})
    assert [obj["metadata"]["name"] for obj in found] == ["a.x", "b.x", "b.x"]
    found[2]["metadata"]["name"] = "changed"
    assert CRD_B["metadata"]["name"] == "b.x"  # the caller's object is not shared


def test_load_manifests_missing_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_manifests([tmp_path / "missing"], kinds={"CustomResourceDefinition"})
    assert load_manifests([tmp_path / "missing"], kinds={"X"}, error_if_missing=False) == []


def test_unique_namespace_names_are_valid_labels() -> None:
    label = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    names = {unique_namespace_name("test_Thing[param-1/x]" * 10) for _ in range(20)}
    assert len(names) == 20
    for name in names:
        assert label.match(name) and len(name) <= 63
    assert unique_namespace_name("___").startswith("test-")


# --------------------------------------------------------------------- real-binaries arguments


def test_render_flags_applies_overrides_and_removals() -> None:
    defaults = {"a": ["1"], "b": ["2"], "c": ["3"]}
    argv = render_flags(defaults, {"--b": "20", "c": None, "d": ["x", "y"]})
    assert argv == ["--a=1", "--b=20", "--d=x", "--d=y"]


def test_etcd_flags_skip_fsync_only_when_supported(tmp_path: Path) -> None:
    urls = {"client_url": "http://127.0.0.1:1", "peer_url": "http://127.0.0.1:2"}
    assert "--unsafe-no-fsync=true" in render_flags(etcd_flags(data_dir=tmp_path, **urls, no_fsync=True))
    flags = etcd_flags(data_dir=tmp_path, **urls, no_fsync=False)
    assert "unsafe-no-fsync" not in flags
    assert flags["initial-cluster"] == ["default=http://127.0.0.1:2"]


def test_control_plane_prepares_envtest_style_api_server_arguments(tmp_path: Path) -> None:
    plane = BinaryControlPlane(
        ControlPlaneBinaries(tmp_path / "kube-apiserver", tmp_path / "etcd"),
        apiserver_flags={"v": "4", "allow-privileged": None},
    )
    plane.workdir = tmp_path / "work"
    argv = plane.prepare("http://127.0.0.1:2379")
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in argv[1:])
    port = flags["secure-port"]
    assert argv[0] == str(tmp_path / "kube-apiserver")
    assert plane.url == f"https://127.0.0.1:{port}"
    assert flags["etcd-servers"] == "http://127.0.0.1:2379"
    assert flags["bind-address"] == "127.0.0.1"
    assert flags["authorization-mode"] == "RBAC"
    assert flags["disable-admission-plugins"] == "ServiceAccount"
    assert flags["service-account-issuer"] == f"https://127.0.0.1:{port}/"
    assert flags["v"] == "4"
    assert "allow-privileged" not in flags
    for file_flag in (
        "tls-cert-file",
        "tls-private-key-file",
        "client-ca-file",
        "service-account-key-file",
        "service-account-signing-key-file",
    ):
        assert Path(flags[file_flag]).is_file(), file_flag

    ca = x509.load_pem_x509_certificate(plane.ca_pem)
    serving = x509.load_pem_x509_certificate(Path(flags["tls-cert-file"]).read_bytes())
    assert serving.issuer == ca.subject
    sans = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "127.0.0.1" in {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}

    kubeconfig = plane.kubeconfig()
    user = kubeconfig["users"][0]["user"]
    admin = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
    client_ca = x509.load_pem_x509_certificate(Path(flags["client-ca-file"]).read_bytes())
    assert admin.issuer == client_ca.subject
    assert admin.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "envtest-admin"
    assert admin.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:masters"
    usage = admin.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.CLIENT_AUTH in usage
    assert server_url(kubeconfig) == plane.url


# ------------------------------------------------------------------------ process handling


def python_child(tmp_path: Path, name: str, code: str) -> list[str]:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(code))
    return [sys.executable, str(script)]


async def test_process_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    ready_file = tmp_path / "ready"
    argv = python_child(
        tmp_path,
        "stubborn",
        f"""
        import pathlib, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        pathlib.Path({str(ready_file)!r}).touch()
        while True:
            time.sleep(1)  # allow-sleep: the child process under test idles, ignoring SIGTERM
        """,
    )
    process = ManagedProcess("stubborn", argv, tmp_path / "logs" / "stubborn.log")

    async def ready() -> bool:
        return ready_file.exists()

    await process.start(ready, ready_within=10)
    assert process.running
    code = await process.stop(grace_period=0.3)
    assert code == -9
    assert not process.running


async def test_process_stopped_by_sigterm_reports_its_exit(tmp_path: Path) -> None:
    argv = python_child(tmp_path, "polite", "import time\ntime.sleep(60)\n")  # allow-sleep: child
    process = ManagedProcess("polite", argv, tmp_path / "polite.log")

    async def ready() -> bool:
        return True

    await process.start(ready, ready_within=5)
    assert await process.stop(grace_period=10) == -15


async def test_process_exiting_before_ready_fails_with_its_output(tmp_path: Path) -> None:
    argv = python_child(
        tmp_path, "crash", "import sys\nprint('bad flag --frobnicate', flush=True)\nsys.exit(3)\n"
    )
    process = ManagedProcess("crasher", argv, tmp_path / "crash.log")

    async def never() -> bool:
        return False

    with pytest.raises(ProcessStartError, match=r"(?s)crasher exited with code 3.*bad flag --frobnicate"):
        await process.start(never, ready_within=30)


async def test_process_not_ready_in_time_is_stopped(tmp_path: Path) -> None:
    argv = python_child(tmp_path, "slow", "import time\ntime.sleep(60)\n")  # allow-sleep: child
    process = ManagedProcess("slow", argv, tmp_path / "slow.log")

    async def never() -> bool:
        return False

    with pytest.raises(ProcessStartError, match=r"not ready after 0\.3s"):
        await process.start(never, ready_within=0.3)
    assert not process.running


async def test_missing_binary_is_a_start_error(tmp_path: Path) -> None:
    process = ManagedProcess("ghost", [str(tmp_path / "no-such-binary")], tmp_path / "ghost.log")

    async def ready() -> bool:
        return True

    with pytest.raises(ProcessStartError, match="cannot run ghost"):
        await process.start(ready, ready_within=1)


# --------------------------------------------------------------------------------------- cli


def test_cli_dev_apiserver_arguments() -> None:
    args = build_parser().parse_args(["dev-apiserver", "--kubeconfig-out", "/tmp/kc", "--port", "6443"])
    assert args.command == "dev-apiserver"
    assert args.kubeconfig_out == Path("/tmp/kc")
    assert args.port == 6443
    assert args.crd == []
    assert "dev-apiserver" in SUBCOMMANDS


def test_cli_requires_a_subcommand_and_the_kubeconfig_path(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([])
    with pytest.raises(SystemExit):
        build_parser().parse_args(["dev-apiserver"])
    assert "--kubeconfig-out" in capsys.readouterr().err
