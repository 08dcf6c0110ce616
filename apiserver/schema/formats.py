"""The string formats a CRD schema may check (the strfmt registry kube-apiserver's validator uses).

``FORMAT_CHECKS`` maps a format name to its check; ``KNOWN_FORMATS`` also holds the names that
always pass (isbn, creditcard, password).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import ipaddress
import re
from collections.abc import Callable

_UUID = {
    "uuid": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
    "uuid3": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
    "uuid4": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
    "uuid5": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
}
_DATE_TIME_CLOCK = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\Z")
_MAC = re.compile(
    r"^(?:[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){5}|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){7}"
    r"|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){19}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){2,9})\Z"
)
_HOSTNAME_LABEL = re.compile(r"^[^\W_](?:[\w-]{0,61}[^\W_])?\Z")
_DURATION = re.compile(
    r"^(?:[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+|0"
    r"|[0-9]+\s*(?:ns|us|ms|s|m|h|d|w|sec|secs|second|seconds|min|mins|minute|minutes|hr|hrs|hour|hours"
    r"|day|days|wk|wks|week|weeks))\Z"
)
_RGB = re.compile(r"^rgb\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)\Z")


def _is_date(text: str) -> bool:
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _is_date_time(text: str) -> bool:
    parts = text.lower().split("t")
    if len(text) < 4 or len(parts) < 2 or not _is_date(parts[0]):
        return False
    match = _DATE_TIME_CLOCK.match(parts[1])
    if match is None:
        return False
    return match.group(1) <= "23" and match.group(2) <= "59" and match.group(3) <= "59"


def _is_ip(text: str, marker: str) -> bool:
    if marker not in text or "%" in text:
        return False
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _is_cidr(text: str) -> bool:
    if "/" not in text or "%" in text:
        return False
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True


def _is_hostname(text: str) -> bool:
    if not text or len(text) > 255:
        return False
    labels = text.rstrip(".").split(".") if text != "." else []
    return bool(labels) and all(_HOSTNAME_LABEL.match(label) for label in labels)


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _is_rgb(text: str) -> bool:
    match = _RGB.match(text)
    return match is not None and all(int(part) <= 255 for part in match.groups())


def _regex_check(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern)
    return lambda text: compiled.match(text) is not None


FORMAT_CHECKS: dict[str, Callable[[str], bool]] = {
    "date": _is_date,
    "datetime": _is_date_time,
    "ipv4": lambda text: _is_ip(text, "."),
    "ipv6": lambda text: _is_ip(text, ":"),
    "cidr": _is_cidr,
    "mac": lambda text: bool(_MAC.match(text)),
    "hostname": _is_hostname,
    "email": lambda text: bool(re.fullmatch(r"[^@\s<>]+@[^@\s<>]+", text)),
    "uri": lambda text: bool(re.match(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|/)", text)),
    "byte": _is_base64,
    "duration": lambda text: bool(_DURATION.match(text)),
    "bsonobjectid": lambda text: bool(re.fullmatch(r"[0-9a-fA-F]{24}", text)),
    "hexcolor": lambda text: bool(re.fullmatch(r"#?(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})", text)),
    "rgbcolor": _is_rgb,
    "ssn": lambda text: bool(re.fullmatch(r"[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}", text)),
    **{name: _regex_check(rx) for name, rx in _UUID.items()},
}
# Names the strfmt registry knows; the ones without a check above (isbn, creditcard, password) always pass.
KNOWN_FORMATS = frozenset(FORMAT_CHECKS) | {"isbn", "isbn10", "isbn13", "creditcard", "password"}
