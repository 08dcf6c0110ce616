"""runtime.labels: the one place where metav1.LabelSelector rules live."""

from __future__ import annotations

import pytest

from runtime.labels import from_label_selector, label_selector_problems


def test_well_formed_selector_has_no_problems_and_prints_sorted() -> None:
    sel = {
        "matchLabels": {"role": "master"},
        "matchExpressions": [{"key": "cpo.dev/zone", "operator": "In", "values": ["b", "a", "b"]}],
    }
    assert label_selector_problems(sel) == []
    assert str(from_label_selector(sel)) == "cpo.dev/zone in (a,b),role=master"
    assert label_selector_problems(None) == [] and from_label_selector(None).empty


def test_key_and_value_syntax_are_reported_per_field() -> None:
    sel = {
        "matchLabels": {"bad key": "ok"},
        "matchExpressions": [{"key": "zone", "operator": "In", "values": ["-leading-dash"]}],
    }
    problems = label_selector_problems(sel)
    assert len(problems) == 2
    assert problems[0].startswith("matchLabels: 'bad key' is not a valid label key")
    assert problems[1].startswith("matchExpressions[0].values: '-leading-dash' is not a valid label value")
    with pytest.raises(ValueError, match=r"^label selector: matchLabels: 'bad key'"):
        from_label_selector(sel)
