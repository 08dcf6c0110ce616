"""Decoding request bodies and query numbers the way kube-apiserver does, with Go's error texts.

kube-apiserver is written in Go, and Go's standard-library wording leaks into the HTTP answers
clients see: ``strconv.ParseInt: parsing "abc": invalid syntax`` for ``?limit=abc``,
``invalid character 'h' in literal true (expecting 'r')`` for a body that is not JSON,
``json: cannot unmarshal array into Go value of type ...`` for a JSON array where an object
belongs. This module reproduces those texts so the embedded server answers byte for byte what
the recorded transcripts show.

Entry points:

* :func:`decode_object` -- the body of a POST/PUT: content type, JSON or YAML, ``apiVersion``
  and ``kind`` checks, duplicate keys. The handler calls it once with the raw bytes, the
  Content-Type and the target :class:`~.registry.ResourceType` and gets the object or a
  :class:`~.errors.StatusError`. :func:`decode_delete_options` does the same for DELETE.
* :func:`decode_json` -- any JSON body (patches use it): the value plus the paths of duplicate
  keys, or :class:`JSONSyntaxError` carrying Go's syntax-error text.
* :func:`parse_int_param`, :func:`go_parse_int`, :func:`go_parse_uint`,
  :func:`parse_bool_param` -- query parameters.

Go's ``%v`` and ``%q`` for the values in those messages come from :mod:`runtime.goformat`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from runtime.goformat import go_float, go_quote
from runtime.jsoncodec import JSON

from . import protobuf
from .errors import StatusError, bad_request

if TYPE_CHECKING:
    from .registry import ResourceType

# The media types a POST/PUT body may have, in the order the 415 message lists them. The real
# server decodes protobuf for built-ins and panics on it for custom resources; we decode it for the
# built-ins with a protobuf table and answer 415 for custom resources with the message the real
# server gives for other unsupported types (the transcript 15-post-protobuf recommends that over
# mimicking the crash). Built-ins without a table get a 415 that lists only JSON and YAML.
OBJECT_MEDIA_TYPES = ["application/json", "application/yaml", protobuf.PROTOBUF_MEDIA_TYPE]
TEXT_MEDIA_TYPES = ["application/json", "application/yaml"]

# How apimachinery prefixes errors from its first look at a body's apiVersion/kind.
_SNIFF_FAILED = "couldn't get version/kind; json parse error:"

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1

# Go's json.Unmarshal target in the apimachinery code that sniffs apiVersion/kind; its type
# name is part of the error text for bodies that are not objects.
_KIND_SNIFFER_TYPE = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
)


# --------------------------------------------------------------------------------------------
# Go formatting helpers
# --------------------------------------------------------------------------------------------


def go_type_name(value: Any) -> str:
    """The Go type a JSON value decodes to (``reflect.TypeOf(v).String()``)."""
    if value is None:
        return "%!s(<nil>)"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map[string]interface {}"
    return "[]interface {}"


def json_kind(value: Any) -> str:
    """How Go's json package names a JSON value in "cannot unmarshal X into ..." errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    return "array"


# --------------------------------------------------------------------------------------------
# Numbers in query parameters
# --------------------------------------------------------------------------------------------


class GoNumError(ValueError):
    """A ``strconv`` failure; ``str()`` is Go's ``*strconv.NumError`` text."""


def go_parse_int(text: str, bit_size: int = 64) -> int:
    """``strconv.ParseInt(text, 10, bit_size)``: optional sign, ASCII digits, range-checked."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all("0" <= ch <= "9" for ch in digits):
        raise GoNumError(f"strconv.ParseInt: parsing {go_quote(text)}: invalid syntax")
    number = int(text)
    limit = 1 << (bit_size - 1)
    if not -limit <= number < limit:
        raise GoNumError(f"strconv.ParseInt: parsing {go_quote(text)}: value out of range")
    return number


def go_parse_uint(text: str, bit_size: int = 64) -> int:
    """``strconv.ParseUint(text, 10, bit_size)``: ASCII digits only, no sign."""
    if not text or not all("0" <= ch <= "9" for ch in text):
        raise GoNumError(f"strconv.ParseUint: parsing {go_quote(text)}: invalid syntax")
    number = int(text)
    if number >= 1 << bit_size:
        raise GoNumError(f"strconv.ParseUint: parsing {go_quote(text)}: value out of range")
    return number


def parse_int_param(name: str, text: str) -> int:
    """An integer query parameter (``limit``, ``timeoutSeconds``, ``gracePeriodSeconds``, ...).

    A bad value is a 400 whose message is Go's bare ``strconv`` error; kube-apiserver does not
    name the parameter (13-list-bad-limit), so ``name`` only documents the call site.
    """
    del name  # not part of the wire message, see above
    try:
        return go_parse_int(text)
    except GoNumError as exc:
        raise bad_request(str(exc)) from None


def parse_bool_param(text: str | None) -> bool:
    """A boolean query parameter: absent, ``false`` or ``0`` are false; anything else is true."""
    if text is None:
        return False
    return text.lower() not in ("false", "0")


# --------------------------------------------------------------------------------------------
# JSON with Go's error texts
# --------------------------------------------------------------------------------------------


class JSONSyntaxError(StatusError):
    """Malformed JSON. A bare 400 whose message is Go's text; callers re-wrap it with context."""

    def __init__(self, go_message: str) -> None:
        super().__init__(400, "BadRequest", go_message)
        self.go_message = go_message


class _DictWithDuplicates(dict[str, Any]):
    """A decoded object that had repeated keys; remembers every (key, value) pair in order."""

    pairs: list[tuple[str, Any]]


def _go_int(text: str) -> int | float:
    # Kubernetes decodes JSON integers as int64 and anything wider as float64.
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else float(text)


def _reject_constant(name: str) -> Any:
    # NaN/Infinity are Python extensions; Go treats them as syntax errors.
    raise ValueError(name)


def decode_json(raw: bytes) -> tuple[Any, list[str]]:
    """Decode JSON as Kubernetes' case-sensitive strict decoder does.

    Returns the value (for repeated keys the last one wins) and the dotted paths of repeated
    keys in document order (``spec.size``, ``spec.items[0].name``), which the server turns into
    ``duplicate field "spec.size"`` warnings. Malformed input raises :class:`JSONSyntaxError`.
    """
    saw_duplicates = False

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal saw_duplicates
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        saw_duplicates = True
        marked = _DictWithDuplicates(obj)
        marked.pairs = pairs
        return marked

    text = raw.decode("utf-8", errors="replace")
    try:
        value = json.loads(
            text, object_pairs_hook=pairs_hook, parse_int=_go_int, parse_constant=_reject_constant
        )
    except (ValueError, RecursionError):
        # Python nests less deeply than Go and has its own wording; Go's scanner names the error.
        raise JSONSyntaxError(go_json_error(raw) or "invalid character exceeded max depth") from None
    if "\\u" in text.lower() and _has_lone_surrogate(value):
        value = _replace_lone_surrogates(value)
    if not saw_duplicates:
        return value, []
    duplicates: list[str] = []
    return _collect_duplicates(value, "", duplicates), duplicates


def _collect_duplicates(value: Any, path: str, found: list[str]) -> Any:
    """Walk in document order, report repeated keys, and turn marked dicts back into plain ones."""
    if isinstance(value, _DictWithDuplicates):
        seen: set[str] = set()
        result: dict[str, Any] = {}
        for key, item in value.pairs:
            child = f"{path}.{key}" if path else key
            if key in seen:
                found.append(child)
            seen.add(key)
            result[key] = _collect_duplicates(item, child, found)
        # dict(pairs) kept each key at its first position; keep that order.
        return {key: result[key] for key in value}
    if isinstance(value, dict):
        return {
            key: _collect_duplicates(item, f"{path}.{key}" if path else key, found)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_collect_duplicates(item, f"{path}[{i}]", found) for i, item in enumerate(value)]
    return value


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any(0xD800 <= ord(ch) <= 0xDFFF for ch in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(item) for item in value)
    return False


def _replace_lone_surrogates(value: Any) -> Any:
    # Go turns an unpaired \uD800-style escape into U+FFFD; Python keeps a lone surrogate that
    # cannot be encoded back to UTF-8.
    if isinstance(value, str):
        return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in value)
    if isinstance(value, dict):
        return {_replace_lone_surrogates(k): _replace_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_lone_surrogates(item) for item in value]
    return value


def go_json_error(raw: bytes, exc: json.JSONDecodeError | None = None) -> str:
    """Go's ``encoding/json`` text for the first syntax error in ``raw``.

    Python's own message (``exc``) is not used: Go reports a different position and wording
    (``invalid character 'h' in literal true (expecting 'r')``, ``unexpected end of JSON input``),
    so the input is re-scanned with Go's grammar. Returns "" if Go would accept ``raw``.
    """
    del exc  # kept in the signature for callers that have one at hand
    return _GoJSONScanner(raw).first_error()


def _quote_char(byte: int) -> str:
    # Go prints the offending byte as a quoted character literal.
    if byte == ord("'"):
        return "'\\''"
    if byte == ord('"'):
        return "'\"'"
    if byte >= 0x80:
        return f"'\\x{byte:02x}'"
    return "'" + go_quote(chr(byte))[1:-1] + "'"


_SPACE = frozenset(b" \t\r\n")
_DIGITS = frozenset(b"0123456789")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_MAX_NESTING = 10000


class _GoJSONScanner:
    """A byte-at-a-time JSON grammar checker that fails exactly where and how Go's does."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.stack: list[str] = []  # "object-key", "object-value" or "array"
        self.state: Callable[[int], None] = self._begin_value
        self.end_top = False
        self.error = ""

    def first_error(self) -> str:
        for byte in self.data:
            self.state(byte)
            if self.error:
                return self.error
        # At the end Go feeds one space to close a pending number, then requires a finished value.
        if self.end_top:
            return ""
        self.state(ord(" "))
        if self.error:
            return self.error
        return "" if self.end_top else "unexpected end of JSON input"

    def _fail(self, byte: int, context: str) -> None:
        self.error = f"invalid character {_quote_char(byte)} {context}"

    def _push(self, kind: str, byte: int) -> bool:
        self.stack.append(kind)
        if len(self.stack) > _MAX_NESTING:
            self._fail(byte, "exceeded max depth")
            return False
        return True

    # -- values ----------------------------------------------------------------------------

    def _begin_value_or_empty(self, byte: int) -> None:
        if byte in _SPACE:
            return
        if byte == ord("]"):
            self._end_value(byte)
            return
        self._begin_value(byte)

    def _begin_value(self, byte: int) -> None:
        if byte in _SPACE:
            return
        if byte == ord("{"):
            if self._push("object-key", byte):
                self.state = self._begin_string_or_empty
        elif byte == ord("["):
            if self._push("array", byte):
                self.state = self._begin_value_or_empty
        elif byte == ord('"'):
            self.state = self._in_string
        elif byte == ord("-"):
            self.state = self._after_minus
        elif byte == ord("0"):
            self.state = self._after_zero
        elif byte in b"123456789":
            self.state = self._in_digits
        elif byte == ord("t"):
            self.state = self._literal("true", 1)
        elif byte == ord("f"):
            self.state = self._literal("false", 1)
        elif byte == ord("n"):
            self.state = self._literal("null", 1)
        else:
            self._fail(byte, "looking for beginning of value")

    def _begin_string_or_empty(self, byte: int) -> None:
        if byte in _SPACE:
            return
        if byte == ord("}"):
            self.stack[-1] = "object-value"
            self._end_value(byte)
            return
        self._begin_string(byte)

    def _begin_string(self, byte: int) -> None:
        if byte in _SPACE:
            return
        if byte == ord('"'):
            self.state = self._in_string
        else:
            self._fail(byte, "looking for beginning of object key string")

    def _end_value(self, byte: int) -> None:
        if not self.stack:
            self.end_top = True
            self.state = self._end_top
            self._end_top(byte)
            return
        if byte in _SPACE:
            self.state = self._end_value
            return
        top = self.stack[-1]
        if top == "object-key":
            if byte == ord(":"):
                self.stack[-1] = "object-value"
                self.state = self._begin_value
            else:
                self._fail(byte, "after object key")
        elif top == "object-value":
            if byte == ord(","):
                self.stack[-1] = "object-key"
                self.state = self._begin_string
            elif byte == ord("}"):
                self.stack.pop()
                self.state = self._end_value
                if not self.stack:
                    self.end_top = True
                    self.state = self._end_top
            else:
                self._fail(byte, "after object key:value pair")
        elif byte == ord(","):
            self.state = self._begin_value
        elif byte == ord("]"):
            self.stack.pop()
            self.state = self._end_value
            if not self.stack:
                self.end_top = True
                self.state = self._end_top
        else:
            self._fail(byte, "after array element")

    def _end_top(self, byte: int) -> None:
        if byte not in _SPACE:
            self._fail(byte, "after top-level value")

    # -- strings ---------------------------------------------------------------------------

    def _in_string(self, byte: int) -> None:
        if byte == ord('"'):
            self.state = self._end_value
        elif byte == ord("\\"):
            self.state = self._in_escape
        elif byte < 0x20:
            self._fail(byte, "in string literal")

    def _in_escape(self, byte: int) -> None:
        if byte in b'bfnrt\\/"':
            self.state = self._in_string
        elif byte == ord("u"):
            self.state = self._unicode_escape(4)
        else:
            self._fail(byte, "in string escape code")

    def _unicode_escape(self, remaining: int) -> Callable[[int], None]:
        def step(byte: int) -> None:
            if byte not in _HEX:
                self._fail(byte, "in \\u hexadecimal character escape")
            elif remaining == 1:
                self.state = self._in_string
            else:
                self.state = self._unicode_escape(remaining - 1)

        return step

    # -- numbers ---------------------------------------------------------------------------

    def _after_minus(self, byte: int) -> None:
        if byte == ord("0"):
            self.state = self._after_zero
        elif byte in _DIGITS:
            self.state = self._in_digits
        else:
            self._fail(byte, "in numeric literal")

    def _in_digits(self, byte: int) -> None:
        if byte in _DIGITS:
            return
        self._after_zero(byte)

    def _after_zero(self, byte: int) -> None:
        if byte == ord("."):
            self.state = self._after_dot
        elif byte in b"eE":
            self.state = self._after_e
        else:
            self._end_value(byte)

    def _after_dot(self, byte: int) -> None:
        if byte in _DIGITS:
            self.state = self._in_fraction
        else:
            self._fail(byte, "after decimal point in numeric literal")

    def _in_fraction(self, byte: int) -> None:
        if byte in _DIGITS:
            return
        if byte in b"eE":
            self.state = self._after_e
        else:
            self._end_value(byte)

    def _after_e(self, byte: int) -> None:
        if byte in b"+-":
            self.state = self._after_e_sign
        else:
            self._after_e_sign(byte)

    def _after_e_sign(self, byte: int) -> None:
        if byte in _DIGITS:
            self.state = self._in_exponent
        else:
            self._fail(byte, "in exponent of numeric literal")

    def _in_exponent(self, byte: int) -> None:
        if byte not in _DIGITS:
            self._end_value(byte)

    # -- true / false / null ---------------------------------------------------------------

    def _literal(self, word: str, position: int) -> Callable[[int], None]:
        def step(byte: int) -> None:
            expected = word[position]
            if byte != ord(expected):
                self._fail(byte, f"in literal {word} (expecting {_quote_char(ord(expected))})")
            elif position + 1 == len(word):
                self.state = self._end_value
            else:
                self.state = self._literal(word, position + 1)

        return step


# --------------------------------------------------------------------------------------------
# POST/PUT bodies
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecodedObject:
    """A request body decoded into an object."""

    value: JSON
    # Dotted paths of repeated JSON keys (the last value won), e.g. ["spec.size"].
    duplicates: list[str] = field(default_factory=list)

    def warnings(self) -> list[str]:
        """The ``Warning`` texts for ``fieldValidation=Warn`` (the default)."""
        return [f"duplicate field {go_quote(path)}" for path in self.duplicates]

    def strict_problems(self) -> list[str]:
        """The same problems worded for :func:`strict_decoding_error` (``fieldValidation=Strict``)."""
        return self.warnings()


def unsupported_media_type(accepted: list[str]) -> StatusError:
    """415 as kube-apiserver words it. Unlike most Status errors it has no ``details`` key."""
    return StatusError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted),
    )


def body_media_type(content_type: str | None) -> str:
    """The media type of a POST/PUT body: parameters dropped, lower-cased, JSON if absent."""
    if not content_type:
        return "application/json"
    return content_type.split(";", 1)[0].strip().lower()


def cannot_be_handled(body_kind: str, body_version: str, expected_kind: str, reason: str) -> StatusError:
    """400 for a body whose apiVersion/kind were understood but whose content was not.

    ``Gadget in version "v1" cannot be handled as a Gadget: strict decoding error: ...``; also
    used by typed decoders (e.g. MicroTime parse errors in 17-lease-create-microtime-3digits).
    """
    version = go_quote(body_version)
    return bad_request(f"{body_kind} in version {version} cannot be handled as a {expected_kind}: {reason}")


def strict_decoding_error(
    body_kind: str, body_version: str, expected_kind: str, problems: list[str]
) -> StatusError:
    """400 for ``fieldValidation=Strict`` (``problems`` like ``unknown field "spec.bogus"``)."""
    return cannot_be_handled(
        body_kind, body_version, expected_kind, "strict decoding error: " + ", ".join(problems)
    )


def decode_object(raw: bytes, content_type: str | None, rt: ResourceType) -> DecodedObject:
    """Decode the body of a POST or PUT aimed at resource type ``rt``.

    Follows kube-apiserver: a missing Content-Type means JSON; JSON and YAML are accepted, and
    protobuf for the built-ins that have a protobuf table (:mod:`.protobuf`); anything else
    (text/plain, CBOR, protobuf for custom resources, ``*/*``) is 415. The body must be an object with
    string ``apiVersion``/``kind``. Custom resources need ``kind`` in the body (400 ``Object
    'Kind' is missing``); built-ins take a missing ``kind``/``apiVersion`` from the URL and get
    them filled in. The body's group/version must be ``rt``'s. Whether ``kind`` matches is left
    to validation (a custom resource with another kind is a 422 there).

    Duplicate keys come back in :attr:`DecodedObject.duplicates`; only JSON bodies report them.
    Schema checks (unknown fields, types) are not done here.
    """
    kind = rt.kind
    media_type = body_media_type(content_type)
    if media_type == "application/json":
        try:
            value, duplicates = decode_json(raw)
        except JSONSyntaxError as exc:
            raise _unrecognized(kind, f"{_SNIFF_FAILED} {exc.go_message}", raw) from None
    elif media_type == "application/yaml":
        value = yaml_to_json_value(raw, lambda detail: _unrecognized(kind, detail, raw))
        duplicates = []
    elif media_type == protobuf.PROTOBUF_MEDIA_TYPE and decodes_protobuf(rt):
        try:
            value = _served_fields_only(rt, protobuf.decode_envelope(raw))
        except protobuf.ProtobufError as exc:
            raise _unrecognized(kind, str(exc), raw) from None
        duplicates = []
    else:
        raise unsupported_media_type(accepted_media_types(rt))

    body_api_version, body_kind = _sniff_type(value, lambda detail: _unrecognized(kind, detail, raw))
    try:
        body_group, body_version = _parse_group_version(body_api_version)
    except ValueError as exc:
        raise _unrecognized(kind, str(exc), raw) from None
    obj: JSON = value if isinstance(value, dict) else {}
    expected_api_version = rt.group_version

    if not rt.builtin:
        if not body_kind:
            text = raw.decode("utf-8", errors="replace")
            raise _unrecognized(kind, f"Object 'Kind' is missing in '{text}'", raw)
        if body_api_version != expected_api_version:
            # The custom-resource converter refuses any group/version the CRD does not serve.
            raise cannot_be_handled(
                body_kind,
                body_version,
                kind,
                f"request to convert CR from an invalid group/version: {body_api_version}",
            )
        return DecodedObject(obj, duplicates)

    # Built-ins: the URL supplies what the body leaves out.
    if not body_group and not body_version:
        body_group, body_version = rt.group, rt.version
    elif not body_version and body_group == rt.group:
        body_version = rt.version
    merged_api_version = f"{body_group}/{body_version}" if body_group else body_version
    if merged_api_version != expected_api_version:
        raise bad_request(
            f"the API version in the data ({merged_api_version}) does not match the expected "
            f"API version ({expected_api_version})"
        )
    if obj.get("kind") and obj.get("apiVersion"):
        return DecodedObject(obj, duplicates)
    filled: JSON = {"kind": body_kind or kind, "apiVersion": merged_api_version}
    filled.update({key: item for key, item in obj.items() if key not in ("kind", "apiVersion")})
    return DecodedObject(filled, duplicates)


def _served_fields_only(rt: ResourceType, obj: JSON) -> JSON:
    """``obj`` without the fields the served version of its type does not have.

    A Go server skips the field numbers its types do not know, silently (no warning, and no error
    under ``fieldValidation=Strict``: protobuf has no strict mode). The protobuf tables may know
    fields newer than the built-in types served here, so those are dropped the same way.
    """
    from . import builtins  # imported here: builtins depends on the registry, which needs this module

    if obj.get("kind") != rt.kind:
        return obj  # another kind's fields: left for validation to reject, as for a JSON body
    try:
        served, _ = builtins.decode_builtin(rt, obj)
    except builtins.DecodeError:
        return obj  # reported by the handler's own decoding, as for a JSON body
    return served


def decodes_protobuf(rt: ResourceType) -> bool:
    """True when protobuf bodies of ``rt``'s kind are decoded (built-ins with a table)."""
    return rt.builtin and protobuf.has_table(rt.group, rt.version, rt.kind)


def accepted_media_types(rt: ResourceType) -> list[str]:
    """The media types a 415 for ``rt`` lists: protobuf only where it is decoded.

    Custom resources keep the recorded message (which names protobuf, as kube-apiserver's does).
    """
    if rt.builtin and not decodes_protobuf(rt):
        return TEXT_MEDIA_TYPES
    return OBJECT_MEDIA_TYPES


def decode_delete_options(raw: bytes, content_type: str | None, query: Mapping[str, str]) -> JSON:
    """The DeleteOptions of a DELETE: from the body if there is one, otherwise from the query.

    kube-apiserver reads the query only when the body is empty, so ``?gracePeriodSeconds=`` is
    ignored next to a body. Returns the options that were given (``gracePeriodSeconds``,
    ``propagationPolicy``, ``orphanDependents``, ``preconditions``, ``dryRun``). A body that does
    not decode is a 500 without reason: the real handler passes the decoder's error through
    unconverted.
    """
    if raw:
        media_type = body_media_type(content_type)
        if media_type == "application/json":
            try:
                value, _ = decode_json(raw)
            except JSONSyntaxError as exc:
                raise StatusError(500, None, f"{_SNIFF_FAILED} {exc.go_message}") from None
        elif media_type == "application/yaml":
            value = yaml_to_json_value(raw, lambda detail: StatusError(500, None, detail))
        elif media_type == protobuf.PROTOBUF_MEDIA_TYPE:
            try:
                value = protobuf.decode_envelope(raw, table="DeleteOptions")
            except protobuf.ProtobufError as exc:
                raise bad_request(f"the DeleteOptions body could not be decoded: {exc}") from None
        else:
            raise unsupported_media_type(OBJECT_MEDIA_TYPES)
        _sniff_type(value, lambda detail: StatusError(500, None, detail))
        if value is None:
            return {}
        assert isinstance(value, dict)
        return {key: value[key] for key in _DELETE_OPTION_KEYS if key in value}
    options: JSON = {}
    if "gracePeriodSeconds" in query:
        options["gracePeriodSeconds"] = parse_int_param("gracePeriodSeconds", query["gracePeriodSeconds"])
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    if "orphanDependents" in query:
        options["orphanDependents"] = parse_bool_param(query["orphanDependents"])
    if "dryRun" in query:
        options["dryRun"] = [query["dryRun"]]
    return options


_DELETE_OPTION_KEYS = (
    "gracePeriodSeconds",
    "preconditions",
    "orphanDependents",
    "propagationPolicy",
    "dryRun",
)


def _unrecognized(expected_kind: str, detail: str, raw: bytes) -> StatusError:
    return bad_request(
        f"the object provided is unrecognized (must be of type {expected_kind}): {detail} ({_summarize(raw)})"
    )


def _summarize(raw: bytes, limit: int = 30) -> str:
    """How the apiserver quotes a body it could not understand: text if it looks like JSON, else hex."""
    if not raw:
        return "<empty>"
    head, more = raw[:limit], len(raw) > limit
    text = head.decode("utf-8", errors="replace") if raw[:1] == b"{" else head.hex()
    return text + " ..." if more else text


def _sniff_type(value: Any, fail: Callable[[str], StatusError]) -> tuple[str, str]:
    """apiVersion and kind as apimachinery's first pass reads them (Go type errors included)."""
    prefix = f"{_SNIFF_FAILED} json: cannot unmarshal"
    if value is None:
        return "", ""
    if not isinstance(value, dict):
        raise fail(f"{prefix} {json_kind(value)} into Go value of type {_KIND_SNIFFER_TYPE}")
    for key in value:
        item = value[key]
        if key in ("apiVersion", "kind") and item is not None and not isinstance(item, str):
            raise fail(f"{prefix} {json_kind(item)} into Go struct field .{key} of type string")
    return value.get("apiVersion") or "", value.get("kind") or ""


def _parse_group_version(api_version: str) -> tuple[str, str]:
    """``schema.ParseGroupVersion``; ValueError carries Go's message."""
    if not api_version or api_version == "/":
        return "", ""
    slashes = api_version.count("/")
    if slashes == 0:
        return "", api_version
    if slashes == 1:
        group, _, version = api_version.partition("/")
        return group, version
    raise ValueError(f"unexpected GroupVersion string: {api_version}")


class _GoYAMLLoader(yaml.SafeLoader):
    """YAML 1.1 like go-yaml, except timestamps stay strings (as they do when decoding to JSON)."""


_GoYAMLLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def yaml_to_json_value(raw: bytes, fail: Callable[[str], StatusError]) -> Any:
    """The first YAML document as JSON-compatible data (sigs.k8s.io/yaml ``YAMLToJSON``).

    go-yaml and PyYAML word syntax errors differently; the line number and PyYAML's problem text
    are reported in go-yaml's frame (``yaml: line 2: ...``).
    """
    try:
        documents = yaml.load_all(raw.decode("utf-8", errors="replace"), Loader=_GoYAMLLoader)
        value = next(iter(documents), None)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 1
        problem = exc.problem or exc.context or "invalid YAML"
        raise fail(f"error converting YAML to JSON: yaml: line {line}: {problem}") from None
    except yaml.YAMLError as exc:
        raise fail(f"error converting YAML to JSON: yaml: {exc}") from None
    return _jsonable(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {_yaml_key(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64_MIN <= value <= _INT64_MAX:
        return float(value)
    return value


def _yaml_key(key: Any) -> str:
    # JSON object keys must be strings; go-yaml keys of other types are printed Go-style.
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, float):
        return go_float(key)
    return str(key)
