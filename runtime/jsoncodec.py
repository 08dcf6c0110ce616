"""The project's JSON codec: orjson on the hot paths, the standard library where orjson refuses.

Every watch event is decoded once, stored once as compact JSON and decoded again for each read,
and the embedded API server copies and encodes every object it writes, so JSON is the largest
single cost per event on both sides. orjson does the same work several times faster than the
``json`` module (``docs/performance.md`` has the figures). Use it like ``json``:

>>> from runtime.jsoncodec import clone, dumps, freeze, loads, thaw
>>> text = dumps({"metadata": {"name": "a"}})  # compact UTF-8 bytes
>>> text
b'{"metadata":{"name":"a"}}'
>>> loads(text)
{'metadata': {'name': 'a'}}
>>> dumps({"b": 1, "a": 2}, sort_keys=True)
b'{"a":2,"b":1}'
>>> copy = clone({"spec": {"replicas": 3}})  # a deep copy, in native code
>>> thaw(freeze(copy)) == copy  # compact storage that keeps every value exactly
True

What differs from ``json`` (none of it changes what the API server's objects look like):

* :func:`dumps` returns ``bytes`` (UTF-8), without spaces; non-ASCII text is written as UTF-8, as
  kube-apiserver (Go's encoder) writes it. Where orjson refuses a value the ``json`` module
  accepts -- a dict key that is not a string, an integer outside 64 bits, a lone surrogate -- it
  falls back to ``json.dumps`` with the same compact separators, so anything the standard library
  encodes still encodes; what neither encodes (datetimes, arbitrary objects) raises
  :class:`TypeError`. NaN and the infinities become ``null`` (kube-apiserver refuses them; only a
  YAML body can carry them).
* :func:`loads` takes ``bytes`` or ``str``. It reads integers beyond 64 bits as floats; the
  Kubernetes API server never sends those (it decodes numbers into int64 or float64 itself). Use
  :func:`freeze` / :func:`thaw` where such values must survive exactly. Malformed input raises
  :class:`json.JSONDecodeError` (orjson's error is a subclass of it).
"""

from __future__ import annotations

import copy
import json
from typing import Any, TypeVar

import orjson

__all__ = ["JSON", "JSONDecodeError", "clone", "dumps", "freeze", "loads", "thaw"]

T = TypeVar("T")

JSON = dict[str, Any]
"""A decoded JSON object: how the runtime holds every Kubernetes object, request and answer."""

JSONDecodeError = json.JSONDecodeError
"""What :func:`loads` raises on malformed input (orjson raises a subclass of it)."""

loads = orjson.loads
"""Decode JSON ``bytes`` or ``str`` into Python objects (dicts, lists, str, int, float, bool, None)."""

_orjson_dumps = orjson.dumps
# Datetimes and dataclasses go to the fallback, which refuses them as the ``json`` module always did.
_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_SORTED_OPTIONS = _OPTIONS | orjson.OPT_SORT_KEYS


def _fallback(obj: Any, sort_keys: bool) -> bytes:
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)
    try:
        return text.encode()
    except UnicodeEncodeError:
        # A lone surrogate has no UTF-8 form; the ASCII escape form is still valid JSON.
        return json.dumps(obj, separators=(",", ":"), sort_keys=sort_keys).encode()


def dumps(obj: Any, *, sort_keys: bool = False) -> bytes:
    """``obj`` as compact UTF-8 JSON bytes (keys sorted when ``sort_keys``)."""
    try:
        # orjson's bytes keep its whole output buffer, several times the text; the cheap copy
        # holds just the text: the informer cache keeps one of these per object.
        return memoryview(_orjson_dumps(obj, option=_SORTED_OPTIONS if sort_keys else _OPTIONS)).tobytes()
    except TypeError:
        return _fallback(obj, sort_keys)


def freeze(value: Any) -> bytes:
    """``value`` as compact bytes that :func:`thaw` turns back into an equal value, key order kept.

    How the embedded API server holds what it stores: bytes are one object to the garbage
    collector, where a decoded object is dozens of tracked dicts and lists that every full
    collection walks.
    """
    try:
        return memoryview(_orjson_dumps(value, option=_OPTIONS)).tobytes()
    except TypeError:
        # orjson would read wide integers back as floats: mark the stdlib's text (a leading space
        # is still JSON) so that thaw reads it with the stdlib too.
        return b" " + _fallback(value, False)


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
        copied: T = orjson.loads(_orjson_dumps(value, option=_OPTIONS))
    except TypeError:
        return copy.deepcopy(value)
    return copied
