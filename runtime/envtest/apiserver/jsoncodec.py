"""Fast JSON encoding and copying for the embedded API server's hot paths.

Every write through the server copies the stored object (to patch or update it without touching
the stored version) and encodes the result at least twice (the response, each watch event). The
standard library does both in Python; ``orjson`` does them in native code, several times faster.
This module wraps it so that the rest of the server never has to care about its limits: whatever
``orjson`` refuses (integers wider than 64 bits, non-string keys, lone surrogates) falls back to
the standard library, so the results are the same values either way.

The bytes differ from ``json.dumps`` in one visible way: non-ASCII text is written as UTF-8 instead
of ``\\uXXXX`` escapes, which is what kube-apiserver (Go's encoder) writes too.

Example::

    from runtime.envtest.apiserver import jsoncodec

    body = jsoncodec.dumps({"b": 1, "a": [True, None]}, sort_keys=True)   # b'{"a":[true,null],"b":1}'
    copy = jsoncodec.clone({"spec": {"replicas": 3}})                     # a deep copy
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


def loads(raw: bytes | str) -> Any:
    """Decode JSON the server itself produced (not client input: see ``decode.decode_json``)."""
    return orjson.loads(raw)


def clone(value: T) -> T:
    """A deep copy of a JSON value (dicts, lists, strings, numbers, booleans, None).

    An encode/decode round trip in native code, much cheaper than ``copy.deepcopy`` for the
    ~kilobyte objects a server holds. Floats and integers come back as the same values; anything
    the round trip would not preserve exactly (NaN, wide integers, other types) is deep-copied.
    """
    try:
        copied: T = orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        return copy.deepcopy(value)
    return copied
