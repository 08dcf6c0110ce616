"""The secure metrics server's filter: 401 without a valid token, 403 without the grant, answers
cached for their TTL (so scrapes do not cost the API server two reviews each)."""

from __future__ import annotations

from typing import Any, cast

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from cli.__main__ import build_parser
from runtime.client import Client
from runtime.errors import APIError
from runtime.manager import AuthenticationAndAuthorization


class FakeReviews:
    """Answers TokenReviews (``tokens``: token → username) and SubjectAccessReviews (``allowed``)."""

    def __init__(self, tokens: dict[str, str], allowed: set[str]) -> None:
        self.tokens = tokens
        self.allowed = allowed
        self.calls: list[tuple[str, Any]] = []
        self.down = False

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.down:
            raise APIError(503, "ServiceUnavailable", "the API server is down")
        spec = obj["spec"]
        self.calls.append((obj["kind"], spec))
        if obj["kind"] == "TokenReview":
            user = self.tokens.get(spec["token"])
            if user is None:
                return {"status": {"user": {}, "error": "invalid bearer token"}}
            return {"status": {"authenticated": True, "user": {"username": user, "groups": ["g"]}}}
        attributes = spec["nonResourceAttributes"]
        assert attributes == {"path": "/metrics", "verb": "get"}
        return {"status": {"allowed": spec["user"] in self.allowed}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def scrape(token: str | None) -> web.Request:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return make_mocked_request("GET", "/metrics", headers=headers)


async def status(check: AuthenticationAndAuthorization, token: str | None) -> int:
    answer = await check(scrape(token))
    return 200 if answer is None else answer.status


async def test_401_403_and_200_with_each_answer_cached_for_its_ttl() -> None:
    reviews = FakeReviews({"good": "prometheus", "other": "someone"}, allowed={"prometheus"})
    clock = Clock()
    check = AuthenticationAndAuthorization(
        cast(Client, reviews), authentication_ttl=60, allowed_ttl=60, denied_ttl=10, clock=clock
    )
    assert await status(check, None) == 401
    assert await status(check, "bogus") == 401
    assert await status(check, "other") == 403
    assert await status(check, "good") == 200
    calls = len(reviews.calls)
    for _ in range(5):
        assert await status(check, "good") == 200
        assert await status(check, "other") == 403
        assert await status(check, "bogus") == 401
    assert len(reviews.calls) == calls  # all cached

    reviews.allowed.add("someone")
    clock.now += 11  # past the denial's TTL only: "other" is asked again, the rest still cached
    assert await status(check, "other") == 200
    assert [kind for kind, _ in reviews.calls[calls:]] == ["SubjectAccessReview"]

    clock.now += 60  # every answer expired
    del reviews.tokens["good"]
    assert await status(check, "good") == 401


async def test_an_unreachable_api_server_lets_nobody_in() -> None:
    reviews = FakeReviews({"good": "prometheus"}, allowed={"prometheus"})
    reviews.down = True
    check = AuthenticationAndAuthorization(cast(Client, reviews))
    assert await status(check, "good") == 500


@pytest.mark.parametrize(
    ("argv", "secure"),
    [
        ([], None),
        (["--metrics-secure"], True),
        (["--metrics-secure=false"], False),
        (["--metrics-secure=true"], True),
    ],
)
def test_metrics_secure_flag_reads_like_a_go_bool_flag(argv: list[str], secure: bool | None) -> None:
    assert build_parser().parse_args(["run", *argv]).metrics_secure is secure
