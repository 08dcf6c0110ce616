"""Machinery for replaying the recorded kube-apiserver transcripts against the embedded API server.

``tests/testdata/kube-apiserver`` holds one ``NN-name.json`` per request a recorder sent to a real
kube-apiserver v1.32, plus an ``NN-name.normalized.json`` twin in which every volatile value (uid,
resourceVersion, timestamps, continue tokens, generated-name suffixes, caBundle, ...) is replaced by
a ``<placeholder>``. This module provides what ``test_reference_transcripts.py`` needs to replay
them faithfully and to say precisely what differs:

* :func:`load_transcripts` reads the pairs.
* :class:`LiveValues` maps each volatile value the recording shows to the value *our* run produced
  (recorded resourceVersion "240" -> live "17"), learned from responses as they arrive, so later
  requests can carry the live value (a PUT with the resourceVersion of an earlier answer,
  ``continue=<token>``, a precondition uid) and later answers can be checked for consistency (a
  no-op PUT must return the *same* live resourceVersion as before).
* :class:`Comparator` compares a recorded value with a live one: same keys in the same order,
  same list lengths, same scalar types, same values except at placeholder positions, where the
  live value must have the right format and agree with what was learned before.
* :class:`HttpClient`, :class:`WatchStream` and :class:`ReplayWebhook` speak HTTPS exactly as the
  recorder did (``http.client``: no default headers except ``Accept-Encoding: identity``, JSON
  bodies serialised by ``json.dumps`` with its default separators, bodies that were recorded as
  strings sent verbatim).
* :class:`Replayer` runs a plan of steps (recorded cases, unrecorded set-up actions the recording
  implies, watches held open while other steps run) and collects a :class:`CaseResult` per case.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import json
import re
import ssl
import tempfile
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from runtime.envtest.certs import CertificateAuthority
from runtime.jsoncodec import JSON
from tests.support.reference import REFERENCE_DIR, transcript_dir

RECORDED_USER_AGENT = "reftool/1.0 (linux/amd64) ref-recorder"
# The recorder's http.client adds exactly this one header on its own.
RECORDER_DEFAULT_HEADERS = {"Accept-Encoding": "identity"}
# aiohttp would add these by itself; the recorder did not send them.
SKIPPED_AUTO_HEADERS = ("Accept", "Accept-Encoding", "User-Agent", "Content-Type")

# Response headers whose values are compared (the rest are transport details or volatile).
COMPARED_HEADERS = ("Content-Type", "Warning", "Retry-After")

# Fields the server stamps with "now": a live value must be well formed and recent. Other timestamp
# fields (renewTime, eventTime, firstTimestamp, ...) carry what the client sent and compare exactly.
SERVER_TIME_KEYS = frozenset({"creationTimestamp", "deletionTimestamp", "time", "lastTransitionTime"})

_ANY_TIME = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})"
# Placeholder kinds of the normalized transcripts and what a live value in their place must look like.
PLACEHOLDER_PATTERNS: dict[str, str] = {
    "uid": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "rv": r"[0-9]+",
    # Loose on purpose: the normalizer also put these over client-sent malformed times.
    "timestamp": _ANY_TIME,
    "microtime": _ANY_TIME,
    "continue": r"[^\s&]+",
    "caBundle": r"[A-Za-z0-9+/=]+",
    "etag": r"[0-9A-Za-z]+",
    "http-date": r"[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT",
    "sha256": r"[0-9a-f]{64}",
    "suffix": r"[a-z0-9]{5}",
    "hash": r"[0-9A-Za-z]+",
    "id": r"[a-z0-9]+",
}
# Kinds whose recorded value stands for one live value for the whole run.
MAPPED_KINDS = frozenset({"uid", "rv", "continue", "suffix", "sha256", "caBundle"})
# Kinds substituted into requests (timestamps are handled per object, see Replayer._refresh_metadata_times).
REQUEST_KINDS = frozenset({"uid", "rv", "continue", "suffix", "caBundle"})
PLACEHOLDER_TOKEN = re.compile("<(" + "|".join(re.escape(k) for k in PLACEHOLDER_PATTERNS) + ")>")
STRICT_SERVER_TIME = {
    "timestamp": re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"),
    "microtime": re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z"),
}
# Server-set times must fall inside the run (second granularity, plus slack for slow machines).
RECENT_SLACK = timedelta(seconds=5)


# --------------------------------------------------------------------------------------- loading


@dataclass(frozen=True)
class Transcript:
    """One recorded case: the raw transcript and its normalized twin."""

    name: str
    raw: JSON
    normalized: JSON

    @property
    def request(self) -> JSON:
        return dict(self.raw["request"])

    @property
    def request_normalized(self) -> JSON:
        return dict(self.normalized["request"])

    @property
    def response(self) -> JSON:
        return dict(self.raw["response"])

    @property
    def response_normalized(self) -> JSON:
        return dict(self.normalized["response"])

    @property
    def webhook_calls(self) -> list[tuple[JSON, JSON]]:
        return list(
            zip(self.raw.get("webhook_calls", []), self.normalized.get("webhook_calls", []), strict=True)
        )

    @property
    def is_watch(self) -> bool:
        return "events" in self.raw["response"]

    def with_response(self, raw: JSON, normalized: JSON) -> Transcript:
        """A copy expecting another response (for cases whose recording is an environment artefact)."""
        new_raw = copy.deepcopy(self.raw)
        new_norm = copy.deepcopy(self.normalized)
        new_raw["response"] = copy.deepcopy(raw)
        new_norm["response"] = copy.deepcopy(normalized)
        return Transcript(self.name, new_raw, new_norm)


def load_transcripts(directory: Path = REFERENCE_DIR) -> dict[str, Transcript]:
    """Every ``NN-name.json`` with its ``.normalized.json`` twin, in file-name order."""
    cases: dict[str, Transcript] = {}
    for path in sorted(transcript_dir(directory).glob("[0-9][0-9]-*.json")):
        if path.name.endswith(".normalized.json"):
            continue
        name = path.name.removesuffix(".json")
        raw = json.loads(path.read_text())
        normalized = json.loads((directory / f"{name}.normalized.json").read_text())
        cases[name] = Transcript(name, raw, normalized)
    return cases


# --------------------------------------------------------------------------------- placeholders


@dataclass(frozen=True)
class Template:
    """A normalized string split into literal text and placeholders."""

    parts: tuple[tuple[str, str], ...]  # ("lit", text) or ("ph", kind)

    @classmethod
    def parse(cls, normalized: str) -> Template:
        parts: list[tuple[str, str]] = []
        pos = 0
        for match in PLACEHOLDER_TOKEN.finditer(normalized):
            if match.start() > pos:
                parts.append(("lit", normalized[pos : match.start()]))
            parts.append(("ph", match.group(1)))
            pos = match.end()
        if pos < len(normalized):
            parts.append(("lit", normalized[pos:]))
        return cls(tuple(parts))

    @property
    def kinds(self) -> list[str]:
        return [text for kind, text in self.parts if kind == "ph"]

    @property
    def whole(self) -> str | None:
        """The placeholder kind if the string is nothing but one placeholder."""
        if len(self.parts) == 1 and self.parts[0][0] == "ph":
            return self.parts[0][1]
        return None

    def regex(self, literal: Callable[[str], str] = lambda s: s) -> re.Pattern[str]:
        pieces = [
            re.escape(literal(text)) if kind == "lit" else f"({PLACEHOLDER_PATTERNS[text]})"
            for kind, text in self.parts
        ]
        return re.compile("".join(pieces), re.DOTALL)

    def values(self, raw: str) -> list[str] | None:
        """The recorded values standing behind each placeholder of ``raw``; None if it does not fit."""
        match = self.regex().fullmatch(raw)
        return list(match.groups()) if match else None

    def render(self, values: Sequence[str], literal: Callable[[str], str] = lambda s: s) -> str:
        out: list[str] = []
        it = iter(values)
        for kind, text in self.parts:
            out.append(literal(text) if kind == "lit" else next(it))
        return "".join(out)


# ---------------------------------------------------------------------------------- live values


class LiveValues:
    """Recorded volatile value -> the value this run produced, per placeholder kind."""

    def __init__(self) -> None:
        self._maps: dict[str, dict[str, str]] = {kind: {} for kind in MAPPED_KINDS}
        self._uid_owner: dict[str, str] = {}
        # creationTimestamp / deletionTimestamp never change once set: (live uid, field) -> value.
        self.object_times: dict[tuple[str, str], str] = {}
        # Environment facts of the recording replaced by ours (addresses of the apiserver, webhook).
        self.environment: list[tuple[str, str]] = []

    def known(self, kind: str, recorded: str) -> str | None:
        return self._maps.get(kind, {}).get(recorded)

    def learn(self, kind: str, recorded: str, live: str) -> str | None:
        """Remember ``recorded -> live``; a description of the inconsistency if it contradicts the past."""
        table = self._maps.setdefault(kind, {})
        known = table.get(recorded)
        if known is not None:
            if known == live:
                return None
            return (
                f"recorded {kind} {recorded!r} stood for live {known!r} earlier in this run, "
                f"but now the server says {live!r}"
            )
        if kind == "uid":
            owner = self._uid_owner.get(live)
            if owner is not None and owner != recorded:
                return (
                    f"live uid {live!r} already stood for the recorded uid {owner!r}; "
                    f"the recording has a different object ({recorded!r}) here"
                )
            self._uid_owner[live] = recorded
        table[recorded] = live
        return None

    def live_for(self, kind: str, recorded: str) -> str:
        """The live value for a recorded one, or the recorded value itself if none was learned."""
        return self._maps.get(kind, {}).get(recorded, recorded)

    def environment_text(self, text: str) -> str:
        for recorded, live in self.environment:
            text = text.replace(recorded, live)
        return text

    def substitute_names(self, text: str) -> str:
        """Replace recorded generated-name suffixes (``gen-qk99v``) inside free text such as a URL path."""
        for recorded, live in self._maps["suffix"].items():
            text = text.replace(f"-{recorded}", f"-{live}")
        return text

    def substitute(self, raw: Any, normalized: Any) -> Any:
        """``raw`` with every mapped placeholder value replaced by its live value (for requests)."""
        if isinstance(raw, dict) and isinstance(normalized, dict):
            return {k: self.substitute(v, normalized.get(k, v)) for k, v in raw.items()}
        if isinstance(raw, list) and isinstance(normalized, list) and len(raw) == len(normalized):
            return [self.substitute(r, n) for r, n in zip(raw, normalized, strict=True)]
        if isinstance(raw, str):
            if isinstance(normalized, str) and normalized != raw:
                template = Template.parse(normalized)
                recorded = template.values(raw)
                if recorded is not None:
                    live = [
                        self.live_for(kind, value) if kind in REQUEST_KINDS else value
                        for kind, value in zip(template.kinds, recorded, strict=True)
                    ]
                    return self.environment_text(template.render(live))
            return self.environment_text(raw)
        return raw


# ------------------------------------------------------------------------------------ comparing


@dataclass(frozen=True)
class Difference:
    """One way a live answer departs from the recording."""

    where: str
    expected: Any
    got: Any
    why: str = ""

    def __str__(self) -> str:
        text = f"{self.where}: expected {_short(self.expected)}, got {_short(self.got)}"
        return f"{text} ({self.why})" if self.why else text


def _short(value: Any, limit: int = 600) -> str:
    text = value if isinstance(value, str) and value.startswith(("<", "[keys")) else json.dumps(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _identity(item: Any) -> Any:
    """What names a list item in a difference report: its name if it has one, else the item."""
    if isinstance(item, dict):
        if "manager" in item:  # a managedFields entry
            owner = (item.get("manager"), item.get("operation"), item.get("subresource", ""))
            return "managedFields entry {}/{}/{}".format(*owner)
        meta = item.get("metadata")
        for candidate in (
            meta.get("name") if isinstance(meta, dict) else None,
            item.get("name"),
            item.get("resource"),
            item.get("type") if isinstance(item.get("object"), dict) else None,
        ):
            if isinstance(candidate, str) and candidate:
                return candidate
    return item


def _all_entries(items: list[Any]) -> bool:
    return all(isinstance(item, dict) and "manager" in item for item in items)


def _managed_fields_order(entry: JSON) -> tuple[str, float, str, str, str]:
    stamp = entry.get("time")
    when = parse_time(stamp) if isinstance(stamp, str) else None
    seconds = float(int(when.timestamp())) if when is not None else 0.0
    return (
        str(entry.get("operation", "")),
        seconds,
        str(entry.get("manager", "")),
        str(entry.get("apiVersion", "")),
        str(entry.get("subresource", "")),
    )


def parse_time(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


class Comparator:
    """Compares recorded (raw + normalized) values with live ones, collecting :class:`Difference` s."""

    def __init__(
        self,
        values: LiveValues,
        run_started: datetime,
        shape_only: Iterable[str] = (),
        pattern_only: Iterable[str] = (),
    ) -> None:
        self.values = values
        self.run_started = run_started
        self.shape_only = tuple(shape_only)
        self.pattern_only = tuple(pattern_only)
        self.differences: list[Difference] = []

    def add(self, where: str, expected: Any, got: Any, why: str = "") -> None:
        self.differences.append(Difference(where, expected, got, why))

    @staticmethod
    def _under(where: str, prefixes: tuple[str, ...]) -> bool:
        return any(where == p or where.startswith((p + ".", p + "[")) for p in prefixes)

    def _is_shape_only(self, where: str) -> bool:
        return self._under(where, self.shape_only)

    def compare(self, raw: Any, normalized: Any, live: Any, where: str, key: str | None = None) -> None:
        if isinstance(raw, dict):
            self._compare_dict(raw, normalized if isinstance(normalized, dict) else raw, live, where)
        elif isinstance(raw, list):
            self._compare_list(raw, normalized if isinstance(normalized, list) else raw, live, where)
        elif self._is_shape_only(where):
            if _type_name(raw) != _type_name(live):
                self.add(where, f"<a {_type_name(raw)}>", live, "type differs")
        elif isinstance(raw, str):
            self._compare_str(raw, normalized if isinstance(normalized, str) else raw, live, where, key)
        elif _type_name(raw) != _type_name(live):
            self.add(where, raw, live, f"type differs: {_type_name(raw)} vs {_type_name(live)}")
        elif raw != live:
            self.add(where, raw, live)

    def _compare_dict(self, raw: JSON, normalized: JSON, live: Any, where: str) -> None:
        if not isinstance(live, dict):
            self.add(where, "<an object>", live, f"type differs: object vs {_type_name(live)}")
            return
        expected_keys = list(raw)
        live_keys = list(live)
        missing = [k for k in expected_keys if k not in live]
        extra = [k for k in live_keys if k not in raw]
        if missing or extra:
            self.add(
                where,
                f"[keys {expected_keys}]",
                f"[keys {live_keys}]",
                f"missing {missing}, unexpected {extra}",
            )
        else:
            if expected_keys != live_keys:
                self.add(where, f"[keys {expected_keys}]", f"[keys {live_keys}]", "key order differs")
        for k in expected_keys:
            if k in live:
                self.compare(raw[k], normalized.get(k, raw[k]), live[k], f"{where}.{k}", key=k)
        self._check_object_times(live, where)

    def _check_object_times(self, live: JSON, where: str) -> None:
        meta = live.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("uid"), str):
            return
        for fieldname in ("creationTimestamp", "deletionTimestamp"):
            value = meta.get(fieldname)
            if not isinstance(value, str):
                continue
            seen = self.values.object_times.setdefault((meta["uid"], fieldname), value)
            if seen != value:
                self.add(
                    f"{where}.metadata.{fieldname}",
                    seen,
                    value,
                    f"the object's {fieldname} changed within the run",
                )

    def _compare_list(self, raw: list[Any], normalized: list[Any], live: Any, where: str) -> None:
        if not isinstance(live, list):
            self.add(where, "<an array>", live, f"type differs: array vs {_type_name(live)}")
            return
        if len(raw) != len(live):
            wanted = [_identity(item) for item in raw]
            got = [_identity(item) for item in live]
            missing = [w for w in wanted if w not in got]
            extra = [g for g in got if g not in wanted]
            detail = (
                f"recorded items not in the live list: {_short(missing, 400)}; "
                f"live items not recorded: {_short(extra, 400)}"
            )
            self.add(where, f"<{len(raw)} items>", f"<{len(live)} items>", f"list length differs; {detail}")
        twins = normalized if len(normalized) == len(raw) else raw
        if where.endswith(".managedFields") and _all_entries(raw) and _all_entries(live):
            live = self._match_managed_fields(raw, live, where)
        for i, (r, n, lv) in enumerate(zip(raw, twins, live, strict=False)):
            self.compare(r, n, lv, f"{where}[{i}]")

    def _match_managed_fields(self, raw: list[JSON], live: list[JSON], where: str) -> list[JSON]:
        """The live entries in the recording's order, after checking the server's own order.

        kube-apiserver sorts managedFields by operation, then *time in whole seconds*, then
        manager, apiVersion and subresource. Times are "now" on both sides, so whether two
        entries written a moment apart share a second -- and so their order -- depends on when
        the replay runs, not on the server. Check the live list against the rule with the live
        times, then compare entry by entry under the recording's order.
        """
        if live != sorted(live, key=_managed_fields_order):
            self.add(
                where,
                "<entries sorted by operation, time (seconds), manager, apiVersion, subresource>",
                [_identity(item) for item in live],
                "managedFields order breaks kube-apiserver's sort rule",
            )
            return live
        by_identity = {_identity(item): item for item in live}
        if len(by_identity) != len(live):
            return live
        wanted = [by_identity.get(_identity(item)) for item in raw]
        if any(item is None for item in wanted):
            return live
        return [item for item in wanted if item is not None]

    def _compare_str(self, raw: str, normalized: str, live: Any, where: str, key: str | None) -> None:
        if not isinstance(live, str):
            self.add(where, raw, live, f"type differs: string vs {_type_name(live)}")
            return
        if normalized == raw:
            expected = self.values.environment_text(raw)
            if live != expected:
                self.add(where, expected, live)
            return
        template = Template.parse(normalized)
        recorded = template.values(raw)
        if recorded is None:
            self.add(where, normalized, live, "harness: the recorded value does not fit its normalized form")
            return
        match = template.regex(self.values.environment_text).fullmatch(live)
        if match is None:
            expected = template.render(
                [
                    self._expected_for(kind, value)
                    for kind, value in zip(template.kinds, recorded, strict=True)
                ],
                self.values.environment_text,
            )
            self.add(where, expected, live, f"does not match the recorded form {normalized!r}")
            return
        whole = template.whole
        for kind, rec, got in zip(template.kinds, recorded, match.groups(), strict=True):
            self._check_placeholder(kind, rec, got, where, key, whole is not None)

    def _expected_for(self, kind: str, recorded: str) -> str:
        known = self.values.known(kind, recorded) if kind in MAPPED_KINDS else None
        return known if known is not None else f"<{kind}>"

    def _check_placeholder(
        self, kind: str, recorded: str, live: str, where: str, key: str | None, whole: bool
    ) -> None:
        if kind in MAPPED_KINDS:
            if self._under(where, self.pattern_only):
                return
            problem = self.values.learn(kind, recorded, live)
            if problem:
                self.add(where, self.values.known(kind, recorded), live, problem)
            return
        if kind in ("timestamp", "microtime"):
            if whole and key in SERVER_TIME_KEYS:
                if not STRICT_SERVER_TIME[kind].fullmatch(live):
                    self.add(where, f"<{kind}>", live, "malformed server timestamp")
                elif not self._recent(live):
                    self.add(where, "<a time during this run>", live, "server-set time is not 'now'")
            elif whole:
                if live != recorded:
                    self.add(where, recorded, live, "client-provided time must come back unchanged")
            elif live != recorded and not self._recent(live):
                self.add(where, recorded, live, "embedded time is neither the recorded one nor 'now'")

    def _recent(self, value: str) -> bool:
        moment = parse_time(value)
        if moment is None:
            return False
        now = datetime.now(UTC)
        return self.run_started - RECENT_SLACK <= moment <= now + RECENT_SLACK


# ------------------------------------------------------------------------------------ live side


def duplicate_key_hook(duplicates: list[str]) -> Callable[[list[tuple[str, Any]]], JSON]:
    """An ``object_pairs_hook`` that keeps key order and notes keys that occur twice."""

    def hook(pairs: list[tuple[str, Any]]) -> JSON:
        out: JSON = {}
        for k, v in pairs:
            if k in out:
                duplicates.append(k)
            out[k] = v
        return out

    return hook


def parse_json(data: bytes, duplicates: list[str]) -> Any:
    return json.loads(data, object_pairs_hook=duplicate_key_hook(duplicates))


@dataclass
class LiveResponse:
    """What the server answered (or how the connection failed)."""

    status: int | None
    headers: CIMultiDictProxy[str] | CIMultiDict[str]
    body: bytes
    error: str | None = None
    events: list[Any] | None = None
    event_times: list[float] = field(default_factory=list)
    ended_by_server: bool = False
    duplicate_keys: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Identity:
    """Who a request is from: the admin client certificate, a bearer token, or nobody."""

    kind: str  # "cert" | "token" | "anonymous"
    token: str = ""

    @classmethod
    def from_recording(cls, auth: str | None, static_token: str) -> Identity:
        if auth is None:
            return cls("cert")
        if auth.startswith("no credentials"):
            return cls("anonymous")
        if "<valid static admin token>" in auth:
            return cls("token", static_token)
        if auth.startswith("Authorization: Bearer "):
            return cls("token", auth.removeprefix("Authorization: Bearer ").strip())
        raise ValueError(f"unknown recorded auth {auth!r}")


class HttpClient:
    """HTTPS to one embedded server, with one session per TLS identity (client cert or none)."""

    def __init__(self, base_url: str, ca_pem: bytes, client_cert: tuple[bytes, bytes] | None) -> None:
        self.base_url = base_url.rstrip("/")
        self._tmp = tempfile.TemporaryDirectory(prefix="transcripts-")
        self._ca_pem = ca_pem
        self._client_cert = client_cert
        self._sessions: dict[str, aiohttp.ClientSession] = {}

    def _ssl(self, with_cert: bool) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cadata=self._ca_pem.decode())
        if with_cert and self._client_cert is not None:
            cert_path = Path(self._tmp.name) / "client.crt"
            key_path = Path(self._tmp.name) / "client.key"
            cert_path.write_bytes(self._client_cert[0])
            key_path.write_bytes(self._client_cert[1])
            ctx.load_cert_chain(cert_path, key_path)
        return ctx

    def session(self, identity: Identity) -> aiohttp.ClientSession:
        key = "cert" if identity.kind == "cert" else "plain"
        if key not in self._sessions:
            connector = aiohttp.TCPConnector(ssl=self._ssl(key == "cert"), force_close=True)
            self._sessions[key] = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=None, sock_connect=10)
            )
        return self._sessions[key]

    def url(self, path: str, query: dict[str, str]) -> URL:
        text = self.base_url + urllib.parse.quote(path, safe="/:@!$&'()*+,;=-._~")
        if query:
            text += "?" + urllib.parse.urlencode(query)
        return URL(text, encoded=True)

    async def close(self) -> None:
        for session in self._sessions.values():
            await session.close()
        self._sessions.clear()
        self._tmp.cleanup()


def encode_body(body: Any) -> bytes | None:
    """The bytes the recorder sent: strings verbatim, JSON re-serialised like Python's ``json.dumps``."""
    if body is None:
        return None
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body).encode()


def request_headers(recorded: JSON, identity: Identity, user_agent: bool) -> dict[str, str]:
    headers = dict(RECORDER_DEFAULT_HEADERS)
    headers.update(recorded)
    if user_agent:
        headers["User-Agent"] = RECORDED_USER_AGENT
    if identity.kind == "token":
        headers["Authorization"] = f"Bearer {identity.token}"
    return headers


async def send(
    client: HttpClient,
    identity: Identity,
    method: str,
    path: str,
    query: dict[str, str],
    headers: dict[str, str],
    body: bytes | None,
    limit: float = 30.0,
) -> LiveResponse:
    session = client.session(identity)
    try:
        async with session.request(
            method,
            client.url(path, query),
            headers=headers,
            data=body,
            skip_auto_headers=SKIPPED_AUTO_HEADERS,
            timeout=aiohttp.ClientTimeout(total=limit),
        ) as resp:
            data = await resp.read()
            return LiveResponse(resp.status, resp.headers, data)
    except (aiohttp.ClientError, TimeoutError) as exc:
        return LiveResponse(None, CIMultiDict(), b"", error=f"{type(exc).__name__}: {exc}")


class WatchStream:
    """A watch request whose JSON lines are collected in the background until it is closed."""

    def __init__(self) -> None:
        self.response: LiveResponse | None = None
        self._task: asyncio.Task[None] | None = None
        self._opened = time.monotonic()
        self._changed = asyncio.Event()
        self._resp: aiohttp.ClientResponse | None = None

    async def open(
        self,
        client: HttpClient,
        identity: Identity,
        path: str,
        query: dict[str, str],
        headers: dict[str, str],
    ) -> None:
        session = client.session(identity)
        self._opened = time.monotonic()
        try:
            resp = await session.request(
                "GET",
                client.url(path, query),
                headers=headers,
                skip_auto_headers=SKIPPED_AUTO_HEADERS,
                timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
            )
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.response = LiveResponse(None, CIMultiDict(), b"", error=f"{type(exc).__name__}: {exc}")
            self.response.events = []
            return
        self._resp = resp
        self.response = LiveResponse(resp.status, resp.headers, b"", events=[])
        self._task = asyncio.create_task(self._read(resp))

    async def _read(self, resp: aiohttp.ClientResponse) -> None:
        assert self.response is not None and self.response.events is not None
        try:
            while True:
                line = await resp.content.readline()
                if not line:
                    self.response.ended_by_server = True
                    break
                self.response.body += line
                if not line.strip():
                    continue
                try:
                    event = parse_json(line, self.response.duplicate_keys)
                except ValueError:
                    event = {"<undecodable line>": line.decode(errors="replace")}
                self.response.events.append(event)
                self.response.event_times.append(round(time.monotonic() - self._opened, 2))
                self._changed.set()
        except (aiohttp.ClientError, asyncio.CancelledError):
            pass
        finally:
            self._changed.set()

    @property
    def events(self) -> list[Any]:
        return [] if self.response is None or self.response.events is None else self.response.events

    @property
    def ended(self) -> bool:
        return self._task is None or self._task.done()

    async def wait_until(self, done: Callable[[WatchStream], bool], deadline: float) -> bool:
        """Wait (up to ``deadline`` seconds) until ``done(self)`` holds or the stream ends."""
        end = time.monotonic() + deadline
        while not done(self):
            if self.ended:
                return done(self)
            remaining = end - time.monotonic()
            if remaining <= 0:
                return False
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                return done(self)
        return True

    async def close(self) -> LiveResponse:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        if self._resp is not None:
            self._resp.close()
        assert self.response is not None
        return self.response


# -------------------------------------------------------------------------------------- webhook


@dataclass
class ReceivedCall:
    path: str
    query: str
    headers: CIMultiDictProxy[str]
    body: Any
    expected_index: int | None  # which recorded call answered it, None if unexpected


class ReplayWebhook:
    """A real HTTPS admission webhook that answers each call with the recorded reply.

    For the current case it holds the recorded ``webhook_calls``; a call to ``/mutate`` or
    ``/validate`` is answered with the next unused recorded ``sent`` reply for that path, its
    ``response.uid`` set to the live request's uid, and the live AdmissionReview is kept so the
    test can compare it with the recorded ``received`` one.
    """

    def __init__(self) -> None:
        self.ca = CertificateAuthority.new("reftool-webhook-ca")
        self.ca_bundle = base64.b64encode(self.ca.cert_pem).decode()
        self.port = 0
        self.url = ""
        self.received: list[ReceivedCall] = []
        self._expected: list[JSON] = []
        self._used: set[int] = set()
        self._delays: dict[str, float] = {}
        self._runner: web.AppRunner | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="reftool-webhook-")
        self._in_flight = 0
        self._idle = asyncio.Event()

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/mutate", self._handle)
        app.router.add_post("/validate", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        cert, key = self.ca.serving_cert(["127.0.0.1"]).write(Path(self._tmp.name))
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(cert, key)
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=ctx)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        self.url = f"https://127.0.0.1:{self.port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def close(self) -> None:
        self._tmp.cleanup()

    def expect(self, calls: list[JSON], delays: dict[str, float] | None = None) -> None:
        self._expected = calls
        self._used = set()
        self._delays = delays or {}
        self.received = []

    async def drained(self, deadline: float) -> bool:
        """Wait until no call is being answered (a slow reply outlives the request that caused it)."""
        if self._in_flight == 0:
            return True
        try:
            await asyncio.wait_for(self._idle.wait(), deadline)
        except TimeoutError:
            return False
        return True

    async def _handle(self, request: web.Request) -> web.Response:
        self._in_flight += 1
        self._idle.clear()
        try:
            return await self._answer(request)
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    async def _answer(self, request: web.Request) -> web.Response:
        duplicates: list[str] = []
        body = parse_json(await request.read(), duplicates)
        index = next(
            (i for i, c in enumerate(self._expected) if i not in self._used and c["path"] == request.path),
            None,
        )
        self.received.append(ReceivedCall(request.path, request.query_string, request.headers, body, index))
        uid = (body.get("request") or {}).get("uid", "")
        if index is None:
            reply: JSON = {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {"uid": uid, "allowed": True},
            }
        else:
            self._used.add(index)
            reply = copy.deepcopy(self._expected[index]["sent"])
            reply["response"]["uid"] = uid
        delay = self._delays.get(request.path)
        if delay:
            # The recorded webhook itself was slow; being slow is the behaviour under test.
            await asyncio.sleep(delay)
        return web.json_response(reply)


# --------------------------------------------------------------------------------------- results


@dataclass
class CaseResult:
    """The outcome of replaying one recorded case."""

    name: str
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    compared: str = ""

    def report(self) -> str:
        lines = [f"{self.name}: {len(self.differences)} difference(s) from the recording"]
        if self.compared:
            lines.append(f"  compared: {self.compared}")
        lines.extend(f"  note: {n}" for n in self.notes)
        lines.extend(f"  - {d}" for d in self.differences)
        return "\n".join(lines)


# ----------------------------------------------------------------------------------- comparisons


def header_values(headers: CIMultiDictProxy[str] | CIMultiDict[str] | JSON | None, name: str) -> list[str]:
    if headers is None:
        return []
    if isinstance(headers, dict):
        value = next((v for k, v in headers.items() if k.lower() == name.lower()), None)
        if value is None:
            return []
        return list(value) if isinstance(value, list) else [value]
    return list(headers.getall(name, []))


def compare_headers(cmp: Comparator, recorded: JSON | None, live: LiveResponse) -> None:
    for name in COMPARED_HEADERS:
        expected = header_values(recorded, name)
        got = header_values(live.headers, name)
        if expected != got:
            cmp.add(f"headers.{name}", expected, got)


def decode_live_body(
    cmp: Comparator, live: LiveResponse, expected: Any, recorded_type: str
) -> tuple[bool, Any]:
    """The live body in the form the recorded one was stored in (JSON, YAML parsed, base64, text)."""
    if isinstance(expected, dict) and "<binary-base64>" in expected:
        return True, {"<binary-base64>": base64.b64encode(live.body).decode()}
    if isinstance(expected, str):
        text = live.body.decode(errors="replace")
        if "yaml" in recorded_type:
            try:
                return True, yaml.safe_load(text)
            except yaml.YAMLError as exc:
                cmp.add("body", "<YAML>", text, f"not YAML: {exc}")
                return False, None
        return True, text
    if expected is None and not live.body:
        return True, None
    try:
        parsed = parse_json(live.body, live.duplicate_keys)
    except ValueError:
        cmp.add("body", "<JSON>", live.body.decode(errors="replace")[:2000], "not JSON")
        return False, None
    return True, parsed


def compare_body(cmp: Comparator, raw: Any, normalized: Any, live: LiveResponse, recorded_type: str) -> None:
    ok, parsed = decode_live_body(cmp, live, raw, recorded_type)
    if not ok:
        return
    if isinstance(raw, str) and "yaml" in recorded_type:
        recorded = yaml.safe_load(raw)
        cmp.compare(recorded, normalize_yaml_versions(recorded, yaml.safe_load(normalized)), parsed, "body")
    else:
        cmp.compare(raw, normalized, parsed, "body")
    if live.duplicate_keys:
        cmp.add("body", "<no duplicate keys>", sorted(set(live.duplicate_keys)), "live JSON repeats keys")


def normalize_yaml_versions(raw: Any, normalized: Any) -> Any:
    """Put ``<rv>`` where the normalizer left resourceVersions in YAML text (it did in JSON bodies)."""
    if isinstance(raw, dict) and isinstance(normalized, dict):
        out = {}
        for k, v in normalized.items():
            if k == "resourceVersion" and isinstance(v, str) and v.isdigit() and raw.get(k) == v:
                out[k] = "<rv>"
            else:
                out[k] = normalize_yaml_versions(raw.get(k), v)
        return out
    if isinstance(raw, list) and isinstance(normalized, list) and len(raw) == len(normalized):
        return [normalize_yaml_versions(r, n) for r, n in zip(raw, normalized, strict=True)]
    return normalized


def is_progress_bookmark(event: Any) -> bool:
    """A periodic BOOKMARK (not the watch-list ``initial-events-end`` one)."""
    if not isinstance(event, dict) or event.get("type") != "BOOKMARK":
        return False
    annotations = ((event.get("object") or {}).get("metadata") or {}).get("annotations") or {}
    return "k8s.io/initial-events-end" not in annotations


def compare_events(
    cmp: Comparator,
    raw_events: list[Any],
    norm_events: list[Any],
    live_events: list[Any],
    bookmarks_allowed: bool,
) -> None:
    """Compare event sequences.

    Periodic BOOKMARKs arrive on a timer (about a minute in kube-apiserver, ``bookmark_interval``
    here), so how many there are depends on timing. They are therefore taken out of both
    sequences before the rest is compared one by one; then, if the recording has any, the live
    stream must have at least one, each shaped like the recorded one, the last carrying the live
    resourceVersion that corresponds to the recorded last bookmark's. Without
    ``allowWatchBookmarks`` no periodic BOOKMARK may appear at all.
    """
    recorded = [(r, n) for r, n in zip(raw_events, norm_events, strict=True) if not is_progress_bookmark(r)]
    recorded_marks = [(r, n) for r, n in zip(raw_events, norm_events, strict=True) if is_progress_bookmark(r)]
    live = [e for e in live_events if not is_progress_bookmark(e)]
    live_marks = [e for e in live_events if is_progress_bookmark(e)]
    got_types = [e.get("type") if isinstance(e, dict) else None for e in live]
    want_types = [r.get("type") if isinstance(r, dict) else None for r, _ in recorded]
    if got_types != want_types:
        cmp.add("events[*].type", want_types, got_types, "event sequence differs")
    for i, ((r, n), lv) in enumerate(zip(recorded, live, strict=False)):
        cmp.compare(r, n, lv, f"events[{i}]")
    if recorded_marks:
        if not live_marks:
            cmp.add("events[BOOKMARK]", "<at least one periodic BOOKMARK>", [], "no BOOKMARK arrived")
            return
        last_raw, last_norm = recorded_marks[-1]
        for j, mark in enumerate(live_marks[:-1]):
            probe = Comparator(LiveValues(), cmp.run_started)
            probe.compare(last_raw, last_norm, mark, f"bookmarks[{j}]")
            cmp.differences.extend(d for d in probe.differences if "resourceVersion" not in d.where)
        cmp.compare(last_raw, last_norm, live_marks[-1], f"bookmarks[{len(live_marks) - 1}] (last)")
    elif live_marks and not bookmarks_allowed:
        cmp.add("events[BOOKMARK]", [], live_marks, "BOOKMARK without allowWatchBookmarks")


def compare_webhook_calls(
    cmp: Comparator, recorded: list[tuple[JSON, JSON]], received: list[ReceivedCall]
) -> None:
    want = [r["path"] for r, _ in recorded]
    got = [c.path for c in received]
    if want != got:
        cmp.add("webhook_calls[*].path", want, got, "webhooks called differ")
    for i, call in enumerate(received):
        if call.expected_index is None:
            cmp.add(f"webhook_calls[{i}]", "<no call>", call.path, "unexpected webhook call")
            continue
        raw, norm = recorded[call.expected_index]
        where = f"webhook_calls[{call.expected_index}]"
        if call.query != raw["query"]:
            cmp.add(f"{where}.query", raw["query"], call.query)
        for name in ("User-Agent", "Accept", "Content-Type"):
            if raw["headers"].get(name) != call.headers.get(name):
                cmp.add(f"{where}.headers.{name}", raw["headers"].get(name), call.headers.get(name))
        cmp.compare(raw["received"], norm["received"], call.body, f"{where}.received")


def certificate_sha256(cert_pem: bytes) -> str:
    der = x509.load_pem_x509_certificate(cert_pem).public_bytes(serialization.Encoding.DER)
    return hashlib.sha256(der).hexdigest()


# ---------------------------------------------------------------------------------- the replayer


@dataclass
class Servers:
    """Everything a plan runs against."""

    main: HttpClient
    main_address: str  # host:port
    webhook: ReplayWebhook
    static_token: str
    secondary: HttpClient | None = None  # the --anonymous-auth=false server of the 21-* cases


Step = Callable[["Replayer"], Awaitable[None]]


class Replayer:
    """Runs a replay plan and collects one :class:`CaseResult` per recorded case."""

    def __init__(self, transcripts: dict[str, Transcript], servers: Servers) -> None:
        self.transcripts = transcripts
        self.servers = servers
        self.values = LiveValues()
        self.run_started = datetime.now(UTC)
        self.results: dict[str, CaseResult] = {}
        self.setup_problems: list[str] = []
        self._pending_problems: list[str] = []
        self._watches: dict[str, tuple[Transcript, WatchStream, str]] = {}
        # What was sent and answered, per compared case (written out on request, for debugging).
        self.trace: list[JSON] = []
        self._sent: dict[str, JSON] = {}

    def _trace(self, name: str, sent: JSON, live: LiveResponse) -> None:
        self.trace.append(
            {
                "case": name,
                "sent": sent,
                "status": live.status,
                "error": live.error,
                "headers": {k: live.headers.getall(k) for k in COMPARED_HEADERS if k in live.headers},
                "body": live.body[:4000].decode(errors="replace") if live.events is None else None,
                "events": live.events,
                "event_times": live.event_times,
            }
        )

    # -------------------------------------------------------------------------- plumbing

    def client_for(self, case: Transcript) -> HttpClient:
        if case.name.startswith("21-"):
            assert self.servers.secondary is not None
            return self.servers.secondary
        return self.servers.main

    def _identity(self, case: Transcript) -> Identity:
        return Identity.from_recording(case.request.get("auth"), self.servers.static_token)

    async def _prepare(
        self, case: Transcript
    ) -> tuple[Identity, str, dict[str, str], dict[str, str], bytes | None]:
        request = case.request
        normalized = case.request_normalized
        identity = self._identity(case)
        path = self.values.substitute_names(self.values.substitute(request["path"], normalized["path"]))
        query = {
            k: self.values.substitute(v, normalized["query"].get(k, v)) for k, v in request["query"].items()
        }
        headers = request_headers(request["headers"], identity, user_agent=case.name != "02-crd-create")
        body: Any = request["body"]
        if isinstance(body, (dict, list)):
            body = self.values.substitute(body, normalized["body"])
            if isinstance(body, dict) and request["method"] == "PUT":
                await self._refresh_metadata_times(body, path)
        elif isinstance(body, str):
            body = self.values.environment_text(body)
        return identity, path, query, headers, self._body_bytes(case, body)

    @staticmethod
    def _body_bytes(case: Transcript, body: Any) -> bytes | None:
        if case.name == "15-post-protobuf":
            # Recorded as a description of the bytes: "k8s\u0000garbage (raw bytes 6b 38 73 00 ...)".
            return b"k8s\x00garbage"
        return encode_body(body)

    async def _refresh_metadata_times(self, body: JSON, path: str) -> None:
        """Give a PUT body the live object's metadata times, as a client sending back what it read.

        The recorder PUT objects it had just read; their creationTimestamp / managedFields times
        are this run's, not the recording's. Values from outside the recording session (a
        deliberately fake ``2000-01-01T00:00:00Z``) are the client's choice and stay.
        """
        meta = body.get("metadata")
        if not isinstance(meta, dict) or ("creationTimestamp" not in meta and "managedFields" not in meta):
            return
        object_path = re.sub(r"/(status|scale|finalize)$", "", path)
        reply = await self.raw_request("GET", object_path, expect=(200,), describe=None)
        if reply is None:
            return
        live_meta = reply.get("metadata") or {}
        for fieldname in ("creationTimestamp", "deletionTimestamp"):
            if _from_recording_session(meta.get(fieldname)) and fieldname in live_meta:
                meta[fieldname] = live_meta[fieldname]
        live_entries = live_meta.get("managedFields") or []
        for entry in meta.get("managedFields") or []:
            if not _from_recording_session(entry.get("time")):
                continue
            twin = next(
                (
                    e
                    for e in live_entries
                    if all(e.get(k) == entry.get(k) for k in ("manager", "operation", "subresource"))
                ),
                None,
            )
            if twin is not None and "time" in twin:
                entry["time"] = twin["time"]

    def result_for(self, name: str) -> CaseResult:
        result = self.results.setdefault(name, CaseResult(name))
        if self._pending_problems:
            result.notes.extend(f"earlier set-up step failed: {p}" for p in self._pending_problems)
            self._pending_problems = []
        return result

    def comparator(self, shape_only: Iterable[str] = (), pattern_only: Iterable[str] = ()) -> Comparator:
        return Comparator(self.values, self.run_started, shape_only, pattern_only)

    # ---------------------------------------------------------------------- unrecorded steps

    async def raw_request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
        expect: Sequence[int] = (200, 201),
        describe: str | None = "",
    ) -> JSON | None:
        """A request the recording implies but did not record (set-up, clean-up, reading state).

        Sent like the recorder's (User-Agent, client certificate). An unexpected status is noted
        and attached to the next compared case, since the replay diverges from there on.
        """
        headers = dict(RECORDER_DEFAULT_HEADERS)
        headers["Accept"] = "application/json"
        headers["User-Agent"] = RECORDED_USER_AGENT
        data = None
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            headers["Content-Type"] = content_type
        live_path = self.values.substitute_names(path)
        reply = await send(self.servers.main, Identity("cert"), method, live_path, query or {}, headers, data)
        parsed: JSON | None = None
        try:
            parsed = json.loads(reply.body) if reply.body else None
        except ValueError:
            parsed = None
        if reply.status not in expect:
            if describe is not None:
                problem = (
                    f"{describe or method + ' ' + live_path}: status {reply.status} "
                    f"{reply.error or reply.body[:300]!r}"
                )
                self.setup_problems.append(problem)
                self._pending_problems.append(problem)
            return None
        return parsed

    async def setup(
        self,
        describe: str,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        recorded_rv: str | None = None,
        expect: Sequence[int] = (200, 201),
    ) -> None:
        reply = await self.raw_request(
            method, path, body, content_type=content_type, expect=expect, describe=describe
        )
        if recorded_rv is not None and reply is not None:
            live_rv = (reply.get("metadata") or {}).get("resourceVersion")
            if isinstance(live_rv, str):
                self.values.learn("rv", recorded_rv, live_rv)

    async def current_rv(self, recorded_rv: str, path: str) -> None:
        """Learn which live resourceVersion a recorded list resourceVersion stands for (by listing)."""
        reply = await self.raw_request(
            "GET", path, expect=(200,), describe=f"list {path} for its resourceVersion"
        )
        if reply is not None:
            self.values.learn("rv", recorded_rv, reply["metadata"]["resourceVersion"])

    # -------------------------------------------------------------------------- recorded steps

    async def replay(
        self,
        case: Transcript,
        *,
        compared: str = "",
        shape_only: Iterable[str] = (),
        notes: Iterable[str] = (),
        webhook_delays: dict[str, float] | None = None,
        pattern_only: Iterable[str] = (),
        trim: Callable[[Any], Any] | None = None,
        extra_check: Callable[[Comparator, Any], None] | None = None,
    ) -> None:
        """Send one recorded (non-watch) request and compare the answer.

        ``trim`` cuts the live body the way the recorder trimmed a big recorded one (the note of
        the transcript says how); ``extra_check`` gets the untrimmed live body for checks of what
        the note says about the trimmed part.
        """
        if case.is_watch:
            raise ValueError(f"{case.name} is a watch: replay it with watch() / open_watch()")
        result = self.result_for(case.name)
        result.compared = compared or result.compared
        result.notes.extend(notes)
        identity, path, query, headers, body = await self._prepare(case)
        self.servers.webhook.expect([raw for raw, _ in case.webhook_calls], webhook_delays)
        live = await send(self.client_for(case), identity, case.request["method"], path, query, headers, body)
        sent = {"method": case.request["method"], "path": path, "query": query, "headers": headers}
        sent["body"] = None if body is None else body[:4000].decode(errors="replace")
        self._trace(case.name, sent, live)
        cmp = self.comparator(shape_only, pattern_only)
        if extra_check is not None and live.body:
            try:
                extra_check(cmp, json.loads(live.body))
            except ValueError:
                pass
        if trim is not None and live.body:
            try:
                live.body = json.dumps(trim(json.loads(live.body))).encode()
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                cmp.add(
                    "body", "<a body the recorded trimming applies to>", live.body[:300].decode(), repr(exc)
                )
        self._compare_response(cmp, case, live)
        if case.webhook_calls or self.servers.webhook.received:
            compare_webhook_calls(cmp, case.webhook_calls, self.servers.webhook.received)
        result.differences.extend(cmp.differences)

    def _compare_response(self, cmp: Comparator, case: Transcript, live: LiveResponse) -> None:
        expected = case.response
        normalized = case.response_normalized
        if live.error is not None or live.status is None:
            cmp.add("status", expected.get("status"), None, f"no HTTP response: {live.error}")
            return
        if live.status != expected.get("status"):
            excerpt = live.body[:400].decode(errors="replace")
            cmp.add("status", expected.get("status"), live.status, f"live body: {excerpt}")
        compare_headers(cmp, expected.get("headers"), live)
        if "events" in expected:
            bookmarks = case.request["query"].get("allowWatchBookmarks") == "true"
            compare_events(
                cmp, expected["events"] or [], normalized["events"] or [], live.events or [], bookmarks
            )
            if live.duplicate_keys:
                cmp.add("events", "<no duplicate keys>", sorted(set(live.duplicate_keys)), "repeated keys")
        else:
            recorded_type = (header_values(expected.get("headers"), "Content-Type") or [""])[0]
            compare_body(cmp, expected.get("body"), normalized.get("body"), live, recorded_type)

    async def open_watch(self, case: Transcript, *, compared: str = "") -> None:
        identity, path, query, headers, _ = await self._prepare(case)
        self._sent[case.name] = {"method": "GET", "path": path, "query": query, "headers": headers}
        stream = WatchStream()
        await stream.open(self.client_for(case), identity, path, query, headers)
        self._watches[case.name] = (case, stream, compared)

    async def close_watch(
        self,
        name: str,
        *,
        deadline: float = 10.0,
        grace: float = 0.3,
        fresh_bookmark: bool = False,
        pattern_only: Iterable[str] = (),
    ) -> None:
        """Finish a watch: wait for the recorded events (or the server's end of stream), then compare.

        A stream the recorder closed is closed once all expected events are there plus ``grace``
        seconds (so an unexpected extra event is still seen); with ``fresh_bookmark`` a periodic
        BOOKMARK sent after this call is awaited too, so the last bookmark reflects the final state.
        A stream the server ended (timeoutSeconds, an error) is awaited up to ``deadline``.
        """
        case, stream, compared = self._watches.pop(name)
        expected = case.response.get("events") or []
        wanted = len([e for e in expected if not is_progress_bookmark(e)])
        needs_mark = any(is_progress_bookmark(e) for e in expected)
        seen_before_close = len(stream.events)

        def complete(s: WatchStream) -> bool:
            events = s.events
            positions = [i for i, e in enumerate(events) if not is_progress_bookmark(e)]
            if len(positions) < wanted:
                return False
            if not needs_mark:
                return True
            after = max(
                positions[wanted - 1] if wanted else -1, seen_before_close - 1 if fresh_bookmark else -1
            )
            return any(is_progress_bookmark(e) for e in events[after + 1 :])

        server_ends = _server_ends(case)
        if server_ends:
            await stream.wait_until(lambda s: False, deadline)
        else:
            await stream.wait_until(complete, deadline)
            await stream.wait_until(lambda s: False, grace)
        live = await stream.close()
        self._trace(case.name, self._sent.pop(case.name, {}), live)
        result = self.result_for(case.name)
        result.compared = compared or result.compared
        cmp = self.comparator(pattern_only=pattern_only)
        if server_ends and not live.ended_by_server:
            cmp.add("stream", "<ended by the server>", "<still open>", "the server did not end the stream")
        if not server_ends and live.ended_by_server:
            cmp.add("stream", "<open until the client closes it>", "<ended by the server>")
        self._compare_response(cmp, case, live)
        result.differences.extend(cmp.differences)

    async def wait_events(self, name: str, count: int, deadline: float = 10.0) -> None:
        """Wait until an open watch has ``count`` events (e.g. its initial events, before acting)."""
        stream = self._watches[name][1]
        await stream.wait_until(lambda s: len(s.events) >= count, deadline)

    async def watch(self, case: Transcript, actions: Step | None = None, **kwargs: Any) -> None:
        """Open a watch, run ``actions`` while it is open, then finish it (see :meth:`close_watch`)."""
        compared = kwargs.pop("compared", "")
        await self.open_watch(case, compared=compared)
        if actions is not None:
            await actions(self)
        await self.close_watch(case.name, **kwargs)


def _server_ends(case: Transcript) -> bool:
    """Whether the server (not the recorder) ended this stream: timeoutSeconds or an error answer."""
    query = case.request["query"]
    return "timeoutSeconds" in query or case.response.get("status") != 200 or _single_error(case)


def _single_error(case: Transcript) -> bool:
    events = case.response.get("events") or []
    return len(events) == 1 and isinstance(events[0], dict) and events[0].get("type") == "ERROR"


def _from_recording_session(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("2026-11-22T")


def iter_strings(raw: Any, normalized: Any) -> Iterator[tuple[str, str]]:
    """(raw, normalized) string pairs that differ: used by the self-check of the transcripts."""
    if isinstance(raw, dict) and isinstance(normalized, dict):
        for k, v in raw.items():
            yield from iter_strings(v, normalized.get(k, v))
    elif isinstance(raw, list) and isinstance(normalized, list):
        for r, n in zip(raw, normalized, strict=False):
            yield from iter_strings(r, n)
    elif isinstance(raw, str) and isinstance(normalized, str) and raw != normalized:
        yield raw, normalized
