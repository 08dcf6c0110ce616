"""Request-body and query decoding with kube-apiserver's (Go's) error texts.

Expected Status bodies are excerpts of the ``03-*``, ``08-*``, ``13-list-bad-limit`` and
``15-post-*``/``15-put-*`` transcripts in ``tests/testdata/kube-apiserver``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from apiserver.decode import (
    JSONSyntaxError,
    decode_delete_options,
    decode_json,
    decode_object,
    go_json_error,
    go_parse_int,
    go_parse_uint,
    parse_bool_param,
    parse_int_param,
    strict_decoding_error,
)
from apiserver.errors import StatusError
from apiserver.registry import ResourceType

GADGETS = ResourceType(
    group="ref.example.dev",
    version="v1",
    resource="gadgets",
    kind="Gadget",
    singular="gadget",
    namespaced=True,
)
CONFIGMAPS = ResourceType(
    group="",
    version="v1",
    resource="configmaps",
    kind="ConfigMap",
    singular="configmap",
    namespaced=True,
    builtin=True,
)
LEASES = ResourceType(
    group="coordination.k8s.io",
    version="v1",
    resource="leases",
    kind="Lease",
    singular="lease",
    namespaced=True,
    builtin=True,
)


def failure(message: str, code: int = 400, reason: str | None = "BadRequest") -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    body["message"] = message
    if reason:
        body["reason"] = reason
    body["code"] = code
    return body


def status_of(raw: bytes, content_type: str | None = "application/json", rt: ResourceType = GADGETS) -> Any:
    with pytest.raises(StatusError) as caught:
        decode_object(raw, content_type, rt)
    return caught.value.status()


# ------------------------------------------------------------------------------ POST/PUT bodies

UNRECOGNIZED = "the object provided is unrecognized (must be of type Gadget): "
MEDIA_415 = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json, application/yaml, application/vnd.kubernetes.protobuf"
)


def test_empty_body_is_400_with_empty_summary() -> None:  # 15-post-empty-body
    assert status_of(b"") == failure(
        UNRECOGNIZED + "couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)"
    )


def test_json_array_body_names_the_go_sniffer_type_and_hex_dumps_the_body() -> None:  # 15-post-json-array
    assert status_of(b"[1,2]") == failure(
        UNRECOGNIZED
        + "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value "
        'of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string '
        '"json:\\"kind,omitempty\\"" } (5b312c325d)'
    )


def test_body_that_is_not_json_gets_gos_syntax_error() -> None:  # 15-post-not-json
    assert status_of(b"this is not json") == failure(
        UNRECOGNIZED + "couldn't get version/kind; json parse error: invalid character 'h' in literal true "
        "(expecting 'r') (74686973206973206e6f74206a736f6e)"
    )


def test_truncated_json_quotes_the_first_30_bytes() -> None:  # 15-post-truncated-json
    raw = b'{"apiVersion":"ref.example.dev/v1","kind":"Gadget","metadata":{"name":"x"'
    assert status_of(raw) == failure(
        UNRECOGNIZED
        + 'couldn\'t get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":'
        '"ref.example.dev ...)'
    )


def test_custom_resource_without_kind_quotes_the_whole_body() -> None:  # 03-gadget-create-no-kind
    raw = json.dumps({"metadata": {"name": "g-nokind"}, "spec": {"size": "small"}}).encode()
    assert status_of(raw) == failure(
        UNRECOGNIZED + 'Object \'Kind\' is missing in \'{"metadata": {"name": "g-nokind"}, "spec": '
        '{"size": "small"}}\' ({"metadata": {"name": "g-nokin ...)'
    )


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/cbor", "application/vnd.kubernetes.protobuf", "*/*"]
)
def test_unsupported_content_types_are_415_without_details(content_type: str) -> None:
    # 15-post-text-plain, 15-put-text-plain, 15-post-cbor; protobuf crashes the real server (see
    # 15-post-protobuf), where a 415 is the sensible answer.
    assert status_of(b"hello", content_type) == failure(MEDIA_415, 415, "UnsupportedMediaType")


def test_duplicate_key_keeps_last_value_and_reports_path() -> None:  # 03-gadget-create-duplicate-field-warn
    raw = (
        b'{"apiVersion":"ref.example.dev/v1","kind":"Gadget","metadata":{"name":"g-dupfield"},'
        b'"spec":{"size":"small","size":"large"}}'
    )
    decoded = decode_object(raw, "application/json", GADGETS)
    assert decoded.value["spec"] == {"size": "large"}
    assert decoded.duplicates == ["spec.size"]
    assert decoded.warnings() == ['duplicate field "spec.size"']


def test_missing_content_type_is_json() -> None:  # 15-post-no-content-type
    raw = b'{"apiVersion": "ref.example.dev/v1", "kind": "Gadget", "metadata": {"name": "noct"}}'
    assert decode_object(raw, None, GADGETS).value["metadata"] == {"name": "noct"}


def test_yaml_body_is_decoded_and_timestamps_stay_strings() -> None:  # 15-post-yaml
    raw = (
        b"apiVersion: ref.example.dev/v1\nkind: Gadget\nmetadata:\n  name: fromyaml\n"
        b"  annotations:\n    at: 2026-11-22T04:30:00Z\nspec:\n  size: large\n"
    )
    decoded = decode_object(raw, "application/yaml; charset=utf-8", GADGETS)
    assert decoded.value == {
        "apiVersion": "ref.example.dev/v1",
        "kind": "Gadget",
        "metadata": {"name": "fromyaml", "annotations": {"at": "2026-11-22T04:30:00Z"}},
        "spec": {"size": "large"},
    }


def test_malformed_yaml_is_unrecognized_with_line_number() -> None:
    raw = b"kind: Gadget\nspec: [\n"
    body = status_of(raw, "application/yaml")
    assert body["message"].startswith(UNRECOGNIZED + "error converting YAML to JSON: yaml: line 3: ")
    # A YAML body does not start with "{", so it is quoted as hex (all 20 bytes: under the 30 cut).
    assert body["message"].endswith(f"({raw.hex()})")


def test_spec_of_wrong_type_is_left_to_validation() -> None:  # 08-gadget-create-spec-not-object (422 later)
    raw = b'{"apiVersion": "ref.example.dev/v1", "kind": "Gadget", "spec": "hello"}'
    assert decode_object(raw, "application/json", GADGETS).value["spec"] == "hello"


def test_kind_mismatch_is_left_to_validation() -> None:  # 03-gadget-create-kind-mismatch (422 later)
    raw = b'{"apiVersion": "ref.example.dev/v1", "kind": "Widget", "metadata": {"name": "g-kind"}}'
    assert decode_object(raw, "application/json", GADGETS).value["kind"] == "Widget"


def test_non_string_kind_is_a_go_struct_field_error() -> None:
    assert status_of(b'{"kind": 5}') == failure(
        UNRECOGNIZED + "couldn't get version/kind; json parse error: json: cannot unmarshal number into Go "
        'struct field .kind of type string ({"kind": 5})'
    )


def test_api_version_with_two_slashes_is_rejected() -> None:
    assert status_of(b'{"apiVersion": "a/b/c", "kind": "Gadget"}') == failure(
        UNRECOGNIZED + 'unexpected GroupVersion string: a/b/c ({"apiVersion": "a/b/c", "kind" ...)'
    )


def test_custom_resource_from_another_group_version_cannot_be_converted() -> None:
    assert status_of(b'{"apiVersion": "ref.example.dev/v2", "kind": "Gadget"}') == failure(
        'Gadget in version "v2" cannot be handled as a Gadget: request to convert CR from an invalid '
        "group/version: ref.example.dev/v2"
    )


def test_builtin_without_kind_or_api_version_takes_them_from_the_url() -> None:
    decoded = decode_object(
        b'{"metadata": {"name": "cm"}, "data": {"a": "b"}}', "application/json", CONFIGMAPS
    )
    assert decoded.value == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "cm"},
        "data": {"a": "b"},
    }


def test_builtin_with_other_api_version_is_400() -> None:
    assert status_of(b'{"apiVersion": "apps/v1", "kind": "Lease"}', rt=LEASES) == failure(
        "the API version in the data (apps/v1) does not match the expected API version "
        "(coordination.k8s.io/v1)"
    )


def test_strict_decoding_error_wording() -> (
    None
):  # 03-gadget-create-unknown-field-strict, 17-lease-unknown-field-strict
    assert strict_decoding_error(
        "Gadget", "v1", "Gadget", ['unknown field "spec.bogus"']
    ).status() == failure(
        'Gadget in version "v1" cannot be handled as a Gadget: strict decoding error: '
        'unknown field "spec.bogus"'
    )


# ------------------------------------------------------------------------------ JSON and Go's errors


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "unexpected end of JSON input"),
        (b"   ", "unexpected end of JSON input"),
        (b'{"spec": {"replicas": 3,', "unexpected end of JSON input"),  # 09-gadget-patch-merge-invalid-json
        (b"this is not json", "invalid character 'h' in literal true (expecting 'r')"),
        (b"tru", "invalid character ' ' in literal true (expecting 'e')"),
        (b"1.", "invalid character ' ' after decimal point in numeric literal"),
        (b"-", "invalid character ' ' in numeric literal"),
        (b"01", "invalid character '1' after top-level value"),
        (b"{} x", "invalid character 'x' after top-level value"),
        (b"{'a': 1}", "invalid character '\\'' looking for beginning of object key string"),
        (b'{"a" 1}', "invalid character '1' after object key"),
        (b'{"a": 1 "b"}', "invalid character '\"' after object key:value pair"),
        (b"[1 2]", "invalid character '2' after array element"),
        (b"[1,]", "invalid character ']' looking for beginning of value"),
        (b'"a\tb"', "invalid character '\\t' in string literal"),
        (b'"\\x"', "invalid character 'x' in string escape code"),
        (b'"\\u12g4"', "invalid character 'g' in \\u hexadecimal character escape"),
        (b"1e+", "invalid character ' ' in exponent of numeric literal"),
        (b"NaN", "invalid character 'N' looking for beginning of value"),
        (b"\x81garbage", "invalid character '\\x81' looking for beginning of value"),
    ],
)
def test_syntax_errors_use_gos_wording(raw: bytes, message: str) -> None:
    with pytest.raises(JSONSyntaxError) as caught:
        decode_json(raw)
    assert caught.value.go_message == message
    assert go_json_error(raw) == message


def test_valid_json_has_no_go_error() -> None:
    assert go_json_error(b' {"a": [1, -2.5e+3, "x\\u00e9", true, false, null]} ') == ""


def test_numbers_decode_as_int64_or_float64() -> None:
    value, _ = decode_json(b"[1, 1.0, 9223372036854775807, 9223372036854775808]")
    assert value == [1, 1.0, 9223372036854775807, 9.223372036854775808e18]
    assert [type(v) for v in value] == [int, float, int, float]


def test_duplicates_are_reported_in_document_order_with_list_indexes() -> None:
    raw = b'{"a": {"x": 1, "x": 2}, "items": [{"n": 1}, {"n": 1, "n": 2}], "a": {"y": 1, "y": 2}}'
    value, duplicates = decode_json(raw)
    assert duplicates == ["a.x", "items[1].n", "a", "a.y"]
    assert value == {"a": {"y": 2}, "items": [{"n": 1}, {"n": 2}]}
    assert type(value) is dict and type(value["a"]) is dict


def test_lone_surrogate_escape_becomes_replacement_character() -> None:
    value, _ = decode_json(b'{"a": "x\\ud800y"}')
    assert value == {"a": "x\ufffdy"}


# ------------------------------------------------------------------------------ query parameters


def test_bad_limit_is_bare_strconv_error() -> None:  # 13-list-bad-limit
    with pytest.raises(StatusError) as caught:
        parse_int_param("limit", "abc")
    assert caught.value.status() == failure('strconv.ParseInt: parsing "abc": invalid syntax')


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0), ("+5", 5), ("-12", -12), ("9223372036854775807", 9223372036854775807)],
)
def test_parse_int_accepts_what_go_accepts(text: str, expected: int) -> None:
    assert parse_int_param("limit", text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'strconv.ParseInt: parsing "": invalid syntax'),
        ("1_000", 'strconv.ParseInt: parsing "1_000": invalid syntax'),
        (" 1", 'strconv.ParseInt: parsing " 1": invalid syntax'),
        ("9223372036854775808", 'strconv.ParseInt: parsing "9223372036854775808": value out of range'),
    ],
)
def test_parse_int_rejects_like_go(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(") + "$"):
        go_parse_int(text)


def test_parse_uint_wording() -> None:  # 07-gadget-put-invalid-rv, 14-watch-invalid-rv
    assert go_parse_uint("42") == 42
    with pytest.raises(ValueError, match=r'^strconv.ParseUint: parsing "abc": invalid syntax$'):
        go_parse_uint("abc")
    with pytest.raises(ValueError, match="invalid syntax"):
        go_parse_uint("+1")


def test_bool_params_are_true_unless_absent_false_or_zero() -> None:
    assert [parse_bool_param(v) for v in (None, "false", "FALSE", "0", "true", "1", "")] == [
        False,
        False,
        False,
        False,
        True,
        True,
        True,
    ]


# ------------------------------------------------------------------------------ DELETE options


def test_delete_options_come_from_the_query_when_there_is_no_body() -> None:
    options = decode_delete_options(
        b"", None, {"gracePeriodSeconds": "30", "propagationPolicy": "Orphan", "dryRun": "All"}
    )
    assert options == {"gracePeriodSeconds": 30, "propagationPolicy": "Orphan", "dryRun": ["All"]}


def test_delete_options_body_wins_over_the_query() -> None:
    body = b'{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "preconditions": {"uid": "u1"}}'
    options = decode_delete_options(body, "application/json", {"gracePeriodSeconds": "30"})
    assert options == {"preconditions": {"uid": "u1"}}


def test_delete_options_bad_grace_period_is_400() -> None:
    with pytest.raises(StatusError) as caught:
        decode_delete_options(b"", None, {"gracePeriodSeconds": "soon"})
    assert caught.value.status() == failure('strconv.ParseInt: parsing "soon": invalid syntax')
