"""Label and field selectors: parsing, matching and kube-apiserver's 400 wording.

Expected results are excerpts of the ``13-list-label-*``, ``13-list-field-*``,
``14-watch-field-selector-name``, ``14-watch-label-selector-transitions`` and ``18-*`` transcripts
in ``tests/testdata/kube-apiserver``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from apiserver.errors import StatusError
from apiserver.registry import ResourceType
from apiserver.selectors import (
    FieldSelector,
    SelectorError,
    label_selector_from_object,
    label_selector_object_matches,
    object_fields,
    parse_field_selector,
    parse_label_selector,
    parse_label_selector_or_error,
    qualified_name_errors,
    selector_from_label_selector_object,
)

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
CR_FIELDS = {"metadata.name", "metadata.namespace"}

# The gadgets in namespace "ref" when the 13-list-* cases were recorded, with their labels.
GADGET_LABELS: dict[str, dict[str, str]] = {
    "g1": {"a": "b", "bump": "1", "jp": "yes", "meta": "only"},
    "l1": {"a": "x", "tier": "one"},
    "l2": {"a": "y"},
    "l3": {"a": "z"},
    "l4": {"other": "1"},
}


def bad_request(message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
    }


def selected(text: str) -> list[str]:
    selector = parse_label_selector(text)
    return [name for name, labels in GADGET_LABELS.items() if selector.matches(labels)]


def label_error(text: str) -> Any:
    with pytest.raises(StatusError) as caught:
        parse_label_selector(text)
    return caught.value.status()


# ------------------------------------------------------------------------------ label selectors


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("a=x", ["l1"]),  # 13-list-label-eq
        ("a==y", ["l2"]),  # 13-list-label-double-eq
        ("a!=x", ["g1", "l2", "l3", "l4"]),  # 13-list-label-neq: objects without "a" match
        ("a", ["g1", "l1", "l2", "l3"]),  # 13-list-label-exists
        ("!a", ["l4"]),  # 13-list-label-not-exists
        ("a in (x,y)", ["l1", "l2"]),  # 13-list-label-in
        ("a notin (x,y)", ["g1", "l3", "l4"]),  # 13-list-label-notin: objects without "a" match
        ("a,tier=one", ["l1"]),  # 13-list-label-multi
        ("", ["g1", "l1", "l2", "l3", "l4"]),
    ],
)
def test_label_selector_matches_recorded_lists(text: str, names: list[str]) -> None:
    assert selected(text) == names


def test_unterminated_set_is_a_requirement_error() -> None:  # 13-list-label-invalid
    assert label_error("a in (x") == bad_request(
        "unable to parse requirement: found '', expected: ',' or ')'"
    )


def test_second_operator_is_reported_without_requirement_prefix() -> None:  # 13-list-label-invalid2
    assert label_error("a=b=c") == bad_request("found '=', expected: ',' or 'end of string'")


def test_invalid_value_names_values_index_and_key() -> None:  # 13-list-label-invalid-value
    assert label_error("a=-bad-") == bad_request(
        'unable to parse requirement: values[0][a]: Invalid value: "-bad-": a valid label must be an empty '
        "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    )


def test_invalid_key_is_reported_against_a_nil_path() -> None:
    assert label_error("-a=b") == bad_request(
        'unable to parse requirement: <nil>: Invalid value: "-a": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
        "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a,", "found '', expected: identifier after ','"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in x", "unable to parse requirement: found 'x' expected: '('"),
        ("a in (x y)", "unable to parse requirement: found 'y', expected: ',' or ')'"),
        ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("a=(", "unable to parse requirement: found '(', expected: identifier"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
    ],
)
def test_syntax_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorError, match="^" + re.escape(message) + "$"):
        parse_label_selector_or_error(text)


def test_set_values_may_be_empty_and_in_notin_are_words_inside_sets() -> None:
    selector = parse_label_selector("a in (in,,notin), b notin ()")
    assert str(selector) == "a in (,in,notin),b notin ()"
    assert selector.matches({"a": ""}) and selector.matches({"a": "in", "b": "x"})
    assert not selector.matches({"a": "in", "b": ""})


def test_requirements_are_sorted_by_key_and_printed_canonically() -> None:
    assert str(parse_label_selector("z!=1, a in (y,x) ,!m,k")) == "a in (x,y),k,!m,z!=1"


def test_greater_and_less_than_compare_integers() -> None:
    selector = parse_label_selector("n>5,m<10")
    assert selector.matches({"n": "6", "m": "9"})
    assert not selector.matches({"n": "5", "m": "9"})
    assert not selector.matches({"n": "six", "m": "9"})
    with pytest.raises(SelectorError, match="the value must be an integer"):
        parse_label_selector_or_error("n>x")


def test_empty_selector_is_empty() -> None:
    assert parse_label_selector("").empty
    assert not parse_label_selector("a").empty


def test_label_selector_transitions_watch_filter() -> None:  # 14-watch-label-selector-transitions
    selector = parse_label_selector("sel=in")
    assert [selector.matches({"sel": v}) for v in ("out", "in", "in", "out")] == [False, True, True, False]


def test_qualified_name_errors_for_prefixed_keys() -> None:
    assert qualified_name_errors("example.com/name") == []
    assert qualified_name_errors("/name") == ["prefix part must be non-empty"]
    assert qualified_name_errors("a/b/c")[0].startswith("a qualified name must consist of")
    assert qualified_name_errors("x" * 64) == ["name part must be no more than 63 characters"]


# ------------------------------------------------------------------------------ metav1.LabelSelector


def test_label_selector_object_to_string() -> None:
    sel = {
        "matchLabels": {"tier": "web", "app": "x"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "dev"]},
            {"key": "legacy", "operator": "DoesNotExist"},
            {"key": "zone", "operator": "Exists"},
        ],
    }
    assert selector_from_label_selector_object(sel) == "app=x,env in (dev,prod),!legacy,tier=web,zone"


def test_label_selector_object_empty_selects_everything_and_null_nothing() -> None:
    assert label_selector_object_matches({}, {"a": "b"})
    assert label_selector_object_matches({"matchLabels": {}, "matchExpressions": []}, None)
    assert not label_selector_object_matches(None, {"a": "b"})
    assert selector_from_label_selector_object(None) == ""


def test_label_selector_object_matching() -> None:
    sel = {"matchExpressions": [{"key": "skip", "operator": "NotIn", "values": ["true"]}]}
    assert label_selector_object_matches(sel, {})
    assert label_selector_object_matches(sel, {"skip": "false"})
    assert not label_selector_object_matches(sel, {"skip": "true"})


def test_label_selector_object_errors() -> None:
    with pytest.raises(SelectorError, match=r'^"Equals" is not a valid label selector operator$'):
        label_selector_from_object(
            {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["b"]}]}
        )
    with pytest.raises(
        SelectorError, match=r'^values: Invalid value: \[\]string\{"b"\}: values set must be empty'
    ):
        label_selector_from_object(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["b"]}]}
        )
    with pytest.raises(
        SelectorError, match=r"^values: Invalid value: \[\]string\{\}: for 'in', 'notin' operators"
    ):
        label_selector_from_object({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})


# ------------------------------------------------------------------------------ field selectors


def field_error(text: str, supported: Any = CR_FIELDS, rt: ResourceType = GADGETS) -> Any:
    with pytest.raises(StatusError) as caught:
        parse_field_selector(text, supported, rt)
    return caught.value.status()


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("metadata.name=l2", ["l2"]),  # 13-list-field-name
        ("metadata.name!=l2", ["g1", "l1", "l3", "l4"]),  # 13-list-field-name-neq
        ("metadata.namespace=ref", ["g1", "l1", "l2", "l3", "l4"]),  # 13-list-field-namespace
        ("metadata.name==l1,metadata.namespace=ref", ["l1"]),
    ],
)
def test_field_selector_matches_recorded_lists(text: str, names: list[str]) -> None:
    selector = parse_field_selector(text, CR_FIELDS, GADGETS)
    objects = [{"metadata": {"name": name, "namespace": "ref"}} for name in GADGET_LABELS]
    assert [o["metadata"]["name"] for o in objects if selector.matches(object_fields(o))] == names


def test_set_based_field_selector_is_not_understood() -> None:  # 13-list-field-in-op
    assert field_error("metadata.name in (l1)") == bad_request(
        "invalid selector: 'metadata.name in (l1)'; can't understand 'metadata.name in (l1)'"
    )


def test_field_selector_without_operator() -> None:  # 13-list-field-invalid-syntax
    assert field_error("metadata.name") == bad_request(
        "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
    )


def test_unsupported_field_on_custom_resource() -> None:  # 13-list-field-unsupported
    assert field_error("spec.size=small") == bad_request("field label not supported: spec.size")


def test_unsupported_field_on_builtin_with_only_metadata_fields() -> None:
    assert field_error("data.x=1", rt=CONFIGMAPS) == bad_request(
        '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )


def test_unsupported_field_on_builtin_with_own_fields() -> None:
    supported = {"metadata.name", "metadata.namespace", "involvedObject.name", "involvedObject.kind"}
    assert field_error("spec.x=1", supported, CONFIGMAPS) == bad_request("field label not supported: spec.x")


def test_core_events_field_selector() -> None:  # 18-core-events-list-fieldselector
    supported = {"metadata.name", "metadata.namespace", "involvedObject.name", "involvedObject.kind"}
    selector = parse_field_selector("involvedObject.name=g1,involvedObject.kind=Gadget", supported)
    assert selector.matches({"involvedObject.name": "g1", "involvedObject.kind": "Gadget"})
    assert not selector.matches({"involvedObject.name": "g1", "involvedObject.kind": "Pod"})


def test_events_v1_fields_are_renamed_to_core_ones() -> None:  # 18-events-v1-fieldselector-regarding
    supported = {"metadata.name": "metadata.name", "regarding.name": "involvedObject.name"}
    selector = parse_field_selector("regarding.name=g1", supported)
    assert selector.requirements == [("involvedObject.name", "=", "g1")]
    assert selector.matches({"involvedObject.name": "g1"})
    assert field_error("involvedObject.name=g1", supported) == bad_request(
        "field label not supported: involvedObject.name"
    )


def test_watch_by_name_field_selector() -> None:  # 14-watch-field-selector-name
    selector = parse_field_selector("metadata.name=w4", CR_FIELDS, GADGETS)
    assert selector.requires_exact_match("metadata.name") == "w4"
    assert selector.matches({"metadata.name": "w4"}) and not selector.matches({"metadata.name": "w3"})


def test_field_values_unescape_and_bad_escapes_fail() -> None:
    selector = parse_field_selector(r"metadata.name=a\,b\=c\\d", CR_FIELDS)
    assert selector.requirements == [("metadata.name", "=", "a,b=c\\d")]
    assert str(selector) == r"metadata.name=a\,b\=c\\d"
    assert field_error(r"metadata.name=a\x") == bad_request(
        "invalid field selector: invalid escape sequence: \\x"
    )
    # Go prints the offending rune with %v: its code point.
    assert field_error("metadata.name=a=b") == bad_request(
        "invalid field selector: unescaped character in value: 61"
    )


def test_missing_field_compares_as_empty_string() -> None:
    selector = parse_field_selector("spec.nodeName=", {"spec.nodeName"})
    assert selector.matches({}) and not selector.matches({"spec.nodeName": "n1"})


def test_field_selector_conjunction_and_empty() -> None:
    assert parse_field_selector("", CR_FIELDS).empty
    both = FieldSelector.conjunction(
        parse_field_selector("metadata.namespace=ref", CR_FIELDS),
        parse_field_selector("metadata.name=w4", CR_FIELDS),
    )
    assert both.requirements == [("metadata.namespace", "=", "ref"), ("metadata.name", "=", "w4")]
    assert not both.matches({"metadata.namespace": "ref", "metadata.name": "w3"})
