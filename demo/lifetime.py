"""How every process of a demo world ends, however its owner (``cpo demo``, a chaos campaign) ends.

The owner of a :class:`~demo.world.DemoWorld` is the Python process that started it. It can end
in three ways, and each has its own mechanism:

Stopped by a signal
    Ctrl-C (SIGINT), ``kill`` (SIGTERM) and a closed terminal (SIGHUP) are one request to stop
    (:class:`StopSignals`): the work under way is cancelled, the owner's ``finally`` stops the
    world in order (operator, provider, API server, then every etcd member) and the owner exits
    with 128 + the signal's number, as a shell reports a process a signal ended. A signal the
    owner inherited as ignored (``nohup``, a background job's SIGINT) stays ignored.

Killed outright (SIGKILL, an interpreter crash)
    No code of the owner runs. Each ``cpo`` child was started with a parent-death signal
    (:func:`die_with_parent`, Linux ``PR_SET_PDEATHSIG``), so the kernel SIGKILLs it when the
    owner dies. The kernel sends it when the *thread* that forked the child ends, so a world must
    be started from the thread whose event loop runs it for its whole life (``asyncio.run`` in the
    main thread, as ``cpo demo`` and the campaign do).

Left behind: the etcd members
    Members are the provider's children, not the owner's, and outlive the provider on purpose (a
    machine outlives its cloud controller; the campaign's provider-kill fault relies on it). Every
    process of a world carries two environment variables, set by the owner on its children and
    inherited by the provider's etcd members: :data:`WORLD_ENV` (the world's folder) and
    :data:`OWNER_ENV` (the owner's pid and start time, field 22 of ``/proc/<pid>/stat``, so a
    recycled pid never passes for the owner). :func:`end_abandoned_worlds` walks ``/proc``, groups
    the processes that carry them by world and SIGKILLs those of every world whose owner is gone;
    ``cpo demo`` and the campaign call it before they start a world, and say what they ended.
    The same walk lets an owner find every process of its own world when it stops it
    (:func:`world_processes`), members a crashed provider never recorded included.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from providers.localmachine.etcd_process import ProcessIdentity, die_with_parent_hook

WORLD_ENV = "CPO_DEMO_WORLD"
"""The world's folder, in the environment of each of its processes."""
OWNER_ENV = "CPO_DEMO_OWNER"
"""``<pid>:<start time>`` of the world's owner, in the environment of each of its processes."""
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
END_TIMEOUT = 20.0
POLL = 0.1

T = TypeVar("T")


# ---------------------------------------------------------------------------------------------- signals


class Stopped(Exception):
    """The owner got a stop signal; the work under way was cancelled."""

    def __init__(self, signum: signal.Signals) -> None:
        super().__init__(f"stopped by {signum.name}")
        self.signum = signum


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP as one request to stop, while the ``with`` block runs.

    Only work awaited through :meth:`interruptible` is cancelled by a signal; anything else (above
    all the world's teardown) runs to its end, and a signal that comes then is only recorded, so
    the next :meth:`interruptible` raises :class:`Stopped` at once. Further signals are ignored:
    the teardown has its own time limits.
    """

    def __init__(self) -> None:
        self.received: signal.Signals | None = None
        self._target: asyncio.Future[Any] | None = None
        self._installed: list[signal.Signals] = []

    def __enter__(self) -> StopSignals:
        loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) == signal.SIG_IGN:
                continue
            loop.add_signal_handler(signum, self._on_signal, signum)
            self._installed.append(signum)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        loop = asyncio.get_running_loop()
        for signum in self._installed:
            loop.remove_signal_handler(signum)
        self._installed.clear()

    @property
    def exit_code(self) -> int | None:
        """128 + the signal's number once one came (130, 143, 129), as shells report it."""
        return None if self.received is None else 128 + int(self.received)

    async def interruptible(self, work: Awaitable[T]) -> T:
        """Await ``work`` in a task that a stop signal cancels; then raise :class:`Stopped`."""
        if self.received is not None:
            if asyncio.iscoroutine(work):
                work.close()
            raise Stopped(self.received)
        task = asyncio.ensure_future(work)
        self._target = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            own_cancel = current is not None and current.cancelling() > 0
            if task.cancelled() and self.received is not None and not own_cancel:
                raise Stopped(self.received) from None
            raise
        finally:
            self._target = None

    def _on_signal(self, signum: signal.Signals) -> None:
        if self.received is not None:
            return
        self.received = signum
        if self._target is not None:
            self._target.cancel()


# ---------------------------------------------------------------------------------------------- children


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes Linux SIGKILL the child when its parent dies (None elsewhere):
    the provider's own (:func:`providers.localmachine.etcd_process.die_with_parent_hook`)."""
    return die_with_parent_hook()


def world_environment(directory: Path) -> dict[str, str]:
    """The marks the owner puts in its children's environment (see the module docstring)."""
    owner = ProcessIdentity.of(os.getpid())
    assert owner is not None  # this very process
    return {WORLD_ENV: str(directory), OWNER_ENV: f"{owner.pid}:{owner.start_time}"}


# ---------------------------------------------------------------------------------------------- /proc


@dataclass(frozen=True)
class WorldProcess:
    """A process that carries a world's marks."""

    process: ProcessIdentity
    world: Path
    owner: ProcessIdentity | None
    """None when the mark is unreadable: no owner is alive for it."""
    argv: tuple[str, ...]

    @property
    def label(self) -> str:
        """``etcd`` or ``cpo <sub-command>``, for saying what was ended."""
        if len(self.argv) > 3 and self.argv[1:3] == ("-m", "cli"):
            return f"cpo {self.argv[3]}"
        return Path(self.argv[0]).name if self.argv else "?"


def _all_world_processes() -> Iterator[WorldProcess]:
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        pid = int(entry.name)
        before = ProcessIdentity.of(pid)
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            argv = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:  # gone, or another user's
            continue
        if before is None or ProcessIdentity.of(pid) != before:
            continue  # the pid was recycled while we read it
        marks = dict(
            item.split("=", 1) for item in environ.decode(errors="replace").split("\0") if "=" in item
        )
        world = marks.get(WORLD_ENV)
        if not world:
            continue
        words = tuple(argv.decode(errors="replace").split("\0")[:-1])
        yield WorldProcess(before, Path(world), _owner(marks.get(OWNER_ENV, "")), words)


def _owner(mark: str) -> ProcessIdentity | None:
    pid, _, start_time = mark.partition(":")
    try:
        return ProcessIdentity(int(pid), int(start_time))
    except ValueError:
        return None


def world_processes(directory: Path) -> list[ProcessIdentity]:
    """Every live process that carries the marks of the world in ``directory`` (not this one)."""
    return [found.process for found in _all_world_processes() if found.world == directory]


async def end_processes(
    processes: list[ProcessIdentity], within: float = END_TIMEOUT
) -> list[ProcessIdentity]:
    """SIGKILL ``processes`` and wait until they are gone; returns those still alive after ``within`` s."""
    for process in processes:
        process.signal(signal.SIGKILL)
    deadline = time.monotonic() + within
    while any(process.alive() for process in processes) and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(POLL)  # other processes' exit: nothing here could set an Event
    return [process for process in processes if process.alive()]


async def end_abandoned_worlds(under: Path | None = None) -> list[str]:
    """End every process of every world whose owner is gone (only worlds in folders ``under`` that
    one, when given); one line per world saying what ended.

    The etcd data of such a world (its ``machines`` folder) is removed too; its logs are kept.
    """
    abandoned: dict[Path, list[WorldProcess]] = {}
    for found in _all_world_processes():
        if under is not None and not found.world.is_relative_to(under):
            continue
        if found.owner is None or not found.owner.alive():
            abandoned.setdefault(found.world, []).append(found)
    said = []
    for world, processes in sorted(abandoned.items()):
        left = await end_processes([item.process for item in processes])
        with contextlib.suppress(OSError):
            shutil.rmtree(world / "machines")
        counts = Counter(item.label for item in processes)
        ended = ", ".join(f"{count} {label}" for label, count in sorted(counts.items()))
        owner = next((item.owner for item in processes if item.owner is not None), None)
        whose = f"pid {owner.pid}" if owner is not None else "unknown"
        line = f"ended {ended} left running by the world in {world}, whose owner ({whose}) is gone"
        if left:
            line += f"; still alive after {END_TIMEOUT:g}s: pids {', '.join(str(p.pid) for p in left)}"
        said.append(line)
    return said
