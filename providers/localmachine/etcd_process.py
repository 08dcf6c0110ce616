"""Real etcd member processes on loopback: bootstrap, join as a learner, stop, fault injection, re-attach.

:class:`EtcdSupervisor` is what the ``localmachine`` provider uses to turn a Machine into an etcd
member. Every member lives in its own folder under a state directory::

    <state_dir>/<name>/member.json   the state file: ports, URLs, command line, pid + start time
    <state_dir>/<name>/data/         etcd's --data-dir
    <state_dir>/<name>/etcd.log      etcd's output

Example (two members, the second joining as a learner and promoted once caught up; a third would
join the same way):

>>> import asyncio
>>> from controllers.etcd.client import EtcdClient, LearnerNotInSync, UnhealthyCluster
>>> from providers.localmachine.etcd_process import EtcdSupervisor
>>> async def retry(call, *retryable):
...     while True:
...         try:
...             return await call()
...         except retryable:  # etcd says "not yet": ask again
...             await asyncio.sleep(0.5)
>>> async def main() -> None:
...     supervisor = EtcdSupervisor(tmp_path / "etcd-state")
...     try:
...         first = await supervisor.bootstrap("m0")
...         async with EtcdClient([first.client_url]) as etcd:
...             # member add --learner, then start with --initial-cluster-state existing
...             member = await retry(lambda: supervisor.join("m1", etcd), UnhealthyCluster)
...             await retry(lambda: etcd.promote(member.member_id), LearnerNotInSync)
...             print(sorted((m.name, m.is_learner) for m in await etcd.member_list()))
...     finally:
...         await supervisor.stop_all()
>>> asyncio.run(main())
[('m0', False), ('m1', False)]

etcd before 3.6 allows one learner at a time (:class:`~controllers.etcd.client.TooManyLearners`),
so a second join waits for the first learner's promotion unless
:attr:`EtcdProcessOptions.max_learners` raises the limit on an etcd that has the flag.

Ports and start-up
------------------
Client and peer ports are picked free on the host (port 0 probing). Another process can take a
port between the probe and etcd's bind; a start that fails on "address already in use" is retried
with new ports (a join first removes the member it added). With a :class:`MemberPlacement`
(the provider's realistic mode) each member instead gets an address of its own at fixed ports,
an etcd name and TLS flags from it, and a retry asks the placement again (a new address, or the
same one when the member's host is fixed). A member counts as started once its
client port answers ``/v3/maintenance/status`` and it knows a leader.

Faults
------
:meth:`EtcdSupervisor.kill` (SIGKILL, a crash), :meth:`~EtcdSupervisor.pause` (SIGSTOP, a hung
member that holds its ports and answers nothing) and :meth:`~EtcdSupervisor.resume` (SIGCONT)
return once the kernel has acted, so a caller can check the effect at once.
:meth:`~EtcdSupervisor.stop` sends SIGTERM (with SIGCONT, so a paused member sees it), then SIGKILL
after the grace period.

Restart safety
--------------
The state file records the pid *and* the process start time (field 22 of ``/proc/<pid>/stat``), so
a recycled pid is never taken for our etcd. A new supervisor on the same state directory (a
restarted provider) re-attaches: :meth:`EtcdSupervisor.get` reports a recorded process that is
still alive as running, and :meth:`~EtcdSupervisor.bootstrap`, :meth:`~EtcdSupervisor.join` and
:meth:`~EtcdSupervisor.start` of a running member return it instead of starting a duplicate. A
recorded process that is gone (or a zombie) is cleaned up: its pid is dropped from the state file,
its data is kept, and :meth:`~EtcdSupervisor.start` brings it back with the same command line.

A join records the member's URLs *before* its ``member add`` (the record is then
:attr:`~MemberProcess.adding`): a supervisor killed while the add was on the wire, or an add whose
answer was lost, leaves etcd with a learner that nobody would start, and etcd before 3.6 takes no
other learner while it is there. The next :meth:`~EtcdSupervisor.join` of that name looks for a
member with the recorded peer URL and starts it if etcd has it, or adds it afresh if not. An add
etcd refused outright (another learner, the strict reconfiguration check) leaves no record. The
join's ``announce`` callback runs between that record and the add, so the caller can publish
the peer URL (the provider annotates its Machine) before etcd has the member.

No etcd outlives its parent
---------------------------
Each etcd runs in its own session and process group, so a terminal's Ctrl-C or a signal to the
test runner's group does not reach it behind the supervisor's back. As a safety net for crashes
(where no ``finally`` runs), :attr:`EtcdProcessOptions.die_with_parent` (on by default) asks Linux
to SIGKILL the child when its parent dies: ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` through ctypes in
the child between fork and exec. Linux ties this to the *thread* that forked, so start members from
a thread that lives as long as the process (the event loop's). With it on, re-attaching works
within one Python process (a new supervisor object, as a restarted provider in tests); a provider
that must survive its own process being restarted turns it off and relies on the state files. On
other systems the option does nothing.

:func:`spawned_processes` lists every etcd this Python process started, for leak checks.

Concurrency: one supervisor per state directory, and one operation at a time per member.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from controllers.etcd.client import (
    EtcdClient,
    EtcdClientOptions,
    EtcdCluster,
    EtcdError,
    MemberAddResult,
    NotEnoughStartedMembers,
    PeerURLExists,
    TooManyLearners,
    UnhealthyCluster,
)
from providers.localmachine.etcd_binary import find_etcd_binary
from runtime.localproc import free_port, render_flags, url_host

STATE_FILE = "member.json"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_START_TIMEOUT = 30.0
DEFAULT_STOP_GRACE_PERIOD = 10.0
_START_ATTEMPTS = 3
_POLL_INTERVAL = 0.05
_KILL_WAIT = 10.0
_LOG_TAIL_LINES = 20
_NAME = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")
_PR_SET_PDEATHSIG = 1

FlagOverrides = Mapping[str, str | Sequence[str] | None]
_REFUSED = (TooManyLearners, UnhealthyCluster, NotEnoughStartedMembers, PeerURLExists)
"""What etcd answers to a member add it did not make."""
ClusterState = Literal["new", "existing"]


class EtcdProcessError(RuntimeError):
    """An etcd member could not be started, stopped or found; the message says which and why."""


# ---------------------------------------------------------------------------------------------- processes


def _read_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start time in clock ticks after boot) of ``pid`` from ``/proc``; None if gone."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm (field 2) is in parentheses and may contain spaces or ")"; the fields after it start at 3.
    fields = data[data.rindex(")") + 2 :].split()
    return fields[0], int(fields[19])


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    """A process as (pid, start time): unlike a bare pid, it never matches a later process with that pid."""

    pid: int
    start_time: int
    """Field 22 of ``/proc/<pid>/stat`` (clock ticks after boot)."""

    @classmethod
    def of(cls, pid: int) -> ProcessIdentity | None:
        stat = _read_stat(pid)
        return None if stat is None else cls(pid, stat[1])

    def state(self) -> str | None:
        """The kernel's state letter (``R``, ``S``, ``T`` stopped, ``Z`` zombie...), or None when gone."""
        child = _SPAWNED.get(self.pid)
        if child is not None and child[0] == self:
            child[1].poll()  # reaps our own exited child, so it does not linger as a zombie
        stat = _read_stat(self.pid)
        if stat is None or stat[1] != self.start_time:
            return None
        return stat[0]

    def alive(self) -> bool:
        """Running or stopped; a zombie counts as dead."""
        state = self.state()
        return state is not None and state not in ("Z", "X", "x")

    def stopped(self) -> bool:
        """Stopped by a signal (SIGSTOP)."""
        return self.state() in ("T", "t")

    def signal(self, signum: int) -> bool:
        """Send ``signum`` if this very process is alive; returns whether it was sent."""
        if not self.alive():
            return False
        try:
            os.kill(self.pid, signum)
        except ProcessLookupError:
            return False
        return True


# Every etcd this Python process started, by pid; keeping the Popen objects also lets us reap them.
_SPAWNED: dict[int, tuple[ProcessIdentity, subprocess.Popen[bytes]]] = {}


def spawned_processes() -> list[ProcessIdentity]:
    """Every etcd process this Python process has started (alive or not), oldest first."""
    return [identity for identity, _ in _SPAWNED.values()]


def recorded_processes(state_dir: Path, member: str = "*") -> list[ProcessIdentity]:
    """The live etcd processes the state files under ``state_dir`` (``<cluster>/<member>/``) record;
    ``member`` narrows them to the members of that name (a Machine's, with the local provider).

    Members outlive a provider on purpose; this is how whoever owns a state directory (a test, the
    demo, the chaos campaign) finds them to stop them for good, or to signal one behind the
    provider's back.
    """
    found = []
    for state_file in sorted(state_dir.glob(f"*/{member}/{STATE_FILE}")):
        with contextlib.suppress(OSError, ValueError):
            raw = json.loads(state_file.read_text())
            if raw.get("pid") is not None and raw.get("startTime") is not None:
                process = ProcessIdentity(int(raw["pid"]), int(raw["startTime"]))
                if process.alive():
                    found.append(process)
    return found


def die_with_parent_hook() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes Linux SIGKILL the child when its parent dies, or None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    parent = os.getpid()

    def set_parent_death_signal() -> None:
        # Runs in the child between fork and exec: only the syscall, nothing that may take a lock.
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            # The parent died before prctl took effect: the signal will never come, so go now.
            os._exit(1)

    return set_parent_death_signal


# ---------------------------------------------------------------------------------------------- options


@dataclass(frozen=True)
class EtcdServerTLS:
    """The files for serving etcd's client port over TLS."""

    cert_file: Path
    """The serving certificate (``--cert-file``); it must name the member's host (127.0.0.1). With
    ``client_ca_file`` it needs the clientAuth usage too: etcd 3.5's JSON gateway presents it to the
    member's own gRPC server."""
    key_file: Path
    """Its private key (``--key-file``)."""
    client_ca_file: Path | None = None
    """When set, clients must present a certificate signed by this CA (``--client-cert-auth``)."""

    def check(self) -> None:
        for label, path in (
            ("cert_file", self.cert_file),
            ("key_file", self.key_file),
            ("client_ca_file", self.client_ca_file),
        ):
            if path is not None and not Path(path).is_file():
                raise ValueError(f"EtcdServerTLS.{label}: {path} is not a file")

    def flags(self) -> dict[str, list[str]]:
        flags = {"cert-file": [str(self.cert_file)], "key-file": [str(self.key_file)]}
        if self.client_ca_file is not None:
            flags["trusted-ca-file"] = [str(self.client_ca_file)]
            flags["client-cert-auth"] = ["true"]
        return flags


@dataclass(frozen=True)
class MemberPlacement:
    """Where members listen when each gets an address of its own (the provider's realistic mode),
    instead of free ports on :attr:`EtcdProcessOptions.host`."""

    allocate_host: Callable[[str], str]
    """The address of a new member of a name (the record's, see :meth:`EtcdSupervisor.join`);
    called synchronously right before its record is written, so within one event loop no two
    members get the same one."""
    member_name: Callable[[str], str]
    """The etcd member name of the member at an address (the provider names it after its Node)."""
    tls_flags: Callable[[Path, str, str], Mapping[str, list[str]]] | None = None
    """etcd's TLS flags for the member in a folder, at an address, of a name (certificates issued
    there as needed); with it both URLs are ``https``. Needs client options that authenticate."""
    client_port: int = 2379
    peer_port: int = 2380


@dataclass
class EtcdProcessOptions:
    """How :class:`EtcdSupervisor` runs etcd. ``None`` means "use the default" named per field."""

    binary: Path | str | None = None
    """The etcd executable. Defaults to :func:`~providers.localmachine.etcd_binary.find_etcd_binary`."""

    host: str | None = None
    """The loopback address members listen on. Defaults to ``127.0.0.1``."""

    start_timeout: float | None = None
    """Seconds a member may take to serve after its start. Defaults to 30."""

    stop_grace_period: float | None = None
    """Seconds between SIGTERM and SIGKILL when stopping. Defaults to 10."""

    no_fsync: bool | None = None
    """Run with ``--unsafe-no-fsync`` (test data is disposable; several times faster on slow disks).
    Defaults to true when the binary has the flag."""

    max_learners: int | None = None
    """Allow this many learners at once (``--experimental-max-learners``, etcd ≥ 3.6). Defaults to
    none: etcd's own limit, one learner. Setting it with an etcd that lacks the flag is an error."""

    die_with_parent: bool | None = None
    """Have Linux SIGKILL each member when this process dies (see the module docstring). Defaults to true."""

    extra_flags: FlagOverrides | None = None
    """More etcd flags, or overrides of ours (``None`` removes one), e.g. ``{"log-level": "warn"}``.
    Defaults to none."""

    client_tls: EtcdServerTLS | None = None
    """Serve clients over HTTPS with these files (peers stay plain HTTP on loopback). Defaults to
    none: plain HTTP. Needs ``client_options`` that trust the serving certificate."""

    client_options: EtcdClientOptions | None = None
    """How the supervisor's own readiness checks connect. Defaults to a 2 s timeout, plain HTTP;
    required with ``client_tls``."""

    def with_defaults(self) -> ResolvedEtcdProcessOptions:
        """Fill in every unset field and check them; the one place where the defaults above are applied.

        Runs ``etcd --help`` once to learn which optional flags the binary has.
        """
        binary = find_etcd_binary() if self.binary is None else Path(self.binary)
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            raise ValueError(f"EtcdProcessOptions.binary: {binary} is not an executable file")
        help_text = _help_text(binary)
        flags = {
            line.strip().split()[0].split("=")[0]
            for line in help_text.splitlines()
            if line.strip().startswith("--")
        }
        no_fsync = ("--unsafe-no-fsync" in flags) if self.no_fsync is None else self.no_fsync
        if no_fsync and "--unsafe-no-fsync" not in flags:
            raise ValueError(
                f"EtcdProcessOptions.no_fsync: {binary} has no --unsafe-no-fsync; leave it unset"
            )
        max_learners_flag: str | None = None
        if self.max_learners is not None:
            if self.max_learners < 1:
                raise ValueError(
                    f"EtcdProcessOptions.max_learners must be at least 1, got {self.max_learners}"
                )
            for candidate in ("--max-learners", "--experimental-max-learners"):
                if candidate in flags:
                    max_learners_flag = candidate
                    break
            else:
                raise ValueError(
                    f"EtcdProcessOptions.max_learners: {binary} (etcd {_version(binary)}) cannot raise the "
                    f"learner limit (the flag came with etcd 3.6); leave it unset or use a newer etcd"
                )
        if self.client_tls is not None:
            if self.client_options is None:
                raise ValueError(
                    "EtcdProcessOptions.client_tls needs client_options (ca_file, and cert_file/key_file "
                    "when client_ca_file is set) so the supervisor can check that members serve"
                )
            self.client_tls.check()
        start_timeout = DEFAULT_START_TIMEOUT if self.start_timeout is None else float(self.start_timeout)
        grace = DEFAULT_STOP_GRACE_PERIOD if self.stop_grace_period is None else float(self.stop_grace_period)
        if start_timeout <= 0 or grace < 0:
            raise ValueError("EtcdProcessOptions: start_timeout must be positive and stop_grace_period ≥ 0")
        return ResolvedEtcdProcessOptions(
            binary=binary,
            host=DEFAULT_HOST if self.host is None else self.host,
            start_timeout=start_timeout,
            stop_grace_period=grace,
            no_fsync=no_fsync,
            max_learners=self.max_learners,
            max_learners_flag=max_learners_flag,
            die_with_parent=True if self.die_with_parent is None else self.die_with_parent,
            extra_flags=dict(self.extra_flags or {}),
            client_tls=self.client_tls,
            client_options=self.client_options or EtcdClientOptions(timeout=2.0),
        )


@dataclass(frozen=True, slots=True)
class ResolvedEtcdProcessOptions:
    """:class:`EtcdProcessOptions` with every default applied."""

    binary: Path
    host: str
    start_timeout: float
    stop_grace_period: float
    no_fsync: bool
    max_learners: int | None
    max_learners_flag: str | None
    die_with_parent: bool
    extra_flags: dict[str, str | Sequence[str] | None]
    client_tls: EtcdServerTLS | None
    client_options: EtcdClientOptions


def _help_text(binary: Path) -> str:
    try:
        done = subprocess.run(
            [str(binary), "--help"], capture_output=True, timeout=30, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ValueError(f"cannot run {binary} --help: {err}") from err
    return (done.stdout + done.stderr).decode(errors="replace")


def _version(binary: Path) -> str:
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        done = subprocess.run([str(binary), "--version"], capture_output=True, timeout=30, check=False)
        for line in done.stdout.decode(errors="replace").splitlines():
            if line.startswith("etcd Version:"):
                return line.split(":", 1)[1].strip()
    return "unknown version"


# ---------------------------------------------------------------------------------------------- state


@dataclass(frozen=True, slots=True)
class MemberProcess:
    """One supervised member: what its state file records."""

    name: str
    directory: Path
    """``<state_dir>/<name>``: holds the state file, the data dir and the log."""
    client_url: str
    peer_url: str
    cluster_state: ClusterState
    """``new`` for the member that bootstrapped the cluster, ``existing`` for members that joined."""
    argv: tuple[str, ...]
    """The command line, reused by :meth:`EtcdSupervisor.start` after a stop or crash."""
    member_name: str | None = None
    """The etcd member name when it is not :attr:`name` (a :class:`MemberPlacement` names it)."""
    member_id: int | None = None
    """The etcd member id once known (at once for a join, from the first status for a bootstrap)."""
    learner: bool = False
    """Whether it joined as a learner (it may have been promoted since: ask etcd)."""
    process: ProcessIdentity | None = None
    """The running process, or None when it is not running."""

    @property
    def etcd_name(self) -> str:
        """The name etcd knows the member by."""
        return self.member_name or self.name

    @property
    def host(self) -> str:
        """The address the member listens on."""
        return url_host_of(self.client_url)

    @property
    def adding(self) -> bool:
        """Recorded before its ``member add`` and never started: etcd may or may not have the member
        (:meth:`EtcdSupervisor.join` finds out). It has no command line yet."""
        return not self.argv

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def log_path(self) -> Path:
        return self.directory / "etcd.log"

    @property
    def state_file(self) -> Path:
        return self.directory / STATE_FILE

    @property
    def client_port(self) -> int:
        return int(self.client_url.rsplit(":", 1)[1])

    @property
    def peer_port(self) -> int:
        return int(self.peer_url.rsplit(":", 1)[1])

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def running(self) -> bool:
        """Its process is alive (possibly stopped by SIGSTOP)."""
        return self.process is not None and self.process.alive()

    @property
    def paused(self) -> bool:
        """Its process is stopped by SIGSTOP."""
        return self.process is not None and self.process.stopped()

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "clientURL": self.client_url,
            "peerURL": self.peer_url,
            "clusterState": self.cluster_state,
            "argv": list(self.argv),
            "memberName": self.member_name,
            "memberID": None if self.member_id is None else str(self.member_id),
            "learner": self.learner,
            "pid": None if self.process is None else self.process.pid,
            "startTime": None if self.process is None else self.process.start_time,
        }

    @classmethod
    def from_json(cls, directory: Path, raw: Mapping[str, Any]) -> MemberProcess:
        pid, start_time = raw.get("pid"), raw.get("startTime")
        member_id = raw.get("memberID")
        state = raw["clusterState"]
        if state not in ("new", "existing"):
            raise ValueError(f"clusterState {state!r}")
        return cls(
            name=str(raw["name"]),
            directory=directory,
            client_url=str(raw["clientURL"]),
            peer_url=str(raw["peerURL"]),
            cluster_state=state,
            argv=tuple(str(arg) for arg in raw["argv"]),
            member_name=None if raw.get("memberName") is None else str(raw["memberName"]),
            member_id=None if member_id is None else int(member_id),
            learner=bool(raw.get("learner", False)),
            process=ProcessIdentity(int(pid), int(start_time))
            if pid is not None and start_time is not None
            else None,
        )


def _write_state(member: MemberProcess) -> None:
    member.directory.mkdir(parents=True, exist_ok=True)
    temporary = member.state_file.with_suffix(".tmp")
    temporary.write_text(json.dumps(member.to_json(), indent=2) + "\n", encoding="utf-8")
    # Atomic: a supervisor killed mid-write leaves the old or the new file, never half of one.
    os.replace(temporary, member.state_file)


# ---------------------------------------------------------------------------------------------- supervisor


class EtcdSupervisor:
    """Starts and tracks etcd member processes under ``state_dir`` (see the module docstring)."""

    def __init__(
        self,
        state_dir: Path | str,
        options: EtcdProcessOptions | ResolvedEtcdProcessOptions | None = None,
        placement: MemberPlacement | None = None,
    ) -> None:
        """``options`` may be already resolved, so that many supervisors (one per cluster, as the
        ``localmachine`` provider keeps them) share one ``etcd --help`` probe. ``placement`` gives
        each new member an address (and name, and certificate) of its own."""
        self.state_dir = Path(state_dir)
        self.placement = placement
        self.options = (
            options
            if isinstance(options, ResolvedEtcdProcessOptions)
            else (options or EtcdProcessOptions()).with_defaults()
        )

    # -- reading state

    def _directory(self, name: str) -> Path:
        if not _NAME.match(name):
            raise ValueError(
                f"etcd member name {name!r}: use lower-case letters, digits, '-' and '.', starting and "
                f"ending with a letter or digit (at most 253 characters), like a Kubernetes object name"
            )
        return self.state_dir / name

    def get(self, name: str) -> MemberProcess | None:
        """The member's record, or None if it has none; a recorded process that died is cleaned up."""
        directory = self._directory(name)
        try:
            raw = json.loads((directory / STATE_FILE).read_text(encoding="utf-8"))
            member = MemberProcess.from_json(directory, raw)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise EtcdProcessError(
                f"state file {directory / STATE_FILE} is unreadable ({err}); remove {directory} to forget "
                f"member {name!r}"
            ) from err
        if member.process is not None and not member.process.alive():
            member = replace(member, process=None)
            _write_state(member)
        return member

    def members(self) -> list[MemberProcess]:
        """Every member with a state file, by name (dead processes cleaned up as by :meth:`get`)."""
        if not self.state_dir.is_dir():
            return []
        found = []
        for entry in sorted(self.state_dir.iterdir()):
            if (entry / STATE_FILE).is_file() and _NAME.match(entry.name):
                member = self.get(entry.name)
                if member is not None:
                    found.append(member)
        return found

    def _require(self, name: str) -> MemberProcess:
        member = self.get(name)
        if member is None:
            raise EtcdProcessError(f"no etcd member {name!r} under {self.state_dir}")
        return member

    # -- starting

    def _argv(
        self,
        name: str,
        directory: Path,
        client_url: str,
        peer_url: str,
        initial_cluster: str,
        state: ClusterState,
    ) -> tuple[str, ...]:
        flags: dict[str, list[str]] = {
            "name": [name],
            "data-dir": [str(directory / "data")],
            "listen-client-urls": [client_url],
            "advertise-client-urls": [client_url],
            "listen-peer-urls": [peer_url],
            "initial-advertise-peer-urls": [peer_url],
            "initial-cluster": [initial_cluster],
            "initial-cluster-state": [state],
        }
        if state == "new":
            # A token unique per cluster keeps member ids of unrelated test clusters apart.
            flags["initial-cluster-token"] = [f"cpo-{uuid.uuid4().hex[:12]}"]
        if self.options.client_tls is not None:
            flags.update(self.options.client_tls.flags())
        if self.placement is not None and self.placement.tls_flags is not None:
            flags.update(self.placement.tls_flags(directory, url_host_of(client_url), name))
        if self.options.no_fsync:
            flags["unsafe-no-fsync"] = ["true"]
        if self.options.max_learners_flag is not None:
            flags[self.options.max_learners_flag.removeprefix("--")] = [str(self.options.max_learners)]
        return (str(self.options.binary), *render_flags(flags, self.options.extra_flags))

    def _urls(self, name: str) -> tuple[str, str, str | None]:
        """A new member's client URL, peer URL and etcd name (None: the record's name)."""
        placement = self.placement
        if placement is not None:
            host = placement.allocate_host(name)
            scheme = "http" if placement.tls_flags is None else "https"
            return (
                f"{scheme}://{url_host(host)}:{placement.client_port}",
                f"{scheme}://{url_host(host)}:{placement.peer_port}",
                placement.member_name(host),
            )
        host = self.options.host
        scheme = "http" if self.options.client_tls is None else "https"
        return (
            f"{scheme}://{url_host(host)}:{free_port(host)}",
            f"http://{url_host(host)}:{free_port(host)}",
            None,
        )

    async def bootstrap(self, name: str) -> MemberProcess:
        """Start ``name`` as the first member of a new one-member cluster (``--initial-cluster-state new``).

        If ``name`` already has a record, this is :meth:`start`: a running member is returned as it
        is, a stopped one restarted from its data.
        """
        existing = self.get(name)
        if existing is not None and not existing.adding:
            return await self.start(name)
        if existing is not None:
            # A join that never completed; with no cluster to join, nothing can have been added.
            await self._forget(name)
        directory = self._directory(name)
        last_error: EtcdProcessError | None = None
        for _ in range(_START_ATTEMPTS):
            client_url, peer_url, member_name = self._urls(name)
            etcd_name = member_name or name
            argv = self._argv(etcd_name, directory, client_url, peer_url, f"{etcd_name}={peer_url}", "new")
            member = MemberProcess(
                name, directory, client_url, peer_url, "new", argv, member_name=member_name
            )
            try:
                return await self._spawn(member)
            except _PortTaken as err:
                last_error = err
                await self._forget(name)
        raise EtcdProcessError(f"cannot bootstrap {name!r}: ports kept being taken; last: {last_error}")

    async def join(
        self,
        name: str,
        cluster: EtcdCluster,
        *,
        learner: bool = True,
        announce: Callable[[MemberProcess], Awaitable[None]] | None = None,
    ) -> MemberProcess:
        """Add ``name`` to ``cluster`` (as a learner unless ``learner=False``) and start it.

        The member is added first (``member add``, which raises
        :class:`~controllers.etcd.client.TooManyLearners` and the like before anything is started),
        then started with ``--initial-cluster-state existing`` and the initial cluster the add
        returned. If ``name`` already has a record, this is :meth:`start`; if that record is
        :attr:`~MemberProcess.adding` (an earlier join died around its add), the member etcd has
        under the recorded peer URL is started, or, when etcd has none, the join starts over.

        ``announce`` is awaited with the member's URLs before etcd is asked to add it (and again
        before a member found that way is started): the provider publishes the peer URL on its
        Machine there, so that a member etcd has is never one whose Machine nobody can name.

        etcd adds a member only when every voter has been connected to the leader for the last 5 s
        (its strict reconfiguration check), so a join within 5 s of a member's start or promotion
        raises :class:`~controllers.etcd.client.UnhealthyCluster`: retry it later.
        """
        existing = self.get(name)
        if existing is not None and not existing.adding:
            return await self.start(name)
        directory = self._directory(name)
        last_error: EtcdProcessError | None = None
        if existing is not None:
            added_before = await self._added_earlier(existing, cluster)
            if added_before is not None:
                try:
                    if announce is not None:
                        await announce(existing)
                    return await self._start_added(existing, added_before)
                except _PortTaken as err:
                    last_error = err
                    await cluster.remove(added_before.member.id)
            await self._forget(name)
        for _ in range(_START_ATTEMPTS):
            client_url, peer_url, member_name = self._urls(name)
            adding = MemberProcess(
                name,
                directory,
                client_url,
                peer_url,
                "existing",
                (),
                member_name=member_name,
                learner=learner,
            )
            # Recorded before the add: a supervisor that dies before the add's answer still knows
            # which peer URL it asked etcd to add, and the next join finds that member.
            _write_state(adding)
            if announce is not None:
                await announce(adding)
            try:
                added = await (cluster.add_learner([peer_url]) if learner else cluster.add_voter([peer_url]))
            except _REFUSED:
                await self._forget(name)  # etcd added nothing
                raise
            try:
                return await self._start_added(adding, added)
            except _PortTaken as err:
                last_error = err
                await cluster.remove(added.member.id)
                await self._forget(name)
        raise EtcdProcessError(f"cannot join {name!r}: ports kept being taken; last: {last_error}")

    async def _added_earlier(self, adding: MemberProcess, cluster: EtcdCluster) -> MemberAddResult | None:
        """The member etcd has under ``adding``'s peer URL, as if its add had just answered; None
        when etcd has none (the add never reached it) or another record of ours claims that URL."""
        if any(other.peer_url == adding.peer_url for other in self.members() if other.name != adding.name):
            return None
        members = tuple(await cluster.member_list())
        found = next((m for m in members if adding.peer_url in m.peer_urls and not m.started), None)
        return None if found is None else MemberAddResult(found, members)

    async def _start_added(self, adding: MemberProcess, added: MemberAddResult) -> MemberProcess:
        """Record the member etcd added for ``adding`` (its id and command line), then start it."""
        argv = self._argv(
            adding.etcd_name,
            adding.directory,
            adding.client_url,
            adding.peer_url,
            added.initial_cluster(adding.etcd_name),
            "existing",
        )
        member = replace(adding, argv=argv, member_id=added.member.id)
        # Recorded before the start: a supervisor that dies now still knows which member it added.
        _write_state(member)
        return await self._spawn(member)

    async def start(self, name: str, cluster: EtcdCluster | None = None) -> MemberProcess:
        """Make sure ``name`` runs: return it if it does, else start it again from its data and argv.

        With ``cluster``, a member that never served (its data directory holds no write-ahead log
        yet) is started with ``--initial-cluster`` rebuilt from the member list as it is now. At a
        first start etcd checks that list against its own and refuses any difference, and the
        list recorded at the add goes stale as soon as another member is added or removed: a
        member that died before it served would then never start.
        """
        member = self._require(name)
        if member.running:
            return member
        if member.adding:
            raise EtcdProcessError(
                f"etcd member {name!r} was being added and never started: join it again (join finds "
                "out whether etcd has it)"
            )
        if cluster is not None and not self.has_served(name):
            member = await self._with_membership_of_now(member, cluster)
        return await self._spawn(member)

    def has_served(self, name: str) -> bool:
        """Whether ``name`` ever served: etcd writes its write-ahead log once it has joined."""
        wal = self._require(name).data_dir / "member" / "wal"
        return wal.is_dir() and any(wal.glob("*.wal"))

    async def _with_membership_of_now(self, member: MemberProcess, cluster: EtcdCluster) -> MemberProcess:
        """``member`` recorded with ``--initial-cluster`` from the member list of now."""
        members = tuple(await cluster.member_list())
        found = next((m for m in members if member.peer_url in m.peer_urls), None)
        if found is None:
            raise EtcdProcessError(
                f"etcd member {member.name!r} never served and etcd has no member at "
                f"{member.peer_url} any more: delete its Machine, or join it again"
            )
        argv = self._argv(
            member.etcd_name,
            member.directory,
            member.client_url,
            member.peer_url,
            MemberAddResult(found, members).initial_cluster(member.etcd_name),
            "existing",
        )
        member = replace(member, argv=argv)
        _write_state(member)
        return member

    async def _spawn(self, member: MemberProcess) -> MemberProcess:
        member.data_dir.mkdir(parents=True, exist_ok=True)
        log_offset = member.log_path.stat().st_size if member.log_path.exists() else 0
        with member.log_path.open("ab") as log:
            try:
                # A plain Popen, not asyncio's subprocess: the member must outlive the event loop
                # that started it (re-attach, session-wide leak checks), and fork+exec is quick.
                popen = subprocess.Popen(  # noqa: ASYNC220
                    list(member.argv),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=die_with_parent_hook() if self.options.die_with_parent else None,
                )
            except OSError as err:
                raise EtcdProcessError(
                    f"cannot run {member.argv[0]} for member {member.name!r}: {err}"
                ) from err
        identity = ProcessIdentity.of(popen.pid) or ProcessIdentity(popen.pid, -1)
        _SPAWNED[popen.pid] = (identity, popen)
        member = replace(member, process=identity)
        _write_state(member)
        try:
            member_id = await self._wait_serving(member, log_offset)
        except BaseException:
            await self._terminate(member, grace_period=2.0)
            _write_state(replace(member, process=None))
            raise
        if member.member_id is None:
            member = replace(member, member_id=member_id)
            _write_state(member)
        return member

    async def _wait_serving(self, member: MemberProcess, log_offset: int) -> int:
        """Poll until the member answers a status and knows a leader; returns its member id."""
        assert member.process is not None
        deadline = time.monotonic() + self.options.start_timeout
        last = "no answer yet"
        async with EtcdClient([member.client_url], self.options.client_options) as client:
            while True:
                if not member.process.alive():
                    output = _log_since(member.log_path, log_offset)
                    if "address already in use" in output:
                        raise _PortTaken(f"{member.name}: a port was taken: {output[-500:]}")
                    raise EtcdProcessError(
                        f"etcd member {member.name!r} exited before it served; last output:\n"
                        f"{_tail(output)}\n(full log: {member.log_path})"
                    )
                try:
                    status = await client.endpoint_status(member.client_url)
                    if status.leader != 0:
                        return status.member_id
                    last = "it answers but knows no leader"
                except EtcdError as err:
                    last = str(err)
                if time.monotonic() >= deadline:
                    raise EtcdProcessError(
                        f"etcd member {member.name!r} did not serve within {self.options.start_timeout:g}s "
                        f"({last}); last output:\n{_tail(_log_since(member.log_path, log_offset))}"
                    )
                await asyncio.sleep(_POLL_INTERVAL)  # allow-sleep: poll interval of a deadline loop

    # -- stopping and faults

    async def _terminate(self, member: MemberProcess, *, grace_period: float) -> None:
        process = member.process
        if process is None or not process.alive():
            return
        process.signal(signal.SIGTERM)
        # A SIGSTOPped process keeps SIGTERM pending until it runs again.
        process.signal(signal.SIGCONT)
        if await _wait_gone(process, grace_period):
            return
        process.signal(signal.SIGKILL)
        if not await _wait_gone(process, _KILL_WAIT):
            raise EtcdProcessError(f"etcd member {member.name!r} (pid {process.pid}) survived SIGKILL")

    async def stop(self, name: str, *, grace_period: float | None = None) -> None:
        """Stop ``name``: SIGTERM, then SIGKILL after the grace period. Its data stays.

        etcd installs its SIGTERM handler a moment after it starts answering clients, so a member
        stopped right after its start may die of SIGTERM's default action instead of shutting down
        gracefully; its data is safe either way (the write-ahead log is written before it answers).
        """
        member = self._require(name)
        grace = self.options.stop_grace_period if grace_period is None else grace_period
        await self._terminate(member, grace_period=grace)
        _write_state(replace(member, process=None))

    async def remove(self, name: str) -> None:
        """Stop ``name`` and delete its folder (data, log, state). Its etcd membership is not touched."""
        if self.get(name) is not None:
            await self.stop(name)
        await self._forget(name)

    async def _forget(self, name: str) -> None:
        directory = self._directory(name)
        await asyncio.to_thread(shutil.rmtree, directory, ignore_errors=True)

    async def stop_all(self, *, grace_period: float | None = None) -> None:
        """Stop every member under the state directory, all at once."""
        await asyncio.gather(
            *(self.stop(member.name, grace_period=grace_period) for member in self.members())
        )

    def _process_of(self, name: str) -> ProcessIdentity | None:
        return self._require(name).process

    async def kill(self, name: str) -> bool:
        """SIGKILL ``name`` (a crash) and wait until it is gone; returns whether it was running.

        The record stays: :meth:`get` then reports it not running, and :meth:`start` restarts it.
        """
        process = self._process_of(name)
        if process is None or not process.signal(signal.SIGKILL):
            return False
        if not await _wait_until(lambda: not process.alive(), _KILL_WAIT):
            raise EtcdProcessError(f"etcd member {name!r} (pid {process.pid}) survived SIGKILL")
        return True

    async def pause(self, name: str) -> bool:
        """SIGSTOP ``name`` (a hung member: alive, answering nothing) and wait until the kernel has
        stopped it; returns whether it was running."""
        process = self._process_of(name)
        if process is None or not process.signal(signal.SIGSTOP):
            return False
        if not await _wait_until(lambda: process.stopped() or not process.alive(), _KILL_WAIT):
            raise EtcdProcessError(f"etcd member {name!r} (pid {process.pid}) did not stop on SIGSTOP")
        return True

    async def resume(self, name: str) -> bool:
        """SIGCONT ``name`` after :meth:`pause` and wait until it runs again; returns whether it was sent."""
        process = self._process_of(name)
        if process is None or not process.signal(signal.SIGCONT):
            return False
        if not await _wait_until(lambda: not process.stopped(), _KILL_WAIT):
            raise EtcdProcessError(f"etcd member {name!r} (pid {process.pid}) did not continue on SIGCONT")
        return True


def url_host_of(url: str) -> str:
    """The host of ``url`` without IPv6 brackets (``https://127.5.3.1:2379`` → ``127.5.3.1``)."""
    return urlsplit(url).hostname or ""


class _PortTaken(EtcdProcessError):
    """etcd could not bind a port we picked: another process took it between the probe and the bind."""


async def _wait_until(condition: Callable[[], bool], within: float) -> bool:
    """Poll ``condition`` until it holds (True) or ``within`` seconds have passed (False)."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(_POLL_INTERVAL)  # allow-sleep: poll interval of a deadline loop
    return True


async def _wait_gone(process: ProcessIdentity, within: float) -> bool:
    return await _wait_until(lambda: not process.alive(), within)


def _log_since(path: Path, offset: int) -> str:
    try:
        with path.open("rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")
    except OSError:
        return ""


def _tail(text: str, lines: int = _LOG_TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


__all__ = [
    "STATE_FILE",
    "EtcdProcessError",
    "EtcdProcessOptions",
    "EtcdServerTLS",
    "EtcdSupervisor",
    "MemberPlacement",
    "MemberProcess",
    "ProcessIdentity",
    "ResolvedEtcdProcessOptions",
    "spawned_processes",
]
