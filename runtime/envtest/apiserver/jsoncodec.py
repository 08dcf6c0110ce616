"""Fast JSON encoding and copying for the embedded API server's hot paths.

Every write through the server copies the stored object (to patch or update it without touching
the stored version) and encodes the result at least twice (the response, each watch event). The
standard library does both in Python; ``orjson`` does them in native code, several times faster.
This module wraps it so that the rest of the server never has to care about its limits: whatever
``orjson`` refuses (integers wider than 64 bits, non-string keys, lone surrogates) falls back to
the standard library, so the results are the same values either way.

The bytes differ from ``json.dumps`` in one visible way: non-ASCII text is written as UTF-8 instead
of ``\\uXXXX`` escapes, which is what kube-apiserver (Go's encoder) writes too. One value does not
survive: NaN and the infinities (only a YAML body can bring them; kube-apiserver refuses them)
become ``null``.

Example::

    from runtime.envtest.apiserver import jsoncodec

    body = jsoncodec.dumps({"b": 1, "a": [True, None]}, sort_keys=True)   # b'{"a":[true,null],"b":1}'
    copy = jsoncodec.clone({"spec": {"replicas": 3}})                     # a deep copy
    stored = jsoncodec.freeze(copy); assert jsoncodec.thaw(stored) == copy  # compact storage
"""

from __future__ import annotations

import copy
import json
from typing import Any, TypeVar

import orjson

T = TypeVar("T")

_SORTED = orjson.OPT_SORT_KEYS


def dumps(value: Any, *, sort_keys: bool = False) -> bytes:
    """Compact JSON bytes of ``value`` (keys sorted when ``sort_keys``)."""
    try:
        return orjson.dumps(value, option=_SORTED if sort_keys else None)
    except (TypeError, orjson.JSONEncodeError):
        # Wider-than-64-bit integers, non-string keys, lone surrogates: the stdlib takes them all.
        return json.dumps(value, separators=(",", ":"), sort_keys=sort_keys).encode()


def freeze(value: Any) -> bytes:
    """``value`` as compact bytes that :func:`thaw` turns back into an equal value, key order kept.

    How the server holds what it stores: bytes are one object to the garbage collector, where a
    decoded object is dozens of tracked dicts and lists that every full collection walks.
    """
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        # orjson would read wide integers back as floats: mark the stdlib's text (a leading space
        # is still JSON) so that thaw reads it with the stdlib too.
        return b" " + json.dumps(value, separators=(",", ":")).encode()


def thaw(raw: bytes) -> Any:
    """A fresh value from :func:`freeze`'s bytes (the caller may change it freely)."""
    if raw[:1] == b" ":
        return json.loads(raw)
    return orjson.loads(raw)


def clone(value: T) -> T:
    """A deep copy of a JSON value (dicts, lists, strings, numbers, booleans, None).

    An encode/decode round trip in native code, much cheaper than ``copy.deepcopy`` for the
    ~kilobyte objects a server holds. Floats and integers come back as the same values; anything
    the round trip would not preserve exactly (wide integers, other types) is deep-copied.
    """
    try:
        copied: T = orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        return copy.deepcopy(value)
    return copied
