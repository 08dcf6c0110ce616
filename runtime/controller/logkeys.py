"""The log keys of one reconcile: the worker's, then the object's and a fresh reconcile ID.

A worker sets them (:class:`_ReconcileKeys`) as the log context of every reconcile it runs
(:mod:`runtime.log`), so each line the reconcile writes names its object and its reconcile. They
are made for every reconcile and read by few, so they cost nothing until read.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any, Final

from runtime.log import KEY_NAME, KEY_NAMESPACE, KEY_OBJECT, KEY_RECONCILE_ID
from runtime.reconcile import Request


def _reconcile_id(bits: int) -> str:
    """A random (version 4) UUID string made of ``bits`` (128 random bits, from ``_getrandbits``), as
    ``str(uuid.uuid4())`` but a fifth of its cost: the bits come from ``random`` (seeded from the
    OS at start) instead of an ``os.urandom`` call per reconcile. It only tells reconciles apart in
    logs; nothing secret rests on it."""
    text = f"{(bits & _UUID4_CLEAR) | _UUID4_SET:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


_getrandbits = random.Random().getrandbits
# uuid.UUID(version=4)'s bit fixing: variant 10xx in bits 62-63, version 4 in bits 76-79.
_UUID4_CLEAR: Final = ~((0xC000 << 48) | (0xF000 << 64))
_UUID4_SET: Final = (0x8000 << 48) | (4 << 76)


class _ReconcileKeys(Mapping[str, Any]):
    """The log keys of one reconcile: the worker's, then the object's and the reconcile ID.

    Every reconcile sets them and most write no line, so nothing is formatted until read: the
    object string and the ID's text are made from the request and the ID's random bits, drawn
    here. The same bits give the same text, so every reader of one reconcile (its lines, a nested
    ``log_context``, a task or thread it starts, ``current_reconcile_id``) sees one ID.
    """

    __slots__ = ("_base", "_id_bits", "_request")

    def __init__(self, base: Mapping[str, Any], request: Request) -> None:
        self._base = base
        self._request = request
        self._id_bits = _getrandbits(128)

    def __getitem__(self, key: str) -> Any:
        request = self._request
        if key == KEY_RECONCILE_ID:
            return _reconcile_id(self._id_bits)
        if key == KEY_OBJECT:
            return str(request)
        if key == KEY_NAMESPACE:
            return request.namespace
        if key == KEY_NAME:
            return request.name
        return self._base[key]

    def __iter__(self) -> Iterator[str]:
        yield from (k for k in self._base if k not in _RECONCILE_KEYS)
        yield from _RECONCILE_KEYS

    def __len__(self) -> int:
        return sum(1 for _ in self)


_RECONCILE_KEYS: Final = (KEY_OBJECT, KEY_NAMESPACE, KEY_NAME, KEY_RECONCILE_ID)
