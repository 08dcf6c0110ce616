"""Small helpers for starting local server processes: free ports, URL hosts, command-line flags.

Shared by the test environment's real binaries (:mod:`runtime.envtest.binaries`), the local
machine provider's etcd members and the API-server stand-in, so none of them imports another.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence

Flags = dict[str, list[str]]
"""Flags by name (no leading ``--``), each with its values in order (a repeated flag has several)."""
FlagOverrides = Mapping[str, str | Sequence[str] | None]
"""Changes to a :data:`Flags` default: a value replaces, a sequence repeats, ``None`` removes."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now (another process may still take it before us)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def url_host(host: str) -> str:
    """``host`` as it appears in a URL (IPv6 literals in brackets).

    >>> url_host("::1"), url_host("127.0.0.1")
    ('[::1]', '127.0.0.1')
    """
    return f"[{host}]" if ":" in host else host


def render_flags(defaults: Mapping[str, Sequence[str]], overrides: FlagOverrides | None = None) -> list[str]:
    """``--name=value`` arguments from ``defaults`` with ``overrides`` applied.

    An override replaces every value of that flag; a sequence gives a repeated flag; ``None``
    removes a default flag altogether.

    >>> render_flags({"v": ["2"], "port": ["80"]}, {"v": "4", "port": None, "--feature": ["a", "b"]})
    ['--v=4', '--feature=a', '--feature=b']
    """
    merged: dict[str, list[str]] = {name: list(values) for name, values in defaults.items()}
    for name, value in (overrides or {}).items():
        flag = name.removeprefix("--")
        if value is None:
            merged.pop(flag, None)
        elif isinstance(value, str):
            merged[flag] = [value]
        else:
            merged[flag] = list(value)
    return [f"--{name}={value}" for name, values in merged.items() for value in values]
