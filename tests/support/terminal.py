"""A command run in a pseudo-terminal, as a person runs it: its screen read back as text, and
Ctrl-C typed into it (the terminal then sends SIGINT to its foreground process group).

>>> import sys
>>> from tests.support.terminal import Terminal
>>> with Terminal([sys.executable, "-c", "print('hello')"]) as term:
...     offset = term.wait_for("hello", timeout=10)
...     term.wait_exit(timeout=10)
0
"""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import termios
from collections.abc import Mapping, Sequence
from types import TracebackType

from tests.support.poll import wait_until

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\r")


class Terminal:
    """``argv`` with a pseudo-terminal of ``rows`` x ``columns`` as its controlling terminal."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        rows: int = 60,
        columns: int = 200,
    ) -> None:
        self._master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        os.set_blocking(self._master, False)
        environment = {**os.environ, **(env or {}), "TERM": "xterm-256color"}
        for variable in ("COLUMNS", "LINES", "NO_COLOR", "TERM_PROGRAM"):
            environment.pop(variable, None)

        def controlling_terminal() -> None:
            # A new session whose controlling terminal is the pty: Ctrl-C typed there reaches it.
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

        self.process = subprocess.Popen(
            list(argv),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=environment,
            preexec_fn=controlling_terminal,
            close_fds=True,
        )
        os.close(slave)
        self.raw = b""

    @property
    def text(self) -> str:
        """Everything shown so far, escape sequences removed."""
        return _ESCAPES.sub("", self.raw.decode(errors="replace"))

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 65536)
            except (BlockingIOError, OSError):  # OSError (EIO): the child closed the terminal
                return
            if not chunk:
                return
            self.raw += chunk

    def wait_for(self, text: str, *, timeout: float, after: int = 0) -> int:
        """Wait until ``text`` shows at or beyond offset ``after`` of :attr:`text`; its offset."""

        def shown() -> int | None:
            self._read()
            found = self.text.find(text, after)
            return found + 1 if found >= 0 else None

        return int(wait_until(shown, timeout=timeout, message=f"{text!r} on the screen:\n{self.text}")) - 1

    def type(self, keys: bytes) -> None:
        os.write(self._master, keys)

    def wait_exit(self, *, timeout: float) -> int:
        def exited() -> bool:
            self._read()
            return self.process.poll() is not None

        wait_until(exited, timeout=timeout, message=f"the command to exit; screen:\n{self.text}")
        return int(self.process.returncode)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        os.close(self._master)
