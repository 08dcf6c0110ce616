"""The runtime's JSON codec: orjson on the hot paths, the standard library where orjson refuses.

Every watch event is decoded once, stored once as compact JSON and decoded again for each read,
so JSON is the largest single cost per event (see ``docs/performance.md``). orjson does the same
work 3-5x faster than the ``json`` module: on a 2 KB object ~5 µs to decode instead of ~20 µs
and ~2 µs to encode compactly instead of ~15 µs. Use it like ``json``::

    from runtime.jsoncodec import dumps, loads

    text = dumps({"metadata": {"name": "a"}})     # b'{"metadata":{"name":"a"}}': compact UTF-8 bytes
    assert loads(text) == {"metadata": {"name": "a"}}

What differs from ``json`` (none of it changes what the API server's objects look like):

* :func:`dumps` returns ``bytes`` (UTF-8), without spaces. Where orjson refuses a value the
  ``json`` module accepts -- a dict key that is not a string, an integer outside 64 bits -- it
  falls back to ``json.dumps`` with the same compact separators, so anything the standard library
  encodes still encodes; what neither encodes raises :class:`TypeError`.
* :func:`loads` takes ``bytes`` or ``str``. It reads integers beyond 64 bits as floats; the
  Kubernetes API server never sends those (it decodes numbers into int64 or float64 itself).
  Malformed input raises :class:`json.JSONDecodeError` (orjson's error is a subclass of it).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["JSONDecodeError", "dumps", "loads"]

JSONDecodeError = json.JSONDecodeError
"""What :func:`loads` raises on malformed input (orjson raises a subclass of it)."""

loads = orjson.loads
"""Decode JSON ``bytes`` or ``str`` into Python objects (dicts, lists, str, int, float, bool, None)."""

_orjson_dumps = orjson.dumps
# Datetimes and dataclasses go to the fallback, which refuses them as the ``json`` module always did.
_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_fallback = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False).encode


def dumps(obj: Any) -> bytes:
    """``obj`` as compact UTF-8 JSON bytes (orjson, or the ``json`` module for what orjson refuses)."""
    try:
        # orjson's bytes keep its whole output buffer (8 KB held for a 2 KB object); the copy,
        # 0.2 µs, holds just the text: the informer cache keeps one of these per object.
        return memoryview(_orjson_dumps(obj, option=_OPTIONS)).tobytes()
    except TypeError:
        return _fallback(obj).encode()
