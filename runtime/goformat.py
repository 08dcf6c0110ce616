"""Values printed the way Go's ``fmt`` and ``strconv`` print them.

Kubernetes' messages are produced by Go code (``fmt.Sprintf("%q", ...)``, ``%v``, field errors),
and clients and tests match them byte for byte, so anything here that speaks Kubernetes' language
formats decoded JSON values with these helpers rather than with Python's ``repr`` or ``json``:

>>> go_quote('say "hi"\\n')
'"say \\\\"hi\\\\"\\\\n"'
>>> go_float(1e6), go_float(0.5), go_json_float(1e6)
('1e+06', '0.5', '1000000')
>>> go_sprint({"b": [1, None], "a": "x"})
'map[a:x b:[1 <nil>]]'
>>> go_value({"a": 1}), go_value("x"), go_value(None), go_value(go_strings(["a"]))
('map[string]interface {}{"a":1}', '"x"', 'null', '[]string{"a"}')
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

__all__ = [
    "GoRepr",
    "go_float",
    "go_json_float",
    "go_quote",
    "go_scalar",
    "go_sprint",
    "go_strings",
    "go_value",
]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class GoRepr:
    """A value already formatted the way Go would print it (e.g. ``0x0`` for an unset uint64).

    The equivalent of a Go value with a ``String()`` method: :func:`go_value` prints its text as is.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"GoRepr({self.text!r})"


_SIMPLE_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(text: str | bytes) -> str:
    """Go's ``strconv.Quote`` (and so ``%q``): printable runes kept, the rest escaped Go-style.

    Bytes that are not valid UTF-8 print as ``\\xNN``, as Go prints them.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="surrogateescape")
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[ch])
        elif 0xDC80 <= code <= 0xDCFF:
            # A byte that was not valid UTF-8 (smuggled through surrogateescape).
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _format_float(value: float, *, exp_below: int, exp_from: int, two_digit_exp: bool) -> str:
    """Shortest round-trip digits, in exponent form outside ``[1e{exp_below}, 1e{exp_from})``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    # repr() is the shortest text that round-trips, which is what Go's precision -1 means.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len(digit_tuple) - len(digits)
    point = len(digits) + exponent  # position of the decimal point relative to the digits
    if point - 1 < exp_below or point - 1 >= exp_from:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        exp = point - 1
        exp_digits = f"{abs(exp):02d}" if two_digit_exp else str(abs(exp))
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{exp_digits}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def go_float(value: float) -> str:
    """Go's ``%v`` for a float64 (``strconv.FormatFloat(v, 'g', -1, 64)``).

    Shortest digits; exponent form below 1e-4 and from 1e+06 up (``1e+06``, ``1.5e-07``).
    """
    return _format_float(value, exp_below=-4, exp_from=6, two_digit_exp=True)


def go_json_float(value: float) -> str:
    """A float64 as Go's ``json.Marshal`` writes it: plain digits from 1e-6 up to 1e21, else ``1e+21``."""
    return _format_float(value, exp_below=-6, exp_from=21, two_digit_exp=False)


def _as_go_number(value: Any) -> Any:
    """A JSON integer outside int64 decodes to float64 in Go; mirror that before printing it."""
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64_MIN <= value <= _INT64_MAX:
        return float(value)
    return value


def go_scalar(value: Any) -> str | None:
    """Go's ``%v`` for a boolean or a number (``true``, ``3``, ``1e+06``); None for any other value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    return None


def go_sprint(value: Any) -> str:
    """Go's ``%v`` for a value decoded from JSON (maps print with sorted keys, ``<nil>`` for null)."""
    value = _as_go_number(value)
    if value is None:
        return "<nil>"
    scalar = go_scalar(value)
    if scalar is not None:
        return scalar
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        inner = " ".join(f"{key}:{go_sprint(value[key])}" for key in sorted(value))
        return f"map[{inner}]"
    if isinstance(value, list | tuple):
        return "[" + " ".join(go_sprint(item) for item in value) + "]"
    return str(value)


def go_strings(values: Iterable[Any] | None) -> GoRepr:
    """``%#v`` of a Go ``[]string`` (``[]string{"a", "b"}``, ``[]string(nil)`` for ``None``), for a bad value.

    Items that are not strings print as their ``str()``.
    """
    if values is None:
        return GoRepr("[]string(nil)")
    return GoRepr("[]string{" + ", ".join(go_quote(str(v)) for v in values) + "}")


def go_value(value: Any) -> str:
    """A decoded JSON value as ``field.Error`` prints its bad value.

    ``%v`` for numbers and booleans, ``%q`` for strings, ``null`` for nil, ``%#v`` for maps and
    slices (``map[string]interface {}{"a":1}``), and a :class:`GoRepr`'s own text.
    """
    if isinstance(value, GoRepr):
        return value.text
    if value is None:
        return "null"
    if isinstance(value, str):
        return go_quote(value)
    scalar = go_scalar(value)
    if scalar is not None:
        return scalar
    if isinstance(value, dict):
        inner = ", ".join(f"{go_quote(str(k))}:{go_value(v)}" for k, v in value.items())
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_value(v) for v in value) + "}"
    return str(value)
