"""A small async etcd client for membership, status and health: what the controllers and the provider need.

The controllers depend on the :class:`EtcdCluster` protocol; :class:`EtcdClient` implements it.
Here against a one-member etcd on loopback, started by the local provider's supervisor:

>>> import asyncio
>>> from controllers.etcd.client import EtcdClient, LearnerNotInSync
>>> from providers.localmachine.etcd_process import EtcdSupervisor
>>> async def main() -> None:
...     supervisor = EtcdSupervisor(tmp_path)
...     first = await supervisor.bootstrap("m0")
...     try:
...         async with EtcdClient([first.client_url]) as etcd:
...             for member in await etcd.member_list():
...                 print(member.name, member.is_learner)
...             added = await etcd.add_learner(["http://127.0.0.1:2390"])
...             print("start the new member with --initial-cluster", added.initial_cluster("m1"))
...             try:
...                 await etcd.promote(added.member.id)
...             except LearnerNotInSync:
...                 print("not caught up yet: try again later")
...     finally:
...         await supervisor.stop_all()
>>> asyncio.run(main())
m0 False
start the new member with --initial-cluster ...m1=http://127.0.0.1:2390...
not caught up yet: try again later

Why the JSON gateway and not a client library
---------------------------------------------
etcd serves its v3 gRPC API also as JSON over HTTP (the grpc-gateway, ``POST /v3/...``), on the
client port, with the same TLS. We use that over ``aiohttp`` (already a dependency) rather than a
gRPC library: ``aetcd``, the maintained asyncio client, models members without the learner flag
and has no promote call, so we would be calling its generated stubs directly and would pull in
``grpcio`` and ``protobuf`` for six unary calls. The gateway needs neither, and its error bodies
carry etcd's own messages, which we map to typed exceptions. Its JSON conventions: 64-bit integers
(member ids, raft index, db size) are strings, keys are base64, and fields equal to their zero
value are left out (a voter has no ``isLearner``; a member that has not started has no name).

Connections
-----------
Reads (member list, status, alarms, health and key reads) go over connections kept open between
requests, one per member, for :attr:`EtcdClientOptions.keepalive` seconds of idleness: a settled
ControlPlane is read every few seconds by two controllers, and a connection per request would cost
a TCP (and, with TLS, a handshake) for each. A member that is killed or restarted closes its
connections, which are then not reused; one that closes a kept connection just as a read is sent
makes that read fail with a dropped connection, and the read is sent again once on a connection of
its own (a read changes nothing, so sending it twice is harmless). Changes (member add, promote,
remove, leadership transfer, put) always go on a connection of their own, opened for them and
closed after: a change sent on a connection that breaks may or may not have been applied, and
that must not happen because a kept connection had gone stale.

Calls and errors
----------------
Every call has a timeout (:attr:`EtcdClientOptions.timeout`). A call goes to the endpoints in
order: when one cannot be reached, or is a learner that refuses the request, the next is tried;
when all fail the call raises :class:`Unavailable`. Read-only calls also move on after a timeout
or when etcd answers "unavailable"; membership changes do not, because that endpoint may have
applied the change, and repeating it elsewhere would fail or, for an add, add a second member.
etcd's refusals become subclasses of :class:`EtcdError`: :class:`LearnerNotInSync`,
:class:`MemberNotFound`, :class:`TooManyLearners`, :class:`NotALearner`, :class:`PeerURLExists`,
:class:`NotEnoughStartedMembers`, :class:`UnhealthyCluster`; anything else is a plain
:class:`EtcdError` with etcd's message and gRPC code.

Counted requests
----------------
Every HTTP request this client sends is counted in ``cpo_etcd_client_requests_total{controller,
method,result}`` (in the runtime's registry, so ``cpo run`` serves it on ``/metrics``):
``method`` is the gRPC method the gateway path stands for (``MemberList``, ``Range``,
``Status``...), ``result`` is ``ok``, ``refused`` (etcd answered with an error) or ``unreachable``
(no answer), and ``controller`` is the controller whose reconcile sent it (empty outside one).
``cpo_etcd_client_connections_opened_total{controller}`` counts the TCP connections opened for
them. Both say what etcd costs per ControlPlane, which grows with the number of ControlPlanes one
operator manages.

Health is a linearizable read (``/v3/kv/range`` of the key ``health``, as ``etcdctl endpoint
health`` does) sent to each endpoint separately: it succeeds only when that member can reach a
quorum and the leader. Learners refuse linearizable reads, so a learner's health check falls back
to a serializable read, which proves only that the learner answers. Alarms are not part of
health (``etcdctl endpoint health`` counts them): ask :meth:`EtcdClient.alarms` as well, as the
controllers' preflight does.

Modules
-------
* :mod:`~controllers.etcd.client.cluster`: the calls — the :class:`EtcdCluster` protocol and
  :class:`EtcdClient` (membership, maintenance, key reads and writes, health).
* :mod:`~controllers.etcd.client.transport`: the HTTP underneath them — endpoint order and when to
  move on, kept and fresh connections, the counted requests.
* :mod:`~controllers.etcd.client.errors`: :class:`EtcdError`, its subclasses, and
  :func:`error_from_response`, which maps etcd's answer to them.
* :mod:`~controllers.etcd.client.results`: what the calls return (:class:`Member`,
  :class:`EndpointStatus`...), decoded from the gateway's JSON.
* :mod:`~controllers.etcd.client.options`: :class:`EtcdClientOptions` and endpoint checking.

Import from this package (``from controllers.etcd.client import EtcdClient, EtcdError``): it
exports every public name of its modules.
"""

from .cluster import EtcdClient, EtcdCluster
from .errors import (
    EtcdError,
    LearnerNotInSync,
    MemberNotFound,
    NotALearner,
    NotEnoughStartedMembers,
    NotSupportedForLearner,
    PeerURLExists,
    TooManyLearners,
    Unavailable,
    UnhealthyCluster,
    error_from_response,
)
from .options import EtcdClientOptions, ResolvedEtcdClientOptions, normalize_endpoint
from .results import Alarm, EndpointHealth, EndpointStatus, Member, MemberAddResult

__all__ = [
    "Alarm",
    "EndpointHealth",
    "EndpointStatus",
    "EtcdClient",
    "EtcdClientOptions",
    "EtcdCluster",
    "EtcdError",
    "LearnerNotInSync",
    "Member",
    "MemberAddResult",
    "MemberNotFound",
    "NotALearner",
    "NotEnoughStartedMembers",
    "NotSupportedForLearner",
    "PeerURLExists",
    "ResolvedEtcdClientOptions",
    "TooManyLearners",
    "Unavailable",
    "UnhealthyCluster",
    "error_from_response",
    "normalize_endpoint",
]
