"""runtime.jsoncodec: compact UTF-8 bytes, what ``json`` accepts still encodes, buffers fit."""

from __future__ import annotations

import datetime
import json
import sys

import pytest

from runtime import jsoncodec


def test_dumps_is_compact_utf8_and_round_trips() -> None:
    obj = {"metadata": {"name": "a", "labels": {"zone": "é"}}, "spec": {"n": [1, 2.5, None, True]}}
    text = jsoncodec.dumps(obj)
    assert text == json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    assert jsoncodec.loads(text) == obj
    assert jsoncodec.loads(text.decode()) == obj


def test_what_orjson_refuses_falls_back_to_the_standard_library() -> None:
    assert jsoncodec.dumps({1: "int key"}) == b'{"1":"int key"}'
    assert jsoncodec.loads(jsoncodec.dumps({"big": 2**70})) == {"big": float(2**70)}
    assert jsoncodec.dumps({"big": 2**70}) == b'{"big":1180591620717411303424}'


def test_values_json_refuses_are_still_refused() -> None:
    with pytest.raises(TypeError):
        jsoncodec.dumps({"when": datetime.datetime(2026, 1, 1)})
    with pytest.raises(TypeError):
        jsoncodec.dumps({"what": object()})


def test_malformed_input_raises_json_decode_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        jsoncodec.loads(b'{"a": ')


def test_encoded_bytes_hold_no_spare_buffer() -> None:
    # The cache keeps one of these per object: a 2 KB object must not pin orjson's larger buffer.
    text = jsoncodec.dumps({"pad": "x" * 2000})
    assert sys.getsizeof(text) < len(text) + 64
