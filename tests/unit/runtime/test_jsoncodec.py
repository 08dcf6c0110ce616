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


def test_sorted_keys_and_lone_surrogates() -> None:
    assert jsoncodec.dumps({"b": 1, "a": {"d": 2, "c": 3}}, sort_keys=True) == (b'{"a":{"c":3,"d":2},"b":1}')
    # orjson refuses a lone surrogate and UTF-8 cannot hold one: the escaped form still decodes.
    assert json.loads(jsoncodec.dumps({"s": "\ud800"})) == {"s": "\ud800"}


def test_freeze_thaw_keeps_every_value_exactly_and_key_order() -> None:
    value = {"z": 1, "a": [1.5, None, "é"], "big": 2**70}
    thawed = jsoncodec.thaw(jsoncodec.freeze(value))
    assert thawed == value and list(thawed) == ["z", "a", "big"]
    assert isinstance(thawed["big"], int)
    plain = {"spec": {"replicas": 3}}
    frozen = jsoncodec.freeze(plain)
    assert sys.getsizeof(frozen) < len(frozen) + 64
    first = jsoncodec.thaw(frozen)
    first["spec"]["replicas"] = 5
    assert jsoncodec.thaw(frozen) == plain


def test_clone_is_a_deep_copy_even_for_values_orjson_refuses() -> None:
    for value in ({"spec": {"list": [1, {"x": "y"}]}}, {"big": 2**70, "k": [1]}):
        copied = jsoncodec.clone(value)
        assert copied == value and copied is not value
        next(iter(v for v in copied.values() if isinstance(v, (dict, list)))).clear()  # type: ignore[attr-defined]
        assert copied != value
