"""Label and field selectors, parsed and matched exactly as kube-apiserver does.

Label selectors (``?labelSelector=``, webhook ``objectSelector``, scale ``status.selector``)
support ``=``, ``==``, ``!=``, ``in``, ``notin``, existence (``key``), absence (``!key``) and the
numeric ``>``/``<``; keys and values are validated with the same rules as object labels. Parse
errors are 400s whose messages repeat apimachinery's wording, quirks included: a bad key is
reported against the path ``<nil>`` (the parser has no field path), a bad value against
``values[0][key]``.

Field selectors (``?fieldSelector=``) support only ``=``, ``==`` and ``!=``; which fields a
resource can be selected by is the caller's business (see :func:`parse_field_selector`).

Both selector kinds are immutable once parsed; ``matches`` is cheap enough to call per watch
event.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import TYPE_CHECKING, Any

from runtime.goformat import go_quote
from runtime.jsoncodec import JSON

from .decode import GoNumError, go_parse_int
from .errors import FieldError, GoRepr, aggregate, bad_request, invalid

# Label keys and values follow the same rules as object metadata; one definition serves both.
from .objectmeta import label_value_errors, qualified_name_errors

if TYPE_CHECKING:
    from .registry import ResourceType


class Operator(StrEnum):
    """Requirement operators, valued as apimachinery's ``selection.Operator`` strings."""

    IN = "in"
    NOT_IN = "notin"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    GREATER_THAN = "gt"
    LESS_THAN = "lt"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"


_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"


class SelectorError(ValueError):
    """A selector that does not parse or validate; ``str()`` is apimachinery's message."""


@dataclass(frozen=True)
class Requirement:
    """One ``key op values`` term of a label selector."""

    key: str
    operator: Operator
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in (Operator.IN, Operator.EQUALS, Operator.DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if op in (Operator.NOT_IN, Operator.NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if op is Operator.EXISTS:
            return self.key in labels
        if op is Operator.DOES_NOT_EXIST:
            return self.key not in labels
        # gt/lt compare as int64; a label that is not a number never matches.
        if self.key not in labels or len(self.values) != 1:
            return False
        try:
            have, want = go_parse_int(labels[self.key]), go_parse_int(self.values[0])
        except GoNumError:
            return False
        return have > want if op is Operator.GREATER_THAN else have < want

    def __str__(self) -> str:
        op = self.operator
        if op is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        if op is Operator.EXISTS:
            return self.key
        symbol = {
            Operator.EQUALS: "=",
            Operator.DOUBLE_EQUALS: "==",
            Operator.NOT_EQUALS: "!=",
            Operator.IN: " in ",
            Operator.NOT_IN: " notin ",
            Operator.GREATER_THAN: ">",
            Operator.LESS_THAN: "<",
        }[op]
        values = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        if op in (Operator.IN, Operator.NOT_IN):
            values = f"({values})"
        return f"{self.key}{symbol}{values}"


def new_requirement(key: str, operator: Operator, values: list[str], *, key_path: str = "key") -> Requirement:
    """Build a requirement, validating as ``labels.NewRequirement`` does (all problems at once)."""
    problems: list[FieldError] = []
    key_problems = qualified_name_errors(key)
    if key_problems:
        problems.append(invalid(key_path, key, "; ".join(key_problems)))
    values_repr = GoRepr("[]string{" + ", ".join(go_quote(v) for v in values) + "}")
    if operator in (Operator.IN, Operator.NOT_IN):
        if not values:
            problems.append(
                invalid("values", values_repr, "for 'in', 'notin' operators, values set can't be empty")
            )
    elif operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS):
        if len(values) != 1:
            problems.append(
                invalid("values", values_repr, "exact-match compatibility requires one single value")
            )
    elif operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        if values:
            problems.append(
                invalid("values", values_repr, "values set must be empty for exists and does not exist")
            )
    else:
        if len(values) != 1:
            problems.append(
                invalid("values", values_repr, "for 'Gt', 'Lt' operators, exactly one value is required")
            )
        for i, value in enumerate(values):
            try:
                go_parse_int(value)
            except GoNumError:
                problems.append(
                    invalid(f"values[{i}]", value, "for 'Gt', 'Lt' operators, the value must be an integer")
                )
    for i, value in enumerate(values):
        value_problems = label_value_errors(value)
        if value_problems:
            problems.append(invalid(f"values[{i}][{key}]", value, "; ".join(value_problems)))
    if problems:
        raise SelectorError(aggregate(problems))
    return Requirement(key, operator, tuple(values))


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector: the AND of its requirements, sorted by key.

    ``LabelSelector(())`` selects everything; :data:`NOTHING` (from a null ``metav1.LabelSelector``)
    selects nothing.
    """

    requirements: tuple[Requirement, ...] = ()
    selects_nothing: bool = False

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything."""
        return not self.requirements and not self.selects_nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.selects_nothing:
            return False
        have = labels or {}
        return all(requirement.matches(have) for requirement in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(selects_nothing=True)


class _Token(Enum):
    END = "end of string"
    CLOSE_PAREN = ")"
    COMMA = ","
    NOT = "!"
    DOUBLE_EQUALS = "=="
    EQUALS = "="
    GREATER = ">"
    IDENTIFIER = "identifier"
    IN = "in"
    LESS = "<"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    OPEN_PAREN = "("


_SYMBOLS: dict[str, _Token] = {
    str(t.value): t for t in _Token if t.value in {")", ",", "!", "==", "=", ">", "<", "!=", "("}
}
_KEYWORDS = {"in": _Token.IN, "notin": _Token.NOT_IN}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")


def _tokenize(text: str) -> list[tuple[_Token, str]]:
    """Split into tokens the way apimachinery's selector lexer does (longest known symbol wins)."""
    tokens: list[tuple[_Token, str]] = []
    pos, size = 0, len(text)
    while True:
        while pos < size and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= size:
            tokens.append((_Token.END, ""))
            return tokens
        if text[pos] in _SPECIAL:
            # Every single special character is a symbol, so this always matches something.
            symbol = text[pos]
            end = pos + 1
            while end < size and text[pos : end + 1] in _SYMBOLS:
                end += 1
                symbol = text[pos:end]
            tokens.append((_SYMBOLS[symbol], symbol))
            pos = end
            continue
        end = pos
        while end < size and text[end] not in _SPECIAL and text[end] not in _WHITESPACE:
            end += 1
        word = text[pos:end]
        tokens.append((_KEYWORDS.get(word, _Token.IDENTIFIER), word))
        pos = end


class _LabelParser:
    """Recursive-descent parser mirroring apimachinery's, so errors arise at the same token."""

    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.position = 0

    def _peek(self, as_value: bool = True) -> tuple[_Token, str]:
        token, literal = self.tokens[self.position]
        # Where a value is expected, "in" and "notin" are ordinary words ("a in (in)").
        if as_value and token in (_Token.IN, _Token.NOT_IN):
            token = _Token.IDENTIFIER
        return token, literal

    def _take(self, as_value: bool = True) -> tuple[_Token, str]:
        item = self._peek(as_value)
        self.position += 1
        return item

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            token, literal = self._peek()
            if token is _Token.END:
                return requirements
            if token not in (_Token.IDENTIFIER, _Token.NOT):
                raise SelectorError(f"found '{literal}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self._requirement())
            except SelectorError as exc:
                raise SelectorError(f"unable to parse requirement: {exc}") from None
            token, literal = self._take()
            if token is _Token.END:
                return requirements
            if token is not _Token.COMMA:
                raise SelectorError(f"found '{literal}', expected: ',' or 'end of string'")
            token, literal = self._peek()
            if token not in (_Token.IDENTIFIER, _Token.NOT):
                raise SelectorError(f"found '{literal}', expected: identifier after ','")

    def _requirement(self) -> Requirement:
        token, key = self._take()
        negated = token is _Token.NOT
        if negated:
            token, key = self._take()
        if token is not _Token.IDENTIFIER:
            raise SelectorError(f"found '{key}', expected: identifier")
        key_problems = qualified_name_errors(key)
        if key_problems:
            # The string parser has no field path, which Go prints as "<nil>".
            raise SelectorError(str(invalid("<nil>", key, "; ".join(key_problems))))
        if negated:
            # "!key" ends the requirement; an operator after it is reported by the caller as an
            # unexpected token ("!a=b": found '=', expected: ',' or 'end of string').
            return new_requirement(key, Operator.DOES_NOT_EXIST, [])
        if self._peek()[0] in (_Token.END, _Token.COMMA):
            return new_requirement(key, Operator.EXISTS, [])
        operator = self._operator()
        set_based = operator in (Operator.IN, Operator.NOT_IN)
        values = self._value_set() if set_based else self._exact_value()
        return new_requirement(key, operator, sorted(set(values)))

    def _operator(self) -> Operator:
        token, literal = self._take(as_value=False)
        operators = {
            _Token.IN: Operator.IN,
            _Token.EQUALS: Operator.EQUALS,
            _Token.DOUBLE_EQUALS: Operator.DOUBLE_EQUALS,
            _Token.GREATER: Operator.GREATER_THAN,
            _Token.LESS: Operator.LESS_THAN,
            _Token.NOT_IN: Operator.NOT_IN,
            _Token.NOT_EQUALS: Operator.NOT_EQUALS,
        }
        if token not in operators:
            raise SelectorError(f"found '{literal}', expected: {_BINARY_OPERATORS}")
        return operators[token]

    def _value_set(self) -> list[str]:
        token, literal = self._take()
        if token is not _Token.OPEN_PAREN:
            raise SelectorError(f"found '{literal}' expected: '('")
        token, literal = self._peek()
        if token is _Token.CLOSE_PAREN:
            self._take()
            return [""]
        if token not in (_Token.IDENTIFIER, _Token.COMMA):
            raise SelectorError(f"found '{literal}', expected: ',', ')' or identifier")
        values = self._identifier_list()
        if self._take()[0] is not _Token.CLOSE_PAREN:
            raise SelectorError(f"found '{literal}', expected: ')'")
        return values

    def _identifier_list(self) -> list[str]:
        values: list[str] = []
        while True:
            token, literal = self._take()
            if token is _Token.IDENTIFIER:
                values.append(literal)
                next_token, next_literal = self._peek()
                if next_token is _Token.COMMA:
                    continue
                if next_token is _Token.CLOSE_PAREN:
                    return values
                raise SelectorError(f"found '{next_literal}', expected: ',' or ')'")
            if token is _Token.COMMA:
                # Empty entries ("(,a)", "(a,)", "(a,,b)") stand for the empty value.
                if not values:
                    values.append("")
                next_token, _ = self._peek()
                if next_token is _Token.CLOSE_PAREN:
                    values.append("")
                    return values
                if next_token is _Token.COMMA:
                    self._take()
                    values.append("")
                continue
            raise SelectorError(f"found '{literal}', expected: ',', or identifier")

    def _exact_value(self) -> list[str]:
        token, _ = self._peek()
        if token in (_Token.END, _Token.COMMA):
            return [""]
        token, literal = self._take()
        if token is _Token.IDENTIFIER:
            return [literal]
        raise SelectorError(f"found '{literal}', expected: identifier")


def parse_label_selector_or_error(text: str) -> LabelSelector:
    """Parse a label selector string; raises :class:`SelectorError` with apimachinery's message."""
    requirements = _LabelParser(text).parse()
    # Sorting by key makes String() and matching order deterministic, as upstream does.
    return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))


def parse_label_selector(text: str) -> LabelSelector:
    """``?labelSelector=``: the parsed selector, or a 400 BadRequest worded as kube-apiserver's."""
    try:
        return parse_label_selector_or_error(text)
    except SelectorError as exc:
        raise bad_request(str(exc)) from None


_METAV1_OPERATORS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def label_selector_from_object(sel: JSON | None) -> LabelSelector:
    """A ``metav1.LabelSelector`` ``{matchLabels, matchExpressions}`` as a parsed selector.

    ``None`` selects nothing and ``{}`` selects everything, as in ``LabelSelectorAsSelector``.
    Raises :class:`SelectorError` for an unknown operator or invalid key/value.
    """
    if sel is None:
        return NOTHING
    match_labels = sel.get("matchLabels") or {}
    expressions = sel.get("matchExpressions") or []
    if not match_labels and not expressions:
        return EVERYTHING
    requirements = [new_requirement(str(k), Operator.EQUALS, [str(v)]) for k, v in match_labels.items()]
    for expression in expressions:
        operator_name = expression.get("operator", "")
        operator = _METAV1_OPERATORS.get(operator_name)
        if operator is None:
            raise SelectorError(f"{go_quote(str(operator_name))} is not a valid label selector operator")
        values = [str(v) for v in expression.get("values") or []]
        requirements.append(new_requirement(str(expression.get("key", "")), operator, values))
    return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))


def selector_from_label_selector_object(sel: JSON | None) -> str:
    """The string form of a ``metav1.LabelSelector`` (scale ``status.selector``, kubectl output).

    ``{"matchLabels": {"app": "x"}, "matchExpressions": [{"key": "tier", "operator": "In",
    "values": ["b", "a"]}]}`` gives ``app=x,tier in (a,b)``. Both ``None`` and ``{}`` give "".
    """
    return str(label_selector_from_object(sel))


def label_selector_object_matches(sel: JSON | None, labels: Mapping[str, str] | None) -> bool:
    """Whether ``labels`` satisfy a ``metav1.LabelSelector`` (webhook objectSelector/namespaceSelector)."""
    return label_selector_from_object(sel).matches(labels)


# --------------------------------------------------------------------------------------------
# Field selectors
# --------------------------------------------------------------------------------------------

# CRDs and the core types with their own conversion functions (Pod, Event, ...) reject an
# unknown field with this text; 13-list-field-unsupported shows it for a custom resource.
FIELD_LABEL_NOT_SUPPORTED = "field label not supported: {field}"
# Built-ins that only have apimachinery's default conversion (ConfigMap, Lease, ...) say this.
ONLY_METADATA_FIELDS = '{quoted} is not a known field selector: only "metadata.name", "metadata.namespace"'


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    operator: str  # "=" or "!="
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        # A field the object does not have compares as "".
        have = fields.get(self.field, "")
        return have == self.value if self.operator == "=" else have != self.value


@dataclass(frozen=True)
class FieldSelector:
    """A parsed field selector: the AND of ``field=value`` / ``field!=value`` terms."""

    terms: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.terms

    @property
    def requirements(self) -> list[tuple[str, str, str]]:
        """``(field, "=" | "!=", value)`` per term; ``==`` is reported as ``=``."""
        return [(t.field, t.operator, t.value) for t in self.terms]

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(term.matches(fields) for term in self.terms)

    @staticmethod
    def conjunction(*selectors: FieldSelector) -> FieldSelector:
        """A selector matching what all of ``selectors`` match (e.g. a watch URL's name plus a query)."""
        return FieldSelector(tuple(term for selector in selectors for term in selector.terms))

    def requires_exact_match(self, field_name: str) -> str | None:
        """The value ``field_name`` must equal, if some term pins it (``metadata.name=x``)."""
        for term in self.terms:
            if term.field == field_name and term.operator == "=":
                return term.value
        return None

    def __str__(self) -> str:
        return ",".join(f"{t.field}{t.operator}{_escape_field_value(t.value)}" for t in self.terms)


def _escape_field_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _split_field_terms(text: str) -> list[str]:
    # Commas separate terms unless backslash-escaped; the escape stays in the term for now.
    terms, start, escaped = [], 0, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_field_term(term: str) -> tuple[str, str, str] | None:
    # The first operator occurrence splits; "!=" and "==" are tried before "=".
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def _unescape_field_value(value: str) -> str:
    if not any(ch in value for ch in "\\,="):
        return value
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            # Go formats the rune with %v, i.e. as its code point number.
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(
    text: str,
    supported: Collection[str] | Mapping[str, str],
    resource: ResourceType | None = None,
    *,
    unsupported_message: str | None = None,
) -> FieldSelector:
    """``?fieldSelector=``: the parsed selector, or a 400 BadRequest worded as kube-apiserver's.

    ``supported`` lists the field labels the resource can be selected by. A mapping renames them
    (events.k8s.io/v1 accepts ``regarding.name`` and matches it as ``involvedObject.name``), so
    :attr:`FieldSelector.requirements` and :meth:`FieldSelector.matches` use the mapped names.

    Any other field is a 400. Its wording depends on the resource, which is why ``resource`` is
    passed: custom resources and the built-ins with their own field conversions (Pod, Event,
    Namespace, Secret, ...) say :data:`FIELD_LABEL_NOT_SUPPORTED` (``field label not supported:
    spec.size``, 13-list-field-unsupported); built-ins that can only be selected by
    ``metadata.name``/``metadata.namespace`` fall back to apimachinery's default conversion,
    which says :data:`ONLY_METADATA_FIELDS`. ``unsupported_message`` overrides the choice; it may
    use ``{field}`` and ``{quoted}`` (Go ``%q``).

    Syntax errors: ``invalid selector: 'x'; can't understand 'x'`` (no operator, or a set-based
    one such as ``in``) and ``invalid field selector: ...`` for bad escapes.
    """
    try:
        terms = _parse_field_terms(text)
    except SelectorError as exc:
        raise bad_request(str(exc)) from None
    renames = supported if isinstance(supported, Mapping) else {name: name for name in supported}
    if unsupported_message is None:
        only_metadata = set(renames) <= {"metadata.name", "metadata.namespace"}
        builtin = resource is not None and resource.builtin
        unsupported_message = ONLY_METADATA_FIELDS if builtin and only_metadata else FIELD_LABEL_NOT_SUPPORTED
    converted = []
    for term in terms:
        if term.field not in renames:
            message = unsupported_message.format(field=term.field, quoted=go_quote(term.field))
            raise bad_request(message)
        converted.append(FieldRequirement(renames[term.field], term.operator, term.value))
    return FieldSelector(tuple(converted))


def _parse_field_terms(text: str) -> list[FieldRequirement]:
    terms: list[FieldRequirement] = []
    # Upstream sorts the raw terms, which decides which error is reported first.
    for part in sorted(_split_field_terms(text)) if text else []:
        if not part:
            continue
        split = _split_field_term(part)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        field_name, op, raw_value = split
        terms.append(
            FieldRequirement(field_name, "!=" if op == "!=" else "=", _unescape_field_value(raw_value))
        )
    return terms


def object_fields(obj: JSON, *, namespaced: bool = True) -> dict[str, str]:
    """The field set every object can be selected by: ``metadata.name`` (and namespace)."""
    metadata: dict[str, Any] = obj.get("metadata") or {}
    fields = {"metadata.name": str(metadata.get("name") or "")}
    if namespaced:
        fields["metadata.namespace"] = str(metadata.get("namespace") or "")
    return fields
