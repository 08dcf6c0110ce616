"""runtime.errors: a failed response's Status body becomes the right typed exception."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime.errors import (
    AlreadyExists,
    APIError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    InternalError,
    Invalid,
    NotFound,
    ServerTimeout,
    ServiceUnavailable,
    TooManyRequests,
    Unauthorized,
    from_status,
)


def status(code: int, reason: str, message: str = "", **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (400, "BadRequest", BadRequest),
        (401, "Unauthorized", Unauthorized),
        (403, "Forbidden", Forbidden),
        (404, "NotFound", NotFound),
        (409, "AlreadyExists", AlreadyExists),
        (409, "Conflict", Conflict),
        (410, "Expired", Gone),
        (410, "Gone", Gone),
        (422, "Invalid", Invalid),
        (429, "TooManyRequests", TooManyRequests),
        (500, "ServerTimeout", ServerTimeout),
        (504, "Timeout", ServerTimeout),
        (500, "InternalError", InternalError),
        (503, "ServiceUnavailable", ServiceUnavailable),
    ],
)
def test_reason_picks_the_class(code: int, reason: str, expected: type[APIError]) -> None:
    error = from_status(code, status(code, reason, "boom"))
    assert type(error) is expected
    assert (error.status, error.reason, error.message) == (code, reason, "boom")


def test_reason_wins_over_code() -> None:
    # A 409 is a Conflict by code, but the server said the name is taken.
    assert type(from_status(409, status(409, "AlreadyExists"))) is AlreadyExists
    assert not isinstance(from_status(409, status(409, "AlreadyExists")), Conflict)


@pytest.mark.parametrize(
    ("code", "expected"),
    [(400, BadRequest), (404, NotFound), (409, Conflict), (410, Gone), (422, Invalid), (500, InternalError)],
)
def test_code_decides_without_a_known_reason(code: int, expected: type[APIError]) -> None:
    assert type(from_status(code, status(code, ""))) is expected
    assert type(from_status(code, "<html>proxy error</html>")) is expected


def test_unknown_code_and_reason_is_a_plain_api_error() -> None:
    error = from_status(418, b"teapot")
    assert type(error) is APIError
    assert error.message == "teapot"
    assert error.body == "teapot"


def test_body_may_be_bytes_or_text() -> None:
    body = status(404, "NotFound", 'configmaps "x" not found', name="x", kind="configmaps")
    for raw in (json.dumps(body), json.dumps(body).encode()):
        error = from_status(404, raw)
        assert isinstance(error, NotFound)
        assert (error.name, error.kind) == ("x", "configmaps")
        assert error.body == body


def test_invalid_exposes_causes() -> None:
    causes = [
        {"reason": "FieldValueInvalid", "message": "Invalid value: 42", "field": "spec.replicas"},
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.size"},
    ]
    error = from_status(422, status(422, "Invalid", "w is invalid", name="w", causes=causes))
    assert isinstance(error, Invalid)
    assert [cause["field"] for cause in error.causes] == ["spec.replicas", "spec.size"]
    assert from_status(422, status(422, "Invalid")).causes == []  # type: ignore[attr-defined]


def test_retry_after_from_header_or_details() -> None:
    from_details = from_status(429, status(429, "TooManyRequests", retryAfterSeconds=3))
    assert isinstance(from_details, TooManyRequests) and from_details.retry_after == 3.0
    from_header = from_status(429, status(429, "TooManyRequests", retryAfterSeconds=3), retry_after=7)
    assert isinstance(from_header, TooManyRequests) and from_header.retry_after == 7.0
    neither = from_status(429, status(429, "TooManyRequests"))
    assert isinstance(neither, TooManyRequests) and neither.retry_after is None


def test_str_names_status_reason_and_message() -> None:
    assert str(from_status(404, status(404, "NotFound", "gone"))) == "404 NotFound: gone"
