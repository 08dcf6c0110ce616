"""What etcd's refusals become: :class:`EtcdError` and one subclass per refusal a caller acts on.

The JSON gateway answers a refused request with etcd's own message and gRPC code;
:func:`error_from_response` maps that answer to the typed exception, so that a caller catches
:class:`LearnerNotInSync` (retry the promotion later) rather than matching message text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class EtcdError(Exception):
    """etcd refused a request (or none of its endpoints answered: :class:`Unavailable`).

    ``message`` is etcd's own text (``etcdserver: ...``), ``code`` the gRPC status code when etcd
    sent one, ``endpoint`` the endpoint that answered.
    """

    def __init__(self, message: str, *, code: int | None = None, endpoint: str | None = None) -> None:
        super().__init__(message if endpoint is None else f"{message} (from {endpoint})")
        self.message = message
        self.code = code
        self.endpoint = endpoint


class LearnerNotInSync(EtcdError):
    """Promotion refused: the learner has not caught up with the leader's log yet; retry later."""


class MemberNotFound(EtcdError):
    """No member has that id."""


class TooManyLearners(EtcdError):
    """The cluster already has as many learners as it allows (one, before etcd 3.6)."""


class NotALearner(EtcdError):
    """Promotion refused: the member is already a voter."""


class PeerURLExists(EtcdError):
    """Member add refused: a member already has one of these peer URLs.

    etcd says "Peer URLs already exists", or "member ID already exist" when the same URLs are added
    twice within one second (it derives a new member's id from its peer URLs and the time).
    """


class NotEnoughStartedMembers(EtcdError):
    """The change would leave too few started voters for a quorum, so etcd refused it."""


class UnhealthyCluster(EtcdError):
    """The change would make the cluster unhealthy (etcd's strict reconfiguration check)."""


class NotSupportedForLearner(EtcdError):
    """A learner was asked for something only voters serve (a linearizable read, a member change)."""


class Unavailable(EtcdError):
    """No endpoint answered in time, or etcd said it is unavailable; ``errors`` has each failure."""

    def __init__(
        self,
        message: str,
        *,
        errors: Mapping[str, str] | None = None,
        code: int | None = None,
        endpoint: str | None = None,
    ) -> None:
        super().__init__(message, code=code, endpoint=endpoint)
        self.errors = dict(errors or {})
        if self.errors and endpoint is None:
            details = "; ".join(f"{where}: {error}" for where, error in self.errors.items())
            self.args = (f"{message}: {details}",)


# etcd's messages (server/etcdserver/api/v3rpc/rpctypes) → our types. Matched by substring because
# the gateway sends the message with the "etcdserver: " prefix and newer releases add detail.
_ERRORS_BY_MESSAGE: tuple[tuple[str, type[EtcdError]], ...] = (
    ("can only promote a learner member which is in sync with leader", LearnerNotInSync),
    ("can only promote a learner member", NotALearner),
    ("member not found", MemberNotFound),
    ("too many learner members in cluster", TooManyLearners),
    ("peer urls already exists", PeerURLExists),
    ("member id already exist", PeerURLExists),
    ("not enough started members", NotEnoughStartedMembers),
    ("unhealthy cluster", UnhealthyCluster),
    ("rpc not supported for learner", NotSupportedForLearner),
)
_GRPC_UNAVAILABLE = 14
_GRPC_DEADLINE_EXCEEDED = 4


def error_from_response(status: int, body: Any, endpoint: str) -> EtcdError:
    """The typed exception for a gateway error answer (HTTP ``status``, decoded JSON ``body``)."""
    message = ""
    code: int | None = None
    if isinstance(body, dict):
        message = str(body.get("message") or body.get("error") or "")
        raw_code = body.get("code")
        code = raw_code if isinstance(raw_code, int) else None
    if not message:
        message = f"HTTP {status} without an etcd error message"
    lowered = message.lower()
    for needle, error_type in _ERRORS_BY_MESSAGE:
        if needle in lowered:
            return error_type(message, code=code, endpoint=endpoint)
    if code in (_GRPC_UNAVAILABLE, _GRPC_DEADLINE_EXCEEDED) or status == 503:
        return Unavailable(message, errors={endpoint: message}, code=code, endpoint=endpoint)
    return EtcdError(message, code=code, endpoint=endpoint)
