"""Label selectors on the client side: parse, match and print them as the API server does.

The cache filters its objects by labels without asking the server (``Cache.list(...,
label_selector=...)``), and controllers turn a resource's ``spec.selector`` (a
``metav1.LabelSelector``) into a selector string for a list or a watch. Both need the same small
language the server speaks in ``?labelSelector=``:

==================  =====================================================
``k=v``, ``k==v``   the label ``k`` exists and equals ``v``
``k!=v``            ``k`` is absent or differs from ``v``
``k in (a,b)``      ``k`` exists and is one of the values
``k notin (a,b)``   ``k`` is absent or none of the values
``k`` / ``!k``      ``k`` exists / does not exist
``k>3`` / ``k<3``   ``k`` exists and, read as an integer, is greater / less
==================  =====================================================

Terms are joined by commas and all must hold. Example:

>>> from runtime.labels import as_selector, from_label_selector, parse_selector
>>> selector = parse_selector("role=master,zone in (a,b)")
>>> selector.matches({"role": "master", "zone": "a"})
True
>>> str(as_selector({"app": "web"}))
'app=web'
>>> str(from_label_selector({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}))
'tier'

A selector that does not parse raises :class:`ValueError` saying which term is wrong. Keys and
values are checked against the label syntax (a DNS-subdomain prefix, a name of at most 63
characters), so a typo is caught here rather than as a 400 from the server.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_KEY_RE = re.compile(rf"^({_PREFIX}/)?{_NAME}$")
_VALUE_RE = re.compile(rf"^({_NAME})?$")
_TERM_RE = re.compile(
    r"^\s*(?P<key>[^\s=!<>(),]+)\s*"
    r"(?:(?P<op>==|=|!=|<|>)\s*(?P<value>[^\s=!<>(),]*)"
    r"|\s(?P<setop>in|notin)\s*\((?P<values>[^()]*)\))?\s*$"
)
_OPERATORS = {"=": "=", "==": "=", "!=": "!=", "<": "<", ">": ">", "in": "in", "notin": "notin"}


def _check_key(key: str, where: str) -> None:
    name = key.rpartition("/")[2]
    if not _KEY_RE.match(key) or len(name) > 63 or len(key.partition("/")[0]) > 253:
        raise ValueError(
            f"label selector {where!r}: {key!r} is not a valid label key (an optional DNS-subdomain "
            "prefix and '/', then at most 63 alphanumerics, '-', '_' or '.', starting and ending "
            "alphanumeric)"
        )


def _check_value(value: str, where: str) -> None:
    if len(value) > 63 or not _VALUE_RE.match(value):
        raise ValueError(
            f"label selector {where!r}: {value!r} is not a valid label value (at most 63 "
            "alphanumerics, '-', '_' or '.', starting and ending alphanumeric, or empty)"
        )


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term: ``key`` ``operator`` ``values``; operator is one of ``= != in notin exists !
    > <``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        value = labels.get(self.key)
        if op in ("=", "in"):
            return value is not None and value in self.values
        if op in ("!=", "notin"):
            return value is None or value not in self.values
        # > and <: both sides must read as integers, like apimachinery's Gt/Lt.
        try:
            have, want = int(value or ""), int(self.values[0])
        except ValueError:
            return False
        return have > want if op == ">" else have < want

    def __str__(self) -> str:
        op = self.operator
        if op == "exists":
            return self.key
        if op == "!":
            return "!" + self.key
        if op in ("in", "notin"):
            return f"{self.key} {op} ({','.join(self.values)})"
        return f"{self.key}{op}{self.values[0]}"


@dataclass(frozen=True, slots=True)
class Selector:
    """A parsed label selector: all :attr:`requirements` must hold. No requirements: everything."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the selector selects every object."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        have = labels or {}
        return all(requirement.matches(have) for requirement in self.requirements)

    def __str__(self) -> str:
        """The selector in the server's ``labelSelector`` syntax."""
        return ",".join(str(requirement) for requirement in self.requirements)


EVERYTHING = Selector()


def _split_terms(text: str) -> list[str]:
    """Split on the commas that are not inside ``( )``."""
    terms: list[str] = []
    depth = 0
    start = 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def parse_selector(text: str) -> Selector:
    """Parse the server's ``labelSelector`` syntax; "" selects everything."""
    if not text.strip():
        return EVERYTHING
    requirements: list[Requirement] = []
    for term in _split_terms(text):
        stripped = term.strip()
        if not stripped:
            raise ValueError(f"label selector {text!r}: an empty term (a stray comma?)")
        if stripped.startswith("!"):
            key = stripped[1:].strip()
            _check_key(key, text)
            requirements.append(Requirement(key, "!"))
            continue
        match = _TERM_RE.match(stripped)
        if match is None:
            raise ValueError(
                f"label selector {text!r}: cannot parse {stripped!r}; use k=v, k!=v, k in (a,b), "
                "k notin (a,b), k or !k"
            )
        key = match["key"]
        _check_key(key, text)
        if match["op"] is not None:
            op = _OPERATORS[match["op"]]
            value = match["value"]
            if op in ("<", ">"):
                try:
                    int(value)
                except ValueError:
                    raise ValueError(
                        f"label selector {text!r}: {stripped!r} compares with {value!r}, not an integer"
                    ) from None
            else:
                _check_value(value, text)
            requirements.append(Requirement(key, op, (value,)))
        elif match["setop"] is not None:
            values = tuple(sorted({v.strip() for v in match["values"].split(",")}))
            if values == ("",) and match["values"].strip() == "":
                raise ValueError(f"label selector {text!r}: {stripped!r} needs at least one value")
            for value in values:
                _check_value(value, text)
            requirements.append(Requirement(key, _OPERATORS[match["setop"]], values))
        else:
            requirements.append(Requirement(key, "exists"))
    return Selector(tuple(sorted(requirements, key=lambda r: r.key)))


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """The selector matching objects that carry every ``key: value`` of ``labels``."""
    requirements = []
    for key, value in sorted(labels.items()):
        where = f"{key}={value}"
        _check_key(key, where)
        _check_value(value, where)
        requirements.append(Requirement(key, "=", (value,)))
    return Selector(tuple(requirements))


_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _problem(check: Callable[[str, str], None], text: str) -> str | None:
    """What ``check`` (:func:`_check_key` or :func:`_check_value`) finds wrong with ``text``."""
    try:
        check(text, text)
    except ValueError as err:
        return str(err).partition(": ")[2]
    return None


def _key_problem(key: str) -> str | None:
    return _problem(_check_key, key)


def _value_problem(value: str) -> str | None:
    return _problem(_check_value, value)


def label_selector_problems(selector: Mapping[str, Any] | None) -> list[str]:
    """What is wrong with a ``metav1.LabelSelector`` dict, one sentence per problem.

    Empty when the selector is well formed. Admission webhooks report these to the user as field
    errors; :func:`from_label_selector` refuses a selector that has any.
    """
    sel = selector or {}
    problems: list[str] = []
    labels = sel.get("matchLabels")
    if labels is not None:
        if not (isinstance(labels, Mapping) and all(isinstance(v, str) for v in labels.values())):
            problems.append("matchLabels must map label keys to string values")
        else:
            for key, value in labels.items():
                for problem in (_key_problem(str(key)), _value_problem(value)):
                    if problem:
                        problems.append(f"matchLabels: {problem}")
    expressions = sel.get("matchExpressions")
    if expressions is None:
        return problems
    if not isinstance(expressions, list):
        return [*problems, "matchExpressions must be a list"]
    for index, expr in enumerate(expressions):
        where = f"matchExpressions[{index}]"
        if not isinstance(expr, Mapping):
            problems.append(f"{where} must be an object with key, operator and values")
            continue
        key, operator, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if not isinstance(key, str) or not key:
            problems.append(f"{where}.key is required")
        elif (problem := _key_problem(key)) is not None:
            problems.append(f"{where}.key: {problem}")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            problems.append(f"{where}.values must be a list of strings")
            continue
        problems += [f"{where}.values: {p}" for v in values if (p := _value_problem(v)) is not None]
        if operator not in _SELECTOR_OPERATORS:
            problems.append(f"{where}.operator {operator!r} is not one of {', '.join(_SELECTOR_OPERATORS)}")
        elif operator in ("In", "NotIn") and not values:
            problems.append(f"{where}.values must be non-empty for operator {operator}")
        elif operator in ("Exists", "DoesNotExist") and values:
            problems.append(f"{where}.values must be empty for operator {operator}")
    return problems


def from_label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """Convert a ``metav1.LabelSelector`` dict (``matchLabels``, ``matchExpressions``).

    Operators ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``; an empty dict (or None) selects
    everything. A malformed selector raises :class:`ValueError` listing
    :func:`label_selector_problems`.
    """
    problems = label_selector_problems(selector)
    if problems:
        raise ValueError("label selector: " + "; ".join(problems))
    sel = selector or {}
    requirements = [Requirement(key, "=", (value,)) for key, value in (sel.get("matchLabels") or {}).items()]
    for expression in sel.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        values = tuple(sorted(set(expression.get("values") or [])))
        op = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}[operator]
        requirements.append(Requirement(key, op, values))
    # Stable: for one key, matchLabels terms stay ahead of expressions, as kube prints them.
    return Selector(tuple(sorted(requirements, key=lambda r: r.key)))


def as_selector(value: Selector | str | Mapping[str, str] | None) -> Selector:
    """Accept a :class:`Selector`, a selector string or a ``{key: value}`` mapping; None: everything."""
    if value is None:
        return EVERYTHING
    if isinstance(value, Selector):
        return value
    if isinstance(value, str):
        return parse_selector(value)
    if isinstance(value, Mapping):
        return selector_from_set(value)
    raise TypeError(f"a label selector must be a string or a mapping, not {type(value).__name__}")


__all__ = [
    "EVERYTHING",
    "Requirement",
    "Selector",
    "as_selector",
    "from_label_selector",
    "label_selector_problems",
    "parse_selector",
    "selector_from_set",
]
