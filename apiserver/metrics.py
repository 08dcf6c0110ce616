"""The embedded API server's request counters, served on ``/metrics`` as kube-apiserver does.

kube-apiserver counts every request it answers in ``apiserver_request_total``, labelled ``verb``
(the request's kind in capitals: ``GET``, ``LIST``, ``WATCH``, ``POST``, ``PUT``, ``PATCH``,
``APPLY`` for a server-side apply patch, ``DELETE``, ``DELETECOLLECTION``), ``dry_run``,
``group``, ``version``, ``resource``, ``subresource``, ``scope`` (``cluster``, ``namespace`` or
``resource`` for one named object), ``component`` (``apiserver``) and ``code`` (the HTTP status).
This server keeps the same family with the same labels, in a registry of its own (several servers
may run in one process), so a benchmark can tell which writes reach the server while nothing
should change. A non-resource path (discovery, ``/version``, probes) is not counted, as in
kube-apiserver where those go to ``apiserver_request_total`` with an empty resource only for a
few: it keeps the family about objects.

>>> counters = RequestCounters()
>>> counters.count("PATCH", "", "v1", "nodes", "status", "resource", 200)
>>> counters.writes()
1.0
>>> b'verb="PATCH"' in counters.exposition()
True
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, generate_latest

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
WRITE_VERBS: Final = frozenset({"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"})
LABELS: Final = (
    "verb",
    "dry_run",
    "group",
    "version",
    "resource",
    "subresource",
    "scope",
    "component",
    "code",
)


class RequestCounters:
    """``apiserver_request_total`` of one server (see the module docstring)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, "
            "resource, scope, component, and HTTP response code.",
            list(LABELS),
            registry=self.registry,
        )

    def count(
        self,
        verb: str,
        group: str,
        version: str,
        resource: str,
        subresource: str,
        scope: str,
        code: int,
        *,
        dry_run: bool = False,
    ) -> None:
        """One answered request."""
        self.requests.labels(
            verb,
            "All" if dry_run else "",
            group,
            version,
            resource,
            subresource,
            scope,
            "apiserver",
            str(code),
        ).inc()

    def writes(self) -> float:
        """Every write answered so far (what changes or tries to change an object)."""
        return sum(
            sample.value
            for metric in self.registry.collect()
            for sample in metric.samples
            if sample.name == "apiserver_request_total" and sample.labels.get("verb") in WRITE_VERBS
        )

    def exposition(self) -> bytes:
        """The Prometheus text format of every counter."""
        return generate_latest(self.registry)


def verb_of(method: str, *, named: bool, watch: bool, apply: bool) -> str:
    """kube-apiserver's metric verb for an HTTP ``method`` on a named object or a collection."""
    if method == "GET":
        if watch:
            return "WATCH"
        return "GET" if named else "LIST"
    if method == "DELETE":
        return "DELETE" if named else "DELETECOLLECTION"
    if method == "PATCH" and apply:
        return "APPLY"
    return method.upper()


__all__ = ["CONTENT_TYPE", "WRITE_VERBS", "RequestCounters", "verb_of"]
