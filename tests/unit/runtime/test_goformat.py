"""Go's ``%v`` and ``%q`` for decoded JSON values (:mod:`runtime.goformat`)."""

from __future__ import annotations

import pytest

from runtime.goformat import go_float, go_quote, go_sprint


def test_go_sprint_formats_like_fmt_v() -> None:
    value = {"b": [1, 2.5, None, True], "a": {"z": "s"}, "f": 1e6}
    assert go_sprint(value) == "map[a:map[z:s] b:[1 2.5 <nil> true] f:1e+06]"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2.0, "2"),
        (0.5, "0.5"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (1e-5, "1e-05"),
        (-0.25, "-0.25"),
    ],
)
def test_go_float(value: float, text: str) -> None:
    assert go_float(value) == text


def test_go_quote_escapes_like_go() -> None:
    # Printable runes stay (é); control characters and invisible ones are escaped.
    assert go_quote('a"b\\c\n\x7f\u00e9\u200b') == '"a\\"b\\\\c\\n\\x7f\u00e9\\u200b"'
